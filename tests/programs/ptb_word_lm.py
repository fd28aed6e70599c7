"""The model zoo's ptb_word_lm.py (TF 1.x): a MultiRNNCell of BasicLSTMCells (forget_bias=0, reuse for the
validation model) with DropoutWrapper, unrolled with `reuse_variables()`, the state fed back between steps
as LSTMStateTuples, clip_by_global_norm, a learning-rate variable, and reader.ptb_producer's queue-fed
input (range_input_producer, strided_slice, assert_positive). The text is the Zen of Python, as
characters; `contrib.seq2seq.sequence_loss` (not part of tf.compat.v1) is written out as what it computes,
and the Supervisor as a Session with queue runners."""

import numpy as np

from tests.programs.data import zen_text


class SmallConfig:
    init_scale = 0.1
    learning_rate = 1.0
    max_grad_norm = 5
    num_layers = 2
    num_steps = 10
    hidden_size = 32
    max_epoch = 2
    keep_prob = 0.9
    lr_decay = 0.5
    batch_size = 8
    vocab_size = 0


def ptb_producer(tf, raw_data, batch_size, num_steps, name=None):
    with tf.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
        raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
        data_len = tf.size(raw_data)
        batch_len = data_len // batch_size
        data = tf.reshape(raw_data[0: batch_size * batch_len], [batch_size, batch_len])
        epoch_size = (batch_len - 1) // num_steps
        assertion = tf.assert_positive(epoch_size, message="epoch_size == 0, decrease batch_size or num_steps")
        with tf.control_dependencies([assertion]):
            epoch_size = tf.identity(epoch_size, name="epoch_size")
        i = tf.train.range_input_producer(epoch_size, shuffle=False).dequeue()
        x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        x.set_shape([batch_size, num_steps])
        y = tf.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
        y.set_shape([batch_size, num_steps])
        return x, y


class PTBInput:
    def __init__(self, tf, config, data, name=None):
        self.batch_size = batch_size = config.batch_size
        self.num_steps = num_steps = config.num_steps
        self.epoch_size = ((len(data) // batch_size) - 1) // num_steps
        self.input_data, self.targets = ptb_producer(tf, data, batch_size, num_steps, name=name)


class PTBModel:
    def __init__(self, tf, is_training, config, input_):
        self._input = input_
        self.batch_size = batch_size = input_.batch_size
        self.num_steps = num_steps = input_.num_steps
        size = config.hidden_size
        vocab_size = config.vocab_size
        with tf.device("/cpu:0"):
            embedding = tf.get_variable("embedding", [vocab_size, size], dtype=tf.float32)
            inputs = tf.nn.embedding_lookup(embedding, input_.input_data)
        if is_training and config.keep_prob < 1:
            inputs = tf.nn.dropout(inputs, config.keep_prob)
        output, state = self._build_rnn_graph_lstm(tf, inputs, config, is_training)
        softmax_w = tf.get_variable("softmax_w", [size, vocab_size], dtype=tf.float32)
        softmax_b = tf.get_variable("softmax_b", [vocab_size], dtype=tf.float32)
        logits = tf.nn.xw_plus_b(output, softmax_w, softmax_b)
        logits = tf.reshape(logits, [self.batch_size, self.num_steps, vocab_size])
        crossent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=input_.targets, logits=logits)
        loss = tf.reduce_mean(crossent, axis=0)  # sequence_loss(average_across_batch=True)
        self._cost = tf.reduce_sum(loss)
        self._final_state = state
        if not is_training:
            return
        self._lr = tf.Variable(0.0, trainable=False)
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self._cost, tvars), config.max_grad_norm)
        optimizer = tf.train.GradientDescentOptimizer(self._lr)
        self._train_op = optimizer.apply_gradients(zip(grads, tvars),
                                                   global_step=tf.train.get_or_create_global_step())
        self._new_lr = tf.placeholder(tf.float32, shape=[], name="new_learning_rate")
        self._lr_update = tf.assign(self._lr, self._new_lr)

    def _get_lstm_cell(self, tf, config, is_training):
        return tf.nn.rnn_cell.BasicLSTMCell(config.hidden_size, forget_bias=0.0, state_is_tuple=True,
                                            reuse=not is_training)

    def _build_rnn_graph_lstm(self, tf, inputs, config, is_training):
        def make_cell():
            cell = self._get_lstm_cell(tf, config, is_training)
            if is_training and config.keep_prob < 1:
                cell = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=config.keep_prob)
            return cell

        cell = tf.nn.rnn_cell.MultiRNNCell([make_cell() for _ in range(config.num_layers)], state_is_tuple=True)
        self._initial_state = cell.zero_state(config.batch_size, tf.float32)
        state = self._initial_state
        outputs = []
        with tf.variable_scope("RNN"):
            for time_step in range(self.num_steps):
                if time_step > 0:
                    tf.get_variable_scope().reuse_variables()
                (cell_output, state) = cell(inputs[:, time_step, :], state)
                outputs.append(cell_output)
        output = tf.reshape(tf.concat(outputs, 1), [-1, config.hidden_size])
        return output, state

    def assign_lr(self, session, lr_value):
        session.run(self._lr_update, feed_dict={self._new_lr: lr_value})

    initial_state = property(lambda self: self._initial_state)
    cost = property(lambda self: self._cost)
    final_state = property(lambda self: self._final_state)
    train_op = property(lambda self: self._train_op)
    input = property(lambda self: self._input)


