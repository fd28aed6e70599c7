"""Training ops of TF1's second-tier optimizers: Adadelta, proximal gradient descent, proximal
Adagrad, FTRL (V1 and V2, with l2 shrinkage) and Adagrad dual averaging, dense and sparse.

They follow `asyncflow/ops/training_ops.py` (which owns the shared checks and helpers): the
variable and its slots arrive as `VariableSlot`s, every shape, scalar and index is checked before
anything changes, then the arrays are updated in place and the variable's slot is returned. The
arithmetic is TF's CPU kernels', in the same order and in the variable's dtype, so float32
rounding agrees: `ApplyProximal*` computes `prox = var - lr * grad` and then the FOBOS shrinkage
`sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)` (just `prox / (1 + lr * l2)` when
l1 <= 0), `ApplyFtrl*` keeps `linear` and the accumulated squared gradients and sets `var` in
closed form, `ApplyAdagradDA` sets `var` from the accumulated gradients and the global step.
Sparse kernels apply repeated indices one after the other, as TF's loops do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow.ops.registry import FLOAT, INDEX, op
from asyncflow.ops.training_ops import _dense, _ref, _row_groups, _rsqrt, _shape_fn, _sparse, fused

_TYPES = {"T": FLOAT}
_SPARSE_TYPES = {"T": FLOAT, "Tindices": INDEX}


# -- adadelta ----------------------------------------------------------------------------------
def _adadelta_rows(w, a, au, g, lr, rho, eps, rows=slice(None)):
    one = rho.dtype.type(1)
    acc = a[rows] * rho + np.square(g) * (one - rho)
    a[rows] = acc
    update = np.sqrt(au[rows] + eps) * _rsqrt(acc + eps) * g
    w[rows] -= update * lr
    au[rows] = au[rows] * rho + np.square(update) * (one - rho)


@op("ApplyAdadelta", inputs="var: Ref(T), accum: Ref(T), accum_update: Ref(T), lr: T, rho: T, epsilon: T, grad: T",
    outputs="out: Ref(T)", types=_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2), {"lr": 3, "rho": 4, "epsilon": 5}, 6), stateful=True, differentiable=False)
def apply_adadelta_op(k, var, accum, accum_update, lr, rho, epsilon, grad):
    (w, a, au), (lr, rho, eps) = _dense(k, {"var": var, "accum": accum, "accum_update": accum_update},
                                        {"lr": lr, "rho": rho, "epsilon": epsilon}, grad)
    one = rho.dtype.type(1)

    def update(w, a, au, g, t, u):  # _adadelta_rows, written with out= (the same operations in the same order)
        a *= rho
        a += np.multiply(np.square(g, out=t), one - rho, out=t)
        np.sqrt(np.add(au, eps, out=t), out=t)  # update = sqrt(accum_update + eps) * rsqrt(accum + eps) * grad
        np.sqrt(np.add(a, eps, out=u), out=u)
        t *= np.divide(1, u, out=u)
        t *= g
        w -= np.multiply(t, lr, out=u)
        au *= rho
        au += np.multiply(np.square(t, out=t), one - rho, out=t)

    fused(k, [w, a, au], grad, 2, update)
    return var


@op("SparseApplyAdadelta", inputs="var: Ref(T), accum: Ref(T), accum_update: Ref(T), lr: T, rho: T, epsilon: T, "
                                  "grad: T, indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2), {"lr": 3, "rho": 4, "epsilon": 5}, 6, 7), stateful=True, differentiable=False)
def sparse_apply_adadelta_op(k, var, accum, accum_update, lr, rho, epsilon, grad, indices):
    (w, a, au), (lr, rho, eps), grad, indices = _sparse(
        k, {"var": var, "accum": accum, "accum_update": accum_update}, {"lr": lr, "rho": rho, "epsilon": epsilon},
        grad, indices)
    for rows, at in _row_groups(indices):
        _adadelta_rows(w, a, au, grad[at], lr, rho, eps, rows)
    return var


# -- proximal gradient descent and proximal adagrad (FOBOS) -------------------------------------------
def _fobos(prox: np.ndarray, lr: Any, l1: Any, l2: Any) -> np.ndarray:
    """TF's shrinkage step; `lr` is a scalar (gradient descent) or per element (Adagrad's rate)."""
    one = prox.dtype.type(1)
    if l1 > 0:
        return np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, prox.dtype.type(0)) / (one + l2 * lr)
    return prox / (one + l2 * lr)


@op("ApplyProximalGradientDescent", inputs="var: Ref(T), alpha: T, l1: T, l2: T, delta: T", outputs="out: Ref(T)",
    types=_TYPES, attrs={"use_locking": False}, shape=_shape_fn((), {"alpha": 1, "l1": 2, "l2": 3}, 4),
    stateful=True, differentiable=False)
def apply_proximal_gradient_descent_op(k, var, alpha, l1, l2, delta):
    (w,), (lr, l1, l2) = _dense(k, {"var": var}, {"alpha": alpha, "l1": l1, "l2": l2}, delta)

    def update(w, g):
        w[...] = _fobos(w - g * lr, lr, l1, l2)

    fused(k, [w], delta, 0, update)  # by blocks: the formula's temporaries stay block-sized
    return var


@op("SparseApplyProximalGradientDescent", inputs="var: Ref(T), alpha: T, l1: T, l2: T, grad: T, indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((), {"alpha": 1, "l1": 2, "l2": 3}, 4, 5), stateful=True, differentiable=False)
def sparse_apply_proximal_gradient_descent_op(k, var, alpha, l1, l2, grad, indices):
    (w,), (lr, l1, l2), grad, indices = _sparse(k, {"var": var}, {"alpha": alpha, "l1": l1, "l2": l2}, grad,
                                                indices)
    for rows, at in _row_groups(indices):
        w[rows] = _fobos(w[rows] - grad[at] * lr, lr, l1, l2)
    return var


def _proximal_adagrad_rows(w, a, g, lr, l1, l2, rows=slice(None), scalar_path=False):
    acc = a[rows] + np.square(g)
    a[rows] = acc
    # TF's per-element loop (a 1-D variable) divides by sqrt; its vectorised form multiplies by rsqrt.
    rate = lr / np.sqrt(acc) if scalar_path else lr * _rsqrt(acc)
    w[rows] = _fobos(w[rows] - g * rate, rate, l1, l2)


@op("ApplyProximalAdagrad", inputs="var: Ref(T), accum: Ref(T), lr: T, l1: T, l2: T, grad: T",
    outputs="out: Ref(T)", types=_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1,), {"lr": 2, "l1": 3, "l2": 4}, 5), stateful=True, differentiable=False)
def apply_proximal_adagrad_op(k, var, accum, lr, l1, l2, grad):
    (w, a), (lr, l1, l2) = _dense(k, {"var": var, "accum": accum}, {"lr": lr, "l1": l1, "l2": l2}, grad)
    fused(k, [w, a], grad, 0, lambda w, a, g: _proximal_adagrad_rows(w, a, g, lr, l1, l2))
    return var


@op("SparseApplyProximalAdagrad", inputs="var: Ref(T), accum: Ref(T), lr: T, l1: T, l2: T, grad: T, "
                                         "indices: Tindices",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1,), {"lr": 2, "l1": 3, "l2": 4}, 5, 6), stateful=True, differentiable=False)
def sparse_apply_proximal_adagrad_op(k, var, accum, lr, l1, l2, grad, indices):
    (w, a), (lr, l1, l2), grad, indices = _sparse(k, {"var": var, "accum": accum}, {"lr": lr, "l1": l1, "l2": l2},
                                                  grad, indices)
    for rows, at in _row_groups(indices):
        _proximal_adagrad_rows(w, a, grad[at], lr, l1, l2, rows, scalar_path=w.ndim == 1)
    return var


# -- ftrl --------------------------------------------------------------------------------------
def _check_ftrl(k: Any, lr: Any, l1: Any, l2: Any, lr_power: Any, l2_shrinkage: Any = None) -> None:
    """TF's value checks (the shapes were checked already); all before any update."""
    if not lr > 0:
        raise ValueError(f"{k.op_type} '{k.name}': lr is not a positive scalar: {lr}")
    if not l1 >= 0:
        raise ValueError(f"{k.op_type} '{k.name}': l1 regularization strength is not a non-negative scalar: {l1}")
    if not l2 >= 0:
        raise ValueError(f"{k.op_type} '{k.name}': l2 regularization strength is not a non-negative scalar: {l2}")
    if l2_shrinkage is not None and not l2_shrinkage >= 0:
        raise ValueError(f"{k.op_type} '{k.name}': l2 shrinkage regularization strength is not a non-negative "
                         f"scalar: {l2_shrinkage}")
    if not lr_power <= 0:
        raise ValueError(f"{k.op_type} '{k.name}': lr_power is not a non-positive scalar: {lr_power}")


