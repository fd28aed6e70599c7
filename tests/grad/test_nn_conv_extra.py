"""Finite-difference rows for the convolutions of asyncflow/ops/nn_conv_extra.py: conv1d (through ExpandDims,
Conv2D, Squeeze), conv2d_transpose (Conv2DBackpropInput: its gradients are Conv2DBackpropFilter and Conv2D, TF's
rule), depthwise and separable convolutions, the 1-D pools and max_pool_with_argmax; NCHW, strided and dilated."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(21)


def normal(*shape):
    return RNG.standard_normal(shape)


CASES = [
    GradCase("conv1d_same_stride2", ("Conv2D", "ExpandDims", "Squeeze"),
             lambda af, x, w: af.nn.conv1d(x, w, 2, "SAME"), [normal(2, 7, 3), normal(3, 3, 2)]),
    GradCase("conv1d_ncw_dilated", ("Conv2D",),
             lambda af, x, w: af.nn.conv1d(x, w, 1, "VALID", data_format="NCW", dilations=2),
             [normal(1, 3, 8), normal(2, 3, 2)]),
    GradCase("conv2d_transpose_same_stride2", ("Conv2DBackpropInput",),
             lambda af, x, w: af.nn.conv2d_transpose(x, w, [2, 6, 5, 2], 2), [normal(2, 3, 3, 3), normal(3, 3, 2, 3)]),
    GradCase("conv2d_transpose_valid_stride2", ("Conv2DBackpropInput",),
             lambda af, x, w: af.nn.conv2d_transpose(x, w, [1, 7, 5, 2], 2, padding="VALID"),
             [normal(1, 3, 2, 3), normal(3, 2, 2, 3)]),
    GradCase("conv2d_transpose_nchw_dilated", ("Conv2DBackpropInput",),
             lambda af, x, w: af.nn.conv2d_transpose(x, w, [1, 2, 6, 6], 1, padding="VALID", data_format="NCHW",
                                                     dilations=2),
             [normal(1, 3, 2, 2), normal(3, 3, 2, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
