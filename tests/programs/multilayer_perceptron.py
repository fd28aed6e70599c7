"""aymericdamien/TensorFlow-Examples multilayer_perceptron.py on the digits: weights and biases in dicts of
`tf.Variable(tf.random_normal(...))`, `tf.add(tf.matmul(...))`, Adam, `softmax_cross_entropy_with_logits`."""

from tests.programs.data import Batches, digits, one_hot

learning_rate = 0.01
training_epochs = 8
batch_size = 100
n_hidden_1 = 64
n_hidden_2 = 64
n_input = 64
n_classes = 10


def multilayer_perceptron(tf, x, weights, biases):
    layer_1 = tf.add(tf.matmul(x, weights['h1']), biases['b1'])
    layer_2 = tf.add(tf.matmul(layer_1, weights['h2']), biases['b2'])
    out_layer = tf.matmul(layer_2, weights['out']) + biases['out']
    return out_layer


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    mnist = Batches(x_train, one_hot(y_train))
    tf.set_random_seed(0)
    X = tf.placeholder("float", [None, n_input])
    Y = tf.placeholder("float", [None, n_classes])
    weights = {
        'h1': tf.Variable(tf.random_normal([n_input, n_hidden_1], stddev=0.1)),
        'h2': tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2], stddev=0.1)),
        'out': tf.Variable(tf.random_normal([n_hidden_2, n_classes], stddev=0.1)),
    }
    biases = {
        'b1': tf.Variable(tf.random_normal([n_hidden_1])),
        'b2': tf.Variable(tf.random_normal([n_hidden_2])),
        'out': tf.Variable(tf.random_normal([n_classes])),
    }
    logits = multilayer_perceptron(tf, X, weights, biases)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    train_op = optimizer.minimize(loss_op)
    init = tf.global_variables_initializer()
    costs = []
    with tf.Session() as sess:
        sess.run(init)
        for _epoch in range(training_epochs):
            avg_cost = 0.
            total_batch = int(len(x_train) / batch_size)
            for _i in range(total_batch):
                batch_x, batch_y = mnist.next_batch(batch_size)
                _, c = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
                avg_cost += c / total_batch
            costs.append(avg_cost)
        pred = tf.nn.softmax(logits)
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        acc = accuracy.eval({X: x_test, Y: one_hot(y_test)})
    return {"accuracy": float(acc), "costs": costs}
