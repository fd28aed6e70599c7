"""Finite-difference rows for Roll, SpaceToBatchND, BatchToSpaceND, ParallelConcat and ExtractImagePatches
(whose gradient, a composite of ExtractImagePatches and UnsortedSegmentSum, also matched TF 2.21's on
overlapping, dilated SAME windows)."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(10)

CASES = [
    GradCase("roll", ("Roll",), lambda af, x: af.roll(x, [1, -2], [0, 1]), [RNG.randn(3, 4)]),
    GradCase("space_to_batch_nd", ("SpaceToBatchND",),
             lambda af, x: af.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 1]]), [RNG.randn(1, 2, 3, 2)]),
    GradCase("batch_to_space_nd", ("BatchToSpaceND",),
             lambda af, x: af.batch_to_space_nd(x, [2, 1], [[1, 0], [0, 1]]), [RNG.randn(4, 2, 3, 1)]),
    GradCase("parallel_stack", ("ParallelConcat",), lambda af, x, y: af.parallel_stack([x, y * x]),
             [RNG.randn(2, 3), RNG.randn(2, 3)]),
    GradCase("extract_image_patches_same_dilated", ("ExtractImagePatches",),
             lambda af, x: af.extract_image_patches(x, [1, 3, 2, 1], [1, 1, 2, 1], [1, 2, 1, 1], "SAME"),
             [RNG.randn(2, 4, 5, 2)]),
    GradCase("extract_image_patches_valid", ("ExtractImagePatches",),
             lambda af, x: af.extract_image_patches(x, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
             [RNG.randn(1, 3, 3, 1)], static_shapes=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
