"""Sparse ops that move entries of a SparseTensor around: SparseToDense, SparseReorder,
SparseReshape, SparseConcat, SparseAdd (+SparseAddGrad), SparseTensorDenseAdd, SparseSlice
(+SparseSliceGrad), SparseSplit and SparseFillEmptyRows (+SparseFillEmptyRowsGrad).

A SparseTensor reaches an op as its three tensors (indices int64 [N, rank], values [N],
dense_shape int64 [rank]). Kernels follow TF's CPU kernels: where TF checks indices (bounds,
row-major order, repeats) the kernel raises `InvalidArgumentError` naming the op with TF's text;
gradients are TF's sparse_grad.py rules. The Python API (`af.sparse_*`) is asyncflow/ops/sparse_ops.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor
from asyncflow.ops import array, math
from asyncflow.ops.registry import ALL_TYPES, INDEX, NUMERIC, REAL, REQUIRED, BuildContext, op
from asyncflow.shapes import TensorShape


# -- index checks shared by the sparse kernels -----------------------------------------------------
def _fmt(row: np.ndarray) -> str:
    return ",".join(str(int(v)) for v in np.reshape(row, -1))


def invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


def as_indices(k: Any, indices: Any, rank: int | None = None, what: str = "indices") -> np.ndarray:
    """`indices` as an int64 [N, rank] matrix, or InvalidArgumentError naming the op."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.ndim != 2 or (rank is not None and idx.shape[1] != rank):
        want = f"[N, {rank}]" if rank is not None else "a matrix"
        raise invalid(k, f"{what} must be {want}, got shape {list(idx.shape)}")
    return idx


def check_bounds(k: Any, idx: np.ndarray, shape: np.ndarray) -> None:
    """Every index within the dense shape (TF's SparseTensor::IndicesValid text)."""
    bad = np.flatnonzero(((idx < 0) | (idx >= shape)).any(axis=1)) if idx.size else []
    if len(bad):
        i = int(bad[0])
        raise invalid(k, f"indices[{i}] = [{_fmt(idx[i])}] is out of bounds: need 0 <= index < [{_fmt(shape)}]")


def check_order(k: Any, idx: np.ndarray) -> None:
    """Indices strictly increasing in row-major order: TF's "out of order" and "is repeated" errors."""
    if idx.shape[0] < 2 or idx.shape[1] == 0:
        if idx.shape[0] >= 2:
            raise invalid(k, "indices[1] = [] is repeated")
        return
    diff = idx[1:] - idx[:-1]
    nonzero = diff != 0
    first = np.argmax(nonzero, axis=1)
    lead = diff[np.arange(diff.shape[0]), first]
    bad = np.flatnonzero(~nonzero.any(axis=1) | (lead < 0))
    if bad.size:
        i = int(bad[0]) + 1
        if lead[i - 1] < 0:
            raise invalid(k, f"indices[{i}] = [{_fmt(idx[i])}] is out of order. Many sparse ops require sorted "
                             f"indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")
        raise invalid(k, f"indices[{i}] = [{_fmt(idx[i])}] is repeated")


def row_major_order(idx: np.ndarray) -> np.ndarray:
    """The stable permutation that sorts index rows in row-major order."""
    if idx.shape[1] == 0:
        return np.arange(idx.shape[0])
    return np.lexsort(idx.T[::-1])


def row_keys(idx: np.ndarray) -> list[bytes]:
    return [r.tobytes() for r in np.ascontiguousarray(idx, dtype=np.int64)]


def _sparse_triple_shapes(b: BuildContext, i: int = 0, rank_from: int | None = None) -> tuple[Any, Any]:
    """(N, rank) known statically from a SparseTensor's indices (input i) and dense_shape (rank_from)."""
    idx = b.shape(i)
    n = idx[0].value if idx.ndims == 2 else None
    rank = idx[1].value if idx.ndims == 2 else None
    if rank is None and rank_from is not None and b.shape(rank_from).ndims == 1:
        rank = b.shape(rank_from)[0].value
    return n, rank


# -- SparseToDense ---------------------------------------------------------------------------------------
def _sparse_to_dense_shape(b: BuildContext) -> TensorShape:
    out = b.const_shape(1)
    if b.shape(3).ndims not in (None, 0):
        raise b.error(f"default_value must be a scalar, got shape {b.shape(3)}")
    return out


