"""aymericdamien/TensorFlow-Examples autoencoder.py on the digits (dicts of weights, sigmoid encoder and
decoder, RMSProp on the mean squared reconstruction error), followed by the classic TF1 checkpoint flow
its readers bolted on: tensors named and put in collections, `saver.save` with a global step,
`reset_default_graph`, `import_meta_graph` + `restore` from `get_checkpoint_state`, the tensors found again
by name and by collection, and training resumed from the imported train op."""

import os

from tests.programs.data import Batches, digits

learning_rate = 0.01
num_steps = 300
batch_size = 64
num_hidden_1 = 32
num_hidden_2 = 16
num_input = 64


def build(tf):
    X = tf.placeholder("float", [None, num_input], name="X")
    weights = {
        'encoder_h1': tf.Variable(tf.random_normal([num_input, num_hidden_1]), name='encoder_h1'),
        'encoder_h2': tf.Variable(tf.random_normal([num_hidden_1, num_hidden_2]), name='encoder_h2'),
        'decoder_h1': tf.Variable(tf.random_normal([num_hidden_2, num_hidden_1]), name='decoder_h1'),
        'decoder_h2': tf.Variable(tf.random_normal([num_hidden_1, num_input]), name='decoder_h2'),
    }
    biases = {
        'encoder_b1': tf.Variable(tf.random_normal([num_hidden_1]), name='encoder_b1'),
        'encoder_b2': tf.Variable(tf.random_normal([num_hidden_2]), name='encoder_b2'),
        'decoder_b1': tf.Variable(tf.random_normal([num_hidden_1]), name='decoder_b1'),
        'decoder_b2': tf.Variable(tf.random_normal([num_input]), name='decoder_b2'),
    }

    def encoder(x):
        layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights['encoder_h1']), biases['encoder_b1']))
        layer_2 = tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights['encoder_h2']), biases['encoder_b2']))
        return layer_2

    def decoder(x):
        layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights['decoder_h1']), biases['decoder_b1']))
        layer_2 = tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights['decoder_h2']), biases['decoder_b2']))
        return layer_2

    encoder_op = encoder(X)
    decoder_op = decoder(encoder_op)
    y_pred = tf.identity(decoder_op, name="y_pred")
    y_true = X
    loss = tf.reduce_mean(tf.pow(y_true - y_pred, 2), name="loss")
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.RMSPropOptimizer(learning_rate).minimize(loss, global_step=global_step)
    tf.add_to_collection('train_op', optimizer)
    tf.add_to_collection('encoded', encoder_op)
    return X, loss, optimizer


def main(tf, checkpoint_dir):
    x_train, _, x_test, _ = digits()
    mnist = Batches(x_train, x_train, seed=6)
    tf.set_random_seed(6)
    X, loss, optimizer = build(tf)
    saver = tf.train.Saver()
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _i in range(1, num_steps + 1):
            batch_x, _ = mnist.next_batch(batch_size)
            _, l = sess.run([optimizer, loss], feed_dict={X: batch_x})
            losses.append(l)
        saved_loss = sess.run(loss, feed_dict={X: x_test})
        save_path = saver.save(sess, os.path.join(checkpoint_dir, 'model'), global_step=num_steps)
        batch_x, _ = mnist.next_batch(batch_size)
        sess.run(optimizer, feed_dict={X: batch_x})
        uninterrupted = sess.run(loss, feed_dict={X: x_test})

    tf.reset_default_graph()
    with tf.Session() as sess:
        new_saver = tf.train.import_meta_graph(save_path + '.meta')
        ckpt = tf.train.get_checkpoint_state(checkpoint_dir)
        if ckpt and ckpt.model_checkpoint_path:
            new_saver.restore(sess, ckpt.model_checkpoint_path)
        latest = tf.train.latest_checkpoint(checkpoint_dir)
        graph = tf.get_default_graph()
        X = graph.get_tensor_by_name("X:0")
        loss = graph.get_tensor_by_name("loss:0")
        train_op = tf.get_collection('train_op')[0]
        encoded = tf.get_collection('encoded')[0]
        restored_loss = sess.run(loss, feed_dict={X: x_test})
        step = tf.train.global_step(sess, tf.train.get_global_step())
        sess.run(train_op, feed_dict={X: batch_x})
        resumed = sess.run(loss, feed_dict={X: x_test})
        codes = sess.run(encoded, feed_dict={X: x_test[:4]})
        keys = sorted(graph.get_all_collection_keys())
        names = sorted(v.op.name for v in tf.global_variables())
        train_op_name = train_op.name
    return {"losses": losses, "saved_loss": float(saved_loss), "restored_loss": float(restored_loss),
            "uninterrupted": float(uninterrupted), "resumed": float(resumed), "step": int(step),
            "save_path": os.path.basename(save_path),
            "latest": os.path.relpath(latest, checkpoint_dir),
            "checkpoint": os.path.relpath(ckpt.model_checkpoint_path, checkpoint_dir),
            "all": [os.path.relpath(p, checkpoint_dir) for p in ckpt.all_model_checkpoint_paths],
            "codes": codes, "keys": keys, "names": names, "train_op": train_op_name, "encoded": encoded.name}
