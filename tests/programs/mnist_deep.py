"""The TF tutorials' mnist_deep.py (two conv layers, dropout, Adam), on 8x8 digits: the same code but for
the image size, fewer steps and a "float" placeholder as in older copies."""

from tests.programs.data import Batches, digits, one_hot


def deepnn(tf, x):
    with tf.name_scope('reshape'):
        x_image = tf.reshape(x, [-1, 8, 8, 1])
    with tf.name_scope('conv1'):
        W_conv1 = weight_variable(tf, [5, 5, 1, 32])
        b_conv1 = bias_variable(tf, [32])
        h_conv1 = tf.nn.relu(conv2d(tf, x_image, W_conv1) + b_conv1)
    with tf.name_scope('pool1'):
        h_pool1 = max_pool_2x2(tf, h_conv1)
    with tf.name_scope('conv2'):
        W_conv2 = weight_variable(tf, [5, 5, 32, 64])
        b_conv2 = bias_variable(tf, [64])
        h_conv2 = tf.nn.relu(conv2d(tf, h_pool1, W_conv2) + b_conv2)
    with tf.name_scope('pool2'):
        h_pool2 = max_pool_2x2(tf, h_conv2)
    with tf.name_scope('fc1'):
        W_fc1 = weight_variable(tf, [2 * 2 * 64, 256])
        b_fc1 = bias_variable(tf, [256])
        h_pool2_flat = tf.reshape(h_pool2, [-1, 2 * 2 * 64])
        h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)
    with tf.name_scope('dropout'):
        keep_prob = tf.placeholder(tf.float32)
        h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    with tf.name_scope('fc2'):
        W_fc2 = weight_variable(tf, [256, 10])
        b_fc2 = bias_variable(tf, [10])
        y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    return y_conv, keep_prob


def conv2d(tf, x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding='SAME')


def max_pool_2x2(tf, x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')


def weight_variable(tf, shape):
    initial = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(initial)


def bias_variable(tf, shape):
    initial = tf.constant(0.1, shape=shape)
    return tf.Variable(initial)


def main(tf):
    x_train, y_train, x_test, y_test = digits()
    mnist = Batches(x_train, one_hot(y_train))
    tf.set_random_seed(1)
    x = tf.placeholder("float", [None, 64])
    y_ = tf.placeholder(tf.float32, [None, 10])
    y_conv, keep_prob = deepnn(tf, x)
    with tf.name_scope('loss'):
        cross_entropy = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv)
    cross_entropy = tf.reduce_mean(cross_entropy)
    with tf.name_scope('adam_optimizer'):
        train_step = tf.train.AdamOptimizer(1e-3).minimize(cross_entropy)
    with tf.name_scope('accuracy'):
        correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
        correct_prediction = tf.cast(correct_prediction, tf.float32)
    accuracy = tf.reduce_mean(correct_prediction)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(60):
            batch = mnist.next_batch(50)
            if i % 20 == 0:
                train_accuracy = accuracy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0})
                assert 0.0 <= train_accuracy <= 1.0
            train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})
        acc = accuracy.eval(feed_dict={x: x_test, y_: one_hot(y_test), keep_prob: 1.0})
    return {"accuracy": float(acc), "conv1": W_name(tf)}


def W_name(tf):
    return tf.get_default_graph().get_operation_by_name("conv1/Variable").name