def run_epoch(session, model, eval_op=None):
    costs, iters = 0.0, 0
    state = session.run(model.initial_state)
    fetches = {"cost": model.cost, "final_state": model.final_state}
    if eval_op is not None:
        fetches["eval_op"] = eval_op
    for _ in range(model.input.epoch_size):
        feed_dict = {}
        for i, (c, h) in enumerate(model.initial_state):
            feed_dict[c] = state[i].c
            feed_dict[h] = state[i].h
        vals = session.run(fetches, feed_dict)
        state = vals["final_state"]
        costs += vals["cost"]
        iters += model.input.num_steps
    return np.exp(costs / iters)


def main(tf):
    text = zen_text()
    chars = sorted(set(text))
    ids = [chars.index(c) for c in text]
    split = int(len(ids) * 0.9)
    train_data, valid_data = ids[:split], ids[split:]
    config = SmallConfig()
    config.vocab_size = len(chars)
    eval_config = SmallConfig()
    eval_config.vocab_size = len(chars)
    eval_config.batch_size = 1
    with tf.Graph().as_default():
        tf.set_random_seed(7)
        initializer = tf.random_uniform_initializer(-config.init_scale, config.init_scale)
        with tf.name_scope("Train"):
            train_input = PTBInput(tf, config=config, data=train_data, name="TrainInput")
            with tf.variable_scope("Model", reuse=None, initializer=initializer):
                m = PTBModel(tf, is_training=True, config=config, input_=train_input)
        with tf.name_scope("Valid"):
            valid_input = PTBInput(tf, config=eval_config, data=valid_data, name="ValidInput")
            with tf.variable_scope("Model", reuse=True, initializer=initializer):
                mvalid = PTBModel(tf, is_training=False, config=eval_config, input_=valid_input)
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=session, coord=coord)
            perplexities = []
            for i in range(config.max_epoch):
                m.assign_lr(session, config.learning_rate * config.lr_decay ** max(i - 1, 0.0))
                perplexities.append(run_epoch(session, m, eval_op=m.train_op))
            valid_perplexity = run_epoch(session, mvalid)
            coord.request_stop()
            coord.join(threads)
    return {"train_perplexity": perplexities, "valid_perplexity": float(valid_perplexity),
            "vocab": len(chars), "names": names}
