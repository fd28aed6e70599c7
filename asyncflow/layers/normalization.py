"""`af.layers.BatchNormalization` and `batch_normalization`, as `tf.compat.v1.layers` (Keras's v1 behaviour).

Variables `batch_normalization/gamma|beta` (trainable) and `moving_mean|moving_variance` (GLOBAL_VARIABLES only,
not trainable). `training` is a Python bool or a boolean tensor (`smart_cond`). When training, each call adds
two updates to UPDATE_OPS, TF's assign_moving_average form: `AssignMovingAvg` (mean) and `AssignMovingAvg_1`
(variance), each `var -= (var - batch_value) * (1 - momentum)`; a train op must depend on them.

fused=None (or True) means fused where TF1 fuses: a 4-D or 5-D input normalised on its channel axis (axis 1 or
the last), in float16/bfloat16/float32; the rest take the composite path. The two paths differ as TF's do:
the fused op gives the moving variance the batch's Bessel-corrected (n / (n - 1)) variance, the composite path
the biased one. With a tensor `training`, the fused path's momentum becomes cond(training, momentum, 1.0), so
the updates run always and change nothing at inference; the composite path puts the updates in a cond.
renorm, virtual_batch_size and adjustment are not offered (NotImplementedError).
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes, init_ops
from asyncflow.graph import colocate_with, name_scope
from asyncflow.layers.base import Layer
from asyncflow.layers.input_spec import InputSpec
from asyncflow.layers.utils import constant_value, get_initializer, smart_cond, validate_axis
from asyncflow.ops import array, math, nn_norm, nn_ops, state
from asyncflow.ops.registry import constant, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape

_ZEROS = init_ops.zeros_initializer()
_ONES = init_ops.ones_initializer()
_HALF = (dtypes.float16, dtypes.bfloat16)
_FUSED_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


class BatchNormalization(Layer):
    """`af.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, ...,
    fused=None)`; `call(inputs, training=False)`."""

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = _ZEROS, gamma_initializer: Any = _ONES,
                 moving_mean_initializer: Any = _ZEROS, moving_variance_initializer: Any = _ONES,
                 beta_regularizer: Any = None, gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False, renorm_clipping: Any = None,
                 renorm_momentum: float = 0.99, fused: bool | None = None, trainable: bool = True,
                 virtual_batch_size: int | None = None, adjustment: Any = None, name: str | None = None,
                 **kwargs: Any):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis: Any = list(axis)
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis', but received: {axis!r}")
        for what, value in (("renorm", renorm), ("virtual_batch_size", virtual_batch_size),
                            ("adjustment", adjustment)):
            if value:
                raise NotImplementedError(f"BatchNormalization \"{self.name}\": `{what}` is not supported by "
                                          f"asyncflow. Received: {what}={value!r}")
        self.momentum, self.epsilon, self.center, self.scale = momentum, epsilon, center, scale
        self.beta_initializer = get_initializer(beta_initializer)
        self.gamma_initializer = get_initializer(gamma_initializer)
        self.moving_mean_initializer = get_initializer(moving_mean_initializer)
        self.moving_variance_initializer = get_initializer(moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.renorm = renorm
        self.fused = True if fused is None else fused  # v1: decided for real in build, from the input's rank

    @property
    def _param_dtype(self) -> dtypes.DType:
        return dtypes.float32 if self._dtype is None or self._dtype in _HALF else self._dtype

    def _fused_can_be_used(self) -> bool:
        axis = [self.axis] if isinstance(self.axis, int) else self.axis
        if len(axis) > 1 or axis[0] not in (-4, -3, -1, 1, 3, 4):
            return False
        return self._dtype is None or self._dtype in _FUSED_TYPES

    def build(self, input_shape: Any) -> None:
        input_shape = as_shape(input_shape)
        rank = input_shape.ndims
        if rank is None:
            raise ValueError(f"Input has undefined rank. Received: input_shape={input_shape}. "
                             f"(layer \"{self.name}\")")
        fusable = self._fused_can_be_used()
        self.axis = validate_axis(self.axis, rank)
        if self.fused:
            self.fused = rank in (4, 5) and fusable
        if self.fused:
            formats = {(1, 4): "NCHW", (3, 4): "NHWC", (1, 5): "NCDHW", (4, 5): "NDHWC"}
            key = (self.axis[0], rank) if len(self.axis) == 1 else None
            if key in formats:
                self._data_format = formats[key]
            elif rank == 5:
                self.fused = False
            else:
                raise ValueError(f"Unsupported axis. The use of `fused=True` is only possible with `axis=1` or "
                                 f"`axis=3` for 4D input tensors. Received: axis={tuple(self.axis)} "
                                 f"(layer \"{self.name}\")")
        dims = input_shape.as_list()
        axis_to_dim = {a: dims[a] for a in self.axis}
        if any(d is None for d in axis_to_dim.values()):
            raise ValueError(f"Input has undefined `axis` dimension. Received input with shape {tuple(dims)} and "
                             f"axis={tuple(self.axis)} (layer \"{self.name}\")")
        self.input_spec = InputSpec(ndim=rank, axes=axis_to_dim)
        if len(axis_to_dim) == 1:
            param_shape: list[int] = [next(iter(axis_to_dim.values()))]
        else:
            param_shape = [axis_to_dim.get(i, 1) for i in range(rank)]
        self._param_shape = param_shape
        pd = self._param_dtype
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight("gamma", shape=param_shape, dtype=pd, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         trainable=True)
        if self.center:
            self.beta = self.add_weight("beta", shape=param_shape, dtype=pd, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        trainable=True)
        self.moving_mean = self.add_weight("moving_mean", shape=param_shape, dtype=pd,
                                           initializer=self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape=param_shape, dtype=pd,
                                               initializer=self.moving_variance_initializer, trainable=False)
        self.built = True

    # -- updates ---------------------------------------------------------------------------------------------
    @staticmethod
    def _assign_moving_average(variable: Any, value: Any, momentum: Any) -> Any:
        """TF's form: `AssignMovingAvg` = assign_sub(variable, (variable - value) * (1 - momentum))."""
        base = variable.dtype.base_dtype
        with name_scope("AssignMovingAvg") as scope:
            with colocate_with(variable):
                decay = convert_to_tensor(1.0 - momentum, name="decay")
                if decay.dtype.base_dtype != base:
                    decay = math.cast(decay, base)
                value = convert_to_tensor(value)
                if value.dtype.base_dtype != base:
                    value = math.cast(value, base)
                return state.assign_sub(variable, (variable - value) * decay, name=scope)

    # -- the two paths ---------------------------------------------------------------------------------------
    def _fused_batch_norm(self, inputs: Any, training: Any) -> Any:
        pd = self._param_dtype
        beta = self.beta if self.center else constant(0.0, dtype=pd, shape=self._param_shape)
        gamma = self.gamma if self.scale else constant(1.0, dtype=pd, shape=self._param_shape)

        def fused(is_training: bool) -> Any:
            return nn_norm.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean, variance=self.moving_variance,
                                            epsilon=self.epsilon, is_training=is_training,
                                            data_format=self._data_format)

        output, mean, variance = smart_cond(training, lambda: fused(True), lambda: fused(False))
        training_value = constant_value(training)
        if training_value or training_value is None:
            if training_value is None:
                momentum = smart_cond(training, lambda: self.momentum, lambda: 1.0)
            else:
                momentum = convert_to_tensor(self.momentum)
            self.add_update(lambda: self._assign_moving_average(self.moving_mean, mean, momentum))
            self.add_update(lambda: self._assign_moving_average(self.moving_variance, variance, momentum))
        return output

    def call(self, inputs: Any, training: Any = False) -> Any:
        inputs = convert_to_tensor(inputs)
        if training is None:
            training = False  # TF1 would read the Keras learning phase, which defaults to inference
        if self.fused:
            return self._fused_batch_norm(inputs, training)
        input_dtype = inputs.dtype.base_dtype
        if input_dtype in _HALF:
            inputs = math.cast(inputs, dtypes.float32)
        shape = inputs.shape
        ndims = shape.ndims
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        broadcast_shape = [1] * ndims
        broadcast_shape[self.axis[0]] = shape.as_list()[self.axis[0]]

        def broadcast(v: Any) -> Any:
            # Per-channel vectors reshaped to broadcast against a channel axis that is not the last.
            if v is not None and len(v.shape) != ndims and reduction_axes != list(range(ndims - 1)):
                return array.reshape(v, broadcast_shape)
            return v

        scale, offset = broadcast(self.gamma), broadcast(self.beta)
        training_value = constant_value(training)
        if training_value is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_variance = nn_ops.moments(math.cast(inputs, self._param_dtype), reduction_axes,
                                                        keep_dims=len(self.axis) > 1)
            mean = smart_cond(training, lambda: batch_mean, lambda: convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_variance, lambda: convert_to_tensor(self.moving_variance))
            new_mean, new_variance = mean, variance

            def update(var: Any, value: Any) -> Any:
                return smart_cond(training, lambda: self._assign_moving_average(var, value, self.momentum),
                                  lambda: var)

            self.add_update(lambda: update(self.moving_mean, new_mean))
            self.add_update(lambda: update(self.moving_variance, new_variance))
        dtype = inputs.dtype.base_dtype
        mean, variance = math.cast(mean, dtype), math.cast(variance, dtype)
        offset = math.cast(offset, dtype) if offset is not None else None
        scale = math.cast(scale, dtype) if scale is not None else None
        outputs = nn_norm.batch_normalization(inputs, broadcast(mean), broadcast(variance), offset, scale,
                                              self.epsilon)
        if input_dtype in _HALF:
            outputs = math.cast(outputs, input_dtype)
        outputs.set_shape(shape)
        return outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return as_shape(input_shape)


def batch_normalization(inputs: Any, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True, beta_initializer: Any = _ZEROS,
                        gamma_initializer: Any = _ONES, moving_mean_initializer: Any = _ZEROS,
                        moving_variance_initializer: Any = _ONES, beta_regularizer: Any = None,
                        gamma_regularizer: Any = None, beta_constraint: Any = None, gamma_constraint: Any = None,
                        training: Any = False, trainable: bool = True, name: str | None = None, reuse: Any = None,
                        renorm: bool = False, renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                        fused: bool | None = None, virtual_batch_size: int | None = None,
                        adjustment: Any = None) -> Any:
    """`af.layers.batch_normalization`: the functional form; run UPDATE_OPS with the train op when training."""
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                               beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
                               renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
                               trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
                               name=name, _reuse=reuse, _scope=name)
    return layer(inputs, training=training)


BatchNorm = BatchNormalization
batch_norm = batch_normalization

__all__ = ["BatchNormalization", "batch_normalization"]
