"""Training ops (ApplyGradientDescent, ApplyMomentum, ..., SparseApply*) and Unique against numpy references.

Each row builds Variables, runs one update after their initialisers (control dependencies), and
fetches the updated variable and slots. The references are the update rules written out in
float64 numpy (the documented formulas of tf.raw_ops.Apply*), one row at a time in index order for
the sparse forms. Plain tests below: static shape errors, run-time errors that leave every variable
and slot unchanged, and in-place updates that never change a value fetched earlier.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops import training_ops as T
from asyncflow.ops import training_ops_extra as TX
from asyncflow.ops.array_unique import unique
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.default_rng(11)
W = RNG.standard_normal((4, 3)).astype(np.float32)
G = RNG.standard_normal((4, 3)).astype(np.float32)
ACC = RNG.uniform(0.5, 2.0, (4, 3)).astype(np.float32)   # positive: accumulators and mean squares
MOM = RNG.standard_normal((4, 3)).astype(np.float32)
MG = RNG.uniform(-0.3, 0.3, (4, 3)).astype(np.float32)    # small, so ms - mg^2 stays positive
IDX = np.array([2, 0], np.int32)
DUP = np.array([3, 1, 3], np.int64)
GS = RNG.standard_normal((2, 3)).astype(np.float32)        # rows for IDX
GD = RNG.standard_normal((3, 3)).astype(np.float32)        # rows for DUP
LR, MU, RHO, EPS = 0.1, 0.9, 0.8, 1e-6


def f64(*xs):
    return [np.array(x, np.float64) for x in xs]


def update(make, **variables):
    """A builder: Variables from `variables` (var first), `make(af, vars)` after their initialisers, then fetch
    the updated var and every slot (read after the update)."""
    def build(af):
        vs = {name: af.Variable(value, name=name) for name, value in variables.items()}
        with af.control_dependencies([v.initializer for v in vs.values()]):
            out = make(af, vs)
        with af.control_dependencies([out.op]):
            slots = [af.identity(v._ref()) for name, v in vs.items() if name != "var"]
        return [out, *slots]
    return build


def as32(*xs):
    return [np.asarray(x, np.float32) for x in xs]


# -- references (float64, the documented rules) -----------------------------------------------------------
def momentum_ref(w, a, g, lr, mu, nesterov):
    w, a, g = f64(w, a, g)
    a = mu * a + g
    w = w - (lr * g + lr * mu * a if nesterov else lr * a)
    return as32(w, a)


def adagrad_ref(w, acc, g, lr):
    w, acc, g = f64(w, acc, g)
    acc = acc + g * g
    return as32(w - lr * g / np.sqrt(acc), acc)


def adam_ref(w, m, v, g, b1p, b2p, lr, b1, b2, eps, nesterov):
    w, m, v, g = f64(w, m, v, g)
    alpha = lr * np.sqrt(1 - b2p) / (1 - b1p)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    step = (g * (1 - b1) + b1 * m) if nesterov else m
    return as32(w - alpha * step / (np.sqrt(v) + eps), m, v)


def rms_ref(w, ms, mom, g, lr, rho, mu, eps, mg=None):
    w, ms, mom, g = f64(w, ms, mom, g)
    ms = rho * ms + (1 - rho) * g * g
    denom = ms + eps
    if mg is not None:
        mg = rho * np.float64(mg) + (1 - rho) * g
        denom = denom - mg * mg
    mom = mu * mom + lr * g / np.sqrt(denom)
    out = [w - mom, ms, mom] if mg is None else [w - mom, mg, ms, mom]
    return as32(*out)


def sparse_ref(dense_rule, arrays, grad, indices, **kw):
    """Applies `dense_rule` to one row at a time, in index order (TF's loop), returning every array."""
    arrays = [np.array(a, np.float32) for a in arrays]
    for i, row in enumerate(indices):
        new = dense_rule(*[a[row] for a in arrays], grad[i], **kw)
        for a, n in zip(arrays, new):
            a[row] = n
    return arrays


def sparse_rms_ref(w, ms, mom, g, **kw):
    return rms_ref(w, ms, mom, g, **kw)


def sparse_centered_ref(w, mg, ms, mom, g, **kw):
    out = rms_ref(w, ms, mom, g, mg=mg, **kw)
    return out


def unique_ref(x):
    order = list(dict.fromkeys(x.tolist()))
    return np.array(order, x.dtype), np.array([order.index(v) for v in x.tolist()], np.int32)


def adadelta_ref(w, a, au, g, lr, rho, eps):
    w, a, au, g = f64(w, a, au, g)
    a = rho * a + (1 - rho) * g * g
    step = np.sqrt(au + eps) / np.sqrt(a + eps) * g
    return as32(w - lr * step, a, rho * au + (1 - rho) * step * step)


def fobos(prox, rate, l1, l2):
    return np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2)


