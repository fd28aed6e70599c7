"""Gradients through the layers by central finite differences: d loss / d (input, kernel, bias, gamma, beta) for
dense, conv1d, conv2d, conv2d_transpose and batch normalization (loss = sum(layer(x) * W), W fixed)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.layers.reference import numeric_grad

RNG = np.random.RandomState(7)


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()


def check(build, x_value, rtol=1e-5, atol=1e-6, eps=1e-6):
    """Builds y = build(x), differentiates sum(y * W) w.r.t. x and every trainable variable, compares."""
    x = af.placeholder(af.as_dtype(x_value.dtype), x_value.shape)
    y = build(x)
    w = af.constant(RNG.uniform(0.5, 1.5, size=y.shape.as_list()).astype(x_value.dtype))
    loss = af.reduce_sum(y * w)
    variables = af.trainable_variables()
    assert variables, "the layer made no trainable variable"
    grads = af.gradients(loss, [x] + variables)
    feed = {x: x_value}
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        analytic = sess.run(grads, feed)
        numeric = np.zeros_like(x_value, dtype=np.float64)
        for i in range(x_value.size):
            for sign in (1, -1):
                moved = x_value.copy()
                moved.flat[i] += sign * eps
                numeric.flat[i] += sign * sess.run(loss, {x: moved}) / (2 * eps)
        np.testing.assert_allclose(analytic[0], numeric, rtol=rtol, atol=atol, err_msg="d/d inputs")
        for var, got in zip(variables, analytic[1:]):
            np.testing.assert_allclose(got, numeric_grad(sess, loss, var, feed, eps), rtol=rtol, atol=atol,
                                       err_msg=f"d/d {var.name}")


def test_dense_gradient():
    check(lambda x: af.layers.dense(x, 3, activation=af.nn.tanh, bias_initializer=af.random_normal_initializer()),
          RNG.randn(4, 5))


def test_dense_rank3_gradient():
    check(lambda x: af.layers.dense(x, 2, bias_initializer=af.random_normal_initializer()), RNG.randn(2, 3, 4))


def test_conv2d_gradient():
    check(lambda x: af.layers.conv2d(x, 3, (3, 2), strides=(2, 1), padding="same", activation=af.nn.tanh,
                                     bias_initializer=af.random_normal_initializer()), RNG.randn(2, 5, 4, 2))


def test_conv1d_causal_gradient():
    check(lambda x: af.layers.conv1d(x, 2, 3, padding="causal", dilation_rate=2), RNG.randn(2, 6, 2))


def test_conv2d_transpose_gradient():
    check(lambda x: af.layers.conv2d_transpose(x, 2, 3, strides=2, padding="same"), RNG.randn(1, 3, 2, 2))


def test_batch_normalization_composite_gradient():
    check(lambda x: af.layers.batch_normalization(x, training=True, gamma_initializer=af.constant_initializer(1.3),
                                                  beta_initializer=af.constant_initializer(0.2)),
          RNG.randn(5, 3), rtol=1e-5, atol=1e-6)


def test_batch_normalization_fused_gradient():
    # FusedBatchNormV3 is float32 only: a wider step and looser tolerances.
    check(lambda x: af.layers.batch_normalization(x, training=True, gamma_initializer=af.constant_initializer(1.3)),
          RNG.randn(2, 2, 3, 2).astype(np.float32), rtol=2e-2, atol=2e-2, eps=1e-2)


def test_separable_conv2d_gradient():
    check(lambda x: af.layers.separable_conv2d(x, 2, 2, depth_multiplier=2, padding="same",
                                               bias_initializer=af.random_normal_initializer()), RNG.randn(1, 3, 3, 2))
