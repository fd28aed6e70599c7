"""Sparse names of TF1 that sparse_ops.py lacks: edit_distance (EditDistance), sparse_maximum /
sparse_minimum (SparseSparseMaximum / SparseSparseMinimum), and the composites sparse_mask (on
IndexedSlices), sparse_reset_shape, sparse_expand_dims and sparse_eye, built as TF1 builds them.

EditDistance and SparseSparseMaximum/Minimum have no gradient, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.gradients import IndexedSlices
from asyncflow.graph import Tensor, control_dependencies, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.array_index import gather
from asyncflow.ops.array_more import list_diff_op
from asyncflow.ops.check_ops import assert_equal, assert_less_equal
from asyncflow.ops.registry import REAL, BuildContext, constant_value, convert_to_tensor, op
from asyncflow.ops.sparse_ops import _sparse
from asyncflow.shapes import TensorShape, unknown_shape
from asyncflow.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = ["edit_distance", "sparse_maximum", "sparse_minimum", "sparse_mask", "sparse_reset_shape",
           "sparse_expand_dims", "sparse_eye"]


# -- edit_distance --------------------------------------------------------------------------------------------
def _edit_distance_shape(b: BuildContext) -> TensorShape:
    shapes = [b.const(2), b.const(5)]
    if shapes[0] is not None and shapes[1] is not None:
        h, t = np.asarray(shapes[0]).reshape(-1), np.asarray(shapes[1]).reshape(-1)
        if len(h) != len(t):
            raise b.error(f"hypothesis_shape {h.tolist()} and truth_shape {t.tolist()} must have the same rank")
        return TensorShape(np.maximum(h[:-1], t[:-1]).tolist())
    for i in (2, 5):
        if b.shape(i).ndims == 1 and b.shape(i)[0].value is not None:
            return unknown_shape(b.shape(i)[0].value - 1)
    return unknown_shape()


def _levenshtein(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _sequences(indices: np.ndarray, values: np.ndarray) -> dict[tuple, list]:
    """The values of each sequence (all index columns but the last), in their last-column order."""
    groups: dict[tuple, list] = {}
    for where, v in sorted(zip(map(tuple, indices.tolist()), values.tolist()), key=lambda p: p[0]):
        groups.setdefault(where[:-1], []).append(v)
    return groups


@op("EditDistance", inputs="hypothesis_indices: int64, hypothesis_values: T, hypothesis_shape: int64, "
    "truth_indices: int64, truth_values: T, truth_shape: int64", outputs="output: float32",
    types={"T": dtypes.ALL}, attrs={"normalize": True}, shape=_edit_distance_shape, differentiable=False)
def edit_distance_op(k, h_idx, h_val, h_shape, t_idx, t_val, t_shape):
    h_shape, t_shape = np.asarray(h_shape).reshape(-1), np.asarray(t_shape).reshape(-1)
    if len(h_shape) != len(t_shape) or len(h_shape) < 1:
        raise ValueError(f"EditDistance '{k.name}': hypothesis_shape {h_shape.tolist()} and truth_shape "
                         f"{t_shape.tolist()} must have the same rank, at least 1")
    for what, idx, shape in (("hypothesis", h_idx, h_shape), ("truth", t_idx, t_shape)):
        idx = np.asarray(idx).reshape(-1, len(shape))
        if idx.size and ((idx < 0) | (idx >= shape)).any():
            raise ValueError(f"EditDistance '{k.name}': a {what} index lies outside its shape {shape.tolist()}")
    out = np.zeros(np.maximum(h_shape[:-1], t_shape[:-1]), np.float32)
    hyp = _sequences(np.asarray(h_idx).reshape(-1, len(h_shape)), np.asarray(h_val))
    truth = _sequences(np.asarray(t_idx).reshape(-1, len(t_shape)), np.asarray(t_val))
    for where in set(hyp) | set(truth):
        h, t = hyp.get(where, []), truth.get(where, [])
        if not t:  # no truth: the hypothesis length, or infinity once normalised
            out[where] = np.inf if k.normalize and h else len(h)
        elif not h:
            out[where] = 1.0 if k.normalize else len(t)
        else:
            out[where] = _levenshtein(h, t) / (len(t) if k.normalize else 1)
    return out


def edit_distance(hypothesis: Any, truth: Any, normalize: bool = True, name: str = "edit_distance") -> Tensor:
    """`af.edit_distance`: the Levenshtein distance between the sequences (last dimension) of two
    SparseTensors, divided by the truth's length when `normalize`."""
    if not isinstance(hypothesis, (SparseTensor, SparseTensorValue)):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, (SparseTensor, SparseTensorValue)):
        raise TypeError("Truth must be a SparseTensor.")
    hypothesis, truth = _sparse(hypothesis), _sparse(truth)
    return edit_distance_op(hypothesis.indices, hypothesis.values, hypothesis.dense_shape, truth.indices,
                            truth.values, truth.dense_shape, normalize=bool(normalize), name=name)


