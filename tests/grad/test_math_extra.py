"""Finite-difference rows for math_extra's differentiable ops (elementwise functions, Atan2, Cumsum,
Cumprod, the segment reductions) and the logsumexp/log_sigmoid composites."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(7)
X = RNG.uniform(-0.8, 0.8, (2, 3))
POS = RNG.uniform(1.2, 3.0, (2, 3))
D = RNG.uniform(0.5, 2.0, (5, 2))  # distinct values and no zeros: max/min and prod are smooth here
IDS = np.array([0, 0, 2, 2, 3], np.int32)
UIDS = np.array([3, -1, 0, 3, 0], np.int32)


def unary(name, op_type, x=X):
    return GradCase(name, (op_type,), lambda af, x: getattr(af, name)(x), [x])


CASES = [
    unary("tan", "Tan"), unary("asin", "Asin"), unary("acos", "Acos"), unary("atan", "Atan"),
    unary("sinh", "Sinh"), unary("cosh", "Cosh"), unary("asinh", "Asinh"), unary("acosh", "Acosh", POS),
    unary("atanh", "Atanh"), unary("expm1", "Expm1"), unary("erf", "Erf"), unary("erfc", "Erfc"),
    unary("lgamma", "Lgamma", POS), unary("digamma", "Digamma", POS),
    GradCase("atan2_broadcast", ("Atan2",), lambda af, y, x: af.atan2(y, x), [X, RNG.uniform(0.5, 1.0, (3,))]),
    GradCase("cumsum_excl_rev", ("Cumsum",), lambda af, x: af.cumsum(x, 1, exclusive=True, reverse=True), [D]),
    GradCase("cumprod", ("Cumprod",), lambda af, x: af.cumprod(x, 0), [D]),
    GradCase("cumprod_excl_rev", ("Cumprod",), lambda af, x: af.cumprod(x, 0, exclusive=True, reverse=True), [D]),
    GradCase("segment_sum", ("SegmentSum",), lambda af, x: af.segment_sum(x, IDS), [D]),
    GradCase("segment_mean", ("SegmentMean",), lambda af, x: af.segment_mean(x, IDS), [D]),
    GradCase("segment_prod", ("SegmentProd",), lambda af, x: af.segment_prod(x, IDS), [D]),
    GradCase("segment_max", ("SegmentMax",), lambda af, x: af.segment_max(x, IDS), [D]),
    GradCase("segment_min", ("SegmentMin",), lambda af, x: af.segment_min(x, IDS), [D]),
    GradCase("unsorted_segment_max", ("UnsortedSegmentMax",),
             lambda af, x: af.unsorted_segment_max(x, UIDS, 4)[::3], [D]),
    GradCase("unsorted_segment_min", ("UnsortedSegmentMin",),
             lambda af, x: af.unsorted_segment_min(x, UIDS, 4)[::3], [D]),
    GradCase("unsorted_segment_prod", ("UnsortedSegmentProd",),
             lambda af, x: af.unsorted_segment_prod(x, UIDS, 4), [D]),
    GradCase("unsorted_segment_mean_sqrt_n", ("UnsortedSegmentSum",),
             lambda af, x: [af.unsorted_segment_mean(x, UIDS, 4), af.unsorted_segment_sqrt_n(x, UIDS, 4)], [D]),
    GradCase("reduce_logsumexp", ("Exp", "Log"), lambda af, x: af.reduce_logsumexp(x, 1), [D]),
    GradCase("log_sigmoid", ("Softplus",), lambda af, x: af.log_sigmoid(x), [X]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
