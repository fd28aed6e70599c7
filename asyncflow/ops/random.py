"""Random ops, seeded as TF1: `random_normal`, `random_uniform`, `truncated_normal`, `random_shuffle`.

Seeds follow TF1's `get_seed`: a graph-level seed (`af.set_random_seed`) and an op-level seed
combine into the op's `seed`/`seed2` attrs; both 0 means "nondeterministic". Each kernel keeps
its generator in the session's resource container (`k.resources.state("random", op name, ...)`),
so every run of a step advances the sequence, two sessions of the same seeded graph draw the
same sequence, and ops with different seeds draw different values. The bit streams differ from
TensorFlow's (Philox keyed by the two seeds, through numpy); determinism and the distributions
are what we guarantee.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, get_seed, name_scope
from asyncflow.ops import math
from asyncflow.ops.registry import ALL_TYPES, FLOAT, INDEX, BuildContext, convert_to_tensor, op
from asyncflow.shapes import Dimension, TensorShape

_MAXINT32 = 2**31 - 1
_UNIFORM_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


# -- seeds and generators --------------------------------------------------------------------------
def _op_seeds(seed: int | None) -> tuple[int, int]:
    """The (seed, seed2) attrs of a random op: TF1's get_seed, truncated to int32, (0, 0) avoided."""
    seed1, seed2 = get_seed(seed)
    if seed1 is None and seed2 is None:
        return 0, 0
    seeds = (int(seed1) % _MAXINT32, int(seed2) % _MAXINT32)
    # (0, 0) means "nondeterministic" to the kernels, but a user who asked for seed 0 wants determinism.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _generator(k) -> np.random.Generator:
    """The op's generator in this session, created on first use from its (seed, seed2) attrs."""

    def make() -> np.random.Generator:
        if k.seed == 0 and k.seed2 == 0:
            return np.random.Generator(np.random.Philox())
        return np.random.Generator(np.random.Philox(key=(int(k.seed) << 64) | int(k.seed2)))

    return k.resources.state("random", k.name, make)


def _shape_arg(shape: Any) -> Tensor:
    """TF's `shape_tensor`: a 1-D int32 (or int64) tensor named `shape`; unknown dims are refused."""
    if isinstance(shape, Tensor) or hasattr(shape, "_as_graph_element"):
        return convert_to_tensor(shape, name="shape")
    if isinstance(shape, TensorShape):
        if shape.ndims is None:
            raise TypeError("Failed to convert an unknown-rank TensorShape to a shape tensor.")
        shape = shape.dims
    if isinstance(shape, (list, tuple)):
        dims = [d.value if isinstance(d, Dimension) else d for d in shape]
        if any(d is None for d in dims):
            raise TypeError(f"Failed to convert elements of {tuple(dims)} to Tensor: a random op's shape must "
                            f"be fully known (pass af.shape(x) for a dynamic shape).")
        return convert_to_tensor(dims, dtype=dtypes.int32 if not dims else None, name="shape")
    return convert_to_tensor(shape, name="shape")


def _dims(k, shape: np.ndarray) -> tuple[int, ...]:
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if np.ndim(shape) != 1:
        raise ValueError(f"{k.op_type} '{k.name}': shape must be a vector, got a tensor of shape "
                         f"{list(np.shape(shape))}")
    if any(d < 0 for d in dims):
        raise ValueError(f"{k.op_type} '{k.name}': shape {list(dims)} has a negative dimension")
    return dims


def _shape_from_input(b: BuildContext) -> TensorShape:
    rank = b.shape(0).ndims
    if rank is not None and rank != 1:
        raise b.error(f"Shape must be rank 1 but is rank {rank} (the shape argument, {b.shape(0)})")
    return b.const_shape(0)


