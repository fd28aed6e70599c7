"""The TF tutorials' mnist_softmax.py, on the digits (64 pixels): as written for TF1 but for the data."""

from tests.programs.data import Batches, digits, one_hot


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    data = Batches(x_train, one_hot(y_train))
    x = tf.placeholder(tf.float32, [None, 64])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    for _ in range(300):
        batch_xs, batch_ys = data.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    acc = sess.run(accuracy, feed_dict={x: x_test, y_: one_hot(y_test)})
    sess.close()
    return {"accuracy": float(acc)}
