"""Training ops: the fused updates TF1's optimizers apply to reference variables.

`ApplyGradientDescent`, `ApplyMomentum`, `ApplyAdagrad`, `ApplyAdam`, `ApplyRMSProp`,
`ApplyCenteredRMSProp` and the sparse `SparseApply*` forms of Momentum, Adagrad and RMSProp.
The variable and its slots arrive as `VariableSlot`s (inputs declared `Ref(T)`). Every kernel
checks all shapes, scalars and indices first, so a step that fails leaves the variable and its
slots exactly as they were; then it updates the arrays in place through `slot.mutable()` (only
the touched rows for the sparse forms) and returns the variable's slot, as TF1's kernels forward
their ref input. The formulas are TF's CPU functors, written in the same order so that float32
rounding agrees. Sparse kernels apply repeated indices one after the other, as TF's loops do
(the optimizers sum duplicates before they get here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.ops.conv_util import scratch
from asyncflow.ops.registry import FLOAT_COMPLEX, INDEX, BuildContext, op
from asyncflow.shapes import TensorShape

_TYPES = {"T": FLOAT_COMPLEX}
_SPARSE_TYPES = {"T": FLOAT_COMPLEX, "Tindices": INDEX}


# -- static shapes -------------------------------------------------------------------------------
def _shape_fn(slots: tuple[int, ...], scalars: dict[str, int], grad: int, indices: int | None = None) -> Any:
    """A shape function: var (input 0) merges with its slots; scalars have rank 0; grad (and indices) fit var."""

    def shape(b: BuildContext) -> TensorShape:
        var = b.shape(0)
        for i in slots:
            try:
                var = var.merge_with(b.shape(i))
            except ValueError:
                raise b.error(f"Shapes must be equal: var has shape {b.shape(0)} and input {i} "
                              f"has shape {b.shape(i)}") from None
        for name, i in scalars.items():
            if b.shape(i).ndims not in (None, 0):
                raise b.error(f"{name} must be a scalar (rank 0), got shape {b.shape(i)}")
        g = b.shape(grad)
        if indices is None:
            try:
                return var.merge_with(g)
            except ValueError:
                raise b.error(f"var and grad must have the same shape, got {var} and {g}") from None
        idx = b.shape(indices)
        if idx.ndims not in (None, 1):
            raise b.error(f"indices must be one-dimensional, got shape {idx}")
        if var.ndims == 0:
            raise b.error(f"var must be at least 1 dimensional, got shape {var}")
        if g.ndims == 0:
            raise b.error(f"grad must be at least 1 dimensional, got shape {g}")
        if g.ndims is not None:
            if idx.ndims == 1 and not g[0].is_compatible_with(idx[0]):
                raise b.error(f"grad must be the same size as indices in the first dimension: grad {g}, "
                              f"indices {idx}")
            rows = TensorShape([None]).concatenate(g[1:])
            try:
                var = var.merge_with(rows)
            except ValueError:
                raise b.error(f"var and grad must match in all dimensions but the first, got {var} and "
                              f"{g}") from None
        return var

    return shape


# -- run-time checks (all before any update) ---------------------------------------------------------
def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


def _initialized(k: Any, refs: dict[str, Any]) -> dict[str, np.ndarray]:
    values = {}
    for name, slot in refs.items():
        if slot.value is None:
            raise errors.FailedPreconditionError(
                None, None, f"{k.op_type} '{k.name}': Attempting to use uninitialized value {slot.name}")
        values[name] = slot.value
    return values


def _scalars(k: Any, scalars: dict[str, Any]) -> list[Any]:
    out = []
    for name, value in scalars.items():
        if np.ndim(value) != 0:
            raise ValueError(f"{k.op_type} '{k.name}': {name} is not a scalar: {_dims(np.shape(value))}")
        out.append(np.asarray(value)[()])
    return out


def _dense(k: Any, refs: dict[str, Any], scalars: dict[str, Any], grad: Any) -> tuple[list[np.ndarray], list]:
    """Checks a dense update's inputs; returns the arrays to update in place (var first) and the scalars."""
    values = _initialized(k, refs)
    var_shape = values["var"].shape
    for name, v in values.items():
        if v.shape != var_shape:
            raise ValueError(f"{k.op_type} '{k.name}': var and {name} do not have the same shape"
                             f"{_dims(var_shape)} {_dims(v.shape)}")
    found = _scalars(k, scalars)
    if np.shape(grad) != var_shape:
        raise ValueError(f"{k.op_type} '{k.name}': var and grad do not have the same shape"
                         f"{_dims(var_shape)} {_dims(np.shape(grad))}")
    return [slot.mutable() for slot in refs.values()], found


