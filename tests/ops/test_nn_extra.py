"""top_k, in_top_k, lrn and the nn composites against numpy references (TF1's formulas; every case here
also matched TF 2.21's compat.v1 output on the same inputs while it was written)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(0)
X = RNG.randn(4, 6).astype(np.float32)
X[0, 1] = X[0, 3]  # a tie: the lower index comes first
IMG = RNG.randn(2, 3, 3, 7).astype(np.float32)
P = np.array([[0.1, 0.5, 0.5, 0.2], [0.9, np.nan, 0.1, 0.0], [0.3, 0.2, 0.1, 0.4]], np.float32)


def top_k_ref(x, k):
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def window(sq, r):
    n = sq.shape[-1]
    return np.stack([sq[..., max(d - r, 0):d + r + 1].sum(-1) for d in range(n)], -1)


def lrn_ref(x, r, bias, alpha, beta):
    x = x.astype(np.float64)
    return (x / (bias + alpha * window(x * x, r)) ** beta).astype(np.float32)


def lrn_grad_ref(g, x, r, bias, alpha, beta):
    """d/dx of sum(g * lrn(x)) by the chain rule, written from the definition."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    n = bias + alpha * window(x * x, r)
    out = g * n ** -beta
    term = g * x * (-beta) * n ** (-beta - 1) * alpha * 2  # d n_i / d x_j = 2 alpha x_j for |i - j| <= r
    out += x * window(term, r)
    return out.astype(np.float32)


CASES = [
    Case("top_k_ties_lower_index_first", ("TopKV2",), lambda af: list(af.nn.top_k(X, 3)), list(top_k_ref(X, 3)),
         static_shape=None),
    Case("top_k_int", ("TopKV2",), lambda af: list(af.nn.top_k(np.array([[3, 1, 3, 2]], np.int32), 2)),
         [np.array([[3, 3]], np.int32), np.array([[0, 2]], np.int32)]),
    Case("in_top_k_ties_and_nan", ("InTopKV2",), lambda af: af.nn.in_top_k(P, [2, 0, 3], 1),
         np.array([True, False, True])),
    Case("in_top_k_out_of_range_int64", ("InTopKV2",),
         lambda af: af.nn.in_top_k(P, np.array([1, 0, 7], np.int64), 2), np.array([True, False, False])),
    Case("lrn", ("LRN",), lambda af: af.nn.lrn(IMG, 2, bias=1.0, alpha=0.001 / 9.0, beta=0.75),
         lrn_ref(IMG, 2, 1.0, 0.001 / 9.0, 0.75), rtol=1e-5),
    Case("lrn_grad", ("LRNGrad", "LRN"),
         lambda af: af.ops.nn_extra.lrn_grad_op(IMG, IMG, af.nn.lrn(IMG, 1, 2.0, 0.5, 0.6), depth_radius=1, bias=2.0,
                                     alpha=0.5, beta=0.6),
         lrn_grad_ref(IMG, IMG, 1, 2.0, 0.5, 0.6), rtol=1e-4, atol=1e-5),
    Case("xw_plus_b", ("MatMul", "BiasAdd"), lambda af: af.nn.xw_plus_b(X, np.ones((6, 2), np.float32), [1.0, 2.0]),
         X @ np.ones((6, 2), np.float32) + np.array([1.0, 2.0], np.float32), rtol=1e-5),
    Case("zero_fraction", ("Equal",), lambda af: af.nn.zero_fraction(af.nn.relu(X)), np.float32(np.mean(X <= 0))),
    Case("l2_normalize", ("Rsqrt",), lambda af: af.nn.l2_normalize(X, 1),
         X / np.sqrt(np.maximum((X ** 2).sum(1, keepdims=True), 1e-12)), rtol=1e-5),
    Case("selu", ("Elu",), lambda af: af.nn.selu(X),
         (1.0507009873554805 * np.where(X > 0, X, 1.6732632423543772 * np.expm1(X))).astype(np.float32), rtol=1e-5),
    Case("softsign", ("Abs",), lambda af: af.nn.softsign(X), X / (1 + np.abs(X)), rtol=1e-6),
    Case("crelu", ("ConcatV2",), lambda af: af.nn.crelu(X), np.maximum(np.concatenate([X, -X], -1), 0)),
    Case("weighted_ce", ("Log1p",),
         lambda af: af.nn.weighted_cross_entropy_with_logits(targets=(X > 0).astype(np.float32), logits=X,
                                                             pos_weight=3.0),
         ((X > 0) * 3 * np.log1p(np.exp(-X)) + (X <= 0) * np.log1p(np.exp(X))).astype(np.float32), rtol=1e-5),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_nn_extra(case):
    check_case(case)


def test_top_k_errors_and_names():
    with pytest.raises(ValueError, match="at least k=7"):
        af.nn.top_k(X, 7)
    k = af.placeholder(af.int32, [])
    values, _ = af.nn.top_k(X, k)
    assert values.shape.as_list() == [4, None]
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="at least k=9"):
        sess.run(values, {k: 9})


def test_moments_helpers():
    c, m, v, shift = af.nn.sufficient_statistics(X, [0])
    mean, var = af.nn.normalize_moments(c, m, v, None)
    wm, wv = af.nn.weighted_moments(X, [1], np.abs(X))
    with af.Session() as sess:
        got = sess.run([c, mean, var, wm, wv])
    assert got[0] == 4 and shift is None
    np.testing.assert_allclose(got[1], X.mean(0), rtol=1e-5)
    np.testing.assert_allclose(got[2], X.var(0), rtol=1e-4, atol=1e-6)
    w = np.abs(X)
    ref_mean = (w * X).sum(1) / w.sum(1)
    np.testing.assert_allclose(got[3], ref_mean, rtol=1e-5)
    np.testing.assert_allclose(got[4], (w * (X - ref_mean[:, None]) ** 2).sum(1) / w.sum(1), rtol=1e-4)


def test_log_poisson_loss_full_adds_stirling_above_one():
    z = np.array([0.5, 2.0, 5.0], np.float32)
    c = np.array([0.1, 0.2, 1.0], np.float32)
    got = af.Session().run(af.nn.log_poisson_loss(z, c, compute_full_loss=True))
    stirling = z * np.log(z) - z + 0.5 * np.log(2 * np.pi * z)
    np.testing.assert_allclose(got, np.exp(c) - z * c + np.where(z > 1, stirling, 0), rtol=1e-5)
