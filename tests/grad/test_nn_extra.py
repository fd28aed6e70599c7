"""Finite-difference rows for TopKV2 and LRN, and for the sampled losses through their composites."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(4)
X = RNG.randn(3, 6)
IMG = RNG.randn(1, 2, 2, 5).astype(np.float32)
LABELS = np.array([[1], [3], [3]], np.int64)
VALUES = (np.array([0, 2, 7], np.int64), np.full((3, 1), 0.3, np.float32), np.array([0.2, 0.4, 0.5], np.float32))

CASES = [
    GradCase("top_k_values", ("TopKV2",), lambda af, x: af.nn.top_k(x, 3)[0], [X]),
    GradCase("lrn", ("LRN",), lambda af, x: af.nn.lrn(x, 2, 1.5, 0.3, 0.75), [IMG], eps=1e-2, rtol=2e-3,
             atol=2e-3),
    GradCase("nce_loss", ("MatMul",),
             lambda af, w, b, x: af.nn.nce_loss(w, b, LABELS, x, 3, 10, sampled_values=VALUES),
             [RNG.randn(10, 4), RNG.randn(10), RNG.randn(3, 4)]),
    GradCase("sampled_softmax_loss", ("SoftmaxCrossEntropyWithLogits",),
             lambda af, w, b, x: af.nn.sampled_softmax_loss(w, b, LABELS, x, 3, 10, sampled_values=VALUES),
             [RNG.randn(10, 4), RNG.randn(10), RNG.randn(3, 4)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
