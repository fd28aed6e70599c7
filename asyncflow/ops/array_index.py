"""Array ops that select or place elements by index.

OneHot, GatherV2, GatherNd, ScatterNd and UnsortedSegmentSum, with TF1's wrappers (`af.one_hot`,
`af.gather`, `af.gather_nd`, `af.scatter_nd`, `af.unsorted_segment_sum`), `af.boolean_mask`,
which TF composes from Reshape, Where, Squeeze and GatherV2 (and so does this module; `Where`
and `Prod` belong to the math family and are looked up when boolean_mask is called), and the
re-exported `af.dynamic_partition` / `af.dynamic_stitch` (declared in nn_embedding).

Out-of-range indices are an InvalidArgumentError at run time naming the op and the index, as
in TF; `one_hot` maps them to all-off rows, `unsorted_segment_sum` drops negative ids.

Gradients (TF's rules): a gather along axis 0 gives `IndexedSlices` (the rows it read, repeats
kept), which optimizers apply sparsely; other gathers and GatherNd/ScatterNd/UnsortedSegmentSum
give dense tensors (GatherNd of whole rows is sparse too). OneHot passes no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, colocate_with, name_scope
from asyncflow.ops.array import check_rank, fold_ops, rank, reshape, shape, size, zeros_like
from asyncflow.ops.array_dims import expand_dims, squeeze
from asyncflow.ops.array_manip import concat, tile, transpose

# DynamicPartition and DynamicStitch are declared next to their main user, embedding_lookup; they are
# part of the array family's public API (af.dynamic_partition, af.dynamic_stitch) and tested here.
from asyncflow.ops.nn_embedding import dynamic_partition, dynamic_stitch
from asyncflow.ops.registry import (
    ALL_TYPES,
    INDEX,
    NUMERIC,
    OPS,
    BuildContext,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

_INDICES = (dtypes.int16, dtypes.int32, dtypes.int64)


def _where(arr: np.ndarray) -> str:
    """The first position where `arr` is true, written as TF writes it: `[1,0]`, or `` for a scalar."""
    pos = np.argwhere(arr)[0]
    return f"[{','.join(map(str, pos))}]" if len(pos) else ""


def _zeros(shape: Any, dtype: Any) -> np.ndarray:
    return np.full(shape, b"", dtype=object) if dtype == np.object_ else np.zeros(shape, dtype=dtype)


def _prefix_error(b: BuildContext, outer: TensorShape, whole: TensorShape, outer_arg: str, whole_arg: str) -> None:
    """Raises unless `outer` can be a prefix of `whole` (e.g. segment_ids.shape of data.shape)."""
    if outer.ndims is None or whole.ndims is None:
        return
    if whole.ndims < outer.ndims or not whole[:outer.ndims].is_compatible_with(outer):
        raise b.error(f"{whole_arg}.shape must start with {outer_arg}.shape, got {whole_arg}.shape = {whole} and "
                      f"{outer_arg}.shape = {outer}")


# -- one_hot ----------------------------------------------------------------------------------------
def _one_hot_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((1, "depth"), (2, "on_value"), (3, "off_value")):
        check_rank(b, i, 0, arg)
    axis, depth, x = b.attrs["axis"], b.const(1), b.shape(0)
    if axis < -1:
        raise b.error(f"axis must be >= -1, got {axis}")
    if depth is not None and int(depth) < 0:
        raise b.error(f"depth must be non-negative, got {int(depth)}")
    if x.ndims is None or axis > x.ndims:  # an axis past the end is reported when the op runs, as in TF
        return unknown_shape()
    dims = x.dims
    dims.insert(x.ndims if axis == -1 else axis, Dimension(None if depth is None else int(depth)))
    return TensorShape(dims)


@op("OneHot", inputs="indices: TI, depth: int32, on_value: T, off_value: T", outputs="output: T",
    types={"T": ALL_TYPES, "TI": (dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.int64)}, attrs={"axis": -1},
    shape=_one_hot_shape, differentiable=False)
def one_hot_op(k, indices, depth, on_value, off_value):
    indices, depth = np.asarray(indices), int(depth)
    if depth < 0:
        raise ValueError(f"OneHot '{k.name}': depth must be non-negative, got: {depth}")
    rank = indices.ndim
    if not (k.axis == -1 or 0 <= k.axis <= rank):
        raise ValueError(f"OneHot '{k.name}': Expected axis to be -1 or between [0, {rank + 1}).  But received: "
                         f"{k.axis}")
    axis = rank if k.axis == -1 else k.axis
    hot = np.expand_dims(indices, axis) == np.arange(depth).reshape([depth] + [1] * (rank - axis))
    return np.where(hot, on_value, off_value).astype(k.out_dtypes[0], copy=False)


def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None, axis: int | None = None,
            dtype: Any = None, name: str | None = None) -> Tensor:
    """`af.one_hot`: the dtype comes from on/off values, else `dtype`, else float32."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value, axis, dtype]) as scope:
        on_exists, off_exists = on_value is not None, off_value is not None
        if on_exists:
            on_value = convert_to_tensor(on_value, dtype_hint=dtype)
        if off_exists:
            off_value = convert_to_tensor(off_value, dtype_hint=dtype)
        on_dtype = on_value.dtype.base_dtype if on_exists else None
        off_dtype = off_value.dtype.base_dtype if off_exists else None
        if on_exists or off_exists:
            if dtype is not None:
                if on_exists and on_dtype != dtype:
                    raise TypeError(f"dtype {on_dtype.name} of on_value does not match dtype parameter {dtype.name}")
                if off_exists and off_dtype != dtype:
                    raise TypeError(f"dtype {off_dtype.name} of off_value does not match dtype parameter "
                                    f"{dtype.name}")
            else:
                dtype = on_dtype if on_exists else off_dtype
        elif dtype is None:
            dtype = dtypes.float32
        if not on_exists:
            on_value, on_dtype = convert_to_tensor(1, dtype, name="on_value"), dtype
        if not off_exists:
            off_value, off_dtype = convert_to_tensor(0, dtype, name="off_value"), dtype
        if on_dtype != off_dtype:
            raise TypeError(f"dtype {on_dtype.name} of on_value does not match dtype {off_dtype.name} of off_value")
        return one_hot_op(indices, depth, on_value, off_value, axis=-1 if axis is None else axis, name=scope)


