"""Learning-rate schedules as tf.train has them: tensors computed from the global step each step.

Each is TF1's op for op, under TF's name scope, in the dtype of `learning_rate` (every other
argument and the step are cast to it): `exponential_decay` (`ExponentialDecay`: Cast, RealDiv,
Floor, Pow, Mul), `natural_exp_decay` (the same with rate exp(-decay_rate)), `inverse_time_decay`
(lr / (1 + rate * p)), `polynomial_decay` (to `end_learning_rate`, the decay period stretched to
the next multiple of `decay_steps` with `cycle`), `cosine_decay`, `cosine_decay_restarts` (SGDR,
scope `SGDRDecay`), `linear_cosine_decay` and `noisy_linear_cosine_decay` (with Gaussian noise on
the linear part). The cosine schedules multiply by a float32 pi, as TF does, so they take float32
learning rates. `piecewise_constant` (also `piecewise_constant_decay`) has TF's semantics
(x <= b[0] -> v[0]; b[i-1] < x <= b[i] -> v[i]; x > b[-1] -> v[-1]) but is
built from comparisons and `Select`s instead of TF's `case`, so its ops differ.
"""

from __future__ import annotations

import math as _pymath
from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import cond
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math
from asyncflow.ops.random import random_normal
from asyncflow.ops.registry import constant, convert_to_tensor


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate * decay_rate ** (global_step / decay_steps), the exponent floored when `staircase`."""
    _require_step(global_step, "exponential_decay")
    with name_scope(name, "ExponentialDecay") as scope:
        initial = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial.dtype.base_dtype
        steps = math.cast(decay_steps, dtype)
        rate = math.cast(decay_rate, dtype)
        p = math.truediv(math.cast(global_step, dtype), steps)
        if staircase:
            p = math.floor(p)
        return math.multiply(initial, math.pow(rate, p), name=scope)


def piecewise_constant(x: Any, boundaries: Any, values: Any, name: str | None = None) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i], then values[-1]."""
    boundaries = [convert_to_tensor(b) for b in _flatten(boundaries)]
    values = [convert_to_tensor(v) for v in _flatten(values)]
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant"):
        x = convert_to_tensor(x)
        base = x.dtype.base_dtype
        for i, b in enumerate(boundaries):
            if b.dtype.base_dtype != base:
                # int32 boundaries (plain Python ints) widen to an int64 step without loss, as TF allows
                if b.dtype.base_dtype == dtypes.int32 and base == dtypes.int64:
                    boundaries[i] = math.cast(b, base)
                else:
                    raise ValueError(f"Boundaries ({b.dtype.base_dtype!r}) must have the same dtype as x "
                                     f"({base!r}).")
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError(f"Values must have elements all with the same dtype ({values[0].dtype.base_dtype!r}"
                                 f" vs {v.dtype.base_dtype!r}).")
        # Boundaries are increasing: past boundaries[i] the value is at least values[i + 1].
        result = values[0]
        for b, v in zip(boundaries, values[1:]):
            result = math.where(math.greater(x, b), v, result)
        return result


def _require_step(global_step: Any, what: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")


def _start(learning_rate: Any, global_step: Any, *numbers: Any) -> tuple[Tensor, Tensor, list[Tensor]]:
    """The learning rate as a tensor, the step and `numbers` cast to its dtype (TF's schedules' preamble)."""
    initial = convert_to_tensor(learning_rate, name="initial_learning_rate")
    dtype = initial.dtype.base_dtype
    cast = [math.cast(n, dtype) for n in numbers]
    return initial, math.cast(global_step, dtype), cast


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (the exponent floored when `staircase`)."""
    _require_step(global_step, "natural_exp_decay")
    natural_exp_rate = math.exp(math.negative(decay_rate))
    return exponential_decay(learning_rate, global_step, decay_steps, natural_exp_rate, staircase=staircase,
                             name=name)


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (the ratio floored when `staircase`)."""
    _require_step(global_step, "inverse_time_decay")
    with name_scope(name, "InverseTimeDecay") as scope:
        initial, step, (steps, rate) = _start(learning_rate, global_step, decay_steps, decay_rate)
        p = math.truediv(step, steps)
        if staircase:
            p = math.floor(p)
        one = math.cast(constant(1), initial.dtype.base_dtype)
        return math.divide(initial, math.add(one, math.multiply(rate, p)), name=scope)


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any, end_learning_rate: Any = 0.0001,
                     power: Any = 1.0, cycle: bool = False, name: str | None = None) -> Tensor:
    """(learning_rate - end) * (1 - step / decay_steps) ** power + end, the step capped at decay_steps, or
    with `cycle` decay_steps stretched to the next multiple of itself past the step."""
    _require_step(global_step, "polynomial_decay")
    with name_scope(name, "PolynomialDecay") as scope:
        initial, step, (end, power_t, steps) = _start(learning_rate, global_step, end_learning_rate, power,
                                                      decay_steps)
        if cycle:
            multiplier = math.where_v2(math.equal(step, 0), 1.0, math.ceil(step / decay_steps))
            steps = math.multiply(steps, multiplier)
        else:
            step = math.minimum(step, steps)
        p = math.divide(step, steps)
        return math.add(math.multiply(initial - end, math.pow(1 - p, power_t)), end, name=scope)


