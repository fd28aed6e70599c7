"""A wide linear model on sparse features, as TF1 users wrote one before tf.feature_column: the features are
built in numpy (each inked pixel's id by intensity bucket, weighted by its intensity, plus hashed
crosses of horizontally adjacent buckets, weight 1), fed as `tf.SparseTensorValue`s to two
`tf.sparse_placeholder`s, combined by `embedding_lookup_sparse(combiner="sum")` over a zero-initialised
weight matrix, trained by FTRL with L1 (so many weights stay exactly zero) and evaluated with
tf.metrics (accuracy, mean loss, a one-vs-rest AUC) after `local_variables_initializer`. The model
starts from zeros and the batches come from numpy, so TF and asyncflow run the same arithmetic."""

import numpy as np

from tests.programs.data import Batches, digits

NUM_BUCKETS = 3
NUM_BASE = 64 * (NUM_BUCKETS + 1)
NUM_CROSS = 512
NUM_FEATURES = NUM_BASE + NUM_CROSS
NUM_CLASSES = 10


def to_sparse(tf, images):
    buckets = np.minimum((images * NUM_BUCKETS).astype(np.int64) + (images > 0), NUM_BUCKETS)
    indices, ids, weights = [], [], []
    for row, (image, bucket) in enumerate(zip(images, buckets)):
        column = 0
        for pixel in np.flatnonzero(bucket):
            indices.append([row, column])
            column += 1
            ids.append(pixel * (NUM_BUCKETS + 1) + bucket[pixel])
            weights.append(image[pixel])
        for pixel in range(64):
            if pixel % 8 < 7 and bucket[pixel] and bucket[pixel + 1]:
                cross = (pixel * 31 + bucket[pixel] * 7 + bucket[pixel + 1]) % NUM_CROSS
                indices.append([row, column])
                column += 1
                ids.append(NUM_BASE + cross)
                weights.append(1.0)
    width = max(i[1] for i in indices) + 1
    shape = [len(images), width]
    indices = np.array(indices, np.int64)
    return (tf.SparseTensorValue(indices, np.array(ids, np.int64), shape),
            tf.SparseTensorValue(indices, np.array(weights, np.float32), shape))


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    data = Batches(x_train, y_train, seed=11)
    sp_ids = tf.sparse_placeholder(tf.int64, name="ids")
    sp_weights = tf.sparse_placeholder(tf.float32, name="weights")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.variable_scope("linear"):
        W = tf.get_variable("weights", [NUM_FEATURES, NUM_CLASSES], initializer=tf.zeros_initializer())
        b = tf.get_variable("bias", [NUM_CLASSES], initializer=tf.zeros_initializer())
    logits = tf.nn.embedding_lookup_sparse(W, sp_ids, sp_weights, combiner="sum") + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.FtrlOptimizer(learning_rate=0.5, l1_regularization_strength=0.01)
    train_op = optimizer.minimize(loss, global_step=global_step)
    probabilities = tf.nn.softmax(logits)
    predictions = tf.argmax(logits, 1)
    with tf.name_scope("eval"):
        acc, acc_op = tf.metrics.accuracy(labels, predictions)
        mean_loss, mean_loss_op = tf.metrics.mean(loss)
        auc, auc_op = tf.metrics.auc(tf.equal(labels, 8), probabilities[:, 8])
    losses = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for _step in range(150):
            batch_x, batch_y = data.next_batch(64)
            ids, weights = to_sparse(tf, batch_x)
            _, l = sess.run([train_op, loss], feed_dict={sp_ids: ids, sp_weights: weights, labels: batch_y})
            losses.append(l)
        for i in range(0, len(x_test), 100):
            ids, weights = to_sparse(tf, x_test[i:i + 100])
            sess.run([acc_op, mean_loss_op, auc_op],
                     feed_dict={sp_ids: ids, sp_weights: weights, labels: y_test[i:i + 100]})
        accuracy, test_loss, test_auc, w = sess.run([acc, mean_loss, auc, W])
    return {
        "losses": np.array(losses), "accuracy": float(accuracy), "test_loss": float(test_loss),
        "auc": float(test_auc), "zero_rows": int(np.sum(np.all(w == 0, axis=1))),
        "nonzero": int(np.count_nonzero(w)),
        "local": [v.op.name for v in tf.local_variables()],
        "global": [v.op.name for v in tf.global_variables()],
        "placeholders": [sp_ids.indices.name, sp_ids.values.name, sp_ids.dense_shape.name],
    }