def _as_dtype_out(k, values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(k.out_dtypes[0], copy=False)


_SEED_ATTRS = {"seed": 0, "seed2": 0}


# -- the kernels -----------------------------------------------------------------------------------
@op("RandomStandardNormal", inputs="shape: T", outputs="output: dtype", types={"dtype": FLOAT, "T": INDEX},
    attrs=_SEED_ATTRS, shape=_shape_from_input, stateful=True, differentiable=False)
def random_standard_normal_op(k, shape):
    out = k.out_dtypes[0]
    draw = np.float64 if out == np.float64 else np.float32
    return _as_dtype_out(k, _generator(k).standard_normal(_dims(k, shape), dtype=draw))


@op("TruncatedNormal", inputs="shape: T", outputs="output: dtype", types={"dtype": FLOAT, "T": INDEX},
    attrs=_SEED_ATTRS, shape=_shape_from_input, stateful=True, differentiable=False)
def truncated_normal_op(k, shape):
    out = k.out_dtypes[0]
    draw = np.float64 if out == np.float64 else np.float32
    gen = _generator(k)
    values = gen.standard_normal(_dims(k, shape), dtype=draw)
    flat = values.reshape(-1)
    # Values more than two standard deviations out are drawn again (about 4.6% of them per round).
    bad = np.flatnonzero(np.abs(flat) > 2.0)
    while bad.size:
        flat[bad] = gen.standard_normal(bad.size, dtype=draw)
        bad = bad[np.abs(flat[bad]) > 2.0]
    return _as_dtype_out(k, values)


def _unit_uniform(gen: np.random.Generator, dims: tuple[int, ...], out: type) -> np.ndarray:
    """Uniform in [0, 1) in dtype `out`, never rounding up to 1 (which a plain cast to 16 bits would)."""
    if out == np.float64:
        return gen.random(dims, dtype=np.float64)
    if out == np.float32:
        return gen.random(dims, dtype=np.float32)
    bits = ml_dtypes.finfo(out).nmant + 1  # values k / 2**bits are exact in the 16-bit format
    return (np.floor(gen.random(dims, dtype=np.float32) * 2.0**bits) / 2.0**bits).astype(out)


@op("RandomUniform", inputs="shape: T", outputs="output: dtype", types={"dtype": FLOAT, "T": INDEX},
    attrs=_SEED_ATTRS, shape=_shape_from_input, stateful=True, differentiable=False)
def random_uniform_op(k, shape):
    return _unit_uniform(_generator(k), _dims(k, shape), k.out_dtypes[0])


def _uniform_int_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((1, "minval"), (2, "maxval")):
        rank = b.shape(i).ndims
        if rank is not None and rank != 0:
            raise b.error(f"Shape must be rank 0 but is rank {rank} ({arg} must be a scalar, got {b.shape(i)})")
    return _shape_from_input(b)


@op("RandomUniformInt", inputs="shape: T, minval: Tout, maxval: Tout", outputs="output: Tout",
    types={"Tout": (dtypes.int32, dtypes.int64), "T": INDEX}, attrs=_SEED_ATTRS, shape=_uniform_int_shape,
    stateful=True, differentiable=False)
def random_uniform_int_op(k, shape, minval, maxval):
    if np.ndim(minval) or np.ndim(maxval):
        raise ValueError(f"RandomUniformInt '{k.name}': minval and maxval must be scalars, got shapes "
                         f"{list(np.shape(minval))} and {list(np.shape(maxval))}")
    lo, hi = int(minval), int(maxval)
    dims = _dims(k, shape)
    if lo >= hi and int(np.prod(dims)) > 0:
        raise ValueError(f"RandomUniformInt '{k.name}': Need minval < maxval, got {lo} >= {hi}")
    out = k.out_dtypes[0]
    if lo >= hi:
        return np.zeros(dims, dtype=out)
    return _generator(k).integers(lo, hi, size=dims, dtype=out)


@op("RandomShuffle", inputs="value: T", outputs="output: T", types={"T": ALL_TYPES}, attrs=_SEED_ATTRS,
    shape=lambda b: b.shape(0), stateful=True, differentiable=False)
def random_shuffle_op(k, value):
    value = np.asarray(value)
    if value.ndim == 0 or value.shape[0] <= 1:
        return value
    return value[_generator(k).permutation(value.shape[0])]


# -- the public functions (TF1's names and composites) ------------------------------------------------
def _set_static_shape(result: Tensor, shape: Tensor) -> None:
    from asyncflow.ops.registry import constant_value_as_shape

    known = constant_value_as_shape(shape)
    if known.ndims is not None:
        result.set_shape(known)


def _scaled_normal(opdef, default_name: str, shape: Any, mean: Any, stddev: Any, dtype: Any, seed: int | None,
                   name: str | None) -> Tensor:
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, default_name, [shape, mean, stddev]) as scope:
        shape_tensor = _shape_arg(shape)
        mean_tensor = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        seed1, seed2 = _op_seeds(seed)
        rnd = opdef(shape_tensor, dtype=dtype, seed=seed1, seed2=seed2)
        value = math.add(rnd * stddev_tensor, mean_tensor, name=scope)
        _set_static_shape(value, shape_tensor)
        return value


def random_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                  seed: int | None = None, name: str | None = None) -> Tensor:
    """`af.random_normal`: samples of N(mean, stddev**2); op `random_normal/RandomStandardNormal`."""
    return _scaled_normal(random_standard_normal_op, "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """`af.truncated_normal`: normal samples, those beyond two standard deviations drawn again."""
    return _scaled_normal(truncated_normal_op, "truncated_normal", shape, mean, stddev, dtype, seed, name)


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = dtypes.float32,
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """`af.random_uniform`: uniform in [minval, maxval); `maxval` defaults to 1 and is required for ints."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        names = ", ".join(d.name for d in _UNIFORM_DTYPES)
        raise ValueError(f"Argument `dtype` got invalid value {dtype.name}. Accepted dtypes are {names}.")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
        maxval = 1
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape_tensor = _shape_arg(shape)
        # As TF: the common [0, 1) float case is the bare RandomUniform, with no min/max constants.
        minval_is_zero = isinstance(minval, int) and not isinstance(minval, bool) and minval == 0
        maxval_is_one = isinstance(maxval, int) and not isinstance(maxval, bool) and maxval == 1
        if not minval_is_zero or not maxval_is_one or dtype.is_integer:
            minval = convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        seed1, seed2 = _op_seeds(seed)
        if dtype.is_integer:
            result = random_uniform_int_op(shape_tensor, minval, maxval, seed=seed1, seed2=seed2, name=scope)
        else:
            result = random_uniform_op(shape_tensor, dtype=dtype, seed=seed1, seed2=seed2)
            if minval_is_zero:
                if not maxval_is_one:
                    result = math.multiply(result, maxval)
            else:
                result = math.add(result * (maxval - minval), minval, name=scope)
        _set_static_shape(result, shape_tensor)
        return result


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`af.random_shuffle`: `value` with its first dimension shuffled."""
    seed1, seed2 = _op_seeds(seed)
    return random_shuffle_op(value, seed=seed1, seed2=seed2, name=name)


__all__ = ["random_normal", "truncated_normal", "random_uniform", "random_shuffle"]