def _sparse(k: Any, refs: dict[str, Any], scalars: dict[str, Any], grad: Any,
            indices: Any) -> tuple[list[np.ndarray], list, np.ndarray, np.ndarray]:
    """Checks a sparse update's inputs; returns the arrays to update, the scalars, grad and indices."""
    values = _initialized(k, refs)
    var_shape = values["var"].shape
    for name, v in values.items():
        if v.shape != var_shape:
            raise ValueError(f"{k.op_type} '{k.name}': var and {name} do not have the same shape"
                             f"{_dims(var_shape)} {_dims(v.shape)}")
    if len(var_shape) == 0:
        raise ValueError(f"{k.op_type} '{k.name}': var must be at least 1 dimensional")
    found = _scalars(k, scalars)
    grad, indices = np.asarray(grad), np.asarray(indices)
    if indices.ndim != 1:
        raise ValueError(f"{k.op_type} '{k.name}': indices must be one-dimensional, got shape "
                         f"{_dims(indices.shape)}")
    if grad.ndim != len(var_shape):
        raise ValueError(f"{k.op_type} '{k.name}': var and grad must have the same rank, got shapes "
                         f"{_dims(var_shape)} and {_dims(grad.shape)}")
    for d in range(1, len(var_shape)):
        if grad.shape[d] != var_shape[d]:
            raise ValueError(f"{k.op_type} '{k.name}': var and grad must match in dimension {d}")
    if grad.shape[0] != indices.shape[0]:
        raise ValueError(f"{k.op_type} '{k.name}': grad must be the same size as indices in the first "
                         f"dimension.")
    bad = (indices < 0) | (indices >= var_shape[0])
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{k.op_type} '{k.name}': Index {int(indices[i])} at offset {i} in indices is out "
                         f"of range")
    return [slot.mutable() for slot in refs.values()], found, grad, indices


def _row_groups(indices: np.ndarray) -> Iterator[tuple[np.ndarray, slice]]:
    """(rows of var, rows of grad) to update together: all at once when no index repeats, else one by one."""
    if len(np.unique(indices)) == len(indices):
        yield indices, slice(None)
        return
    for i in range(len(indices)):
        yield indices[i:i + 1], slice(i, i + 1)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


_BLOCK = 1 << 16  # elements per block: one block of every array stays in cache across the update's passes


def fused(k: Any, arrays: list[np.ndarray], grad: Any, temps: int, update: Callable[..., None]) -> None:
    """Runs `update(*arrays, grad, *temporaries)` in place over matching blocks of the (flattened) arrays.

    A dense update is a handful of elementwise passes; over blocks of `_BLOCK` elements they run while the
    block is in cache, and the temporaries are `temps` block-sized rows of a scratch buffer kept on the
    kernel's context, so a step allocates nothing per variable. `update` writes with `out=` in the order
    TF's functor computes, so the results are the unfused formula's bit for bit. Arrays that are not
    C-contiguous (they cannot be flattened in place) are updated whole.
    """
    size, dtype = arrays[0].size, arrays[0].dtype
    if not all(a.flags.c_contiguous for a in arrays):
        update(*arrays, np.asarray(grad), *np.empty((temps, *arrays[0].shape), dtype))
        return
    flat = [a.reshape(-1) for a in arrays]
    g = np.ascontiguousarray(grad).reshape(-1)
    block = min(size, _BLOCK)
    with scratch(k).borrow("fused", (temps, block), dtype) as rows:
        for start in range(0, size, block):
            stop = start + block
            count = min(block, size - start)
            update(*[a[start:stop] for a in flat], g[start:stop], *rows[:, :count])


# -- gradient descent ------------------------------------------------------------------------------
@op("ApplyGradientDescent", inputs="var: Ref(T), alpha: T, delta: T", outputs="out: Ref(T)", types=_TYPES,
    attrs={"use_locking": False}, shape=_shape_fn((), {"alpha": 1}, 2), stateful=True, differentiable=False)
def apply_gradient_descent_op(k, var, alpha, delta):
    (w,), (lr,) = _dense(k, {"var": var}, {"alpha": alpha}, delta)

    def update(w, g, t):
        w -= np.multiply(g, lr, out=t)

    fused(k, [w], delta, 1, update)
    return var


# -- momentum ----------------------------------------------------------------------------------
@op("ApplyMomentum", inputs="var: Ref(T), accum: Ref(T), lr: T, grad: T, momentum: T", outputs="out: Ref(T)",
    types=_TYPES, attrs={"use_locking": False, "use_nesterov": False},
    shape=_shape_fn((1,), {"lr": 2, "momentum": 4}, 3), stateful=True, differentiable=False)
