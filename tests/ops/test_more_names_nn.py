"""af.nn names added late (aliases and composites of existing ops): pooling spellings, the public conv backprop
wrappers, conv1d_transpose, silu, compute_average_loss, scale_regularization_loss and
batch_norm_with_global_normalization, against numpy references; names and static shapes as TF 2.21
(checked with tfdiff, values too, while this was written)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(0)
X = RNG.randn(2, 5, 6, 3).astype(np.float32)
X1 = RNG.randn(2, 7, 3).astype(np.float32)
W = RNG.randn(3, 2, 3, 4).astype(np.float32)
DY = RNG.randn(2, 3, 3, 4).astype(np.float32)


def pool_ref(x, k, s, fn):  # VALID pooling over H, W of NHWC
    n, h, w, c = x.shape
    rows, cols = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, rows, cols, c), x.dtype)
    for i in range(rows):
        for j in range(cols):
            out[:, i, j] = fn(x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]], axis=(1, 2))
    return out


def conv_ref(x, w, s):  # VALID conv2d, NHWC
    kh, kw = w.shape[:2]
    rows, cols = (x.shape[1] - kh) // s + 1, (x.shape[2] - kw) // s + 1
    out = np.zeros((x.shape[0], rows, cols, w.shape[3]), np.float64)
    for i in range(rows):
        for j in range(cols):
            out[:, i, j] = np.tensordot(x[:, i * s:i * s + kh, j * s:j * s + kw], w, axes=3)
    return out


def conv_input_grad_ref(in_shape, w, dy, s):
    """d(sum(conv(x, w) * dy)) / dx, by linearity: the adjoint of conv_ref."""
    dx = np.zeros(in_shape, np.float64)
    kh, kw = w.shape[:2]
    for i in range(dy.shape[1]):
        for j in range(dy.shape[2]):
            dx[:, i * s:i * s + kh, j * s:j * s + kw] += np.tensordot(dy[:, i, j], w, axes=([1], [3]))
    return dx


def conv_filter_grad_ref(x, w_shape, dy, s):
    dw = np.zeros(w_shape, np.float64)
    kh, kw = w_shape[:2]
    for i in range(dy.shape[1]):
        for j in range(dy.shape[2]):
            dw += np.tensordot(x[:, i * s:i * s + kh, j * s:j * s + kw], dy[:, i, j], axes=([0], [0]))
    return dw


def bn_moments(af):
    return af.constant([0.1, 0.2, 0.3]), af.constant([1.0, 2.0, 0.5]), af.constant([0.0, 1.0, 2.0])


DY_VALID = RNG.randn(2, 2, 3, 4).astype(np.float32)  # conv of a [2,5,6,3] input, 3x2 filter, stride 2, VALID

CASES = [
    Case("nn_max_pool2d_avg_pool2d", ("MaxPool", "AvgPool"),
         lambda af: [af.nn.max_pool2d(X, [2, 3], [1, 2], "VALID"),
                     af.nn.avg_pool2d(X, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
                     af.nn.max_pool_v2(X, [2, 3], [1, 2], "VALID"), af.nn.avg_pool_v2(X, 2, 1, "VALID")],
         [pool_ref(X, [2, 3], [1, 2], np.max), pool_ref(X, [2, 2], [1, 1], np.mean),
          pool_ref(X, [2, 3], [1, 2], np.max), pool_ref(X, [2, 2], [1, 1], np.mean)], rtol=1e-5),
    Case("nn_pool_v2_1d", ("MaxPool", "AvgPool"),
         lambda af: [af.nn.max_pool_v2(X1, 2, 1, "VALID"), af.nn.avg_pool_v2(X1, 3, 2, "VALID")],
         [pool_ref(X1[:, None], [1, 2], [1, 1], np.max)[:, 0], pool_ref(X1[:, None], [1, 3], [1, 2], np.mean)[:, 0]],
         rtol=1e-5),
    Case("nn_conv2d_backprop_wrappers", ("Conv2DBackpropInput", "Conv2DBackpropFilter"),
         lambda af: [af.nn.conv2d_backprop_input([2, 5, 6, 3], W, DY_VALID, [1, 2, 2, 1], "VALID"),
                     af.nn.conv2d_backprop_filter(X, [3, 2, 3, 4], DY_VALID, [1, 2, 2, 1], "VALID")],
         [np.float32(conv_input_grad_ref(X.shape, W, DY_VALID, 2)),
          np.float32(conv_filter_grad_ref(X, W.shape, DY_VALID, 2))],
         rtol=1e-4, atol=1e-4),
    Case("nn_depthwise_backprop_wrappers",
         ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"),
         # A depthwise filter [KH, KW, C, 1] is a conv2d filter that is diagonal in (in, out) channels.
         lambda af: [af.nn.depthwise_conv2d_native_backprop_input([2, 5, 6, 3], W[:, :, :, :1], DY_VALID[..., :3],
                                                                  [1, 2, 2, 1], "VALID"),
                     af.nn.depthwise_conv2d_backprop_filter(X, [3, 2, 3, 1], DY_VALID[..., :3], [1, 2, 2, 1], "VALID")],
         [np.float32(conv_input_grad_ref(X.shape, W[:, :, :, :1] * np.eye(3)[None, None], DY_VALID[..., :3], 2)),
          np.float32(np.einsum("hwcc->hwc", conv_filter_grad_ref(X, (3, 2, 3, 3), DY_VALID[..., :3], 2))[..., None])],
         rtol=1e-4, atol=1e-4),
]
CASES += [
    Case("nn_silu", ("Sigmoid",), lambda af: af.nn.silu(X1), np.float32(X1 / (1 + np.exp(-X1))), rtol=1e-5),
    Case("nn_compute_average_loss", ("DivNoNan",),
         lambda af: [af.nn.compute_average_loss([1.0, 2.0, 3.0]),
                     af.nn.compute_average_loss([[1.0], [2.0]], sample_weight=[2.0, 0.5]),
                     af.nn.compute_average_loss([1.0, 2.0], global_batch_size=4),
                     af.nn.compute_average_loss([1.0, 2.0], global_batch_size=0),
                     af.nn.scale_regularization_loss([1.0, 2.0])],
         [np.float32(2.0), np.float32(1.5), np.float32(0.75), np.float32(0.0), np.float32(3.0)]),
    Case("nn_batch_norm_with_global_normalization", ("Rsqrt",),
         lambda af: [af.nn.batch_norm_with_global_normalization(X, *bn_moments(af), af.constant([2.0, 2.0, 3.0]),
                                                                0.001, True),
                     af.nn.batch_norm_with_global_normalization(
                         input=X, mean=bn_moments(af)[0], variance=bn_moments(af)[1], beta=bn_moments(af)[2],
                         gamma=af.constant(9.0), variance_epsilon=0.001, scale_after_normalization=False)],
         [np.float32((X - [0.1, 0.2, 0.3]) / np.sqrt(np.float32([1.0, 2.0, 0.5]) + 0.001) * [2, 2, 3] + [0, 1, 2]),
          np.float32((X - [0.1, 0.2, 0.3]) / np.sqrt(np.float32([1.0, 2.0, 0.5]) + 0.001) + [0, 1, 2])], rtol=1e-5),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_more_nn(case):
    check_case(case)


def test_conv1d_transpose_is_the_adjoint_of_conv1d():
    # <conv1d(x, f), y> == <x, conv1d_transpose(y, f)> for any x, y: the defining property of the transpose.
    f = RNG.randn(3, 2, 4).astype(np.float32)  # [KW, out_channels of the transpose, in_channels]
    x = RNG.randn(2, 9, 2).astype(np.float32)
    with af.Graph().as_default():
        y = af.nn.conv1d(x, f, 2, "SAME")
        z = RNG.randn(*y.shape.as_list()).astype(np.float32)
        t = af.nn.conv1d_transpose(z, f, [2, 9, 2], 2, "SAME")
        assert (t.name, t.shape.as_list()) == ("conv1d_transpose/Squeeze:0", [2, 9, 2])
        with af.Session() as sess:
            yv, tv = sess.run([y, t])
    np.testing.assert_allclose(np.sum(yv * z), np.sum(x * tv), rtol=1e-4)


def test_names_static_shapes_and_errors_as_tf():
    with af.Graph().as_default():
        assert af.nn.max_pool2d(X, 2, 2, "SAME").name == "MaxPool2d:0"
        assert af.nn.max_pool_v2(X1, 2, 1, "VALID").name == "MaxPool1d/Squeeze:0"
        assert af.nn.avg_pool_v2(X, 3, 2, "SAME").shape.as_list() == [2, 3, 3, 3]
        assert af.nn.conv2d_backprop_input([2, 5, 6, 3], W, DY, [1, 2, 2, 1], "SAME").name == "Conv2DBackpropInput:0"
        assert af.nn.compute_average_loss([1.0]).name == "div_no_nan:0"
        assert af.nn.scale_regularization_loss([1.0]).name == "truediv:0"
        assert af.nn.space_to_depth is af.space_to_depth and af.nn.depth_to_space is af.depth_to_space
        assert af.nn.space_to_batch is af.space_to_batch and not hasattr(af.nn, "batch_to_space")  # as TF
        assert af.nn.depthwise_conv2d_backprop_input is af.nn.depthwise_conv2d_native_backprop_input
        with pytest.raises(ValueError, match="at least rank 1"):
            af.nn.compute_average_loss(1.0)
        with pytest.raises(ValueError, match="global_batch_size must be scalar"):
            af.nn.compute_average_loss([1.0], global_batch_size=[2])
        with pytest.raises(TypeError, match="global_batch_size must be an integer"):
            af.nn.compute_average_loss([1.0], global_batch_size=2.0)
        with pytest.raises(ValueError, match="must be 3, 4 or 5"):
            af.nn.max_pool_v2(np.zeros([2, 3], np.float32), 2, 1, "VALID")
        with pytest.raises(ValueError, match="data_format"):
            af.nn.conv1d_transpose(X1, W[0], [2, 7, 3], 1, data_format="NHWC")
