"""The value (not variable) forms of scatter: TensorScatterUpdate / Add / Sub / Max / Min, with TF1's
wrappers `af.tensor_scatter_nd_update` ... and their TF1 aliases `tensor_scatter_update/add/sub`.

Each op returns a copy of `tensor` with `updates` applied at the index vectors in the last dimension
of `indices` (the layout of ScatterNd / GatherNd). Duplicate indices add up (Add, Sub), keep the
largest or smallest (Max, Min), or the last one wins (Update, where TF leaves the order undefined).
The variable forms (ScatterNdUpdate, ScatterMul, ...) live with the other ref updates in state.py.

Gradients are TF's: the tensor's gradient is the incoming gradient (with the overwritten positions
zeroed for Update), the updates' gradient is the incoming gradient gathered at `indices`; Max/Min
share the gradient between the tensor and every update that equals the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow.graph import Tensor
from asyncflow.ops import math
from asyncflow.ops.array import shape as shape_of
from asyncflow.ops.array import zeros_like
from asyncflow.ops.array_index import gather_nd, scatter_nd
from asyncflow.ops.registry import ALL_TYPES, INDEX, NUMERIC, REAL, BuildContext, op
from asyncflow.shapes import TensorShape

__all__ = [
    "tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_nd_max",
    "tensor_scatter_nd_min", "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
]


def check_scatter_shapes(b: BuildContext, target: TensorShape, target_name: str = "input") -> None:
    """TF's ScatterNdTensorShape check: updates.shape == indices.shape[:-1] + target.shape[indices.shape[-1]:]."""
    indices, updates = b.shape(1), b.shape(2)
    if indices.ndims == 0:
        raise b.error(f"indices must be at least a vector, got shape {indices}")
    if indices.ndims is None or updates.ndims is None or target.ndims is None:
        return
    outer, r = indices.ndims - 1, indices[-1].value
    if updates.ndims < outer or not updates[:outer].is_compatible_with(indices[:outer]):
        raise b.error(f"Dimensions [0,{outer}) of indices[shape={indices}] must match dimensions [0,{outer}) of "
                      f"updates[shape={updates}]")
    if r is None:
        return
    if r > target.ndims:
        raise b.error(f"indices.shape[-1] must be <= {target_name}.rank, got indices shape {indices} and "
                      f"{target_name} shape {target}")
    if updates.ndims - outer != target.ndims - r or not updates[outer:].is_compatible_with(target[r:]):
        raise b.error(f"Dimensions [{r},{target.ndims}) of {target_name}[shape={target}] = {target[r:]} must match "
                      f"dimensions [{outer},{updates.ndims}) of updates[shape={updates}] = {updates[outer:]}")


def flat_indices(name: str, k: Any, indices: Any, updates: Any, shape: tuple[int, ...]) -> tuple[tuple, np.ndarray]:
    """(numpy index tuple, update rows) of an nd-scatter into `shape`, after TF's run-time checks."""
    indices, updates = np.asarray(indices), np.asarray(updates)
    if indices.ndim == 0:
        raise ValueError(f"{name} '{k.name}': indices must be at least a vector, got a scalar")
    r, outer = indices.shape[-1], indices.shape[:-1]
    if r > len(shape) or updates.shape != outer + shape[r:]:
        raise ValueError(f"{name} '{k.name}': updates must have shape indices.shape[:-1] + shape[{r}:] = "
                         f"{list(outer + shape[r:])}, got {list(updates.shape)} (indices shape {list(indices.shape)},"
                         f" shape {list(shape)})")
    flat = indices.reshape(int(np.prod(outer)), r).astype(np.int64)
    bad = ((flat < 0) | (flat >= np.array(shape[:r], dtype=np.int64))).any(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} '{k.name}': indices[{i}] = [{', '.join(map(str, flat[i]))}] does not index "
                         f"into shape [{','.join(map(str, shape))}]")
    return tuple(flat.T), updates.reshape((len(flat),) + shape[r:])