# -- sparse_maximum, sparse_minimum ---------------------------------------------------------------------------
def _sparse_sparse_shape(b: BuildContext) -> list[TensorShape]:
    rank = b.shape(0)[1].value if b.shape(0).ndims == 2 else None
    return [TensorShape([None, rank]), TensorShape([None])]


def _sparse_sparse(name: str, pick: Any) -> Any:
    def kernel(k, a_idx, a_val, a_shape, b_idx, b_val, b_shape):
        a_shape, b_shape = np.asarray(a_shape).reshape(-1), np.asarray(b_shape).reshape(-1)
        if a_shape.tolist() != b_shape.tolist():
            raise ValueError(f"{name} '{k.name}': Operands' shapes do not match: got {a_shape.tolist()} and "
                             f"{b_shape.tolist()}")
        rank = len(a_shape)
        a_idx, b_idx = np.asarray(a_idx).reshape(-1, rank), np.asarray(b_idx).reshape(-1, rank)
        a_val, b_val = np.asarray(a_val), np.asarray(b_val)
        # An index in only one operand meets the other's implicit zero.
        table: dict[tuple, list] = {}
        for idx, val, side in ((a_idx, a_val, 0), (b_idx, b_val, 1)):
            for where, v in zip(map(tuple, idx.tolist()), val.tolist()):
                table.setdefault(where, [0, 0])[side] = v
        keys = sorted(table)
        out_idx = np.asarray(keys, np.int64).reshape(-1, rank)
        out_val = np.asarray([pick(*table[key]) for key in keys], k.out_dtypes[1]).reshape(-1)
        return out_idx, out_val

    kernel.__name__ = name
    return op(name, inputs="a_indices: int64, a_values: T, a_shape: int64, b_indices: int64, b_values: T, "
              "b_shape: int64", outputs="output_indices: int64, output_values: T", types={"T": REAL},
              shape=_sparse_sparse_shape, differentiable=False)(kernel)


SparseSparseMaximum = _sparse_sparse("SparseSparseMaximum", max)
SparseSparseMinimum = _sparse_sparse("SparseSparseMinimum", min)


def _sparse_pair(opdef: Any, sp_a: Any, sp_b: Any, name: str | None) -> SparseTensor:
    sp_a, sp_b = _sparse(sp_a), _sparse(sp_b)
    out_indices, out_values = opdef(sp_a.indices, sp_a.values, sp_a.dense_shape, sp_b.indices, sp_b.values,
                                    sp_b.dense_shape, name=name)
    return SparseTensor(out_indices, out_values, sp_a.dense_shape)


