"""Conditional accumulators, as TF1: `ConditionalAccumulator` (dense gradients) and
`SparseConditionalAccumulator` (IndexedSlices), the aggregation point of synchronous training.

An accumulator sums the gradients applied to it until a `take_grad(num_required)` has enough,
then hands out their mean (or sum), resets, and advances its global step. The staleness rule:
a gradient whose `local_step` is below the accumulator's global step is dropped, and (beyond
TF, which only logs it) counted: `num_dropped()` (op `ResourceAccumulatorNumDropped` /
`AccumulatorNumDropped`, int64) reports how many were dropped since the accumulator was made.

As in TF 2.x's compat.v1, the dense accumulator is a resource (`ResourceConditionalAccumulator`
and `ResourceAccumulator*` ops) and the sparse one a string reference
(`SparseConditionalAccumulator`, `SparseAccumulator*`, `Accumulator*`). A take that must wait is
an asyncio future on the session's loop; applying and taking run there (`is_async`), so they
never race. A cancelled take (session close, timeout) leaves the accumulated sum in place.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.gradients import IndexedSlices
from asyncflow.ops.data_flow import lookup_resource
from asyncflow.ops.math import cast
from asyncflow.ops.registry import FLOAT, REQUIRED, BuildContext, convert_to_tensor, op
from asyncflow.shapes import TensorShape, as_shape, unknown_shape

_ATTRS = {"shape": REQUIRED, "container": "", "shared_name": "", "reduction_type": "MEAN"}
_TRAITS = {"stateful": True, "differentiable": False}


def _dims_text(dims: Any) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


class _AccumulatorBase:
    """What both kinds share: the global step, the counts, and the takers waiting in line."""

    kind = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: dtypes.DType, shape: TensorShape, reduction_type: str, signature: Any):
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"{self.kind} '{name}': reduction_type must be MEAN or SUM, got {reduction_type!r}")
        self.name = name
        self.np_type = np.dtype(dtype.as_numpy_dtype)
        self.shape = shape
        self.mean = reduction_type == "MEAN"
        self.signature = signature
        self.global_step = 0
        self.count = 0
        self.dropped = 0
        self._takers: deque[tuple[int, asyncio.Future]] = deque()

    def read(self) -> np.ndarray:
        """The handle's value when fetched (TF's string handle: container and name)."""
        return np.array([b"", self.name.encode()], dtype=object)

    def stale(self, local_step: Any) -> bool:
        if int(local_step) < self.global_step:
            self.dropped += 1
            return True
        return False

    def set_global_step(self, step: Any) -> None:
        self.global_step = int(step)

    async def take(self, num_required: Any, op_name: str) -> Any:
        n = int(num_required)
        if n < 1:
            raise ValueError(f"{self.kind} '{self.name}': Argument num_required must be positive, but was {n}")
        if not self._takers and self.count >= n:
            return self._take()
        future = asyncio.get_running_loop().create_future()
        self._takers.append((n, future))
        try:
            return await future
        except asyncio.CancelledError:
            self._takers = deque(t for t in self._takers if t[1] is not future)
            if future.done() and not future.cancelled():  # it got a result it will never deliver: undo
                self._untake(future.result())
            raise

    def _wake(self) -> None:
        while self._takers and self.count >= self._takers[0][0]:
            _, future = self._takers.popleft()
            if not future.done():
                future.set_result(self._take())

    def abort(self, reason: str) -> None:
        while self._takers:
            _, future = self._takers.popleft()
            if not future.done():
                future.set_exception(errors.CancelledError(None, None, f"{self.kind} '{self.name}': {reason}"))

    def _take(self) -> Any:
        raise NotImplementedError

    def _untake(self, value: Any) -> None:
        raise NotImplementedError


class DenseAccumulator(_AccumulatorBase):
    def __init__(self, *args: Any):
        super().__init__(*args)
        self.total: np.ndarray | None = None
        self._last: tuple[np.ndarray, int, int] | None = None

    def apply(self, local_step: Any, grad: Any) -> None:
        if self.stale(local_step):
            return
        grad = np.asarray(grad, self.np_type)
        want = self.total.shape if self.total is not None else self.shape.as_list() if self.shape.ndims is not None \
            else None
        if want is not None and (len(want) != grad.ndim or any(w is not None and w != g
                                                               for w, g in zip(want, grad.shape))):
            raise ValueError(f"{self.kind} '{self.name}': Shape mismatch: expected {_dims_text(want)}, got "
                             f"{_dims_text(grad.shape)}")
        self.total = grad.copy() if self.total is None else self.total + grad
        self.count += 1
        self._wake()

    def _take(self) -> np.ndarray:
        total, count = self.total, self.count
        out = (total / count if self.mean else total).astype(self.np_type, copy=False)
        self._last = (total, count, self.global_step)
        self.total, self.count = None, 0
        self.global_step += 1
        return out

    def _untake(self, value: Any) -> None:
        if self._last is not None:  # the sum goes back as it was (a later apply may have started a new one)
            total, count, step = self._last
            self.total = total if self.total is None else self.total + total
            self.count += count
            self.global_step = step
            self._last = None


class SparseAccumulator(_AccumulatorBase):
    kind = "SparseConditionalAccumulator"

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.rows: dict[int, list] = {}  # index -> [sum of its rows, how many gradients touched it]
        self.row_shape: tuple[int, ...] | None = None
        self._last: Any = None

    def apply(self, local_step: Any, indices: Any, values: Any, shape: Any, has_known_shape: bool) -> None:
        if self.stale(local_step):
            return
        indices = np.asarray(indices, np.int64).reshape(-1)
        values = np.asarray(values, self.np_type)
        where = f"{self.kind} '{self.name}'"
        if values.ndim == 0 or values.shape[0] != indices.size:
            raise ValueError(f"{where}: Expected {indices.size} non-empty input values, got "
                             f"{values.shape[0] if values.ndim else 0}")
        want = self.shape.as_list() if self.shape.ndims is not None else None
        if has_known_shape:
            dense = [int(d) for d in np.asarray(shape).reshape(-1)]
            for j, (w, d) in enumerate(zip(want or [], dense)):
                if w is not None and w != d:
                    raise ValueError(f"{where}: Shape mismatch: expected shape dim {j} to be {w}, got {d}")
        row = values.shape[1:]
        expect_row = self.row_shape if self.row_shape is not None else (want[1:] if want else None)
        if expect_row is not None:
            if len(expect_row) != len(row):
                raise ValueError(f"{where}: Shape mismatch: expected values of rank {len(expect_row) + 1}, got "
                                 f"{values.ndim}")
            for j, (w, d) in enumerate(zip(expect_row, row)):
                if w is not None and w != d:
                    raise ValueError(f"{where}: Shape mismatch: expected values dim {j + 1} to be {w}, got {d}")
        limit = want[0] if want else None
        for i, index in enumerate(indices):
            if index < 0 or (limit is not None and index >= limit):
                raise ValueError(f"{where}: Shape mismatch: index of slice {i} exceeded limits of shape; index is "
                                 f"{index} exceeded {limit}")
        self.row_shape = tuple(row)
        touched: set[int] = set()
        for index, value in zip(indices.tolist(), values):
            entry = self.rows.get(index)
            if entry is None:
                self.rows[index] = [value.copy(), 1]
            else:
                entry[0] = entry[0] + value
                entry[1] += index not in touched
            touched.add(index)
        self.count += 1
        self._wake()

    def _take(self) -> list[np.ndarray]:
        order = sorted(self.rows)
        row = self.row_shape or ()
        values = np.empty((len(order),) + tuple(row), self.np_type)
        for j, index in enumerate(order):
            total, n = self.rows[index]
            values[j] = total / n if self.mean else total
        want = self.shape.as_list() if self.shape.ndims is not None else [None] * (len(row) + 1)
        dense = [-1 if want[0] is None else want[0]] + [d if w is None else w for w, d in zip(want[1:], row)]
        self._last = (self.rows, self.count, self.global_step)
        self.rows, self.count = {}, 0
        self.global_step += 1
        return [np.asarray(order, np.int64), values, np.asarray(dense, np.int64)]

    def _untake(self, value: Any) -> None:
        if self._last is not None:
            rows, count, step = self._last
            for index, (total, n) in rows.items():
                entry = self.rows.get(index)
                self.rows[index] = [total, n] if entry is None else [entry[0] + total, entry[1] + n]
            self.count += count
            self.global_step = step
            self._last = None


# -- ops ------------------------------------------------------------------------------------------------------
def _handle_shape(b: BuildContext) -> TensorShape:
    return TensorShape([2])  # as TF's shape function gives (the string handle's two elements)


def _check_dtype(b: BuildContext) -> TensorShape:
    if b.attrs["dtype"] not in FLOAT:
        raise b.error(f"accumulators hold float16, bfloat16, float32 or float64 gradients, got "
                      f"{b.attrs['dtype'].name}")
    return _handle_shape(b)


def _prepare(k: Any) -> None:
    """Once per plan: what an accumulator op's resource must match when shared (its attrs)."""
    shape = as_shape(k.shape)
    k.signature = (k.op_type, k.dtype.name, shape.as_list() if shape.ndims is not None else None, k.reduction_type)


