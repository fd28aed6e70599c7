"""A DCGAN on the digits in the style of the widely copied TF1 DCGAN tutorials: a generator of dense ->
reshape -> conv2d_transpose with batch normalization (a `training` placeholder), a conv2d discriminator
with leaky ReLUs and batch normalization, called twice under `variable_scope(reuse=True)`, sigmoid
cross-entropy losses, two Adam(beta1=0.5) optimizers on variables picked by scope name, run under
`control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))` so the moving statistics update."""

import numpy as np

from tests.programs.data import digits

batch_size = 32
z_dim = 16
num_steps = 120
learning_rate = 0.0002 * 10
beta1 = 0.5


def lrelu(tf, x, alpha=0.2):
    return tf.maximum(alpha * x, x)


def generator(tf, z, training, reuse=False):
    with tf.variable_scope('generator', reuse=reuse):
        h0 = tf.layers.dense(z, 2 * 2 * 32)
        h0 = tf.reshape(h0, [-1, 2, 2, 32])
        h0 = tf.nn.relu(tf.layers.batch_normalization(h0, training=training))
        h1 = tf.layers.conv2d_transpose(h0, 16, 5, strides=2, padding='same')
        h1 = tf.nn.relu(tf.layers.batch_normalization(h1, training=training))
        h2 = tf.layers.conv2d_transpose(h1, 1, 5, strides=2, padding='same')
        return tf.nn.tanh(h2)


def discriminator(tf, x, training, reuse=False):
    with tf.variable_scope('discriminator', reuse=reuse):
        h0 = lrelu(tf, tf.layers.conv2d(x, 16, 5, strides=2, padding='same'))
        h1 = tf.layers.conv2d(h0, 32, 5, strides=2, padding='same')
        h1 = lrelu(tf, tf.layers.batch_normalization(h1, training=training))
        flat = tf.reshape(h1, [-1, 2 * 2 * 32])
        logits = tf.layers.dense(flat, 1)
        return tf.nn.sigmoid(logits), logits


def main(tf):
    x_train, _, _, _ = digits()
    images = x_train.reshape(-1, 8, 8, 1) * 2.0 - 1.0
    rng = np.random.RandomState(7)
    tf.set_random_seed(7)
    inputs_real = tf.placeholder(tf.float32, [None, 8, 8, 1], name='input_real')
    inputs_z = tf.placeholder(tf.float32, [None, z_dim], name='input_z')
    is_training = tf.placeholder(tf.bool, name='is_training')

    g_model = generator(tf, inputs_z, is_training)
    d_model_real, d_logits_real = discriminator(tf, inputs_real, is_training)
    d_model_fake, d_logits_fake = discriminator(tf, g_model, is_training, reuse=True)
    d_loss_real = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_logits_real, labels=tf.ones_like(d_model_real) * 0.9))
    d_loss_fake = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_logits_fake, labels=tf.zeros_like(d_model_fake)))
    d_loss = d_loss_real + d_loss_fake
    g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_logits_fake, labels=tf.ones_like(d_model_fake)))

    t_vars = tf.trainable_variables()
    d_vars = [var for var in t_vars if var.name.startswith('discriminator')]
    g_vars = [var for var in t_vars if var.name.startswith('generator')]
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        d_train_opt = tf.train.AdamOptimizer(learning_rate, beta1=beta1).minimize(d_loss, var_list=d_vars)
        g_train_opt = tf.train.AdamOptimizer(learning_rate, beta1=beta1).minimize(g_loss, var_list=g_vars)

    history = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _step in range(num_steps):
            batch_images = images[rng.randint(0, len(images), batch_size)]
            batch_z = rng.uniform(-1, 1, size=(batch_size, z_dim))
            _, dl = sess.run([d_train_opt, d_loss], feed_dict={inputs_real: batch_images, inputs_z: batch_z,
                                                               is_training: True})
            _, gl = sess.run([g_train_opt, g_loss], feed_dict={inputs_z: batch_z, inputs_real: batch_images,
                                                               is_training: True})
            history.append((dl, gl))
        sample_z = rng.uniform(-1, 1, size=(16, z_dim))
        samples = sess.run(g_model, feed_dict={inputs_z: sample_z, is_training: False})
        moving = {v.op.name: sess.run(v) for v in tf.global_variables() if 'moving_' in v.op.name}
    return {
        "history": np.array(history), "samples": samples,
        "trainable": [v.op.name for v in t_vars],
        "d_vars": len(d_vars), "g_vars": len(g_vars),
        "update_ops": [op.name for op in tf.get_collection(tf.GraphKeys.UPDATE_OPS)],
        "moving": moving,
        "globals": sorted(v.op.name for v in tf.global_variables()),
        "shapes": [g_model.shape.as_list(), d_logits_fake.shape.as_list()],
    }
