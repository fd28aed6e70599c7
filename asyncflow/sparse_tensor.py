"""`af.SparseTensor` and `af.SparseTensorValue` (TF1's framework/sparse_tensor).

A SparseTensor is three dense tensors, no op of its own: `indices` (int64 [N, rank]), `values`
([N]) and `dense_shape` (int64 [rank]). Its static `shape` is read from `dense_shape` when that is
known at graph-construction time. `Session.run` fetches one as a `SparseTensorValue` and feeds one
from a `SparseTensorValue` or an (indices, values, dense_shape) tuple (see asyncflow/session.py).
The sparse ops themselves live in asyncflow/ops/sparse_ops.py.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from asyncflow import dtypes
from asyncflow.graph import Graph, Operation, Tensor, name_scope, run_in_session
from asyncflow.ops.registry import constant_value_as_shape, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape


class SparseTensorValue(NamedTuple):
    """What `Session.run` gives for a fetched `SparseTensor`, and takes as its feed (TF1's type)."""

    indices: Any
    values: Any
    dense_shape: Any


class SparseTensor:
    """`af.SparseTensor(indices, values, dense_shape)`: `dense[indices[i]] = values[i]`, zero elsewhere."""

    @classmethod
    def from_value(cls, sparse_tensor_value: Any) -> SparseTensor:
        if not is_sparse(sparse_tensor_value):
            raise TypeError(f"Argument sparse_tensor_value={sparse_tensor_value} is neither a SparseTensor nor "
                            f"SparseTensorValue.")
        return SparseTensor(indices=sparse_tensor_value.indices, values=sparse_tensor_value.values,
                            dense_shape=sparse_tensor_value.dense_shape)

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, name="dense_shape", dtype=dtypes.int64)
        self._indices: Tensor = indices
        self._values: Tensor = values
        self._dense_shape: Tensor = dense_shape
        self._dense_shape_default = constant_value_as_shape(dense_shape)
        for what, t, rank in (("indices", indices, 2), ("values", values, 1), ("dense_shape", dense_shape, 1)):
            if not t.shape.is_compatible_with(TensorShape([None] * rank)):
                raise ValueError(f"SparseTensor: {what} must have rank {rank}, got shape {t.shape}")
        rows, cols = (indices.shape.dims or [None, None]) if indices.shape.ndims is not None else (None, None)
        n = values.shape.dims[0] if values.shape.ndims is not None else None
        rank = dense_shape.shape.dims[0] if dense_shape.shape.ndims is not None else None
        if rows is not None and n is not None and not rows.is_compatible_with(n):
            raise ValueError(f"SparseTensor: indices has {rows} rows but values has {n} elements "
                             f"(indices shape {indices.shape}, values shape {values.shape})")
        if cols is not None and rank is not None and not cols.is_compatible_with(rank):
            raise ValueError(f"SparseTensor: indices has {cols} columns but dense_shape has {rank} elements "
                             f"(indices shape {indices.shape}, dense_shape shape {dense_shape.shape})")

    indices = property(lambda self: self._indices, doc="int64 [N, rank]: where the values are.")
    values = property(lambda self: self._values, doc="[N]: the values at `indices`.")
    dense_shape = property(lambda self: self._dense_shape, doc="int64 [rank]: the dense tensor's shape.")

    @property
    def op(self) -> Operation:
        """The op that produces `values`."""
        return self._values.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def graph(self) -> Graph:
        return self._indices.graph

    def get_shape(self) -> TensorShape:
        """The dense tensor's static shape (known entries of a constant `dense_shape`)."""
        return self._dense_shape_default

    shape = property(get_shape)

    def set_shape(self, shape: Any) -> None:
        """Merges `shape` into the static dense shape; ValueError when they conflict."""
        try:
            self._dense_shape_default = self._dense_shape_default.merge_with(as_shape(shape))
        except ValueError:
            raise ValueError(f"SparseTensor's shape {self._dense_shape_default} is not compatible with supplied "
                             f"shape {as_shape(shape)}") from None

    def with_values(self, new_values: Any) -> SparseTensor:
        """The same indices and dense shape with `new_values`."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def consumers(self) -> list[Operation]:
        seen: list[Operation] = []
        for t in (self._indices, self._values, self._dense_shape):
            seen += [c for c in t.consumers() if c not in seen]
        return seen

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> SparseTensorValue:
        """Runs the three tensors in `session` (or the default one); a `SparseTensorValue`."""
        return run_in_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"SparseTensor(indices={self._indices!r}, values={self._values!r}, dense_shape={self._dense_shape!r})"


def is_sparse(x: Any) -> bool:
    """True for a `SparseTensor` or a `SparseTensorValue`."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value: Any, dtype: Any = None, name: str | None = None) -> Any:
    """`af.convert_to_tensor_or_sparse_tensor`: a SparseTensor stays one (a SparseTensorValue becomes one)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype mismatch. Requested: {dtype.name},  Actual: {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


__all__ = ["SparseTensor", "SparseTensorValue", "convert_to_tensor_or_sparse_tensor"]
