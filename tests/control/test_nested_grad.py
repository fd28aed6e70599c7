"""Gradients through control flow nested in a while loop (TF1's nested GradLoopState; issue 13, 6b): a cond
in a loop body, a loop in a loop body (its trip count set by the outer iteration), and combinations, checked
against finite differences, numpy references and values pinned against TF 2.21's v1 control flow."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.grad.harness import GradCase, check_gradient, grad_params

LOOP = ("Enter", "Exit", "NextIteration", "Switch", "Merge")
RNG = np.random.default_rng(13)
V = np.array([0.5, -1.5, 2.0])
W = RNG.normal(size=(3, 3)) * 0.4
XS = RNG.normal(size=(5, 1, 3))
H0 = RNG.normal(size=(1, 3))


def _cond_in_loop(af, x, v0, parallel=10):
    """v <- v * x where v > 0 (elementwise sum decides), else v + sin(x); 4 iterations."""
    def body(i, v):
        return i + 1, af.cond(af.reduce_sum(v) > 0.0, lambda: v * x, lambda: v + af.sin(x))

    return af.while_loop(lambda i, v: i < 4, body, [0, v0], parallel_iterations=parallel)[1]


def _branch_by_iteration(af, x, v0):
    """Even iterations take the true branch (intermediates only there), odd ones the false branch."""
    def body(i, v):
        return i + 1, af.cond(af.equal(i % 2, 0), lambda: af.tanh(v * x) * 2.0, lambda: af.exp(v * 0.3) - x)

    return af.while_loop(lambda i, v: i < 5, body, [0, v0])[1]


def _nested_conds_in_loop(af, x, v0):
    def body(i, v):
        def outer_true():
            return af.cond(i < 2, lambda: v * x, lambda: af.square(v) * 0.5)

        return i + 1, af.cond(af.reduce_max(v) < 10.0, outer_true, lambda: v - x)

    return af.while_loop(lambda i, v: i < 4, body, [0, v0])[1]


def _loop_in_loop(af, x, v0, parallel=10):
    """The inner loop runs i times in outer iteration i, and reads x and the outer loop's variable."""
    def body(i, v):
        inner = af.while_loop(lambda j, w: j < i, lambda j, w: (j + 1, af.sin(w) * x + v * 0.1), [0, v],
                              parallel_iterations=parallel)[1]
        return i + 1, inner * 0.9

    return af.while_loop(lambda i, v: i < 4, body, [0, v0], parallel_iterations=parallel)[1]


def _loop_in_cond_in_loop(af, x, v0):
    def body(i, v):
        def looped():
            return af.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, w * x), [0, v])[1]

        return i + 1, af.cond(af.equal(i % 2, 1), looped, lambda: af.cos(v))

    return af.while_loop(lambda i, v: i < 4, body, [0, v0])[1]


def _cond_in_loop_in_loop(af, x, v0):
    def body(i, v):
        def inner_body(j, w):
            return j + 1, af.cond(af.reduce_sum(w) > 0.0, lambda: w * x, lambda: w - x * 0.5)

        return i + 1, af.while_loop(lambda j, w: j < i + 1, inner_body, [0, v])[1]

    return af.while_loop(lambda i, v: i < 3, body, [0, v0])[1]


def _loop_in_cond(af, x, v0, p):
    """A loop inside a cond at the top level: the untaken branch's backward loop is dead."""
    return af.cond(p, lambda: af.while_loop(lambda j, w: j < 3, lambda j, w: (j + 1, w * x), [0, v0])[1],
                   lambda: v0 * 2.0)


def _rnn_with_gate(af, w, xs, h0):
    """h <- tanh(h @ w + xs[t]) when the step's input sums positive, else h (a gated RNN), over 5 steps."""
    def body(t, h):
        x_t = af.gather(xs, t)
        return t + 1, af.cond(af.reduce_sum(x_t) > 0.0, lambda: af.tanh(af.matmul(h, w) + x_t), lambda: h)

    return af.while_loop(lambda t, h: t < 5, body, [0, h0])[1]


