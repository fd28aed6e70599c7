"""Small TF1 top-level array functions that input and model code still calls: unique_with_counts
(UniqueWithCounts), bitcast (Bitcast), broadcast_dynamic_shape (BroadcastArgs), and the composites
batch_gather, repeat, histogram_fixed_width_bins, saturate_cast, to_complex64/128 and
clip_by_average_norm, each built as TF1 builds it (same name scopes, same ops where asyncflow has
them), so gradients come from the ops they use.

UniqueWithCounts, Bitcast and BroadcastArgs have no gradient, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, control_dependencies, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.array_index import gather
from asyncflow.ops.array_more import searchsorted
from asyncflow.ops.logging_ops import Assert
from asyncflow.ops.math_extra import cumsum
from asyncflow.ops.math_more import real
from asyncflow.ops.registry import ALL_TYPES, INDEX, NUMERIC, BuildContext, constant_value, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape

__all__ = [
    "unique_with_counts", "bitcast", "broadcast_dynamic_shape", "batch_gather", "repeat",
    "histogram_fixed_width_bins", "saturate_cast", "to_complex64", "to_complex128", "clip_by_average_norm",
]


# -- unique_with_counts ----------------------------------------------------------------------------------------
def _unique_with_counts_shape(b: BuildContext) -> list[TensorShape]:
    x = b.shape(0)
    if x.ndims not in (None, 1):
        raise b.error(f"x must be a vector (rank 1), got shape {x}")
    return [TensorShape([None]), x if x.ndims == 1 else TensorShape([None]), TensorShape([None])]


@op("UniqueWithCounts", inputs="x: T", outputs="y: T, idx: out_idx, count: out_idx",
    types={"T": ALL_TYPES, "out_idx": INDEX}, type_defaults={"out_idx": dtypes.int32},
    shape=_unique_with_counts_shape, differentiable=False)
def unique_with_counts_op(k, x):
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"UniqueWithCounts '{k.name}': unique expects a 1D vector, got shape {list(x.shape)}")
    seen: dict[Any, int] = {}
    idx = np.empty(len(x), k.out_dtypes[1])
    first: list[int] = []
    for i, v in enumerate(x.tolist()):
        key = ("nan", i) if v != v else v  # NaN never equals NaN: each is its own value, as TF's hash map
        j = seen.setdefault(key, len(first))
        if j == len(first):
            first.append(i)
        idx[i] = j
    counts = np.bincount(idx.astype(np.int64), minlength=len(first)).astype(k.out_dtypes[2])
    return x[np.asarray(first, np.int64)], idx, counts


def unique_with_counts(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`af.unique_with_counts`: (y, idx, count): the distinct values of `x` in order of first appearance,
    where each element of `x` is in y, and how often each value occurs."""
    y, idx, count = unique_with_counts_op(x, out_idx=dtypes.as_dtype(out_idx), name=name)
    return y, idx, count


