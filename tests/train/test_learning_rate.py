"""Learning-rate schedules against their formulas in numpy at several global steps (staircase and cycle
included), and against values, dtypes and names pinned with TF 2.21 (tf.compat.v1.train)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asyncflow as af

STEPS = np.array([0, 1, 7, 10, 15, 25, 40])
F32 = np.float32


def _poly(t, steps, lr, end, power, cycle):
    if cycle:
        steps = steps * (1.0 if t == 0 else math.ceil(t / steps))
    else:
        t = min(t, steps)
    return (lr - end) * (1 - t / steps) ** power + end


def _cosine(fraction):
    return 0.5 * (1 + np.cos(np.pi * fraction))


def _sgdr(t, first, t_mul, m_mul, alpha, lr):
    fraction = t / first
    if t_mul == 1.0:
        i = math.floor(fraction)
        fraction -= i
    else:
        i = math.floor(math.log(1 - fraction * (1 - t_mul)) / math.log(t_mul))
        fraction = (fraction - (1 - t_mul ** i) / (1 - t_mul)) / t_mul ** i
    return lr * ((1 - alpha) * m_mul ** i * _cosine(fraction) + alpha)


def _lincos(t, steps, periods, alpha, beta, lr):
    t = min(t, steps)
    return lr * ((alpha + (steps - t) / steps) * _cosine(2 * periods * t / steps) + beta)


# name: (builder(gs), numpy formula(t), dtype)
SCHEDULES = {
    "nat": (lambda gs: af.train.natural_exp_decay(0.5, gs, 10, 0.3),
            lambda t: 0.5 * math.exp(-0.3 * t / 10), np.float32),
    "nat_stair": (lambda gs: af.train.natural_exp_decay(0.5, gs, 10, 0.3, staircase=True),
                  lambda t: 0.5 * math.exp(-0.3 * (t // 10)), np.float32),
    "inv": (lambda gs: af.train.inverse_time_decay(0.5, gs, 10, 0.3),
            lambda t: 0.5 / (1 + 0.3 * t / 10), np.float32),
    "inv_stair": (lambda gs: af.train.inverse_time_decay(np.float64(0.5), gs, 10, 0.3, staircase=True),
                  lambda t: 0.5 / (1 + float(F32(0.3)) * (t // 10)), np.float64),  # 0.3 goes through float32
    "poly": (lambda gs: af.train.polynomial_decay(0.5, gs, 10, end_learning_rate=0.05, power=2.0),
             lambda t: _poly(t, 10, 0.5, 0.05, 2.0, False), np.float32),
    "poly_cycle": (lambda gs: af.train.polynomial_decay(0.5, gs, 10, end_learning_rate=0.05, power=0.5, cycle=True),
                   lambda t: _poly(t, 10, 0.5, 0.05, 0.5, True), np.float32),
    "poly64": (lambda gs: af.train.polynomial_decay(np.float64(0.5), gs, 10),
               lambda t: _poly(t, 10, 0.5, float(F32(0.0001)), 1.0, False), np.float64),
    "cos": (lambda gs: af.train.cosine_decay(0.5, gs, 20, alpha=0.1),
            lambda t: 0.5 * (0.9 * _cosine(min(t, 20) / 20) + 0.1), np.float32),
    "cosr": (lambda gs: af.train.cosine_decay_restarts(0.5, gs, 5, t_mul=2.0, m_mul=0.8, alpha=0.05),
             lambda t: _sgdr(t, 5, 2.0, 0.8, 0.05, 0.5), np.float32),
    "cosr1": (lambda gs: af.train.cosine_decay_restarts(0.5, gs, 6, t_mul=1.0, m_mul=0.5),
              lambda t: _sgdr(t, 6, 1.0, 0.5, 0.0, 0.5), np.float32),
    "lincos": (lambda gs: af.train.linear_cosine_decay(0.5, gs, 20, num_periods=2.0, alpha=0.1, beta=0.01),
               lambda t: _lincos(t, 20, 2.0, 0.1, 0.01, 0.5), np.float32),
    "exp": (lambda gs: af.train.exponential_decay(0.5, gs, 10, 0.3, staircase=True),
            lambda t: 0.5 * 0.3 ** (t // 10), np.float32),
}

# Checked against TF 2.21 (tf.compat.v1.train) at STEPS.
TF_VALUES = {
    "nat": [0.5, 0.48522276, 0.40529212, 0.3704091, 0.31881407, 0.23618326, 0.1505971],
    "nat_stair": [0.5, 0.5, 0.5, 0.3704091, 0.3704091, 0.2744058, 0.1505971],
    "inv": [0.5, 0.48543692, 0.41322312, 0.3846154, 0.34482756, 0.2857143, 0.22727272],
    "inv_stair": [0.5, 0.5, 0.5, 0.3846153810884826, 0.3846153810884826, 0.3124999953433872, 0.2272727223467237],
    "poly": [0.5, 0.41449997, 0.0905, 0.05, 0.05, 0.05, 0.05],
    "poly_cycle": [0.5, 0.47690746, 0.29647517, 0.05, 0.275, 0.23371173, 0.05],
    "poly64": [0.5, 0.4500099999997474, 0.15006999999823162, 9.999999747378752e-05, 9.999999747378752e-05,
               9.999999747378752e-05, 9.999999747378752e-05],
    "cos": [0.5, 0.49722987, 0.37714785, 0.27499998, 0.11590098, 0.05, 0.05],
    "cosr": [0.5, 0.45464152, 0.36871323, 0.21499999, 0.32900003, 0.177, 0.25894374],
    "cosr1": [0.5, 0.46650636, 0.23325315, 0.06249997, 0.062499996, 0.02915664, 0.0019531215],
    "lincos": [0.555, 0.4798669, 0.1345593, 0.305, 0.005, 0.055, 0.055],
    "exp": [0.5, 0.5, 0.5, 0.15, 0.15, 0.045, 0.0040500006],
}

# The output names TF 2.21 gives these schedules, built in this order in one graph.
TF_NAMES = {"nat": "ExponentialDecay:0", "nat_stair": "ExponentialDecay_1:0", "inv": "InverseTimeDecay:0",
            "inv_stair": "InverseTimeDecay_1:0", "poly": "PolynomialDecay:0", "poly_cycle": "PolynomialDecay_1:0",
            "poly64": "PolynomialDecay_2:0", "cos": "CosineDecay/Mul_3:0", "cosr": "SGDRDecay:0",
            "cosr1": "SGDRDecay_1:0", "lincos": "LinearCosineDecay:0", "exp": "ExponentialDecay_2:0"}


@pytest.fixture(scope="module")
def evaluated():
    with af.Graph().as_default():
        gs = af.placeholder(af.int64, [], name="gs")
        tensors = {name: build(gs) for name, (build, _, _) in SCHEDULES.items()}
        with af.Session() as sess:
            values = {name: np.array([sess.run(t, {gs: s}) for s in STEPS]) for name, t in tensors.items()}
    return tensors, values


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_numpy_and_tensorflow(evaluated, name):
    tensors, values = evaluated
    _, formula, dtype = SCHEDULES[name]
    got = values[name]
    assert got.dtype == dtype and tensors[name].dtype.as_numpy_dtype == dtype
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, [formula(int(t)) for t in STEPS], rtol=max(rtol, 2e-6), atol=1e-7)
    np.testing.assert_allclose(got, TF_VALUES[name], rtol=rtol, atol=1e-8)
    assert tensors[name].name == TF_NAMES[name]


def test_noisy_linear_cosine_decay_stays_near_its_mean():
    with af.Graph().as_default():
        af.set_random_seed(1)
        gs = af.placeholder(af.int64, [], name="gs")
        noisy = af.train.noisy_linear_cosine_decay(0.5, gs, 20, initial_variance=0.01)
        assert noisy.name == "NoisyLinearCosineDecay:0" and noisy.shape.as_list() == []
        with af.Session() as sess:
            draws = np.array([sess.run(noisy, {gs: 5}) for _ in range(200)])
    mean = _lincos(5, 20, 0.5, 0.0, 0.001, 0.5)
    std = 0.5 * _cosine(0.25) * math.sqrt(0.01 / 6 ** 0.55)  # noise on the linear part, scaled
    assert abs(draws.mean() - mean) < 4 * std / math.sqrt(200) and 0.7 * std < draws.std() < 1.3 * std


@pytest.mark.parametrize("fn", [af.train.natural_exp_decay, af.train.inverse_time_decay])
def test_global_step_is_required(fn):
    with pytest.raises(ValueError, match=f"global_step is required for {fn.__name__}."):
        fn(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay."):
        af.train.cosine_decay(0.1, None, 10)