# -- gather -----------------------------------------------------------------------------------------
def _gather_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 2, 0, "axis")
    params, indices, axis = b.shape(0), b.shape(1), b.const(2)
    batch_dims = b.attrs["batch_dims"]
    if params.ndims is None or indices.ndims is None:
        return unknown_shape()
    if batch_dims < 0:
        batch_dims += indices.ndims
    if not 0 <= batch_dims <= indices.ndims:
        raise b.error(f"batch_dims ({b.attrs['batch_dims']}) must be in [{-indices.ndims}, {indices.ndims}] for "
                      f"indices of shape {indices}")
    if axis is None:
        return unknown_shape(params.ndims - 1 + indices.ndims - batch_dims)
    rank, axis = params.ndims, int(axis)
    if not -rank <= axis < rank:
        raise b.error(f"axis {axis} is out of range for params of shape {params} (expected {-rank} <= axis < "
                      f"{rank})")
    axis %= rank
    if batch_dims > axis:  # TF reports this when the op runs
        return unknown_shape()
    try:
        batch = params[:batch_dims].merge_with(indices[:batch_dims])
    except ValueError:
        raise b.error(f"params.shape[:batch_dims] = {params[:batch_dims]} must equal indices.shape[:batch_dims] = "
                      f"{indices[:batch_dims]} (params shape {params}, indices shape {indices})") from None
    return batch.concatenate(params[batch_dims:axis]).concatenate(indices[batch_dims:]).concatenate(
        params[axis + 1:])


@op("GatherV2", inputs="params: Tparams, indices: Tindices, axis: Taxis", outputs="output: Tparams",
    types={"Tparams": ALL_TYPES, "Tindices": _INDICES, "Taxis": INDEX}, attrs={"batch_dims": 0},
    shape=_gather_shape)
