"""Gradients through map_fn, scan, foldl and foldr (their while loops), by finite differences: with respect
to elems, the initializer, and tensors or variables fn captures."""

import numpy as np
import pytest

import asyncflow as af
from tests.grad.harness import GradCase, check_gradient, grad_params

RNG = np.random.default_rng(11)
XS = RNG.normal(size=(4, 3))
W = RNG.normal(size=(3, 3)) * 0.5
H0 = RNG.normal(size=(3,))
V = RNG.normal(size=(5,))
LOOP = ("Enter", "Exit", "NextIteration")


def _cell(af, w):
    return lambda h, x: af.tanh(af.matmul(af.reshape(h, [1, -1]), w)[0] + x)


CASES = [
    GradCase("map_fn_captured_matrix", LOOP,
             lambda af, xs, w: af.map_fn(lambda r: af.sin(af.matmul(af.reshape(r, [1, 3]), w))[0] * r, xs),
             [XS, W]),
    GradCase("map_fn_nested_unknown_shapes", LOOP,
             lambda af, xs, v: af.map_fn(lambda p: (p[0] * p[1], af.reduce_sum(p[0] * p[0]) + p[1]), (xs, v[:4]),
                                         dtype=(af.float64, af.float64)),
             [XS, V], static_shapes=False),
    GradCase("scan_rnn_with_initializer", LOOP,
             lambda af, xs, w, h0: af.scan(_cell(af, w), xs, initializer=h0), [XS, W, H0]),
    GradCase("scan_rnn_reverse", LOOP,
             lambda af, xs, w, h0: af.scan(_cell(af, w), xs, initializer=h0, reverse=True), [XS, W, H0]),
    GradCase("scan_without_initializer", LOOP,
             lambda af, v: af.scan(lambda a, e: a * e + af.sin(a), v), [V]),
    GradCase("scan_nested_state_unknown_shapes", LOOP,
             lambda af, xs, h0: af.scan(lambda a, e: (a[0] * e, a[1] + af.reduce_sum(a[0] * e)), xs,
                                        initializer=(h0, af.reduce_sum(h0))),
             [XS, H0], static_shapes=False),
    GradCase("foldl_product", LOOP,
             lambda af, v, a0: af.foldl(lambda a, e: a * e + 0.5 * a, v, initializer=a0), [V, np.float64(1.3)]),
    GradCase("foldl_without_initializer", LOOP, lambda af, xs: af.foldl(lambda a, e: af.tanh(a * e), xs), [XS]),
    GradCase("foldr_rnn_captured", LOOP,
             lambda af, xs, w, h0: af.foldr(_cell(af, w), xs, initializer=h0), [XS, W, H0]),
    GradCase("foldr_nested_elems", LOOP,
             lambda af, xs, v: af.foldr(lambda a, p: a * p[1] + p[0], (xs, v[:4]),
                                        initializer=af.ones([3], af.float64)),
             [XS, V]),
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_functional_gradients(case):
    check_gradient(case)


def test_gradient_reaches_a_variable_fn_creates():
    with af.Graph().as_default():
        xs = af.constant(XS)
        with af.variable_scope("cell"):
            out = af.scan(lambda h, x: af.tanh(h * af.get_variable("w", [3], af.float64,
                                                                     initializer=af.constant_initializer(0.7)) + x),
                          xs, initializer=af.constant(H0))
        (w,) = af.global_variables()
        loss = af.reduce_sum(out * out)
        (g,) = af.gradients(loss, [w])
        with af.Session() as sess:
            sess.run(w.initializer)
            analytic = sess.run(g)
            numeric = np.zeros(3)
            for j in range(3):
                vals = []
                for d in (1e-6, -1e-6):
                    value = np.full(3, 0.7)
                    value[j] += d
                    w.load(value, sess)
                    vals.append(sess.run(loss))
                numeric[j] = (vals[0] - vals[1]) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_back_prop_false_gives_no_gradient_through_the_loop():
    with af.Graph().as_default():
        xs = af.placeholder(af.float64, [4, 3])
        y = af.map_fn(lambda r: r * r, xs, back_prop=False)
        assert af.gradients(af.reduce_sum(y), xs) == [None]
