"""More of `af.nn` as `tf.compat.v1.nn`: `top_k`, `in_top_k`, `lrn`, and composites real models call
(`xw_plus_b`, `relu_layer`, `zero_fraction`, `l2_normalize`, `selu`, `softsign`, `crelu`, `swish`,
`log_poisson_loss`, `weighted_cross_entropy_with_logits`, `normalize_moments`,
`sufficient_statistics`, `weighted_moments`).

TopKV2 breaks ties by the lower index, as TF; InTopKV2 counts a target as in the top k when fewer
than k predictions are strictly greater (so ties with the k-th are in), and says False for a target
out of range or a non-finite prediction. LRN's gradient is LRNGrad, TF's closed form.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.math_reduce import range as range_op
from asyncflow.ops.math_reduce import reduce_mean, reduce_sum
from asyncflow.ops.nn_conv import widen as _wide
from asyncflow.ops.nn_ops import bias_add, elu, relu
from asyncflow.ops.registry import INDEX, REAL, BuildContext, constant, convert_to_tensor, needed_op, op
from asyncflow.shapes import TensorShape

_op = needed_op


# -- top_k -------------------------------------------------------------------------------------------
def _top_k_shape(b: BuildContext) -> list[TensorShape]:
    s = b.shape(0)
    k = b.const(1)
    if s.ndims is not None and s.ndims < 1:
        raise b.error(f"input must be at least rank 1, got shape {s}")
    if k is not None and int(k) < 0:
        raise b.error(f"k must be non-negative, got {int(k)}")
    if s.ndims is not None and k is not None and s.as_list()[-1] is not None and s.as_list()[-1] < int(k):
        raise b.error(f"input must have at least k={int(k)} columns, got shape {s}")
    dims = s.as_list()[:-1] + [None if k is None else int(k)] if s.ndims is not None else None
    out = TensorShape(dims)
    return [out, out]


@op("TopKV2", inputs="input: T, k: int32", outputs="values: T, indices: int32", types={"T": REAL},
    attrs={"sorted": True}, shape=_top_k_shape)
def top_k_op(k, x, kk):
    kk = int(kk)
    x = np.asarray(x)
    if kk < 0 or x.ndim < 1 or x.shape[-1] < kk:
        raise errors.InvalidArgumentError(None, k.op, f"TopKV2 '{k.name}': input must have at least k={kk} "
                                                      f"columns, got shape {list(x.shape)}")
    order = np.argsort(-_wide(x) if x.dtype.kind == "f" else -x.astype(np.float64), axis=-1, kind="stable")
    idx = order[..., :kk]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


@top_k_op.gradient
def _top_k_grad(op_: Operation, grad: Any, _grad_indices: Any) -> list[Any]:
    """Each value's gradient goes back to the position it came from (TF's scatter_nd rule)."""
    x, indices = op_.inputs[0], op_.outputs[1]
    in_shape = array.shape(x)
    n = in_shape[-1]
    rows = math.reduce_prod(in_shape) // n
    k_dim = array.shape(indices)[-1]
    flat_idx = array.reshape(indices, array.stack([rows, k_dim]))
    offsets = array.expand_dims(range_op(rows) * n, -1)
    positions = array.reshape(flat_idx + offsets, [-1, 1])
    flat = _op("ScatterNd")(positions, array.reshape(convert_to_tensor(grad), [-1]),
                            array.expand_dims(rows * n, 0))
    return [array.reshape(flat, in_shape), None]


def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """`af.nn.top_k`: the k largest entries of the last dimension and their int32 indices."""
    values, indices = top_k_op(input, convert_to_tensor(k, dtype=dtypes.int32), sorted=sorted, name=name)
    return values, indices


@op("InTopKV2", inputs="predictions: float32, targets: T, k: T", outputs="precision: bool", types={"T": INDEX},
    type_defaults={"T": dtypes.int32}, shape=lambda b: [TensorShape([b.shape(0).as_list()[0]
                                                                     if b.shape(0).ndims else None])],
    differentiable=False)
def in_top_k_op(k, predictions, targets, kk):
    p = np.asarray(predictions, np.float32)
    t = np.asarray(targets)
    if p.ndim != 2 or t.shape != (p.shape[0],):
        raise errors.InvalidArgumentError(None, k.op, f"InTopKV2 '{k.name}': predictions must be [batch, classes] "
                                                      f"and targets [batch], got {list(p.shape)} and {list(t.shape)}")
    valid = (t >= 0) & (t < p.shape[1])
    target_p = p[np.arange(len(t)), np.where(valid, t, 0)]
    greater = (p > target_p[:, None]).sum(axis=1)
    return valid & np.isfinite(target_p) & np.all(np.isfinite(p), axis=1) & (greater < int(kk))


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """`af.nn.in_top_k`: whether each target is among its row's k largest predictions."""
    with name_scope(name, "in_top_k"):
        targets = convert_to_tensor(targets, name="targets")
        kk = convert_to_tensor(k, dtype=targets.dtype.base_dtype, name="k")
        return in_top_k_op(predictions, targets, kk, name=name)


