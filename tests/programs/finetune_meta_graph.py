"""The widely copied "restore a model and fine-tune it" flow of TF1 code: a tf.layers MLP whose dropout
follows a `training` placeholder (so the graph holds a tf.cond) is trained and saved; a fresh graph
`import_meta_graph`s it, restores the weights, finds the tensors by name and builds a NEW optimizer
(`AdamOptimizer().minimize` on the imported loss, so gradients through the imported graph), then trains
on with a smaller learning rate."""

import os

import numpy as np

from tests.programs.data import Batches, digits


def main(tf, checkpoint_dir):
    x_train, y_train, x_test, y_test = digits()
    data = Batches(x_train, y_train, seed=15)
    tf.set_random_seed(15)
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder_with_default(False, [], name="training")
    hidden = tf.layers.dense(x, 64, activation=tf.nn.relu, name="hidden")
    hidden = tf.layers.dropout(hidden, rate=0.3, training=training)
    logits = tf.layers.dense(hidden, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32), name="accuracy")
    train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(100):
            bx, by = data.next_batch(64)
            sess.run(train_op, {x: bx, y: by, training: True})
        first = sess.run(accuracy, {x: x_test, y: y_test})
        path = saver.save(sess, os.path.join(checkpoint_dir, "model"))
        loss_name, acc_name = loss.name, accuracy.name

    tf.reset_default_graph()
    with tf.Session() as sess:
        restorer = tf.train.import_meta_graph(path + ".meta")
        restorer.restore(sess, path)
        graph = tf.get_default_graph()
        x, y = graph.get_tensor_by_name("x:0"), graph.get_tensor_by_name("y:0")
        training = graph.get_tensor_by_name("training:0")
        loss, accuracy = graph.get_tensor_by_name(loss_name), graph.get_tensor_by_name(acc_name)
        restored = sess.run(accuracy, {x: x_test, y: y_test})
        with tf.variable_scope("finetune"):
            finetune = tf.train.AdamOptimizer(1e-3).minimize(loss)
        new_vars = [v for v in tf.global_variables() if v.op.name.startswith("finetune") or "Adam" in v.op.name
                    or "beta" in v.op.name]
        sess.run(tf.variables_initializer(new_vars))
        losses = []
        for _ in range(150):
            bx, by = data.next_batch(64)
            _, l = sess.run([finetune, loss], {x: bx, y: by, training: True})
            losses.append(l)
        final = sess.run(accuracy, {x: x_test, y: y_test})
        names = sorted(v.op.name for v in new_vars)
    return {"first": float(first), "restored": float(restored), "final": float(final),
            "losses": np.array(losses), "names": names, "loss_name": loss_name}
