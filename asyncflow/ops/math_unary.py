"""Elementwise unary math ops (Neg, Exp, Tanh, ..., Conj, ComplexAbs), each with its TF gradient, and
TF's fused TanhGrad/SigmoidGrad that the Tanh and Sigmoid gradients build.

Declared with `asyncflow.ops.math._unary` and re-exported by `asyncflow.ops.math`, whose public
functions (`af.exp`, `af.abs`, ...) build them. Gradients follow TF's math_grad.py rule by rule;
for complex inputs they use the conjugate, as TF does, and the rules that TF writes in terms of
the output (Exp, Sqrt, Rsqrt, Reciprocal, Tanh, Sigmoid) read y from op.outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.ops.kernel_util import as_out
from asyncflow.ops.math import (
    _LOW_PRECISION,
    COMPLEX,
    FLOAT_SIGNED,
    FLOAT_SIGNED_COMPLEX,
    Equal,
    _unary,
)
from asyncflow.ops.registry import FLOAT, FLOAT_COMPLEX, NUMERIC, op
from asyncflow.ops.shape_fns import same_as_input


def _conj(x: Tensor) -> Tensor:
    """The conjugate for complex tensors, `x` itself otherwise (what TF's gradients apply to every input)."""
    return Conj(x) if x.dtype.is_complex else x


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))  # exp overflow gives 0, as TF; errstate silences it


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x) + 0  # +0 turns numpy's sign(-0.0) = -0.0 into TF's 0.0


Neg = _unary("Neg", np.negative, FLOAT_SIGNED_COMPLEX)


@Neg.gradient
def _neg_grad(op: Any, grad: Tensor) -> Tensor:
    return -grad


Abs = _unary("Abs", np.abs, FLOAT_SIGNED)


@Abs.gradient
def _abs_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Sign(op.inputs[0])


Sign = _unary("Sign", _sign, FLOAT_SIGNED_COMPLEX)


@Sign.gradient
def _sign_grad(op: Any, grad: Tensor) -> Tensor:
    from asyncflow.ops.array import zeros_like

    return zeros_like(op.inputs[0])  # TF's rule: zeros (not None), so the input still counts as connected


Square = _unary("Square", np.square, NUMERIC)


@Square.gradient
def _square_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * (_conj(op.inputs[0]) * 2)


Sqrt = _unary("Sqrt", np.sqrt, FLOAT_COMPLEX, upcast=True)


@Sqrt.gradient
def _sqrt_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * 0.5 / _conj(op.outputs[0])


Rsqrt = _unary("Rsqrt", lambda x: 1 / np.sqrt(x), FLOAT_COMPLEX, upcast=True)


@Rsqrt.gradient
def _rsqrt_grad(op: Any, grad: Tensor) -> Tensor:
    y = _conj(op.outputs[0])
    return grad * -0.5 * (y * y * y)


Reciprocal = _unary("Reciprocal", lambda x: 1 / x, FLOAT_COMPLEX)  # TF has no CPU kernel for ints


@Reciprocal.gradient
def _reciprocal_grad(op: Any, grad: Tensor) -> Tensor:
    y = _conj(op.outputs[0])
    return -grad * (y * y)


Exp = _unary("Exp", np.exp, FLOAT_COMPLEX, upcast=True)


@Exp.gradient
def _exp_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * _conj(op.outputs[0])


Log = _unary("Log", np.log, FLOAT_COMPLEX, upcast=True)


@Log.gradient
def _log_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Reciprocal(_conj(op.inputs[0]))


Log1p = _unary("Log1p", np.log1p, FLOAT_COMPLEX, upcast=True)


@Log1p.gradient
def _log1p_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Reciprocal(1 + _conj(op.inputs[0]))


Sin = _unary("Sin", np.sin, FLOAT_COMPLEX, upcast=True)


@Sin.gradient
def _sin_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Cos(_conj(op.inputs[0]))


Cos = _unary("Cos", np.cos, FLOAT_COMPLEX, upcast=True)


@Cos.gradient
def _cos_grad(op: Any, grad: Tensor) -> Tensor:
    return -grad * Sin(_conj(op.inputs[0]))


Tanh = _unary("Tanh", np.tanh, FLOAT_COMPLEX, upcast=True)


@Tanh.gradient
def _tanh_grad(op: Any, grad: Tensor) -> Tensor:
    return TanhGrad(_conj(op.outputs[0]), grad)


Sigmoid = _unary("Sigmoid", _sigmoid, FLOAT_COMPLEX, upcast=True)


@Sigmoid.gradient
def _sigmoid_grad(op: Any, grad: Tensor) -> Tensor:
    return SigmoidGrad(_conj(op.outputs[0]), grad)


