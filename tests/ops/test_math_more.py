"""math_more against numpy/scipy references: the NaN-safe products and quotients (0 where TF says 0, whatever
the other operand), the special functions, complex parts, EuclideanNorm, reduce_variance/reduce_std,
CumulativeLogsumexp, NextAfter and the composites. Constants marked "TF 2.21" were checked against
tensorflow.compat.v1 2.21 with tools/tfdiff.py while this was written."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(11)
X = np.array([0.0, 1.0, 2.0, 0.0], np.float32)
Y = np.array([0.0, 0.5, 3.0, np.nan], np.float32)
M = np.array([[1.0, 2.0, 7.0], [3.0, 4.0, -1.0]], np.float32)
C = np.array([-2.25 + 4.75j, 3.25 + 5.75j], np.complex64)
B = np.array([-1.0, 0.0, 2.5], np.float32)
m = af.ops.math_more


def f32(x):
    return np.asarray(x, np.float32)


def cum_logsumexp(x, axis, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    out = np.logaddexp.accumulate(x, axis=axis)
    if exclusive:
        pad = np.full_like(np.take(out, [0], axis), -np.inf)
        out = np.concatenate([pad, np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


CASES = [
    # 0 where x (or y, for the *_no_nan ops) is 0, even against 0, NaN or inf: TF 2.21
    Case("xlogy_at_zero", ("Xlogy",), lambda af: af.math.xlogy(X, Y), f32([0, np.log(0.5), 2 * np.log(3), 0])),
    Case("xdivy_at_zero", ("Xdivy",), lambda af: af.math.xdivy(X, Y), f32([0, 2, 2 / 3, 0])),
    Case("xlog1py_at_zero", ("Xlog1py",), lambda af: af.math.xlog1py(X, Y),
         f32([0, np.log1p(0.5), 2 * np.log1p(3), 0])),
    Case("xlogy_complex_broadcast", ("Xlogy",), lambda af: af.math.xlogy(C[:, None], C),
         C[:, None] * np.log(C), rtol=1e-5),
    Case("multiply_no_nan", ("MulNoNan",),
         lambda af: af.math.multiply_no_nan(f32([np.nan, 1, 2, np.inf]), f32([0, 1, 2, 0])), f32([0, 1, 4, 0])),
    Case("div_no_nan_int_to_float64", ("DivNoNan",),
         lambda af: af.div_no_nan(np.array([1, 2, 3], np.int32), np.array([0, 2, 4], np.int32)),
         np.array([0, 1, 0.75])),
    Case("divide_no_nan_float", ("DivNoNan",), lambda af: af.math.divide_no_nan(M, f32(M * [[0], [1]])),
         f32([[0, 0, 0], [1, 1, 1]])),
    Case("reciprocal_no_nan", ("DivNoNan",), lambda af: af.math.reciprocal_no_nan(f32([2, 0.5, 0, 1])),
         f32([0.5, 2, 0, 1])),
    Case("erfinv", ("Erfinv",), lambda af: af.math.erfinv(f32([-0.5, 0, 0.9])), f32(sp.erfinv([-0.5, 0, 0.9]))),
    Case("ndtri", ("Ndtri",), lambda af: af.math.ndtri(f32([0.1, 0.5, 0.975])), f32(sp.ndtri([0.1, 0.5, 0.975]))),
    Case("ndtri_half", ("Ndtri",), lambda af: af.math.ndtri(np.array([0.25], np.float16)),
         sp.ndtri([0.25]).astype(np.float16), rtol=1e-3),
    Case("erfcinv", ("Ndtri", "Mul"), lambda af: af.math.erfcinv(f32([0.1, 1.0, 1.5])),
         f32(sp.erfcinv([0.1, 1.0, 1.5])), rtol=1e-5),
    Case("bessel_i0_i1", ("BesselI0", "BesselI1"), lambda af: [af.math.bessel_i0(B), af.math.bessel_i1(B)],
         [f32(sp.i0(B)), f32(sp.i1(B))], rtol=1e-5),
    Case("bessel_i0e_i1e", ("BesselI0e", "BesselI1e"), lambda af: [af.math.bessel_i0e(B), af.math.bessel_i1e(B)],
         [f32(sp.i0e(B)), f32(sp.i1e(B))], rtol=1e-5),
    Case("igamma_igammac", ("Igamma", "Igammac"),
         lambda af: [af.igamma(f32([0.5, 2]), f32([1, 3])), af.igammac(f32([0.5, 2]), f32([1, 3]))],
         [f32(sp.gammainc([0.5, 2], [1, 3])), f32(sp.gammaincc([0.5, 2], [1, 3]))]),
    Case("igamma_grad_a", ("IgammaGradA",), lambda af: m.IgammaGradA([0.5, 2.0, 7.0], [1.0, 3.0, 2.0]),
         # d/da P(a, x) by a fine central difference in float64
         ((sp.gammainc(np.array([0.5, 2, 7]) + 1e-6, [1, 3, 2]) - sp.gammainc(np.array([0.5, 2, 7]) - 1e-6, [1, 3, 2]))
          / 2e-6).astype(np.float32), rtol=1e-5, atol=1e-7),
    Case("betainc", ("Betainc",), lambda af: af.betainc(f32([0.5, 2]), f32([1.5, 3]), f32([0.2, 0.7])),
         f32(sp.betainc([0.5, 2], [1.5, 3], [0.2, 0.7]))),
    Case("zeta", ("Zeta",), lambda af: af.zeta(f32([2, 3]), f32([1, 2.5])), f32(sp.zeta([2, 3], [1, 2.5]))),
    # TF 2.21: order 0 is digamma, non-integer or negative orders are NaN
    Case("polygamma", ("Zeta", "Digamma"),
         lambda af: af.polygamma(f32([0, 1, 2, 3, 1.5, -1]), f32([2, 2, 0.5, 3, 2, 2])),
         f32([sp.digamma(2), sp.polygamma(1, 2), sp.polygamma(2, 0.5), sp.polygamma(3, 3), np.nan, np.nan]),
         rtol=1e-5),
    Case("complex_real_imag_angle", ("Complex", "Real", "Imag", "Angle"),
         lambda af: [af.complex([1.0, 2.0], [3.0, 4.0]), af.real(C), af.imag(C), af.angle(C)],
         [np.array([1 + 3j, 2 + 4j], np.complex64), C.real, C.imag, np.angle(C).astype(np.float32)]),
    Case("real_imag_angle_of_real", ("Select",),
         lambda af: [af.real(f32([-1, 2])), af.imag(f32([-1, 2])), af.angle(f32([-1, 2]))],
         [f32([-1, 2]), f32([0, 0]), f32([np.pi, 0])]),
    Case("reduce_euclidean_norm", ("EuclideanNorm",),
         lambda af: [af.math.reduce_euclidean_norm(M, 1), af.math.reduce_euclidean_norm(M, keepdims=True)],
         [np.linalg.norm(M, axis=1), np.linalg.norm(M).reshape(1, 1)], rtol=1e-6),
    # TF 2.21: integers keep their dtype (the square root truncated); complex stays complex
    Case("reduce_euclidean_norm_int_complex", ("EuclideanNorm",),
         lambda af: [af.math.reduce_euclidean_norm(np.array([[3, 4], [1, 1]], np.int32), 1),
                     af.math.reduce_euclidean_norm(C)],
         [np.array([5, 1], np.int32), np.complex64(np.linalg.norm(C))]),
    # TF 2.21: 15.555555 overall, per-column [1, 1, 16], and the std per row
    Case("reduce_variance", ("Mean", "Square"),
         lambda af: [af.math.reduce_variance(M), af.math.reduce_variance(M, 0, keepdims=True)],
         [np.float32(np.var(M)), np.var(M, 0, keepdims=True)], rtol=1e-6),
    Case("reduce_std", ("Sqrt",), lambda af: af.math.reduce_std(M, 1), np.std(M, 1), static_shape=[2], rtol=1e-6),
    Case("reduce_variance_complex_is_real", ("Real", "Conj"), lambda af: af.math.reduce_variance(C),
         np.float32(np.var(C)), rtol=1e-6),
    Case("cumulative_logsumexp", ("CumulativeLogsumexp",),
         lambda af: [af.math.cumulative_logsumexp(M, axis=1),
                     af.math.cumulative_logsumexp(M, axis=1, exclusive=True, reverse=True)],
         [cum_logsumexp(M, 1), cum_logsumexp(M, 1, True, True)], rtol=1e-6),
    Case("nextafter", ("NextAfter",), lambda af: af.math.nextafter(f32([1, 0]), f32([2, -1])),
         np.nextafter(f32([1, 0]), f32([2, -1]))),
    Case("lbeta", ("Lgamma", "Sum"), lambda af: af.lbeta(f32([[1, 2], [3, 4.5]])),
         f32([np.log(sp.beta(1, 2)), np.log(sp.beta(3, 4.5))]), rtol=1e-5),
    Case("polyval", ("Mul", "AddV2"), lambda af: af.math.polyval([2.0, 3.0, 4.0], f32([1, 2])), f32([9, 18])),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case):
    check_case(case)


def test_names_and_static_shapes_as_tf():
    """Op names and static shapes of the composites, as TF 2.21's compat.v1 builds them."""
    with af.Graph().as_default():
        assert af.math.reduce_variance(M).op.name == "reduce_variance/Mean_1"
        assert af.math.reduce_std(M, 1).op.name == "reduce_std/Sqrt"
        assert af.math.xdivy(X, Y).op.name == "xdivy/Xdivy"
        assert af.div_no_nan(X, Y).op.name == "div_no_nan"
        assert af.polygamma(1.0, 2.0).op.name == "Polygamma"
        ph = af.placeholder(af.float32, [None, 3])
        assert af.math.reduce_variance(ph, 1).shape.as_list() == [None]
        assert af.math.reduce_std(ph, 0, keepdims=True).shape.as_list() == [1, 3]


def test_bad_input():
    with af.Graph().as_default():
        with pytest.raises(TypeError, match="integer"):
            af.math.reduce_variance(np.array([1, 2], np.int32))
        with pytest.raises(TypeError, match="incorrect types"):
            af.complex(np.float32(1), np.float64(2))
        with pytest.raises(ValueError, match="list"):
            af.math.polyval((1.0, 2.0), 3.0)
        with pytest.raises(TypeError, match="allowed values"):
            af.zeta(np.array([1], np.int32), np.array([1], np.int32))


def test_top_level_names_are_tf1s():
    """TF1 exposes these at the top level; xlogy and friends only under tf.math."""
    for name in ["div_no_nan", "igamma", "igammac", "betainc", "zeta", "polygamma", "lbeta", "real", "imag",
                 "angle", "complex"]:
        assert getattr(af, name) is getattr(af.math, name, getattr(af, name))
    assert not hasattr(af, "xlogy") and af.math.xlogy is m.xlogy