# -- local response normalization ----------------------------------------------------------------
def _window_sum(sq: np.ndarray, r: int) -> np.ndarray:
    """sum over the last axis of sq[..., d - r : d + r + 1] (clipped at the edges)."""
    c = np.cumsum(np.pad(sq, [(0, 0)] * (sq.ndim - 1) + [(1, 0)]), axis=-1)
    n = sq.shape[-1]
    hi = np.minimum(np.arange(n) + r + 1, n)
    lo = np.maximum(np.arange(n) - r, 0)
    return c[..., hi] - c[..., lo]


_LRN_ATTRS = {"depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5}
_LRN_TYPES = {"T": (dtypes.float16, dtypes.bfloat16, dtypes.float32)}


def _rank4(b: BuildContext) -> list[TensorShape]:
    s = b.shape(0)
    if s.ndims is not None and s.ndims != 4:
        raise b.error(f"input must be 4-dimensional, got shape {s}")
    return [s]


@op("LRN", inputs="input: T", outputs="output: T", types=_LRN_TYPES, attrs=_LRN_ATTRS, shape=_rank4)
def lrn_op(k, x):
    x64 = np.asarray(x, np.float64)
    norm = k.bias + k.alpha * _window_sum(x64 * x64, int(k.depth_radius))
    return (x64 * norm ** -k.beta).astype(k.out_dtypes[0])


@op("LRNGrad", inputs="input_grads: T, input_image: T, output_image: T", outputs="output: T", types=_LRN_TYPES,
    attrs=_LRN_ATTRS, shape=lambda b: [b.shape(1)], differentiable=False)
def lrn_grad_op(k, grads, x, _y):
    g, x64 = np.asarray(grads, np.float64), np.asarray(x, np.float64)
    r = int(k.depth_radius)
    norm = k.bias + k.alpha * _window_sum(x64 * x64, r)
    inner = _window_sum(g * x64 * norm ** (-k.beta - 1), r)  # the window is symmetric
    return (g * norm ** -k.beta - 2 * k.alpha * k.beta * x64 * inner).astype(k.out_dtypes[0])


@lrn_op.gradient
def _lrn_grad(op_: Operation, grad: Any) -> Tensor:
    attrs = {a: op_.get_attr(a) for a in _LRN_ATTRS}
    return lrn_grad_op(convert_to_tensor(grad), op_.inputs[0], op_.outputs[0], **attrs)


def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1, alpha: float = 1,  # noqa: A002
                                 beta: float = 0.5, name: str | None = None) -> Tensor:
    """`af.nn.lrn`: input / (bias + alpha * sum of squares over 2 * depth_radius + 1 channels) ** beta."""
    return lrn_op(input, depth_radius=int(depth_radius), bias=float(bias), alpha=float(alpha), beta=float(beta),
                  name=name)


lrn = local_response_normalization


# -- composites -----------------------------------------------------------------------------------------
def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`af.nn.xw_plus_b`: matmul(x, weights) + biases (a BiasAdd)."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        mm = matmul(convert_to_tensor(x, name="x"), convert_to_tensor(weights, name="weights"))
        return bias_add(mm, convert_to_tensor(biases, name="biases"), name=scope)


