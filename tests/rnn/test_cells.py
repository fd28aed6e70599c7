"""RNN cells, static_rnn, dynamic_rnn and the bidirectional versions, against numpy re-implementations of TF1's
cell equations (run on the variables the cells made) and TF1's variable names (pinned with TF 2.21's
compat.v1 cells: `rnn/basic_lstm_cell/kernel`, `rnn/gru_cell/gates/kernel`, ...)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af

RNG = np.random.RandomState(0)
BATCH, TIME, DEPTH, UNITS = 3, 4, 5, 6
X = RNG.randn(BATCH, TIME, DEPTH).astype(np.float32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_ref(x, c, h, kernel, bias, forget_bias=1.0):
    z = np.concatenate([x, h], 1) @ kernel + bias
    i, j, f, o = np.split(z, 4, axis=1)
    c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    return c, np.tanh(c) * sigmoid(o)


def gru_ref(x, h, gk, gb, ck, cb):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    return u * h + (1 - u) * c


def values(sess, cell):
    return {v.op.name.split("/", 1)[1]: sess.run(v) for v in cell.variables}


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    af.set_random_seed(1)


def run_static(cell, inputs=X, **kwargs):
    outputs, state = af.nn.static_rnn(cell, af.unstack(af.constant(inputs), TIME, 1), dtype=af.float32, **kwargs)
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    return sess, sess.run(outputs), sess.run(state)


def test_basic_lstm_cell_names_shapes_and_math():
    cell = af.nn.rnn_cell.BasicLSTMCell(UNITS, forget_bias=0.5)
    sess, outputs, state = run_static(cell)
    assert sorted(v.op.name for v in af.trainable_variables()) == ["rnn/basic_lstm_cell/bias",
                                                                   "rnn/basic_lstm_cell/kernel"]
    w = values(sess, cell)
    assert w["basic_lstm_cell/kernel"].shape == (DEPTH + UNITS, 4 * UNITS)
    assert not w["basic_lstm_cell/bias"].any()  # zeros initializer
    c = h = np.zeros((BATCH, UNITS), np.float32)
    for t in range(TIME):
        c, h = lstm_ref(X[:, t], c, h, w["basic_lstm_cell/kernel"], w["basic_lstm_cell/bias"], 0.5)
        np.testing.assert_allclose(outputs[t], h, rtol=1e-5, atol=1e-6)
    assert isinstance(state, af.nn.rnn_cell.LSTMStateTuple)
    np.testing.assert_allclose(state.c, c, rtol=1e-5, atol=1e-6)
    assert cell.state_size == (UNITS, UNITS) and cell.output_size == UNITS


def test_basic_rnn_and_gru_cells():
    rnn = af.nn.rnn_cell.BasicRNNCell(UNITS)
    sess, outputs, state = run_static(rnn)
    w = values(sess, rnn)
    h = np.zeros((BATCH, UNITS), np.float32)
    for t in range(TIME):
        h = np.tanh(np.concatenate([X[:, t], h], 1) @ w["basic_rnn_cell/kernel"] + w["basic_rnn_cell/bias"])
    np.testing.assert_allclose(state, h, rtol=1e-5, atol=1e-6)
    af.reset_default_graph()
    gru = af.nn.rnn_cell.GRUCell(UNITS)
    sess, outputs, state = run_static(gru)
    assert sorted(v.op.name for v in af.trainable_variables()) == [
        "rnn/gru_cell/candidate/bias", "rnn/gru_cell/candidate/kernel", "rnn/gru_cell/gates/bias",
        "rnn/gru_cell/gates/kernel"]
    w = values(sess, gru)
    np.testing.assert_array_equal(w["gru_cell/gates/bias"], np.ones(2 * UNITS, np.float32))
    h = np.zeros((BATCH, UNITS), np.float32)
    for t in range(TIME):
        h = gru_ref(X[:, t], h, w["gru_cell/gates/kernel"], w["gru_cell/gates/bias"], w["gru_cell/candidate/kernel"],
                    w["gru_cell/candidate/bias"])
        np.testing.assert_allclose(outputs[t], h, rtol=1e-5, atol=1e-6)


def test_lstm_cell_with_peepholes_clip_and_projection():
    cell = af.nn.rnn_cell.LSTMCell(UNITS, use_peepholes=True, cell_clip=0.3, num_proj=2, proj_clip=0.2,
                                   forget_bias=0.7)
    sess, outputs, state = run_static(cell)
    names = sorted(v.op.name for v in af.trainable_variables())
    assert names == ["rnn/lstm_cell/bias", "rnn/lstm_cell/kernel", "rnn/lstm_cell/projection/kernel",
                     "rnn/lstm_cell/w_f_diag", "rnn/lstm_cell/w_i_diag", "rnn/lstm_cell/w_o_diag"]
    w = values(sess, cell)
    assert w["lstm_cell/kernel"].shape == (DEPTH + 2, 4 * UNITS)
    c, m = np.zeros((BATCH, UNITS), np.float32), np.zeros((BATCH, 2), np.float32)
    for t in range(TIME):
        z = np.concatenate([X[:, t], m], 1) @ w["lstm_cell/kernel"] + w["lstm_cell/bias"]
        i, j, f, o = np.split(z, 4, axis=1)
        c = sigmoid(f + 0.7 + w["lstm_cell/w_f_diag"] * c) * c + sigmoid(i + w["lstm_cell/w_i_diag"] * c) * np.tanh(j)
        c = np.clip(c, -0.3, 0.3)
        m = sigmoid(o + w["lstm_cell/w_o_diag"] * c) * np.tanh(c)
        m = np.clip(m @ w["lstm_cell/projection/kernel"], -0.2, 0.2)
        np.testing.assert_allclose(outputs[t], m, rtol=1e-5, atol=1e-6)
    assert outputs[0].shape == (BATCH, 2) and cell.state_size == (UNITS, 2)


def test_multi_rnn_cell_names_and_state_is_tuple_false():
    cells = [af.nn.rnn_cell.BasicLSTMCell(UNITS), af.nn.rnn_cell.BasicLSTMCell(3)]
    multi = af.nn.rnn_cell.MultiRNNCell(cells)
    sess, outputs, state = run_static(multi)
    assert sorted(v.op.name for v in af.trainable_variables()) == [
        f"rnn/multi_rnn_cell/cell_{i}/basic_lstm_cell/{n}" for i in (0, 1) for n in ("bias", "kernel")]
    assert len(state) == 2 and outputs[-1].shape == (BATCH, 3)
    af.reset_default_graph()
    flat = af.nn.rnn_cell.MultiRNNCell([af.nn.rnn_cell.GRUCell(2), af.nn.rnn_cell.GRUCell(2)], state_is_tuple=False)
    _, _, flat_state = run_static(flat)
    assert flat_state.shape == (BATCH, 4)
    with pytest.raises(ValueError, match="state_is_tuple"):
        af.nn.rnn_cell.MultiRNNCell([af.nn.rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)


def test_zero_state_and_unknown_depth_error():
    cell = af.nn.rnn_cell.BasicLSTMCell(4)
    z = cell.zero_state(7, af.float32)
    assert z.c.shape.as_list() == [7, 4] and z.c.op.name.startswith("BasicLSTMCellZeroState")
    batch = af.placeholder(af.int32, [])
    dyn = cell.zero_state(batch, af.float32)
    assert af.Session().run(dyn.h, {batch: 2}).shape == (2, 4)
    with pytest.raises(ValueError, match="inputs.shape\\[-1\\] to be known"):
        cell(af.placeholder(af.float32, [2, None]), cell.zero_state(2, af.float32))


def test_sequence_length_zeroes_outputs_and_copies_state_static_and_dynamic():
    lengths = np.array([4, 2, 0], np.int32)
    cell = af.nn.rnn_cell.GRUCell(UNITS)
    outs_s, state_s = af.nn.static_rnn(cell, af.unstack(af.constant(X), TIME, 1), dtype=af.float32,
                                       sequence_length=lengths)
    outs_d, state_d = af.nn.dynamic_rnn(cell, X, sequence_length=lengths, dtype=af.float32)
    assert outs_d.shape.as_list() == [BATCH, TIME, UNITS]
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    s_outs, s_state, d_outs, d_state = sess.run([af.stack(outs_s, 1), state_s, outs_d, state_d])
    np.testing.assert_allclose(d_outs, s_outs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_state, s_state, rtol=1e-5, atol=1e-6)
    assert not d_outs[1, 2:].any() and not d_outs[2].any() and not d_state[2].any()
    np.testing.assert_allclose(d_state[1], d_outs[1, 1], rtol=1e-6)  # the state at its last step
    assert len({v.op.name for v in af.trainable_variables()}) == 4  # one set, shared by both unrollings


def test_dynamic_rnn_tensor_arrays_names_and_unwritten_steps():
    """TF1's loop: inputs unstacked into a TensorArray, read at step t, outputs written and stacked (names, the
    run-time array names and static shapes checked against TF 2.21 with v1 control flow). With a dynamic batch
    and every sequence shorter than the input, the steps never run stack as zeros, with no gradient."""
    x = af.placeholder(af.float32, [None, TIME, DEPTH])
    outputs, state = af.nn.dynamic_rnn(af.nn.rnn_cell.GRUCell(UNITS), x, sequence_length=[2, 3], dtype=af.float32)
    assert outputs.shape.as_list() == [None, TIME, UNITS] and state.shape.as_list() == [None, UNITS]
    graph = af.get_default_graph()
    arrays = {op.name: op.get_attr("tensor_array_name") for op in graph.get_operations() if op.type == "TensorArrayV3"}
    assert arrays == {"rnn/TensorArray": "rnn/dynamic_rnn/output_0", "rnn/TensorArray_1": "rnn/dynamic_rnn/input_0"}
    names = {op.name for op in graph.get_operations()}
    assert {"rnn/TensorArrayStack/TensorArrayGatherV3", "rnn/while/TensorArrayReadV3", "rnn/while/Select",
            "rnn/while/TensorArrayWrite/TensorArrayWriteV3",
            "rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3"} <= names
    assert not any(op.type == "ConcatV2" and "Cell" not in op.name and "cell" not in op.name
                   for op in graph.get_operations() if op.name.startswith("rnn/while/"))  # no growing accumulator
    (g_x,) = af.gradients(af.reduce_sum(outputs) + af.reduce_sum(state), [x])
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    out, gx = sess.run([outputs, g_x], {x: X[:2]})
    assert out.shape == (2, TIME, UNITS) and not out[:, 3:].any() and not out[0, 2:].any() and out[1, 2].any()
    assert not gx[:, 3:].any() and not gx[0, 2:].any() and gx[1, 2].any()


def test_dynamic_rnn_equals_static_rnn_time_major_and_initial_state():
    cell = af.nn.rnn_cell.BasicLSTMCell(UNITS)
    init = cell.zero_state(BATCH, af.float32)
    init = af.nn.rnn_cell.LSTMStateTuple(init.c + 0.5, init.h - 0.25)
    with af.variable_scope("shared"):
        outs_s, _ = af.nn.static_rnn(cell, af.unstack(af.constant(X), TIME, 1), initial_state=init)
    with af.variable_scope("shared", reuse=True):
        outs_t, state_t = af.nn.dynamic_rnn(cell, np.transpose(X, (1, 0, 2)), initial_state=init, time_major=True)
    assert outs_t.shape.as_list() == [TIME, BATCH, UNITS]
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    np.testing.assert_allclose(sess.run(outs_t), np.stack(sess.run(outs_s), 0), rtol=1e-5, atol=1e-6)
    assert isinstance(sess.run(state_t), af.nn.rnn_cell.LSTMStateTuple)


def test_dynamic_rnn_gradient_matches_finite_differences():
    cell = af.nn.rnn_cell.BasicRNNCell(3)
    x = af.placeholder(af.float64, [2, 3, 2])
    outputs, state = af.nn.dynamic_rnn(cell, x, sequence_length=[3, 2], dtype=af.float64)
    loss = af.reduce_sum(outputs * outputs) + af.reduce_sum(state)
    kernel = [v for v in af.trainable_variables() if v.op.name.endswith("kernel")][0]
    g_kernel, g_x = af.gradients(loss, [kernel, x])
    xv = RNG.randn(2, 3, 2)
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    k0 = sess.run(kernel)
    analytic_k, analytic_x = sess.run([g_kernel, g_x], {x: xv})
    eps = 1e-6
    numeric = np.zeros_like(k0)
    for idx in np.ndindex(*k0.shape):
        for sign in (1, -1):
            k = k0.copy()
            k[idx] += sign * eps
            sess.run(af.assign(kernel, k))
            numeric[idx] += sign * sess.run(loss, {x: xv}) / (2 * eps)
    np.testing.assert_allclose(analytic_k, numeric, rtol=1e-5, atol=1e-7)
    sess.run(af.assign(kernel, k0))
    numeric_x = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        plus, minus = xv.copy(), xv.copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric_x[idx] = (sess.run(loss, {x: plus}) - sess.run(loss, {x: minus})) / (2 * eps)
    np.testing.assert_allclose(analytic_x, numeric_x, rtol=1e-5, atol=1e-7)
    assert not analytic_x[1, 2].any()  # past its length, an input has no effect


def test_dynamic_rnn_gradient_with_every_dimension_static_and_no_sequence_length():
    """The backward loop's gradient of the output accumulator shrinks by a row per step: it must take the forward
    accumulator's invariant shape [None, ...] rather than the fully static shape it enters with."""
    cell = af.nn.rnn_cell.BasicLSTMCell(2)
    x = af.placeholder(af.float64, [2, 3, 2])
    outputs, state = af.nn.dynamic_rnn(cell, x, dtype=af.float64)
    loss = af.reduce_sum(outputs * outputs) + af.reduce_sum(state.h)
    (g_x,) = af.gradients(loss, [x])
    assert g_x.shape.as_list() == [2, 3, 2]
    xv = RNG.randn(2, 3, 2)
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    eps = 1e-6
    numeric = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        plus, minus = xv.copy(), xv.copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric[idx] = (sess.run(loss, {x: plus}) - sess.run(loss, {x: minus})) / (2 * eps)
    np.testing.assert_allclose(sess.run(g_x, {x: xv}), numeric, rtol=1e-5, atol=1e-7)


