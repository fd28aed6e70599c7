"""The TF tutorials' fully_connected_feed.py with its mnist.py (inference/loss/training/evaluation), on the
digits; the summary writer and flags are left out (they belong to the scaffolding issue)."""

import math
import os

from tests.programs.data import Batches, digits

NUM_CLASSES = 10
IMAGE_PIXELS = 64


def inference(tf, images, hidden1_units, hidden2_units):
    with tf.name_scope('hidden1'):
        weights = tf.Variable(tf.truncated_normal([IMAGE_PIXELS, hidden1_units],
                                                  stddev=1.0 / math.sqrt(float(IMAGE_PIXELS))), name='weights')
        biases = tf.Variable(tf.zeros([hidden1_units]), name='biases')
        hidden1 = tf.nn.relu(tf.matmul(images, weights) + biases)
    with tf.name_scope('hidden2'):
        weights = tf.Variable(tf.truncated_normal([hidden1_units, hidden2_units],
                                                  stddev=1.0 / math.sqrt(float(hidden1_units))), name='weights')
        biases = tf.Variable(tf.zeros([hidden2_units]), name='biases')
        hidden2 = tf.nn.relu(tf.matmul(hidden1, weights) + biases)
    with tf.name_scope('softmax_linear'):
        weights = tf.Variable(tf.truncated_normal([hidden2_units, NUM_CLASSES],
                                                  stddev=1.0 / math.sqrt(float(hidden2_units))), name='weights')
        biases = tf.Variable(tf.zeros([NUM_CLASSES]), name='biases')
        logits = tf.matmul(hidden2, weights) + biases
    return logits


def loss(tf, logits, labels):
    labels = tf.to_int64(labels)
    return tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)


def training(tf, loss, learning_rate):
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    global_step = tf.Variable(0, name='global_step', trainable=False)
    train_op = optimizer.minimize(loss, global_step=global_step)
    return train_op


def evaluation(tf, logits, labels):
    correct = tf.nn.in_top_k(logits, labels, 1)
    return tf.reduce_sum(tf.cast(correct, tf.int32))


def do_eval(sess, eval_correct, images_placeholder, labels_placeholder, images, labels):
    true_count = sess.run(eval_correct, feed_dict={images_placeholder: images, labels_placeholder: labels})
    return float(true_count) / len(images)


def main(tf, log_dir):
    x_train, y_train, x_test, y_test = digits()
    data = Batches(x_train, y_train.astype("int32"))
    with tf.Graph().as_default():
        images_placeholder = tf.placeholder(tf.float32, shape=(None, IMAGE_PIXELS))
        labels_placeholder = tf.placeholder(tf.int32, shape=(None,))
        logits = inference(tf, images_placeholder, 64, 32)
        loss_op = loss(tf, logits, labels_placeholder)
        train_op = training(tf, loss_op, 0.1)
        eval_correct = evaluation(tf, logits, labels_placeholder)
        init = tf.global_variables_initializer()
        saver = tf.train.Saver()
        sess = tf.Session()
        sess.run(init)
        for step in range(400):
            images_feed, labels_feed = data.next_batch(100)
            _, loss_value = sess.run([train_op, loss_op],
                                     feed_dict={images_placeholder: images_feed, labels_placeholder: labels_feed})
            if (step + 1) % 200 == 0:
                checkpoint_file = os.path.join(log_dir, 'model.ckpt')
                saver.save(sess, checkpoint_file, global_step=step)
        precision = do_eval(sess, eval_correct, images_placeholder, labels_placeholder, x_test, y_test)
        names = sorted(v.op.name for v in tf.trainable_variables())
        sess.close()
    return {"precision": precision, "loss": float(loss_value), "names": names,
            "latest": tf.train.latest_checkpoint(log_dir)}