def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`af.nn.relu_layer`: relu(matmul(x, weights) + biases)."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(bias_add(matmul(x, weights), biases), name=scope)


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """`af.nn.zero_fraction`: the fraction of zeros in `value` (float32)."""
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zero = constant(0, dtype=value.dtype.base_dtype)
        return reduce_mean(math.cast(math.equal(value, zero), dtypes.float32))


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Tensor:
    """`af.nn.l2_normalize`: x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'.")
        axis = dim
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduce_sum(math.square(x), axis, keepdims=True)
        x_inv_norm = math.rsqrt(math.maximum(square_sum, constant(epsilon, dtype=x.dtype.base_dtype)))
        return math.multiply(x, x_inv_norm, name=scope)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.selu`: scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    with name_scope(name, "Selu", [features]):
        x = convert_to_tensor(features, name="features")
        dt = x.dtype.base_dtype
        negative = constant(_SELU_ALPHA, dtype=dt) * elu(x)
        return constant(_SELU_SCALE, dtype=dt) * _op("SelectV2")(x > 0, x, negative)


def softsign(features: Any, name: str | None = None) -> Tensor:
    """`af.nn.softsign`: x / (|x| + 1)."""
    with name_scope(name, "Softsign", [features]) as scope:
        x = convert_to_tensor(features, name="features")
        return math.divide(x, math.abs(x) + constant(1, dtype=x.dtype.base_dtype), name=scope)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """`af.nn.crelu`: relu of [x, -x], concatenated along `axis`."""
    with name_scope(name, "CRelu", [features]) as scope:
        x = convert_to_tensor(features, name="features")
        return relu(array.concat([x, math.negative(x)], axis), name=scope)


def swish(features: Any, beta: float = 1.0, name: str | None = None) -> Tensor:
    """`af.nn.swish`: x * sigmoid(beta * x)."""
    with name_scope(name, "swish", [features]):
        x = convert_to_tensor(features, name="features")
        return x * math.sigmoid(constant(beta, dtype=x.dtype.base_dtype) * x)


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    """`af.nn.log_poisson_loss`: exp(c) - z * c, plus Stirling's term when `compute_full_loss`."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]) as scope:
        c = convert_to_tensor(log_input, name="log_input")
        z = convert_to_tensor(targets, name="targets", dtype=c.dtype.base_dtype)
        result = math.subtract(math.exp(c), z * c)
        if not compute_full_loss:
            return array.identity(result, name=scope)
        dt = c.dtype.base_dtype
        stirling = z * math.log(z) - z + 0.5 * math.log(constant(2 * np.pi, dtype=dt) * z)
        zeros, ones = array.zeros_like(z), array.ones_like(z)
        use = math.logical_and(math.greater_equal(z, zeros), math.less_equal(z, ones))
        return math.add(result, _op("SelectV2")(use, array.zeros_like(stirling), stirling), name=scope)


def weighted_cross_entropy_with_logits(targets: Any = None, logits: Any = None, pos_weight: Any = None,
                                       name: str | None = None, labels: Any = None) -> Tensor:
    """`af.nn.weighted_cross_entropy_with_logits`: sigmoid cross-entropy with positives weighted by pos_weight:
    (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0))."""
    targets = labels if targets is None else targets
    with name_scope(name, "logistic_loss", [logits, targets]) as scope:
        x = convert_to_tensor(logits, name="logits")
        z = convert_to_tensor(targets, name="targets", dtype=x.dtype.base_dtype)
        if not x.shape.is_compatible_with(z.shape):
            raise ValueError(f"logits and targets must have the same shape ({x.shape} vs {z.shape})")
        q = convert_to_tensor(pos_weight, dtype=x.dtype.base_dtype, name="pos_weight")
        one = constant(1, dtype=x.dtype.base_dtype)
        log_weight = one + (q - one) * z
        softplus_term = math.log1p(math.exp(-math.abs(x))) + relu(math.negative(x))
        return math.add((one - z) * x, log_weight * softplus_term, name=scope)


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keep_dims: bool | None = None,
                          name: str | None = None, keepdims: bool | None = None) -> tuple:
    """`af.nn.sufficient_statistics`: (count, sum of x [- shift], sum of squares, shift)."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        shape = array.shape(x)
        counts = math.reduce_prod(array.gather(math.cast(shape, x.dtype.base_dtype), list(axes)), name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss, v_ss = math.subtract(x, shift), math.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math.square(x)
        m_ss = reduce_sum(m_ss, axes, keepdims=keepdims, name="mean_ss")
        v_ss = reduce_sum(v_ss, axes, keepdims=keepdims, name="var_ss")
        return counts, m_ss, v_ss, shift


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any, name: str | None = None) -> tuple:
    """`af.nn.normalize_moments`: (mean, variance) from sufficient statistics."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math.subtract(math.multiply(variance_ss, divisor), math.square(shifted_mean), name="variance")
        return mean, variance


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, name: str | None = None,
                     keep_dims: bool | None = None, keepdims: bool | None = None) -> tuple:
    """`af.nn.weighted_moments`: the frequency-weighted mean and variance over `axes`."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        w = convert_to_tensor(frequency_weights, name="frequency_weights", dtype=x.dtype.base_dtype)
        weighted_sum = reduce_sum(w * x, axes, keepdims=True)
        sum_of_weights = reduce_sum(w * array.ones_like(x), axes, keepdims=True)
        divisor = math.reciprocal(sum_of_weights)
        mean = weighted_sum * divisor
        variance = reduce_sum(w * math.squared_difference(x, mean), axes, keepdims=True) * divisor
        if not keepdims:
            mean, variance = array.squeeze(mean, list(axes)), array.squeeze(variance, list(axes))
        return mean, variance


__all__ = [
    "top_k", "in_top_k", "lrn", "local_response_normalization", "xw_plus_b", "relu_layer", "zero_fraction",
    "l2_normalize", "selu", "softsign", "crelu", "swish", "log_poisson_loss", "weighted_cross_entropy_with_logits",
    "sufficient_statistics", "normalize_moments", "weighted_moments",
]
