"""The TF tutorials' layers/cnn_mnist.py (a tf.layers conv-net) as many users ran it without tf.estimator:
the same `cnn_model_fn` body (conv2d, max_pooling2d, dense, dropout with a `training` flag,
tf.losses.sparse_softmax_cross_entropy, tf.metrics.accuracy) with the estimator's `mode` turned into a
boolean placeholder, a global step, and evaluation through the metric's update op after
`local_variables_initializer`; 8x8 digits, fewer steps and a larger learning rate."""

from tests.programs.data import Batches, digits


def cnn_model_fn(tf, features, labels, training):
    """Model function for CNN."""
    # Input Layer
    input_layer = tf.reshape(features["x"], [-1, 8, 8, 1])
    # Convolutional Layer #1
    conv1 = tf.layers.conv2d(inputs=input_layer, filters=16, kernel_size=[5, 5], padding="same",
                             activation=tf.nn.relu)
    # Pooling Layer #1
    pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
    # Convolutional Layer #2 and Pooling Layer #2
    conv2 = tf.layers.conv2d(inputs=pool1, filters=32, kernel_size=[5, 5], padding="same",
                             activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
    # Dense Layer
    pool2_flat = tf.reshape(pool2, [-1, 2 * 2 * 32])
    dense = tf.layers.dense(inputs=pool2_flat, units=64, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4, training=training)
    # Logits Layer
    logits = tf.layers.dense(inputs=dropout, units=10)
    predictions = {
        "classes": tf.argmax(input=logits, axis=1),
        "probabilities": tf.nn.softmax(logits, name="softmax_tensor"),
    }
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
    eval_metric_ops = {"accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])}
    return predictions, loss, train_op, eval_metric_ops


def main(tf):
    train_data, train_labels, eval_data, eval_labels = digits()
    mnist = Batches(train_data, train_labels, seed=5)
    tf.set_random_seed(5)
    tf.train.get_or_create_global_step()
    x = tf.placeholder("float", [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder_with_default(False, shape=(), name="training")
    predictions, loss, train_op, eval_metric_ops = cnn_model_fn(tf, {"x": x}, y, training)
    accuracy, update_op = eval_metric_ops["accuracy"]
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _step in range(200):
            batch_x, batch_y = mnist.next_batch(50)
            _, loss_value = sess.run([train_op, loss], feed_dict={x: batch_x, y: batch_y, training: True})
            losses.append(loss_value)
        sess.run(tf.local_variables_initializer())
        for i in range(0, len(eval_data), 100):
            sess.run(update_op, feed_dict={x: eval_data[i:i + 100], y: eval_labels[i:i + 100]})
        acc = sess.run(accuracy)
        probs = sess.run(predictions["probabilities"], feed_dict={x: eval_data[:5]})
        step = sess.run(tf.train.get_global_step())
    return {
        "accuracy": float(acc), "losses": losses, "step": int(step), "probs": probs,
        "global": [v.op.name for v in tf.global_variables()],
        "local": [v.op.name for v in tf.local_variables()],
        "metric": [v.op.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)],
        "losses_collection": [t.op.name for t in tf.get_collection(tf.GraphKeys.LOSSES)],
        "metric_ops": [accuracy.op.name, update_op.op.name],
    }
