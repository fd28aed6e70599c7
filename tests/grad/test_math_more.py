"""Finite-difference rows for math_more's differentiable ops (TF's math_grad rules): the NaN-safe products and
quotients, the special functions (Igamma in both arguments, Betainc in x, Zeta in q), the complex parts
(through Complex, so inputs and loss stay real), EuclideanNorm, CumulativeLogsumexp and NextAfter."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(13)
X = RNG.uniform(0.3, 1.5, (2, 3))
Y = RNG.uniform(0.5, 2.0, (3,))
U = RNG.uniform(-0.8, 0.8, (2, 3))
P = RNG.uniform(0.1, 0.9, (2, 3))


def unary(name, op_type, x=U, **kw):
    return GradCase(name, (op_type,), lambda af, x: getattr(af.math, name)(x), [x], **kw)


CASES = [
    GradCase("xlogy_broadcast", ("Xlogy",), lambda af, x, y: af.math.xlogy(x, y), [X, Y]),
    GradCase("xdivy_broadcast", ("Xdivy",), lambda af, x, y: af.math.xdivy(x, y), [X, Y]),
    GradCase("xlog1py_broadcast", ("Xlog1py",), lambda af, x, y: af.math.xlog1py(x, y), [X, Y]),
    GradCase("multiply_no_nan", ("MulNoNan",), lambda af, x, y: af.math.multiply_no_nan(x, y), [X, Y]),
    GradCase("div_no_nan", ("DivNoNan",), lambda af, x, y: af.div_no_nan(x, y), [X, Y]),
    unary("erfinv", "Erfinv"), unary("ndtri", "Ndtri", P),
    unary("bessel_i0", "BesselI0"), unary("bessel_i0e", "BesselI0e"),
    unary("bessel_i1", "BesselI1"), unary("bessel_i1e", "BesselI1e"),
    GradCase("igamma", ("Igamma",), lambda af, a, x: af.igamma(a, x), [X + 0.5, Y], rtol=1e-4, atol=1e-6),
    GradCase("igammac", ("Igammac",), lambda af, a, x: af.igammac(a, x), [X + 0.5, Y], rtol=1e-4, atol=1e-6),
    GradCase("betainc_x", ("Betainc",), lambda af, a, b, x: af.betainc(a, b, x), [X + 0.5, X[::-1] + 1.0, P],
             wrt=(2,)),
    GradCase("zeta_q", ("Zeta",), lambda af, s, q: af.zeta(s, q), [X + 1.5, Y], wrt=(1,)),
    GradCase("polygamma_x", ("Polygamma",), lambda af, x: af.polygamma(np.array([0.0, 1.0, 2.0]), x), [Y + 0.5]),
    GradCase("complex_parts", ("Complex", "Real", "Imag", "Angle"),
             lambda af, re, im: [af.real(af.complex(re, im)) * af.imag(af.complex(im, re)),
                                 af.angle(af.complex(re, im))], [U, X]),
    GradCase("reduce_euclidean_norm", ("EuclideanNorm",),
             lambda af, x: [af.math.reduce_euclidean_norm(x, 1), af.math.reduce_euclidean_norm(x, keepdims=True)],
             [U]),
    GradCase("reduce_variance_std", ("Mean", "Sqrt"),
             lambda af, x: [af.math.reduce_variance(x, 0), af.math.reduce_std(x)], [U]),
    GradCase("cumulative_logsumexp", ("CumulativeLogsumexp",),
             lambda af, x: af.math.cumulative_logsumexp(x, 1), [U]),
    GradCase("cumulative_logsumexp_excl_rev", ("CumulativeLogsumexp",),
             lambda af, x: af.math.cumulative_logsumexp(x, 1, exclusive=True, reverse=True)[:, :2], [U]),
    GradCase("nextafter", ("NextAfter",), lambda af, a, b: af.math.nextafter(a, b), [U, Y]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