def _cosine(fraction: Tensor) -> Tensor:
    """0.5 * (1 + cos(pi * fraction)), with TF's float32 pi."""
    return 0.5 * (1.0 + math.cos(constant(_pymath.pi) * fraction))


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: Any = 0.0,
                 name: str | None = None) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)."""
    _require_step(global_step, "cosine_decay")
    with name_scope(name, "CosineDecay"):
        initial, step, (steps,) = _start(learning_rate, global_step, decay_steps)
        step = math.minimum(step, steps)
        decayed = (1 - alpha) * _cosine(step / steps) + alpha
        return math.multiply(initial, decayed)


def cosine_decay_restarts(learning_rate: Any, global_step: Any, first_decay_steps: Any, t_mul: Any = 2.0,
                          m_mul: Any = 1.0, alpha: Any = 0.0, name: str | None = None) -> Tensor:
    """SGDR (Loshchilov & Hutter): cosine decay restarted after first_decay_steps, each period t_mul times
    longer than the last and its peak m_mul times lower."""
    _require_step(global_step, "cosine_decay_restarts")
    with name_scope(name, "SGDRDecay") as scope:
        initial, step, (first, alpha_t, t_mul_t, m_mul_t) = _start(learning_rate, global_step, first_decay_steps,
                                                                   alpha, t_mul, m_mul)
        completed_fraction = step / first

        def compute_step(fraction: Tensor, geometric: bool) -> tuple[Tensor, Tensor]:
            if geometric:
                i_restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul_t)) / math.log(t_mul_t))
                sum_r = (1.0 - t_mul_t ** i_restart) / (1.0 - t_mul_t)
                return i_restart, (fraction - sum_r) / t_mul_t ** i_restart
            i_restart = math.floor(fraction)
            return i_restart, fraction - i_restart

        i_restart, completed_fraction = cond(math.equal(t_mul_t, 1.0),
                                             lambda: compute_step(completed_fraction, geometric=False),
                                             lambda: compute_step(completed_fraction, geometric=True))
        m_fac = m_mul_t ** i_restart
        cosine_decayed = 0.5 * m_fac * (1.0 + math.cos(constant(_pymath.pi) * completed_fraction))
        decayed = (1 - alpha_t) * cosine_decayed + alpha_t
        return math.multiply(initial, decayed, name=scope)


def _linear_cosine(learning_rate: Any, global_step: Any, decay_steps: Any, num_periods: Any, alpha: Any,
                   beta: Any, scope_name: str, name: str | None, noise: tuple[Any, Any] | None) -> Tensor:
    with name_scope(name, scope_name) as scope:
        initial, step, (steps, periods, alpha_t, beta_t) = _start(learning_rate, global_step, decay_steps,
                                                                  num_periods, alpha, beta)
        dtype = initial.dtype.base_dtype
        if noise is not None:
            initial_variance, variance_decay = (math.cast(n, dtype) for n in noise)
        step = math.minimum(step, steps)
        linear_decayed = (steps - step) / steps
        if noise is not None:
            variance = initial_variance / math.pow(1.0 + step, variance_decay)
            linear_decayed = linear_decayed + random_normal(linear_decayed.shape, stddev=math.sqrt(variance))
        fraction = 2.0 * periods * (step / steps)
        return math.multiply(initial, (alpha_t + linear_decayed) * _cosine(fraction) + beta_t, name=scope)


def linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, num_periods: Any = 0.5,
                        alpha: Any = 0.0, beta: Any = 0.001, name: str | None = None) -> Tensor:
    """learning_rate * ((alpha + linear) * cosine + beta), linear = (decay_steps - step) / decay_steps and
    cosine = 0.5 * (1 + cos(2 pi num_periods step / decay_steps)), the step capped at decay_steps."""
    _require_step(global_step, "linear_cosine_decay")
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, "LinearCosineDecay",
                          name, None)


def noisy_linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, initial_variance: Any = 1.0,
                              variance_decay: Any = 0.55, num_periods: Any = 0.5, alpha: Any = 0.0,
                              beta: Any = 0.001, name: str | None = None) -> Tensor:
    """`linear_cosine_decay` with N(0, initial_variance / (1 + step) ** variance_decay) noise on the linear part."""
    _require_step(global_step, "noisy_linear_cosine_decay")
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          "NoisyLinearCosineDecay", name, (initial_variance, variance_decay))


piecewise_constant_decay = piecewise_constant


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    return [x]


__all__ = [
    "exponential_decay", "piecewise_constant", "piecewise_constant_decay", "natural_exp_decay",
    "inverse_time_decay", "polynomial_decay", "cosine_decay", "cosine_decay_restarts", "linear_cosine_decay",
    "noisy_linear_cosine_decay",
]
