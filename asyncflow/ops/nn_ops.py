"""Neural-network ops (`af.nn`, as `tf.compat.v1.nn`): activations, softmax, `l2_loss`, `bias_add`,
`dropout` and `moments`, each op with its gradient (TF's rules, built from math and array ops).

Convolution and pooling live in `nn_conv.py`, the cross-entropy losses in `nn_losses.py`,
`embedding_lookup` in `nn_embedding.py`; this module re-exports them so that `af.nn.*` is one
namespace. Kernels of the 16-bit float types compute in float32 and round once at the end.
Composites (`dropout`, `moments`, and in `nn_losses` the losses' reshapes and
`sigmoid_cross_entropy_with_logits`) are built from the ops TF1 builds, under the same names, so
that they get their gradients from those ops; ops declared in the math and array modules are
looked up by their TF type when the composite is built.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops import random as random_ops
from asyncflow.ops.math import sigmoid, tanh  # af.nn.sigmoid is af.sigmoid, as in TF
from asyncflow.ops.nn_conv import avg_pool, conv2d, max_pool
from asyncflow.ops.nn_conv import widen as _wide
from asyncflow.ops.nn_embedding import embedding_lookup
from asyncflow.ops.registry import (
    FLOAT,
    NUMERIC,
    OPS,
    REAL,
    BuildContext,
    constant,
    convert_to_tensor,
    needed_op,
    op,
)
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.shapes import TensorShape, as_shape, unknown_shape

_op = needed_op  # ops of other modules, looked up when a composite is built


# -- activations -------------------------------------------------------------------------------------
def _activation(op_type: str, fn: Any, types: tuple, attrs: dict | None = None) -> Any:
    """Declares an elementwise activation `y = fn(k, x)` over input `features`."""

    def kernel(k, features):
        return np.asarray(fn(k, _wide(features))).astype(k.out_dtypes[0], copy=False)

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="features: T", outputs="activations: T", types={"T": types}, attrs=attrs,
              shape=same_as_input)(kernel)


def _dense(grad: Any) -> Tensor:
    """A gradient as a dense tensor (an `IndexedSlices` reaching a dense op is summed into place)."""
    return convert_to_tensor(grad)


def _mask(condition: Tensor, like: Tensor) -> Tensor:
    """1 where `condition` holds, else 0, in `like`'s dtype: TF's *Grad kernels multiply by it (NaN stays NaN)."""
    return math.cast(condition, like.dtype.base_dtype)


Relu = _activation("Relu", lambda k, x: np.maximum(x, x.dtype.type(0)), REAL)


@Relu.gradient
def _relu_grad(op: Operation, grad: Any) -> Tensor:
    """TF's ReluGrad on the output: the gradient passes where relu(x) > 0."""
    grad = _dense(grad)
    return grad * _mask(op.outputs[0] > 0, grad)


Relu6 = _activation("Relu6", lambda k, x: np.clip(x, x.dtype.type(0), x.dtype.type(6)), REAL)


@Relu6.gradient
def _relu6_grad(op: Operation, grad: Any) -> Tensor:
    """TF's Relu6Grad on the output: the gradient passes where 0 < relu6(x) < 6."""
    grad, y = _dense(grad), op.outputs[0]
    return grad * _mask(math.logical_and(y > 0, y < 6), grad)


Elu = _activation("Elu", lambda k, x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), FLOAT)


@Elu.gradient
def _elu_grad(op: Operation, grad: Any) -> Tensor:
    """TF's EluGrad on the output y: grad * (y + 1) where y < 0, else grad."""
    grad, y = _dense(grad), op.outputs[0]
    return _op("Select")(y < 0, grad * (y + 1), grad)


# log(1 + exp(x)) without overflow for large x or underflow to 0 for very negative x.
Softplus = _activation("Softplus", lambda k, x: np.logaddexp(x.dtype.type(0), x), FLOAT)


@Softplus.gradient
def _softplus_grad(op: Operation, grad: Any) -> Tensor:
    return _dense(grad) * sigmoid(op.inputs[0])