def _array_in_loop(af, xs, a0, parallel=10):
    """A TensorArray made in each iteration of the body: written twice, read back whole and by index."""
    def body(t, acc):
        inner = af.TensorArray(af.float64, 2, clear_after_read=False)
        inner = inner.write(0, xs[t] * 2.0).write(1, af.sin(xs[t]) * acc)
        return t + 1, acc + af.reduce_sum(inner.stack() * inner.read(1)) * 0.1

    return af.while_loop(lambda t, acc: t < 4, body, [0, a0], parallel_iterations=parallel)[1]


def _array_filled_by_inner_loop(af, xs, a0):
    """Each outer iteration fills a new TensorArray in an inner loop (trip count t + 1), then reduces it."""
    def body(t, acc):
        def fill(j, ta):
            return j + 1, ta.write(j, xs[j] * acc)

        _, ta = af.while_loop(lambda j, ta: j < t + 1, fill, [0, af.TensorArray(af.float64, t + 1)])
        return t + 1, acc + af.reduce_sum(af.tanh(ta.stack()))

    return af.while_loop(lambda t, acc: t < 3, body, [0, a0])[1]


X = np.array([0.8, -0.6, 1.1])
XS_TA = RNG.normal(size=(4, 3))
CASES = [
    GradCase("cond_in_loop", LOOP, lambda af, x, v: _cond_in_loop(af, x, v), [X, V]),
    GradCase("cond_in_loop_serial", LOOP, lambda af, x, v: _cond_in_loop(af, x, v, 1), [X, V]),
    GradCase("cond_in_loop_negative_start", LOOP, lambda af, x, v: _cond_in_loop(af, x, v), [X, -V]),
    GradCase("branch_by_iteration", LOOP, _branch_by_iteration, [X, V * 0.3]),
    GradCase("nested_conds_in_loop", LOOP, _nested_conds_in_loop, [X, V]),
    GradCase("loop_in_loop", LOOP, lambda af, x, v: _loop_in_loop(af, x, v), [X, V]),
    GradCase("loop_in_loop_serial", LOOP, lambda af, x, v: _loop_in_loop(af, x, v, 1), [X, V]),
    GradCase("loop_in_cond_in_loop", LOOP, _loop_in_cond_in_loop, [X, V]),
    GradCase("cond_in_loop_in_loop", LOOP, _cond_in_loop_in_loop, [X, V * 0.5]),
    GradCase("loop_in_cond_taken", LOOP, _loop_in_cond, [X, V, np.bool_(True)]),
    GradCase("loop_in_cond_not_taken", LOOP, _loop_in_cond, [X, V, np.bool_(False)]),
    GradCase("gated_rnn", LOOP, _rnn_with_gate, [W, XS, H0], rtol=1e-5, atol=1e-7),
    GradCase("array_in_loop", LOOP + ("TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArrayReadV3"),
             lambda af, xs, a: _array_in_loop(af, xs, a), [XS_TA, np.float64(0.5)]),
    GradCase("array_in_loop_serial", LOOP + ("TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArrayReadV3"),
             lambda af, xs, a: _array_in_loop(af, xs, a, 1), [XS_TA, np.float64(0.5)]),
    GradCase("array_filled_by_inner_loop", LOOP + ("TensorArrayWriteV3", "TensorArrayGatherV3"),
             _array_filled_by_inner_loop, [XS_TA, np.float64(0.3)]),
    GradCase("cond_in_loop_unknown_shapes", LOOP, lambda af, x, v: _cond_in_loop(af, x, v), [X, V],
             static_shapes=False),
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_nested_gradients_match_finite_differences(case):
    check_gradient(case)


def test_loop_in_loop_against_the_closed_form():
    """v_(i+1) = v_i * x ** i for i < 4 (inner loop of i steps): y = v0 * x ** 6."""
    for parallel in (1, 10):
        with af.Graph().as_default():
            x = af.placeholder(af.float64, [])
            v0 = af.placeholder(af.float64, [2])

            def body(i, v, x=x, parallel=parallel):
                inner = af.while_loop(lambda j, w: j < i, lambda j, w: (j + 1, w * x), [0, v],
                                      parallel_iterations=parallel)[1]
                return i + 1, inner

            y = af.while_loop(lambda i, v: i < 4, body, [0, v0], parallel_iterations=parallel)[1]
            gx, gv = af.gradients(af.reduce_sum(y), [x, v0])
            with af.Session() as sess:
                for xv in (1.5, -0.8):
                    got = sess.run([y, gx, gv], {x: xv, v0: [2.0, -1.0]})
                    np.testing.assert_allclose(got[0], np.array([2.0, -1.0]) * xv ** 6, rtol=1e-13)
                    np.testing.assert_allclose(got[1], 6 * (2.0 - 1.0) * xv ** 5, rtol=1e-13)
                    np.testing.assert_allclose(got[2], [xv ** 6] * 2, rtol=1e-13)


# Inputs and results of three programs, checked against TF 2.21's compat.v1 with v1 control flow
# (tf.disable_control_flow_v2(); TF's nested GradLoopState) by /work/shared/tools/tfdiff.py.
TF_X = np.array([0.8, -0.6, 1.1])
TF_V = np.array([0.5, -1.5, 2.0])
TF_W = np.array([[0.731, -1.231, 0.383], [0.028, 0.527, 0.154], [0.731, 0.013, -0.206]])
TF_XS = np.array([[[0.58, 0.432, -0.357]], [[-0.247, 0.719, 0.704]], [[-0.494, -0.368, -1.807]],
                  [[1.679, -0.224, 1.337]], [[0.417, 1.944, 1.537]]])
TF_H0 = np.array([[0.318, 1.481, -0.95]])
TF_COND_IN_LOOP = {  # d sum(y * y) / d (x, v0), y = _cond_in_loop(x, v0)
    "gx": [0.41943040000000026, -0.5038847999999998, 62.358947200000046],
    "gv": [0.1677721600000001, -0.05038847999999998, 8.574355240000006]}
TF_LOOP_IN_LOOP = {  # d sum(y * y) / d (x, v0), y = _loop_in_loop(x, v0)
    "y": [0.16887871457946727, -0.017726337336561072, 0.9392985627752005],
    "gx": [0.32981293055318117, -0.007707199019993481, 3.707607959861371],
    "gv": [0.09681213161820929, -3.659430983195778e-05, -0.027374359910010308]}
TF_GATED_RNN = {  # d sum(h) / d (w, xs, h0), h = _rnn_with_gate(w, xs, h0)
    "gw": [[-0.07281961700798545, 0.5563467868902005, 0.024201355550787507],
           [-0.8155953255880193, 0.3614459060933063, -0.37791252195579006],
           [0.3621895780428831, 0.6754700281777353, 0.3620682093184689]],
    "gxs_row0": [-0.3744619909523978, 0.016751739039845528, -0.2682282022270677],
    "gh": [[-0.3970845075972196, -0.04296391241563697, -0.21825893311990885]]}


def test_values_pinned_against_tf1():
    with af.Graph().as_default():
        x, v0 = af.constant(TF_X), af.constant(TF_V)
        y1 = _cond_in_loop(af, x, v0)
        y2 = _loop_in_loop(af, x, v0)
        w, xs, h0 = af.constant(TF_W), af.constant(TF_XS), af.constant(TF_H0)
        h = _rnn_with_gate(af, w, xs, h0)
        g1 = af.gradients(af.reduce_sum(y1 * y1), [x, v0])
        g2 = af.gradients(af.reduce_sum(y2 * y2), [x, v0])
        gw, gxs, gh = af.gradients(af.reduce_sum(h), [w, xs, h0])
        with af.Session() as sess:
            got = sess.run({"g1": g1, "y2": y2, "g2": g2, "gw": gw, "gxs": af.convert_to_tensor(gxs), "gh": gh})
    np.testing.assert_allclose(got["g1"], [TF_COND_IN_LOOP["gx"], TF_COND_IN_LOOP["gv"]], rtol=1e-12)
    np.testing.assert_allclose(got["y2"], TF_LOOP_IN_LOOP["y"], rtol=1e-12)
    np.testing.assert_allclose(got["g2"], [TF_LOOP_IN_LOOP["gx"], TF_LOOP_IN_LOOP["gv"]], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got["gw"], TF_GATED_RNN["gw"], rtol=1e-12)
    np.testing.assert_allclose(got["gxs"][0, 0], TF_GATED_RNN["gxs_row0"], rtol=1e-12)
    assert not got["gxs"][2].any()  # step 2's input sums negative: its branch ignores it
    np.testing.assert_allclose(got["gh"], TF_GATED_RNN["gh"], rtol=1e-12)