# -- bitcast -------------------------------------------------------------------------------------------------
def _bitcast_shape(b: BuildContext) -> TensorShape:
    x = b.shape(0)
    src, dst = b.dtype(0).size, dtypes.as_dtype(b.attrs["type"]).size
    if x.ndims is None:
        return unknown_shape()
    if src == dst:
        return x
    if src > dst:
        return x.concatenate([src // dst])
    if x.ndims == 0 or x[-1].value not in (None, dst // src):
        raise b.error(f"Cannot bitcast from {b.dtype(0).name} to {dtypes.as_dtype(b.attrs['type']).name}: "
                      f"the last dimension of shape {x} must be {dst // src}")
    return x[:-1]


@op("Bitcast", inputs="input: T", outputs="output: type", types={"T": NUMERIC, "type": NUMERIC},
    shape=_bitcast_shape, differentiable=False)
def bitcast_op(k, x):
    x = np.ascontiguousarray(x)
    dst = np.dtype(k.out_dtypes[0])
    if x.itemsize == dst.itemsize:
        return x.view(dst)
    if x.itemsize > dst.itemsize:
        return x.reshape(x.shape + (1,)).view(dst)
    if x.ndim == 0 or x.shape[-1] * x.itemsize != dst.itemsize:
        raise ValueError(f"Bitcast '{k.name}': Cannot bitcast from {x.dtype} to {dst}: shape {list(x.shape)}")
    return x.view(dst).reshape(x.shape[:-1])


def bitcast(input: Any, type: Any, name: str | None = None) -> Tensor:  # noqa: A002 - TF's argument names
    """`af.bitcast`: the bytes of `input` read as `type` (a narrower type adds a last dimension, a wider one
    consumes it)."""
    return bitcast_op(input, type=dtypes.as_dtype(type).base_dtype, name=name)


# -- broadcast_dynamic_shape ---------------------------------------------------------------------------------
def _broadcast_args_shape(b: BuildContext) -> TensorShape:
    for i, what in ((0, "s0"), (1, "s1")):
        if b.shape(i).ndims not in (None, 1):
            raise b.error(f"Shape must be rank 1 but is rank {b.shape(i).ndims} ({what}, shape {b.shape(i)})")
    lengths = [b.shape(i)[0].value if b.shape(i).ndims == 1 else None for i in (0, 1)]
    return TensorShape([None if None in lengths else max(lengths)])


@op("BroadcastArgs", inputs="s0: T, s1: T", outputs="r0: T", types={"T": INDEX},
    type_defaults={"T": dtypes.int32}, shape=_broadcast_args_shape, differentiable=False)
def broadcast_args_op(k, s0, s1):
    a, b = [int(v) for v in np.reshape(s0, -1)], [int(v) for v in np.reshape(s1, -1)]
    try:
        out = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        raise ValueError(f"BroadcastArgs '{k.name}': Incompatible shapes: [{','.join(map(str, a))}] vs. "
                         f"[{','.join(map(str, b))}]") from None
    return np.asarray(out, k.out_dtypes[0]).reshape(-1)


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """`af.broadcast_dynamic_shape`: the shape that shapes `shape_x` and `shape_y` broadcast to."""
    return broadcast_args_op(shape_x, shape_y)


# -- composites ----------------------------------------------------------------------------------------------
def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """`af.batch_gather` (deprecated in TF1): gather with every leading dimension of `indices` a batch dim."""
    with name_scope(name, "BatchGather", [params, indices]):
        indices = convert_to_tensor(indices, name="indices")
        params = convert_to_tensor(params, name="params")
        if indices.shape.ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        batch_dims = indices.shape.ndims - 1
        if params.shape.ndims is not None and batch_dims >= params.shape.ndims:
            raise ValueError(f"Argument `batch_dims` = {batch_dims} must be less than rank(`params`) = "
                             f"{params.shape.ndims}")
        return gather(params, indices, axis=batch_dims, batch_dims=batch_dims)


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.repeat`: each slice of `input` along `axis` repeated `repeats` times (the flattened input when
    axis is None); `repeats` is a scalar or one count per slice."""
    with name_scope(name, "Repeat", [input, repeats]):
        input = convert_to_tensor(input, name="input")  # noqa: A001
        repeats = math.cast(convert_to_tensor(repeats, name="repeats"), dtypes.int32)
        if repeats.shape.ndims not in (None, 0, 1):
            raise ValueError(f"repeats must be a scalar or a vector, got shape {repeats.shape}")
        if axis is None:
            input = array.reshape(input, [-1])  # noqa: A001
            axis = 0
        rank = input.shape.ndims
        if rank is not None:
            if not -rank <= axis < rank:
                raise ValueError(f"axis={axis} out of bounds: expected {-rank}<=axis<{rank}")
            axis %= rank
        n = array.shape(input)[axis]
        counts = array.broadcast_to(repeats, array.reshape(n, [1]))
        ends = cumsum(counts)
        total = math.reduce_sum(counts)
        # Output position p comes from the slice whose run of copies [end - count, end) holds p.
        source = searchsorted(ends, math.range(total), side="right")
        out = gather(input, source, axis=axis)
        known = constant_value(repeats)
        if rank is not None and known is not None and input.shape[axis].value is not None:
            length = int(np.sum(np.broadcast_to(known, [input.shape[axis].value])))
            dims = input.shape.as_list()
            dims[axis] = length
            out.set_shape(dims)
        return out


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: Any = 100, dtype: Any = dtypes.int32,
                               name: str | None = None) -> Tensor:
    """`af.histogram_fixed_width_bins`: the bin (0..nbins-1, int32) of each value for `nbins` equal bins over
    `value_range`; values outside the range go to the first or last bin. `dtype` is ignored, as in TF."""
    del dtype  # TF's histogram_fixed_width_bins always returns int32
    with name_scope(name, "histogram_fixed_width_bins", [values, value_range, nbins]):
        values = convert_to_tensor(values, name="values")
        shape = array.shape(values)
        values = array.reshape(values, [-1])
        value_range = convert_to_tensor(value_range, name="value_range")
        nbins = convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins")
        check = Assert(math.greater(nbins, 0), [f"nbins {nbins} must > 0"])
        with control_dependencies([check]):
            nbins = array.identity(nbins)
        nbins_float = math.cast(nbins, values.dtype)
        scaled = math.truediv(values - value_range[0], value_range[1] - value_range[0], name="scaled_values")
        indices = math.floor(nbins_float * scaled, name="indices")
        indices = math.cast(math.clip_by_value(indices, 0, nbins_float - 1), dtypes.int32)
        return array.reshape(indices, shape)


def _saturation_limits(src: dtypes.DType, dst: dtypes.DType) -> tuple[Any, Any]:
    """The clamp bounds, as `src` values, that keep a cast to `dst` in range (TF nudges a bound that rounds
    past dst's limit toward zero, e.g. float32(2**31 - 1) = 2**31 becomes 2**31 - 128)."""
    src_np, dst_np = np.dtype(src.as_numpy_dtype), np.dtype(dst.real_dtype.as_numpy_dtype)
    promoted = np.promote_types(src_np, dst_np) if src_np.kind != "V" else np.float64
    lo = src_np.type(max(src.min, dst.real_dtype.min))
    if np.array([lo, dst.real_dtype.min], promoted)[0] < np.array([lo, dst.real_dtype.min], promoted)[1]:
        lo = np.nextafter(lo, src_np.type(0), dtype=src_np)
    hi = src_np.type(min(float(src.max), float(dst.real_dtype.max)))
    if np.array([hi, dst.real_dtype.max], promoted)[0] > np.array([hi, dst.real_dtype.max], promoted)[1]:
        hi = np.nextafter(hi, src_np.type(0), dtype=src_np)
    return lo, hi


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`af.saturate_cast`: `value` clamped to the range of `dtype`, then cast (complex to real drops the
    imaginary part)."""
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        if value.dtype.base_dtype.is_complex and not dtype.is_complex:
            value = real(value)
        src = value.dtype.base_dtype
        if not src.is_complex and src != dtype and not src.is_bool:
            lo, hi = _saturation_limits(src, dtype)
            value = math.clip_by_value(value, convert_to_tensor(lo, dtype=src), convert_to_tensor(hi, dtype=src))
        return math.cast(value, dtype, name=scope)


def to_complex64(x: Any, name: str = "ToComplex64") -> Tensor:
    """`af.to_complex64` (deprecated in TF1): `cast(x, complex64)`."""
    return math.cast(x, dtypes.complex64, name=name)


def to_complex128(x: Any, name: str = "ToComplex128") -> Tensor:
    """`af.to_complex128` (deprecated in TF1): `cast(x, complex128)`."""
    return math.cast(x, dtypes.complex128, name=name)


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """`af.clip_by_average_norm` (deprecated in TF1): `t * clip_norm / max(l2norm(t) / size(t), clip_norm)`."""
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        # TF1 counts in float32 and so takes only float32 input; counting in t's dtype also serves float64.
        n_element = math.cast(array.size(t), t.dtype.base_dtype)
        l2norm_inv = math.rsqrt(math.reduce_sum(t * t, math.range(array.rank(t))))
        one = convert_to_tensor(1.0, dtype=t.dtype.base_dtype)
        return array.identity(t * clip_norm * math.minimum(l2norm_inv * n_element, one / clip_norm), name=scope)

