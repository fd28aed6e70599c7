"""More random ops, as TF1: multinomial / random.categorical (Multinomial), random_gamma (RandomGamma),
random_poisson (RandomPoissonV2), random_crop (TF's composite: an Assert, a RandomUniformInt offset and a
Slice), and the stateless samplers random.stateless_uniform / _normal / _truncated_normal /
_categorical / stateless_multinomial (StatelessRandom*, a pure function of their `seed` tensor).

Seeding is asyncflow/ops/random.py's: (seed, seed2) attrs from TF1's get_seed, one generator per op in
the session's resources. The stateless ops key a fresh Philox generator by their seed tensor on every
run. As for the other random ops, the bit streams are not TensorFlow's; the distributions are.
RandomGamma is not differentiable here (TF's implicit-reparameterization gradient is not written yet).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math
from asyncflow.ops.array import shape as shape_of
from asyncflow.ops.array import zeros_like
from asyncflow.ops.array_slice import slice as slice_
from asyncflow.ops.logging_ops import Assert
from asyncflow.ops.math_extra import _with_dependency
from asyncflow.ops.math_reduce import reduce_all
from asyncflow.ops.random import (
    _SEED_ATTRS,
    _dims,
    _generator,
    _op_seeds,
    _set_static_shape,
    _shape_arg,
    _shape_from_input,
    _unit_uniform,
    random_uniform,
)
from asyncflow.ops.registry import FLOAT, INDEX, BuildContext, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape

__all__ = ["multinomial", "random_gamma", "random_poisson", "random_crop", "stateless_multinomial"]

_OUT_INDEX = (dtypes.int32, dtypes.int64)


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


# -- multinomial, categorical ------------------------------------------------------------------------------
def _multinomial_shape(b: BuildContext) -> TensorShape:
    logits = b.shape(0)
    if logits.ndims not in (None, 2):
        raise b.error(f"Shape must be rank 2 but is rank {logits.ndims} (logits, shape {logits})")
    if b.shape(1).ndims not in (None, 0):
        raise b.error(f"Shape must be rank 0 but is rank {b.shape(1).ndims} (num_samples, shape {b.shape(1)})")
    n = b.const(1)
    return TensorShape([logits[0] if logits.ndims == 2 else None, None if n is None else int(n)])


def _sample_categorical(k: Any, gen: np.random.Generator, logits: np.ndarray, num_samples: Any) -> np.ndarray:
    logits, n = np.asarray(logits, np.float64), int(num_samples)
    if logits.ndim != 2:
        raise _invalid(k, f"logits should be a matrix, got shape {list(logits.shape)}")
    if n < 0:
        raise _invalid(k, f"num_samples should be nonnegative, got {n}")
    batch, classes = logits.shape
    if classes == 0 and batch * n > 0:
        raise _invalid(k, "num_classes should be positive, got 0")
    out = np.zeros((batch, n), k.out_dtypes[0])
    if batch == 0 or n == 0:
        return out
    # The CDF of softmax(logits) per row (-inf logits never drawn), inverted at uniform draws.
    shifted = np.exp(logits - np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, keepdims=True))
    cdf = np.cumsum(np.nan_to_num(shifted, nan=0.0), axis=1)
    u = gen.random((batch, n)) * cdf[:, -1:]
    for row in range(batch):
        out[row] = np.minimum(np.searchsorted(cdf[row], u[row], side="right"), classes - 1)
    return out


@op("Multinomial", inputs="logits: T, num_samples: int32", outputs="output: output_dtype",
    types={"T": dtypes.REAL, "output_dtype": _OUT_INDEX}, type_defaults={"output_dtype": dtypes.int64},
    attrs=_SEED_ATTRS, shape=_multinomial_shape, stateful=True, differentiable=False)
def multinomial_op(k, logits, num_samples):
    return _sample_categorical(k, _generator(k), logits, num_samples)


def _categorical(logits: Any, num_samples: Any, dtype: Any, seed: int | None) -> Tensor:
    logits = convert_to_tensor(logits, name="logits")
    dtype = dtypes.as_dtype(dtype) if dtype else dtypes.int64
    if dtype not in _OUT_INDEX:
        raise ValueError(f"Argument `dtype` got invalid value {dtype.name}. Accepted dtypes are int32, int64.")
    seed1, seed2 = _op_seeds(seed)
    return multinomial_op(logits, num_samples, seed=seed1, seed2=seed2, output_dtype=dtype)


def multinomial(logits: Any, num_samples: Any, seed: int | None = None, name: str | None = None,
                output_dtype: Any = None) -> Tensor:
    """`af.multinomial`: `num_samples` class indices per row of `logits` ([batch, classes]), int64 by default."""
    with name_scope(name, "multinomial", [logits]):
        return _categorical(logits, num_samples, output_dtype, seed)


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """`af.random.categorical`: as `multinomial`, with the dtype argument named `dtype`."""
    with name_scope(name, "categorical", [logits]):
        return _categorical(logits, num_samples, dtype, seed)


# -- random_gamma, random_poisson ----------------------------------------------------------------------------
def _shape_then_param(b: BuildContext) -> TensorShape:
    head = _shape_from_input(b)
    return head.concatenate(b.shape(1)) if head.ndims is not None else unknown_shape()


@op("RandomGamma", inputs="shape: S, alpha: T", outputs="output: T", types={"S": INDEX, "T": FLOAT},
    attrs=_SEED_ATTRS, shape=_shape_then_param, stateful=True, differentiable=False)
def random_gamma_op(k, shape, alpha):
    alpha = np.asarray(alpha, np.float64)
    dims = _dims(k, shape) + alpha.shape
    return _generator(k).standard_gamma(np.broadcast_to(alpha, dims)).astype(k.out_dtypes[0])


def random_gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = dtypes.float32, seed: int | None = None,
                 name: str | None = None) -> Tensor:
    """`af.random_gamma` / `af.random.gamma`: Gamma(alpha, rate beta) samples, of shape
    shape + broadcast(alpha, beta)."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "random_gamma", [shape, alpha, beta]):
        shape_t = convert_to_tensor(shape, name="shape", dtype=dtypes.int32)
        alpha = convert_to_tensor(alpha, name="alpha", dtype=dtype)
        beta = convert_to_tensor(beta if beta is not None else 1, name="beta", dtype=dtype)
        same = alpha.shape.is_fully_defined() and alpha.shape == beta.shape
        alpha_b = alpha if same else math.add(alpha, zeros_like(beta))  # alpha broadcast against beta
        seed1, seed2 = _op_seeds(seed)
        sample = random_gamma_op(shape_t, alpha_b, seed=seed1, seed2=seed2)
        tiny = np.finfo(dtype.as_numpy_dtype).tiny
        return math.maximum(np.asarray(tiny, dtype.as_numpy_dtype), math.truediv(sample, beta))