def test_bidirectional_rnns_reverse_within_each_length():
    lengths = np.array([4, 3, 1], np.int32)
    fw, bw = af.nn.rnn_cell.GRUCell(2, name="f"), af.nn.rnn_cell.GRUCell(2, name="b")
    (out_fw, out_bw), (st_fw, st_bw) = af.nn.bidirectional_dynamic_rnn(fw, bw, X, sequence_length=lengths,
                                                                       dtype=af.float32)
    names = sorted(v.op.name for v in af.trainable_variables())
    assert names[0].startswith("bidirectional_rnn/bw/b/") and names[-1].startswith("bidirectional_rnn/fw/f/")
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    got_fw, got_bw, got_st_bw = sess.run([out_fw, out_bw, st_bw])
    # the backward cell alone on each reversed prefix gives the same
    with af.variable_scope("bidirectional_rnn/bw", reuse=True):
        for b, n in enumerate(lengths):
            rev = X[b:b + 1, :n][:, ::-1]
            alone, alone_state = af.nn.dynamic_rnn(bw, rev, dtype=af.float32)
            a, s = sess.run([alone, alone_state])
            np.testing.assert_allclose(got_bw[b, :n], a[0, ::-1], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_st_bw[b], s[0], rtol=1e-5, atol=1e-6)
            assert not got_bw[b, n:].any() and not got_fw[b, n:].any()
    outs, s_fw, s_bw = af.nn.static_bidirectional_rnn(af.nn.rnn_cell.GRUCell(2), af.nn.rnn_cell.GRUCell(2),
                                                      af.unstack(af.constant(X), TIME, 1), dtype=af.float32,
                                                      scope="sbi")
    assert len(outs) == TIME and outs[0].shape.as_list() == [BATCH, 4]


