"""`af.layers` core layers, as `tf.compat.v1.layers`: Dense (`dense/kernel`, `dense/bias`; ops `dense/MatMul`,
`dense/BiasAdd`, `dense/Relu`, or `dense/Tensordot` past rank 2), Dropout (a Python bool or a boolean tensor picks
training through `smart_cond`) and Flatten, with their functional forms.
"""

from __future__ import annotations

import numbers
from functools import reduce
from typing import Any

import numpy as np

from asyncflow import init_ops
from asyncflow.layers.base import Layer
from asyncflow.layers.input_spec import InputSpec
from asyncflow.layers.utils import get_activation, get_initializer, normalize_data_format, smart_cond
from asyncflow.ops import array, math, nn_ops
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.array_manip import transpose
from asyncflow.ops.linalg_einsum import tensordot
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.registry import constant, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape

_ZEROS = init_ops.zeros_initializer()  # TF1's default bias initializer, one shared instance as TF's


class Dense(Layer):
    """`af.layers.Dense(units, activation=None, use_bias=True, kernel_initializer=None, ...)`:
    `activation(inputs @ kernel + bias)`; kernel_initializer None is the scope's, or glorot_uniform."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = _ZEROS, kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None, **kwargs: Any):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.units = units if isinstance(units, int) else int(units)
        if self.units < 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. Received: "
                             f"units={units}")
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = get_initializer(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape: Any) -> None:
        dtype = self._dtype
        if dtype is not None and not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"A Dense layer can only be built with a floating-point dtype. Received: dtype={dtype.name}"
                            f" (layer \"{self.name}\")")
        input_shape = as_shape(input_shape)
        last_dim = input_shape.as_list()[-1] if input_shape.ndims is not None else None
        if last_dim is None:
            shown = tuple(input_shape.as_list()) if input_shape.ndims is not None else None
            raise ValueError(f"The last dimension of the inputs to `Dense` should be defined. Found `None`. "
                             f"Full input shape received: {shown} (layer \"{self.name}\")")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=dtype, trainable=True)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=dtype, trainable=True)
        self.built = True

    def call(self, inputs: Any) -> Any:
        inputs = convert_to_tensor(inputs)
        if inputs.dtype.base_dtype != self._dtype:
            inputs = math.cast(inputs, self._dtype)
        rank = inputs.shape.ndims
        if rank == 2 or rank is None:
            outputs = matmul(inputs, self.kernel)
        else:
            outputs = tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape.as_list()[:-1] + [self.units])
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        input_shape = as_shape(input_shape)
        return TensorShape(input_shape.as_list()[:-1] + [self.units])


def dense(inputs: Any, units: int, activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
          bias_initializer: Any = _ZEROS, kernel_regularizer: Any = None,
          bias_regularizer: Any = None, activity_regularizer: Any = None, kernel_constraint: Any = None,
          bias_constraint: Any = None, trainable: bool = True, name: str | None = None, reuse: Any = None) -> Any:
    """`af.layers.dense`: the functional form of `Dense`; `name` is its variable scope, `reuse` shares it."""
    layer = Dense(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                  bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                  bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                  name=name, _scope=name, _reuse=reuse)
    return layer(inputs)


class Dropout(Layer):
    """`af.layers.Dropout(rate=0.5, noise_shape=None, seed=None, name=None)`: `call(inputs, training=False)`
    drops each unit with probability `rate` (kept ones scaled by 1 / (1 - rate)) when `training`."""

    def __init__(self, rate: Any = 0.5, noise_shape: Any = None, seed: int | None = None, name: str | None = None,
                 **kwargs: Any):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value between 0 and 1.")
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _get_noise_shape(self, inputs: Any) -> Any:
        if self.noise_shape is None:
            return None
        static = inputs.shape.as_list() if inputs.shape.ndims is not None else None
        dims: list[Any] = []
        for i, value in enumerate(self.noise_shape):
            if value is None:
                value = static[i] if static is not None and static[i] is not None else array.shape(inputs)[i]
            dims.append(value)
        if all(isinstance(d, (int, np.integer)) for d in dims):
            return [int(d) for d in dims]
        return array.stack([d if not isinstance(d, (int, np.integer)) else constant(int(d)) for d in dims])

    def call(self, inputs: Any, training: Any = False) -> Any:
        inputs = convert_to_tensor(inputs)
        if isinstance(self.rate, numbers.Real) and self.rate == 0:
            return array.identity(inputs)

        def dropped() -> Any:
            return nn_ops.dropout(inputs, rate=self.rate, noise_shape=self._get_noise_shape(inputs), seed=self.seed)

        return smart_cond(training, dropped, lambda: array.identity(inputs))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return as_shape(input_shape)


def dropout(inputs: Any, rate: Any = 0.5, noise_shape: Any = None, seed: int | None = None, training: Any = False,
            name: str | None = None) -> Any:
    """`af.layers.dropout`: `training` is a Python bool or a boolean scalar tensor (then a `cond`)."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)(inputs, training=training)


class Flatten(Layer):
    """`af.layers.Flatten(data_format='channels_last')`: [batch, ...] -> [batch, prod(...)]."""

    def __init__(self, data_format: str = "channels_last", **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs: Any) -> Any:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if self.data_format == "channels_first" and rank and rank > 1:
            inputs = transpose(inputs, perm=[0, *range(2, rank), 1])
        if rank == 1:
            return expand_dims(inputs, axis=1)
        dims = inputs.shape.as_list() if rank is not None else None
        # As much of the static shape as is known survives the Reshape (TF's choice of target shape).
        if dims is not None and all(d is not None for d in dims[1:]):
            target: Any = constant(np.array([-1, int(reduce(lambda a, b: a * b, dims[1:], 1))], np.int32))
        elif dims is not None and dims[0] is not None:
            target = constant(np.array([dims[0], -1], np.int32))
        else:
            target = array.stack([array.shape(inputs)[0], constant(-1)])
        return array.reshape(inputs, target)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = as_shape(input_shape).as_list()
        rest = dims[1:]
        return TensorShape([dims[0], None if any(d is None for d in rest) else int(np.prod(rest, dtype=np.int64))])


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Any:
    """`af.layers.flatten`: keeps axis 0, flattens the rest."""
    return Flatten(name=name, data_format=data_format)(inputs)


FullyConnected = Dense
fully_connected = dense

__all__ = ["Dense", "dense", "Dropout", "dropout", "Flatten", "flatten"]
