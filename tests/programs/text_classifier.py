"""A bag-of-words text classifier as TF1 users wrote one without a vocabulary file: raw lines fed as strings,
`tf.string_split` into a SparseTensor of words, `tf.string_to_hash_bucket_fast` on its values (the
hashing trick), the hashed ids back into a SparseTensor for `embedding_lookup_sparse(combiner="mean")`,
tf.layers.dense with `kernel_regularizer=lambda w: ...` (TF1 code without tf.contrib), the regularization
losses gathered by `tf.losses.get_total_loss()`, Adagrad on full batches. Data: the Zen of Python, each
line labelled by whether it is one of its "X is better than Y" aphorisms."""

import numpy as np

from tests.programs.data import zen_text

NUM_BUCKETS = 200
EMBEDDING_SIZE = 8
HIDDEN = 16


def load():
    lines = [line for line in zen_text().split("\n")[2:] if line]
    labels = np.array([int(" is better than " in line) for line in lines], np.int64)
    return lines, labels


def main(tf):
    lines, labels = load()
    tf.set_random_seed(12)
    text = tf.placeholder(tf.string, [None], name="text")
    y = tf.placeholder(tf.int64, [None], name="labels")
    words = tf.string_split(text)
    hashed = tf.string_to_hash_bucket_fast(words.values, NUM_BUCKETS)
    sp_ids = tf.SparseTensor(words.indices, hashed, words.dense_shape)
    tokens = tf.sparse_tensor_to_dense(words, default_value="<pad>")
    embeddings = tf.get_variable("embeddings", [NUM_BUCKETS, EMBEDDING_SIZE],
                                 initializer=tf.random_uniform_initializer(-1.0, 1.0))
    doc = tf.nn.embedding_lookup_sparse(embeddings, sp_ids, None, combiner="mean")
    hidden = tf.layers.dense(doc, HIDDEN, activation=tf.nn.relu,
                             kernel_regularizer=lambda w: 1e-3 * tf.nn.l2_loss(w))
    logits = tf.layers.dense(hidden, 2, kernel_regularizer=lambda w: 1e-3 * tf.nn.l2_loss(w))
    tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    loss = tf.losses.get_losses()[0]
    reg_loss = tf.losses.get_regularization_loss()
    total_loss = tf.losses.get_total_loss()
    train_op = tf.train.AdagradOptimizer(0.3).minimize(total_loss)
    predictions = tf.argmax(logits, 1)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(predictions, y), tf.float32))
    history = []
    unseen = ["Readability is better than cleverness.", "Errors should be loud."]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _step in range(100):
            _, l, r, t = sess.run([train_op, loss, reg_loss, total_loss], feed_dict={text: lines, y: labels})
            history.append((l, r, t))
        acc = sess.run(accuracy, feed_dict={text: lines, y: labels})
        guesses = sess.run(predictions, feed_dict={text: unseen})
        first_ids, first_tokens, shape = sess.run([hashed, tokens, words.dense_shape], feed_dict={text: lines[:2]})
    return {
        "history": np.array(history), "accuracy": float(acc), "unseen": guesses, "positives": int(labels.sum()),
        "ids": first_ids, "tokens": first_tokens, "shape": shape,
        "trainable": [v.op.name for v in tf.trainable_variables()],
        "regularization": [t.op.name for t in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)],
        "losses_collection": [t.op.name for t in tf.get_collection(tf.GraphKeys.LOSSES)],
        "total": total_loss.op.name,
    }