def gather_v2_op(k, params, indices, axis):
    params, indices = np.asarray(params), np.asarray(indices)
    if params.ndim == 0:
        raise ValueError(f"GatherV2 '{k.name}': params must be at least 1 dimensional")
    if np.ndim(axis) != 0:
        raise ValueError(f"GatherV2 '{k.name}': axis must be scalar, got shape {list(np.shape(axis))}")
    axis = int(axis)
    if not -params.ndim <= axis < params.ndim:
        raise ValueError(f"GatherV2 '{k.name}': Expected axis in the range [{-params.ndim}, {params.ndim}), but "
                         f"got {axis}")
    axis %= params.ndim
    bd = k.batch_dims + indices.ndim if k.batch_dims < 0 else k.batch_dims
    if not 0 <= bd <= min(axis, indices.ndim) or params.shape[:bd] != indices.shape[:bd]:
        raise ValueError(f"GatherV2 '{k.name}': batch_dims = {k.batch_dims} does not fit axis {axis}, params shape "
                         f"{list(params.shape)} and indices shape {list(indices.shape)}")
    n = params.shape[axis]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        raise ValueError(f"GatherV2 '{k.name}': indices{_where(bad)} = {indices[bad].reshape(-1)[0]} is not in "
                         f"[0, {n})")
    if bd == 0:
        if indices.ndim == 0 and params.ndim > 1:  # one slice: basic indexing, copied as np.take would
            return params[(slice(None),) * axis + (int(indices),)].copy()
        return np.take(params, indices, axis=axis)
    out_shape = params.shape[:axis] + indices.shape[bd:] + params.shape[axis + 1:]
    batch = int(np.prod(params.shape[:bd]))
    p = params.reshape((batch,) + params.shape[bd:])
    ix = indices.reshape((batch,) + indices.shape[bd:])
    parts = [np.take(p[i], ix[i], axis=axis - bd) for i in range(batch)]
    return np.stack(parts).reshape(out_shape) if parts else _zeros(out_shape, k.out_dtypes[0])


@gather_v2_op.gradient
def _gather_v2_grad(op: Any, grad: Any) -> list[Any]:
    """TF's _GatherV2Grad: IndexedSlices along axis 0; otherwise a dense segment sum.

    Along axis 0 the gradient is sparse: `values` is the incoming gradient with one row per
    (flattened) index, `indices` the flattened indices (repeats kept: whoever densifies sums them),
    `dense_shape` the params' shape. For another axis, the gathered axis is moved to just after the
    batch dims, the rows are summed into place with UnsortedSegmentSum, and the axes moved back.
    """
    from asyncflow.gradients import IndexedSlices
    from asyncflow.ops import math as _math

    params, indices, axis = op.inputs
    with colocate_with(params):  # params can be large: its shape is taken where it lives
        params_shape = shape(params)
    indices_size = expand_dims(size(indices), 0)
    axis_static = constant_value(axis)
    batch_dims = int(op.get_attr("batch_dims"))
    if batch_dims < 0:
        if indices.shape.ndims is None:
            raise ValueError(f"GatherV2 '{op.name}': the gradient with batch_dims < 0 needs indices of known rank")
        batch_dims += indices.shape.ndims
    if axis_static is not None and int(axis_static) == 0:
        values = reshape(grad, concat([indices_size, params_shape[1:]], 0))
        return [IndexedSlices(values, reshape(indices, indices_size), params_shape), None, None]
    if axis_static is not None and params.shape.ndims is not None:
        axis = int(axis_static) % params.shape.ndims
    outer_shape = params_shape[:axis]
    inner_shape = params_shape[axis:][1:]
    values_shape = concat([outer_shape, [-1], inner_shape], 0)
    values_dims, axis_dims = size(values_shape), size(outer_shape)
    outer_batches = _math.range(batch_dims)
    batch_axes = _math.range(batch_dims, axis_dims)
    inner_axes = _math.range(axis_dims + 1, values_dims)
    # Move the gathered axis up to just after the batch dims, sum, and move it back.
    to_front = concat([outer_batches, [axis_dims], batch_axes, inner_axes], 0)
    values = transpose(reshape(grad, values_shape), to_front)
    params_grad = _batch_gather_grad(gather(params_shape, to_front), values, indices, batch_dims,
                                     params_shape[axis])
    params_grad = transpose(params_grad, concat([outer_batches, batch_axes + 1, [batch_dims], inner_axes], 0))
    return [reshape(params_grad, shape(params)), None, None]