def _ftrl_rows(w, a, lin, g, lr, l1, l2, lr_power, l2_shrinkage, by_lr, rows=slice(None)):
    """One FTRL-Proximal step on `rows` (TF's functor; `l2_shrinkage` None for V1)."""
    two = lr.dtype.type(2)
    v, acc = w[rows], a[rows]
    g_shrunk = g if l2_shrinkage is None else g + two * l2_shrinkage * v
    new_acc = acc + g * g
    if lr_power == -0.5:
        sigma = np.sqrt(new_acc) - np.sqrt(acc)
        new_pow = np.sqrt(new_acc)
    else:
        sigma = np.power(new_acc, -lr_power) - np.power(acc, -lr_power)
        new_pow = np.power(new_acc, -lr_power)
    if by_lr:
        linear = lin[rows] + (g_shrunk * lr - sigma * v)
        threshold = l1 * lr
        y = new_pow + two * l2 * lr
    else:
        linear = lin[rows] + (g_shrunk - sigma / lr * v)
        threshold = l1
        y = new_pow / lr + two * l2
    lin[rows] = linear
    x = threshold * np.sign(linear) - linear
    w[rows] = np.where(np.abs(linear) > threshold, x / y, lr.dtype.type(0))
    a[rows] = new_acc


_FTRL = "var: Ref(T), accum: Ref(T), linear: Ref(T), grad: T"


