"""Finite-difference rows for the resize kernels (linear maps, so a large step is exact up to rounding)."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.default_rng(5)
X = RNG.random((2, 4, 5, 2))

CASES = [
    GradCase("resize_bilinear", ("ResizeBilinear",),
             lambda af, x: af.image.resize_bilinear(af.cast(x, af.float32), [7, 3]), [X.astype(np.float32)],
             eps=1e-2, rtol=1e-3, atol=1e-3),
    GradCase("resize_bilinear_half_pixel", ("ResizeBilinear",),
             lambda af, x: af.image.resize_bilinear(x, [3, 8], half_pixel_centers=True), [X.astype(np.float32)],
             eps=1e-2, rtol=1e-3, atol=1e-3),
    GradCase("resize_nearest", ("ResizeNearestNeighbor",),
             lambda af, x: af.image.resize_nearest_neighbor(x, [7, 3]), [X]),
    GradCase("resize_nearest_align", ("ResizeNearestNeighbor",),
             lambda af, x: af.image.resize_nearest_neighbor(x, [3, 9], align_corners=True), [X]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