def proximal_gd_ref(w, g, lr, l1, l2):
    w, g = f64(w, g)
    return as32(fobos(w - lr * g, lr, l1, l2))


def proximal_adagrad_ref(w, a, g, lr, l1, l2):
    w, a, g = f64(w, a, g)
    a = a + g * g
    rate = lr / np.sqrt(a)
    return as32(fobos(w - rate * g, rate, l1, l2), a)


def ftrl_ref(w, a, lin, g, lr, l1, l2, lr_power, shrink=0.0, by_lr=False):
    """FTRL-Proximal as tf.raw_ops.ApplyFtrl(V2) documents it (multiply_linear_by_lr scales linear by lr)."""
    w, a, lin, g = f64(w, a, lin, g)
    new_a = a + g * g
    sigma = new_a ** -lr_power - a ** -lr_power
    g_shrunk = g + 2 * shrink * w
    if by_lr:
        lin = lin + g_shrunk * lr - sigma * w
        l1, quadratic = l1 * lr, new_a ** -lr_power + 2 * l2 * lr
    else:
        lin = lin + g_shrunk - sigma / lr * w
        quadratic = new_a ** -lr_power / lr + 2 * l2
    w = np.where(np.abs(lin) > l1, (l1 * np.sign(lin) - lin) / quadratic, 0.0)
    return as32(w, new_a, lin)


def adagrad_da_ref(w, ga, gga, g, lr, l1, l2, step):
    w, ga, gga, g = f64(w, ga, gga, g)
    ga, gga = ga + g, gga + g * g
    w = -lr * np.sign(ga) * np.maximum(np.abs(ga) - step * l1, 0) / (l2 * step * lr + np.sqrt(gga))
    return as32(w, ga, gga)


W1, ACC1, MOM1, GD1 = W[:, 0], ACC[:, 0], MOM[:, 0], GD[:, 0]   # 1-D variables: TF's per-element loops
L1, L2, SHRINK, POW = 0.05, 0.2, 0.3, -0.5


