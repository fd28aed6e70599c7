"""The model zoo's CIFAR-10 (cifar10.py, cifar10_train.py, cifar10_eval.py) scaled to the 8x8 digits: the
same graph code (variables on /cpu:0 with weight decay into the 'losses' collection, lrn, moving averages
of the losses and the variables, exponential decay, MonitoredTrainingSession with StopAtStepHook and
NanTensorHook, evaluation from the averaged variables through `variables_to_restore`), with the
training images distorted per image by `map_fn` (random crop, flip, brightness, contrast,
standardization) instead of a queue-fed reader."""

import numpy as np

from tests.programs.data import digits

BATCH_SIZE = 64
NUM_CLASSES = 10
MOVING_AVERAGE_DECAY = 0.9999
NUM_EPOCHS_PER_DECAY = 350.0
LEARNING_RATE_DECAY_FACTOR = 0.1
INITIAL_LEARNING_RATE = 0.15
IMAGE_SIZE = 6


def _variable_on_cpu(tf, name, shape, initializer):
    with tf.device('/cpu:0'):
        var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
    return var


def _variable_with_weight_decay(tf, name, shape, stddev, wd):
    var = _variable_on_cpu(tf, name, shape, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
        tf.add_to_collection('losses', weight_decay)
    return var


def distort(tf, image):
    reshaped_image = tf.reshape(image, [8, 8, 1])
    distorted_image = tf.random_crop(reshaped_image, [IMAGE_SIZE, IMAGE_SIZE, 1])
    distorted_image = tf.image.random_flip_left_right(distorted_image)
    distorted_image = tf.image.random_brightness(distorted_image, max_delta=0.2)
    distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
    return tf.image.per_image_standardization(distorted_image)


def eval_image(tf, image):
    reshaped_image = tf.reshape(image, [8, 8, 1])
    resized_image = tf.image.resize_image_with_crop_or_pad(reshaped_image, IMAGE_SIZE, IMAGE_SIZE)
    return tf.image.per_image_standardization(resized_image)


def inference(tf, images):
    with tf.variable_scope('conv1') as scope:
        kernel = _variable_with_weight_decay(tf, 'weights', shape=[3, 3, 1, 16], stddev=0.3, wd=None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
        biases = _variable_on_cpu(tf, 'biases', [16], tf.constant_initializer(0.0))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv1 = tf.nn.relu(pre_activation, name=scope.name)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm1')
    with tf.variable_scope('conv2') as scope:
        kernel = _variable_with_weight_decay(tf, 'weights', shape=[3, 3, 16, 16], stddev=0.1, wd=None)
        conv = tf.nn.conv2d(norm1, kernel, [1, 1, 1, 1], padding='SAME')
        biases = _variable_on_cpu(tf, 'biases', [16], tf.constant_initializer(0.1))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv2 = tf.nn.relu(pre_activation, name=scope.name)
    norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm2')
    pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool2')
    with tf.variable_scope('local3') as scope:
        reshape = tf.reshape(pool2, [images.get_shape().as_list()[0], -1])
        dim = reshape.get_shape()[1].value
        weights = _variable_with_weight_decay(tf, 'weights', shape=[dim, 96], stddev=0.1, wd=0.004)
        biases = _variable_on_cpu(tf, 'biases', [96], tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
    with tf.variable_scope('local4') as scope:
        weights = _variable_with_weight_decay(tf, 'weights', shape=[96, 48], stddev=0.1, wd=0.004)
        biases = _variable_on_cpu(tf, 'biases', [48], tf.constant_initializer(0.1))
        local4 = tf.nn.relu(tf.matmul(local3, weights) + biases, name=scope.name)
    with tf.variable_scope('softmax_linear') as scope:
        weights = _variable_with_weight_decay(tf, 'weights', [48, NUM_CLASSES], stddev=1 / 48.0, wd=None)
        biases = _variable_on_cpu(tf, 'biases', [NUM_CLASSES], tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local4, weights), biases, name=scope.name)
    tf.nn.zero_fraction(local4)
    return softmax_linear


def loss(tf, logits, labels):
    labels = tf.cast(labels, tf.int64)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                   name='cross_entropy_per_example')
    cross_entropy_mean = tf.reduce_mean(cross_entropy, name='cross_entropy')
    tf.add_to_collection('losses', cross_entropy_mean)
    return tf.add_n(tf.get_collection('losses'), name='total_loss')


def _add_loss_summaries(tf, total_loss):
    loss_averages = tf.train.ExponentialMovingAverage(0.9, name='avg')
    losses = tf.get_collection('losses')
    loss_averages_op = loss_averages.apply(losses + [total_loss])
    return loss_averages_op


def train(tf, total_loss, global_step):
    num_batches_per_epoch = 1500 / BATCH_SIZE
    decay_steps = int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY)
    lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps, LEARNING_RATE_DECAY_FACTOR,
                                    staircase=True)
    loss_averages_op = _add_loss_summaries(tf, total_loss)
    with tf.control_dependencies([loss_averages_op]):
        opt = tf.train.GradientDescentOptimizer(lr)
        grads = opt.compute_gradients(total_loss)
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
    return variables_averages_op


def main(tf, train_dir, max_steps=300):
    x_train, y_train, x_test, y_test = digits()
    rng = np.random.RandomState(1)
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        global_step = tf.train.get_or_create_global_step()
        raw = tf.placeholder(tf.float32, [BATCH_SIZE, 64])
        labels = tf.placeholder(tf.int32, [BATCH_SIZE])
        images = tf.map_fn(lambda im: distort(tf, im), raw)
        images.set_shape([BATCH_SIZE, IMAGE_SIZE, IMAGE_SIZE, 1])
        logits = inference(tf, images)
        total = loss(tf, logits, labels)
        train_op = train(tf, total, global_step)
        losses = []
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=train_dir, hooks=[tf.train.StopAtStepHook(last_step=max_steps),
                                                 tf.train.NanTensorHook(total)],
                save_checkpoint_secs=None, save_checkpoint_steps=max_steps) as mon_sess:
            while not mon_sess.should_stop():
                idx = rng.randint(0, len(x_train), BATCH_SIZE)
                _, loss_value = mon_sess.run([train_op, total], {raw: x_train[idx], labels: y_train[idx]})
                losses.append(loss_value)
    with tf.Graph().as_default() as g:  # cifar10_eval.py
        raw = tf.placeholder(tf.float32, [BATCH_SIZE, 64])
        labels = tf.placeholder(tf.int32, [BATCH_SIZE])
        images = tf.map_fn(lambda im: eval_image(tf, im), raw)
        images.set_shape([BATCH_SIZE, IMAGE_SIZE, IMAGE_SIZE, 1])
        logits = inference(tf, images)
        top_k_op = tf.nn.in_top_k(logits, labels, 1)
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
        variables_to_restore = variable_averages.variables_to_restore()
        saver = tf.train.Saver(variables_to_restore)
        with tf.Session(graph=g) as sess:
            ckpt = tf.train.get_checkpoint_state(train_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            true_count = 0
            n = (len(x_test) // BATCH_SIZE) * BATCH_SIZE
            for start in range(0, n, BATCH_SIZE):
                predictions = sess.run(top_k_op, {raw: x_test[start:start + BATCH_SIZE],
                                                  labels: y_test[start:start + BATCH_SIZE]})
                true_count += np.sum(predictions)
    return {"first_loss": float(np.mean(losses[:10])), "last_loss": float(np.mean(losses[-10:])),
            "precision": true_count / n, "restored": sorted(variables_to_restore)[:3]}
