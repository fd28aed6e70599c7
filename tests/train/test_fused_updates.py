"""The fused dense training kernels (asyncflow/ops/training_ops.py, training_ops_extra.py) against the
textbook update formulas over several steps.

The kernels update the variable and its slots in place, block by block (`training_ops.fused`), with
`out=` temporaries from a scratch buffer. The references here are the unfused formulas in float32
numpy, written in the order TF's CPU functors compute (the order the kernels promise to keep), so the
fused results must be equal bit for bit; a float64 run of the same rules bounds them loosely as a
check that the float32 references are the right rules. Shapes cover one block, several blocks (more
than 65,536 elements), a 0-d variable and a variable stored in Fortran order (updated whole).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.resources import VariableSlot
from asyncflow.ops.registry import OPS

RNG = np.random.default_rng(5)
SHAPES = {"small": (7, 3), "blocks": (300, 250), "scalar": (), "fortran": (40, 30)}
STEPS = 3


def _slots(arrays: dict[str, np.ndarray], fortran: bool) -> dict[str, VariableSlot]:
    slots = {}
    for name, value in arrays.items():
        slot = VariableSlot(name, value.dtype)
        slot.assign(np.asfortranarray(value) if fortran else value.copy(), fresh=True)
        slots[name] = slot
    return slots


def _run(op_type: str, slots: dict[str, VariableSlot], args: list, **attrs) -> None:
    k = types.SimpleNamespace(name=op_type.lower(), op_type=op_type, use_locking=False, **attrs)
    OPS[op_type].sync(k, *slots.values(), *args)


def _f32(*xs):
    return [np.float32(x) for x in xs]


# Each rule: (op type, slot names, attrs, kernel arguments after the slots given grad g, the reference
# update on a dict of float arrays in place, written as TF's functor orders it, with scalars of the arrays'
# dtype).
def _gd(v, g, s):
    v["var"] = v["var"] - g * s(0.1)


def _momentum(nesterov):
    def ref(v, g, s):
        lr, mu = s(0.1), s(0.9)
        v["accum"] = v["accum"] * mu + g
        v["var"] = v["var"] - (g * lr + v["accum"] * mu * lr if nesterov else v["accum"] * lr)
    return ref


def _adagrad(v, g, s):
    v["accum"] = v["accum"] + np.square(g)
    v["var"] = v["var"] - g * s(0.1) * (1 / np.sqrt(v["accum"]))


def _adam(nesterov):
    def ref(v, g, s):
        b1p, b2p, lr, b1, b2, eps = s(0.9), s(0.999), s(0.01), s(0.9), s(0.999), s(1e-7)
        one = s(1)
        alpha = lr * np.sqrt(one - b2p) / (one - b1p)
        v["m"] = v["m"] + (g - v["m"]) * (one - b1)
        v["v"] = v["v"] + (np.square(g) - v["v"]) * (one - b2)
        step = (g * (one - b1) + b1 * v["m"]) * alpha if nesterov else v["m"] * alpha
        v["var"] = v["var"] - step / (np.sqrt(v["v"]) + eps)
    return ref


def _rmsprop(v, g, s):
    lr, rho, mu, eps = s(0.01), s(0.9), s(0.5), s(1e-6)
    v["ms"] = v["ms"] + (np.square(g) - v["ms"]) * (1 - rho)
    v["mom"] = v["mom"] * mu + (g * lr) / np.sqrt(v["ms"] + eps)
    v["var"] = v["var"] - v["mom"]


def _centered_rmsprop(v, g, s):
    lr, rho, mu, eps = s(0.01), s(0.9), s(0.5), s(1e-6)
    v["ms"] = v["ms"] + (np.square(g) - v["ms"]) * (1 - rho)
    v["mg"] = v["mg"] + (g - v["mg"]) * (1 - rho)
    v["mom"] = v["mom"] * mu + (g * lr) / np.sqrt((v["ms"] - np.square(v["mg"])) + eps)
    v["var"] = v["var"] - v["mom"]


def _adadelta(v, g, s):
    lr, rho, eps = s(1.0), s(0.95), s(1e-6)
    one = s(1)
    v["accum"] = v["accum"] * rho + np.square(g) * (one - rho)
    update = np.sqrt(v["accum_update"] + eps) * (1 / np.sqrt(v["accum"] + eps)) * g
    v["var"] = v["var"] - update * lr
    v["accum_update"] = v["accum_update"] * rho + np.square(update) * (one - rho)


RULES = {
    "gd": ("ApplyGradientDescent", ("var",), {}, lambda g, s: [s(0.1), g], _gd),
    "momentum": ("ApplyMomentum", ("var", "accum"), {"use_nesterov": False},
                 lambda g, s: [s(0.1), g, s(0.9)], _momentum(False)),
    "nesterov": ("ApplyMomentum", ("var", "accum"), {"use_nesterov": True},
                 lambda g, s: [s(0.1), g, s(0.9)], _momentum(True)),
    "adagrad": ("ApplyAdagrad", ("var", "accum"), {"update_slots": True}, lambda g, s: [s(0.1), g], _adagrad),
    "adam": ("ApplyAdam", ("var", "m", "v"), {"use_nesterov": False},
             lambda g, s: [s(0.9), s(0.999), s(0.01), s(0.9), s(0.999), s(1e-7), g], _adam(False)),
    "adam_nesterov": ("ApplyAdam", ("var", "m", "v"), {"use_nesterov": True},
                      lambda g, s: [s(0.9), s(0.999), s(0.01), s(0.9), s(0.999), s(1e-7), g], _adam(True)),
    "rmsprop": ("ApplyRMSProp", ("var", "ms", "mom"), {},
                lambda g, s: [s(0.01), s(0.9), s(0.5), s(1e-6), g], _rmsprop),
    "centered_rmsprop": ("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom"), {},
                         lambda g, s: [s(0.01), s(0.9), s(0.5), s(1e-6), g], _centered_rmsprop),
    "adadelta": ("ApplyAdadelta", ("var", "accum", "accum_update"), {},
                 lambda g, s: [s(1.0), s(0.95), s(1e-6), g], _adadelta),
}


def _initial(names, shape, dtype) -> dict[str, np.ndarray]:
    values = {}
    for name in names:
        if name == "var" or name in ("m", "mg", "mom"):
            values[name] = RNG.standard_normal(shape).astype(dtype) * dtype(0.1 if name == "mg" else 1)
        else:  # accumulators and mean squares stay positive, and above mg² for the centered rule
            values[name] = RNG.uniform(0.5, 2.0, shape).astype(dtype)
    return values


@pytest.mark.parametrize("shape_id", list(SHAPES))
@pytest.mark.parametrize("rule", list(RULES))
def test_fused_update_equals_the_formula_bit_for_bit(rule: str, shape_id: str) -> None:
    op_type, names, attrs, args, reference = RULES[rule]
    shape = SHAPES[shape_id]
    start = _initial(names, shape, np.float32)
    slots = _slots(start, fortran=shape_id == "fortran")
    want = {name: value.copy() for name, value in start.items()}
    loose = {name: value.astype(np.float64) for name, value in start.items()}
    for _ in range(STEPS):
        g = RNG.standard_normal(shape).astype(np.float32)
        _run(op_type, slots, args(g, np.float32), **attrs)
        reference(want, g, np.float32)
        reference(loose, g.astype(np.float64), np.float64)
    for name in names:
        got = slots[name].value
        assert got.dtype == np.float32 and got.shape == shape
        np.testing.assert_array_equal(got, want[name], err_msg=f"{rule} {shape_id}: {name}")
        np.testing.assert_allclose(got, loose[name], rtol=2e-4, atol=2e-5, err_msg=f"{rule} float64 {name}")


@pytest.mark.parametrize("rule", ["adam", "momentum", "rmsprop"])
def test_fused_update_in_float64(rule: str) -> None:
    op_type, names, attrs, args, reference = RULES[rule]
    start = _initial(names, (260, 260), np.float64)
    slots = _slots(start, fortran=False)
    want = {name: value.copy() for name, value in start.items()}
    for _ in range(STEPS):
        g = RNG.standard_normal((260, 260))
        _run(op_type, slots, args(g, np.float64), **attrs)
        reference(want, g, np.float64)
    for name in names:
        np.testing.assert_array_equal(slots[name].value, want[name], err_msg=f"{rule}: {name}")


def test_a_value_read_before_the_update_keeps_its_contents() -> None:
    """A value read from the variable earlier in the step (still held by a consumer) never changes under it:
    the update goes to a copy, as the unfused kernels' did."""
    start = _initial(("var", "m", "v"), (300, 250), np.float32)
    slots = _slots(start, fortran=False)
    seen = slots["var"].read()
    _run("ApplyAdam", slots, RULES["adam"][3](np.ones((300, 250), np.float32), np.float32), use_nesterov=False)
    np.testing.assert_array_equal(seen, start["var"])
    assert not np.array_equal(slots["var"].value, start["var"])


def test_adam_optimizer_steps_in_a_session_match_the_formula() -> None:
    """AdamOptimizer.minimize over several steps (the ApplyAdam kernel with the optimizer's beta powers)."""
    x0 = RNG.standard_normal((300, 250)).astype(np.float32)
    target = RNG.standard_normal((300, 250)).astype(np.float32)
    with af.Graph().as_default():
        x = af.Variable(x0, name="x")
        loss = af.reduce_sum(af.square(x - target)) * 0.5
        train = af.train.AdamOptimizer(0.01).minimize(loss)
        with af.Session() as sess:
            sess.run(af.global_variables_initializer())
            for _ in range(STEPS):
                sess.run(train)
            got = sess.run(x)
    w, m, v = x0.astype(np.float64), np.zeros(x0.shape), np.zeros(x0.shape)
    for t in range(1, STEPS + 1):
        g = w - target
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