def _accumulator(k: Any, cls: type) -> Any:
    sig = k.signature
    return lookup_resource(k, "accumulator", lambda: cls(k.shared_name or k.name, k.dtype, as_shape(k.shape),
                                                         k.reduction_type, sig), sig)


@op("ResourceConditionalAccumulator", outputs="handle: resource", types={"dtype": FLOAT}, attrs=_ATTRS,
    shape=_check_dtype, prepare=_prepare, **_TRAITS)
def resource_conditional_accumulator(k):
    return _accumulator(k, DenseAccumulator)


@op("ResourceAccumulatorApplyGradient", inputs="handle: resource, local_step: int64, gradient: dtype",
    types={"dtype": FLOAT}, is_async=True, **_TRAITS)
def resource_accumulator_apply_gradient(k, acc, local_step, gradient):
    acc.apply(local_step, gradient)  # may wake a take: runs on the loop, hence is_async


@op("ResourceAccumulatorTakeGradient", inputs="handle: resource, num_required: int32", outputs="average: dtype",
    types={"dtype": FLOAT}, is_async=True, **_TRAITS)
async def resource_accumulator_take_gradient(k, acc, num_required):
    return await acc.take(num_required, k.name)


@op("ResourceAccumulatorNumAccumulated", inputs="handle: resource", outputs="num_accumulated: int32",
    shape=lambda b: TensorShape([]), **_TRAITS)
