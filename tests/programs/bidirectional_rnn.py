"""aymericdamien/TensorFlow-Examples bidirectional_rnn.py on the digits (each 8x8 image read as a sequence of
its inked columns, left-aligned and zero-padded to 8), as the many copies that moved to the dynamic API
wrote it: `bidirectional_dynamic_rnn` with LSTMCells and a `sequence_length` (from the first to the last
inked column), the forward output at each sequence's last step (`gather_nd`) beside the backward output
at step 0, Momentum with an exponentially decayed, staircased learning rate on a global step."""

import numpy as np

from tests.programs.data import Batches, digits, one_hot

learning_rate = 0.1
training_steps = 150
batch_size = 64
num_input = 8
timesteps = 8
num_hidden = 16
num_classes = 10


def to_sequences(images):
    columns = images.reshape(-1, 8, 8).transpose(0, 2, 1)
    inked = columns.max(axis=2) > 0
    first = np.argmax(inked, axis=1)
    seq_len = (timesteps - np.argmax(inked[:, ::-1], axis=1) - first).astype(np.int32)
    seqs = np.zeros_like(columns)
    for i, (f, n) in enumerate(zip(first, seq_len)):
        seqs[i, :n] = columns[i, f:f + n]
    return seqs, seq_len


def BiRNN(tf, x, seq_len, weights, biases):
    lstm_fw_cell = tf.nn.rnn_cell.LSTMCell(num_hidden, forget_bias=1.0)
    lstm_bw_cell = tf.nn.rnn_cell.LSTMCell(num_hidden, forget_bias=1.0)
    (out_fw, out_bw), _states = tf.nn.bidirectional_dynamic_rnn(lstm_fw_cell, lstm_bw_cell, x,
                                                                sequence_length=seq_len, dtype=tf.float32)
    batch = tf.shape(out_fw)[0]
    last_fw = tf.gather_nd(out_fw, tf.stack([tf.range(batch), seq_len - 1], axis=1))
    first_bw = out_bw[:, 0, :]
    outputs = tf.concat([last_fw, first_bw], 1)
    return tf.matmul(outputs, weights['out']) + biases['out'], out_fw


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    mnist = Batches(x_train, one_hot(y_train), seed=8)
    tf.set_random_seed(8)
    X = tf.placeholder("float", [None, timesteps, num_input])
    Y = tf.placeholder("float", [None, num_classes])
    L = tf.placeholder(tf.int32, [None])
    weights = {'out': tf.Variable(tf.random_normal([2 * num_hidden, num_classes]))}
    biases = {'out': tf.Variable(tf.random_normal([num_classes]))}
    logits, out_fw = BiRNN(tf, X, L, weights, biases)
    prediction = tf.nn.softmax(logits)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    global_step = tf.Variable(0, trainable=False, name='global_step')
    lr = tf.train.exponential_decay(learning_rate, global_step, 50, 0.5, staircase=True)
    optimizer = tf.train.MomentumOptimizer(learning_rate=lr, momentum=0.9)
    train_op = optimizer.minimize(loss_op, global_step=global_step)
    correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
    init = tf.global_variables_initializer()
    losses, rates = [], []
    with tf.Session() as sess:
        sess.run(init)
        for _step in range(1, training_steps + 1):
            batch_x, batch_y = mnist.next_batch(batch_size)
            seqs, seq_len = to_sequences(batch_x)
            feed = {X: seqs, Y: batch_y, L: seq_len}
            _, loss, rate = sess.run([train_op, loss_op, lr], feed_dict=feed)
            losses.append(loss)
            rates.append(rate)
        seqs, seq_len = to_sequences(x_test)
        test = {X: seqs, Y: one_hot(y_test), L: seq_len}
        acc, fw = sess.run([accuracy, out_fw], feed_dict=test)
        padded_zero = all(np.all(fw[i, n:] == 0) for i, n in enumerate(seq_len))
        names = sorted(v.op.name for v in tf.global_variables())
    return {"accuracy": float(acc), "losses": losses, "rates": rates, "names": names,
            "padded_zero": bool(padded_zero), "short": int((seq_len < timesteps).sum())}
