"""Batch normalization of `af.nn`, as `tf.compat.v1.nn`: `batch_normalization` (TF1's composite formula, op for
op) and `fused_batch_norm` on the FusedBatchNormV3 op, with FusedBatchNormGradV3 as its gradient.

FusedBatchNormV3 (TF's CPU kernel): in training it normalises with the batch's biased variance, returns the
batch mean and the Bessel-corrected variance (n / (n - 1)), blended into the given mean/variance when
exponential_avg_factor != 1, and keeps the batch mean and biased variance in reserve_space_1/2 for the gradient;
in inference it normalises with the given mean/variance and returns them. reserve_space_3 is empty (CPU).
The gradient follows TF's nn_grad: gradients for x, scale and offset only (None for mean and variance), and the
gradient of FusedBatchNormGradV3 is TF's `_BatchNormGrad` composite differentiated once more.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.nn_conv import widen
from asyncflow.ops.registry import BuildContext, constant, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape

_FORMATS = {"NHWC": 4, "NCHW": 4, "NDHWC": 5, "NCDHW": 5}
_TYPES = {"T": (dtypes.float16, dtypes.bfloat16, dtypes.float32), "U": (dtypes.float32,)}


def _channel_axis(data_format: str) -> int:
    return 1 if data_format.startswith("NC") else _FORMATS[data_format] - 1


# -- batch_normalization ------------------------------------------------------------------------------------
def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any, variance_epsilon: Any,
                        name: str | None = None) -> Tensor:
    """`af.nn.batch_normalization`: scale * (x - mean) / sqrt(variance + epsilon) + offset, written as TF1 does
    (x * inv + (offset - mean * inv) with inv = rsqrt(variance + epsilon) * scale), so the graph is TF's."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = math.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        x = convert_to_tensor(x)
        # Evaluated left to right as TF's one expression, so the ops get TF's names (mul_1 is x * inv).
        return x * math.cast(inv, x.dtype.base_dtype) + math.cast(
            offset - mean * inv if offset is not None else -mean * inv, x.dtype.base_dtype)


# -- FusedBatchNormV3 -----------------------------------------------------------------------------------------
def _rank_error(b: BuildContext, i: int, arg: str, want: int) -> ValueError:
    return b.error(f"Shape must be rank {want} but is rank {b.shape(i).ndims} ({arg} has shape {b.shape(i)})")


def _merge_channels(b: BuildContext, depth: Any, args: tuple[tuple[int, str], ...]) -> Any:
    """The channel count, merged (TF's shape function) with each 1-D argument's length."""
    for i, arg in args:
        s = b.shape(i)
        if s.ndims is not None and s.ndims != 1:
            raise _rank_error(b, i, arg, 1)
        n = s[0].value if s.ndims == 1 else None
        if n is not None and depth is not None and n != depth:
            raise b.error(f"Dimensions must be equal, but are {depth} and {n} ({arg} has shape {s}, x has that "
                          f"many channels)")
        depth = depth if depth is not None else n
    return depth


def _check_format(b: BuildContext, i: int, arg: str) -> tuple[TensorShape, int]:
    fmt = b.attrs["data_format"]
    if fmt not in _FORMATS:
        raise b.error(f"Attr 'data_format' passed string {fmt!r} not in: \"NHWC\", \"NCHW\", \"NDHWC\", \"NCDHW\".")
    x, rank = b.shape(i), _FORMATS[fmt]
    if x.ndims is not None and x.ndims != rank:
        raise _rank_error(b, i, arg, rank)
    return (x if x.ndims is not None else unknown_shape(rank)), _channel_axis(fmt)


def _fused_batch_norm_shape(b: BuildContext) -> list[TensorShape]:
    x, c = _check_format(b, 0, "x")
    args: tuple[tuple[int, str], ...] = ((1, "scale"), (2, "offset"))
    if not b.attrs["is_training"] or b.attrs["exponential_avg_factor"] != 1.0:
        args += ((3, "mean"), (4, "variance"))
    depth = _merge_channels(b, x[c].value, args)
    dims = list(x.dims)
    dims[c] = depth
    vector = TensorShape([depth])
    return [TensorShape(dims), vector, vector, vector, vector, unknown_shape()]


_BN_ATTRS = {"epsilon": 0.0001, "data_format": "NHWC", "is_training": True}


@op("FusedBatchNormV3", inputs="x: T, scale: U, offset: U, mean: U, variance: U",
    outputs="y: T, batch_mean: U, batch_variance: U, reserve_space_1: U, reserve_space_2: U, reserve_space_3: U",
    types=_TYPES, type_defaults={"U": dtypes.float32}, attrs={**_BN_ATTRS, "exponential_avg_factor": 1.0},
    shape=_fused_batch_norm_shape)
