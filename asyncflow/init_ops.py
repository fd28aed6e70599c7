"""TF1's variable initializers (`af.zeros_initializer`, `af.glorot_uniform_initializer`, ...).

An initializer is an object called as `init(shape, dtype=None, partition_info=None)` that builds the
ops of an initial value; `af.get_variable` calls it once per variable, or once per shard of a
partitioned variable (then `partition_info.full_shape` is the whole variable's shape, so the
fan-based initializers scale by the whole variable, not by the shard). The classes and their
lower-case aliases are TF1's (`tf.zeros_initializer is tf.initializers.zeros is init_ops.Zeros`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.ops import array, random
from asyncflow.ops.registry import constant, needed_op


def _assert_float_dtype(dtype: dtypes.DType) -> dtypes.DType:
    if not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: {dtype}.")
    return dtype


class Initializer:
    """The base: `__call__(shape, dtype=None, partition_info=None)` returns a Tensor of that shape."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)


class Zeros(Initializer):
    """`af.zeros_initializer(dtype=af.float32)`."""

    def __init__(self, dtype: Any = dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array.zeros(shape, dtypes.as_dtype(dtype) if dtype is not None else self.dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """`af.ones_initializer(dtype=af.float32)`."""

    def __init__(self, dtype: Any = dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array.ones(shape, dtypes.as_dtype(dtype) if dtype is not None else self.dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """`af.constant_initializer(value=0, dtype=af.float32, verify_shape=False)`: a scalar is broadcast; a list
    or array must have the shape's number of elements (it is reshaped), as TF1's `constant_v1`."""

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32, verify_shape: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value={value} of type: {type(value).__name__}. Expected "
                            f"Python scalar, list or tuple of values, or numpy.ndarray.")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None,
                 verify_shape: bool | None = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        verify = self._verify_shape if verify_shape is None else verify_shape
        return constant(self.value, dtype=dtype, shape=shape, verify_shape=verify)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """`af.random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=af.float32)`."""

    def __init__(self, minval: Any = 0.0, maxval: Any = None, seed: int | None = None, dtype: Any = dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        return random.random_uniform(shape, self.minval, self.maxval, dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class _Normal(Initializer):
    def __init__(self, mean: Any = 0.0, stddev: Any = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype))

    def get_config(self) -> dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class RandomNormal(_Normal):
    """`af.random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=af.float32)`."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        return random.random_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)


class TruncatedNormal(_Normal):
    """`af.truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=af.float32)`: values beyond two
    standard deviations are drawn again."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        return random.truncated_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)


def _compute_fans(shape: Any) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shape; convolution kernels count their receptive field (TF's rule)."""
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    receptive = math.prod(int(d) for d in shape[:-2])
    return int(shape[-2]) * receptive, int(shape[-1]) * receptive


class VarianceScaling(Initializer):
    """`af.variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
    dtype=af.float32)`: variance `scale / n` with n from the whole variable's shape (`partition_info`)."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: int | None = None, dtype: Any = dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Argument `mode` should be one of ('fan_in', 'fan_out', 'fan_avg'). Received: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Argument `distribution` should be one of ('normal', uniform', 'truncated_normal', "
                             f"'untruncated_normal'). Received: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype))

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _compute_fans(scale_shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution in ("normal", "truncated_normal"):
            # the standard deviation of a unit normal truncated to [-2, 2]
            stddev = math.sqrt(scale) / 0.87962566103423978
            return random.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """`af.glorot_uniform_initializer(seed=None, dtype=af.float32)`: uniform in ±sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """`af.glorot_normal_initializer(seed=None, dtype=af.float32)`: truncated normal, variance 2/(fan_in+fan_out)."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


def he_normal(seed: int | None = None) -> VarianceScaling:
    """`tf.initializers.he_normal`: truncated normal with variance 2 / fan_in."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """`tf.initializers.he_uniform`: uniform with variance 2 / fan_in."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """`tf.initializers.lecun_normal`: truncated normal with variance 1 / fan_in."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """`tf.initializers.lecun_uniform`: uniform with variance 1 / fan_in."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


class Identity(Initializer):
    """`af.identity_initializer(gain=1.0, dtype=af.float32)`: gain * the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0, dtype: Any = dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype))

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        full = partition_info.full_shape if partition_info is not None else shape
        if len(full) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        return constant(np.eye(int(full[0]), int(full[1])) * self.gain, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


class UniformUnitScaling(Initializer):
    """`af.uniform_unit_scaling_initializer(factor=1.0, seed=None, dtype=af.float32)`: uniform in
    ±factor * sqrt(3 / input_size), input_size the product of all but the last dimension of the whole
    variable (TF1's deprecated initializer, kept for the programs that still use it)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        self.factor, self.seed = factor, seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype))

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        input_size = max(math.prod(float(d) for d in list(scale_shape)[:-1]), 1.0)  # 1 for zero-size shapes
        max_val = math.sqrt(3 / input_size) * self.factor
        return random.random_uniform(shape, -max_val, max_val, dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """`af.orthogonal_initializer(gain=1.0, seed=None, dtype=af.float32)`: gain times an orthogonal matrix, TF1's
    way: shapes of rank > 2 are flattened to (product of all but the last dimension, last dimension), the
    QR of a normal matrix of the taller orientation is made unique by the signs of r's diagonal, and
    transposed back when the flat shape is wide."""

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype))

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize, specified by argument `shape` must be at least "
                             f"two-dimensional. Received shape={shape}")
        num_rows, num_cols = math.prod(shape[:-1]), shape[-1]
        flat_shape = (num_cols, num_rows) if num_rows < num_cols else (num_rows, num_cols)
        a = random.random_normal(flat_shape, dtype=dtype, seed=self.seed)
        # ops by type: importing linalg here would pull it into the variables modules. import cycle
        q, r = needed_op("Qr")(a, full_matrices=False)
        q *= needed_op("Sign")(needed_op("MatrixDiagPart")(r))
        if num_rows < num_cols:
            q = needed_op("Transpose")(q, [1, 0])
        return self.gain * array.reshape(q, shape)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
identity_initializer = Identity
orthogonal_initializer = Orthogonal
uniform_unit_scaling_initializer = UniformUnitScaling

__all__ = [
    "zeros_initializer", "ones_initializer", "constant_initializer", "random_uniform_initializer",
    "random_normal_initializer", "truncated_normal_initializer", "variance_scaling_initializer",
    "glorot_uniform_initializer", "glorot_normal_initializer", "identity_initializer", "orthogonal_initializer",
    "uniform_unit_scaling_initializer",
]