def test_wrappers():
    af.set_random_seed(3)
    base = af.nn.rnn_cell.BasicLSTMCell(DEPTH)
    dropped = af.nn.rnn_cell.DropoutWrapper(base, input_keep_prob=0.5, output_keep_prob=0.5, seed=4)
    residual = af.nn.rnn_cell.ResidualWrapper(dropped)
    wrapped = af.nn.rnn_cell.DeviceWrapper(residual, "/cpu:0")
    outputs, state = af.nn.dynamic_rnn(wrapped, X, dtype=af.float32)
    assert sorted(v.op.name for v in af.trainable_variables()) == ["rnn/basic_lstm_cell/bias",
                                                                   "rnn/basic_lstm_cell/kernel"]
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    out = sess.run(outputs)
    assert out.shape == X.shape and wrapped.output_size == DEPTH
    keep = af.nn.rnn_cell.DropoutWrapper(af.nn.rnn_cell.GRUCell(2), state_keep_prob=0.0001, seed=1)
    _, dropped_state = af.nn.static_rnn(keep, af.unstack(af.constant(X), TIME, 1), dtype=af.float32, scope="k")
    sess.run(af.global_variables_initializer())
    assert not sess.run(dropped_state).any()  # a GRU's whole state is dropped
    var = af.nn.rnn_cell.DropoutWrapper(af.nn.rnn_cell.GRUCell(2), output_keep_prob=0.5, variational_recurrent=True,
                                        dtype=af.float32)
    v_out, _ = af.nn.static_rnn(var, af.unstack(af.constant(X), TIME, 1), dtype=af.float32, scope="v")
    sess.run(af.global_variables_initializer())
    masks = [o == 0 for o in sess.run(v_out)]
    assert all((m == masks[0]).all() for m in masks)  # one mask for every step
    with pytest.raises(ValueError, match="between 0 and 1"):
        af.nn.rnn_cell.DropoutWrapper(base, input_keep_prob=1.5)


def test_cells_train():
    """A tiny LSTM learns to output the running sum's sign."""
    xs = RNG.randn(32, 6, 1).astype(np.float32)
    ys = (np.cumsum(xs, 1)[:, -1, 0] > 0).astype(np.int32)
    cell = af.nn.rnn_cell.BasicLSTMCell(8)
    outputs, state = af.nn.dynamic_rnn(cell, xs, dtype=af.float32)
    logits = af.layers.dense(state.h, 2) if hasattr(af.layers, "dense") else af.matmul(
        state.h, af.get_variable("w", [8, 2]))
    loss = af.reduce_mean(af.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
    step = af.train.AdamOptimizer(0.05).minimize(loss)
    sess = af.Session()
    sess.run(af.global_variables_initializer())
    first = sess.run(loss)
    for _ in range(60):
        sess.run(step)
    assert sess.run(loss) < first / 2
