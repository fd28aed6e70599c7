"""More array ops real models call: sequence_mask, reverse_sequence, meshgrid, linspace, sort/argsort,
space_to_depth/depth_to_space, histogram_fixed_width and unravel_index.

sequence_mask, meshgrid and sort/argsort are TF1's composites (Range/Less, Reshape/Mul, TopKV2 on
the values or their negation: ties keep the lower index first, so argsort is stable). The others are
ops with numpy kernels; ReverseSequence, SpaceToDepth and DepthToSpace carry TF's gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array import ones, reshape, size, stack
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.array_manip import transpose
from asyncflow.ops.math import cast, less
from asyncflow.ops.registry import ALL_TYPES, FLOAT, INDEX, REAL, BuildContext, constant, convert_to_tensor, op
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

__all__ = [
    "sequence_mask", "reverse_sequence", "meshgrid", "linspace", "lin_space", "sort", "argsort",
    "space_to_depth", "depth_to_space", "histogram_fixed_width", "unravel_index",
]


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


# -- sequence_mask -----------------------------------------------------------------------------------------
def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool, name: str | None = None) -> Tensor:
    """`af.sequence_mask`: mask[..., j] = j < lengths[...], of width `maxlen` (default max(lengths))."""
    with name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = mr.reduce_max(lengths)
            from asyncflow.ops.math import maximum

            maxlen = maximum(constant(0, maxlen.dtype), maxlen)
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
            raise ValueError("maxlen must be scalar for sequence_mask")
        row_vector = mr.Range(constant(0, maxlen.dtype), maxlen, constant(1, maxlen.dtype))
        matrix = cast(expand_dims(lengths, -1), maxlen.dtype)
        result = less(row_vector, matrix)
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        return result if dtype is None or dtype == dtypes.bool else cast(result, dtype)


# -- reverse_sequence --------------------------------------------------------------------------------------
def _reverse_sequence_shape(b: BuildContext) -> TensorShape:
    s, lengths = b.shape(0), b.shape(1)
    if lengths.ndims is not None and lengths.ndims != 1:
        raise b.error(f"seq_lengths must be a vector, got shape {lengths}")
    if s.ndims is None:
        return s
    seq, batch = b.attrs["seq_dim"], b.attrs["batch_dim"]
    if not (0 <= seq < s.ndims and 0 <= batch < s.ndims) or seq == batch:
        raise b.error(f"seq_dim {seq} and batch_dim {batch} must be distinct dims of input of rank {s.ndims}")
    if lengths.ndims == 1 and not Dimension(s[batch]).is_compatible_with(lengths[0]):
        raise b.error(f"len(seq_lengths) {lengths[0]} != input.dims({batch}) {s[batch]}")
    return s


@op("ReverseSequence", inputs="input: T, seq_lengths: Tlen", outputs="output: T",
    types={"T": ALL_TYPES, "Tlen": INDEX}, type_defaults={"Tlen": dtypes.int32},
    attrs={"seq_dim": 1, "batch_dim": 0}, shape=_reverse_sequence_shape)
def ReverseSequence(k, x, lengths):
    seq, batch = k.seq_dim, k.batch_dim
    if lengths.shape != (x.shape[batch],):
        raise _invalid(k, f"len(seq_lengths) {lengths.size} != input.dims({batch}) {x.shape[batch]}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > x.shape[seq]):
        raise _invalid(k, f"seq_lengths must be in [0, {x.shape[seq]}], got {lengths.tolist()}")
    out = np.array(x, copy=True)
    moved = np.moveaxis(out, (batch, seq), (0, 1))  # a view: writing it writes `out`
    src = np.moveaxis(x, (batch, seq), (0, 1))
    for i, n in enumerate(lengths.tolist()):
        moved[i, :n] = src[i, :n][::-1]
    return out


@ReverseSequence.gradient
def _reverse_sequence_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [ReverseSequence(grad, op_.inputs[1], seq_dim=op_.get_attr("seq_dim"),
                            batch_dim=op_.get_attr("batch_dim")), None]


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int | None = None, name: str | None = None, seq_dim: int | None = None,
                     batch_dim: int | None = None) -> Tensor:
    """`af.reverse_sequence`: reverses the first seq_lengths[b] entries along `seq_axis` of each batch row."""
    seq_axis = mr._lookup("seq_axis", seq_axis, "seq_dim", seq_dim)
    batch_axis = mr._lookup("batch_axis", batch_axis, "batch_dim", batch_dim)
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument: 'seq_axis'")
    x = convert_to_tensor(input, name="input")
    rank = x.shape.ndims
    seq_axis, batch_axis = int(seq_axis), 0 if batch_axis is None else int(batch_axis)
    if rank is not None:
        seq_axis, batch_axis = seq_axis % rank if seq_axis < 0 else seq_axis, batch_axis % rank if batch_axis < 0 \
            else batch_axis
    return ReverseSequence(x, seq_lengths, seq_dim=seq_axis, batch_dim=batch_axis, name=name)


# -- meshgrid, linspace --------------------------------------------------------------------------------------
def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """`af.meshgrid(*args, indexing="xy", name="meshgrid")`: coordinate grids, as TF1 builds them."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = next(iter(kwargs))
        raise TypeError(f"'{key}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with name_scope(name, "meshgrid", list(args)):
        ndim = len(args)
        s0 = (1,) * ndim
        if not ndim:
            return []
        output = [reshape(stack(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(args)]
        shapes = [size(x) for x in args]
        output_dtype = convert_to_tensor(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            output[0] = reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult_fact = ones(stack(shapes), output_dtype)
        return [x * mult_fact for x in output]


def _linspace_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((0, "start"), (1, "stop"), (2, "num")):
        if b.shape(i).ndims not in (None, 0):
            raise b.error(f"{arg} must be a scalar, got shape {b.shape(i)}")
    num = b.const(2)
    return TensorShape([None if num is None else int(num)])


@op("LinSpace", inputs="start: T, stop: T, num: Tidx", outputs="output: T",
    types={"T": FLOAT, "Tidx": INDEX}, type_defaults={"Tidx": dtypes.int32}, shape=_linspace_shape,
    differentiable=False)
def LinSpace(k, start, stop, num):
    n = int(num)
    if n <= 0:
        raise _invalid(k, f"Requires num > 0: {n}")
    if n == 1:
        return np.asarray([start], k.out_dtypes[0])
    dt = k.out_dtypes[0]
    step = (dt(stop) - dt(start)) / dt(n - 1)
    out = (dt(start) + step * np.arange(n, dtype=dt)).astype(dt)  # TF1's kernel: start + step * i, in T
    out[-1] = stop  # ... and the last value is `stop` exactly
    return out


def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """`af.linspace` / `af.lin_space`: `num` evenly spaced values from start to stop inclusive."""
    with name_scope(name, "LinSpace", [start, stop]) as scope:
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, name="stop", dtype=start.dtype)
        return LinSpace(start, stop, num, name=scope)


lin_space = linspace


# -- sort, argsort -------------------------------------------------------------------------------------------
def _descending_sort(values: Tensor, axis: int, return_argsort: bool) -> Tensor:
    from asyncflow.ops.array import shape
    from asyncflow.ops.nn_extra import top_k

    k = shape(values)[axis]
    static_rank = values.shape.ndims
    transposition = None
    if not (axis == -1 or axis + 1 == static_rank):
        if static_rank is None:
            raise ValueError("sort: a non-last axis needs values of known rank")
        axis = axis + static_rank if axis < 0 else axis
        transposition = constant(np.r_[np.arange(axis), [static_rank - 1], np.arange(axis + 1, static_rank - 1),
                                       [axis]].astype(np.int32), name="transposition")
        values = transpose(values, transposition)
    top_values, indices = top_k(values, k)
    result = indices if return_argsort else top_values
    return transpose(result, transposition) if transposition is not None else result


def _sort_or_argsort(values: Any, axis: Any, direction: str, return_argsort: bool) -> Tensor:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{direction} should be one of ASCENDING, DESCENDING")
    axis_t = convert_to_tensor(axis, name="axis")
    axis_static = mr.constant_value(axis_t)
    if axis_t.shape.ndims not in (None, 0) or axis_static is None:
        raise ValueError("axis must be a constant scalar")
    values = convert_to_tensor(values, name="values")
    if direction == "DESCENDING":
        return _descending_sort(values, int(axis_static), return_argsort)
    out = _descending_sort(-values, int(axis_static), return_argsort)  # ties: lower index first, so stable
    return out if return_argsort else -out


def sort(values: Any, axis: Any = -1, direction: str = "ASCENDING", name: str | None = None) -> Tensor:
    """`af.sort`: values sorted along `axis` (TopKV2 of the values, or of their negation)."""
    with name_scope(name, "sort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


def argsort(values: Any, axis: Any = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """`af.argsort`: int32 indices that sort `values` along `axis` (always stable, as TF's TopKV2 path)."""
    del stable  # TF ignores it too: the TopKV2 path is stable already
    with name_scope(name, "argsort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


# -- space_to_depth, depth_to_space ---------------------------------------------------------------------------
def _to_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.transpose(x, (0, 2, 3, 1)) if data_format == "NCHW" else x


def _from_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)) if data_format == "NCHW" else x)


def _scale(d: int | None, mul: int, div: int) -> int | None:
    return None if d is None else d * mul // div


def _space_depth_shape(to_depth: bool) -> Any:
    def shape_fn(b: BuildContext) -> TensorShape:
        s = b.shape(0)
        if s.ndims is None:
            return unknown_shape(4)
        if s.ndims != 4:
            raise b.error(f"input must be rank 4, got shape {s}")
        bs, fmt = b.attrs["block_size"], b.attrs["data_format"]
        if bs < 2:
            raise b.error(f"block_size must be at least 2, got {bs}")
        n, h, w, c = s.as_list() if fmt == "NHWC" else [s.as_list()[i] for i in (0, 2, 3, 1)]
        if to_depth:
            for dim, v in (("height", h), ("width", w)):
                if v is not None and v % bs:
                    raise b.error(f"Image {dim} {v} must be divisible by block_size {bs}")
            out = [n, _scale(h, 1, bs), _scale(w, 1, bs), _scale(c, bs * bs, 1)]
        else:
            if c is not None and c % (bs * bs):
                raise b.error(f"Input depth {c} must be divisible by block_size squared {bs * bs}")
            out = [n, _scale(h, bs, 1), _scale(w, bs, 1), _scale(c, 1, bs * bs)]
        return TensorShape(out if fmt == "NHWC" else [out[i] for i in (0, 3, 1, 2)])
    return shape_fn


_SPACE_DEPTH = dict(inputs="input: T", outputs="output: T", types={"T": ALL_TYPES},
                    attrs={"block_size": 2, "data_format": "NHWC"})


@op("SpaceToDepth", shape=_space_depth_shape(True), **_SPACE_DEPTH)
def SpaceToDepth(k, x):
    bs = k.block_size
    v = _to_nhwc(x, k.data_format)
    n, h, w, c = v.shape
    if h % bs or w % bs:
        raise _invalid(k, f"Image height {h} and width {w} must be divisible by block_size {bs}")
    v = v.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // bs, w // bs, -1)
    return _from_nhwc(v, k.data_format)


@op("DepthToSpace", shape=_space_depth_shape(False), **_SPACE_DEPTH)
def DepthToSpace(k, x):
    bs = k.block_size
    v = _to_nhwc(x, k.data_format)
    n, h, w, c = v.shape
    if c % (bs * bs):
        raise _invalid(k, f"Input depth {c} must be divisible by block_size squared {bs * bs}")
    v = v.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * bs, w * bs, -1)
    return _from_nhwc(v, k.data_format)


@SpaceToDepth.gradient
def _space_to_depth_grad(op_: Any, grad: Tensor) -> Tensor:
    return DepthToSpace(grad, block_size=op_.get_attr("block_size"), data_format=op_.get_attr("data_format"))


@DepthToSpace.gradient
def _depth_to_space_grad(op_: Any, grad: Tensor) -> Tensor:
    return SpaceToDepth(grad, block_size=op_.get_attr("block_size"), data_format=op_.get_attr("data_format"))


def space_to_depth(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """`af.space_to_depth`: moves block_size x block_size spatial blocks into the depth dimension."""
    return SpaceToDepth(input, block_size=int(block_size), data_format=data_format, name=name)


def depth_to_space(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """`af.depth_to_space`: the inverse of `space_to_depth`."""
    return DepthToSpace(input, block_size=int(block_size), data_format=data_format, name=name)


# -- histogram_fixed_width, unravel_index ---------------------------------------------------------------------
@op("HistogramFixedWidth", inputs="values: T, value_range: T, nbins: int32", outputs="out: dtype",
    types={"T": REAL, "dtype": INDEX}, type_defaults={"dtype": dtypes.int32},
    shape=lambda b: TensorShape([None if b.const(2) is None else int(b.const(2))]), differentiable=False)
def HistogramFixedWidth(k, values, value_range, nbins):
    n = int(nbins)
    if n <= 0:
        raise _invalid(k, f"nbins should be a positive number, but got '{n}'")
    lo, hi = np.float64(value_range[0]), np.float64(value_range[1])
    if not lo < hi:
        raise _invalid(k, f"value_range should satisfy value_range[0] < value_range[1], but got '[{lo}, {hi}]'")
    v = np.asarray(values, np.float64).reshape(-1)
    bins = np.clip(np.floor((v - lo) / (hi - lo) * n), 0, n - 1).astype(np.int64)  # outliers go to the ends
    return np.bincount(bins, minlength=n).astype(k.out_dtypes[0])


def histogram_fixed_width(values: Any, value_range: Any, nbins: Any = 100, dtype: Any = dtypes.int32,
                          name: str | None = None) -> Tensor:
    """`af.histogram_fixed_width`: counts of `values` in `nbins` equal bins over value_range (ends open)."""
    with name_scope(name, "histogram_fixed_width", [values, value_range, nbins]) as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, name="value_range", dtype=values.dtype)
        return HistogramFixedWidth(values, value_range, nbins, dtype=dtypes.as_dtype(dtype), name=scope)


def _unravel_shape(b: BuildContext) -> TensorShape:
    idx, dims = b.shape(0), b.shape(1)
    if dims.ndims is not None and dims.ndims != 1:
        raise b.error(f"dims must be a vector, got shape {dims}")
    n = dims[0] if dims.ndims == 1 else None
    if idx.ndims is None:
        return unknown_shape()
    if idx.ndims == 0:
        return TensorShape([n])
    if idx.ndims == 1:
        return TensorShape([n, idx[0]])
    raise b.error(f"indices must be a scalar or a vector, got shape {idx}")


@op("UnravelIndex", inputs="indices: Tidx, dims: Tidx", outputs="output: Tidx", types={"Tidx": INDEX},
    type_defaults={"Tidx": dtypes.int32}, shape=_unravel_shape, differentiable=False)
def UnravelIndex(k, indices, dims):
    total = int(np.prod(dims))
    if np.any(indices < 0) or np.any(indices >= total):
        raise _invalid(k, f"index out of bounds: indices must be in [0, {total}) for dims {dims.tolist()}")
    return np.stack(np.unravel_index(indices, tuple(int(d) for d in dims))).astype(k.out_dtypes[0])


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """`af.unravel_index`: the coordinates in an array of shape `dims` of flat `indices` ([len(dims), N])."""
    return UnravelIndex(indices, dims, name=name)