def set_at(target: np.ndarray, where: tuple, rows: np.ndarray) -> None:
    """Plain assignment: with duplicate positions the last row wins (numpy's order, one of TF's)."""
    if rows.shape[0]:
        target[where] = rows


SCATTER_APPLY = {"Update": set_at, "Add": np.add.at, "Sub": np.subtract.at, "Max": np.maximum.at,
                 "Min": np.minimum.at}


def _tensor_scatter(kind: str, types: tuple) -> Any:
    name = f"TensorScatter{kind}"

    def shape_fn(b: BuildContext) -> TensorShape:
        check_scatter_shapes(b, b.shape(0))
        return b.shape(0)

    def kernel(k, tensor, indices, updates):
        tensor = np.asarray(tensor)
        where, rows = flat_indices(name, k, indices, updates, tensor.shape)
        out = tensor.copy()
        SCATTER_APPLY[kind](out, where, rows.astype(out.dtype, copy=False))
        return out

    kernel.__name__ = name
    return op(name, inputs="tensor: T, indices: Tindices, updates: T", outputs="output: T",
              types={"T": types, "Tindices": INDEX}, attrs={"bad_indices_policy": ""}, shape=shape_fn)(kernel)


TensorScatterUpdate = _tensor_scatter("Update", ALL_TYPES)
TensorScatterAdd = _tensor_scatter("Add", NUMERIC)
TensorScatterSub = _tensor_scatter("Sub", NUMERIC)
TensorScatterMax = _tensor_scatter("Max", REAL)
TensorScatterMin = _tensor_scatter("Min", REAL)


@TensorScatterUpdate.gradient
def _update_grad(op_: Any, grad: Tensor) -> list[Any]:
    indices = op_.inputs[1]
    return [TensorScatterUpdate(grad, indices, zeros_like(op_.inputs[2])), None, gather_nd(grad, indices)]


@TensorScatterAdd.gradient
def _add_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [grad, None, gather_nd(grad, op_.inputs[1])]


@TensorScatterSub.gradient
def _sub_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [grad, None, math.negative(gather_nd(grad, op_.inputs[1]))]


def _min_or_max_grad(op_: Any, grad: Tensor) -> list[Any]:
    # Every input equal to the result shares its gradient equally with the others that are.
    x, indices, y = op_.inputs
    out = op_.outputs[0]
    x_hits = math.cast(math.equal(x, out), grad.dtype)
    y_hits = math.cast(math.equal(y, gather_nd(out, indices)), grad.dtype)
    ties = x_hits + scatter_nd(indices, y_hits, shape_of(x, out_type=indices.dtype.base_dtype))
    return [grad * x_hits / ties, None, gather_nd(grad / ties, indices) * y_hits]


TensorScatterMax.gradient(_min_or_max_grad)
TensorScatterMin.gradient(_min_or_max_grad)


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`af.tensor_scatter_nd_update`: a copy of `tensor` with `updates` written at `indices`."""
    return TensorScatterUpdate(tensor, indices, updates, name=name)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`af.tensor_scatter_nd_add`: a copy of `tensor` with `updates` added at `indices`."""
    return TensorScatterAdd(tensor, indices, updates, name=name)


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`af.tensor_scatter_nd_sub`: a copy of `tensor` with `updates` subtracted at `indices`."""
    return TensorScatterSub(tensor, indices, updates, name=name)


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`af.tensor_scatter_nd_max`: a copy of `tensor` holding the larger of it and `updates` at `indices`."""
    return TensorScatterMax(tensor, indices, updates, name=name)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`af.tensor_scatter_nd_min`: a copy of `tensor` holding the smaller of it and `updates` at `indices`."""
    return TensorScatterMin(tensor, indices, updates, name=name)


# TF1's earlier names for the same functions.
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