_POISSON_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


@op("RandomPoissonV2", inputs="shape: S, rate: R", outputs="output: dtype",
    types={"S": INDEX, "R": _POISSON_TYPES, "dtype": _POISSON_TYPES}, type_defaults={"dtype": dtypes.int64},
    attrs=_SEED_ATTRS, shape=_shape_then_param, stateful=True, differentiable=False)
def random_poisson_op(k, shape, rate):
    rate = np.asarray(rate, np.float64)
    dims = _dims(k, shape) + rate.shape
    return _generator(k).poisson(np.broadcast_to(np.maximum(rate, 0.0), dims)).astype(k.out_dtypes[0])


def random_poisson(lam: Any, shape: Any, dtype: Any = dtypes.float32, seed: int | None = None,
                   name: str | None = None) -> Tensor:
    """`af.random_poisson` / `af.random.poisson`: Poisson(lam) samples of shape shape + lam.shape."""
    with name_scope(name, "random_poisson", [lam, shape]):
        shape_t = convert_to_tensor(shape, name="shape", dtype=dtypes.int32)
        seed1, seed2 = _op_seeds(seed)
        return random_poisson_op(shape_t, lam, dtype=dtypes.as_dtype(dtype), seed=seed1, seed2=seed2)


# -- random_crop -----------------------------------------------------------------------------------------------
def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`af.random_crop`: a slice of shape `size` of `value` at a uniformly drawn offset (TF1's composite)."""
    with name_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = shape_of(value)
        check = Assert(reduce_all(math.greater_equal(shape, size)), ["Need value.shape >= size, got ", shape, size],
                       summarize=1000)
        shape = _with_dependency(check, shape)
        limit = shape - size + 1
        offset = math.floormod(random_uniform(shape_of(shape), dtype=size.dtype, maxval=size.dtype.max, seed=seed),
                               limit)
        return slice_(value, offset, size, name=scope)


# -- stateless samplers ------------------------------------------------------------------------------------------
def _stateless_generator(k: Any, seed: Any) -> np.random.Generator:
    seed = np.asarray(seed)
    if seed.shape != (2,):
        raise _invalid(k, f"seed must have shape [2], not {list(seed.shape)}")
    a, b = (int(v) & (2**64 - 1) for v in seed.tolist())
    return np.random.Generator(np.random.Philox(key=(a << 64) | b))


def _stateless_shape(b: BuildContext) -> TensorShape:
    seed = b.shape(1)
    if seed.ndims not in (None, 1) or (seed.ndims == 1 and seed[0] not in (None, 2)):
        raise b.error(f"seed must have shape [2], not {seed}")
    return _shape_from_input(b)


_STATELESS = {"types": {"dtype": FLOAT, "T": INDEX, "Tseed": INDEX},
              "type_defaults": {"dtype": dtypes.float32, "Tseed": dtypes.int64}, "shape": _stateless_shape,
              "differentiable": False}


@op("StatelessRandomUniform", inputs="shape: T, seed: Tseed", outputs="output: dtype", **_STATELESS)
def stateless_random_uniform_op(k, shape, seed):
    return _unit_uniform(_stateless_generator(k, seed), _dims(k, shape), k.out_dtypes[0])


@op("StatelessRandomNormal", inputs="shape: T, seed: Tseed", outputs="output: dtype", **_STATELESS)
def stateless_random_normal_op(k, shape, seed):
    return _stateless_generator(k, seed).standard_normal(_dims(k, shape)).astype(k.out_dtypes[0])


@op("StatelessTruncatedNormal", inputs="shape: T, seed: Tseed", outputs="output: dtype", **_STATELESS)
def stateless_truncated_normal_op(k, shape, seed):
    gen = _stateless_generator(k, seed)
    values = gen.standard_normal(_dims(k, shape))
    flat = values.reshape(-1)
    bad = np.flatnonzero(np.abs(flat) > 2.0)
    while bad.size:  # redrawn beyond two standard deviations, as TruncatedNormal
        flat[bad] = gen.standard_normal(bad.size)
        bad = bad[np.abs(flat[bad]) > 2.0]
    return values.astype(k.out_dtypes[0])


def _stateless_int_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((2, "minval"), (3, "maxval")):
        if b.shape(i).ndims not in (None, 0):
            raise b.error(f"Shape must be rank 0 but is rank {b.shape(i).ndims} ({arg} must be a scalar)")
    return _stateless_shape(b)


@op("StatelessRandomUniformInt", inputs="shape: T, seed: Tseed, minval: dtype, maxval: dtype",
    outputs="output: dtype", types={"dtype": _OUT_INDEX, "T": INDEX, "Tseed": INDEX},
    type_defaults={"Tseed": dtypes.int64}, shape=_stateless_int_shape, differentiable=False)
def stateless_random_uniform_int_op(k, shape, seed, minval, maxval):
    lo, hi, dims = int(minval), int(maxval), _dims(k, shape)
    if lo >= hi and int(np.prod(dims)) > 0:
        raise _invalid(k, f"Need minval < maxval, got {lo} >= {hi}")
    if lo >= hi:
        return np.zeros(dims, k.out_dtypes[0])
    return _stateless_generator(k, seed).integers(lo, hi, size=dims, dtype=k.out_dtypes[0])


@op("StatelessMultinomial", inputs="logits: T, num_samples: int32, seed: Tseed", outputs="output: output_dtype",
    types={"T": dtypes.REAL, "Tseed": INDEX, "output_dtype": _OUT_INDEX},
    type_defaults={"Tseed": dtypes.int64, "output_dtype": dtypes.int64}, shape=_multinomial_shape,
    differentiable=False)
def stateless_multinomial_op(k, logits, num_samples, seed):
    return _sample_categorical(k, _stateless_generator(k, seed), logits, num_samples)


def _seed_tensor(seed: Any) -> Tensor:
    seed = convert_to_tensor(seed, name="seed")
    if not seed.dtype.is_integer:
        raise TypeError(f"seed must be an int32 or int64 tensor of shape [2], got {seed.dtype.name}")
    return seed


def stateless_random_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None, dtype: Any = dtypes.float32,
                             name: str | None = None) -> Tensor:
    """`af.random.stateless_uniform`: uniform in [minval, maxval), a pure function of the [2] `seed`."""
    dtype = dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
        maxval = 1
    with name_scope(name, "stateless_random_uniform", [shape, seed, minval, maxval]) as scope:
        shape_t = _shape_arg(shape)
        if dtype.is_integer:
            minval = convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
            result = stateless_random_uniform_int_op(shape_t, _seed_tensor(seed), minval, maxval, name=scope)
        else:
            rnd = stateless_random_uniform_op(shape_t, _seed_tensor(seed), dtype=dtype)
            minval = convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
            result = math.add(rnd * (maxval - minval), minval, name=scope)
        _set_static_shape(result, shape_t)
        return result