@op("ApplyFtrl", inputs=f"{_FTRL}, lr: T, l1: T, l2: T, lr_power: T", outputs="out: Ref(T)", types=_TYPES,
    attrs={"use_locking": False, "multiply_linear_by_lr": False},
    shape=_shape_fn((1, 2), {"lr": 4, "l1": 5, "l2": 6, "lr_power": 7}, 3), stateful=True, differentiable=False)
def apply_ftrl_op(k, var, accum, linear, grad, lr, l1, l2, lr_power):
    (w, a, lin), (lr, l1, l2, lr_power) = _dense(
        k, {"var": var, "accum": accum, "linear": linear}, {"lr": lr, "l1": l1, "l2": l2, "lr_power": lr_power}, grad)
    _check_ftrl(k, lr, l1, l2, lr_power)
    by_lr = k.multiply_linear_by_lr
    fused(k, [w, a, lin], grad, 0, lambda w, a, lin, g: _ftrl_rows(w, a, lin, g, lr, l1, l2, lr_power, None, by_lr))
    return var


@op("ApplyFtrlV2", inputs=f"{_FTRL}, lr: T, l1: T, l2: T, l2_shrinkage: T, lr_power: T", outputs="out: Ref(T)",
    types=_TYPES, attrs={"use_locking": False, "multiply_linear_by_lr": False},
    shape=_shape_fn((1, 2), {"lr": 4, "l1": 5, "l2": 6, "l2_shrinkage": 7, "lr_power": 8}, 3), stateful=True,
    differentiable=False)