LeakyRelu = _activation("LeakyRelu", lambda k, x: np.where(x > 0, x, x * x.dtype.type(k.alpha)), FLOAT,
                        attrs={"alpha": 0.2})


@LeakyRelu.gradient
def _leaky_relu_grad(op: Operation, grad: Any) -> Tensor:
    """TF's LeakyReluGrad on the input: grad where x > 0, else alpha * grad."""
    grad, x = _dense(grad), op.inputs[0]
    alpha = constant(op.get_attr("alpha"), dtype=grad.dtype.base_dtype, name="alpha")
    return _op("Select")(x > 0, grad, grad * alpha)


def relu(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.relu`: max(features, 0)."""
    return Relu(features, name=name)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.relu6`: min(max(features, 0), 6)."""
    with name_scope(name, "Relu6", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return Relu6(features, name=scope)


def elu(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.elu`: features if > 0 else exp(features) - 1."""
    return Elu(features, name=name)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.softplus`: log(exp(features) + 1), computed stably."""
    return Softplus(features, name=name)


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """`af.nn.leaky_relu`: features if > 0 else alpha * features (integer inputs are cast to float32)."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math.cast(features, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return LeakyRelu(features, alpha=float(alpha), name=scope)


# -- softmax ---------------------------------------------------------------------------------------------
def _at_least_rank(n: int, arg: str = "logits") -> Any:
    def shape_fn(b: BuildContext) -> TensorShape:
        s = b.shape(0)
        if s.ndims is not None and s.ndims < n:
            raise b.error(f"Shape must be at least rank {n} but is rank {s.ndims} ({arg} has shape {s})")
        return s

    return shape_fn


def _softmax_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x - max, log(sum(exp(x - max)))) over the last axis: the stable pieces of (log-)softmax.

    A row of -inf gives NaN, as in TF, without numpy's warnings; an empty class axis is allowed.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        shifted = x - np.max(x, axis=-1, keepdims=True, initial=-np.inf)
        return shifted, np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


@op("Softmax", inputs="logits: T", outputs="softmax: T", types={"T": FLOAT}, shape=_at_least_rank(1))
def softmax_op(k, logits):
    shifted, log_sum = _softmax_rows(_wide(logits))
    return np.exp(shifted - log_sum).astype(k.out_dtypes[0], copy=False)


@softmax_op.gradient
def _softmax_grad(op: Operation, grad: Any) -> Tensor:
    """(grad - sum(grad * y, -1)) * y, with y the softmax (TF's rule)."""
    grad, y = _dense(grad), op.outputs[0]
    return (grad - math.reduce_sum(grad * y, -1, keepdims=True)) * y


@op("LogSoftmax", inputs="logits: T", outputs="logsoftmax: T", types={"T": FLOAT}, shape=_at_least_rank(1))
def log_softmax_op(k, logits):
    shifted, log_sum = _softmax_rows(_wide(logits))
    return (shifted - log_sum).astype(k.out_dtypes[0], copy=False)


@log_softmax_op.gradient
def _log_softmax_grad(op: Operation, grad: Any) -> Tensor:
    """grad - sum(grad, -1) * softmax, the softmax being exp of the output (TF's rule)."""
    grad = _dense(grad)
    return grad - math.reduce_sum(grad, -1, keepdims=True) * _op("Exp")(op.outputs[0])


def _swap_last(x: Tensor, axis: int, name: str | None = None) -> Tensor:
    perm = list(range(x.shape.ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array.transpose(x, np.array(perm, np.int32), name=name or "transpose")


def _wrap_2d_function(inputs: Any, compute_op: Any, axis: Any, name: str | None) -> Tensor:
    """Applies a last-axis op along `axis`, moving that axis last and back as TF does."""
    inputs = convert_to_tensor(inputs)
    shape = inputs.shape
    if axis == -1 or (shape.ndims is not None and axis == shape.ndims - 1):
        return compute_op(inputs, name=name)
    if isinstance(axis, Tensor) or shape.ndims is None:
        raise NotImplementedError("softmax along a non-last axis needs a Python int axis and a known rank")
    if not -shape.ndims <= axis < shape.ndims:
        raise errors.InvalidArgumentError(
            None, None, f"`dim` must be in the range [{-shape.ndims}, {shape.ndims}) where {shape.ndims} is "
                        f"the number of dimensions in the input. Received: dim={axis}")
    axis %= shape.ndims
    outputs = _swap_last(compute_op(_swap_last(inputs, axis)), axis, name=name)
    outputs.set_shape(shape)
    return outputs


def _axis_arg(axis: Any, dim: Any) -> Any:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    return -1 if axis is None else axis


def softmax(logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None) -> Tensor:
    """`af.nn.softmax`: exp(logits) / sum(exp(logits), axis), stable for large logits."""
    return _wrap_2d_function(logits, softmax_op, _axis_arg(axis, dim), name)


def log_softmax(logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None) -> Tensor:
    """`af.nn.log_softmax`: logits - log(sum(exp(logits), axis))."""
    return _wrap_2d_function(logits, log_softmax_op, _axis_arg(axis, dim), name)


# -- l2_loss, bias_add -------------------------------------------------------------------------------------
@op("L2Loss", inputs="t: T", outputs="output: T", types={"T": FLOAT}, shape=lambda b: TensorShape([]))
def l2_loss_op(k, t):
    t = _wide(t)
    return k.out_dtypes[0](np.sum(t * t) / 2)


@l2_loss_op.gradient
def _l2_loss_grad(op: Operation, grad: Any) -> Tensor:
    return op.inputs[0] * _dense(grad)


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """`af.nn.l2_loss`: sum(t ** 2) / 2."""
    return l2_loss_op(t, name=name)


def _bias_add_shape(b: BuildContext) -> TensorShape:
    value, bias = b.shape(0), b.shape(1)
    nchw = b.attrs["data_format"] == "NCHW"
    if bias.ndims is not None and bias.ndims != 1:
        raise b.error(f"Shape must be rank 1 but is rank {bias.ndims} (bias has shape {bias})")
    if value.ndims is None:
        return unknown_shape()
    least = 3 if nchw else 2
    if value.ndims < least:
        raise b.error(f"Shape must be at least rank {least} but is rank {value.ndims} (value has shape {value})")
    channel = 1 if nchw else -1
    if not value[channel].is_compatible_with(bias[0] if bias.ndims else None):
        raise b.error(f"Dimensions must be equal, but are {value[channel].value} and {bias[0].value}: bias of "
                      f"shape {bias} for value of shape {value} ({b.attrs['data_format']})")
    dims = value.dims
    dims[channel] = dims[channel].merge_with(bias[0]) if bias.ndims else dims[channel]
    return TensorShape(dims)


@op("BiasAdd", inputs="value: T, bias: T", outputs="output: T", types={"T": NUMERIC},
    attrs={"data_format": "NHWC"}, shape=_bias_add_shape)
def bias_add_op(k, value, bias):
    value, bias = np.asarray(value), np.asarray(bias)
    channel = 1 if k.data_format == "NCHW" else value.ndim - 1
    if bias.ndim != 1 or value.ndim < 2 or value.shape[channel] != bias.shape[0]:
        raise ValueError(f"BiasAdd '{k.name}': bias must be 1-D with as many elements as the value's channel "
                         f"dimension, got value shape {list(value.shape)} and bias shape {list(bias.shape)}")
    if channel != value.ndim - 1:
        bias = bias.reshape((-1,) + (1,) * (value.ndim - channel - 1))
    return value + bias


@bias_add_op.gradient
def _bias_add_grad(op: Operation, grad: Any) -> list[Tensor]:
    """The value gets the gradient; the bias gets it summed over every axis but the channel one (TF's BiasAddGrad)."""
    grad = _dense(grad)
    nchw = op.get_attr("data_format") == "NCHW"
    rank = grad.shape.ndims
    if rank is not None:
        axes: Any = [a for a in range(rank) if a != (1 if nchw else rank - 1)]
    elif nchw:
        axes = array.concat([constant(np.array([0], np.int32)), math.range(2, array.rank(grad))], 0)
    else:
        axes = math.range(0, array.rank(grad) - 1)
    return [grad, math.reduce_sum(grad, axes)]


def bias_add(value: Any, bias: Any, data_format: str | None = None, name: str | None = None) -> Tensor:
    """`af.nn.bias_add`: `value + bias` along the channel dimension (last for NHWC, 1 for NCHW)."""
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError(f"`data_format` must be of the form `N...C` or `NC...`. Received: "
                                 f"data_format={data_format}")
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype.base_dtype, name="bias")
        return bias_add_op(value, bias, data_format=data_format or "NHWC", name=scope)


# -- dropout, moments ---------------------------------------------------------------------------------------
def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """TF's `_get_noise_shape`: None -> shape(x); unknown entries of a static noise shape taken from x."""
    if noise_shape is None:
        if x.shape.is_fully_defined():
            return constant(np.array(x.shape.as_list(), np.int32), name="Shape")
        return array.shape(x)
    try:
        wanted = as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.ndims is not None and x.shape.ndims == wanted.ndims:
        return [n.value if n.value is not None or d.value is None else d.value
                for d, n in zip(x.shape.dims, wanted.dims)]
    return noise_shape


def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None, rate: Any = None) -> Tensor:
    """`af.nn.dropout` (TF2's compat.v1): zeroes each element with probability `rate` (= 1 - keep_prob)
    and scales the others by 1 / (1 - rate)."""
    if keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        try:
            rate = 1.0 - keep_prob
        except TypeError:
            raise ValueError(f"`keep_prob` must be a floating point number or Tensor. Received: "
                             f"keep_prob={keep_prob}") from None
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    with name_scope(name, "dropout", [x]):
        is_number = isinstance(rate, numbers.Real) and not isinstance(rate, bool)
        if is_number and not 0 <= rate < 1:
            raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). Received: rate={rate}")
        x = convert_to_tensor(x, name="x")
        x_dtype = x.dtype.base_dtype
        if not x_dtype.is_floating:
            raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. Received: "
                             f"x_dtype={x_dtype}")
        if is_number and rate == 0:
            random_ops._op_seeds(seed)  # keeps the graph's op-seed sequence as TF's dummy RNG step does
            return x
        if is_number:
            ret = OPS["Mul"](x, constant(1 / (1 - rate), dtype=x_dtype))
        else:
            rate = convert_to_tensor(rate)
            if rate.shape.ndims not in (None, 0):
                raise ValueError(f"`rate` must be a scalar, got a tensor of shape {rate.shape}")
            rate = math.cast(rate, x_dtype, name="rate")
            ret = _op("RealDiv")(x, OPS["Sub"](constant(1, dtype=x_dtype), rate))
        random = random_ops.random_uniform(_noise_shape(x, noise_shape), dtype=x_dtype, seed=seed)
        keep_mask = random >= rate
        ret = _op("SelectV2")(keep_mask, ret, constant(0, dtype=x_dtype))
        ret.set_shape(x.shape)
        return ret


def moments(x: Any, axes: Any, shift: Any = None, name: str | None = None, keep_dims: bool | None = None,
            keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """`af.nn.moments`: (mean, variance) of `x` over `axes` (float16 computed in float32)."""
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x)
        half = x.dtype.base_dtype == dtypes.float16
        y = math.cast(x, dtypes.float32) if half else x
        mean = math.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = math.reduce_mean(math.squared_difference(y, _op("StopGradient")(mean)), axes,
                                    keepdims=True, name="variance")
        if not keep:
            mean = array.squeeze(mean, axes)
            variance = array.squeeze(variance, axes)
        if half:
            return math.cast(mean, dtypes.float16), math.cast(variance, dtypes.float16)
        return mean, variance


# The losses use the softmax ops above, so they are imported last.
from asyncflow.ops.nn_losses import (  # noqa: E402
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "relu", "relu6", "elu", "softplus", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "l2_loss", "bias_add",
    "conv2d", "max_pool", "avg_pool", "embedding_lookup", "dropout", "moments",
]
