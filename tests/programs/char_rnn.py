"""sherjilozair/char-rnn-tensorflow (model.py + train.py, TF 1.x) on the Zen of Python: a MultiRNNCell of
LSTMCells with DropoutWrapper, `tf.split`/`tf.squeeze` inputs, legacy_seq2seq's `rnn_decoder` and
`sequence_loss_by_example` written out as what they compute (contrib is not part of tf.compat.v1),
clip_by_global_norm, Adam with a learning-rate variable, the state fed back as (c, h) pairs, and
sampling with the model built for inference (batch 1, seq 1, `reuse`)."""

import numpy as np

from tests.programs.data import zen_text


class Args:
    model = 'lstm'
    rnn_size = 32
    num_layers = 2
    batch_size = 8
    seq_length = 12
    num_epochs = 3
    grad_clip = 5.0
    learning_rate = 0.01
    decay_rate = 0.97
    output_keep_prob = 0.9
    input_keep_prob = 0.9
    vocab_size = 0


class Model:
    def __init__(self, tf, args, training=True):
        self.args = args
        if not training:
            args.batch_size = 1
            args.seq_length = 1
        cell_fn = {'rnn': tf.nn.rnn_cell.BasicRNNCell, 'gru': tf.nn.rnn_cell.GRUCell,
                   'lstm': tf.nn.rnn_cell.LSTMCell}[args.model]
        cells = []
        for _ in range(args.num_layers):
            cell = cell_fn(args.rnn_size)
            if training and (args.output_keep_prob < 1.0 or args.input_keep_prob < 1.0):
                cell = tf.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob=args.input_keep_prob,
                                                     output_keep_prob=args.output_keep_prob)
            cells.append(cell)
        self.cell = cell = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=True)
        self.input_data = tf.placeholder(tf.int32, [args.batch_size, args.seq_length])
        self.targets = tf.placeholder(tf.int32, [args.batch_size, args.seq_length])
        self.initial_state = cell.zero_state(args.batch_size, tf.float32)
        with tf.variable_scope('rnnlm'):
            softmax_w = tf.get_variable("softmax_w", [args.rnn_size, args.vocab_size])
            softmax_b = tf.get_variable("softmax_b", [args.vocab_size])
        embedding = tf.get_variable("embedding", [args.vocab_size, args.rnn_size])
        inputs = tf.nn.embedding_lookup(embedding, self.input_data)
        if training and args.output_keep_prob:
            inputs = tf.nn.dropout(inputs, args.output_keep_prob)
        inputs = tf.split(inputs, args.seq_length, 1)
        inputs = [tf.squeeze(input_, [1]) for input_ in inputs]
        outputs, state = [], self.initial_state
        with tf.variable_scope('rnnlm'):  # legacy_seq2seq.rnn_decoder(..., scope='rnnlm')
            for i, inp in enumerate(inputs):
                if i > 0:
                    tf.get_variable_scope().reuse_variables()
                output, state = cell(inp, state)
                outputs.append(output)
        last_state = state
        output = tf.reshape(tf.concat(outputs, 1), [-1, args.rnn_size])
        self.logits = tf.matmul(output, softmax_w) + softmax_b
        self.probs = tf.nn.softmax(self.logits)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(  # sequence_loss_by_example, weights 1
            labels=tf.reshape(self.targets, [-1]), logits=self.logits)
        with tf.name_scope('cost'):
            self.cost = tf.reduce_sum(loss) / args.batch_size / args.seq_length
        self.final_state = last_state
        self.lr = tf.Variable(0.0, trainable=False)
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self.cost, tvars), args.grad_clip)
        with tf.name_scope('optimizer'):
            optimizer = tf.train.AdamOptimizer(self.lr)
        self.train_op = optimizer.apply_gradients(zip(grads, tvars))

    def sample(self, sess, chars, vocab, num=20, prime='The '):
        state = sess.run(self.cell.zero_state(1, "float"))
        for char in prime[:-1]:
            x = np.array([[vocab[char]]])
            state = sess.run(self.final_state, {self.input_data: x, self.initial_state: state})
        ret, char = prime, prime[-1]
        for _ in range(num):
            x = np.array([[vocab[char]]])
            probs, state = sess.run([self.probs, self.final_state], {self.input_data: x, self.initial_state: state})
            char = chars[int(np.argmax(probs[0]))]
            ret += char
        return ret


def main(tf, save_dir):
    text = zen_text()
    chars = sorted(set(text))
    vocab = {c: i for i, c in enumerate(chars)}
    tensor = np.array([vocab[c] for c in text])
    args = Args()
    args.vocab_size = len(chars)
    num_batches = len(tensor) // (args.batch_size * args.seq_length)
    xdata = tensor[:num_batches * args.batch_size * args.seq_length]
    ydata = np.copy(xdata)
    ydata[:-1], ydata[-1] = xdata[1:], xdata[0]
    x_batches = np.split(xdata.reshape(args.batch_size, -1), num_batches, 1)
    y_batches = np.split(ydata.reshape(args.batch_size, -1), num_batches, 1)
    with tf.Graph().as_default():
        tf.set_random_seed(8)
        with tf.variable_scope("model"):
            model = Model(tf, args)
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for e in range(args.num_epochs):
                sess.run(tf.assign(model.lr, args.learning_rate * (args.decay_rate ** e)))
                state = sess.run(model.initial_state)
                for b in range(num_batches):
                    feed = {model.input_data: x_batches[b], model.targets: y_batches[b]}
                    for i, (c, h) in enumerate(model.initial_state):
                        feed[c] = state[i].c
                        feed[h] = state[i].h
                    train_loss, state, _ = sess.run([model.cost, model.final_state, model.train_op], feed)
                    losses.append(train_loss)
            saver = tf.train.Saver(tf.global_variables())
            saver.save(sess, save_dir + "/model.ckpt", global_step=len(losses))
        names = sorted(v.op.name for v in tf.global_variables())
    with tf.Graph().as_default():  # sample.py: the model for inference, restored from the checkpoint
        sample_args = Args()
        sample_args.vocab_size = len(chars)
        with tf.variable_scope("model"):
            model = Model(tf, sample_args, training=False)
        with tf.Session() as sess:
            saver = tf.train.Saver(tf.global_variables())
            ckpt = tf.train.get_checkpoint_state(save_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            sample = model.sample(sess, chars, vocab, num=20, prime='The ')
    return {"first_loss": float(np.mean(losses[:5])), "last_loss": float(np.mean(losses[-5:])), "names": names,
            "sample": sample}
