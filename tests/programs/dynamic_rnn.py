"""aymericdamien/TensorFlow-Examples dynamic_rnn.py (variable-length sequences): its ToySequenceData
(linear sequences against random ones, zero-padded to a maximum length, labelled one-hot), the last
relevant output picked by `tf.gather` on the flattened outputs at `range(batch) * max_len + seqlen - 1`,
as its copies wrote it with `tf.nn.dynamic_rnn(..., sequence_length=seqlen)` and a GRUCell; Adadelta in
place of plain gradient descent so that a few hundred steps suffice; shorter sequences."""

import random

learning_rate = 1.0
training_steps = 300
batch_size = 128
seq_max_len = 12
n_hidden = 24
n_classes = 2


class ToySequenceData:
    """ Generate sequence of data with dynamic length.
    This class generate samples for training:
    - Class 0: linear sequences (i.e. [0, 1, 2, 3,...])
    - Class 1: random sequences (i.e. [1, 3, 10, 7,...])
    """

    def __init__(self, n_samples=1000, max_seq_len=20, min_seq_len=3, max_value=1000, seed=0):
        rng = random.Random(seed)
        self.data = []
        self.labels = []
        self.seqlen = []
        for _ in range(n_samples):
            len_ = rng.randint(min_seq_len, max_seq_len)
            self.seqlen.append(len_)
            if rng.random() < .5:
                rand_start = rng.randint(0, max_value - len_)
                s = [[float(i) / max_value] for i in range(rand_start, rand_start + len_)]
                s += [[0.] for i in range(max_seq_len - len_)]
                self.data.append(s)
                self.labels.append([1., 0.])
            else:
                s = [[float(rng.randint(0, max_value)) / max_value] for i in range(len_)]
                s += [[0.] for i in range(max_seq_len - len_)]
                self.data.append(s)
                self.labels.append([0., 1.])
        self.batch_id = 0

    def next(self, batch_size):
        if self.batch_id == len(self.data):
            self.batch_id = 0
        batch_data = (self.data[self.batch_id:min(self.batch_id + batch_size, len(self.data))])
        batch_labels = (self.labels[self.batch_id:min(self.batch_id + batch_size, len(self.data))])
        batch_seqlen = (self.seqlen[self.batch_id:min(self.batch_id + batch_size, len(self.data))])
        self.batch_id = min(self.batch_id + batch_size, len(self.data))
        return batch_data, batch_labels, batch_seqlen


def dynamicRNN(tf, x, seqlen, weights, biases):
    cell = tf.nn.rnn_cell.GRUCell(n_hidden)
    outputs, states = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, sequence_length=seqlen)
    batch_size = tf.shape(outputs)[0]
    index = tf.range(0, batch_size) * seq_max_len + (seqlen - 1)
    outputs = tf.gather(tf.reshape(outputs, [-1, n_hidden]), index)
    return tf.matmul(outputs, weights['out']) + biases['out'], outputs, states


def main(tf):
    trainset = ToySequenceData(n_samples=1000, max_seq_len=seq_max_len, seed=1)
    testset = ToySequenceData(n_samples=500, max_seq_len=seq_max_len, seed=2)
    tf.set_random_seed(10)
    x = tf.placeholder("float", [None, seq_max_len, 1])
    y = tf.placeholder("float", [None, n_classes])
    seqlen = tf.placeholder(tf.int32, [None])
    weights = {'out': tf.Variable(tf.random_normal([n_hidden, n_classes]))}
    biases = {'out': tf.Variable(tf.random_normal([n_classes]))}
    pred, last, states = dynamicRNN(tf, x, seqlen, weights, biases)
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
    optimizer = tf.train.AdadeltaOptimizer(learning_rate=learning_rate, epsilon=1e-6).minimize(cost)
    correct_pred = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
    init = tf.global_variables_initializer()
    losses = []
    with tf.Session() as sess:
        sess.run(init)
        for _step in range(1, training_steps + 1):
            batch_x, batch_y, batch_seqlen = trainset.next(batch_size)
            _, loss = sess.run([optimizer, cost], feed_dict={x: batch_x, y: batch_y, seqlen: batch_seqlen})
            losses.append(loss)
        test_feed = {x: testset.data, y: testset.labels, seqlen: testset.seqlen}
        acc, last_out, final_state = sess.run([accuracy, last, states], feed_dict=test_feed)
        names = sorted(v.op.name for v in tf.global_variables())
    return {"accuracy": float(acc), "losses": losses, "names": names, "last": last_out, "state": final_state}