def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_maximum` / `af.sparse.maximum`: the element-wise maximum of two same-shaped SparseTensors
    (an entry missing from one counts as zero)."""
    return _sparse_pair(SparseSparseMaximum, sp_a, sp_b, name)


def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_minimum` / `af.sparse.minimum`: the element-wise minimum of two same-shaped SparseTensors."""
    return _sparse_pair(SparseSparseMinimum, sp_a, sp_b, name)


# -- composites -----------------------------------------------------------------------------------------------
def sparse_mask(a: IndexedSlices, mask_indices: Any, name: str | None = None) -> IndexedSlices:
    """`af.sparse_mask`: the IndexedSlices `a` without the rows whose index is in `mask_indices`."""
    with name_scope(name, "sparse_mask", [a, mask_indices]) as scope:
        out_indices, to_gather = list_diff_op(a.indices, mask_indices)
        return IndexedSlices(gather(a.values, to_gather, name=scope), out_indices, a.dense_shape)


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """`af.sparse_reset_shape`: the same entries with dense shape `new_shape` (each dimension at least the
    old one), or, when None, the tightest shape that holds the indices."""
    sp = _sparse(sp_input)
    in_indices = array.identity(sp.indices)
    in_values = array.identity(sp.values)
    in_shape = array.identity(sp.dense_shape)
    if new_shape is None:
        low_bound = math.reduce_max(in_indices, axis=0)
        shape = math.maximum(convert_to_tensor(0, dtype=dtypes.int64), low_bound + array.ones_like(in_shape))
        return SparseTensor(in_indices, in_values, shape)
    shape = convert_to_tensor(new_shape)
    if shape.shape.ndims not in (None, 1):
        raise ValueError(f"Shape {shape.shape} must have rank 1 (new_shape)")
    shape = math.cast(shape, dtypes.int64)
    if shape.shape.ndims == 1 and in_shape.shape.ndims == 1 and \
            not shape.shape[:1].is_compatible_with(in_shape.shape[:1]):
        raise ValueError(f"Dimensions {shape.shape[0]} and {in_shape.shape[0]} are not compatible "
                         "(new_shape and the rank of sp_input)")
    known = constant_value(shape)
    if known is not None and sp.get_shape().is_fully_defined():
        old = np.array(sp.get_shape().as_list())
        if not np.all(old <= known):
            raise ValueError(f"Requested new_shape should have dimension sizes >= sp_input.shape.  Found new_shape "
                             f"({old}), sp_input.shape ({known}).")
        return SparseTensor(in_indices, in_values, known)
    with control_dependencies([assert_equal(array.shape(in_shape), array.shape(shape))]):
        shape = array.identity(shape)
    with control_dependencies([assert_less_equal(in_shape, shape)]):
        shape = array.identity(shape)
    return SparseTensor(in_indices, in_values, shape)


def sparse_expand_dims(sp_input: Any, axis: Any = None, name: str | None = None) -> SparseTensor:
    """`af.sparse.expand_dims`: a size-1 dimension inserted into a SparseTensor at `axis` (default -1)."""
    sp = _sparse(sp_input)
    rank = sp.dense_shape.shape[0].value if sp.dense_shape.shape.ndims == 1 else None
    rank = array.shape(sp.dense_shape)[0] if rank is None else rank
    axis = -1 if axis is None else axis
    with name_scope(name, "expand_dims", [sp]):
        if isinstance(axis, (int, np.integer)):
            axis = convert_to_tensor(int(axis), name="axis", dtype=dtypes.int32)
        elif not isinstance(axis, Tensor):
            raise TypeError("axis must be an integer value in range [-rank(sp_input) - 1, rank(sp_input)]")
        axis = math.where_v2(axis >= 0, axis, axis + rank + 1)
        rows = array.shape(sp.indices)[0]
        new_column = array.zeros(array.stack([rows, 1]), dtype=dtypes.int64)
        before = array.slice(sp.indices, [0, 0], array.stack([-1, axis]))
        after = array.slice(sp.indices, array.stack([0, axis]), [-1, -1])
        indices = array.concat([before, new_column, after], axis=1)
        shape_before = array.slice(sp.dense_shape, [0], array.reshape(axis, [1]))
        shape_after = array.slice(sp.dense_shape, array.reshape(axis, [1]), [-1])
        one = convert_to_tensor([1], name="new_shape", dtype=dtypes.int64)
        shape = array.concat([shape_before, one, shape_after], axis=0)
        return SparseTensor(indices, sp.values, shape)


def _int64(value: Any, what: str) -> Tensor:
    if isinstance(value, (int, np.integer)):
        return convert_to_tensor(int(value), name=what, dtype=dtypes.int64)
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be an integer value")
    return value if value.dtype.base_dtype == dtypes.int64 else math.cast(value, dtypes.int64)


def sparse_eye(num_rows: Any, num_columns: Any = None, dtype: Any = dtypes.float32,
               name: str | None = None) -> SparseTensor:
    """`af.sparse.eye`: a [num_rows, num_columns] SparseTensor with ones on the diagonal."""
    with name_scope(name, "eye", [num_rows, num_columns]):
        num_rows = _int64(num_rows, "num_rows")
        num_columns = num_rows if num_columns is None else _int64(num_columns, "num_columns")
        diag = math.range(math.minimum(num_rows, num_columns), dtype=dtypes.int64)
        return SparseTensor(array.stack([diag, diag], axis=1),
                            array.ones(array.reshape(math.minimum(num_rows, num_columns), [1]), dtype=dtype),
                            array.stack([num_rows, num_columns]))