@op("SparseToDense", inputs="sparse_indices: Tindices, output_shape: Tindices, sparse_values: T, default_value: T",
    outputs="dense: T", types={"T": ALL_TYPES, "Tindices": INDEX}, attrs={"validate_indices": True},
    shape=_sparse_to_dense_shape)
def sparse_to_dense_op(k, sparse_indices, output_shape, sparse_values, default_value):
    idx, shape = np.asarray(sparse_indices, dtype=np.int64), np.asarray(output_shape, dtype=np.int64)
    values, default = np.asarray(sparse_values), np.asarray(default_value)
    if idx.ndim > 2:
        raise invalid(k, f"sparse_indices should be a scalar, vector, or matrix, got shape {list(idx.shape)}")
    if shape.ndim > 1:
        raise invalid(k, f"output_shape should be a scalar or vector, got shape {list(shape.shape)}")
    shape = shape.reshape(-1)
    n = idx.shape[0] if idx.ndim > 0 else 1
    dims = idx.shape[1] if idx.ndim > 1 else 1
    idx = idx.reshape(n, dims)
    if shape.size != dims:
        raise invalid(k, f"output_shape has incorrect number of elements: {shape.size} should be: {dims}")
    if not (values.ndim == 0 or values.shape == (n,)):
        raise invalid(k, f"sparse_values has incorrect shape {list(values.shape)}, should be [] or [{n}]")
    if default.ndim != 0:
        raise invalid(k, f"default_value should be a scalar, got shape {list(default.shape)}")
    if k.validate_indices:
        check_bounds(k, idx, shape)
        check_order(k, idx)
    else:  # out-of-range entries cannot be written anywhere
        check_bounds(k, idx, shape)
    out = np.full(tuple(int(d) for d in shape), default[()], dtype=k.out_dtypes[0])
    if n:
        out[tuple(idx.T)] = values
    return out


@sparse_to_dense_op.gradient
def _sparse_to_dense_grad(op: Operation, grad: Tensor) -> list[Any]:
    """TF's rule: the values get the gradient at their indices, the default value the rest of its sum."""
    indices, _, values, _ = op.inputs
    if indices.shape.ndims == 2:
        where = indices
    else:
        where = array.reshape(indices, np.array([-1, 1], np.int64 if indices.dtype == dtypes.int64 else np.int32))
    values_grad = array.gather_nd(grad, where)
    default_grad = math.reduce_sum(grad) - math.reduce_sum(values_grad)
    if values.shape.ndims == 0:
        values_grad = math.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


# -- SparseReorder ---------------------------------------------------------------------------------------
def _reorder_shape(b: BuildContext) -> list[TensorShape]:
    n, rank = _sparse_triple_shapes(b, 0, 2)
    return [TensorShape([n, rank]), TensorShape([n])]


@op("SparseReorder", inputs="input_indices: int64, input_values: T, input_shape: int64",
    outputs="output_indices: int64, output_values: T", types={"T": ALL_TYPES}, shape=_reorder_shape)
def sparse_reorder_op(k, input_indices, input_values, input_shape):
    shape = np.asarray(input_shape, dtype=np.int64)
    idx = as_indices(k, input_indices, shape.size, "input_indices")
    values = np.asarray(input_values)
    if values.shape != (idx.shape[0],):
        raise invalid(k, f"input_values must be a vector of {idx.shape[0]} values, got shape {list(values.shape)}")
    order = row_major_order(idx)  # TF checks no bounds here
    return [idx[order], values[order]]


@sparse_reorder_op.gradient
def _sparse_reorder_grad(op: Operation, _indices_grad: Any, values_grad: Tensor) -> list[Any]:
    """TF's rule: reorder the entry numbers the same way and send each gradient back to its entry."""
    indices, _, shape = op.inputs
    entries = math.range(array.shape(indices)[0])
    _, moved = sparse_reorder_op(indices, entries, shape)
    return [None, array.gather(values_grad, array.invert_permutation(moved)), None]


# -- SparseReshape ---------------------------------------------------------------------------------------
def _reshape_shape(b: BuildContext) -> list[TensorShape]:
    n, _ = _sparse_triple_shapes(b, 0, 1)
    new_rank = b.shape(2)[0].value if b.shape(2).ndims == 1 else None
    return [TensorShape([n, new_rank]), TensorShape([new_rank])]


