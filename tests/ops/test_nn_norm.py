"""batch_normalization and fused_batch_norm (FusedBatchNormV3, FusedBatchNormGradV3) against numpy formulas.

TF's CPU kernel, checked in TF 2.21 with tfdiff while this was written: training normalises with the biased
batch variance but returns the Bessel-corrected one (n / (n - 1)), blended with the given mean/variance when
exponential_avg_factor != 1; reserve_space_1/2 hold the batch mean and biased variance; inference uses and
returns the given mean/variance; reserve_space_3 is empty; float64 is not a FusedBatchNormV3 type.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(5)
X = RNG.randn(2, 3, 3, 4).astype(np.float32)
SCALE = (RNG.rand(4) + 0.5).astype(np.float32)
OFFSET = RNG.randn(4).astype(np.float32)
MEAN = RNG.randn(4).astype(np.float32)
VAR = (RNG.rand(4) + 0.2).astype(np.float32)
DY = RNG.randn(2, 3, 3, 4).astype(np.float32)
AXES = (0, 1, 2)
N = 18  # elements per channel


def bn_ref(x, mean, var, offset, scale, eps):
    y = (x.astype(np.float64) - mean) / np.sqrt(var.astype(np.float64) + eps)
    if scale is not None:
        y = y * scale
    return (y + (offset if offset is not None else 0)).astype(x.dtype)


def fused_train_ref(x, eps=0.001, factor=1.0, old_mean=None, old_var=None):
    x64 = x.astype(np.float64)
    m, v = x64.mean(AXES), x64.var(AXES)
    corrected = v * N / (N - 1)
    if factor != 1.0:
        m_out, v_out = (1 - factor) * old_mean + factor * m, (1 - factor) * old_var + factor * corrected
    else:
        m_out, v_out = m, corrected
    f32 = np.float32
    return [bn_ref(x64, m, v, OFFSET, SCALE, eps).astype(x.dtype), m_out.astype(f32), v_out.astype(f32)]


def fused_grad_ref(dy, x, training, eps=0.001):
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    m, v = (x64.mean(AXES), x64.var(AXES)) if training else (MEAN.astype(np.float64), VAR.astype(np.float64))
    inv = 1 / np.sqrt(v + eps)
    xc = x64 - m
    if training:
        dx = SCALE * inv * (dy64 - dy64.mean(AXES) - xc * (dy64 * xc).mean(AXES) * inv * inv)
    else:
        dx = dy64 * SCALE * inv
    return [dx.astype(np.float32), ((dy64 * xc).sum(AXES) * inv).astype(np.float32),
            dy64.sum(AXES).astype(np.float32)]


def nchw(x):
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def _all_outputs(y):
    return list(y.op.outputs)


def _grads(af, training, data_format="NHWC"):
    x = af.constant(X if data_format == "NHWC" else nchw(X))
    if training:
        y = af.nn.fused_batch_norm(x, SCALE, OFFSET, data_format=data_format)[0]
    else:
        y = af.nn.fused_batch_norm(x, SCALE, OFFSET, MEAN, VAR, is_training=False, data_format=data_format)[0]
    g = af.gradients(y, [x, y.op.inputs[1], y.op.inputs[2]], grad_ys=DY if data_format == "NHWC" else nchw(DY))
    assert g[0].op.type == "FusedBatchNormGradV3"
    return g


def _nchw_grads(training):
    dx, ds, do = fused_grad_ref(DY, X, training)
    return [nchw(dx), ds, do]


F32 = np.float32
CASES = [
    Case("fused_batch_norm_training", ("FusedBatchNormV3",),
         lambda af: _all_outputs(af.nn.fused_batch_norm(X, SCALE, OFFSET)[0]),
         lambda: fused_train_ref(X) + [X.mean(AXES), X.var(AXES), np.zeros(0, F32)], rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_inference", ("FusedBatchNormV3",),
         lambda af: _all_outputs(af.nn.fused_batch_norm(X, SCALE, OFFSET, MEAN, VAR, epsilon=0.01,
                                                        is_training=False)[0]),
         [bn_ref(X, MEAN, VAR, OFFSET, SCALE, 0.01), MEAN, VAR, MEAN, VAR, np.zeros(0, F32)], rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_exponential_avg", ("FusedBatchNormV3",),
         lambda af: list(af.nn.fused_batch_norm(X, SCALE, OFFSET, MEAN, VAR, exponential_avg_factor=0.25)),
         lambda: fused_train_ref(X, factor=0.25, old_mean=MEAN.astype(np.float64), old_var=VAR.astype(np.float64)),
         rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_nchw", ("FusedBatchNormV3",),
         lambda af: list(af.nn.fused_batch_norm(nchw(X), SCALE, OFFSET, data_format="NCHW")),
         lambda: [nchw(fused_train_ref(X)[0])] + fused_train_ref(X)[1:], rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_nchw_inference", ("FusedBatchNormV3",),
         lambda af: af.nn.fused_batch_norm(nchw(X), SCALE, OFFSET, MEAN, VAR, data_format="NCHW",
                                           is_training=False)[0],
         nchw(bn_ref(X, MEAN, VAR, OFFSET, SCALE, 0.001)), static_shape=[2, 4, 3, 3], rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_float16", ("FusedBatchNormV3",),
         lambda af: list(af.nn.fused_batch_norm(X.astype(np.float16), SCALE, OFFSET)),
         lambda: fused_train_ref(X.astype(np.float16)), rtol=2e-3, atol=2e-3),
    Case("fused_batch_norm_ndhwc", ("FusedBatchNormV3",),
         lambda af: af.nn.fused_batch_norm(X[:, None], SCALE, OFFSET, MEAN, VAR, data_format="NDHWC",
                                           is_training=False)[0],
         bn_ref(X, MEAN, VAR, OFFSET, SCALE, 0.001)[:, None], static_shape=[2, 1, 3, 3, 4], rtol=1e-5, atol=1e-5),
    Case("fused_batch_norm_grad_training", ("FusedBatchNormGradV3",), lambda af: _grads(af, True),
         lambda: fused_grad_ref(DY, X, True), rtol=1e-4, atol=1e-5),
    Case("fused_batch_norm_grad_inference", ("FusedBatchNormGradV3",), lambda af: _grads(af, False),
         lambda: fused_grad_ref(DY, X, False), rtol=1e-4, atol=1e-5),
    Case("fused_batch_norm_grad_nchw", ("FusedBatchNormGradV3",), lambda af: _grads(af, True, "NCHW"),
         lambda: _nchw_grads(True), rtol=1e-4, atol=1e-5),
    Case("fused_batch_norm_grad_nchw_inference", ("FusedBatchNormGradV3",), lambda af: _grads(af, False, "NCHW"),
         lambda: _nchw_grads(False), rtol=1e-4, atol=1e-5),
    Case("batch_normalization", ("Rsqrt", "Mul", "Sub", "AddV2"),
         lambda af: af.nn.batch_normalization(X, MEAN, VAR, OFFSET, SCALE, 1e-3),
         bn_ref(X, MEAN, VAR, OFFSET, SCALE, 1e-3), static_shape=[2, 3, 3, 4], rtol=1e-5, atol=1e-5),
    Case("batch_normalization_float64_no_scale_offset", ("Neg",),
         lambda af: af.nn.batch_normalization(X.astype(np.float64), MEAN.astype(np.float64),
                                              VAR.astype(np.float64), None, None, 1e-3),
         bn_ref(X.astype(np.float64), MEAN, VAR, None, None, 1e-3)),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_nn_norm(case):
    check_case(case)


def test_static_shapes_and_names_as_tf():
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None, None, None, 4])
        y, m, v = af.nn.fused_batch_norm(x, SCALE, OFFSET)
        assert y.name == "FusedBatchNormV3:0" and m.name == "FusedBatchNormV3:1" and v.name == "FusedBatchNormV3:2"
        assert y.shape.as_list() == [None, None, None, 4] and m.shape.as_list() == [4]
        assert y.op.outputs[5].shape.ndims is None
        assert y.op.get_attr("epsilon") == pytest.approx(0.001) and y.op.get_attr("is_training") is True
        unknown = af.nn.fused_batch_norm(af.placeholder(af.float32), SCALE, OFFSET)[0]
        assert unknown.shape.as_list() == [None, None, None, 4]
        mean, var = af.placeholder(af.float32, [4]), af.placeholder(af.float32, [4])
        af.nn.batch_normalization(x, mean, var, OFFSET, SCALE, 1e-3)
        # TF1's expression, op for op (fold_batch_norms relied on this order).
        assert [(op.name, op.type) for op in g.get_operations() if op.name.startswith("batchnorm/")
                and op.type != "Const"] == [
            ("batchnorm/add", "AddV2"), ("batchnorm/Rsqrt", "Rsqrt"), ("batchnorm/mul", "Mul"),
            ("batchnorm/mul_1", "Mul"), ("batchnorm/mul_2", "Mul"), ("batchnorm/sub", "Sub"),
            ("batchnorm/add_1", "AddV2")]


def test_fused_batch_norm_errors():
    with af.Graph().as_default():
        with pytest.raises(TypeError, match=r"float64 not in list of allowed values: float16, bfloat16, float32"):
            af.nn.fused_batch_norm(X.astype(np.float64), SCALE, OFFSET)
        with pytest.raises(ValueError, match=r"FusedBatchNormV3 'FusedBatchNormV3(_\d+)?': Shape must be rank 4 but "
                                             r"is rank 3"):
            af.nn.fused_batch_norm(X[0], SCALE, OFFSET)
        with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 4 and 3 \(scale"):
            af.nn.fused_batch_norm(X, SCALE[:3], OFFSET)
        with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 4 and 2 \(mean"):
            af.nn.fused_batch_norm(X, SCALE, OFFSET, MEAN[:2], VAR, is_training=False)
        with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 \(scale"):
            af.nn.fused_batch_norm(X, SCALE.reshape(2, 2), OFFSET)
        with pytest.raises(ValueError, match=r"Both `mean` and `variance` must be a 1D tensor when `is_training` is "
                                             r"False or `exponential_avg_factor` != 1.0. Received: `mean` None"):
            af.nn.fused_batch_norm(X, SCALE, OFFSET, is_training=False)
        with pytest.raises(ValueError, match=r"Attr 'data_format' passed string 'NCWH' not in"):
            af.nn.fused_batch_norm(X, SCALE, OFFSET, data_format="NCWH")
        scale = af.placeholder(af.float32, [None])
        y = af.nn.fused_batch_norm(X, scale, OFFSET)[0]
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match=r"scale must be a vector of the 4 channels"):
                sess.run(y, {scale: SCALE[:3]})