def _batch_gather_grad(params_shape: Tensor, values: Tensor, indices: Tensor, batch_dims: int,
                       gather_dim_size: Tensor) -> Tensor:
    """Rows of `values` summed into a [batch..., gather_dim_size, ...] tensor (TF's _BatchGatherGrad)."""
    from asyncflow.ops import math as _math

    indices_size = expand_dims(size(indices), 0)
    if batch_dims:
        values_shape = shape(values)
        outer_shape = values_shape[:batch_dims]
        flat_values_shape = concat([[-1], values_shape[batch_dims:][1:]], 0)
        gather_dim_size = gather_dim_size * _math.reduce_prod(outer_shape, [0])
        indices = _batch_indices(params_shape, indices, batch_dims)
        values = reshape(values, flat_values_shape)
    params_grad = unsorted_segment_sum(values, reshape(indices, indices_size), gather_dim_size)
    if batch_dims:
        params_grad = reshape(params_grad, concat([outer_shape, flat_values_shape], 0))
    return params_grad


def _batch_indices(params_shape: Tensor, indices: Tensor, batch_dims: int) -> Tensor:
    """`indices` offset by their batch position, as indices into the flattened batch (TF's _GetBatchIndices)."""
    from asyncflow.ops import math as _math

    dtype = indices.dtype.base_dtype
    dims = _math.cast(params_shape, dtype)
    accum = convert_to_tensor(1, dtype=dtype)
    for dim in range(batch_dims, 0, -1):
        accum = accum * dims[dim]
        offsets = _math.range(convert_to_tensor(0, dtype=dtype), dims[dim - 1], convert_to_tensor(1, dtype=dtype))
        # The reshape target is built in int32 (TF mixes the index dtype in, which fails for int64 indices).
        target = concat([tile([1], [dim - 1]), [params_shape[dim - 1]], tile([1], [rank(indices) - dim])], 0)
        indices = indices + reshape(offsets * accum, target)
    return indices


def gather(params: Any, indices: Any, validate_indices: Any = None, name: str | None = None, axis: Any = None,
           batch_dims: int = 0) -> Tensor:
    """`af.gather` (GatherV2): slices of `params` along `axis` at `indices`; a Variable's snapshot is read."""
    del validate_indices  # TF1 ignores it too: indices are always checked
    if axis is None:
        axis = batch_dims
    axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
    if axis_value is None or np.any(np.asarray(axis_value) != 0):
        return gather_v2_op(params, indices, axis, batch_dims=batch_dims, name=name)
    # TF1 drops batch_dims when the axis is 0 (batch_dims can only be 0 there).
    return gather_v2_op(params, indices, axis, name=name)


def _gather_nd_shape(b: BuildContext) -> TensorShape:
    params, indices = b.shape(0), b.shape(1)
    if indices.ndims == 0:
        raise b.error(f"indices must be at least a vector, got shape {indices}")
    if params.ndims is None or indices.ndims is None or indices[-1].value is None:
        return unknown_shape()
    r = indices[-1].value
    if r > params.ndims:
        raise b.error(f"indices.shape[-1] must be <= params.rank, but saw indices shape: {indices} and params "
                      f"shape: {params}")
    return indices[:-1].concatenate(params[r:])


@op("GatherNd", inputs="params: Tparams, indices: Tindices", outputs="output: Tparams",
    types={"Tparams": ALL_TYPES, "Tindices": _INDICES}, attrs={"bad_indices_policy": ""}, shape=_gather_nd_shape)
