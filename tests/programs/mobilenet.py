"""A MobileNet-style depthwise-separable conv-net on the digits as TF1 users wrote small ones by hand: a
stem conv2d, blocks of `tf.nn.depthwise_conv2d` + batch normalization + ReLU6 and a 1x1 pointwise conv
(and one `tf.layers.separable_conv2d` block), weight decay through `kernel_regularizer` /
`depthwise_regularizer` into `tf.losses.get_regularization_loss()`, batch-flipped inputs with
`tf.image.random_flip_up_down` on a 4-D batch under `tf.cond(is_training, ...)`, Momentum (Nesterov)
on a step-wise learning rate, UPDATE_OPS as control dependencies, and a streaming accuracy reset
between evaluations through `variables_initializer` of its own LOCAL_VARIABLES scope."""

from tests.programs.data import Batches, digits

weight_decay = 1e-4
training_steps = 150
batch_size = 64


def l2(w):
    return weight_decay * tf_module.nn.l2_loss(w)


tf_module = None


def depthwise_block(tf, x, pointwise_filters, is_training, name):
    with tf.variable_scope(name):
        channels = x.shape.as_list()[-1]
        depthwise_filter = tf.get_variable('depthwise_weights', [3, 3, channels, 1],
                                           initializer=tf.truncated_normal_initializer(stddev=0.3), regularizer=l2)
        x = tf.nn.depthwise_conv2d(x, depthwise_filter, strides=[1, 1, 1, 1], padding='SAME')
        x = tf.layers.batch_normalization(x, momentum=0.9, training=is_training)
        x = tf.nn.relu6(x)
        x = tf.layers.conv2d(x, pointwise_filters, 1, use_bias=False, kernel_regularizer=l2)
        x = tf.layers.batch_normalization(x, momentum=0.9, training=is_training)
        return tf.nn.relu6(x)


def inference(tf, images, is_training):
    x = tf.layers.conv2d(images, 8, 3, padding='same', use_bias=False, kernel_regularizer=l2, name='stem')
    x = tf.nn.relu6(tf.layers.batch_normalization(x, momentum=0.9, training=is_training, name="stem_bn"))
    x = depthwise_block(tf, x, 16, is_training, 'block1')
    x = tf.layers.max_pooling2d(x, 2, 2)
    x = tf.layers.separable_conv2d(x, 24, 3, padding='same', depthwise_regularizer=l2, pointwise_regularizer=l2,
                                   activation=tf.nn.relu6, name='block2')
    x = tf.reduce_mean(x, axis=[1, 2])
    return tf.layers.dense(x, 10, kernel_regularizer=l2, name='logits')


def main(tf):
    global tf_module
    tf_module = tf
    x_train, y_train, x_test, y_test = digits()
    data = Batches(x_train, y_train, seed=14)
    tf.set_random_seed(14)
    images = tf.placeholder(tf.float32, [None, 64], name='images')
    labels = tf.placeholder(tf.int64, [None], name='labels')
    is_training = tf.placeholder_with_default(False, [], name='is_training')
    batch = tf.reshape(images, [-1, 8, 8, 1])
    batch = tf.cond(is_training, lambda: tf.image.random_flip_up_down(batch), lambda: batch)
    logits = inference(tf, batch, is_training)
    cross_entropy = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    reg_loss = tf.losses.get_regularization_loss()
    loss = cross_entropy + reg_loss
    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.piecewise_constant(global_step, [100], [0.05, 0.01])
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True).minimize(loss, global_step=global_step)
    with tf.variable_scope('streaming'):
        acc, acc_op = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    running_vars = tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES, scope='streaming')
    reset = tf.variables_initializer(var_list=running_vars)
    losses, evals = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, training_steps + 1):
            batch_x, batch_y = data.next_batch(batch_size)
            _, l = sess.run([train_op, cross_entropy], feed_dict={images: batch_x, labels: batch_y, is_training: True})
            losses.append(l)
            if step % 75 == 0:
                sess.run(reset)
                for i in range(0, len(x_test), 100):
                    sess.run(acc_op, feed_dict={images: x_test[i:i + 100], labels: y_test[i:i + 100]})
                evals.append(sess.run(acc))
        regularization = sess.run(reg_loss)
    return {
        "losses": losses, "evals": evals, "regularization": float(regularization),
        "running": [v.op.name for v in running_vars],
        "trainable": [v.op.name for v in tf.trainable_variables()],
        "reg_names": [t.op.name for t in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)],
        "update_count": len(update_ops),
    }