def resource_accumulator_num_accumulated(k, acc):
    return np.int32(acc.count)


@op("ResourceAccumulatorSetGlobalStep", inputs="handle: resource, new_global_step: int64", is_async=True, **_TRAITS)
def resource_accumulator_set_global_step(k, acc, step):
    acc.set_global_step(step)


@op("ResourceAccumulatorNumDropped", inputs="handle: resource", outputs="num_dropped: int64",
    shape=lambda b: TensorShape([]), **_TRAITS)
def resource_accumulator_num_dropped(k, acc):
    """asyncflow's: how many stale gradients the accumulator has dropped."""
    return np.int64(acc.dropped)


@op("SparseConditionalAccumulator", outputs="handle: Ref(string)", types={"dtype": FLOAT}, attrs=_ATTRS,
    shape=_check_dtype, prepare=_prepare, **_TRAITS)
def sparse_conditional_accumulator(k):
    return _accumulator(k, SparseAccumulator)


@op("SparseAccumulatorApplyGradient",
    inputs="handle: Ref(string), local_step: int64, gradient_indices: int64, gradient_values: dtype, "
           "gradient_shape: int64", types={"dtype": FLOAT}, attrs={"has_known_shape": REQUIRED}, is_async=True,
    **_TRAITS)
def sparse_accumulator_apply_gradient(k, acc, local_step, indices, values, shape):
    acc.apply(local_step, indices, values, shape, k.has_known_shape)


@op("SparseAccumulatorTakeGradient", inputs="handle: Ref(string), num_required: int32",
    outputs="indices: int64, values: dtype, shape: int64", types={"dtype": FLOAT}, is_async=True, **_TRAITS)
async def sparse_accumulator_take_gradient(k, acc, num_required):
    return await acc.take(num_required, k.name)


@op("AccumulatorNumAccumulated", inputs="handle: Ref(string)", outputs="num_accumulated: int32",
    shape=lambda b: TensorShape([]), **_TRAITS)
def accumulator_num_accumulated(k, acc):
    return np.int32(acc.count)


@op("AccumulatorSetGlobalStep", inputs="handle: Ref(string), new_global_step: int64", is_async=True, **_TRAITS)
def accumulator_set_global_step(k, acc, step):
    acc.set_global_step(step)


@op("AccumulatorNumDropped", inputs="handle: Ref(string)", outputs="num_dropped: int64",
    shape=lambda b: TensorShape([]), **_TRAITS)