CASES = [
    Case("apply_gradient_descent", ("ApplyGradientDescent",),
         update(lambda af, v: T.apply_gradient_descent(v["var"], np.float32(LR), G), var=W),
         lambda: [(W.astype(np.float64) - LR * G).astype(np.float32)], rtol=1e-6),
    Case("apply_gradient_descent_f64", ("ApplyGradientDescent",),
         update(lambda af, v: T.apply_gradient_descent(v["var"], 0.5, G.astype(np.float64)), var=W.astype(np.float64)),
         lambda: [W.astype(np.float64) - 0.5 * G.astype(np.float64)]),
    Case("apply_momentum", ("ApplyMomentum",),
         update(lambda af, v: T.apply_momentum(v["var"], v["accum"], np.float32(LR), G, np.float32(MU)),
                var=W, accum=MOM),
         lambda: momentum_ref(W, MOM, G, LR, MU, False), rtol=1e-5),
    Case("apply_momentum_nesterov", ("ApplyMomentum",),
         update(lambda af, v: T.apply_momentum(v["var"], v["accum"], np.float32(LR), G, np.float32(MU),
                                               use_nesterov=True), var=W, accum=MOM),
         lambda: momentum_ref(W, MOM, G, LR, MU, True), rtol=1e-5),
    Case("sparse_apply_momentum", ("SparseApplyMomentum",),
         update(lambda af, v: T.sparse_apply_momentum(v["var"], v["accum"], np.float32(LR), GS, IDX,
                                                      np.float32(MU)), var=W, accum=MOM),
         lambda: sparse_ref(momentum_ref, [W, MOM], GS, IDX, lr=LR, mu=MU, nesterov=False), rtol=1e-5),
    Case("sparse_apply_momentum_nesterov_repeated_index", ("SparseApplyMomentum",),
         update(lambda af, v: T.sparse_apply_momentum(v["var"], v["accum"], np.float32(LR), GD, DUP,
                                                      np.float32(MU), use_nesterov=True), var=W, accum=MOM),
         lambda: sparse_ref(momentum_ref, [W, MOM], GD, DUP, lr=LR, mu=MU, nesterov=True), rtol=1e-5),
    Case("apply_adagrad", ("ApplyAdagrad",),
         update(lambda af, v: T.apply_adagrad(v["var"], v["accum"], np.float32(LR), G), var=W, accum=ACC),
         lambda: adagrad_ref(W, ACC, G, LR), rtol=1e-5),
    Case("apply_adagrad_no_slot_update", ("ApplyAdagrad",),
         update(lambda af, v: T.apply_adagrad(v["var"], v["accum"], np.float32(LR), G, update_slots=False),
                var=W, accum=ACC),
         lambda: as32(W.astype(np.float64) - LR * G / np.sqrt(ACC.astype(np.float64)), ACC), rtol=1e-5),
    Case("sparse_apply_adagrad_repeated_index", ("SparseApplyAdagrad",),
         update(lambda af, v: T.sparse_apply_adagrad(v["var"], v["accum"], np.float32(LR), GD, DUP),
                var=W, accum=ACC),
         lambda: sparse_ref(adagrad_ref, [W, ACC], GD, DUP, lr=LR), rtol=1e-5),
    Case("apply_adam", ("ApplyAdam",),
         update(lambda af, v: T.apply_adam(v["var"], v["m"], v["v"], np.float32(0.9 ** 3), np.float32(0.999 ** 3),
                                           np.float32(LR), np.float32(0.9), np.float32(0.999), np.float32(EPS), G),
                var=W, m=MOM, v=ACC),
         lambda: adam_ref(W, MOM, ACC, G, 0.9 ** 3, 0.999 ** 3, LR, 0.9, 0.999, EPS, False), rtol=1e-5),
    Case("apply_adam_nesterov", ("ApplyAdam",),
         update(lambda af, v: T.apply_adam(v["var"], v["m"], v["v"], np.float32(0.9), np.float32(0.999),
                                           np.float32(LR), np.float32(0.9), np.float32(0.999), np.float32(EPS), G,
                                           use_nesterov=True), var=W, m=MOM, v=ACC),
         lambda: adam_ref(W, MOM, ACC, G, 0.9, 0.999, LR, 0.9, 0.999, EPS, True), rtol=1e-5),
    Case("apply_rms_prop", ("ApplyRMSProp",),
         update(lambda af, v: T.apply_rms_prop(v["var"], v["ms"], v["mom"], np.float32(LR), np.float32(RHO),
                                               np.float32(MU), np.float32(EPS), G), var=W, ms=ACC, mom=MOM),
         lambda: rms_ref(W, ACC, MOM, G, LR, RHO, MU, EPS), rtol=1e-5),
    Case("apply_centered_rms_prop", ("ApplyCenteredRMSProp",),
         update(lambda af, v: T.apply_centered_rms_prop(v["var"], v["mg"], v["ms"], v["mom"], np.float32(LR),
                                                        np.float32(RHO), np.float32(MU), np.float32(EPS), G),
                var=W, mg=MG, ms=ACC, mom=MOM),
         lambda: rms_ref(W, ACC, MOM, G, LR, RHO, MU, EPS, mg=MG), rtol=1e-5),
    Case("sparse_apply_rms_prop", ("SparseApplyRMSProp",),
         update(lambda af, v: T.sparse_apply_rms_prop(v["var"], v["ms"], v["mom"], np.float32(LR), np.float32(RHO),
                                                      np.float32(MU), np.float32(EPS), GD, DUP),
                var=W, ms=ACC, mom=MOM),
         lambda: sparse_ref(sparse_rms_ref, [W, ACC, MOM], GD, DUP, lr=LR, rho=RHO, mu=MU, eps=EPS), rtol=1e-5),
    Case("sparse_apply_centered_rms_prop", ("SparseApplyCenteredRMSProp",),
         update(lambda af, v: T.sparse_apply_centered_rms_prop(v["var"], v["mg"], v["ms"], v["mom"], np.float32(LR),
                                                               np.float32(RHO), np.float32(MU), np.float32(EPS),
                                                               GS, IDX),
                var=W, mg=MG, ms=ACC, mom=MOM),
         lambda: sparse_ref(sparse_centered_ref, [W, MG, ACC, MOM], GS, IDX, lr=LR, rho=RHO, mu=MU, eps=EPS),
         rtol=1e-5),
    Case("apply_adadelta", ("ApplyAdadelta",),
         update(lambda af, v: TX.apply_adadelta(v["var"], v["accum"], v["accum_update"], np.float32(LR),
                                                np.float32(RHO), np.float32(EPS), G),
                var=W, accum=ACC, accum_update=ACC * 0.5),
         lambda: adadelta_ref(W, ACC, ACC * 0.5, G, LR, RHO, EPS), rtol=1e-5),
    Case("sparse_apply_adadelta_repeated_index", ("SparseApplyAdadelta",),
         update(lambda af, v: TX.sparse_apply_adadelta(v["var"], v["accum"], v["accum_update"], np.float32(LR),
                                                       np.float32(RHO), np.float32(EPS), GD, DUP),
                var=W, accum=ACC, accum_update=ACC),
         lambda: sparse_ref(adadelta_ref, [W, ACC, ACC], GD, DUP, lr=LR, rho=RHO, eps=EPS), rtol=1e-5),
    Case("apply_proximal_gradient_descent", ("ApplyProximalGradientDescent",),
         update(lambda af, v: TX.apply_proximal_gradient_descent(v["var"], np.float32(LR), np.float32(L1),
                                                                 np.float32(L2), G), var=W),
         lambda: proximal_gd_ref(W, G, LR, L1, L2), rtol=1e-5),
    Case("apply_proximal_gradient_descent_no_l1_f64", ("ApplyProximalGradientDescent",),
         update(lambda af, v: TX.apply_proximal_gradient_descent(v["var"], 0.5, 0.0, 0.1, G.astype(np.float64)),
                var=W.astype(np.float64)),
         lambda: [fobos(W.astype(np.float64) - 0.5 * G.astype(np.float64), 0.5, 0.0, 0.1)]),
    Case("sparse_apply_proximal_gradient_descent_repeated_index", ("SparseApplyProximalGradientDescent",),
         update(lambda af, v: TX.sparse_apply_proximal_gradient_descent(v["var"], np.float32(LR), np.float32(L1),
                                                                        np.float32(L2), GD, DUP), var=W),
         lambda: sparse_ref(proximal_gd_ref, [W], GD, DUP, lr=LR, l1=L1, l2=L2), rtol=1e-5),
    Case("apply_proximal_adagrad", ("ApplyProximalAdagrad",),
         update(lambda af, v: TX.apply_proximal_adagrad(v["var"], v["accum"], np.float32(LR), np.float32(L1),
                                                        np.float32(L2), G), var=W, accum=ACC),
         lambda: proximal_adagrad_ref(W, ACC, G, LR, L1, L2), rtol=1e-5),
    Case("sparse_apply_proximal_adagrad", ("SparseApplyProximalAdagrad",),
         update(lambda af, v: TX.sparse_apply_proximal_adagrad(v["var"], v["accum"], np.float32(LR), np.float32(L1),
                                                               np.float32(L2), GS, IDX), var=W, accum=ACC),
         lambda: sparse_ref(proximal_adagrad_ref, [W, ACC], GS, IDX, lr=LR, l1=L1, l2=L2), rtol=1e-5),
    Case("sparse_apply_proximal_adagrad_1d_repeated_index", ("SparseApplyProximalAdagrad",),
         update(lambda af, v: TX.sparse_apply_proximal_adagrad(v["var"], v["accum"], np.float32(LR), np.float32(0.0),
                                                               np.float32(L2), GD1, DUP), var=W1, accum=ACC1),
         lambda: sparse_ref(proximal_adagrad_ref, [W1, ACC1], GD1, DUP, lr=LR, l1=0.0, l2=L2), rtol=1e-5),
    Case("apply_ftrl", ("ApplyFtrl",),
         update(lambda af, v: TX.apply_ftrl(v["var"], v["accum"], v["linear"], G, np.float32(LR), np.float32(L1),
                                            np.float32(L2), np.float32(POW)), var=W, accum=ACC, linear=MOM),
         lambda: ftrl_ref(W, ACC, MOM, G, LR, L1, L2, POW), rtol=1e-5),
    Case("apply_ftrl_power_multiply_linear_by_lr", ("ApplyFtrl",),
         update(lambda af, v: TX.apply_ftrl(v["var"], v["accum"], v["linear"], G, np.float32(LR), np.float32(L1),
                                            np.float32(L2), np.float32(-0.7), multiply_linear_by_lr=True),
                var=W, accum=ACC, linear=MOM),
         lambda: ftrl_ref(W, ACC, MOM, G, LR, L1, L2, -0.7, by_lr=True), rtol=1e-5),
    Case("apply_ftrl_v2", ("ApplyFtrlV2",),
         update(lambda af, v: TX.apply_ftrl_v2(v["var"], v["accum"], v["linear"], G, np.float32(LR), np.float32(L1),
                                               np.float32(L2), np.float32(SHRINK), np.float32(POW)),
                var=W, accum=ACC, linear=MOM),
         lambda: ftrl_ref(W, ACC, MOM, G, LR, L1, L2, POW, shrink=SHRINK), rtol=1e-5),
    Case("sparse_apply_ftrl_repeated_index", ("SparseApplyFtrl",),
         update(lambda af, v: TX.sparse_apply_ftrl(v["var"], v["accum"], v["linear"], GD, DUP, np.float32(LR),
                                                   np.float32(L1), np.float32(L2), np.float32(POW)),
                var=W, accum=ACC, linear=MOM),
         lambda: sparse_ref(ftrl_ref, [W, ACC, MOM], GD, DUP, lr=LR, l1=L1, l2=L2, lr_power=POW), rtol=1e-5),
    Case("sparse_apply_ftrl_v2_1d_by_lr", ("SparseApplyFtrlV2",),
         update(lambda af, v: TX.sparse_apply_ftrl_v2(v["var"], v["accum"], v["linear"], GD1, DUP, np.float32(LR),
                                                      np.float32(L1), np.float32(L2), np.float32(SHRINK),
                                                      np.float32(-0.7), multiply_linear_by_lr=True),
                var=W1, accum=ACC1, linear=MOM1),
         lambda: sparse_ref(ftrl_ref, [W1, ACC1, MOM1], GD1, DUP, lr=LR, l1=L1, l2=L2, lr_power=-0.7, shrink=SHRINK,
                            by_lr=True), rtol=1e-5),
    Case("apply_adagrad_da", ("ApplyAdagradDA",),
         update(lambda af, v: TX.apply_adagrad_da(v["var"], v["gradient_accumulator"],
                                                  v["gradient_squared_accumulator"], G, np.float32(LR),
                                                  np.float32(L1), np.float32(L2), np.int64(3)),
                var=W, gradient_accumulator=MOM, gradient_squared_accumulator=ACC),
         lambda: adagrad_da_ref(W, MOM, ACC, G, LR, L1, L2, 3), rtol=1e-5),
    Case("sparse_apply_adagrad_da_repeated_index", ("SparseApplyAdagradDA",),
         update(lambda af, v: TX.sparse_apply_adagrad_da(v["var"], v["gradient_accumulator"],
                                                         v["gradient_squared_accumulator"], GD, DUP, np.float32(LR),
                                                         np.float32(0.0), np.float32(L2), np.int64(2)),
                var=W, gradient_accumulator=MOM, gradient_squared_accumulator=ACC),
         lambda: sparse_ref(adagrad_da_ref, [W, MOM, ACC], GD, DUP, lr=LR, l1=0.0, l2=L2, step=2), rtol=1e-5),
    Case("sparse_apply_adagrad_da_1d", ("SparseApplyAdagradDA",),
         update(lambda af, v: TX.sparse_apply_adagrad_da(v["var"], v["gradient_accumulator"],
                                                         v["gradient_squared_accumulator"], GD1, DUP, np.float32(LR),
                                                         np.float32(L1), np.float32(L2), np.int64(4)),
                var=W1, gradient_accumulator=MOM1, gradient_squared_accumulator=ACC1),
         lambda: sparse_ref(adagrad_da_ref, [W1, MOM1, ACC1], GD1, DUP, lr=LR, l1=L1, l2=L2, step=4), rtol=1e-5),
    Case("unique_first_appearance_order", ("Unique",),
         lambda af: list(unique(np.array([5, 3, 5, 7, 3, 3], np.int32))),
         lambda: list(unique_ref(np.array([5, 3, 5, 7, 3, 3], np.int32))), static_shape=None),
    Case("unique_strings_int64_idx", ("Unique",),
         lambda af: list(unique(np.array([b"b", b"a", b"b"], object), out_idx=af.int64)),
         lambda: [np.array([b"b", b"a"], object), np.array([0, 1, 0], np.int64)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_training_op(case):
    check_case(case)


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def test_unique_shapes_and_nan():
    y, idx = unique(af.placeholder(af.float32, [None], name="x"))
    assert y.shape.as_list() == [None] and idx.shape.as_list() == [None] and idx.dtype == af.int32
    with af.Session() as sess:
        got_y, got_idx = sess.run([y, idx], {"x:0": [np.nan, 1.0, np.nan, 1.0]})
    assert np.isnan(got_y[[0, 2]]).all() and got_y[1] == 1.0 and got_idx.tolist() == [0, 1, 2, 1]
    with pytest.raises(ValueError, match=r"Unique 'Unique_1': x must be a vector"):
        unique(np.zeros((2, 2), np.float32))


def test_static_shape_errors_name_the_op_and_shapes():
    w = af.Variable(np.ones((3, 2), np.float32), name="w")
    a = af.Variable(np.ones((3, 2), np.float32), name="a")
    with pytest.raises(ValueError, match=r"ApplyGradientDescent 'ApplyGradientDescent': var and grad must have "
                                         r"the same shape, got \(3, 2\) and \(3,\)"):
        T.apply_gradient_descent(w, 0.1, np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"alpha must be a scalar"):
        T.apply_gradient_descent(w, [0.1], np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"ApplyMomentum .*Shapes must be equal: var has shape \(3, 2\)"):
        T.apply_momentum(w, af.Variable(np.ones(2, np.float32)), 0.1, np.ones((3, 2), np.float32), 0.9)
    with pytest.raises(ValueError, match=r"SparseApplyMomentum .*match in all dimensions but the first"):
        T.sparse_apply_momentum(w, a, 0.1, np.ones((2, 3), np.float32), [0, 1], 0.9)
    with pytest.raises(ValueError, match=r"grad must be the same size as indices"):
        T.sparse_apply_adagrad(w, a, 0.1, np.ones((3, 2), np.float32), [0, 1])
    with pytest.raises(ValueError, match=r"indices must be one-dimensional"):
        T.sparse_apply_adagrad(w, a, 0.1, np.ones((2, 2), np.float32), [[0, 1]])
    with pytest.raises(TypeError, match=r"requires that input 'var' be a mutable tensor"):
        T.apply_gradient_descent(af.constant(W), 0.1, G)
    with pytest.raises(TypeError, match=r"ApplyGradientDescent"):
        T.apply_gradient_descent(af.Variable([1, 2], name="ints"), 1, [1, 1])


def _state(sess, variables):
    return [sess.run(v).copy() for v in variables]


def test_failed_updates_leave_variable_and_slots_unchanged():
    w = af.Variable(W, name="w")
    acc = af.Variable(ACC, name="acc")
    mom = af.Variable(MOM, name="mom")
    grad = af.placeholder(af.float32, None, name="grad")
    idx = af.placeholder(af.int32, None, name="idx")
    scalar = af.placeholder(af.float32, None, name="lr")
    dense = T.apply_rms_prop(w, acc, mom, scalar, 0.9, 0.5, 1e-6, grad)
    sparse = T.sparse_apply_momentum(w, mom, 0.1, grad, idx, 0.9)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        before = _state(sess, [w, acc, mom])
        bad = [
            (dense, {grad: np.ones(3), scalar: 0.1}, r"var and grad do not have the same shape\[4,3\] \[3\]"),
            (dense, {grad: G, scalar: [0.1, 0.2]}, r"lr is not a scalar: \[2\]"),
            (sparse, {grad: GS, idx: [0, 4]}, r"SparseApplyMomentum 'SparseApplyMomentum': Index 4 at offset 1 in "
                                              r"indices is out of range"),
            (sparse, {grad: GS, idx: [0, -1]}, r"Index -1 at offset 1"),
            (sparse, {grad: GS, idx: [0]}, r"grad must be the same size as indices in the first dimension"),
            (sparse, {grad: np.ones((2, 2)), idx: [0, 1]}, r"var and grad must match in dimension 1"),
            (sparse, {grad: GS, idx: [[0, 1]]}, r"indices must be one-dimensional"),
        ]
        for fetch, feeds, message in bad:
            with pytest.raises(af.errors.InvalidArgumentError, match=message):
                sess.run(fetch, feeds)
            for got, want in zip(_state(sess, [w, acc, mom]), before):
                np.testing.assert_array_equal(got, want)


def test_uninitialized_slot_is_failed_precondition_and_nothing_changes():
    w = af.Variable(W, name="w")
    accum = af.Variable(ACC, name="accum")
    step = T.apply_adagrad(w, accum, 0.1, G)
    with af.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(af.errors.FailedPreconditionError, match="uninitialized value accum"):
            sess.run(step)
        np.testing.assert_array_equal(sess.run(w), W)


def test_update_is_in_place_but_never_changes_a_value_fetched_before():
    w = af.Variable(np.zeros((5, 2), np.float32), name="w")
    acc = af.Variable(np.ones((5, 2), np.float32), name="acc")
    step = T.sparse_apply_adagrad(w, acc, 1.0, np.ones((1, 2), np.float32), [3])
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        before = sess.run(w)
        out = sess.run(step)
        sess.run(step)
        assert before.tolist() == np.zeros((5, 2)).tolist()
        assert out[3].tolist() == [-1 / np.sqrt(2, dtype=np.float32)] * 2
        got = sess.run(w)
        assert np.count_nonzero(got[[0, 1, 2, 4]]) == 0
        np.testing.assert_allclose(got[3], -(1 / np.sqrt(2) + 1 / np.sqrt(3)), rtol=1e-6)


def test_ops_return_the_variable_ref_and_are_not_differentiable():
    w = af.Variable(W, name="w")
    out = T.apply_gradient_descent(w, 0.1, G, use_locking=True)
    assert out.dtype == af.float32._as_ref and out.shape.as_list() == [4, 3]
    assert out.op.get_attr("use_locking") is True and out.op.name == "ApplyGradientDescent"
    for name in ("ApplyGradientDescent", "SparseApplyMomentum", "ApplyAdam", "Unique"):
        assert not af._OPS[name].differentiable