def gather_nd_op(k, params, indices):
    params, indices = np.asarray(params), np.asarray(indices)
    if indices.ndim == 0 or indices.shape[-1] > params.ndim:
        raise ValueError(f"GatherNd '{k.name}': indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{list(indices.shape)} and params shape: {list(params.shape)}")
    r, outer = indices.shape[-1], indices.shape[:-1]
    flat = indices.reshape(int(np.prod(outer)), r)
    bad = ((flat < 0) | (flat >= np.array(params.shape[:r], dtype=np.int64))).any(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        where = ",".join(map(str, np.unravel_index(i, outer))) if outer else ""
        raise ValueError(f"GatherNd '{k.name}': indices[{where}] = [{', '.join(map(str, flat[i]))}] does not "
                         f"index into param shape [{','.join(map(str, params.shape))}]")
    picked = params[tuple(flat.T)] if r else np.broadcast_to(params, (len(flat),) + params.shape)
    return picked.reshape(outer + params.shape[r:])


@gather_nd_op.gradient
def _gather_nd_grad(op: Any, grad: Any) -> list[Any]:
    """Rows picked by [n, 1] indices give IndexedSlices; otherwise the gradient is scattered back (TF's rule)."""
    from asyncflow.gradients import IndexedSlices

    params, indices = op.inputs
    params_shape = _shape_as(params, indices.dtype.base_dtype)
    grad = convert_to_tensor(grad)
    if indices.shape.ndims == 2 and indices.shape[-1].value == 1:
        return [IndexedSlices(grad, squeeze(indices, axis=[-1]), params_shape), None]
    return [scatter_nd(indices, grad, params_shape), None]


def _shape_as(t: Tensor, dtype: dtypes.DType) -> Tensor:
    """`shape(t)` as `dtype` (Shape itself gives only int32 or int64)."""
    if dtype in INDEX:
        return shape(t, out_type=dtype)
    from asyncflow.ops import math as _math

    return _math.cast(shape(t), dtype)


def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """`af.gather_nd`: slices of `params` at the index vectors in the last dimension of `indices`."""
    if batch_dims != 0:
        raise NotImplementedError("af.gather_nd with batch_dims != 0 is not supported; use batch_dims=0")
    return gather_nd_op(params, indices, name=name)


# -- scatter_nd -------------------------------------------------------------------------------------
def _scatter_nd_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 2, 1, "shape")
    indices, updates, out = b.shape(0), b.shape(1), b.const_shape(2)
    if indices.ndims == 0:
        raise b.error(f"indices must be at least a vector, got shape {indices}")
    if indices.ndims is None or updates.ndims is None:
        return out
    outer = indices.ndims - 1
    if updates.ndims < outer or not updates[:outer].is_compatible_with(indices[:outer]):
        raise b.error(f"Dimensions [0,{outer}) of indices[shape={indices}] must match dimensions [0,{outer}) of "
                      f"updates[shape={updates}]")
    r = indices[-1].value
    if out.ndims is not None and r is not None:
        if r > out.ndims or not updates[outer:].is_compatible_with(out[r:]):
            raise b.error(f"updates.shape[{outer}:] = {updates[outer:]} must equal output.shape[{r}:] = "
                          f"{out[r:]} (indices shape {indices}, updates shape {updates}, output shape {out})")
    return out


@op("ScatterNd", inputs="indices: Tindices, updates: T, shape: Tindices", outputs="output: T",
    types={"T": ALL_TYPES, "Tindices": _INDICES}, attrs={"bad_indices_policy": ""}, shape=_scatter_nd_shape)
