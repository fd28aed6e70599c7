"""aymericdamien/TensorFlow-Examples save_restore_model.py on the digits: train, `saver.save`, then a second
session `saver.restore`s and trains on, ending where uninterrupted training would."""

from tests.programs.data import Batches, digits, one_hot

learning_rate = 0.001
batch_size = 100
n_hidden_1 = 64
n_hidden_2 = 64
n_input = 64
n_classes = 10


def main(tf, model_path):
    x_train, y_train, x_test, y_test = digits()
    tf.set_random_seed(9)
    x = tf.placeholder("float", [None, n_input])
    y = tf.placeholder("float", [None, n_classes])

    def multilayer_perceptron(x, weights, biases):
        layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights['h1']), biases['b1']))
        layer_2 = tf.nn.relu(tf.add(tf.matmul(layer_1, weights['h2']), biases['b2']))
        return tf.matmul(layer_2, weights['out']) + biases['out']

    weights = {
        'h1': tf.Variable(tf.random_normal([n_input, n_hidden_1], stddev=0.1)),
        'h2': tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2], stddev=0.1)),
        'out': tf.Variable(tf.random_normal([n_hidden_2, n_classes], stddev=0.1)),
    }
    biases = {
        'b1': tf.Variable(tf.random_normal([n_hidden_1], stddev=0.1)),
        'b2': tf.Variable(tf.random_normal([n_hidden_2], stddev=0.1)),
        'out': tf.Variable(tf.random_normal([n_classes], stddev=0.1)),
    }
    pred = multilayer_perceptron(x, weights, biases)
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(cost)
    init = tf.global_variables_initializer()
    saver = tf.train.Saver()
    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))

    def train(sess, epochs, seed):
        data = Batches(x_train, one_hot(y_train), seed=seed)
        for _epoch in range(epochs):
            for _i in range(len(x_train) // batch_size):
                batch_x, batch_y = data.next_batch(batch_size)
                sess.run(optimizer, feed_dict={x: batch_x, y: batch_y})

    with tf.Session() as sess:
        sess.run(init)
        train(sess, 3, seed=1)
        save_path = saver.save(sess, model_path)
        first = accuracy.eval({x: x_test, y: one_hot(y_test)})
        train(sess, 4, seed=2)
        uninterrupted = sess.run(weights['out'])
    with tf.Session() as sess:
        sess.run(init)
        saver.restore(sess, model_path)
        restored = accuracy.eval({x: x_test, y: one_hot(y_test)})
        train(sess, 4, seed=2)
        resumed = sess.run(weights['out'])
        final = accuracy.eval({x: x_test, y: one_hot(y_test)})
    return {"save_path": save_path, "first": float(first), "restored": float(restored), "final": float(final),
            "uninterrupted": uninterrupted, "resumed": resumed}
