"""A character tagger with a hand-written Elman RNN run by `tf.scan`, in the style of the widely read TF1
"RNNs in TensorFlow" tutorials: one-hot inputs, the cell a function of (state, input) over explicit
weights, `tf.scan` over time-major inputs, the per-step output projection by `tf.map_fn`, a centred
RMSProp with momentum on a piecewise-constant learning rate, and an ExponentialMovingAverage of the
weights applied after each step (`control_dependencies([opt_op])`), evaluated by rebuilding the same
graph on `ema.average(v)`. Task: tag each character of the Zen of Python that begins a word."""

import numpy as np

from tests.programs.data import zen_text

num_steps = 24
batch_size = 32
state_size = 24
training_steps = 200


def load():
    text = zen_text()
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], np.int32)
    tags = np.array([int(c.isalnum() and (i == 0 or not text[i - 1].isalnum())) for i, c in enumerate(text)],
                    np.int32)
    return ids, tags, len(chars)


def model(tf, x, params, num_classes):
    rnn_inputs = tf.one_hot(x, num_classes)
    init_state = tf.zeros([tf.shape(x)[0], state_size])

    def rnn_cell(state, rnn_input):
        return tf.tanh(tf.matmul(tf.concat([rnn_input, state], 1), params['W']) + params['b'])

    rnn_outputs = tf.scan(rnn_cell, tf.transpose(rnn_inputs, [1, 0, 2]), initializer=init_state)
    logits = tf.map_fn(lambda h: tf.matmul(h, params['V']) + params['c'], rnn_outputs)
    return tf.transpose(logits, [1, 0, 2])


def main(tf):
    ids, tags, num_classes = load()
    rng = np.random.RandomState(13)
    tf.set_random_seed(13)
    x = tf.placeholder(tf.int32, [None, num_steps], name='input_placeholder')
    y = tf.placeholder(tf.int32, [None, num_steps], name='labels_placeholder')
    with tf.variable_scope('rnn'):
        params = {
            'W': tf.get_variable('W', [num_classes + state_size, state_size]),
            'b': tf.get_variable('b', [state_size], initializer=tf.constant_initializer(0.0)),
            'V': tf.get_variable('V', [state_size, 2]),
            'c': tf.get_variable('c', [2], initializer=tf.constant_initializer(0.0)),
        }
    logits = model(tf, x, params, num_classes)
    total_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.Variable(0, trainable=False, name='global_step')
    learning_rate = tf.train.piecewise_constant(global_step, [120], [0.01, 0.003])
    opt_op = tf.train.RMSPropOptimizer(learning_rate, decay=0.9, momentum=0.5, centered=True).minimize(
        total_loss, global_step=global_step)
    ema = tf.train.ExponentialMovingAverage(decay=0.9)
    with tf.control_dependencies([opt_op]):
        train_op = ema.apply(list(params.values()))
    averaged = {k: ema.average(v) for k, v in params.items()}
    ema_logits = model(tf, x, averaged, num_classes)

    def accuracy(lg):
        return tf.reduce_mean(tf.cast(tf.equal(tf.argmax(lg, 2, output_type=tf.int32), y), tf.float32))

    acc, ema_acc = accuracy(logits), accuracy(ema_logits)
    n = (len(ids) - 1) // num_steps
    eval_x, eval_y = ids[:n * num_steps].reshape(n, num_steps), tags[:n * num_steps].reshape(n, num_steps)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _step in range(training_steps):
            starts = rng.randint(0, len(ids) - num_steps, batch_size)
            batch_x = np.stack([ids[s:s + num_steps] for s in starts])
            batch_y = np.stack([tags[s:s + num_steps] for s in starts])
            _, l = sess.run([train_op, total_loss], feed_dict={x: batch_x, y: batch_y})
            losses.append(l)
        final_acc, final_ema_acc, rate = sess.run([acc, ema_acc, learning_rate], feed_dict={x: eval_x, y: eval_y})
        shadow_b, b = sess.run([averaged['b'], params['b']])
    return {
        "losses": np.array(losses), "accuracy": float(final_acc), "ema_accuracy": float(final_ema_acc),
        "rate": float(rate), "baseline": float(1 - eval_y.mean()), "shadow_moved": float(np.abs(shadow_b - b).max()),
        "globals": [v.op.name for v in tf.global_variables()],
        "averages": sorted(v.op.name for v in tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)),
        "logits_shape": logits.shape.as_list(),
    }
