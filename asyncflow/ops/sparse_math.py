"""Sparse arithmetic: SparseTensorDenseMatMul, SparseReduceSum/Max (and their *Sparse forms),
SparseSoftmax, SparseDenseCwiseAdd/Mul/Div, and the SparseSegmentSum/Mean/SqrtN reductions (with
their WithNumSegments forms and the *Grad ops their gradients are made of).

Kernels follow TF's CPU kernels (errors as InvalidArgumentError naming the op); gradients are the
rules of TF's sparse_grad.py and math_grad.py. The Python API is asyncflow/ops/sparse_ops.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Operation, Tensor
from asyncflow.ops import array, math
from asyncflow.ops.registry import FLOAT, INDEX, NUMERIC, REAL, BuildContext, op
from asyncflow.ops.sparse_structure import (
    _fmt,
    as_indices,
    check_bounds,
    invalid,
    sparse_tensor_dense_add_op,
)
from asyncflow.shapes import TensorShape, unknown_shape


def _conj(t: Tensor) -> Tensor:
    return math.conj(t) if t.dtype.is_complex else t


# -- SparseTensorDenseMatMul -------------------------------------------------------------------------------
def _matmul_shape(b: BuildContext) -> TensorShape:
    a_shape, dense = b.const_shape(2), b.shape(3)
    if a_shape.ndims is not None and a_shape.ndims != 2:
        raise b.error(f"a_shape must describe a matrix, got {a_shape.ndims} dimensions")
    if dense.ndims is not None and dense.ndims != 2:
        raise b.error(f"b must be a matrix, got shape {dense}")
    a_dims = a_shape.dims if a_shape.ndims == 2 else [None, None]
    b_dims = dense.dims if dense.ndims == 2 else [None, None]
    rows = a_dims[1] if b.attrs["adjoint_a"] else a_dims[0]
    inner_a = a_dims[0] if b.attrs["adjoint_a"] else a_dims[1]
    inner_b = b_dims[1] if b.attrs["adjoint_b"] else b_dims[0]
    cols = b_dims[0] if b.attrs["adjoint_b"] else b_dims[1]
    inner_a, inner_b = getattr(inner_a, "value", inner_a), getattr(inner_b, "value", inner_b)
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise b.error(f"inner dimensions differ: a is {a_shape} (adjoint_a={b.attrs['adjoint_a']}), b is {dense} "
                      f"(adjoint_b={b.attrs['adjoint_b']})")
    return TensorShape([rows, cols])


@op("SparseTensorDenseMatMul", inputs="a_indices: Tindices, a_values: T, a_shape: int64, b: T", outputs="product: T",
    types={"T": NUMERIC, "Tindices": INDEX}, type_defaults={"Tindices": dtypes.int64},
    attrs={"adjoint_a": False, "adjoint_b": False}, shape=_matmul_shape)
def sparse_tensor_dense_matmul_op(k, a_indices, a_values, a_shape, b):
    shape = np.asarray(a_shape, np.int64).reshape(-1)
    dense = np.asarray(b)
    if shape.size != 2 or dense.ndim != 2:
        raise invalid(k, f"Tensor 'a_shape' is not a vector of 2 elements or b is not a matrix: a_shape "
                         f"[{_fmt(shape)}], b shape {list(dense.shape)}")
    idx = as_indices(k, a_indices, 2, "a_indices")
    values = np.asarray(a_values)
    if k.adjoint_b:
        dense = np.conj(dense.T) if dense.dtype.kind == "c" else dense.T
    rows, inner = (int(shape[1]), int(shape[0])) if k.adjoint_a else (int(shape[0]), int(shape[1]))
    if dense.shape[0] != inner:
        raise invalid(k, f"Cannot multiply A and B because inner dimension does not match: {inner} vs. "
                         f"{dense.shape[0]}.  Did you forget a transpose?  Dimensions of A: [{rows}, {inner}).  "
                         f"Dimensions of B: [{dense.shape[0]},{dense.shape[1]}]")
    i, j = (idx[:, 1], idx[:, 0]) if k.adjoint_a else (idx[:, 0], idx[:, 1])
    for what, col, bound in (("m", i, rows), ("k", j, inner)):
        bad = np.flatnonzero((col < 0) | (col >= bound))
        if bad.size:
            n = int(bad[0])
            c = (0 if what == "k" else 1) if k.adjoint_a else (1 if what == "k" else 0)
            raise invalid(k, f"{what} ({int(col[n])}) from index[{n},{c}] out of bounds (>={bound})")
    if k.adjoint_a and values.dtype.kind == "c":
        values = np.conj(values)
    out = np.zeros((rows, dense.shape[1]), dtype=k.out_dtypes[0])
    np.add.at(out, i, values[:, None] * dense[j])
    return out


@sparse_tensor_dense_matmul_op.gradient
def _sparse_tensor_dense_matmul_grad(op: Operation, grad: Tensor) -> list[Any]:
    """TF's rule: the dense gradient is A^H @ grad; each value gets grad's row dotted with b's row."""
    a_indices, a_values, a_shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    b_grad = sparse_tensor_dense_matmul_op(a_indices, a_values, a_shape, grad, adjoint_a=not adj_a)
    if adj_b:
        b_grad = _conj(array.transpose(b_grad))
    rows, cols = a_indices[:, 0], a_indices[:, 1]
    parts_a = array.gather(grad, cols if adj_a else rows)
    parts_b = array.gather(array.transpose(b) if adj_b else b, rows if adj_a else cols)
    if adj_a:  # the adjoint's entry (c, r) is the conjugate
        parts_a = _conj(parts_a)
    if adj_a == adj_b:  # b enters conjugated unless exactly one side is an adjoint
        parts_b = _conj(parts_b)
    return [None, math.reduce_sum(parts_a * parts_b, axis=-1), None, b_grad]