def apply_ftrl_v2_op(k, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    (w, a, lin), (lr, l1, l2, shrink, lr_power) = _dense(
        k, {"var": var, "accum": accum, "linear": linear},
        {"lr": lr, "l1": l1, "l2": l2, "l2_shrinkage": l2_shrinkage, "lr_power": lr_power}, grad)
    _check_ftrl(k, lr, l1, l2, lr_power, shrink)
    by_lr = k.multiply_linear_by_lr
    fused(k, [w, a, lin], grad, 0,
          lambda w, a, lin, g: _ftrl_rows(w, a, lin, g, lr, l1, l2, lr_power, shrink, by_lr))
    return var


@op("SparseApplyFtrl", inputs=f"{_FTRL}, indices: Tindices, lr: T, l1: T, l2: T, lr_power: T",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False, "multiply_linear_by_lr": False},
    shape=_shape_fn((1, 2), {"lr": 5, "l1": 6, "l2": 7, "lr_power": 8}, 3, 4), stateful=True, differentiable=False)
def sparse_apply_ftrl_op(k, var, accum, linear, grad, indices, lr, l1, l2, lr_power):
    (w, a, lin), (lr, l1, l2, lr_power), grad, indices = _sparse(
        k, {"var": var, "accum": accum, "linear": linear}, {"lr": lr, "l1": l1, "l2": l2, "lr_power": lr_power},
        grad, indices)
    _check_ftrl(k, lr, l1, l2, lr_power)
    for rows, at in _row_groups(indices):
        _ftrl_rows(w, a, lin, grad[at], lr, l1, l2, lr_power, None, k.multiply_linear_by_lr, rows)
    return var


@op("SparseApplyFtrlV2", inputs=f"{_FTRL}, indices: Tindices, lr: T, l1: T, l2: T, l2_shrinkage: T, lr_power: T",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False, "multiply_linear_by_lr": False},
    shape=_shape_fn((1, 2), {"lr": 5, "l1": 6, "l2": 7, "l2_shrinkage": 8, "lr_power": 9}, 3, 4), stateful=True,
    differentiable=False)
def sparse_apply_ftrl_v2_op(k, var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power):
    (w, a, lin), (lr, l1, l2, shrink, lr_power), grad, indices = _sparse(
        k, {"var": var, "accum": accum, "linear": linear},
        {"lr": lr, "l1": l1, "l2": l2, "l2_shrinkage": l2_shrinkage, "lr_power": lr_power}, grad, indices)
    _check_ftrl(k, lr, l1, l2, lr_power, shrink)
    for rows, at in _row_groups(indices):
        _ftrl_rows(w, a, lin, grad[at], lr, l1, l2, lr_power, shrink, k.multiply_linear_by_lr, rows)
    return var


# -- adagrad dual averaging ----------------------------------------------------------------------------
_DA = "var: Ref(T), gradient_accumulator: Ref(T), gradient_squared_accumulator: Ref(T), grad: T"


@op("ApplyAdagradDA", inputs=f"{_DA}, lr: T, l1: T, l2: T, global_step: int64", outputs="out: Ref(T)", types=_TYPES,
    attrs={"use_locking": False}, shape=_shape_fn((1, 2), {"lr": 4, "l1": 5, "l2": 6, "global_step": 7}, 3),
    stateful=True, differentiable=False)
