"""Finite-difference rows for ReverseSequence, SpaceToDepth and DepthToSpace, and the sort/meshgrid composites."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(6)
SEQ = RNG.randn(3, 4, 2)
IMG = RNG.randn(1, 4, 2, 2)

CASES = [
    GradCase("reverse_sequence", ("ReverseSequence",), lambda af, x: af.reverse_sequence(x, [2, 4, 0], seq_axis=1),
             [SEQ]),
    GradCase("space_to_depth", ("SpaceToDepth",), lambda af, x: af.space_to_depth(x, 2), [IMG]),
    GradCase("depth_to_space_nchw", ("DepthToSpace",),
             lambda af, x: af.depth_to_space(x, 2, data_format="NCHW"), [RNG.randn(1, 8, 2, 1)]),
    GradCase("sort_axis0", ("TopKV2",), lambda af, x: af.sort(x, axis=0), [SEQ[:, :, 0]]),
    GradCase("meshgrid", ("Mul",), lambda af, x, y: af.meshgrid(x, y), [RNG.randn(3), RNG.randn(2)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