@op("SparseReshape", inputs="input_indices: int64, input_shape: int64, new_shape: int64",
    outputs="output_indices: int64, output_shape: int64", shape=_reshape_shape, differentiable=False)
def sparse_reshape_op(k, input_indices, input_shape, new_shape):
    shape = np.asarray(input_shape, dtype=np.int64).reshape(-1)
    idx = as_indices(k, input_indices, shape.size, "input_indices")
    target = np.asarray(new_shape, dtype=np.int64).reshape(-1).copy()
    dense_size = int(np.prod(shape)) if shape.size else 1
    unknown = np.flatnonzero(target == -1)
    if unknown.size > 1:
        raise invalid(k, f"only one output dimension may be -1, not both {int(unknown[0])} and {int(unknown[1])}")
    if (target < -1).any():
        bad = int(np.flatnonzero(target < -1)[0])
        raise invalid(k, f"size {bad} must be non-negative, not {int(target[bad])}")
    known = int(np.prod(target[target != -1])) if target.size else 1
    if unknown.size:
        if known == 0 or dense_size % known:
            raise invalid(k, f"Input to reshape is a SparseTensor with {dense_size} dense values, but the requested "
                             f"shape requires a multiple of {known}. inputShape=[{_fmt(shape)}] "
                             f"outputShape=[{_fmt(target)}]")
        target[unknown[0]] = dense_size // known
    elif known != dense_size:
        raise invalid(k, f"Input to reshape is a tensor with {dense_size} dense values, but the requested shape has "
                         f"{known}. inputShape=[{_fmt(shape)}] outputShape=[{_fmt(target)}]")
    if idx.shape[0] == 0 or dense_size == 0:
        return [np.zeros((idx.shape[0], target.size), np.int64), target]
    check_bounds(k, idx, shape)
    linear = np.ravel_multi_index(tuple(idx.T), tuple(int(d) for d in shape)) if shape.size else np.zeros(len(idx))
    if target.size == 0:
        return [np.zeros((idx.shape[0], 0), np.int64), target]
    out = np.stack(np.unravel_index(linear.astype(np.int64), tuple(int(d) for d in target)), axis=1)
    return [out.astype(np.int64), target]


# -- SparseConcat ----------------------------------------------------------------------------------------
def _concat_shape(b: BuildContext) -> list[TensorShape]:
    ranks = {s[1].value for s in b.shapes(0) if s.ndims == 2 and s[1].value is not None}
    rank = ranks.pop() if len(ranks) == 1 else None
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


@op("SparseConcat", inputs="indices: N * int64, values: N * T, shapes: N * int64",
    outputs="output_indices: int64, output_values: T, output_shape: int64", types={"T": ALL_TYPES},
    attrs={"concat_dim": REQUIRED}, shape=_concat_shape, differentiable=False)
def sparse_concat_op(k, *args):
    n = len(args) // 3
    shapes = [np.asarray(s, dtype=np.int64).reshape(-1) for s in args[2 * n:]]
    rank = shapes[0].size
    for i, s in enumerate(shapes):
        if s.size != rank:
            raise invalid(k, f"Ranks of all input tensors should match: shape[0] = [{_fmt(shapes[0])}] vs. "
                             f"shape[{i}] = [{_fmt(s)}]")
    if not -rank <= k.concat_dim < rank:
        raise invalid(k, f"Concat dimension must be in range [{-rank}, {rank}), got {k.concat_dim}")
    dim = k.concat_dim % rank
    for i, s in enumerate(shapes):
        if (np.delete(s, dim) != np.delete(shapes[0], dim)).any():
            raise invalid(k, f"Input shapes must match: expected [{_fmt(shapes[0])}] for dimensions other than "
                             f"{dim}, got shape[{i}] = [{_fmt(s)}]")
    parts, offset = [], 0
    for i in range(n):
        idx = as_indices(k, args[i], rank, f"indices[{i}]").copy()
        idx[:, dim] += offset
        offset += int(shapes[i][dim])
        parts.append(idx)
    idx = np.concatenate(parts, axis=0)
    values = np.concatenate([np.asarray(v).reshape(-1) for v in args[n:2 * n]])
    out_shape = shapes[0].copy()
    out_shape[dim] = offset
    order = row_major_order(idx)  # TF's output is in row-major order, whatever the inputs' order

    return [idx[order], values[order], out_shape]