def apply_momentum_op(k, var, accum, lr, grad, momentum):
    (w, a), (lr, mu) = _dense(k, {"var": var, "accum": accum}, {"lr": lr, "momentum": momentum}, grad)
    nesterov = k.use_nesterov

    def update(w, a, g, t, u):
        a *= mu
        a += g
        if nesterov:  # grad * lr + accum * mu * lr
            np.multiply(g, lr, out=t)
            np.multiply(a, mu, out=u)
            u *= lr
            w -= np.add(t, u, out=t)
        else:
            w -= np.multiply(a, lr, out=t)

    fused(k, [w, a], grad, 2, update)
    return var


@op("SparseApplyMomentum", inputs="var: Ref(T), accum: Ref(T), lr: T, grad: T, indices: Tindices, momentum: T",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False, "use_nesterov": False},
    shape=_shape_fn((1,), {"lr": 2, "momentum": 5}, 3, 4), stateful=True, differentiable=False)
def sparse_apply_momentum_op(k, var, accum, lr, grad, indices, momentum):
    (w, a), (lr, mu), grad, indices = _sparse(k, {"var": var, "accum": accum}, {"lr": lr, "momentum": momentum},
                                              grad, indices)
    for rows, at in _row_groups(indices):
        g = grad[at]
        acc = a[rows] * mu + g
        a[rows] = acc
        if k.use_nesterov:
            w[rows] -= lr * g + lr * mu * acc
        else:
            w[rows] -= lr * acc
    return var


# -- adagrad -----------------------------------------------------------------------------------
@op("ApplyAdagrad", inputs="var: Ref(T), accum: Ref(T), lr: T, grad: T", outputs="out: Ref(T)", types=_TYPES,
    attrs={"use_locking": False, "update_slots": True}, shape=_shape_fn((1,), {"lr": 2}, 3), stateful=True,
    differentiable=False)
def apply_adagrad_op(k, var, accum, lr, grad):
    (w, a), (lr,) = _dense(k, {"var": var, "accum": accum}, {"lr": lr}, grad)
    update_slots = k.update_slots

    def update(w, a, g, t, u):
        if update_slots:
            a += np.square(g, out=t)
        np.multiply(g, lr, out=t)  # grad * lr * (1 / sqrt(accum))
        np.sqrt(a, out=u)
        t *= np.divide(1, u, out=u)
        w -= t

    fused(k, [w, a], grad, 2, update)
    return var


@op("SparseApplyAdagrad", inputs="var: Ref(T), accum: Ref(T), lr: T, grad: T, indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False, "update_slots": True},
    shape=_shape_fn((1,), {"lr": 2}, 3, 4), stateful=True, differentiable=False)
def sparse_apply_adagrad_op(k, var, accum, lr, grad, indices):
    (w, a), (lr,), grad, indices = _sparse(k, {"var": var, "accum": accum}, {"lr": lr}, grad, indices)
    for rows, at in _row_groups(indices):
        g = grad[at]
        acc = a[rows] + np.square(g) if k.update_slots else a[rows]
        a[rows] = acc
        w[rows] -= lr * g * _rsqrt(acc)
    return var


# -- adam --------------------------------------------------------------------------------------
@op("ApplyAdam", inputs="var: Ref(T), m: Ref(T), v: Ref(T), beta1_power: T, beta2_power: T, lr: T, beta1: T, "
                        "beta2: T, epsilon: T, grad: T",
    outputs="out: Ref(T)", types=_TYPES, attrs={"use_locking": False, "use_nesterov": False},
    shape=_shape_fn((1, 2), {"beta1_power": 3, "beta2_power": 4, "lr": 5, "beta1": 6, "beta2": 7, "epsilon": 8}, 9),
    stateful=True, differentiable=False)