# -- TF's fused gradients of Tanh and Sigmoid, in terms of the output y: one kernel instead of three ops -----
def _merged_shape(b: Any) -> Any:
    """TF's MergeBothInputsShapeFn: y and dy have one shape."""
    try:
        return b.shape(0).merge_with(b.shape(1))
    except ValueError:
        raise b.error(f"Shapes {b.shape(0)} and {b.shape(1)} are not compatible (y and dy)") from None


def _fused_grad(k: Any, y: np.ndarray, dy: np.ndarray, fn: Any) -> np.ndarray:
    if y.dtype in _LOW_PRECISION:  # computed in float32, rounded once, as the other low-precision kernels
        y, dy = y.astype(np.float32), dy.astype(np.float32)
    if y.shape != dy.shape:
        raise ValueError(f"{k.op_type} '{k.name}': y and dy must have one shape, got {list(y.shape)} and "
                         f"{list(dy.shape)}")
    return as_out(fn(y, dy), k.out_dtypes[0])  # the executor runs kernels with numpy's warnings off


# One temporary, updated in place (a 0-d product is a numpy scalar, which has no buffer to write to).
def _tanh_grad_fn(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    if y.ndim == 0:
        return dy * (1 - y * y)
    out = y * y
    np.subtract(1, out, out=out)
    return np.multiply(out, dy, out=out)


def _sigmoid_grad_fn(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    if y.ndim == 0:
        return dy * (y * (1 - y))
    out = 1 - y
    np.multiply(out, y, out=out)
    return np.multiply(out, dy, out=out)


@op("TanhGrad", inputs="y: T, dy: T", outputs="z: T", types={"T": FLOAT_COMPLEX}, shape=_merged_shape)
def TanhGrad(k, y, dy):
    """dy * (1 - y * y)."""
    return _fused_grad(k, y, dy, _tanh_grad_fn)


@TanhGrad.gradient
def _tanh_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """TF's _TanhGradGrad: d/dy = -2 grad dy y, d/ddy = TanhGrad(y, grad) (conjugates for complex)."""
    y, dy = _conj(op.inputs[0]), _conj(op.inputs[1])
    return [grad * -2.0 * dy * y, TanhGrad(y, grad)]


@op("SigmoidGrad", inputs="y: T, dy: T", outputs="z: T", types={"T": FLOAT_COMPLEX}, shape=_merged_shape)
def SigmoidGrad(k, y, dy):
    """dy * y * (1 - y)."""
    return _fused_grad(k, y, dy, _sigmoid_grad_fn)


@SigmoidGrad.gradient
def _sigmoid_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """TF's _SigmoidGradGrad: d/dy = grad dy (1 - 2 y), d/ddy = SigmoidGrad(y, grad) (conjugates for complex)."""
    y, dy = _conj(op.inputs[0]), _conj(op.inputs[1])
    gb = grad * dy
    return [gb - 2.0 * gb * y, SigmoidGrad(y, grad)]


# TF's gradients of Floor, Ceil and Round are None: not differentiable here.
Floor = _unary("Floor", np.floor, FLOAT, differentiable=False)
Ceil = _unary("Ceil", np.ceil, FLOAT, differentiable=False)
Round = _unary("Round", np.round, FLOAT_SIGNED_COMPLEX, differentiable=False)  # half to even, as TF
IsNan = _unary("IsNan", np.isnan, FLOAT, out="bool", differentiable=False)
IsInf = _unary("IsInf", np.isinf, FLOAT, out="bool", differentiable=False)
IsFinite = _unary("IsFinite", np.isfinite, FLOAT, out="bool", differentiable=False)


@op("Conj", inputs="input: T", outputs="output: T", types={"T": COMPLEX}, shape=same_as_input,
    type_defaults={"T": dtypes.complex64})
def Conj(k, x):
    return np.conj(x)


@Conj.gradient
def _conj_grad(op: Any, grad: Tensor) -> Tensor:
    return Conj(grad)


@op("ComplexAbs", inputs="x: T", outputs="y: Tout", shape=same_as_input,
    types={"T": COMPLEX, "Tout": (dtypes.float32, dtypes.float64)}, type_defaults={"Tout": dtypes.float32})
def ComplexAbs(k, x):
    return as_out(np.abs(x), k.out_dtypes[0])


@ComplexAbs.gradient
def _complex_abs_grad(op: Any, grad: Tensor) -> Tensor:
    """grad * x / |x|, and 0 where |x| = 0 (TF's div_no_nan)."""
    from asyncflow.ops.array import zeros_like
    from asyncflow.ops.math import cast
    from asyncflow.ops.math_reduce import where

    x, y = op.inputs[0], op.outputs[0]
    complex_type = x.dtype.base_dtype
    zero = Equal(y, 0)
    safe_y = where(zero, zeros_like(y) + 1, y)
    ratio = cast(grad, complex_type) * x / cast(safe_y, complex_type)
    return where(zero, zeros_like(ratio), ratio)