def accumulator_num_dropped(k, acc):
    """asyncflow's: how many stale gradients the accumulator has dropped."""
    return np.int64(acc.dropped)


# -- the Python classes ------------------------------------------------------------------------------------
def _int64(value: Any) -> Any:
    return cast(convert_to_tensor(value), dtypes.int64)


class ConditionalAccumulatorBase:
    """What the dense and sparse accumulators share: the handle, `num_accumulated`, `set_global_step`,
    and asyncflow's `num_dropped`."""

    _num_accumulated_op: Any = None
    _set_global_step_op: Any = None
    _num_dropped_op: Any = None

    def __init__(self, dtype: Any, shape: Any, accumulator_ref: Any):
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def num_accumulated(self, name: str | None = None) -> Any:
        """How many gradients have been accumulated since the last take."""
        return type(self)._num_accumulated_op(self._accumulator_ref,
                                              name=name if name is not None else f"{self._name}_NumAccumulated")

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Any:
        """Sets the step below which applied gradients are stale."""
        return type(self)._set_global_step_op(self._accumulator_ref, _int64(new_global_step), name=name)

    def num_dropped(self, name: str | None = None) -> Any:
        """asyncflow's addition: an int64 scalar, the stale gradients dropped so far."""
        return type(self)._num_dropped_op(self._accumulator_ref,
                                          name=name if name is not None else f"{self._name}_NumDropped")


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """`af.ConditionalAccumulator(dtype, shape=None, shared_name=None, name="conditional_accumulator",
    reduction_type="MEAN")`: averages (or sums) dense gradients for synchronous training."""

    _num_accumulated_op = resource_accumulator_num_accumulated
    _set_global_step_op = resource_accumulator_set_global_step
    _num_dropped_op = resource_accumulator_num_dropped

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN"):
        ref = resource_conditional_accumulator(dtype=dtype, shape=as_shape(shape) if shape is not None else
                                               unknown_shape(), shared_name=shared_name or "", name=name,
                                               reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Any:
        """Adds `grad` unless `local_step` is older than the accumulator's global step (then it is dropped)."""
        grad = convert_to_tensor(grad, self._dtype)
        grad.shape.assert_is_compatible_with(self._shape)
        return resource_accumulator_apply_gradient(self._accumulator_ref, _int64(local_step), grad, name=name)

    def take_grad(self, num_required: Any, name: str | None = None) -> Any:
        """Waits for `num_required` gradients, gives their mean (or sum), resets and advances the step."""
        out = resource_accumulator_take_gradient(self._accumulator_ref, num_required, dtype=self._dtype, name=name)
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates IndexedSlices gradients; MEAN divides each row by the gradients that touched it."""

    _num_accumulated_op = accumulator_num_accumulated
    _set_global_step_op = accumulator_set_global_step
    _num_dropped_op = accumulator_num_dropped

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "sparse_conditional_accumulator", reduction_type: str = "MEAN"):
        ref = sparse_conditional_accumulator(dtype=dtype, shape=as_shape(shape) if shape is not None else
                                             unknown_shape(), shared_name=shared_name or "", name=name,
                                             reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad: IndexedSlices, local_step: Any = 0, name: str | None = None) -> Any:
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices: Any, grad_values: Any, grad_shape: Any = None, local_step: Any = 0,
                   name: str | None = None) -> Any:
        local_step = _int64(local_step)
        indices = cast(grad_indices, dtypes.int64)
        shape = cast([] if grad_shape is None else grad_shape, dtypes.int64)
        return sparse_accumulator_apply_gradient(self._accumulator_ref, local_step, indices, grad_values, shape,
                                                 has_known_shape=grad_shape is not None, name=name)

    def take_grad(self, num_required: Any, name: str | None = None) -> list[Any]:
        """(indices, values, shape) of the averaged gradient, once `num_required` have been applied."""
        return sparse_accumulator_take_gradient(self._accumulator_ref, num_required, dtype=self._dtype, name=name)

    def take_indexed_slices_grad(self, num_required: Any, name: str | None = None) -> IndexedSlices:
        indices, values, shape = self.take_grad(num_required, name)
        return IndexedSlices(indices=indices, values=values, dense_shape=shape)


__all__ = ["ConditionalAccumulatorBase", "ConditionalAccumulator", "SparseConditionalAccumulator"]