def apply_adam_op(k, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    scalars = {"beta1_power": beta1_power, "beta2_power": beta2_power, "lr": lr, "beta1": beta1, "beta2": beta2,
               "epsilon": epsilon}
    (w, m, v), (b1p, b2p, lr, b1, b2, eps) = _dense(k, {"var": var, "m": m, "v": v}, scalars, grad)
    one = b1.dtype.type(1)
    alpha = lr * np.sqrt(one - b2p) / (one - b1p)
    nesterov = k.use_nesterov

    def update(w, m, v, g, t, u):
        m += np.multiply(np.subtract(g, m, out=t), one - b1, out=t)  # m += (grad - m) * (1 - beta1)
        np.square(g, out=t)  # v += (grad² - v) * (1 - beta2)
        t -= v
        v += np.multiply(t, one - b2, out=t)
        if nesterov:  # ((grad * (1 - beta1) + beta1 * m) * alpha) / (sqrt(v) + epsilon)
            np.multiply(g, one - b1, out=t)
            t += np.multiply(m, b1, out=u)
            t *= alpha
        else:  # (m * alpha) / (sqrt(v) + epsilon)
            np.multiply(m, alpha, out=t)
        np.sqrt(v, out=u)
        u += eps
        w -= np.divide(t, u, out=t)

    fused(k, [w, m, v], grad, 2, update)
    return var


# -- rmsprop -----------------------------------------------------------------------------------
_RMS_SCALARS = ("lr", "rho", "momentum", "epsilon")


@op("ApplyRMSProp", inputs="var: Ref(T), ms: Ref(T), mom: Ref(T), lr: T, rho: T, momentum: T, epsilon: T, grad: T",
    outputs="out: Ref(T)", types=_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2), {"lr": 3, "rho": 4, "momentum": 5, "epsilon": 6}, 7), stateful=True,
    differentiable=False)
def apply_rms_prop_op(k, var, ms, mom, lr, rho, momentum, epsilon, grad):
    scalars = dict(zip(_RMS_SCALARS, (lr, rho, momentum, epsilon)))
    (w, ms, mom), (lr, rho, mu, eps) = _dense(k, {"var": var, "ms": ms, "mom": mom}, scalars, grad)

    def update(w, ms, mom, g, t, u):
        _mean_square(ms, g, rho, t)
        mom *= mu  # mom = mom * momentum + (grad * lr) / sqrt(ms + epsilon)
        np.multiply(g, lr, out=t)
        np.add(ms, eps, out=u)
        mom += np.divide(t, np.sqrt(u, out=u), out=t)
        w -= mom

    fused(k, [w, ms, mom], grad, 2, update)
    return var


def _mean_square(ms: np.ndarray, g: np.ndarray, rho: Any, t: np.ndarray) -> None:
    """ms += (grad² - ms) * (1 - rho), through the temporary `t`."""
    np.square(g, out=t)
    t -= ms
    ms += np.multiply(t, 1 - rho, out=t)


@op("ApplyCenteredRMSProp", inputs="var: Ref(T), mg: Ref(T), ms: Ref(T), mom: Ref(T), lr: T, rho: T, momentum: T, "
                                   "epsilon: T, grad: T",
    outputs="out: Ref(T)", types=_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2, 3), {"lr": 4, "rho": 5, "momentum": 6, "epsilon": 7}, 8), stateful=True,
    differentiable=False)
def apply_centered_rms_prop_op(k, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    scalars = dict(zip(_RMS_SCALARS, (lr, rho, momentum, epsilon)))
    (w, mg, ms, mom), (lr, rho, mu, eps) = _dense(k, {"var": var, "mg": mg, "ms": ms, "mom": mom}, scalars, grad)

    def update(w, mg, ms, mom, g, t, u):
        _mean_square(ms, g, rho, t)
        mg += np.multiply(np.subtract(g, mg, out=t), 1 - rho, out=t)  # mg += (grad - mg) * (1 - rho)
        mom *= mu  # mom = mom * momentum + (grad * lr) / sqrt((ms - mg²) + epsilon)
        np.multiply(g, lr, out=t)
        np.subtract(ms, np.square(mg, out=u), out=u)
        u += eps
        mom += np.divide(t, np.sqrt(u, out=u), out=t)
        w -= mom

    fused(k, [w, mg, ms, mom], grad, 2, update)
    return var


@op("SparseApplyRMSProp", inputs="var: Ref(T), ms: Ref(T), mom: Ref(T), lr: T, rho: T, momentum: T, epsilon: T, "
                                 "grad: T, indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2), {"lr": 3, "rho": 4, "momentum": 5, "epsilon": 6}, 7, 8), stateful=True,
    differentiable=False)
def sparse_apply_rms_prop_op(k, var, ms, mom, lr, rho, momentum, epsilon, grad, indices):
    scalars = dict(zip(_RMS_SCALARS, (lr, rho, momentum, epsilon)))
    (w, ms, mom), (lr, rho, mu, eps), grad, indices = _sparse(k, {"var": var, "ms": ms, "mom": mom}, scalars,
                                                              grad, indices)
    for rows, at in _row_groups(indices):
        g = grad[at]
        ms_rows = ms[rows] * rho + np.square(g) * (1 - rho)
        mom_rows = mom[rows] * mu + _rsqrt(ms_rows + eps) * lr * g
        ms[rows], mom[rows] = ms_rows, mom_rows
        w[rows] -= mom_rows
    return var


@op("SparseApplyCenteredRMSProp", inputs="var: Ref(T), mg: Ref(T), ms: Ref(T), mom: Ref(T), lr: T, rho: T, "
                                         "momentum: T, epsilon: T, grad: T, indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2, 3), {"lr": 4, "rho": 5, "momentum": 6, "epsilon": 7}, 8, 9), stateful=True,
    differentiable=False)
def sparse_apply_centered_rms_prop_op(k, var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices):
    scalars = dict(zip(_RMS_SCALARS, (lr, rho, momentum, epsilon)))
    (w, mg, ms, mom), (lr, rho, mu, eps), grad, indices = _sparse(
        k, {"var": var, "mg": mg, "ms": ms, "mom": mom}, scalars, grad, indices)
    for rows, at in _row_groups(indices):
        g = grad[at]
        ms_rows = ms[rows] * rho + np.square(g) * (1 - rho)
        mg_rows = mg[rows] * rho + g * (1 - rho)
        mom_rows = mom[rows] * mu + _rsqrt(ms_rows + eps - np.square(mg_rows)) * lr * g
        ms[rows], mg[rows], mom[rows] = ms_rows, mg_rows, mom_rows
        w[rows] -= mom_rows
    return var


# -- Python wrappers, with TF's generated names and argument order ----------------------------------------
def _ref(x: Any) -> Any:
    return x._ref() if hasattr(x, "_ref") else x


def apply_gradient_descent(var: Any, alpha: Any, delta: Any, use_locking: bool = False,
                           name: str | None = None) -> Any:
    return apply_gradient_descent_op(_ref(var), alpha, delta, use_locking=use_locking, name=name)


def apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, momentum: Any, use_locking: bool = False,
                   use_nesterov: bool = False, name: str | None = None) -> Any:
    return apply_momentum_op(_ref(var), _ref(accum), lr, grad, momentum, use_locking=use_locking,
                             use_nesterov=use_nesterov, name=name)