def scatter_nd_op(k, indices, updates, out_shape):
    indices, updates = np.asarray(indices), np.asarray(updates)
    out_shape = tuple(int(d) for d in np.reshape(out_shape, -1))
    r, outer = indices.shape[-1], indices.shape[:-1]
    if r > len(out_shape) or updates.shape != outer + out_shape[r:]:
        raise ValueError(f"ScatterNd '{k.name}': updates must have shape indices.shape[:-1] + shape[{r}:] = "
                         f"{list(outer + out_shape[r:])}, got {list(updates.shape)}")
    flat = indices.reshape(int(np.prod(outer)), r)
    bad = ((flat < 0) | (flat >= np.array(out_shape[:r], dtype=np.int64))).any(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"ScatterNd '{k.name}': indices[{i}] = [{', '.join(map(str, flat[i]))}] does not index "
                         f"into shape [{','.join(map(str, out_shape))}]")
    dtype = k.out_dtypes[0]
    out = _zeros(out_shape, dtype)
    rows = updates.reshape((len(flat),) + out_shape[r:])
    target = tuple(flat.T)
    if dtype == np.object_:  # strings cannot be summed: the last update of a position wins
        for row, where in zip(rows, flat):
            out[tuple(where)] = row
    elif dtype == np.bool_:
        np.logical_or.at(out, target, rows)
    else:
        np.add.at(out, target, rows)  # duplicate indices add up
    return out


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.scatter_nd`: a zero tensor of `shape` with `updates` added at `indices` (duplicates sum)."""
    return scatter_nd_op(indices, updates, shape, name=name)


@scatter_nd_op.gradient
def _scatter_nd_grad(op: Any, grad: Any) -> list[Any]:
    return [None, gather_nd(grad, op.inputs[0]), None]


# -- segment sums -------------------------------------------------------------------------------------
def _unsorted_segment_sum_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 2, 0, "num_segments")
    data, ids, num = b.shape(0), b.shape(1), b.const(2)
    _prefix_error(b, ids, data, "segment_ids", "data")
    if data.ndims is None or ids.ndims is None:
        return unknown_shape()
    return TensorShape([None if num is None else int(num)]).concatenate(data[ids.ndims:])


@op("UnsortedSegmentSum", inputs="data: T, segment_ids: Tindices, num_segments: Tnumsegments",
    outputs="output: T", types={"T": NUMERIC, "Tindices": _INDICES, "Tnumsegments": INDEX},
    type_defaults={"Tnumsegments": dtypes.int32}, shape=_unsorted_segment_sum_shape)
def unsorted_segment_sum_op(k, data, segment_ids, num_segments):
    data, ids, num = np.asarray(data), np.asarray(segment_ids), int(num_segments)
    if data.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"UnsortedSegmentSum '{k.name}': segment_ids.shape = {list(ids.shape)} must be a prefix "
                         f"of data.shape = {list(data.shape)}")
    if num < 0:
        raise ValueError(f"UnsortedSegmentSum '{k.name}': num_segments must be non-negative, got {num}")
    big = ids >= num
    if big.any():
        raise ValueError(f"UnsortedSegmentSum '{k.name}': segment_ids{_where(big)} = {ids[big].reshape(-1)[0]} is "
                         f"out of range [0, {num})")
    out = np.zeros((num,) + data.shape[ids.ndim:], dtype=k.out_dtypes[0])
    keep = ids >= 0  # TF drops rows with a negative id
    np.add.at(out, ids[keep], data[keep])
    return out


@unsorted_segment_sum_op.gradient
def _unsorted_segment_sum_grad(op: Any, grad: Any) -> list[Any]:
    """Each data row gets its segment's gradient; rows with a negative id (dropped) get zeros (TF's rule)."""
    from asyncflow.ops import math as _math

    ids = op.inputs[1]
    gathered = gather(grad, _math.maximum(ids, zeros_like(ids)))
    keep = _math.greater_equal(ids, 0)
    # SelectV2 broadcasts, so `keep` only needs trailing size-1 dims for the data's element dims.
    if ids.shape.ndims is None or gathered.shape.ndims is None:
        from asyncflow.ops.array import ones

        trailing = ones(expand_dims(rank(gathered) - rank(ids), 0), dtype=dtypes.int32)
        keep = reshape(keep, concat([shape(keep), trailing], 0))
    elif gathered.shape.ndims > ids.shape.ndims:
        keep = reshape(keep, concat([shape(keep), [1] * (gathered.shape.ndims - ids.shape.ndims)], 0))
    return [_math.where_v2(keep, gathered, zeros_like(gathered)), None, None]


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """`af.unsorted_segment_sum`: output[i] = sum of data rows whose segment id is i (negative ids dropped)."""
    return unsorted_segment_sum_op(data, segment_ids, num_segments, name=name)


# -- boolean_mask -------------------------------------------------------------------------------------
def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Any = None) -> Tensor:
    """`af.boolean_mask`: the entries of `tensor` where `mask` is true, built as TF1 builds it."""
    with name_scope(name, values=[tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        shape_mask, shape_tensor = mask.shape, tensor.shape
        ndims_mask = shape_mask.ndims
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if some dimensions are None.  E.g. "
                             "shape=[None] is ok, but shape=None is not.")
        axis = 0 if axis is None else axis
        axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
        if axis_value is not None:
            axis = int(axis_value)
            shape_tensor[axis:axis + ndims_mask].assert_is_compatible_with(shape_mask)
        leading_size = OPS["Prod"](shape(tensor)[axis:axis + ndims_mask], [0])
        tensor = reshape(tensor, concat([shape(tensor)[:axis], [leading_size],
                                         shape(tensor)[axis + ndims_mask:]], 0))
        if axis_value is not None:
            first_dim = shape_tensor[axis:axis + ndims_mask].num_elements()
            tensor.set_shape(shape_tensor[:axis].concatenate([first_dim]).concatenate(
                shape_tensor[axis + ndims_mask:]))
        mask = reshape(mask, [-1])
        indices = squeeze(OPS["Where"](mask), axis=[1])
        return gather(tensor, indices, axis=axis)


fold_ops("GatherV2", "OneHot")

__all__ = ["one_hot", "gather", "gather_nd", "scatter_nd", "dynamic_partition", "dynamic_stitch",
           "unsorted_segment_sum", "boolean_mask"]
