"""TF1's second-tier optimizers: Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl and
AdagradDA, on the `Optimizer` base of `asyncflow/train/optimizer.py`.

Each keeps TF1's constructor (names, defaults, checks), slot names (`accum`/`accum_update`,
`accumulator`, `accum`/`linear`, `gradient_accumulator`/`gradient_squared_accumulator`), slot
variable names (`w/Adadelta`, `w/Adadelta_1`, ...) and hyper-parameter tensors, and applies its
update with the fused training op TF1 uses (`asyncflow/ops/training_ops_extra.py`): dense
gradients with `Apply*`, IndexedSlices (duplicate indices summed first) with `SparseApply*`.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.gradients import IndexedSlices
from asyncflow.graph import Operation, Tensor, colocate_with, device
from asyncflow.ops import array, math
from asyncflow.ops import training_ops_extra as ops
from asyncflow.ops.registry import constant
from asyncflow.train.optimizer import Optimizer, _hyper
from asyncflow.variables import Variable


def _constant_slot_init(value: float):
    """An initializer filling a slot with `value` (a dynamic shape for a variable of unknown shape)."""

    def init(shape: Any, dtype: dtypes.DType) -> Tensor:
        if isinstance(shape, Tensor):
            return array.fill(shape, constant(value, dtype=dtype))
        return constant(value, dtype=dtype, shape=shape.as_list())

    return init


class AdadeltaOptimizer(Optimizer):
    """Zeiler's Adadelta: accum = rho * accum + (1 - rho) * g^2;
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g; var -= lr * update;
    accum_update = rho * accum_update + (1 - rho) * update^2."""

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: Any = 1e-8, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = _hyper(self._lr, "lr")
        self._rho_t = _hyper(self._rho, "rho")
        self._epsilon_t = _hyper(self._epsilon, "epsilon")

    def _scalars(self, var: Variable) -> list[Tensor]:
        return [self._cast(t, var) for t in (self._lr_t, self._rho_t, self._epsilon_t)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_adadelta(var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
                                  *self._scalars(var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_adadelta(var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
                                         *self._scalars(var), grad.values, grad.indices,
                                         use_locking=self._use_locking).op


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by FOBOS's l1/l2 shrinkage (TF's ApplyProximalGradientDescent)."""

    def __init__(self, learning_rate: Any, l1_regularization_strength: Any = 0.0,
                 l2_regularization_strength: Any = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _prepare(self) -> None:
        # As TF1, the hyper-parameters are not cast: they must already have the variable's dtype.
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = _hyper(self._l1_regularization_strength, "l1_regularization_strength")
        self._l2_tensor = _hyper(self._l2_regularization_strength, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_proximal_gradient_descent(var, self._learning_rate_tensor, self._l1_tensor, self._l2_tensor,
                                                   grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_proximal_gradient_descent(var, self._learning_rate_tensor, self._l1_tensor,
                                                          self._l2_tensor, grad.values, grad.indices,
                                                          use_locking=self._use_locking).op


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's per-coordinate rate lr / sqrt(accum) with FOBOS's l1/l2 shrinkage."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: Any = 0.0, l2_regularization_strength: Any = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(v, _constant_slot_init(self._initial_accumulator_value), v.shape,
                                                    v.dtype, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = _hyper(self._l1_regularization_strength, "l1_regularization_strength")
        self._l2_tensor = _hyper(self._l2_regularization_strength, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_proximal_adagrad(var, self.get_slot(var, "accumulator"), self._learning_rate_tensor,
                                          self._l1_tensor, self._l2_tensor, grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_proximal_adagrad(var, self.get_slot(var, "accumulator"), self._learning_rate_tensor,
                                                 self._l1_tensor, self._l2_tensor, grad.values, grad.indices,
                                                 use_locking=self._use_locking).op


class FtrlOptimizer(Optimizer):
    """McMahan et al.'s FTRL-Proximal, with TF1's l2 shrinkage (ApplyFtrlV2 when it is > 0) and `beta`
    (folded into the l2 strength as l2 + beta / (2 * learning_rate))."""

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "Ftrl", accum_name: str | None = None,
                 linear_name: str | None = None, l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float | None = None):
        super().__init__(use_locking, name)
        for value, what, allow in ((initial_accumulator_value, "initial_accumulator_value", "positive or zero"),
                                   (-learning_rate_power, "learning_rate_power", "negative or zero"),
                                   (l1_regularization_strength, "l1_regularization_strength", "positive or zero"),
                                   (l2_regularization_strength, "l2_regularization_strength", "positive or zero"),
                                   (l2_shrinkage_regularization_strength, "l2_shrinkage_regularization_strength",
                                    "positive or zero")):
            if value < 0.0:
                shown = -value if what == "learning_rate_power" else value
                raise ValueError(f"{what} {shown:f} needs to be {allow}")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list: list[Variable]) -> None:
        value = self._initial_accumulator_value

        def accum_init(shape: Any, dtype: dtypes.DType) -> Tensor:
            return array.ones(shape, dtype=dtype) * value  # TF1: ones * initial_accumulator_value

        for v in var_list:
            self._get_or_make_slot_with_initializer(v, accum_init, v.shape, v.dtype, "accum",
                                                    self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = _hyper(self._l1_regularization_strength, "l1_regularization_strength")
        adjusted = self._l2_regularization_strength + self._beta / (
            2.0 * math.maximum(self._learning_rate, 1e-36))
        self._adjusted_l2_tensor = _hyper(adjusted, "adjusted_l2_regularization_strength")
        self._beta_tensor = _hyper(self._beta, "beta")
        self._l2_shrinkage_tensor = _hyper(self._l2_shrinkage_regularization_strength,
                                           "l2_shrinkage_regularization_strength")
        self._learning_rate_power_tensor = _hyper(self._learning_rate_power, "learning_rate_power")

    def _args(self, var: Variable) -> list[Tensor]:
        """lr, l1, l2 (, l2_shrinkage), lr_power in the variable's dtype, as the op wants them."""
        scalars = [self._learning_rate_tensor, self._l1_tensor, self._adjusted_l2_tensor]
        if self._l2_shrinkage_regularization_strength > 0.0:
            scalars.append(self._l2_shrinkage_tensor)
        scalars.append(self._learning_rate_power_tensor)
        return [self._cast(t, var) for t in scalars]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        slots = (self.get_slot(var, "accum"), self.get_slot(var, "linear"))
        apply = ops.apply_ftrl_v2 if self._l2_shrinkage_regularization_strength > 0.0 else ops.apply_ftrl
        return apply(var, *slots, grad, *self._args(var), use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        slots = (self.get_slot(var, "accum"), self.get_slot(var, "linear"))
        apply = (ops.sparse_apply_ftrl_v2 if self._l2_shrinkage_regularization_strength > 0.0
                 else ops.sparse_apply_ftrl)
        return apply(var, *slots, grad.values, grad.indices, *self._args(var), use_locking=self._use_locking).op


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (Duchi et al.): var is set in closed form from the accumulated gradients,
    their squares and `global_step` (which the caller must increment, e.g. through `minimize`)."""

    def __init__(self, learning_rate: Any, global_step: Any, initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gradient_squared_accumulator_value = initial_gradient_squared_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._global_step = global_step
        self._global_step_on_worker: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(v, _constant_slot_init(0.0), v.shape, v.dtype,
                                                    "gradient_accumulator", self._name)
            self._get_or_make_slot_with_initializer(
                v, _constant_slot_init(self._initial_gradient_squared_accumulator_value), v.shape, v.dtype,
                "gradient_squared_accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        with colocate_with(self._learning_rate_tensor.op):
            # The step this update is for: the global step is incremented after the updates run.
            self._global_step_on_worker = array.identity(self._global_step) + 1

    def _args(self, var: Variable) -> list[Any]:
        with device(var.device):
            global_step = array.identity(self._global_step_on_worker)
        return [self._cast(self._learning_rate_tensor, var),
                math.cast(self._l1_regularization_strength, var.dtype.base_dtype),
                math.cast(self._l2_regularization_strength, var.dtype.base_dtype), global_step]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_adagrad_da(var, self.get_slot(var, "gradient_accumulator"),
                                    self.get_slot(var, "gradient_squared_accumulator"), grad, *self._args(var),
                                    use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_adagrad_da(var, self.get_slot(var, "gradient_accumulator"),
                                           self.get_slot(var, "gradient_squared_accumulator"), grad.values,
                                           grad.indices, *self._args(var), use_locking=self._use_locking).op


__all__ = [
    "AdadeltaOptimizer", "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer", "FtrlOptimizer",
    "AdagradDAOptimizer",
]
