"""The sparse API of tf.compat.v1: `sparse_placeholder`, `sparse_tensor_to_dense`, `sparse_to_dense`,
`sparse_reduce_sum`/`max` (and `*_sparse`), `sparse_tensor_dense_matmul`, `sparse_concat`,
`sparse_retain`, `sparse_reorder`, `sparse_reshape`, `sparse_add`, `sparse_slice`, `sparse_split`,
`sparse_fill_empty_rows`, `sparse_softmax`, `sparse_merge`/`sparse_to_indicator`,
`sparse_transpose`, `sparse_segment_sum`/`mean`/`sqrt_n`.

These are wrappers that take and give `SparseTensor`s (asyncflow/sparse_tensor.py) and name the
ops as TF1 does; the ops themselves (kernels, shapes, gradients) are declared in
asyncflow/ops/sparse_structure.py and asyncflow/ops/sparse_math.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.registry import constant_value, constant_value_as_shape, convert_to_tensor
from asyncflow.ops.sparse_math import (
    SEGMENT_OPS,
    SparseDenseCwiseDiv,
    SparseDenseCwiseMul,
    SparseReduceMax,
    SparseReduceMaxSparse,
    SparseReduceSum,
    SparseReduceSumSparse,
    sparse_softmax_op,
    sparse_tensor_dense_matmul_op,
)
from asyncflow.ops.sparse_structure import (
    sparse_add_op,
    sparse_concat_op,
    sparse_fill_empty_rows_op,
    sparse_reorder_op,
    sparse_reshape_op,
    sparse_slice_op,
    sparse_split_op,
    sparse_tensor_dense_add_op,
    sparse_to_dense_op,
)
from asyncflow.shapes import TensorShape, as_shape, dimension_value, unknown_shape
from asyncflow.sparse_tensor import SparseTensor, SparseTensorValue


def _sparse(sp_input: Any) -> SparseTensor:
    """A SparseTensor from a SparseTensor or SparseTensorValue (TF's _convert_to_sparse_tensor)."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}.")
    return sp_input


def _sparse_list(sp_inputs: Any) -> list[SparseTensor]:
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError(f"Inputs must be a list or tuple, got {type(sp_inputs).__name__}.")
    return [_sparse(s) for s in sp_inputs]


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """`af.sparse_placeholder`: a SparseTensor fed with a SparseTensorValue or (indices, values, shape).

    Its dense_shape is a placeholder defaulting to `shape` (-1 for unknown dims), so it can be fed too."""
    shape_name = f"{name}/shape" if name is not None else None
    if shape is None:
        rank = None
        dense_shape = array.placeholder(dtypes.int64, shape=[None], name=shape_name)
        static = unknown_shape()
    else:
        if isinstance(shape, Tensor):
            rank = shape.shape[0].value
            static = constant_value_as_shape(shape)
        else:
            static = as_shape([None if dimension_value(d) == -1 else dimension_value(d) for d in shape])
            rank = len(static.dims)
            shape = convert_to_tensor([-1 if d is None else d for d in static.as_list()], dtype=dtypes.int64,
                                      name=f"{name}/shape_default" if name is not None else None)
        dense_shape = array.placeholder_with_default(shape, shape=shape.shape, name=shape_name)
    result = SparseTensor(
        values=array.placeholder(dtype, shape=[None], name=f"{name}/values" if name is not None else None),
        indices=array.placeholder(dtypes.int64, shape=[None, rank],
                                  name=f"{name}/indices" if name is not None else None),
        dense_shape=dense_shape)
    result.set_shape(static)
    return result


# -- to dense -------------------------------------------------------------------------------------------------
def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any, default_value: Any = 0,
                    validate_indices: bool = True, name: str | None = None) -> Tensor:
    """`af.sparse_to_dense`: dense[sparse_indices[i]] = sparse_values[i], default_value elsewhere."""
    values = convert_to_tensor(sparse_values, name="sparse_values")
    default = convert_to_tensor(default_value, dtype=values.dtype.base_dtype, name="default_value")
    return sparse_to_dense_op(sparse_indices, output_shape, values, default, validate_indices=validate_indices,
                              name=name)


