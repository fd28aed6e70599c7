"""af.layers core: Dense, Dropout, Flatten (and the Layer base they share) against numpy on the layer's own
variables, with TF1's variable and op names, collections, reuse rules and errors. Names, shapes and messages
written as constants below were pinned with tfdiff against TF 2.21's tf.compat.v1.layers."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af

RNG = np.random.RandomState(0)
X = RNG.randn(5, 4).astype(np.float32)

# Checked against TF 2.21: the ops one `dense(x, 3, relu, kernel_regularizer=l2_loss,
# activity_regularizer=l2_loss)` call adds outside its variables' initializers, in order.
DENSE_OPS = ["dense/kernel/Regularizer/L2Loss", "dense/MatMul", "dense/BiasAdd", "dense/Relu",
             "dense/ActivityRegularizer/L2Loss", "dense/ActivityRegularizer/Shape",
             "dense/ActivityRegularizer/strided_slice", "dense/ActivityRegularizer/Cast",
             "dense/ActivityRegularizer/truediv"]
LAST_DIM_MESSAGE = "The last dimension of the inputs to `Dense` should be defined. Found `None`."
RANK_MESSAGE = "is incompatible with the layer: expected min_ndim=2, found ndim=1. Full shape received: (4,)"
AXIS_MESSAGE = "expected axis -1 of input shape to have value 4, but received input with shape (None, 7)"


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()


def run(fetches, feed=None):
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        return sess.run(fetches, feed)


# -- Dense -------------------------------------------------------------------------------------------------
def test_dense_values_names_and_collections():
    x = af.placeholder(af.float32, [None, 4], name="x")
    graph = af.get_default_graph()
    before = len(graph.get_operations())
    y = af.layers.dense(x, 3, activation=af.nn.relu, kernel_regularizer=af.nn.l2_loss,
                        activity_regularizer=af.nn.l2_loss)
    added = [o.name for o in graph.get_operations()[before:]
             if "Initializer" not in o.name and not o.name.endswith(("/Assign", "/read", "/kernel", "/bias"))
             and "strided_slice/" not in o.name]
    assert added == DENSE_OPS
    assert y.name == "dense/Relu:0" and y.shape.as_list() == [None, 3]
    assert [v.name for v in af.global_variables()] == ["dense/kernel:0", "dense/bias:0"]
    assert [v.name for v in af.trainable_variables()] == ["dense/kernel:0", "dense/bias:0"]
    losses = af.get_collection(af.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["dense/kernel/Regularizer/L2Loss:0", "dense/ActivityRegularizer/truediv:0"]
    kernel, bias = af.global_variables()
    out, w, b, reg, act = run([y, kernel, bias] + losses, {x: X})
    assert np.all(b == 0)
    # glorot_uniform: |w| <= sqrt(6 / (fan_in + fan_out))
    assert np.all(np.abs(w) <= np.sqrt(6 / 7)) and np.std(w) > 0
    ref = np.maximum(X @ w + b, 0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg, np.sum(w ** 2) / 2, rtol=1e-5)
    np.testing.assert_allclose(act, np.sum(ref ** 2) / 2 / len(X), rtol=1e-5)


def test_dense_names_are_made_unique_and_rank3_uses_tensordot():
    x = af.placeholder(af.float32, [2, 5, 4])
    a = af.layers.dense(x, 6, use_bias=False, kernel_initializer=af.constant_initializer(0.5))
    b = af.layers.dense(x, 6, bias_initializer=af.ones_initializer())
    assert a.shape.as_list() == [2, 5, 6] and "dense/Tensordot" in a.name
    assert b.name.startswith("dense_1/") and [v.name for v in af.global_variables()] == [
        "dense/kernel:0", "dense_1/kernel:0", "dense_1/bias:0"]
    xv = RNG.randn(2, 5, 4).astype(np.float32)
    out_a, out_b, w = run([a, b, af.global_variables()[1]], {x: xv})
    np.testing.assert_allclose(out_a, np.full((2, 5, 6), 0.5) * xv.sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(out_b, xv @ w + 1, rtol=1e-5, atol=1e-6)


def test_dense_class_builds_once_and_reuses_its_variables():
    x = af.placeholder(af.float32, [None, 4])
    layer = af.layers.Dense(5, activation="tanh", name="fc")
    with pytest.raises(ValueError, match="has not been used yet"):
        _ = layer.scope_name
    u, v = layer(x), layer(x * 2)
    assert layer.scope_name == "fc" and [w.name for w in layer.weights] == ["fc/kernel:0", "fc/bias:0"]
    assert u.name == "fc/Tanh:0" and v.name == "fc/Tanh_1:0"
    assert len(af.global_variables()) == 2 and layer.count_params() == 25
    out_u, out_v, w, b = run([u, v, layer.kernel, layer.bias], {x: X})
    np.testing.assert_allclose(out_v, np.tanh(2 * X @ w + b), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=AXIS_MESSAGE.replace("(", r"\(").replace(")", r"\)")):
        layer(af.placeholder(af.float32, [None, 7]))


def test_reuse_by_variable_scope_and_by_argument():
    x = af.placeholder(af.float32, [None, 4])
    with af.variable_scope("foo"):
        a = af.layers.dense(x, 2, name="shared")
    with af.variable_scope("foo", reuse=True):
        b = af.layers.dense(x, 2, name="shared")
    c = af.layers.dense(x, 2, name="foo/shared", reuse=True)
    # Checked against TF 2.21: the three calls' op names.
    assert (a.name, b.name, c.name) == ("foo/shared/BiasAdd:0", "foo_1/shared/BiasAdd:0", "foo/shared_1/BiasAdd:0")
    assert [v.name for v in af.global_variables()] == ["foo/shared/kernel:0", "foo/shared/bias:0"]
    out_a, out_b, out_c = run([a, b, c], {x: X})
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_array_equal(out_a, out_c)
    with af.variable_scope("tied", reuse=af.AUTO_REUSE):
        d1 = af.layers.dense(x, 2, name="d")
        d2 = af.layers.dense(x, 2, name="d")
    assert d1.name != d2.name and len(af.global_variables()) == 4


def test_reuse_errors_as_tf1():
    x = af.placeholder(af.float32, [None, 4])
    with pytest.raises(ValueError, match="Variable nothere/kernel does not exist"):
        af.layers.dense(x, 2, name="nothere", reuse=True)
    af.layers.dense(x, 2, name="d3")
    with pytest.raises(ValueError, match="Variable d3/kernel already exists"):
        af.layers.dense(x, 2, name="d3")


def test_dense_bad_inputs():
    with pytest.raises(ValueError, match="should be defined") as info:
        af.layers.dense(af.placeholder(af.float32, [None, None]), 2)
    assert LAST_DIM_MESSAGE in str(info.value) and '"dense"' in str(info.value)
    with pytest.raises(ValueError) as info:
        af.layers.dense(af.placeholder(af.float32, [4]), 2)
    assert RANK_MESSAGE in str(info.value) and 'layer "dense_1"' in str(info.value)
    with pytest.raises(TypeError, match="floating-point"):
        af.layers.dense(af.placeholder(af.int32, [None, 4]), 2)
    with pytest.raises(ValueError, match="units"):
        af.layers.Dense(-1)


def test_non_trainable_dense_and_kernel_constraint():
    x = af.placeholder(af.float32, [None, 4])
    layer = af.layers.Dense(3, trainable=False, kernel_constraint=lambda w: af.clip_by_value(w, -0.1, 0.1))
    layer(x)
    assert af.trainable_variables() == [] and len(af.global_variables()) == 2
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2
    assert layer.kernel.constraint is not None


# -- Dropout -----------------------------------------------------------------------------------------------
def test_dropout_training_flag_bool_and_tensor():
    x = af.placeholder(af.float32, [None, 4])
    training = af.placeholder(af.bool, [])
    off = af.layers.dropout(x, 0.3)
    on = af.layers.dropout(x, 0.5, training=True, seed=1)
    flag = af.layers.dropout(x, 0.5, training=training)
    const = af.layers.dropout(x, 0.5, training=af.constant(False))
    # Checked against TF 2.21: training=False is one Identity, training=True is nn.dropout in the layer scope.
    assert off.name == "dropout/Identity:0" and on.name == "dropout_1/dropout/SelectV2:0"
    assert "cond" in flag.name and const.name == "dropout_3/Identity:0"
    big = np.abs(RNG.randn(200, 4)).astype(np.float32) + 0.1
    with af.Session() as sess:
        out_off, out_on = sess.run([off, on], {x: big})
        np.testing.assert_array_equal(out_off, big)
        kept = out_on != 0
        np.testing.assert_allclose(out_on[kept], big[kept] * 2, rtol=1e-6)
        assert 0.35 < kept.mean() < 0.65
        np.testing.assert_array_equal(sess.run(flag, {x: big, training: False}), big)
        dropped = sess.run(flag, {x: big, training: True})
        assert 0.35 < (dropped != 0).mean() < 0.65


def test_dropout_noise_shape_rate_zero_and_bad_rate():
    x = af.placeholder(af.float32, [None, 6])
    y = af.layers.dropout(x, 0.5, noise_shape=[None, 1], training=True)
    z = af.layers.Dropout(0.0)(x, training=True)
    assert z.name == "dropout_1/Identity:0"
    xv = np.ones((50, 6), np.float32)
    out = run(y, {x: xv})
    assert np.all((out == 0).all(1) | (out == 2).all(1))  # one decision per row
    with pytest.raises(ValueError, match="between 0 and 1"):
        af.layers.Dropout(1.5)


# -- Flatten -----------------------------------------------------------------------------------------------
def test_flatten_shapes_and_values():
    a = af.layers.flatten(af.placeholder(af.float32, [None, 3, 4]))
    b = af.layers.flatten(af.placeholder(af.float32, [None, 3, None]))
    c = af.layers.flatten(af.placeholder(af.float32, [None]))
    d_in = af.placeholder(af.float32, [2, 3, 4, 5])
    d = af.layers.flatten(d_in, data_format="channels_first")
    # Checked against TF 2.21.
    assert [t.shape.as_list() for t in (a, b, c, d)] == [[None, 12], [None, None], [None, 1], [2, 60]]
    assert (a.name, c.name) == ("flatten/Reshape:0", "flatten_2/ExpandDims:0")
    v = RNG.randn(2, 3, 4, 5).astype(np.float32)
    np.testing.assert_array_equal(run(d, {d_in: v}), v.transpose(0, 2, 3, 1).reshape(2, 60))
    with pytest.raises(ValueError, match="data_format"):
        af.layers.Flatten(data_format="NHWC")


# -- the base ----------------------------------------------------------------------------------------------
def test_custom_layer_on_the_base():
    class Scale(af.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=[input_shape[-1]], initializer=af.ones_initializer(),
                                     regularizer=lambda w: af.reduce_sum(w))
            self.add_weight("count", shape=[], initializer=af.zeros_initializer(), trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            return inputs * self.w

    x = af.placeholder(af.float32, [None, 4])
    layer = Scale(name="scale")
    y = layer.apply(x)
    assert y.name == "scale/mul:0" and layer.input_spec is None
    assert [w.name for w in layer.trainable_weights] == ["scale/w:0"]
    assert [w.name for w in layer.non_trainable_weights] == ["scale/count:0"]
    assert [t.name for t in layer.losses] == ["scale/w/Regularizer/Sum:0"]
    np.testing.assert_array_equal(run(y, {x: X}), X)
    spec = af.layers.InputSpec(ndim=2, axes={1: 4})
    assert repr(spec) == "InputSpec(ndim=2, axes={1: 4})"