def apply_adagrad_da_op(k, var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2,
                              global_step):
    (w, ga, gga), (lr, l1, l2, step) = _dense(
        k, {"var": var, "gradient_accumulator": gradient_accumulator,
            "gradient_squared_accumulator": gradient_squared_accumulator},
        {"lr": lr, "l1": l1, "l2": l2, "global_step": global_step}, grad)
    t = w.dtype.type
    gs = t(np.float32(step))  # TF: static_cast<float>(global_step), then the variable's type

    def update(w, ga, gga, g):
        ga += g
        gga += np.square(g)
        denominator = l2 * (gs * lr) + np.sqrt(gga)
        if l1 > 0:
            w[...] = lr * t(-1) * np.sign(ga) * np.maximum(np.abs(ga) - gs * l1, t(0)) / denominator
        else:
            w[...] = lr * ga * t(-1) / denominator

    fused(k, [w, ga, gga], grad, 0, update)  # by blocks: the formula's temporaries stay block-sized
    return var


@op("SparseApplyAdagradDA", inputs=f"{_DA}, indices: Tindices, lr: T, l1: T, l2: T, global_step: int64",
    outputs="out: Ref(T)", types=_SPARSE_TYPES, attrs={"use_locking": False},
    shape=_shape_fn((1, 2), {"lr": 5, "l1": 6, "l2": 7, "global_step": 8}, 3, 4), stateful=True,
    differentiable=False)
def sparse_apply_adagrad_da_op(k, var, gradient_accumulator, gradient_squared_accumulator, grad, indices, lr,
                                     l1, l2, global_step):
    (w, ga, gga), (lr, l1, l2, step), grad, indices = _sparse(
        k, {"var": var, "gradient_accumulator": gradient_accumulator,
            "gradient_squared_accumulator": gradient_squared_accumulator},
        {"lr": lr, "l1": l1, "l2": l2, "global_step": global_step}, grad, indices)
    t = w.dtype.type
    if w.ndim == 1:
        # TF's per-element loop computes in double and rounds each stored value to the variable's type.
        lr64, l1_64, l2_64, step = float(lr), float(l1), float(l2), int(step)
        for i, index in enumerate(indices):
            g = float(grad[i])
            ga[index] = float(ga[index]) + g
            gga[index] = float(gga[index]) + g * g
            acc = float(ga[index])
            denominator = step * l2_64 * lr64 + np.sqrt(float(gga[index]))
            if l1_64 > 0:
                w[index] = np.sign(-acc) * lr64 * max(abs(acc) - step * l1_64, 0.0) / denominator
            else:
                w[index] = (-acc * lr64) / denominator
        return var
    gs = t(step)
    gs_lr = t(np.float64(gs * lr))
    for rows, at in _row_groups(indices):
        g = grad[at]
        acc = ga[rows] + g
        sq = gga[rows] + np.square(g)
        ga[rows], gga[rows] = acc, sq
        denominator = l2 + np.sqrt(sq) / gs_lr
        if l1 > 0:
            w[rows] = t(-1) * np.sign(acc) * np.maximum(np.abs(acc) / gs - l1, t(0)) / denominator
        else:
            w[rows] = t(-1) * (acc / gs) / denominator
    return var


# -- Python wrappers, with TF's generated names and argument order ----------------------------------------
def apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any, grad: Any,
                   use_locking: bool = False, name: str | None = None) -> Any:
    return apply_adadelta_op(_ref(var), _ref(accum), _ref(accum_update), lr, rho, epsilon, grad,
                             use_locking=use_locking, name=name)


def sparse_apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any, grad: Any,
                          indices: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return sparse_apply_adadelta_op(_ref(var), _ref(accum), _ref(accum_update), lr, rho, epsilon, grad, indices,
                                    use_locking=use_locking, name=name)


def apply_proximal_gradient_descent(var: Any, alpha: Any, l1: Any, l2: Any, delta: Any, use_locking: bool = False,
                                    name: str | None = None) -> Any:
    return apply_proximal_gradient_descent_op(_ref(var), alpha, l1, l2, delta, use_locking=use_locking, name=name)


def sparse_apply_proximal_gradient_descent(var: Any, alpha: Any, l1: Any, l2: Any, grad: Any, indices: Any,
                                           use_locking: bool = False, name: str | None = None) -> Any:
    return sparse_apply_proximal_gradient_descent_op(_ref(var), alpha, l1, l2, grad, indices,
                                                     use_locking=use_locking, name=name)


def apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any, use_locking: bool = False,
                           name: str | None = None) -> Any:
    return apply_proximal_adagrad_op(_ref(var), _ref(accum), lr, l1, l2, grad, use_locking=use_locking, name=name)


def sparse_apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any, indices: Any,
                                  use_locking: bool = False, name: str | None = None) -> Any:
    return sparse_apply_proximal_adagrad_op(_ref(var), _ref(accum), lr, l1, l2, grad, indices,
                                            use_locking=use_locking, name=name)


def apply_ftrl(var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any, l2: Any, lr_power: Any,
               use_locking: bool = False, multiply_linear_by_lr: bool = False, name: str | None = None) -> Any:
    return apply_ftrl_op(_ref(var), _ref(accum), _ref(linear), grad, lr, l1, l2, lr_power, use_locking=use_locking,
                         multiply_linear_by_lr=multiply_linear_by_lr, name=name)


def apply_ftrl_v2(var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any, l2: Any, l2_shrinkage: Any,
                  lr_power: Any, use_locking: bool = False, multiply_linear_by_lr: bool = False,
                  name: str | None = None) -> Any:
    return apply_ftrl_v2_op(_ref(var), _ref(accum), _ref(linear), grad, lr, l1, l2, l2_shrinkage, lr_power,
                            use_locking=use_locking, multiply_linear_by_lr=multiply_linear_by_lr, name=name)


def sparse_apply_ftrl(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any, l1: Any, l2: Any,
                      lr_power: Any, use_locking: bool = False, multiply_linear_by_lr: bool = False,
                      name: str | None = None) -> Any:
    return sparse_apply_ftrl_op(_ref(var), _ref(accum), _ref(linear), grad, indices, lr, l1, l2, lr_power,
                                use_locking=use_locking, multiply_linear_by_lr=multiply_linear_by_lr, name=name)


def sparse_apply_ftrl_v2(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any, l1: Any, l2: Any,
                         l2_shrinkage: Any, lr_power: Any, use_locking: bool = False,
                         multiply_linear_by_lr: bool = False, name: str | None = None) -> Any:
    return sparse_apply_ftrl_v2_op(_ref(var), _ref(accum), _ref(linear), grad, indices, lr, l1, l2, l2_shrinkage,
                                   lr_power, use_locking=use_locking, multiply_linear_by_lr=multiply_linear_by_lr,
                                   name=name)


def apply_adagrad_da(var: Any, gradient_accumulator: Any, gradient_squared_accumulator: Any, grad: Any, lr: Any,
                     l1: Any, l2: Any, global_step: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return apply_adagrad_da_op(_ref(var), _ref(gradient_accumulator), _ref(gradient_squared_accumulator), grad, lr,
                               l1, l2, global_step, use_locking=use_locking, name=name)


def sparse_apply_adagrad_da(var: Any, gradient_accumulator: Any, gradient_squared_accumulator: Any, grad: Any,
                            indices: Any, lr: Any, l1: Any, l2: Any, global_step: Any, use_locking: bool = False,
                            name: str | None = None) -> Any:
    return sparse_apply_adagrad_da_op(_ref(var), _ref(gradient_accumulator), _ref(gradient_squared_accumulator),
                                      grad, indices, lr, l1, l2, global_step, use_locking=use_locking, name=name)


__all__ = [
    "apply_adadelta", "sparse_apply_adadelta", "apply_proximal_gradient_descent",
    "sparse_apply_proximal_gradient_descent", "apply_proximal_adagrad", "sparse_apply_proximal_adagrad",
    "apply_ftrl", "apply_ftrl_v2", "sparse_apply_ftrl", "sparse_apply_ftrl_v2", "apply_adagrad_da",
    "sparse_apply_adagrad_da",
]