def sparse_tensor_to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
                           name: str | None = None) -> Tensor:
    """`af.sparse_tensor_to_dense` (`af.sparse.to_dense`); indices must be sorted unless not validated."""
    sp = _sparse(sp_input)
    if default_value is None:
        default_value = array.zeros([], dtype=sp.dtype)
    default = convert_to_tensor(default_value, dtype=sp.dtype.base_dtype)
    return sparse_to_dense_op(sp.indices, sp.dense_shape, sp.values, default, validate_indices=validate_indices,
                              name=name)


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse.from_dense`: the nonzero entries of `tensor`."""
    with name_scope(name, "dense_to_sparse"):
        tensor = convert_to_tensor(tensor)
        indices = math.where_v2(math.not_equal(tensor, array.zeros_like(tensor)))
        return SparseTensor(indices, array.gather_nd(tensor, indices),
                            array.shape(tensor, out_type=dtypes.int64))


# -- reductions -----------------------------------------------------------------------------------------------
def _reduction_axes(sp: SparseTensor, axis: Any) -> Any:
    if axis is not None:
        return axis
    rank = sp.shape.ndims
    if rank is not None:
        return np.arange(rank, dtype=np.int32)
    return math.range(0, math.cast(array.size(sp.dense_shape), dtypes.int32))


def _reduce_args(axis: Any, keepdims: Any, reduction_axes: Any, keep_dims: Any) -> tuple[Any, bool]:
    if axis is not None and reduction_axes is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_axes'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    return (axis if axis is not None else reduction_axes), bool(keepdims if keepdims is not None else keep_dims)


def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: Any = None, reduction_axes: Any = None,
                      keep_dims: Any = None) -> Tensor:
    """`af.sparse_reduce_sum`: the dense sum of a SparseTensor over `axis` (all axes by default)."""
    axis, keep = _reduce_args(axis, keepdims, reduction_axes, keep_dims)
    sp = _sparse(sp_input)
    return SparseReduceSum(sp.indices, sp.values, sp.dense_shape, _reduction_axes(sp, axis), keep_dims=keep)


def sparse_reduce_max(sp_input: Any, axis: Any = None, keepdims: Any = None, reduction_axes: Any = None,
                      keep_dims: Any = None) -> Tensor:
    """`af.sparse_reduce_max`: the max over the entries present (the dtype's lowest where none is)."""
    axis, keep = _reduce_args(axis, keepdims, reduction_axes, keep_dims)
    sp = _sparse(sp_input)
    return SparseReduceMax(sp.indices, sp.values, sp.dense_shape, _reduction_axes(sp, axis), keep_dims=keep)


def sparse_reduce_sum_sparse(sp_input: Any, axis: Any = None, keepdims: Any = None, reduction_axes: Any = None,
                             keep_dims: Any = None) -> SparseTensor:
    """`af.sparse_reduce_sum_sparse`: the sum as a SparseTensor (only the groups holding entries)."""
    axis, keep = _reduce_args(axis, keepdims, reduction_axes, keep_dims)
    sp = _sparse(sp_input)
    return SparseTensor(*SparseReduceSumSparse(sp.indices, sp.values, sp.dense_shape, _reduction_axes(sp, axis),
                                               keep_dims=keep))


def sparse_reduce_max_sparse(sp_input: Any, axis: Any = None, keepdims: Any = None, reduction_axes: Any = None,
                             keep_dims: Any = None) -> SparseTensor:
    """`af.sparse_reduce_max_sparse`: the max as a SparseTensor (only the groups holding entries)."""
    axis, keep = _reduce_args(axis, keepdims, reduction_axes, keep_dims)
    sp = _sparse(sp_input)
    return SparseTensor(*SparseReduceMaxSparse(sp.indices, sp.values, sp.dense_shape, _reduction_axes(sp, axis),
                                               keep_dims=keep))


# -- products and sums ----------------------------------------------------------------------------------------
def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: str | None = None) -> Tensor:
    """`af.sparse_tensor_dense_matmul` (`af.sparse.matmul`): op(sp_a) @ op(b), op an optional adjoint.
    With `b` the sparse one, TF's transposed form: (op(b)^T @ op(sp_a)^T)^T."""
    if isinstance(b, (SparseTensor, SparseTensorValue)):
        if adjoint_a != adjoint_b:
            return array.transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return array.transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a=not adjoint_a,
                                                          adjoint_b=not adjoint_b))
    sp = _sparse(sp_a)
    with name_scope(name, "SparseTensorDenseMatMul", [sp.indices, sp.values, b]):
        b = convert_to_tensor(b, name="b")
        return sparse_tensor_dense_matmul_op(sp.indices, sp.values, sp.dense_shape, b, adjoint_a=bool(adjoint_a),
                                             adjoint_b=bool(adjoint_b))


def sparse_add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """`af.sparse_add`: sparse + sparse (a SparseTensor; summed entries with |sum| < threshold dropped)
    or sparse + dense (a dense Tensor)."""
    if threshold is not None and thresh is not None:
        raise ValueError("Cannot specify both 'threshold' and 'thresh'")
    threshold = threshold if threshold is not None else (thresh if thresh is not None else 0)
    sparse_types = (SparseTensor, SparseTensorValue)
    if not any(isinstance(x, sparse_types) for x in (a, b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if all(isinstance(x, sparse_types) for x in (a, b)):
        a, b = _sparse(a), _sparse(b)
        real = a.values.dtype.base_dtype
        real = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(real, real)
        threshold = convert_to_tensor(threshold, dtype=real, name="threshold")
        indices, values, shape = sparse_add_op(a.indices, a.values, a.dense_shape, b.indices, b.values,
                                               b.dense_shape, threshold)
        try:
            static = a.shape.merge_with(b.shape)
        except ValueError:
            raise ValueError(f"sparse_add: Shapes {a.shape} and {b.shape} are incompatible") from None
        if static.is_fully_defined():
            shape = static.as_list()
        return SparseTensor(indices, values, shape)
    if isinstance(b, sparse_types):
        a, b = b, a
    a = _sparse(a)
    return sparse_tensor_dense_add_op(a.indices, a.values, a.dense_shape, convert_to_tensor(b, dtype=a.dtype))


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_softmax`: softmax over the entries of each innermost row (absent entries take no part)."""
    sp = _sparse(sp_input)
    with name_scope(name, "SparseSoftmax", [sp.indices, sp.values]) as scope:
        values = sparse_softmax_op(sp.indices, sp.values, sp.dense_shape, name=scope)
        return SparseTensor(sp.indices, values, sp.dense_shape)


# -- structure ------------------------------------------------------------------------------------------------
def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_reorder` (`af.sparse.reorder`): the entries in row-major order."""
    sp = _sparse(sp_input)
    indices, values = sparse_reorder_op(sp.indices, sp.values, sp.dense_shape, name=name)
    if sp.shape.is_fully_defined():
        return SparseTensor(indices, values, sp.shape.as_list())
    out = SparseTensor(indices, values, array.identity(sp.dense_shape))
    out.set_shape(sp.shape)
    return out


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_reshape`: the same entries in a dense shape of the same size (one dim may be -1)."""
    sp = _sparse(sp_input)
    shape = math.cast(shape, dtypes.int64)
    with name_scope(name, "SparseReshape", [sp.indices]) as scope:
        indices, out_shape = sparse_reshape_op(sp.indices, sp.dense_shape, shape, name=scope)
        static = constant_value_as_shape(shape)
        user = constant_value(shape)
        if user is not None and int(np.sum(np.reshape(user, -1) == -1)) > 1:
            raise ValueError(f"At most one dimension can be inferred (-1). Found: {np.reshape(user, -1).tolist()}")
        if static.ndims is not None and sp.shape.is_fully_defined():
            dims = static.as_list()
            in_size = int(np.prod(sp.shape.as_list()))
            unknown = [i for i, d in enumerate(dims) if d is None]
            if len(unknown) == 1 and 0 not in dims:
                rest = int(np.prod([d for d in dims if d is not None]))
                dims[unknown[0]] = in_size // rest if rest else None
            if None not in dims:
                if int(np.prod(dims)) != in_size:
                    raise ValueError(f"Cannot reshape a tensor with {in_size} elements to shape "
                                     f"{static.as_list()} ({int(np.prod(dims))} elements).")
                out_shape = convert_to_tensor(np.array(dims, np.int64))
        return SparseTensor(indices, array.identity(sp.values), out_shape)


def sparse_concat(axis: Any, sp_inputs: Any, name: str | None = None, expand_nonconcat_dim: bool = False,
                  concat_dim: Any = None, expand_nonconcat_dims: Any = None) -> SparseTensor:
    """`af.sparse_concat`: the SparseTensors joined along `axis`; with `expand_nonconcat_dim` the other
    dims grow to the largest input's."""
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    if concat_dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'concat_dim'")
        axis = concat_dim
    sps = _sparse_list(sp_inputs)
    if len(sps) == 1:
        return sps[0]
    shapes = [s.dense_shape for s in sps]
    if expand_nonconcat_dim:
        biggest = math.reduce_max(array.concat([array.reshape(s, np.array([1, -1], np.int32)) for s in shapes], 0), 0)
        shapes = [array.concat([biggest[:axis], s[-1:] if axis == -1 else s[axis:axis + 1],
                                np.zeros([0], np.int64) if axis == -1 else biggest[axis + 1:]], 0) for s in shapes]
    indices, values, shape = sparse_concat_op([s.indices for s in sps], [s.values for s in sps], shapes,
                                              concat_dim=int(axis), name=name)
    statics = [s.shape for s in sps]
    if all(s.ndims is not None for s in statics):
        if expand_nonconcat_dim:
            dims = [max((s[d].value for s in statics), key=lambda v: -1 if v is None else v)
                    if all(s[d].value is not None for s in statics) else None for d in range(statics[0].ndims)]
        else:
            dims = statics[0].as_list()
        along = [s[axis].value for s in statics]
        dims[axis] = None if None in along else sum(along)
        static = TensorShape(dims)
    else:
        static = unknown_shape()
    if all(s.is_fully_defined() for s in statics):
        return SparseTensor(indices, values, convert_to_tensor(static.as_list(), dtype=dtypes.int64))
    out = SparseTensor(indices, values, shape)
    out.set_shape(static)
    return out


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """`af.sparse_retain`: the entries where the boolean vector `to_retain` is true."""
    sp = _sparse(sp_input)
    to_retain = convert_to_tensor(to_retain)
    keep_shape = to_retain.shape
    if keep_shape.ndims is not None and keep_shape.ndims != 1:
        raise ValueError(f"sparse_retain: to_retain must be a vector, got shape {keep_shape}")
    n = sp.values.shape[0].value if sp.values.shape.ndims else None
    m = keep_shape[0].value if keep_shape.ndims else None
    if n is not None and m is not None and n != m:
        raise ValueError(f"sparse_retain: to_retain has {m} elements but sp_input has {n} values")
    where = array.reshape(math.where_v2(to_retain), np.array([-1], np.int32))
    return SparseTensor(array.gather(sp.indices, where), array.gather(sp.values, where),
                        array.identity(sp.dense_shape))


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """`af.sparse_slice`: the entries in the box [start, start + size), re-indexed from `start`."""
    sp = _sparse(sp_input)
    start = convert_to_tensor(start, dtypes.int64)
    size = convert_to_tensor(size, dtypes.int64)
    with name_scope(name, "SparseSlice", [sp.indices]) as scope:
        return SparseTensor(*sparse_slice_op(sp.indices, sp.values, sp.dense_shape, start, size, name=scope))


class KeywordRequired:
    def __repr__(self) -> str:
        return "KeywordRequired()"


_KEYWORD_REQUIRED = KeywordRequired()


def sparse_split(keyword_required: Any = _KEYWORD_REQUIRED, sp_input: Any = None, num_split: Any = None,
                 axis: Any = None, name: str | None = None, split_dim: Any = None) -> list[SparseTensor]:
    """`af.sparse_split`: `num_split` SparseTensors along `axis` (the first ones one larger when uneven)."""
    if not isinstance(keyword_required, KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is None:
        axis = split_dim
    if axis is None:
        raise ValueError("axis is required")
    sp = _sparse(sp_input)
    n = int(num_split)
    outs = sparse_split_op(convert_to_tensor(axis, dtypes.int64), sp.indices, sp.values, sp.dense_shape,
                           num_split=n, name=name)
    return [SparseTensor(outs[i], outs[n + i], outs[2 * n + i]) for i in range(n)]


def sparse_fill_empty_rows(sp_input: Any, default_value: Any, name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """`af.sparse_fill_empty_rows`: each empty row gets an entry [row, 0, ...] = default_value; also
    gives which rows were empty."""
    sp = _sparse(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp.indices]):
        default = convert_to_tensor(default_value, dtype=sp.values.dtype.base_dtype)
        indices, values, empty, _ = sparse_fill_empty_rows_op(sp.indices, sp.values, sp.dense_shape, default)
        return SparseTensor(indices, values, sp.dense_shape), empty


def sparse_transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """`af.sparse_transpose`: the dims permuted by `perm` (reversed by default), entries reordered."""
    sp = _sparse(sp_input)
    with name_scope(name, "SparseTranspose", [sp.indices]):
        if perm is None:
            rank = sp.shape.ndims
            if rank is not None:
                perm = np.arange(rank - 1, -1, -1, dtype=np.int32)
            else:
                r = math.cast(array.size(sp.dense_shape), dtypes.int32)
                perm = math.range(r - 1, -1, -1)
        indices = array.transpose(array.gather(array.transpose(sp.indices), perm))
        perm_value = constant_value(convert_to_tensor(perm))
        if perm_value is not None and sp.shape.is_fully_defined():
            dims = sp.shape.as_list()
            shape: Any = [dims[int(p)] for p in np.reshape(perm_value, -1)]
        else:
            shape = array.gather(sp.dense_shape, perm)
        return sparse_reorder(SparseTensor(indices, sp.values, shape))


def sparse_merge(sp_ids: Any, sp_values: Any, vocab_size: Any, name: str | None = None,
                 already_sorted: bool = False) -> SparseTensor:
    """`af.sparse_merge`: the last index of each entry replaced by its id (one vocab_size-wide dim)."""
    ids, values = _sparse(sp_ids), _sparse(sp_values)
    with name_scope(name, "SparseMerge", [ids.indices, values.indices]):
        new_ids = math.cast(ids.values, dtypes.int64) if ids.values.dtype != dtypes.int64 else ids.values
        kept = ids.indices[:, :-1]
        indices = array.concat([kept, array.expand_dims(new_ids, 1)], 1)
        size = array.reshape(math.cast(vocab_size, dtypes.int64), np.array([1], np.int32))
        shape = array.concat([ids.dense_shape[:-1], size], 0)
        result = SparseTensor(indices, values.values, shape)
        return result if already_sorted else sparse_reorder(result)


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """`af.sparse_to_indicator`: a dense bool tensor, true at [..., id] for each id in the last dim."""
    sp = _sparse(sp_input)
    with name_scope(name, "SparseToIndicator", [sp.indices]) as scope:
        n = array.shape(sp.indices)[0]
        true = array.fill(array.expand_dims(n, 0), True)
        merged = sparse_merge(sp, SparseTensor(sp.indices, true, sp.dense_shape), vocab_size, scope)
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False, name=scope)


# -- segment reductions ---------------------------------------------------------------------------------------
def _segment(kind: str, data: Any, indices: Any, segment_ids: Any, name: str | None, num_segments: Any) -> Tensor:
    if num_segments is not None:
        return SEGMENT_OPS[(kind, True)](data, indices, segment_ids, num_segments, name=name)
    return SEGMENT_OPS[(kind, False)](data, indices, segment_ids, name=name)


def sparse_segment_sum(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                       num_segments: Any = None) -> Tensor:
    """`af.sparse_segment_sum`: output[segment_ids[i]] += data[indices[i]] (segment_ids sorted)."""
    return _segment("Sum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                        num_segments: Any = None) -> Tensor:
    """`af.sparse_segment_mean`: the mean of the rows data[indices[i]] in each segment."""
    return _segment("Mean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                          num_segments: Any = None) -> Tensor:
    """`af.sparse_segment_sqrt_n`: each segment's sum divided by the square root of its size."""
    return _segment("SqrtN", data, indices, segment_ids, name, num_segments)


# -- operators ------------------------------------------------------------------------------------------------
def _sparse_dense_operator(opdef: Any, op_name: str) -> Any:
    """TF1's SparseTensor `*` and `/` with a dense operand (broadcast to the sparse shape): a SparseTensor
    with the same indices, built under the `<op_name>` name scope as TF's operator overloads do."""

    def operator(sp: SparseTensor, y: Any) -> SparseTensor:
        with name_scope(None, op_name, [sp, y]) as scope:
            y = convert_to_tensor(y, dtype=sp.dtype.base_dtype, name="y")
            values = opdef(sp.indices, sp.values, sp.dense_shape, y, name=scope)
            return SparseTensor(sp.indices, values, sp.dense_shape)

    operator.__name__ = f"__{op_name}__"
    return operator


SparseTensor.__mul__ = _sparse_dense_operator(SparseDenseCwiseMul, "mul")
SparseTensor.__truediv__ = _sparse_dense_operator(SparseDenseCwiseDiv, "truediv")
SparseTensor.__div__ = SparseTensor.__truediv__


__all__ = [
    "sparse_placeholder", "sparse_to_dense", "sparse_tensor_to_dense", "sparse_reduce_sum", "sparse_reduce_max",
    "sparse_reduce_sum_sparse", "sparse_reduce_max_sparse", "sparse_tensor_dense_matmul", "sparse_add",
    "sparse_softmax", "sparse_reorder", "sparse_reshape", "sparse_concat", "sparse_retain", "sparse_slice",
    "sparse_split", "sparse_fill_empty_rows", "sparse_transpose", "sparse_merge", "sparse_to_indicator",
    "sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n",
]