def sparse_apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, indices: Any, momentum: Any,
                          use_locking: bool = False, use_nesterov: bool = False, name: str | None = None) -> Any:
    return sparse_apply_momentum_op(_ref(var), _ref(accum), lr, grad, indices, momentum, use_locking=use_locking,
                                    use_nesterov=use_nesterov, name=name)


def apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, use_locking: bool = False, update_slots: bool = True,
                  name: str | None = None) -> Any:
    return apply_adagrad_op(_ref(var), _ref(accum), lr, grad, use_locking=use_locking, update_slots=update_slots,
                            name=name)


def sparse_apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, indices: Any, use_locking: bool = False,
                         update_slots: bool = True, name: str | None = None) -> Any:
    return sparse_apply_adagrad_op(_ref(var), _ref(accum), lr, grad, indices, use_locking=use_locking,
                                   update_slots=update_slots, name=name)


def apply_adam(var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any, beta1: Any, beta2: Any,
               epsilon: Any, grad: Any, use_locking: bool = False, use_nesterov: bool = False,
               name: str | None = None) -> Any:
    return apply_adam_op(_ref(var), _ref(m), _ref(v), beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                         use_locking=use_locking, use_nesterov=use_nesterov, name=name)


def apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any, grad: Any,
                   use_locking: bool = False, name: str | None = None) -> Any:
    return apply_rms_prop_op(_ref(var), _ref(ms), _ref(mom), lr, rho, momentum, epsilon, grad,
                             use_locking=use_locking, name=name)


def apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any,
                            grad: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return apply_centered_rms_prop_op(_ref(var), _ref(mg), _ref(ms), _ref(mom), lr, rho, momentum, epsilon, grad,
                                      use_locking=use_locking, name=name)


def sparse_apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any, grad: Any,
                          indices: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return sparse_apply_rms_prop_op(_ref(var), _ref(ms), _ref(mom), lr, rho, momentum, epsilon, grad, indices,
                                    use_locking=use_locking, name=name)


def sparse_apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                                   epsilon: Any, grad: Any, indices: Any, use_locking: bool = False,
                                   name: str | None = None) -> Any:
    return sparse_apply_centered_rms_prop_op(_ref(var), _ref(mg), _ref(ms), _ref(mom), lr, rho, momentum, epsilon,
                                             grad, indices, use_locking=use_locking, name=name)


__all__ = [
    "apply_gradient_descent", "apply_momentum", "sparse_apply_momentum", "apply_adagrad", "sparse_apply_adagrad",
    "apply_adam", "apply_rms_prop", "apply_centered_rms_prop", "sparse_apply_rms_prop",
    "sparse_apply_centered_rms_prop",
]