# -- SparseAdd / SparseAddGrad / SparseTensorDenseAdd ----------------------------------------------------
def _sparse_add_shape(b: BuildContext) -> list[TensorShape]:
    _, rank = _sparse_triple_shapes(b, 0, 2)
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


@op("SparseAdd", inputs="a_indices: int64, a_values: T, a_shape: int64, b_indices: int64, b_values: T, "
                        "b_shape: int64, thresh: Treal",
    outputs="sum_indices: int64, sum_values: T, sum_shape: int64", types={"T": NUMERIC, "Treal": REAL},
    shape=_sparse_add_shape)
def sparse_add_op(k, a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    a_shape, b_shape = np.asarray(a_shape, np.int64).reshape(-1), np.asarray(b_shape, np.int64).reshape(-1)
    if a_shape.size != b_shape.size:
        raise invalid(k, f"Operands do not have the same ranks; got shapes: [{_fmt(a_shape)}] and "
                         f"[{_fmt(b_shape)}]")
    if (a_shape != b_shape).any():
        d = int(np.flatnonzero(a_shape != b_shape)[0])
        raise invalid(k, f"Operands' shapes do not match: got {int(a_shape[d])} and {int(b_shape[d])} for "
                         f"dimension {d}")
    a_idx, b_idx = as_indices(k, a_indices, a_shape.size, "a_indices"), as_indices(k, b_indices, a_shape.size,
                                                                                     "b_indices")
    a_val, b_val = np.asarray(a_values), np.asarray(b_values)
    idx = np.concatenate([a_idx, b_idx], axis=0)
    vals = np.concatenate([a_val, b_val])
    order = row_major_order(idx)  # stable: an entry of a comes before the same index of b
    idx, vals, from_a = idx[order], vals[order], order < len(a_idx)
    same = np.zeros(len(idx), bool)
    if len(idx) > 1:
        same[1:] = (idx[1:] == idx[:-1]).all(axis=1) & from_a[:-1] & ~from_a[1:]
    # A pair present in both is summed and kept only when |sum| >= thresh (TF thresholds no other entry).
    summed = vals.copy()
    pair_first = np.flatnonzero(same) - 1
    summed[pair_first] = vals[pair_first] + vals[pair_first + 1]
    keep = ~same
    keep[pair_first] = np.abs(summed[pair_first]) >= np.asarray(thresh)
    return [idx[keep], summed[keep].astype(a_val.dtype, copy=False), a_shape]


@op("SparseAddGrad", inputs="backprop_val_grad: T, a_indices: int64, b_indices: int64, sum_indices: int64",
    outputs="a_val_grad: T, b_val_grad: T", types={"T": NUMERIC},
    shape=lambda b: [TensorShape([b.shape(1)[0] if b.shape(1).ndims else None]),
                     TensorShape([b.shape(2)[0] if b.shape(2).ndims else None])],
    differentiable=False)
def sparse_add_grad_op(k, backprop_val_grad, a_indices, b_indices, sum_indices):
    grad = np.asarray(backprop_val_grad)
    where = dict(zip(row_keys(np.asarray(sum_indices)), range(len(grad))))
    out = []
    for idx in (np.asarray(a_indices), np.asarray(b_indices)):
        pos = np.array([where.get(key, -1) for key in row_keys(idx)], dtype=np.int64)
        g = np.zeros(len(pos), grad.dtype)
        g[pos >= 0] = grad[pos[pos >= 0]]
        out.append(g)
    return out


@sparse_add_op.gradient
def _sparse_add_grad(op: Operation, _indices_grad: Any, values_grad: Tensor, _shape_grad: Any) -> list[Any]:
    a_grad, b_grad = sparse_add_grad_op(values_grad, op.inputs[0], op.inputs[3], op.outputs[0])
    return [None, a_grad, None, None, b_grad, None, None]


@op("SparseTensorDenseAdd", inputs="a_indices: Tindices, a_values: T, a_shape: Tindices, b: T", outputs="output: T",
    types={"T": NUMERIC, "Tindices": INDEX}, shape=lambda b: b.shape(3))
def sparse_tensor_dense_add_op(k, a_indices, a_values, a_shape, b):
    dense = np.asarray(b)
    shape = np.asarray(a_shape, np.int64).reshape(-1)
    if tuple(int(d) for d in shape) != dense.shape:
        raise invalid(k, f"Dimension mismatch: a_shape [{_fmt(shape)}] vs. b.shape [{_fmt(np.array(dense.shape))}]")
    idx = as_indices(k, a_indices, shape.size, "a_indices")
    check_bounds(k, idx, shape)
    out = dense.copy()
    np.add.at(out, tuple(idx.T), np.asarray(a_values))
    return out


@sparse_tensor_dense_add_op.gradient
def _sparse_tensor_dense_add_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [None, array.gather_nd(grad, op.inputs[0]), None, grad]


# -- SparseSlice / SparseSliceGrad --------------------------------------------------------------------------
def _slice_shape(b: BuildContext) -> list[TensorShape]:
    _, rank = _sparse_triple_shapes(b, 0, 2)
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _slice_window(k: Any, shape: np.ndarray, start: Any, size: Any) -> tuple[np.ndarray, np.ndarray]:
    start, size = np.asarray(start, np.int64).reshape(-1), np.asarray(size, np.int64).reshape(-1)
    if start.size != shape.size or size.size != shape.size:
        raise invalid(k, f"Expected start and size to have {shape.size} elements each, got {start.size} and "
                         f"{size.size}")
    stop = np.minimum(start + size, shape)
    return start, np.maximum(stop - start, 0)


@op("SparseSlice", inputs="indices: int64, values: T, shape: int64, start: int64, size: int64",
    outputs="output_indices: int64, output_values: T, output_shape: int64", types={"T": ALL_TYPES},
    shape=_slice_shape)
def sparse_slice_op(k, indices, values, shape, start, size):
    shape = np.asarray(shape, np.int64).reshape(-1)
    idx = as_indices(k, indices, shape.size)
    start, extent = _slice_window(k, shape, start, size)
    inside = ((idx >= start) & (idx < start + extent)).all(axis=1)
    return [idx[inside] - start, np.asarray(values)[inside], extent]


@op("SparseSliceGrad", inputs="backprop_val_grad: T, input_indices: int64, input_start: int64, "
                              "output_indices: int64",
    outputs="val_grad: T", types={"T": NUMERIC},
    shape=lambda b: TensorShape([b.shape(1)[0] if b.shape(1).ndims else None]), differentiable=False)
def sparse_slice_grad_op(k, backprop_val_grad, input_indices, input_start, output_indices):
    grad, idx = np.asarray(backprop_val_grad), np.asarray(input_indices, np.int64)
    shifted = np.asarray(output_indices, np.int64) + np.asarray(input_start, np.int64).reshape(1, -1)
    where = dict(zip(row_keys(shifted), range(len(grad))))
    pos = np.array([where.get(key, -1) for key in row_keys(idx)], dtype=np.int64)
    out = np.zeros(len(pos), grad.dtype)
    out[pos >= 0] = grad[pos[pos >= 0]]
    return out


@sparse_slice_op.gradient
def _sparse_slice_grad(op: Operation, _indices_grad: Any, values_grad: Tensor, _shape_grad: Any) -> list[Any]:
    grad = sparse_slice_grad_op(values_grad, op.inputs[0], op.inputs[3], op.outputs[0])
    return [None, grad, None, None, None]


# -- SparseSplit ----------------------------------------------------------------------------------------------
def _split_shape(b: BuildContext) -> list[TensorShape]:
    _, rank = _sparse_triple_shapes(b, 1, 3)
    n = b.attrs["num_split"]
    if n < 1:
        raise b.error(f"num_split must be at least 1, got {n}")
    return ([TensorShape([None, rank])] * n + [TensorShape([None])] * n + [TensorShape([rank])] * n)


@op("SparseSplit", inputs="split_dim: int64, indices: int64, values: T, shape: int64",
    outputs="output_indices: num_split * int64, output_values: num_split * T, output_shape: num_split * int64",
    types={"T": ALL_TYPES}, attrs={"num_split": REQUIRED}, shape=_split_shape, differentiable=False)
def sparse_split_op(k, split_dim, indices, values, shape):
    shape = np.asarray(shape, np.int64).reshape(-1)
    rank, n = shape.size, k.num_split
    dim = int(split_dim)
    if not -rank <= dim < rank:
        raise invalid(k, f"Input split_dim should be between {-rank} and {rank}, got {dim}")
    dim %= rank
    if n > shape[dim]:
        raise invalid(k, f"Input num_split should be between 1 and {int(shape[dim])}, got {n}")
    idx, vals = as_indices(k, indices, rank), np.asarray(values)
    size, extra = divmod(int(shape[dim]), n)
    out_idx, out_vals, out_shapes, start = [], [], [], 0
    for i in range(n):
        width = size + (1 if i < extra else 0)
        inside = (idx[:, dim] >= start) & (idx[:, dim] < start + width)
        part = idx[inside].copy()
        part[:, dim] -= start
        piece = shape.copy()
        piece[dim] = width
        out_idx.append(part)
        out_vals.append(vals[inside])
        out_shapes.append(piece)
        start += width
    return out_idx + out_vals + out_shapes


# -- SparseFillEmptyRows / SparseFillEmptyRowsGrad ------------------------------------------------------------
def _fill_shape(b: BuildContext) -> list[TensorShape]:
    _, rank = _sparse_triple_shapes(b, 0, 2)
    shape = b.const_shape(2)
    rows = shape[0].value if shape.ndims else None
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rows]), TensorShape([b.shape(1)[0].value
                                                                                             if b.shape(1).ndims
                                                                                             else None])]


