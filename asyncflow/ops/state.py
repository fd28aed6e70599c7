"""State ops: TF1's reference variables (`VariableV2`) and the ops that update them.

A `VariableV2` kernel outputs its `VariableSlot` (from the session's or worker's resource
container); an input declared `Ref(T)` receives that slot, and any other input that consumes a
ref tensor receives the slot's current value (the executor reads it). Update ops return the
slot, so `sess.run(v.assign(x))` gives the new value, as TF1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow.ops.array_scatter import SCATTER_APPLY, check_scatter_shapes, flat_indices
from asyncflow.ops.registry import ALL_TYPES, INDEX, NUMERIC, REAL, REQUIRED, BuildContext, op
from asyncflow.shapes import TensorShape, as_shape


@op("VariableV2", outputs="ref: Ref(dtype)", types={"dtype": ALL_TYPES},
    attrs={"shape": REQUIRED, "container": "", "shared_name": ""},
    shape=lambda b: as_shape(b.attrs["shape"]), stateful=True, differentiable=False)
def variable_v2(k):
    return k.resources.container(k.container).variable(k.shared_name or k.name, k.out_dtypes[0])


def _assign_shape(b: BuildContext) -> TensorShape:
    if not b.attrs["validate_shape"]:
        return b.shape(1)
    try:
        return b.shape(0).merge_with(b.shape(1))
    except ValueError:
        raise b.error(f"Shapes must be equal: the variable has shape {b.shape(0)} and the value "
                      f"{b.shape(1)}") from None


@op("Assign", inputs="ref: Ref(T), value: T", outputs="output_ref: Ref(T)", types={"T": ALL_TYPES},
    attrs={"validate_shape": True, "use_locking": True}, shape=_assign_shape, stateful=True,
    differentiable=False)
def assign_op(k, ref, value):
    value = np.asarray(value, dtype=k.out_dtypes[0])
    if k.validate_shape and ref.value is not None and ref.value.shape != value.shape:
        raise ValueError(f"Assign '{k.name}': Assign requires shapes of both tensors to match. "
                         f"lhs shape= {list(ref.value.shape)} rhs shape= {list(value.shape)}")
    ref.assign(value)
    return ref


def _update(name: str, fn: Any) -> Any:
    def kernel(k, ref, value):
        current = ref.read()
        if current.shape != np.shape(value):
            raise ValueError(f"{name} '{k.name}': the variable has shape {list(current.shape)}, the value "
                             f"{list(np.shape(value))}; they must be equal")
        ref.assign(fn(current, value).astype(current.dtype, copy=False), fresh=True)
        return ref

    kernel.__name__ = name
    return op(name, inputs="ref: Ref(T), value: T", outputs="output_ref: Ref(T)", types={"T": NUMERIC},
              attrs={"use_locking": False}, shape=lambda b: b.shape(0).merge_with(b.shape(1)),
              stateful=True, differentiable=False)(kernel)


AssignAdd = _update("AssignAdd", np.add)
AssignSub = _update("AssignSub", np.subtract)


def _scatter(name: str, apply: Any, types: tuple = NUMERIC) -> Any:
    def kernel(k, ref, indices, updates):
        current = ref.read()
        indices = np.asarray(indices)
        first = current.shape[0] if current.ndim else 0
        if indices.size and (indices.min() < 0 or indices.max() >= first):
            bad = indices[(indices < 0) | (indices >= first)].reshape(-1)[0]
            raise ValueError(f"{name} '{k.name}': indices[{int(np.argmax(indices.reshape(-1) == bad))}] "
                             f"= {int(bad)} is not in [0, {first})")
        want = indices.shape + current.shape[1:]
        if np.shape(updates) != want:
            raise ValueError(f"{name} '{k.name}': updates must have shape indices.shape + "
                             f"params.shape[1:] = {list(want)}, got {list(np.shape(updates))}")
        target = ref.mutable()
        apply(target, indices, np.asarray(updates, dtype=target.dtype))
        return ref

    kernel.__name__ = name
    return op(name, inputs="ref: Ref(T), indices: Tindices, updates: T", outputs="output_ref: Ref(T)",
              types={"T": types, "Tindices": INDEX}, attrs={"use_locking": False},
              shape=lambda b: b.shape(0), stateful=True, differentiable=False)(kernel)


def _scatter_set(target: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> None:
    target[indices] = updates


ScatterAdd = _scatter("ScatterAdd", np.add.at)
ScatterSub = _scatter("ScatterSub", np.subtract.at)
ScatterUpdate = _scatter("ScatterUpdate", _scatter_set)


def _divide_at(target: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> None:
    if target.dtype.kind in "fc":
        np.divide.at(target, indices, updates)
        return
    # Integer division truncates toward zero, as C++ (and TF's kernel) does; numpy floors.
    for i, row in zip(indices.reshape(-1), updates.reshape((-1,) + target.shape[1:])):
        num, den = target[i], row
        quotient = np.abs(num) // np.abs(den)
        target[i] = np.where((num < 0) != (den < 0), -quotient, quotient)


ScatterMul = _scatter("ScatterMul", np.multiply.at)
ScatterDiv = _scatter("ScatterDiv", _divide_at)
ScatterMax = _scatter("ScatterMax", np.maximum.at, REAL)
ScatterMin = _scatter("ScatterMin", np.minimum.at, REAL)


def _scatter_nd(name: str, kind: str) -> Any:
    """The variable forms of TensorScatter{Update,Add,Sub}: the same index layout and checks (array_scatter)."""
    def kernel(k, ref, indices, updates):
        current = ref.read()
        where, rows = flat_indices(name, k, indices, updates, current.shape)
        target = ref.mutable()
        SCATTER_APPLY[kind](target, where, rows.astype(target.dtype, copy=False))
        return ref

    def shape_fn(b: BuildContext) -> TensorShape:
        check_scatter_shapes(b, b.shape(0), "ref")
        return b.shape(0)

    kernel.__name__ = name
    return op(name, inputs="ref: Ref(T), indices: Tindices, updates: T", outputs="output_ref: Ref(T)",
              types={"T": ALL_TYPES if kind == "Update" else NUMERIC, "Tindices": INDEX},
              attrs={"use_locking": kind == "Update", "bad_indices_policy": ""}, shape=shape_fn, stateful=True,
              differentiable=False)(kernel)


ScatterNdUpdate = _scatter_nd("ScatterNdUpdate", "Update")
ScatterNdAdd = _scatter_nd("ScatterNdAdd", "Add")
ScatterNdSub = _scatter_nd("ScatterNdSub", "Sub")


@op("IsVariableInitialized", inputs="ref: Ref(dtype)", outputs="is_initialized: bool",
    types={"dtype": ALL_TYPES}, shape=lambda b: TensorShape([]), stateful=True, differentiable=False)
def is_variable_initialized_op(k, ref):
    return np.bool_(ref.initialized)


def assign(ref: Any, value: Any, validate_shape: bool | None = None, use_locking: bool | None = None,
           name: str | None = None) -> Any:
    """`af.assign`: stores `value` in the variable `ref`; returns the ref (reads give the new value)."""
    if hasattr(ref, "assign") and not hasattr(ref, "op"):
        return ref.assign(value, use_locking=use_locking, name=name)
    target = _ref_of(ref)
    return assign_op(target, value, validate_shape=True if validate_shape is None else validate_shape,
                     use_locking=True if use_locking is None else use_locking, name=name or "Assign")


def assign_add(ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None) -> Any:
    return AssignAdd(_ref_of(ref), value, use_locking=bool(use_locking), name=name or "AssignAdd")


def assign_sub(ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None) -> Any:
    return AssignSub(_ref_of(ref), value, use_locking=bool(use_locking), name=name or "AssignSub")


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return ScatterAdd(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterAdd")


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return ScatterSub(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterSub")


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: str | None = None) -> Any:
    return ScatterUpdate(_ref_of(ref), indices, updates, use_locking=use_locking,
                         name=name or "ScatterUpdate")


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    """`af.scatter_mul`: multiplies rows `indices` of the variable by `updates`; returns the ref."""
    return ScatterMul(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterMul")


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    """`af.scatter_div`: divides rows `indices` of the variable by `updates`; returns the ref."""
    return ScatterDiv(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterDiv")


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    """`af.scatter_max`: rows `indices` of the variable become their maximum with `updates`."""
    return ScatterMax(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterMax")


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Any:
    """`af.scatter_min`: rows `indices` of the variable become their minimum with `updates`."""
    return ScatterMin(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterMin")


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                      name: str | None = None) -> Any:
    """`af.scatter_nd_update`: writes `updates` at the index vectors `indices` of the variable."""
    return ScatterNdUpdate(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterNdUpdate")


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Any:
    """`af.scatter_nd_add`: adds `updates` at the index vectors `indices` of the variable."""
    return ScatterNdAdd(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterNdAdd")


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Any:
    """`af.scatter_nd_sub`: subtracts `updates` at the index vectors `indices` of the variable."""
    return ScatterNdSub(_ref_of(ref), indices, updates, use_locking=use_locking, name=name or "ScatterNdSub")


def is_variable_initialized(variable: Any) -> Any:
    return is_variable_initialized_op(_ref_of(variable))


def _ref_of(x: Any) -> Any:
    if hasattr(x, "_ref"):
        return x._ref()
    if getattr(x, "dtype", None) is not None and x.dtype.is_ref_dtype:
        return x
    raise TypeError(f"expected a Variable or a ref tensor, got {x!r}")


__all__ = [
    "assign", "assign_add", "assign_sub", "scatter_add", "scatter_sub", "scatter_update",
    "is_variable_initialized", "scatter_mul", "scatter_div", "scatter_max", "scatter_min", "scatter_nd_update",
    "scatter_nd_add", "scatter_nd_sub",
]