def fused_batch_norm_op(k, x, scale, offset, mean, variance):
    c = _channel_axis(k.data_format)
    xc = np.moveaxis(widen(x), c, -1).astype(np.float64)  # channels last; float64 so the sums round once
    depth = xc.shape[-1]
    vectors = {"scale": scale, "offset": offset}
    if not k.is_training or k.exponential_avg_factor != 1.0:
        vectors.update(mean=mean, variance=variance)
    for arg, v in vectors.items():
        if np.shape(v) != (depth,):
            raise ValueError(f"FusedBatchNormV3 '{k.name}': {arg} must be a vector of the {depth} channels of x, "
                             f"got shape {list(np.shape(v))}")
    if k.is_training:
        axes = tuple(range(xc.ndim - 1))
        n = xc.size // max(depth, 1)
        batch_mean = xc.mean(axes)
        batch_var = np.square(xc - batch_mean).mean(axes)
        corrected = batch_var * (n / (n - 1) if n > 1 else 1.0)
        f = float(k.exponential_avg_factor)
        if f == 1.0:
            out_mean, out_var = batch_mean, corrected
        else:
            out_mean = (1 - f) * np.asarray(mean, np.float64) + f * batch_mean
            out_var = (1 - f) * np.asarray(variance, np.float64) + f * corrected
        use_mean, use_var = batch_mean, batch_var
        saved_mean, saved_var = batch_mean, batch_var
    else:
        use_mean, use_var = np.asarray(mean, np.float64), np.asarray(variance, np.float64)
        out_mean = saved_mean = use_mean
        out_var = saved_var = use_var
    y = (xc - use_mean) / np.sqrt(use_var + k.epsilon) * np.asarray(scale, np.float64) + np.asarray(offset)
    y = np.moveaxis(y, -1, c).astype(k.out_dtypes[0])
    u = np.float32
    return (y, out_mean.astype(u), out_var.astype(u), saved_mean.astype(u), saved_var.astype(u), np.zeros(0, u))


@fused_batch_norm_op.gradient
def _fused_batch_norm_grad(op_: Operation, grad_y: Tensor, *_unused: Any) -> list[Any]:
    x, scale = op_.inputs[0], op_.inputs[1]
    attrs = {name: op_.get_attr(name) for name in _BN_ATTRS}
    if attrs["is_training"]:
        saved = op_.outputs[3], op_.outputs[4]
    else:
        saved = op_.inputs[3], op_.inputs[4]
    dx, dscale, doffset, _, _ = fused_batch_norm_grad_op(grad_y, x, scale, saved[0], saved[1], op_.outputs[5],
                                                         **attrs)
    return [dx, dscale, doffset, None, None]


# -- FusedBatchNormGradV3 -------------------------------------------------------------------------------------
def _fused_batch_norm_grad_shape(b: BuildContext) -> list[TensorShape]:
    dy, c = _check_format(b, 0, "y_backprop")
    x, _ = _check_format(b, 1, "x")
    try:
        x = x.merge_with(dy)
    except ValueError:
        raise b.error(f"y_backprop {dy} and x {x} must have the same shape") from None
    depth = _merge_channels(b, x[c].value, ((2, "scale"), (3, "reserve_space_1"), (4, "reserve_space_2")))
    dims = list(x.dims)
    dims[c] = depth
    return [TensorShape(dims), TensorShape([depth]), TensorShape([depth]), TensorShape([0]), TensorShape([0])]


@op("FusedBatchNormGradV3",
    inputs="y_backprop: T, x: T, scale: float32, reserve_space_1: U, reserve_space_2: U, reserve_space_3: U",
    outputs="x_backprop: T, scale_backprop: U, offset_backprop: U, reserve_space_4: U, reserve_space_5: U",
    types=_TYPES, type_defaults={"U": dtypes.float32}, attrs=dict(_BN_ATTRS), shape=_fused_batch_norm_grad_shape)
def fused_batch_norm_grad_op(k, y_backprop, x, scale, reserve_space_1, reserve_space_2, reserve_space_3):
    c = _channel_axis(k.data_format)
    xc = np.moveaxis(widen(x), c, -1).astype(np.float64)
    dy = np.moveaxis(widen(y_backprop), c, -1).astype(np.float64)
    depth = xc.shape[-1]
    if dy.shape != xc.shape:
        raise ValueError(f"FusedBatchNormGradV3 '{k.name}': y_backprop and x must have the same shape, got "
                         f"{list(np.shape(y_backprop))} and {list(np.shape(x))}")
    for arg, v in (("scale", scale), ("reserve_space_1", reserve_space_1), ("reserve_space_2", reserve_space_2)):
        if np.shape(v) != (depth,):
            raise ValueError(f"FusedBatchNormGradV3 '{k.name}': {arg} must be a vector of the {depth} channels "
                             f"of x, got shape {list(np.shape(v))}")
    mean, var = np.asarray(reserve_space_1, np.float64), np.asarray(reserve_space_2, np.float64)
    axes = tuple(range(xc.ndim - 1))
    inv = 1 / np.sqrt(var + k.epsilon)
    centered = xc - mean
    dscale = (dy * centered).sum(axes) * inv
    doffset = dy.sum(axes)
    if k.is_training:  # mean and variance are functions of x too
        dx = np.asarray(scale, np.float64) * inv * (dy - dy.mean(axes) - centered * (dy * centered).mean(axes)
                                                    * inv * inv)
    else:
        dx = dy * np.asarray(scale, np.float64) * inv
    u = np.float32
    return (np.moveaxis(dx, -1, c).astype(k.out_dtypes[0]), dscale.astype(u), doffset.astype(u), np.zeros(0, u),
            np.zeros(0, u))


