"""aymericdamien/TensorFlow-Examples recurrent_network.py on the digits (each 8x8 image read as 8 steps of
8 pixels): `tf.unstack`, a BasicLSTMCell (TF1.x: `rnn.BasicLSTMCell` from contrib, which is
`tf.nn.rnn_cell.BasicLSTMCell`), `static_rnn`, the last output through a dense layer."""

from tests.programs.data import Batches, digits, one_hot

learning_rate = 0.01
training_steps = 150
batch_size = 64
num_input = 8
timesteps = 8
num_hidden = 32
num_classes = 10


def RNN(tf, x, weights, biases):
    x = tf.unstack(x, timesteps, 1)
    lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(num_hidden, forget_bias=1.0)
    outputs, states = tf.nn.static_rnn(lstm_cell, x, dtype=tf.float32)
    return tf.matmul(outputs[-1], weights['out']) + biases['out']


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    mnist = Batches(x_train, one_hot(y_train))
    tf.set_random_seed(2)
    X = tf.placeholder("float", [None, timesteps, num_input])
    Y = tf.placeholder("float", [None, num_classes])
    weights = {'out': tf.Variable(tf.random_normal([num_hidden, num_classes]))}
    biases = {'out': tf.Variable(tf.random_normal([num_classes]))}
    logits = RNN(tf, X, weights, biases)
    prediction = tf.nn.softmax(logits)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    train_op = optimizer.minimize(loss_op)
    correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
    init = tf.global_variables_initializer()
    losses = []
    with tf.Session() as sess:
        sess.run(init)
        for _step in range(1, training_steps + 1):
            batch_x, batch_y = mnist.next_batch(batch_size)
            batch_x = batch_x.reshape((batch_size, timesteps, num_input))
            _, loss = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
            losses.append(loss)
        acc = sess.run(accuracy, feed_dict={X: x_test.reshape((-1, timesteps, num_input)), Y: one_hot(y_test)})
        names = sorted(v.op.name for v in tf.trainable_variables())
    return {"accuracy": float(acc), "first_loss": float(losses[0]), "last_loss": float(losses[-1]), "names": names}