# -- SparseReduceSum / SparseReduceMax (+Sparse) ---------------------------------------------------------
def _reduce_axes(k: Any, axes: Any, rank: int) -> list[int]:
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise invalid(k, f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
        out.append(a % rank)
    return sorted(set(out))


def _reduce_dense_shape(b: BuildContext) -> TensorShape:
    shape, axes = b.const_shape(2), b.const(3)
    if shape.ndims is None or axes is None:
        return unknown_shape()
    rank = shape.ndims
    norm = {int(a) % rank for a in np.reshape(axes, -1)} if rank else set()
    if b.attrs["keep_dims"]:
        return TensorShape([1 if i in norm else d for i, d in enumerate(shape.dims)])
    return TensorShape([d for i, d in enumerate(shape.dims) if i not in norm])


def _grouped(k: Any, indices: Any, values: Any, shape: Any, axes: Any) -> tuple:
    shape = np.asarray(shape, np.int64).reshape(-1)
    idx, values = as_indices(k, indices, shape.size, "input_indices"), np.asarray(values)
    if values.shape != (idx.shape[0],):
        raise invalid(k, f"input_values must be a vector of {idx.shape[0]} values, got shape {list(values.shape)}")
    check_bounds(k, idx, shape)
    reduced = _reduce_axes(k, axes, shape.size)
    kept = [d for d in range(shape.size) if d not in reduced]
    return idx, values, shape, reduced, kept


def _out_shape(shape: np.ndarray, reduced: list[int], keep: bool) -> np.ndarray:
    if keep:
        out = shape.copy()
        out[reduced] = 1
        return out
    return np.delete(shape, reduced)


def _reduce_kernel(kind: str, sparse_output: bool) -> Any:
    def kernel(k, input_indices, input_values, input_shape, reduction_axes):
        idx, values, shape, reduced, kept = _grouped(k, input_indices, input_values, input_shape, reduction_axes)
        dtype = k.out_dtypes[1 if sparse_output else 0]
        out_shape = _out_shape(shape, reduced, k.keep_dims)
        if sparse_output:  # only the groups that hold entries, in row-major order
            groups, inverse = np.unique(idx[:, kept], axis=0, return_inverse=True)
            inverse = np.reshape(inverse, -1)
            sums = _scatter(kind, values, inverse, (len(groups),), dtype)
            if k.keep_dims:
                full = np.zeros((len(groups), shape.size), np.int64)
                full[:, kept] = groups
                groups = full
            return [groups.astype(np.int64), sums, out_shape]
        target = tuple(int(d) for d in np.delete(shape, reduced))
        where = tuple(idx[:, kept].T) if kept else ()
        out = _scatter(kind, values, where, target, dtype)
        return out.reshape(tuple(int(d) for d in out_shape))

    return kernel


def _scatter(kind: str, values: np.ndarray, where: Any, shape: tuple, dtype: Any) -> np.ndarray:
    if isinstance(where, tuple) and not where:  # every axis reduced
        out = values.sum(dtype=dtype) if kind == "Sum" else (np.max(values) if values.size else 0)
        return np.asarray(out, dtype)
    if kind == "Sum":
        out = np.zeros(shape, dtype)
        np.add.at(out, where, values)
        return out
    # The max over the entries present; an output no entry falls in is 0, as TF's kernel leaves it.
    low = -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
    out = np.full(shape, low, dtype)
    np.maximum.at(out, where, values)
    touched = np.zeros(shape, bool)
    touched[where] = True
    out[~touched] = 0
    return out


def _reduce_sparse_shape(b: BuildContext) -> list[TensorShape]:
    dense = _reduce_dense_shape(b)
    return [TensorShape([None, dense.ndims]), TensorShape([None]), TensorShape([dense.ndims])]


_REDUCE_IN = "input_indices: int64, input_values: T, input_shape: int64, reduction_axes: int32"
SparseReduceSum = op("SparseReduceSum", inputs=_REDUCE_IN, outputs="output: T", types={"T": NUMERIC},
                     attrs={"keep_dims": False}, shape=_reduce_dense_shape)(_reduce_kernel("Sum", False))
SparseReduceMax = op("SparseReduceMax", inputs=_REDUCE_IN, outputs="output: T", types={"T": REAL},
                     attrs={"keep_dims": False}, shape=_reduce_dense_shape,
                     differentiable=False)(_reduce_kernel("Max", False))
SparseReduceSumSparse = op("SparseReduceSumSparse", inputs=_REDUCE_IN,
                           outputs="output_indices: int64, output_values: T, output_shape: int64",
                           types={"T": NUMERIC}, attrs={"keep_dims": False}, shape=_reduce_sparse_shape,
                           differentiable=False)(_reduce_kernel("Sum", True))
SparseReduceMaxSparse = op("SparseReduceMaxSparse", inputs=_REDUCE_IN,
                           outputs="output_indices: int64, output_values: T, output_shape: int64",
                           types={"T": REAL}, attrs={"keep_dims": False}, shape=_reduce_sparse_shape,
                           differentiable=False)(_reduce_kernel("Max", True))


def kept_dims(dense_shape: Tensor, axes: Tensor) -> Tensor:
    """TF's `reduced_shape` for a SparseTensor: its int64 dense shape with the reduced axes set to 1."""
    rank = math.cast(array.size(dense_shape), dtypes.int32)
    axes = (array.reshape(math.cast(axes, dtypes.int32), np.array([-1], np.int32)) + rank) % math.maximum(rank, 1)
    reduced = math.reduce_any(math.equal(array.expand_dims(math.range(0, rank), 1), array.expand_dims(axes, 0)), 1)
    return math.where_v2(reduced, array.ones_like(dense_shape), dense_shape)


@SparseReduceSum.gradient
def _sparse_reduce_sum_grad(op: Operation, grad: Tensor) -> list[Any]:
    """TF's rule: each value gets the output gradient of the group its index falls in."""
    indices, _, shape, axes = op.inputs
    kept = kept_dims(shape, axes)
    grad = array.reshape(grad, kept)
    scale = shape // kept
    return [None, array.gather_nd(grad, indices // scale), None, None]


# -- SparseSoftmax ------------------------------------------------------------------------------------------------
@op("SparseSoftmax", inputs="sp_indices: int64, sp_values: T, sp_shape: int64", outputs="output: T",
    types={"T": FLOAT}, shape=lambda b: b.shape(1))
def sparse_softmax_op(k, sp_indices, sp_values, sp_shape):
    shape = np.asarray(sp_shape, np.int64).reshape(-1)
    if shape.size < 2:
        raise invalid(k, f"Input should have rank >= 2, but received shape: [{_fmt(shape)}]")
    idx, values = as_indices(k, sp_indices, shape.size, "sp_indices"), np.asarray(sp_values)
    if values.shape != (idx.shape[0],):
        raise invalid(k, f"sp_values must be a vector of {idx.shape[0]} values, got shape {list(values.shape)}")
    if not idx.shape[0]:
        return values.copy()
    _, group = np.unique(idx[:, :-1], axis=0, return_inverse=True)
    group = np.reshape(group, -1)
    top = np.full(group.max() + 1, -np.inf, values.dtype)
    np.maximum.at(top, group, values)
    e = np.exp(values - top[group])
    total = np.zeros_like(top)
    np.add.at(total, group, e)
    return (e / total[group]).astype(values.dtype, copy=False)


@sparse_softmax_op.gradient
def _sparse_softmax_grad(op: Operation, grad: Tensor) -> list[Any]:
    """TF's rule (SoftmaxGrad on the entries): (grad - sum over the row of grad * y) * y."""
    indices, _, shape = op.inputs
    y = op.outputs[0]
    last = np.array([-1], np.int32)
    row_sums = -SparseReduceSum(indices, y * grad, shape, last, keep_dims=True)
    shifted = SparseDenseCwiseAdd(indices, grad, shape, row_sums)
    return [None, shifted * y, None]


# -- SparseDenseCwiseAdd / Mul / Div -------------------------------------------------------------------------------
def _dense_at(k: Any, indices: Any, shape: Any, dense: Any) -> np.ndarray:
    """The dense operand's value at each sparse index, broadcasting the dense operand to the sparse shape."""
    shape, dense = np.asarray(shape, np.int64).reshape(-1), np.asarray(dense)
    idx = as_indices(k, indices, shape.size, "sp_indices")
    lead = shape.size - dense.ndim
    tail = shape[lead:] if lead >= 0 else shape
    if lead < 0 or any(d not in (1, int(s)) for d, s in zip(dense.shape, tail)):
        raise invalid(k, f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible shapes: "
                         f"[{_fmt(np.array(dense.shape))}] vs. [{_fmt(shape)}]")
    where = tuple(np.zeros(len(idx), np.int64) if d == 1 else idx[:, lead + j] for j, d in enumerate(dense.shape))
    return dense[where] if dense.ndim else np.broadcast_to(dense, (len(idx),))


def _cwise(name: str, fn: Any) -> Any:
    def kernel(k, sp_indices, sp_values, sp_shape, dense):
        values = np.asarray(sp_values)
        other = _dense_at(k, sp_indices, sp_shape, dense)
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(values, other).astype(values.dtype, copy=False)

    kernel.__name__ = f"{name}_kernel"
    return op(name, inputs="sp_indices: int64, sp_values: T, sp_shape: int64, dense: T", outputs="output: T",
              types={"T": NUMERIC}, shape=lambda b: b.shape(1))(kernel)


SparseDenseCwiseAdd = _cwise("SparseDenseCwiseAdd", np.add)
SparseDenseCwiseMul = _cwise("SparseDenseCwiseMul", np.multiply)
SparseDenseCwiseDiv = _cwise("SparseDenseCwiseDiv",
                             lambda x, y: x // y if np.result_type(x, y).kind in "iu" else x / y)


def _cwise_grad(op: Operation, grad: Tensor, kind: str) -> list[Any]:
    """TF's _SparseDenseCwiseMulOrDivGrad: the dense operand's gradient is scattered back to the
    (broadcast) positions the entries read. TF has no gradient for Add; it is the same with dx = grad."""
    indices, values, shape, y = op.inputs
    y_shape = math.cast(array.shape(y), dtypes.int64)
    added = array.expand_dims(array.size(shape) - array.size(y_shape), 0)
    augmented = array.concat([array.ones(added, dtype=dtypes.int64), y_shape], 0)
    scaled = indices // (shape // augmented)
    scaled = array.slice(scaled, array.concat([np.array([0], np.int32), math.cast(added, dtypes.int32)], 0),
                         np.array([-1, -1], np.int32))
    dense_values = array.gather_nd(y, scaled)
    if kind == "Add":
        dx, dy_values = grad, grad
    elif kind == "Mul":
        dx, dy_values = grad * dense_values, grad * values
    else:
        dx, dy_values = grad / dense_values, grad * (-values / math.square(dense_values))
    dy = sparse_tensor_dense_add_op(scaled, dy_values, y_shape, array.zeros_like(y))
    return [None, dx, None, dy]


SparseDenseCwiseAdd.gradient(lambda op, grad: _cwise_grad(op, grad, "Add"))
SparseDenseCwiseMul.gradient(lambda op, grad: _cwise_grad(op, grad, "Mul"))
SparseDenseCwiseDiv.gradient(lambda op, grad: _cwise_grad(op, grad, "Div"))


# -- SparseSegmentSum / Mean / SqrtN (+WithNumSegments, +Grad) ------------------------------------------------------
def _segment_shape(b: BuildContext) -> TensorShape:
    data, idx, ids = b.shape(0), b.shape(1), b.shape(2)
    for what, s in (("indices", idx), ("segment_ids", ids)):
        if s.ndims is not None and s.ndims != 1:
            raise b.error(f"{what} must be a vector, got shape {s}")
    if data.ndims is None:
        return unknown_shape()
    if data.ndims == 0:
        raise b.error("data must have rank >= 1, got a scalar")
    rows = None
    if len(b.inputs) == 4:
        n = b.const(3)
        rows = int(n) if n is not None else None
    return TensorShape([rows]).concatenate(data[1:])


def _segment_weights(kind: str, ids: np.ndarray, rows: int, dtype: Any) -> np.ndarray:
    counts = np.bincount(ids, minlength=rows)[:rows].astype(dtype)
    if kind == "Sum":
        return np.ones_like(counts)
    counts = np.maximum(counts, 1)
    return 1 / counts if kind == "Mean" else 1 / np.sqrt(counts)


def _check_segments(k: Any, data_rows: int, idx: np.ndarray, ids: np.ndarray, num: int | None) -> int:
    if idx.shape != ids.shape:
        raise invalid(k, f"segment_ids and indices should have same size: {ids.size} vs. {idx.size}")
    bad = np.flatnonzero((idx < 0) | (idx >= data_rows))
    if bad.size:
        i = int(bad[0])
        raise invalid(k, f"Bad: indices[{i}] == {int(idx[i])} out of range [0, {data_rows})")
    if ids.size and (ids[0] < 0 or (np.diff(ids) < 0).any()):
        raise invalid(k, "segment ids are not increasing" if ids[0] >= 0 else "segment ids must be >= 0")
    rows = num if num is not None else (int(ids[-1]) + 1 if ids.size else 0)
    if ids.size and ids[-1] >= rows:
        raise invalid(k, f"segment id {int(ids[-1])} out of range [0, {rows}), possibly because 'num_segments' "
                         f"input is less than or equal to the maximum segment id")
    return rows


def _segment_op(kind: str, with_num: bool) -> Any:
    name = f"SparseSegment{kind}" + ("WithNumSegments" if with_num else "")

    def kernel(k, data, indices, segment_ids, num_segments=None):
        data = np.asarray(data)
        idx, ids = np.asarray(indices, np.int64), np.asarray(segment_ids, np.int64)
        num = int(num_segments) if num_segments is not None else None
        rows = _check_segments(k, data.shape[0], idx, ids, num)
        out = np.zeros((rows,) + data.shape[1:], data.dtype)
        np.add.at(out, ids, data[idx])
        if kind != "Sum":
            w = _segment_weights(kind, ids, rows, data.dtype)
            out *= w.reshape((-1,) + (1,) * (data.ndim - 1))
        return out

    kernel.__name__ = f"{name}_kernel"
    inputs = "data: T, indices: Tidx, segment_ids: Tsegmentids" + (", num_segments: Tnumsegments" if with_num else "")
    types = {"T": REAL if kind == "Sum" else FLOAT, "Tidx": INDEX, "Tsegmentids": INDEX}
    defaults = {"Tidx": dtypes.int32, "Tsegmentids": dtypes.int32}
    if with_num:
        types["Tnumsegments"] = INDEX
        defaults["Tnumsegments"] = dtypes.int32
    return op(name, inputs=inputs, outputs="output: T", types=types, type_defaults=defaults,
              shape=_segment_shape)(kernel)


def _segment_grad_op(kind: str) -> Any:
    def kernel(k, grad, indices, segment_ids, output_dim0):
        grad = np.asarray(grad)
        idx, ids = np.asarray(indices, np.int64), np.asarray(segment_ids, np.int64)
        rows = int(output_dim0)
        bad = np.flatnonzero((idx < 0) | (idx >= rows))
        if bad.size:
            i = int(bad[0])
            raise invalid(k, f"Index {int(idx[i])} out of range [0, {rows}).")
        if ids.size and (ids.min() < 0 or ids.max() >= grad.shape[0]):
            raise invalid(k, f"Segment id out of range [0, {grad.shape[0]}).")
        w = _segment_weights(kind, ids, grad.shape[0], grad.dtype)
        out = np.zeros((rows,) + grad.shape[1:], grad.dtype)
        np.add.at(out, idx, grad[ids] * w[ids].reshape((-1,) + (1,) * (grad.ndim - 1)))
        return out

    def shape(b: BuildContext) -> TensorShape:
        n = b.const(3)
        g = b.shape(0)
        head = TensorShape([int(n) if n is not None else None])
        return head.concatenate(g[1:]) if g.ndims else unknown_shape()

    name = f"SparseSegment{kind}Grad"
    kernel.__name__ = f"{name}_kernel"
    return op(name, inputs="grad: T, indices: Tidx, segment_ids: Tsegmentids, output_dim0: int32",
              outputs="output: T", types={"T": FLOAT, "Tidx": INDEX, "Tsegmentids": INDEX},
              type_defaults={"Tidx": dtypes.int32, "Tsegmentids": dtypes.int32}, shape=shape,
              differentiable=False)(kernel)


SEGMENT_OPS = {(kind, with_num): _segment_op(kind, with_num) for kind in ("Sum", "Mean", "SqrtN")
               for with_num in (False, True)}
SEGMENT_GRAD_OPS = {kind: _segment_grad_op(kind) for kind in ("Sum", "Mean", "SqrtN")}


def _register_segment_grad(kind: str, with_num: bool) -> None:
    grad_op = SEGMENT_GRAD_OPS[kind]

    def grad_fn(op: Operation, grad: Tensor) -> list[Any]:
        """TF's rule: the gradient rows (scaled by 1/n or 1/sqrt(n)) summed back onto the data rows read."""
        dim0 = array.shape(op.inputs[0], out_type=dtypes.int32)[0]
        return [grad_op(grad, op.inputs[1], op.inputs[2], dim0)] + [None] * (len(op.inputs) - 1)

    SEGMENT_OPS[(kind, with_num)].gradient(grad_fn)


for _kind in ("Sum", "Mean", "SqrtN"):
    for _with_num in (False, True):
        _register_segment_grad(_kind, _with_num)

__all__: list[str] = []