def _batch_norm_grad(grad_y: Tensor, x: Tensor, scale: Tensor, mean: Tensor, variance: Tensor, epsilon: float,
                     data_format: str, is_training: bool) -> tuple[Tensor, Tensor, Tensor]:
    """TF's `_BatchNormGrad`: FusedBatchNormGradV3's arithmetic as a composite (in float32), to differentiate."""
    x_dtype = x.dtype.base_dtype
    if x_dtype != dtypes.float32:
        grad_y, x = math.cast(grad_y, dtypes.float32), math.cast(x, dtypes.float32)
    c = _channel_axis(data_format)
    rank = _FORMATS[data_format]
    axes = [i for i in range(rank) if i != c]
    if c != rank - 1:  # per-channel vectors broadcast along axis 1
        shape = [1] * rank
        shape[c] = -1
        scale, mean, variance = (array.reshape(v, shape) for v in (scale, mean, variance))
    if is_training:
        mean_grad_y = math.reduce_mean(grad_y, axes, keepdims=True)
        mean_x = math.reduce_mean(x, axes, keepdims=True)
        var_x = math.reduce_mean(math.squared_difference(x, array.stop_gradient(mean_x)), axes, keepdims=True)
        x_offset = x - mean_x
        mean = math.reduce_mean(grad_y * x_offset, axes, keepdims=True)
        grad_x = scale * math.rsqrt(var_x + epsilon) * (grad_y - mean_grad_y - math.reciprocal(var_x + epsilon)
                                                         * mean * x_offset)
        grad_scale = math.rsqrt(var_x + epsilon) * math.reduce_sum(grad_y * x_offset, axes, keepdims=True)
    else:
        var_rsqrt = math.rsqrt(variance + epsilon)
        grad_x = grad_y * scale * var_rsqrt
        grad_scale = math.reduce_sum(grad_y * (x - mean) * var_rsqrt, axes, keepdims=True)
    grad_offset = math.reduce_sum(grad_y, axes)
    return math.cast(grad_x, x_dtype), array.reshape(grad_scale, [-1]), grad_offset


@fused_batch_norm_grad_op.gradient
def _fused_batch_norm_grad_grad(op_: Operation, grad_grad_x: Tensor, grad_grad_scale: Tensor,
                                grad_grad_offset: Tensor, *_unused: Any) -> list[Any]:
    from asyncflow.gradients import gradients

    # Fresh copies, so the inner gradients stop at them (as TF's GradientTape, which sees only what it records)
    # and the outer driver carries d/d grad_y, d/d x and d/d scale on through the ops that made them.
    grad_y, x, scale = (array.identity(t) for t in op_.inputs[:3])
    mean, variance = op_.inputs[3:5]
    grads = _batch_norm_grad(grad_y, x, scale, mean, variance, op_.get_attr("epsilon"),
                             op_.get_attr("data_format"), op_.get_attr("is_training"))
    dgrad_y, dx, dscale = gradients(list(grads), [grad_y, x, scale],
                                    grad_ys=[grad_grad_x, grad_grad_scale, grad_grad_offset])
    return [dgrad_y, dx, dscale, None, None, None]


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: str | None = None, exponential_avg_factor: float = 1.0) -> tuple[Tensor, Tensor, Tensor]:
    """`af.nn.fused_batch_norm`: (y, mean, variance) of one FusedBatchNormV3 op (see the module docstring)."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError(f"Both `mean` and `variance` must be a 1D tensor when `is_training` is False or "
                         f"`exponential_avg_factor` != 1.0. Received: `mean` {mean!r} and `variance` {variance!r}")
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    offset = convert_to_tensor(offset, name="offset")
    if mean is None:
        mean = constant(np.zeros(0, np.float32))
    if variance is None:
        variance = constant(np.zeros(0, np.float32))
    y, batch_mean, batch_var, _, _, _ = fused_batch_norm_op(
        x, scale, offset, mean, variance, epsilon=float(epsilon), exponential_avg_factor=float(exponential_avg_factor),
        data_format=data_format, is_training=bool(is_training), name=name)
    return y, batch_mean, batch_var


__all__ = ["batch_normalization", "fused_batch_norm"]