def _stateless_scaled(opdef: Any, default_name: str, shape: Any, seed: Any, mean: Any, stddev: Any, dtype: Any,
                      name: str | None) -> Tensor:
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, default_name, [shape, seed, mean, stddev]) as scope:
        shape_t = _shape_arg(shape)
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = opdef(shape_t, _seed_tensor(seed), dtype=dtype)
        result = math.add(rnd * stddev, mean, name=scope)
        _set_static_shape(result, shape_t)
        return result


def stateless_random_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                            name: str | None = None) -> Tensor:
    """`af.random.stateless_normal`: N(mean, stddev**2) samples, a pure function of the [2] `seed`."""
    return _stateless_scaled(stateless_random_normal_op, "stateless_random_normal", shape, seed, mean, stddev,
                             dtype, name)


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """`af.random.stateless_truncated_normal`: normal samples within two stddevs, a pure function of `seed`."""
    return _stateless_scaled(stateless_truncated_normal_op, "stateless_truncated_normal", shape, seed, mean, stddev,
                             dtype, name)


def _stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any) -> Tensor:
    logits = convert_to_tensor(logits, name="logits")
    dtype = dtypes.as_dtype(dtype) if dtype else dtypes.int64
    if dtype not in _OUT_INDEX:
        raise ValueError(f"Argument `dtype` got invalid value {dtype.name}. Accepted dtypes are int32, int64.")
    return stateless_multinomial_op(logits, num_samples, _seed_tensor(seed), output_dtype=dtype)


def stateless_multinomial(logits: Any, num_samples: Any, seed: Any, output_dtype: Any = dtypes.int64,
                          name: str | None = None) -> Tensor:
    """`af.random.stateless_multinomial`: `multinomial` as a pure function of the [2] `seed`."""
    with name_scope(name, "stateless_multinomial", [logits, seed]):
        return _stateless_categorical(logits, num_samples, seed, output_dtype)


def stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any = dtypes.int64,
                          name: str | None = None) -> Tensor:
    """`af.random.stateless_categorical`: `categorical` as a pure function of the [2] `seed`."""
    with name_scope(name, "stateless_categorical", [logits, seed]):
        return _stateless_categorical(logits, num_samples, seed, dtype)