@op("SparseFillEmptyRows", inputs="indices: int64, values: T, dense_shape: int64, default_value: T",
    outputs="output_indices: int64, output_values: T, empty_row_indicator: bool, reverse_index_map: int64",
    types={"T": ALL_TYPES}, shape=_fill_shape)
def sparse_fill_empty_rows_op(k, indices, values, dense_shape, default_value):
    shape = np.asarray(dense_shape, np.int64).reshape(-1)
    if shape.size < 1:
        raise invalid(k, "dense_shape must be a vector of at least one element (the number of rows)")
    idx, vals = as_indices(k, indices, shape.size), np.asarray(values)
    rows = int(shape[0])
    row = idx[:, 0]
    bad = np.flatnonzero((row < 0) | (row >= rows))
    if bad.size:
        i = int(bad[0])
        raise invalid(k, f"indices({i}, 0) is invalid: {int(row[i])} is not in [0, {rows})")
    counts = np.bincount(row, minlength=rows)
    empty = counts == 0
    # Each row's entries keep their input order; an empty row gets one entry [row, 0, ...] = default.
    per_row = np.maximum(counts, 1)
    starts = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64)
    order = np.argsort(row, kind="stable")
    rank_in_row = np.empty(len(row), np.int64)
    rank_in_row[order] = np.arange(len(row)) - np.repeat(np.cumsum(counts) - counts, counts)
    reverse = starts[row] + rank_in_row
    total = int(per_row.sum()) if rows else 0
    out_idx = np.zeros((total, shape.size), np.int64)
    out_vals = np.empty(total, dtype=k.out_dtypes[1])
    out_idx[reverse] = idx
    out_vals[reverse] = vals
    empty_rows = np.flatnonzero(empty)
    out_idx[starts[empty_rows], 0] = empty_rows
    out_vals[starts[empty_rows]] = np.asarray(default_value)[()]
    return [out_idx, out_vals, empty, reverse]


@op("SparseFillEmptyRowsGrad", inputs="reverse_index_map: int64, grad_values: T",
    outputs="d_values: T, d_default_value: T", types={"T": ALL_TYPES},
    shape=lambda b: [b.shape(0), TensorShape([])], differentiable=False)
def sparse_fill_empty_rows_grad_op(k, reverse_index_map, grad_values):
    reverse, grad = np.asarray(reverse_index_map, np.int64), np.asarray(grad_values)
    taken = np.zeros(len(grad), bool)
    taken[reverse] = True
    return [grad[reverse], grad[~taken].sum(dtype=grad.dtype)]


@sparse_fill_empty_rows_op.gradient
def _sparse_fill_empty_rows_grad(op: Operation, _i: Any, values_grad: Tensor, _e: Any, _r: Any) -> list[Any]:
    d_values, d_default = sparse_fill_empty_rows_grad_op(op.outputs[3], values_grad)
    return [None, d_values, None, d_default]


__all__: list[str] = []
