"""Gradients through cond (Switch/Merge), and the clear refusal for while_loop."""

import numpy as np
import pytest

import asyncflow as af
from tests.grad.harness import GradCase, check_gradient, grad_params

X = np.array([0.5, -1.5, 2.0])

CASES = [
    GradCase("cond_true_branch", ("Switch", "Merge"),
             lambda af, x, p: af.cond(p, lambda: x * x * 2.0, lambda: af.exp(x)), [X, np.bool_(True)]),
    GradCase("cond_false_branch", ("Switch", "Merge"),
             lambda af, x, p: af.cond(p, lambda: x * x * 2.0, lambda: af.exp(x)), [X, np.bool_(False)]),
    GradCase("cond_uses_x_outside_too", ("Switch", "Merge"),
             lambda af, x, p: af.cond(p, lambda: x * 3.0, lambda: x) * x, [X, np.bool_(True)]),
    GradCase("nested_cond", ("Switch", "Merge"),
             lambda af, x, p: af.cond(p, lambda: af.cond(af.logical_not(p), lambda: x, lambda: x * x), lambda: x),
             [X, np.bool_(True)]),
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_cond_gradients(case):
    check_gradient(case)


def test_cond_gradient_values():
    with af.Graph().as_default():
        x = af.placeholder(af.float64, [3])
        p = af.placeholder(af.bool, [])
        y = af.cond(p, lambda: x * 2.0, lambda: x * x * 3.0)
        (g,) = af.gradients(af.reduce_sum(y), x)
        with af.Session() as sess:
            np.testing.assert_allclose(sess.run(g, {x: X, p: True}), [2.0, 2.0, 2.0])
            np.testing.assert_allclose(sess.run(g, {x: X, p: False}), 6.0 * X)


def _rnn(af, w, xs, h0, parallel=10):
    """h <- tanh(h @ w + xs[i]) for each row of xs, as a while_loop."""
    n = af.shape(xs)[0]

    def body(i, h):
        return i + 1, af.tanh(af.matmul(h, w) + af.gather(xs, i))

    return af.while_loop(lambda i, h: i < n, body, [af.constant(0), h0], parallel_iterations=parallel)[1]


def _rnn_unrolled(af, w, xs, h0, steps):
    h = h0
    for i in range(steps):
        h = af.tanh(af.matmul(h, w) + xs[i])
    return h


RNG = np.random.default_rng(7)
W = RNG.normal(size=(3, 3)) * 0.5
XS = RNG.normal(size=(4, 1, 3))
H0 = RNG.normal(size=(1, 3))

CASES += [
    GradCase("while_power", ("Enter", "Exit", "NextIteration"),
             lambda af, x, v0: af.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                            [af.constant(0), v0])[1], [np.array([1.5, -0.5]), np.array([2.0, 3.0])]),
    GradCase("while_rnn", ("Enter", "Exit", "NextIteration"), lambda af, w, xs, h0: _rnn(af, w, xs, h0),
             [W, XS, H0], rtol=1e-5, atol=1e-7),
    GradCase("while_rnn_serial", ("Enter", "Exit", "NextIteration"), lambda af, w, xs, h0: _rnn(af, w, xs, h0, 1),
             [W, XS, H0], rtol=1e-5, atol=1e-7),
]


@pytest.mark.parametrize("case", grad_params([c for c in CASES if c.id.startswith("while")]))
def test_while_loop_gradients(case):
    check_gradient(case)


def test_while_gradient_equals_the_unrolled_graph_gradient():
    with af.Graph().as_default():
        w = af.placeholder(af.float64, [3, 3])
        xs = af.placeholder(af.float64, [4, 1, 3])
        h0 = af.placeholder(af.float64, [1, 3])
        looped = af.reduce_sum(_rnn(af, w, xs, h0))
        unrolled = af.reduce_sum(_rnn_unrolled(af, w, xs, h0, 4))
        g_loop = af.gradients(looped, [w, xs, h0])
        g_unrolled = af.gradients(unrolled, [w, xs, h0])
        with af.Session() as sess:
            feed = {w: W, xs: XS, h0: H0}
            for a, b in zip(sess.run(g_loop, feed), sess.run(g_unrolled, feed)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_while_gradient_with_zero_iterations():
    with af.Graph().as_default():
        x = af.placeholder(af.float64, [])
        v0 = af.placeholder(af.float64, [])
        n = af.placeholder(af.int32, [])
        _, y = af.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x), [af.constant(0), v0])
        gx, gv = af.gradients(y, [x, v0])
        with af.Session() as sess:
            assert sess.run([gx, gv], {x: 2.0, v0: 5.0, n: 0}) == [0.0, 1.0]
            assert sess.run([gx, gv], {x: 2.0, v0: 5.0, n: 4}) == [4 * 5.0 * 2.0 ** 3, 2.0 ** 4]


def test_gradients_through_a_cond_in_a_loop():  # more nested cases: tests/control/test_nested_grad.py
    with af.Graph().as_default():
        x = af.placeholder(af.float64, [])
        body = lambda i, v: (i + 1, af.cond(v > 0, lambda: v * x, lambda: v))  # noqa: E731
        _, y = af.while_loop(lambda i, v: i < 3, body, [af.constant(0), af.constant(1.0, af.float64)])
        (g,) = af.gradients(y, x)
        with af.Session() as sess:
            assert sess.run([y, g], {x: 2.0}) == [8.0, 12.0]  # y = x ** 3
            assert sess.run([y, g], {x: -2.0}) == [-2.0, 1.0]  # y = x: v turns negative after one step
