"""Finite-difference rows for batch normalization: FusedBatchNormV3 in training (the batch statistics depend on
x) and inference (given mean/variance; TF gives them no gradient), NCHW, exponential averaging, and
FusedBatchNormGradV3 (second derivatives, TF's `_BatchNormGrad` composite); batch_normalization's composite.

FusedBatchNormV3 has no float64 kernel (as TF), so its rows run in float32 with a larger step and tolerance.
"""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(8)
X = RNG.randn(2, 2, 3, 3).astype(np.float32)
SCALE = (RNG.rand(3) + 0.5).astype(np.float32)
OFFSET = RNG.randn(3).astype(np.float32)
MEAN = (RNG.randn(3) * 0.3).astype(np.float32)
VAR = (RNG.rand(3) + 0.5).astype(np.float32)
F32 = {"eps": 1e-2, "rtol": 2e-3, "atol": 2e-3}


def _train(af, x, s, o):
    return af.nn.fused_batch_norm(x, s, o)[0]


def _infer(af, x, s, o):
    return af.nn.fused_batch_norm(x, s, o, MEAN, VAR, epsilon=0.01, is_training=False)[0]


def _nchw(training):
    def build(af, x, s, o):
        xt = af.transpose(x, [0, 3, 1, 2])
        if training:
            return af.nn.fused_batch_norm(xt, s, o, data_format="NCHW")[0]
        return af.nn.fused_batch_norm(xt, s, o, MEAN, VAR, data_format="NCHW", is_training=False)[0]
    return build


def _second(training):
    """Outputs of FusedBatchNormGradV3 (via af.gradients), so the row differentiates that op."""
    dy = RNG.randn(*X.shape).astype(np.float32)

    def build(af, x, s, o):
        y = (_train if training else _infer)(af, x, s, o)
        return af.gradients(y, [x, s, o], grad_ys=dy * af.sin(x))
    return build


CASES = [
    GradCase("fused_batch_norm_training", ("FusedBatchNormV3",), _train, [X, SCALE, OFFSET], **F32),
    GradCase("fused_batch_norm_inference", ("FusedBatchNormV3",), _infer, [X, SCALE, OFFSET], **F32),
    GradCase("fused_batch_norm_nchw_training", ("FusedBatchNormV3",), _nchw(True), [X, SCALE, OFFSET], **F32),
    GradCase("fused_batch_norm_nchw_inference", ("FusedBatchNormV3",), _nchw(False), [X, SCALE, OFFSET], **F32),
    GradCase("fused_batch_norm_exponential_avg", ("FusedBatchNormV3",),
             lambda af, x, s, o: af.nn.fused_batch_norm(x, s, o, MEAN, VAR, exponential_avg_factor=0.5)[0],
             [X, SCALE, OFFSET], **F32),
    GradCase("fused_batch_norm_grad_training", ("FusedBatchNormGradV3",), _second(True), [X, SCALE, OFFSET],
             wrt=(0, 1), **F32),
    GradCase("fused_batch_norm_grad_inference", ("FusedBatchNormGradV3",), _second(False), [X, SCALE, OFFSET],
             wrt=(0, 1), **F32),
    GradCase("batch_normalization", ("Rsqrt",),
             lambda af, x, m, v, o, s: af.nn.batch_normalization(x, m, v, o, s, 1e-3),
             [X.astype(np.float64), MEAN.astype(np.float64), VAR.astype(np.float64), OFFSET.astype(np.float64),
              SCALE.astype(np.float64)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
