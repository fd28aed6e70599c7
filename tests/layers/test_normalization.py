"""af.layers.batch_normalization / BatchNormalization: outputs against numpy from the layer's own variables, the
moving statistics updated by running UPDATE_OPS (TF's momentum arithmetic), fused and composite paths, training
as a Python bool or a boolean tensor, variable names and collections. Constants pinned with tfdiff against
TF 2.21's tf.compat.v1.layers."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af

EPS = 1e-3
_rng = np.random.RandomState(0)
X4 = _rng.randn(2, 2, 2, 3).astype(np.float32)
X2 = _rng.randn(4, 3).astype(np.float32)

# Checked against TF 2.21 (same inputs, momentum=0.9, one run of UPDATE_OPS): the fused path (4-D input) moves
# the variance towards the batch's Bessel-corrected variance, the composite path (2-D input) the biased one.
FUSED_MOVING_MEAN = np.array([0.09283791, 0.04858122, -0.02129919], np.float32)
FUSED_MOVING_VARIANCE = np.array([0.9503627, 0.9789608, 1.0569044], np.float32)
PLAIN_MOVING_MEAN = np.array([0.00641805, 0.0027166, 0.01959202], np.float32)
PLAIN_MOVING_VARIANCE = np.array([1.1279478, 1.0181422, 0.97050446], np.float32)
# Checked against TF 2.21: names of the ops a training call adds to UPDATE_OPS and of the composite path's ops.
UPDATE_NAMES = ["batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1"]  # Operations, as TF1
COMPOSITE_OPS = ["moments/mean", "moments/variance", "moments/Squeeze", "moments/Squeeze_1", "AssignMovingAvg/decay",
                 "AssignMovingAvg/sub", "AssignMovingAvg/mul", "AssignMovingAvg", "AssignMovingAvg_1/decay",
                 "AssignMovingAvg_1", "batchnorm/Rsqrt", "batchnorm/add_1"]


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()


def normalize(x, mean, var, gamma=1.0, beta=0.0, eps=EPS):
    return (x - np.asarray(mean)) / np.sqrt(np.asarray(var) + eps) * gamma + beta


def test_composite_training_values_names_and_collections():
    x = af.constant(X2)
    y = af.layers.batch_normalization(x, training=True, momentum=0.9,
                                      gamma_initializer=af.constant_initializer(1.5),
                                      beta_initializer=af.constant_initializer(0.25))
    assert y.name == "batch_normalization/batchnorm/add_1:0" and y.shape.as_list() == [4, 3]
    assert [v.name for v in af.global_variables()] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0", "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0"]
    assert [v.name for v in af.trainable_variables()] == ["batch_normalization/gamma:0", "batch_normalization/beta:0"]
    assert af.get_collection(af.GraphKeys.MOVING_AVERAGE_VARIABLES) == [] and af.local_variables() == []
    updates = af.get_collection(af.GraphKeys.UPDATE_OPS)
    assert [u.name for u in updates] == UPDATE_NAMES
    ops = {o.name for o in af.get_default_graph().get_operations()}
    assert all("batch_normalization/" + name in ops for name in COMPOSITE_OPS)
    mm, mv = af.global_variables()[2:]
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        out = sess.run(y)
        np.testing.assert_allclose(out, normalize(X2, X2.mean(0), X2.var(0), 1.5, 0.25), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(sess.run(mm), np.zeros(3))  # updates only run when fetched
        sess.run(updates)
        np.testing.assert_allclose(sess.run(mm), PLAIN_MOVING_MEAN, rtol=1e-5)
        np.testing.assert_allclose(sess.run(mv), PLAIN_MOVING_VARIANCE, rtol=1e-5)
        sess.run(updates)  # var -= (var - batch) * (1 - momentum), again
        np.testing.assert_allclose(sess.run(mm), PLAIN_MOVING_MEAN + 0.1 * (X2.mean(0) - PLAIN_MOVING_MEAN),
                                   rtol=1e-5)
        np.testing.assert_allclose(sess.run(mv), PLAIN_MOVING_VARIANCE + 0.1 * (X2.var(0) - PLAIN_MOVING_VARIANCE),
                                   rtol=1e-5)


def test_fused_training_uses_the_bessel_corrected_variance():
    y = af.layers.batch_normalization(af.constant(X4), training=True, momentum=0.9)
    assert y.name == "batch_normalization/FusedBatchNormV3:0"
    updates = af.get_collection(af.GraphKeys.UPDATE_OPS)
    assert [u.name for u in updates] == UPDATE_NAMES
    mm, mv = af.global_variables()[2:]
    flat = X4.reshape(-1, 3)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), normalize(X4, flat.mean(0), flat.var(0)), rtol=1e-5, atol=1e-5)
        sess.run(updates)
        np.testing.assert_allclose(sess.run(mm), FUSED_MOVING_MEAN, rtol=1e-5)
        np.testing.assert_allclose(sess.run(mv), FUSED_MOVING_VARIANCE, rtol=1e-5)
        np.testing.assert_allclose(sess.run(mv), 0.9 + 0.1 * flat.var(0, ddof=1), rtol=1e-5)


@pytest.mark.parametrize("shape", [(4, 3), (2, 2, 2, 3)], ids=["composite", "fused"])
def test_training_as_a_tensor(shape):
    xv = np.random.RandomState(2).randn(*shape).astype(np.float32)
    x = af.placeholder(af.float32, shape)
    training = af.placeholder(af.bool, [])
    y = af.layers.batch_normalization(x, training=training, momentum=0.8)
    updates = af.get_collection(af.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mm, mv = af.global_variables()[2:]
    flat = xv.reshape(-1, 3)
    var_update = flat.var(0, ddof=1) if len(shape) == 4 else flat.var(0)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        mm.load(np.full(3, 0.5, np.float32), sess)
        mv.load(np.full(3, 2.0, np.float32), sess)
        out = sess.run([y] + updates, {x: xv, training: False})[0]
        np.testing.assert_allclose(out, normalize(xv, 0.5, 2.0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sess.run([mm, mv]), [np.full(3, 0.5), np.full(3, 2.0)], rtol=1e-6)
        out = sess.run([y] + updates, {x: xv, training: True})[0]
        np.testing.assert_allclose(out, normalize(xv, flat.mean(0), flat.var(0)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sess.run(mm), 0.5 - (0.5 - flat.mean(0)) * 0.2, rtol=1e-5)
        np.testing.assert_allclose(sess.run(mv), 2.0 - (2.0 - var_update) * 0.2, rtol=1e-5)


@pytest.mark.parametrize("shape", [(4, 3), (2, 2, 2, 3)], ids=["composite", "fused"])
def test_inference_uses_the_moving_statistics(shape):
    xv = np.random.RandomState(3).randn(*shape).astype(np.float32)
    layer = af.layers.BatchNormalization(gamma_initializer=af.constant_initializer(2.0))
    y = layer(af.constant(xv))
    assert af.get_collection(af.GraphKeys.UPDATE_OPS) == [] and layer.updates == []
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        layer.moving_mean.load(np.array([0.1, 0.2, 0.3], np.float32), sess)
        layer.moving_variance.load(np.array([1.0, 4.0, 0.5], np.float32), sess)
        np.testing.assert_allclose(sess.run(y), normalize(xv, [0.1, 0.2, 0.3], [1.0, 4.0, 0.5], 2.0),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis,fused_name", [(1, "FusedBatchNormV3"), (2, "batchnorm"), ([1, 3], "batchnorm"),
                                             (-1, "FusedBatchNormV3")])
def test_axes(axis, fused_name):
    xv = np.random.RandomState(4).randn(3, 2, 4, 5).astype(np.float32)
    layer = af.layers.BatchNormalization(axis=axis, center=False, beta_initializer=af.ones_initializer(),
                                         gamma_initializer=af.constant_initializer(3.0))
    y = layer(af.constant(xv), training=True)
    assert fused_name in y.name and layer.beta is None
    axes = [a % 4 for a in (axis if isinstance(axis, list) else [axis])]
    reduce = tuple(i for i in range(4) if i not in axes)
    shape = [xv.shape[i] if i in axes else 1 for i in range(4)]
    assert layer.gamma.shape.as_list() == ([xv.shape[axes[0]]] if len(axes) == 1 else shape)
    mean, var = xv.mean(reduce, keepdims=True), xv.var(reduce, keepdims=True)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), normalize(xv, mean, var, 3.0), rtol=1e-4, atol=1e-5)


def test_float64_takes_the_composite_path_and_scale_false():
    xv = np.random.RandomState(5).randn(2, 3, 3, 2)
    y = af.layers.batch_normalization(af.constant(xv), training=True, scale=False, epsilon=0.1)
    assert y.dtype == af.float64 and "batchnorm" in y.name
    assert [v.name for v in af.global_variables()] == [
        "batch_normalization/beta:0", "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    flat = xv.reshape(-1, 2)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), normalize(xv, flat.mean(0), flat.var(0), eps=0.1), rtol=1e-10)


def test_regularizers_reuse_and_names():
    x = af.placeholder(af.float32, [None, 3])
    af.layers.batch_normalization(x, gamma_regularizer=af.nn.l2_loss, beta_regularizer=af.nn.l2_loss, name="bn")
    y = af.layers.batch_normalization(x, name="bn", reuse=True, training=True)
    assert len(af.global_variables()) == 4 and y.name.startswith("bn_1/")
    assert [t.name for t in af.get_collection(af.GraphKeys.REGULARIZATION_LOSSES)] == [
        "bn/gamma/Regularizer/L2Loss:0", "bn/beta/Regularizer/L2Loss:0"]
    assert [u.name for u in af.get_collection(af.GraphKeys.UPDATE_OPS)] == [
        "bn_1/AssignMovingAvg", "bn_1/AssignMovingAvg_1"]
    assert af.layers.BatchNorm is af.layers.BatchNormalization


def test_train_op_depending_on_update_ops():
    xv = np.random.RandomState(6).randn(8, 3).astype(np.float32) * 2 + 1
    x = af.placeholder(af.float32, [None, 3])
    h = af.layers.batch_normalization(x, training=True, momentum=0.5)
    loss = af.reduce_mean(af.square(af.layers.dense(h, 1) - 1.0))
    with af.control_dependencies(af.get_collection(af.GraphKeys.UPDATE_OPS)):
        train = af.train.GradientDescentOptimizer(0.1).minimize(loss)
    mm = [v for v in af.global_variables() if v.name == "batch_normalization/moving_mean:0"][0]
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        first = sess.run(loss, {x: xv})
        for _ in range(3):
            sess.run(train, {x: xv})
        np.testing.assert_allclose(sess.run(mm), xv.mean(0) * (1 - 0.5 ** 3), rtol=1e-5)
        assert sess.run(loss, {x: xv}) < first


# Checked against TF 2.21 (message fragments) where TF raises; renorm & co are refused rather than ignored.
def test_bad_inputs():
    with pytest.raises(ValueError, match="Input has undefined `axis` dimension"):
        af.layers.batch_normalization(af.placeholder(af.float32, [None, None]))
    with pytest.raises(ValueError, match=r"Expected 0 <= axis < inputs.rank \(with inputs.rank=2\)"):
        af.layers.batch_normalization(af.placeholder(af.float32, [None, 3]), axis=5)
    with pytest.raises(ValueError, match="Unsupported axis. The use of `fused=True`"):
        af.layers.batch_normalization(af.placeholder(af.float32, [2, 2, 2, 3]), axis=-4)
    with pytest.raises(NotImplementedError, match="renorm"):
        af.layers.batch_normalization(af.placeholder(af.float32, [None, 3]), renorm=True)
    layer = af.layers.BatchNormalization()
    layer(af.placeholder(af.float32, [None, 3]))
    with pytest.raises(ValueError, match="expected ndim=2, found ndim=3"):
        layer(af.placeholder(af.float32, [None, 2, 3]))
