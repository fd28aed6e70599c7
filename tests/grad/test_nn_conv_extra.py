"""Finite-difference rows for the convolutions of asyncflow/ops/nn_conv_extra.py: conv1d (through ExpandDims,
Conv2D, Squeeze), conv2d_transpose (Conv2DBackpropInput: its gradients are Conv2DBackpropFilter and Conv2D, TF's
rule), depthwise and separable convolutions, the 1-D pools and max_pool_with_argmax; NCHW, strided and dilated."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(21)


def normal(*shape):
    return RNG.standard_normal(shape)


def _argmax_second(af, x, include_batch):
    """d/dx of a max pool's squares, times cos(x): differentiating it goes through MaxPoolGradWithArgmax."""
    y = af.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1], "VALID", include_batch_in_index=include_batch)[0]
    return af.gradients(af.reduce_sum(af.square(y)), x)[0] * af.cos(x)


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
    GradCase("depthwise_conv2d_same", ("DepthwiseConv2dNative",),
             lambda af, x, w: af.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
             [normal(1, 4, 4, 2), normal(3, 3, 2, 2)]),
    GradCase("depthwise_conv2d_nchw_stride2_valid", ("DepthwiseConv2dNative",),
             lambda af, x, w: af.nn.depthwise_conv2d(x, w, [1, 1, 2, 2], "VALID", data_format="NCHW"),
             [normal(2, 2, 5, 5), normal(2, 3, 2, 1)]),
    GradCase("depthwise_conv2d_rate", ("DepthwiseConv2dNative",),
             lambda af, x, w: af.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2]),
             [normal(1, 5, 4, 2), normal(2, 2, 2, 3)]),
    # The backprop ops through the gradients of a depthwise conv (their own gradients: second derivatives).
    GradCase("depthwise_backprop_input", ("DepthwiseConv2dNativeBackpropInput",),
             lambda af, x, w: af.gradients(af.reduce_sum(af.sin(af.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"))),
                                           x),
             [normal(1, 4, 4, 2), normal(2, 2, 2, 2)]),
    GradCase("depthwise_backprop_filter", ("DepthwiseConv2dNativeBackpropFilter",),
             lambda af, x, w: af.gradients(af.reduce_sum(af.sin(af.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"))),
                                           w),
             [normal(1, 4, 3, 2), normal(2, 2, 2, 2)]),
    GradCase("separable_conv2d", ("DepthwiseConv2dNative", "Conv2D"),
             lambda af, x, dw, pw: af.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME"),
             [normal(1, 4, 4, 2), normal(3, 3, 2, 2), normal(1, 1, 4, 3)]),
    GradCase("atrous_conv2d", ("Conv2D",), lambda af, x, w: af.nn.atrous_conv2d(x, w, 2, "VALID"),
             [normal(1, 6, 5, 2), normal(2, 2, 2, 2)]),
    GradCase("pool_dilated", ("StridedSlice", "Maximum", "AddN"),
             lambda af, x: [af.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 1]),
                            af.nn.pool(x, [2, 2], "AVG", "VALID", dilation_rate=[1, 2])], [normal(1, 5, 5, 2)]),
    GradCase("pools_1d", ("MaxPool", "AvgPool"),
             lambda af, x: [af.nn.max_pool1d(x, 2, 2, "SAME"), af.nn.avg_pool1d(x, 3, 1, "SAME")],
             [normal(2, 7, 2)]),
    GradCase("max_pool_with_argmax", ("MaxPoolWithArgmax",),
             lambda af, x: af.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")[0], [normal(2, 5, 5, 2)]),
    GradCase("max_pool_grad_with_argmax", ("MaxPoolGradWithArgmax",),
             lambda af, x: [_argmax_second(af, x, True), _argmax_second(af, x, False)], [normal(2, 5, 5, 2)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
