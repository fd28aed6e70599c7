"""Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl and AdagradDA: three `minimize` steps,
dense and sparse (a `gather`ed variable gives IndexedSlices with a repeated index), against the
update rules in float64 numpy (tests/ops/test_training_ops.py) and against the final weights
TensorFlow 2.21 (tf.compat.v1) produced for the same programs; plus slot names, variable names
and TF1's argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.test_training_ops import (
    adadelta_ref,
    adagrad_da_ref,
    ftrl_ref,
    proximal_adagrad_ref,
    proximal_gd_ref,
)

W0 = np.array([[0.5, -1.0, 0.25], [1.5, 0.1, -0.3], [-0.7, 0.9, 2.0], [0.05, -0.2, 0.4]], np.float32)
X = np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.2], [2.0, 0.1, 0.4], [-0.6, 1.1, 0.9]], np.float32)
GATHER = [0, 2, 0]

# name: (constructor, slots as (slot name, initial value), numpy rule(w, *slots, g, step) -> [w, *slots])
OPTIMIZERS = {
    "adadelta": (lambda gs: af.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=1e-3),
                 [("accum", 0.0), ("accum_update", 0.0)],
                 lambda w, a, au, g, t: adadelta_ref(w, a, au, g, 0.5, 0.9, 1e-3)),
    "pgd": (lambda gs: af.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.05,
                                                                 l2_regularization_strength=0.2),
            [], lambda w, g, t: proximal_gd_ref(w, g, 0.1, 0.05, 0.2)),
    "pgd_nol1": (lambda gs: af.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=0.2),
                 [], lambda w, g, t: proximal_gd_ref(w, g, 0.1, 0.0, 0.2)),
    "padagrad": (lambda gs: af.train.ProximalAdagradOptimizer(0.3, initial_accumulator_value=0.2,
                                                              l1_regularization_strength=0.05,
                                                              l2_regularization_strength=0.1),
                 [("accumulator", 0.2)], lambda w, a, g, t: proximal_adagrad_ref(w, a, g, 0.3, 0.05, 0.1)),
    "ftrl": (lambda gs: af.train.FtrlOptimizer(0.3, l1_regularization_strength=0.05, l2_regularization_strength=0.1),
             [("accum", 0.1), ("linear", 0.0)],
             lambda w, a, lin, g, t: ftrl_ref(w, a, lin, g, 0.3, 0.05, 0.1, -0.5)),
    "ftrl_pow": (lambda gs: af.train.FtrlOptimizer(0.3, learning_rate_power=-0.7, initial_accumulator_value=0.5,
                                                   l1_regularization_strength=0.01, beta=0.2),
                 [("accum", 0.5), ("linear", 0.0)],  # beta folds into l2: 0 + 0.2 / (2 * 0.3)
                 lambda w, a, lin, g, t: ftrl_ref(w, a, lin, g, 0.3, 0.01, 0.2 / 0.6, -0.7)),
    "ftrl_v2": (lambda gs: af.train.FtrlOptimizer(0.3, l1_regularization_strength=0.05, l2_regularization_strength=0.1,
                                                  l2_shrinkage_regularization_strength=0.3),
                [("accum", 0.1), ("linear", 0.0)],
                lambda w, a, lin, g, t: ftrl_ref(w, a, lin, g, 0.3, 0.05, 0.1, -0.5, shrink=0.3)),
    "adagrad_da": (lambda gs: af.train.AdagradDAOptimizer(0.4, gs, l1_regularization_strength=0.01,
                                                          l2_regularization_strength=0.05),
                   [("gradient_accumulator", 0.0), ("gradient_squared_accumulator", 0.1)],
                   lambda w, ga, gga, g, t: adagrad_da_ref(w, ga, gga, g, 0.4, 0.01, 0.05, t)),
    "adagrad_da_nol1": (lambda gs: af.train.AdagradDAOptimizer(0.4, gs),
                        [("gradient_accumulator", 0.0), ("gradient_squared_accumulator", 0.1)],
                        lambda w, ga, gga, g, t: adagrad_da_ref(w, ga, gga, g, 0.4, 0.0, 0.0, t)),
}

# The weights after the third step, from TF 2.21 (tf.compat.v1) running the programs of `_train`.
TF_FINAL = {
    "adadelta_dense": [[0.5, -0.8433554, 0.10364717], [1.3482332, 0.17033802, -0.14355958],
                       [-0.5479353, 0.747804, 1.8481293], [0.03494981, -0.04897222, 0.34533903]],
    "adadelta_sparse": [[0.34524068, -0.8705541, 0.09661725], [1.5, 0.1, -0.3], [-0.5508653, 0.87325454, 1.8479358],
                        [0.05, -0.2, 0.4]],
    "pgd_dense": [[0.46471384, 0.9714759, 0.02825836], [0.93767893, 0.1122634, 0.41345826],
                  [1.2433171, 0.50699914, 1.2732061], [0.06568628, 0.34079316, 0.3447501]],
    "pgd_sparse": [[0.0, -0.79257566, 0.11850494], [1.5, 0.1, -0.3], [0.08475815, 0.8293165, 1.1986631],
                   [0.05, -0.2, 0.4]],
    "pgd_nol1_dense": [[0.4764759, 0.9738713, 0.04130199], [0.9512616, 0.12452678, 0.43156412],
                       [1.2527988, 0.5211359, 1.2865173], [-0.02449584, 0.3523102, 0.35676098]],
    "pgd_nol1_sparse": [[0.01071608, -0.8022684, 0.13379507], [1.5, 0.1, -0.3], [0.0850804, 0.84345317, 1.2119744],
                        [0.05, -0.2, 0.4]],
    "padagrad_dense": [[0.45132267, -0.25453383, -0.01593548], [0.7987634, 0.13529469, 0.33494744],
                       [-0.0379329, 0.20727617, 1.2920648], [0.21148181, 0.24607672, 0.29971686]],
    "padagrad_sparse": [[-0.19219384, -0.7501666, -0.2785985], [1.5, 0.1, -0.3], [-0.09943103, 0.6518071, 1.2932693],
                        [0.05, -0.2, 0.4]],
    "ftrl_dense": [[0.3423466, -0.19077595, 0.04618474], [0.5713589, 0.17434315, 0.33275476],
                   [-0.02278653, 0.0, 1.0603209], [0.14060764, 0.26601574, 0.27476048]],
    "ftrl_sparse": [[-0.30157945, -0.6880072, -0.4983627], [1.5, 0.1, -0.3], [-0.06747592, 0.16554646, 1.0832269],
                    [0.05, -0.2, 0.4]],
    "ftrl_pow_dense": [[0.25143465, -0.5906331, 0.02297593], [0.6150195, 0.1481238, 0.09469867],
                       [-0.45301658, 0.03307622, 1.1549925], [0.10944648, 0.12359576, 0.17748313]],
    "ftrl_pow_sparse": [[-0.14039388, -0.46917906, -0.35578442], [1.5, 0.1, -0.3],
                        [-0.29745036, 0.09976729, 1.2216549], [0.05, -0.2, 0.4]],
    "ftrl_v2_dense": [[0.15901735, -0.13379753, 0.00809088], [0.34090495, 0.11266483, 0.34343785],
                      [-0.00731062, -0.13335209, 0.7947679], [0.11559082, 0.25985155, 0.1277341]],
    "ftrl_v2_sparse": [[-0.35320276, -0.5173963, -0.49353504], [1.5, 0.1, -0.3], [-0.03179663, 0.0, 0.84131736],
                       [0.05, -0.2, 0.4]],
    "adagrad_da_dense": [[0.41995618, 0.6691604, 0.06614051], [0.13353163, 0.14776929, 0.68060553],
                         [0.63342917, 0.18726783, 0.08895613], [0.33329678, 0.4826167, 0.3632585]],
    "adagrad_da_sparse": [[-0.6667381, -0.43664268, -0.58950514], [1.5, 0.1, -0.3],
                          [0.32937375, 0.22469392, -0.54035425], [0.05, -0.2, 0.4]],
    "adagrad_da_nol1_dense": [[0.43421525, 0.6729474, 0.07384907], [0.142165, 0.15027715, 0.6905208],
                              [0.6368786, 0.19979322, 0.09523597], [0.35695806, 0.4912905, 0.37338716]],
    "adagrad_da_nol1_sparse": [[-0.6823197, -0.44354135, -0.632501], [1.5, 0.1, -0.3],
                               [0.3342246, 0.28741097, -0.555505], [0.05, -0.2, 0.4]],
}

# Slot and variable names, as TF 2.21 names them for these programs.
TF_NAMES = {
    "adadelta": ("accum,accum_update", "global_step,w,w/Adadelta,w/Adadelta_1"),
    "pgd": ("", "global_step,w"),
    "padagrad": ("accumulator", "global_step,w,w/ProximalAdagrad"),
    "ftrl": ("accum,linear", "global_step,w,w/Ftrl,w/Ftrl_1"),
    "adagrad_da": ("gradient_accumulator,gradient_squared_accumulator", "global_step,w,w/AdagradDA,w/AdagradDA_1"),
}


def _train(name: str, sparse: bool, steps: int = 3):
    make = OPTIMIZERS[name][0]
    with af.Graph().as_default():
        gs = af.train.get_or_create_global_step()
        w = af.Variable(W0, name="w")
        x = af.constant(X)
        if sparse:
            loss = af.reduce_sum(af.square(af.gather(w, GATHER) - x[:3]) * x[1:])
        else:
            loss = af.reduce_sum(af.square(w - x) * x) + af.reduce_sum(af.abs(w))
        opt = make(gs)
        train = opt.minimize(loss, global_step=gs)
        with af.Session() as sess:
            sess.run(af.global_variables_initializer())
            trajectory = []
            for _ in range(steps):
                sess.run(train)
                trajectory.append(sess.run(w))
            names = (",".join(opt.get_slot_names()), ",".join(sorted(v.op.name for v in af.global_variables())))
    return trajectory, names


def _numpy_trajectory(name: str, sparse: bool, steps: int = 3) -> list[np.ndarray]:
    _, slots, rule = OPTIMIZERS[name]
    w = W0.astype(np.float32)
    state = [np.full_like(w, value) for _, value in slots]
    out = []
    for t in range(1, steps + 1):
        if sparse:
            grad = np.zeros_like(w, dtype=np.float64)
            for i, row in enumerate(GATHER):  # duplicates summed before the update, as TF1's optimizers do
                grad[row] += 2 * (w[row].astype(np.float64) - X[i]) * X[i + 1]
            rows = sorted(set(GATHER))
            new = rule(w[rows], *[s[rows] for s in state], grad[rows].astype(np.float32), t)
            for arr, value in zip([w, *state], new):
                arr[rows] = value
        else:
            grad = (2 * (w.astype(np.float64) - X) * X + np.sign(w)).astype(np.float32)
            w, *state = rule(w, *state, grad, t)
        out.append(w.copy())
    return out


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_three_steps_match_numpy_and_tensorflow(name, sparse):
    got, _ = _train(name, sparse)
    want = _numpy_trajectory(name, sparse)
    for step, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"{name} step {step + 1}")
    tf_key = f"{name}_{'sparse' if sparse else 'dense'}"
    np.testing.assert_allclose(got[-1], np.array(TF_FINAL[tf_key], np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(TF_NAMES))
def test_slot_and_variable_names_as_tf(name):
    _, names = _train(name, sparse=False, steps=0)
    assert names == TF_NAMES[name]


def test_slots_are_non_trainable_and_colocated():
    w = af.Variable(W0, name="w")
    opt = af.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin")
    opt.minimize(af.reduce_sum(w * w))
    accum, linear = opt.get_slot(w, "accum"), opt.get_slot(w, "linear")
    assert (accum.op.name, linear.op.name) == ("w/acc", "w/lin")
    assert accum not in af.trainable_variables() and accum in af.global_variables()
    assert accum.op.colocation_groups() == w.op.colocation_groups()
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(accum), np.full((4, 3), 0.1, np.float32))


def test_constructor_checks_as_tf1():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        af.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="initial_gradient_squared_accumulator_value must be positive"):
        af.train.AdagradDAOptimizer(0.1, None, initial_gradient_squared_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative or zero"):
        af.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength -1.000000 needs to be positive or zero"):
        af.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value -0.100000 needs to be positive or zero"):
        af.train.FtrlOptimizer(0.1, initial_accumulator_value=-0.1)


def test_ftrl_op_rejects_a_non_positive_learning_rate_at_run_time():
    w = af.Variable(W0, name="w")
    lr = af.placeholder(af.float32, [], name="lr")
    train = af.train.FtrlOptimizer(lr).minimize(af.reduce_sum(w * w))
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        with pytest.raises(af.errors.InvalidArgumentError, match="lr is not a positive scalar"):
            sess.run(train, {lr: 0.0})
        np.testing.assert_array_equal(sess.run(w), W0)  # nothing changed
        sess.run(train, {lr: 0.1})
        assert not np.array_equal(sess.run(w), W0)
