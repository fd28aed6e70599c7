"""Gradients through TensorArrays (TF1's tensor_array_grad.py) by finite differences: outside loops (stack,
unstack, read, write, gather, scatter, concat, split) and through while loops that read an unstacked input
and write an output (the dynamic_rnn pattern), w.r.t. the input, a captured weight matrix and the initial
state; and the bookkeeping around it (two gradient calls, repeated steps)."""

import numpy as np
import pytest

import asyncflow as af
from tests.grad.harness import GradCase, check_gradient, grad_params

RNG = np.random.default_rng(5)
XS = RNG.normal(size=(4, 2, 3))
W = RNG.normal(size=(3, 3)) * 0.5
H0 = RNG.normal(size=(2, 3))
V = RNG.normal(size=(6,))
A = RNG.normal(size=(3,))
LOOP = ("Enter", "Exit", "NextIteration")


def _write_read(af, a, b):
    ta = af.TensorArray(af.float64, 3, clear_after_read=False)
    ta = ta.write(0, a).write(2, b * a)
    return [ta.read(0) * ta.read(2), af.exp(ta.read(0))]  # slot 0 read twice: its gradients add


def _gather_scatter(af, xs):
    ta = af.TensorArray(af.float64, 4, clear_after_read=False).scatter([2, 0, 3, 1], xs)
    return [ta.gather([1, 3]) * ta.gather([3, 0]), ta.stack()]


def _split_concat(af, v):
    ta = af.TensorArray(af.float64, 3, infer_shape=False, clear_after_read=False).split(v * v, [1, 3, 2])
    return [af.sin(ta.concat()), ta.read(1)]


def _rnn(af, xs, w, h0, dynamic=False, parallel_iterations=10):
    """dynamic_rnn's loop: step t reads xs[t] from one TensorArray and writes h_t into another."""
    steps = xs.shape[0].value
    inp = af.TensorArray(af.float64, steps).unstack(xs)
    out = af.TensorArray(af.float64, 1 if dynamic else steps, dynamic_size=dynamic)

    def body(t, h, o):
        h = af.tanh(af.matmul(h, w) + inp.read(t))
        return t + 1, h, o.write(t, h)

    _, h_last, o = af.while_loop(lambda t, h, o: t < steps, body, [0, h0, out],
                                 parallel_iterations=parallel_iterations)
    return [o.stack(), h_last]


def _rnn_concat_output(af, xs, w):
    """Writes two rows per step and reads the output back with concat."""
    inp = af.TensorArray(af.float64, 4).unstack(xs)
    out = af.TensorArray(af.float64, 4)

    def body(t, o):
        x = inp.read(t)
        return t + 1, o.write(t, af.matmul(x, w) * x)

    _, o = af.while_loop(lambda t, o: t < 4, body, [0, out])
    return o.concat()


def _reads_its_own_output(af, xs, w, h0):
    """Step t reads the output it wrote at step t - 1 (so a gradient slot gets written twice: it adds)."""
    inp = af.TensorArray(af.float64, 4).unstack(xs)
    out = af.TensorArray(af.float64, 4, clear_after_read=False).write(0, h0)

    def body(t, o):
        h = af.tanh(af.matmul(o.read(t - 1), w) + inp.read(t))
        return t + 1, o.write(t, h)

    _, o = af.while_loop(lambda t, o: t < 4, body, [1, out])
    return o.stack()


def _scan_like_only_reads(af, xs, w):
    """A loop that only reads the TensorArray (its output is an ordinary accumulator)."""
    inp = af.TensorArray(af.float64, 4, clear_after_read=False).unstack(xs)

    def body(t, acc):
        return t + 1, acc + af.reduce_sum(af.matmul(inp.read(t), w) * inp.read(3 - t))

    return af.while_loop(lambda t, acc: t < 4, body, [0, af.constant(0.0, af.float64)])[1]


CASES = [
    GradCase("tensor_array_unstack_stack", ("TensorArrayScatterV3", "TensorArrayGatherV3"),
             lambda af, xs: af.sin(af.TensorArray(af.float64, 4).unstack(xs).stack()), [XS]),
    GradCase("tensor_array_write_read", ("TensorArrayWriteV3", "TensorArrayReadV3"), _write_read, [A, A[::-1].copy()]),
    GradCase("tensor_array_gather_scatter_repeated", ("TensorArrayScatterV3", "TensorArrayGatherV3"),
             _gather_scatter, [XS]),
    GradCase("tensor_array_split_concat", ("TensorArraySplitV3", "TensorArrayConcatV3"), _split_concat, [V]),
    GradCase("tensor_array_rnn_loop", LOOP + ("TensorArrayReadV3", "TensorArrayWriteV3"), _rnn, [XS, W, H0]),
    GradCase("tensor_array_rnn_loop_dynamic_size_one_at_a_time", LOOP,
             lambda af, xs, w, h0: _rnn(af, xs, w, h0, dynamic=True, parallel_iterations=1), [XS, W, H0]),
    GradCase("tensor_array_loop_concat_output", LOOP + ("TensorArrayConcatV3",), _rnn_concat_output,
             [XS, W]),
    GradCase("tensor_array_loop_reads_only", LOOP, _scan_like_only_reads, [XS, W]),
    GradCase("tensor_array_loop_reads_its_own_output", LOOP, _reads_its_own_output, [XS, W, H0]),
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_tensor_array_gradients(case):
    check_gradient(case)


def test_two_gradient_calls_keep_their_own_arrays_and_steps_start_afresh():
    with af.Graph().as_default():
        xs, w, h0 = af.constant(XS), af.constant(W), af.constant(H0)
        ys, h_last = _rnn(af, xs, w, h0)
        loss = af.reduce_sum(ys * ys)
        (g1,) = af.gradients(loss, [w])
        (g2,) = af.gradients(loss * 3.0, [w])  # a second call ("gradients_1") accumulates apart
        (gx,) = af.gradients(af.reduce_sum(h_last), [xs])
        with af.Session() as sess:
            a, b, c = sess.run([g1, g2, gx])
            again = sess.run([g1, g2, gx])  # each step makes new arrays: nothing is written twice
        np.testing.assert_allclose(b, 3 * a, rtol=1e-12)
        for x, y in zip([a, b, c], again):
            np.testing.assert_array_equal(x, y)
        assert c.shape == XS.shape and np.abs(c[:-1]).sum() > 0


def test_gradient_of_an_unread_output_is_zero():
    with af.Graph().as_default():
        xs, w, h0 = af.constant(XS), af.constant(W), af.constant(H0)
        ys, h_last = _rnn(af, xs, w, h0)
        (g,) = af.gradients(af.reduce_sum(ys[1:2]), [xs])
        with af.Session() as sess:
            got = sess.run(g)
        assert np.abs(got[2:]).max() == 0 and np.abs(got[:2]).max() > 0


def test_a_tensor_array_made_inside_a_loop_body():  # more: tests/control/test_nested_grad.py
    with af.Graph().as_default():
        xs = af.constant(XS)

        def body(t, acc):
            inner = af.TensorArray(af.float64, 2).write(0, xs[t] * 2.0).write(1, xs[t])
            return t + 1, acc + af.reduce_sum(inner.stack())

        _, total = af.while_loop(lambda t, acc: t < 4, body, [0, af.constant(0.0, af.float64)])
        assert _run_value(total) == pytest.approx(3 * XS.sum())
        (g,) = af.gradients(total, xs)
        np.testing.assert_array_equal(_run_value(g), np.full(XS.shape, 3.0))


def _run_value(t):
    with af.Session() as sess:
        return sess.run(t)
