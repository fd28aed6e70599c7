"""af.layers convolutions and pools against numpy references computed from the layer's own kernel and bias,
with TF1's variable/op names, static shapes and argument errors (constants pinned with tfdiff against TF 2.21)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.layers import reference as ref

RNG = np.random.RandomState(1)
X = RNG.randn(2, 7, 6, 3).astype(np.float32)
X1 = RNG.randn(2, 9, 3).astype(np.float32)

# Checked against TF 2.21: (layer call, output op name, static output shape) for inputs shaped like X / X1
# with an unknown batch dimension.
SHAPES = [
    ("conv2d k3", "conv2d/Relu:0", [None, 5, 4, 4]),
    ("conv2d same s2", "conv2d_1/BiasAdd:0", [None, 4, 3, 4]),
    ("conv1d same", "conv1d/BiasAdd:0", [None, 9, 4]),
    ("conv2d_transpose same s2", "conv2d_transpose/BiasAdd:0", [None, 14, 12, 5]),
    ("conv2d_transpose valid", "conv2d_transpose_1/BiasAdd:0", [None, 15, 18, 5]),
    ("max_pooling2d", "max_pooling2d/MaxPool:0", [None, 3, 3, 3]),
    ("average_pooling2d same", "average_pooling2d/AvgPool:0", [None, 4, 3, 3]),
    ("max_pooling1d", "max_pooling1d/Squeeze:0", [None, 4, 3]),
]
CONV1D_OPS = ["conv1d/Conv1D/ExpandDims/dim", "conv1d/Conv1D/ExpandDims", "conv1d/Conv1D/ExpandDims_1/dim",
              "conv1d/Conv1D/ExpandDims_1", "conv1d/Conv1D", "conv1d/Conv1D/Squeeze", "conv1d/BiasAdd"]


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()


def run(fetches, feed=None):
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        return sess.run(fetches, feed)


def nchw(x):
    return x.transpose(0, 3, 1, 2)


def nhwc(x):
    return x.transpose(0, 2, 3, 1)


def test_static_shapes_and_op_names():
    x = af.placeholder(af.float32, [None, 7, 6, 3])
    x1 = af.placeholder(af.float32, [None, 9, 3])
    built = {
        "conv2d k3": af.layers.conv2d(x, 4, 3, activation=af.nn.relu),
        "conv2d same s2": af.layers.conv2d(x, 4, (3, 2), strides=2, padding="SAME"),
        "conv1d same": af.layers.conv1d(x1, 4, 3, padding="same"),
        "conv2d_transpose same s2": af.layers.conv2d_transpose(x, 5, 3, strides=2, padding="same"),
        "conv2d_transpose valid": af.layers.conv2d_transpose(x, 5, (3, 2), strides=(2, 3)),
        "max_pooling2d": af.layers.max_pooling2d(x, 2, 2),
        "average_pooling2d same": af.layers.average_pooling2d(x, 3, 2, padding="same"),
        "max_pooling1d": af.layers.max_pooling1d(x1, 2, 2),
    }
    for label, name, shape in SHAPES:
        assert (built[label].name, built[label].shape.as_list()) == (name, shape), label
    conv1d_ops = [o.name for o in af.get_default_graph().get_operations()
                  if o.name.startswith("conv1d/") and "/kernel" not in o.name and "/bias" not in o.name]
    assert conv1d_ops == CONV1D_OPS
    names = [v.name for v in af.global_variables()]
    assert names[:4] == ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0", "conv2d_1/bias:0"]
    assert af.global_variables()[0].shape.as_list() == [3, 3, 3, 4]
    assert af.get_default_graph().get_tensor_by_name("conv2d_transpose/kernel:0").shape.as_list() == [3, 3, 5, 3]


@pytest.mark.parametrize("padding,strides,dilation,data_format", [
    ("valid", (1, 1), (1, 1), "channels_last"),
    ("same", (2, 2), (1, 1), "channels_last"),
    ("Same", (1, 2), (1, 1), "channels_first"),
    ("valid", (1, 1), (2, 2), "channels_last"),
])
def test_conv2d_values(padding, strides, dilation, data_format):
    first = data_format == "channels_first"
    xv = nchw(X) if first else X
    x = af.placeholder(af.float32, xv.shape)
    layer = af.layers.Conv2D(4, (3, 2), strides=strides, padding=padding, data_format=data_format,
                             dilation_rate=dilation, activation=af.nn.relu,
                             bias_initializer=af.random_normal_initializer(seed=3))
    y = layer(x)
    out, w, b = run([y, layer.kernel, layer.bias], {x: xv})
    expect = np.maximum(ref.conv2d(X, w, strides, padding.lower(), dilation) + b, 0)
    np.testing.assert_allclose(nhwc(out) if first else out, expect, rtol=1e-5, atol=1e-5)
    assert y.shape.as_list() == list(out.shape)


@pytest.mark.parametrize("padding,strides,dilation,data_format", [
    ("valid", 1, 1, "channels_last"),
    ("same", 2, 1, "channels_last"),
    ("causal", 1, 2, "channels_last"),
    ("valid", 1, 1, "channels_first"),
])
def test_conv1d_values(padding, strides, dilation, data_format):
    first = data_format == "channels_first"
    xv = X1.transpose(0, 2, 1) if first else X1
    x = af.placeholder(af.float32, xv.shape)
    layer = af.layers.Conv1D(2, 3, strides=strides, padding=padding, dilation_rate=dilation,
                             data_format=data_format, bias_initializer=af.constant_initializer([0.5, -1.0]))
    y = layer(x)
    out, w, b = run([y, layer.kernel, layer.bias], {x: xv})
    x_ref = X1
    if padding == "causal":  # left-pad (k - 1) * dilation steps, then a valid convolution
        x_ref = np.pad(X1, [(0, 0), (2 * dilation, 0), (0, 0)])
    pad = "same" if padding == "same" else "valid"
    expect = ref.conv2d(x_ref[:, None], w[None], (1, strides), pad, (1, dilation))[:, 0] + b
    np.testing.assert_allclose(out.transpose(0, 2, 1) if first else out, expect, rtol=1e-5, atol=1e-5)
    if padding == "causal":
        assert out.shape[1] == X1.shape[1]


@pytest.mark.parametrize("padding,strides,data_format", [
    ("valid", (2, 3), "channels_last"), ("same", (2, 2), "channels_last"), ("valid", (1, 1), "channels_first")])
def test_conv2d_transpose_values(padding, strides, data_format):
    first = data_format == "channels_first"
    xv = nchw(X) if first else X
    x = af.placeholder(af.float32, [None] + list(xv.shape[1:]))
    layer = af.layers.Conv2DTranspose(5, (3, 2), strides=strides, padding=padding, data_format=data_format,
                                      bias_initializer=af.random_normal_initializer(seed=2))
    y = layer(x)
    out, w, b = run([y, layer.kernel, layer.bias], {x: xv})
    out = nhwc(out) if first else out
    expect = ref.conv2d_transpose(X, w, out.shape[1:3], strides, padding) + b
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    oh = X.shape[1] * strides[0] + (max(3 - strides[0], 0) if padding == "valid" else 0)
    assert out.shape[1] == oh


def test_conv2d_transpose_unknown_spatial_size():
    x = af.placeholder(af.float32, [None, None, 6, 3])
    y = af.layers.conv2d_transpose(x, 2, 3, strides=2)
    assert y.shape.as_list() == [None, None, 13, 2]  # checked against TF 2.21
    assert run(y, {x: X}).shape == (2, 15, 13, 2)


@pytest.mark.parametrize("cls,mode,size,strides,padding,data_format", [
    (af.layers.MaxPooling2D, "max", (2, 2), (2, 2), "valid", "channels_last"),
    (af.layers.AveragePooling2D, "avg", (3, 3), (2, 2), "same", "channels_last"),
    (af.layers.MaxPool2D, "max", (3, 2), (1, 2), "SAME", "channels_first"),
    (af.layers.AvgPool2D, "avg", (2, 2), (1, 1), "valid", "channels_first"),
])
def test_pool2d_values(cls, mode, size, strides, padding, data_format):
    first = data_format == "channels_first"
    xv = nchw(X) if first else X
    x = af.placeholder(af.float32, xv.shape)
    out = run(cls(size, strides, padding=padding, data_format=data_format)(x), {x: xv})
    expect = ref.pool2d(X, size, strides, padding.lower(), mode)
    np.testing.assert_allclose(nhwc(out) if first else out, expect, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,mode,padding,data_format", [
    (af.layers.max_pooling1d, "max", "valid", "channels_last"),
    (af.layers.average_pooling1d, "avg", "same", "channels_last"),
    (af.layers.max_pooling1d, "max", "same", "channels_first"),
])
def test_pool1d_values(fn, mode, padding, data_format):
    first = data_format == "channels_first"
    xv = X1.transpose(0, 2, 1) if first else X1
    x = af.placeholder(af.float32, xv.shape)
    out = run(fn(x, 3, 2, padding=padding, data_format=data_format), {x: xv})
    expect = ref.pool2d(X1[:, :, None], (3, 1), (2, 1), padding, mode)[:, :, 0]
    np.testing.assert_allclose(out.transpose(0, 2, 1) if first else out, expect, rtol=1e-5, atol=1e-6)


def test_conv_regularizers_reuse_and_aliases():
    x = af.placeholder(af.float32, [None, 7, 6, 3])
    y = af.layers.convolution2d(x, 2, 3, name="c", kernel_regularizer=af.nn.l2_loss,
                                bias_regularizer=af.nn.l2_loss)
    z = af.layers.conv2d(x, 2, 3, name="c", reuse=True)
    assert af.layers.Convolution2D is af.layers.Conv2D and af.layers.MaxPool2D is af.layers.MaxPooling2D
    assert [t.name for t in af.get_collection(af.GraphKeys.REGULARIZATION_LOSSES)] == [
        "c/kernel/Regularizer/L2Loss:0", "c/bias/Regularizer/L2Loss:0"]
    assert len(af.global_variables()) == 2 and z.name == "c_1/BiasAdd:0"
    a, b = run([y, z], {x: X})
    np.testing.assert_array_equal(a, b)


def test_conv_extra_batch_dimensions_are_folded():
    x = af.placeholder(af.float32, [1, 2, 7, 6, 3])
    layer = af.layers.Conv2D(4, 3)
    y = layer(x)
    assert y.shape.as_list() == [1, 2, 5, 4, 4]  # checked against TF 2.21
    xv = np.stack([X])
    out, w, b = run([y, layer.kernel, layer.bias], {x: xv})
    np.testing.assert_allclose(out[0], ref.conv2d(X, w) + b, rtol=1e-5, atol=1e-5)


# Checked against TF 2.21: the ValueError each bad construction or call raises (a fragment of its message).
BAD = [
    (lambda x, x3: af.layers.conv2d(x3, 4, 3), 'layer "conv2d" is incompatible with the layer: expected min_ndim=4, '
                                               "found ndim=3. Full shape received: (8, 8, 3)"),
    (lambda x, x3: af.layers.conv2d(af.placeholder(af.float32, [1, 8, 8, None]), 4, 3),
     "The channel dimension of the inputs should be defined."),
    (lambda x, x3: af.layers.conv2d(x, 4, 3, padding="full"), 'one of "valid", "same"'),
    (lambda x, x3: af.layers.conv2d(x, 4, 3, strides=2, dilation_rate=2),
     "`strides > 1` not supported in conjunction with `dilation_rate > 1`."),
    (lambda x, x3: af.layers.conv2d(x, 4, 0), "The `kernel_size` argument must be a tuple of 2 integers. Received: 0 "
                                              "including {0} that does not satisfy the requirement `> 0`."),
    (lambda x, x3: af.layers.conv2d(x, 4, (1, 2, 3)), "The `kernel_size` argument must be a tuple of 2 integers."),
    (lambda x, x3: af.layers.conv2d(x, 0, 3), "Invalid value for argument `filters`."),
    (lambda x, x3: af.layers.conv2d(x, 4, 3, padding="causal"), "Causal padding is only supported for `Conv1D`"),
    (lambda x, x3: af.layers.conv2d(x, 4, 3, data_format="NHWC"), "The `data_format` argument must be one of"),
    (lambda x, x3: af.layers.max_pooling2d(x3, 2, 2), 'layer "max_pooling2d" is incompatible with the layer: '
                                                      "expected ndim=4, found ndim=3."),
    (lambda x, x3: af.layers.conv2d_transpose(x3, 2, 3), "expected ndim=4, found ndim=3"),
    (lambda x, x3: af.layers.conv2d(x, 4, 9), "One of the dimensions in the output is <= 0"),
]


@pytest.mark.parametrize("build,message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments(build, message):
    x = af.placeholder(af.float32, [None, 8, 8, 3])
    x3 = af.placeholder(af.float32, [8, 8, 3])
    with pytest.raises(ValueError) as info:
        build(x, x3)
    assert message in str(info.value)


@pytest.mark.parametrize("strides,padding,dilation,multiplier,data_format", [
    ((1, 1), "valid", (1, 1), 2, "channels_last"),
    ((2, 2), "same", (1, 1), 1, "channels_last"),
    ((1, 1), "valid", (2, 2), 1, "channels_last"),
    ((1, 1), "same", (1, 1), 3, "channels_first"),
])
def test_separable_conv2d_values(strides, padding, dilation, multiplier, data_format):
    first = data_format == "channels_first"
    xv = nchw(X) if first else X
    x = af.placeholder(af.float32, xv.shape)
    layer = af.layers.SeparableConv2D(4, (3, 2), strides=strides, padding=padding, dilation_rate=dilation,
                                      depth_multiplier=multiplier, data_format=data_format, activation=af.nn.relu,
                                      bias_initializer=af.random_normal_initializer(seed=5))
    y = layer(x)
    assert [v.name for v in layer.weights] == [
        "separable_conv2d/depthwise_kernel:0", "separable_conv2d/pointwise_kernel:0", "separable_conv2d/bias:0"]
    assert layer.pointwise_kernel.shape.as_list() == [1, 1, 3 * multiplier, 4]
    out, dw, pw, b = run([y, layer.depthwise_kernel, layer.pointwise_kernel, layer.bias], {x: xv})
    expect = np.maximum(ref.separable_conv2d(X, dw, pw, strides, padding, dilation) + b, 0)
    np.testing.assert_allclose(nhwc(out) if first else out, expect, rtol=1e-5, atol=1e-5)
    assert y.shape.as_list() == list(out.shape)


def test_separable_conv1d_values_and_names():
    x = af.placeholder(af.float32, [None, 9, 3])
    y = af.layers.separable_conv1d(x, 4, 3, depth_multiplier=2, padding="causal", dilation_rate=2,
                                   bias_initializer=af.ones_initializer())
    # Checked against TF 2.21: the output op and the variables' shapes.
    assert y.name == "separable_conv1d/Squeeze:0" and y.shape.as_list() == [None, 9, 4]
    dw, pw = af.global_variables()[:2]
    assert (dw.shape.as_list(), pw.shape.as_list()) == ([3, 3, 2], [1, 6, 4])
    out, dwv, pwv = run([y, dw, pw], {x: X1})
    padded = np.pad(X1, [(0, 0), (4, 0), (0, 0)])[:, None]
    expect = ref.separable_conv2d(padded, dwv[None], pwv[None], dilation=(1, 2))[:, 0] + 1
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
