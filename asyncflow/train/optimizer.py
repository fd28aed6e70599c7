"""`af.train` optimizers: the `Optimizer` base and TF1's five classic optimizers, with their slots.

`minimize` = `compute_gradients` (af.gradients w.r.t. each variable's ref) + `apply_gradients`,
which, as TF1 does it:

  1. creates the slots (`w/Momentum`, `w/Adam`, `w/Adam_1`, ...: variables named after the
     primary, colocated with it, outside any control dependency) and non-slot variables
     (`beta1_power`, colocated with the first variable by name), once per variable;
  2. under the optimizer's name scope, `_prepare`s its hyper-parameters as tensors
     (`Adam/learning_rate`, ...), then for each (grad, var), under `update_<var>` and colocated
     with the variable, applies a dense (Tensor) or sparse (IndexedSlices) update with the fused
     training ops of `asyncflow/ops/training_ops.py`; sparse gradients are summed per index first
     (`Unique` + `UnsortedSegmentSum`) except by gradient descent, which scatters;
  3. `_finish`es (Adam updates its beta powers there) and, given a `global_step`, increments it
     with `AssignAdd` once all updates ran.

Learning rates and other hyper-parameters may be Python numbers, tensors (schedules) or
callables returning either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncflow import dtypes
from asyncflow.gradients import IndexedSlices, gradients
from asyncflow.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    get_collection_ref,
    get_default_graph,
    name_scope,
)
from asyncflow.ops import array, math, state
from asyncflow.ops import training_ops as ops
from asyncflow.ops.array_unique import unique
from asyncflow.ops.control import group
from asyncflow.ops.registry import constant, convert_to_tensor
from asyncflow.train.training_util import *  # noqa: F403 - re-exported: af.train.get_global_step & co.
from asyncflow.train.training_util import __all__ as _training_util_all
from asyncflow.variable_scope import get_variable_scope
from asyncflow.variables import Variable

_VALID_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _var_key(var: Any) -> Operation:
    return var.op


def _call_if_callable(value: Any) -> Any:
    return value() if callable(value) else value


def _create_slot(primary: Variable, make_value: Callable[[], Tensor], op_name: str, dtype: dtypes.DType,
                 validate_shape: bool) -> Variable:
    """A slot variable `<primary>/<op_name>[_N]`: colocated with `primary`, outside any name scope or control
    dependency of the caller (TF's slot_creator under init_scope)."""
    graph = primary.graph
    with graph.as_default():
        scope = get_variable_scope().name  # as TF1's slot_creator: the slot lives in the current variable scope
    prefix = f"{scope}/" if scope else ""
    with graph.as_default(), graph.name_scope(""), graph.control_dependencies(None), colocate_with(primary.op):
        return Variable(make_value, name=f"{prefix}{primary.op.name}/{op_name}", trainable=False, dtype=dtype,
                        validate_shape=validate_shape)


def _dynamic_shape(primary: Variable) -> Tensor:
    return array.shape(primary.initial_value)


class Optimizer:
    """Base class: subclasses define `_create_slots`, `_prepare`, `_apply_dense`, `_apply_sparse` (and `_finish`)."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[Operation, Variable]] = {}
        self._non_slot_dict: dict[tuple[str, Graph], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API ---------------------------------------------------------------------------
    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None, gate_gradients: int = GATE_OP,
                 aggregation_method: Any = None, colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Operation:
        """Adds the ops that compute the gradients of `loss` and apply them; increments `global_step`."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(f"No gradients provided for any variable, check your graph for ops that do not support "
                             f"gradients, between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Any, var_list: Any = None, gate_gradients: int = GATE_OP,
                          aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list[tuple[Any, Any]]:
        """[(gradient or None, variable)] for the trainable variables (or `var_list`)."""
        if callable(loss):
            loss = loss()
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             f"Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = list(loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        else:
            var_list = _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, (Variable, Tensor)):
                raise NotImplementedError(f"Trying to optimize unsupported type {v!r}")
        grads = gradients(loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
                          gate_gradients=gate_gradients == Optimizer.GATE_OP, aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = _gate(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: str | None = None) -> Operation:
        """The op that applies each (gradient, variable) update, then increments `global_step` if given."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None and not isinstance(g, IndexedSlices):
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}") \
                        from None
            if not isinstance(v, (Variable, Tensor)):
                raise NotImplementedError(f"Trying to optimize unsupported type {v!r}")
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in converted]}.")
        self._create_slots(var_list)
        update_ops = []
        with name_scope(name, self._name) as scope:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with name_scope("update_" + var.op.name), colocate_with(var.op):
                    update_ops.append(self._update(grad, var))
            if global_step is None:
                apply_updates = self._finish(update_ops, scope)
            else:
                with control_dependencies([self._finish(update_ops, "update")]):
                    with colocate_with(global_step.op):
                        apply_updates = state.assign_add(global_step, 1, name=scope)
        if isinstance(apply_updates, Tensor):
            apply_updates = apply_updates.op
        train_ops = get_collection_ref(GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    def get_slot(self, var: Any, name: str) -> Variable | None:
        """The slot `name` ("momentum", "m", "v", "rms", ...) created for `var`, or None."""
        named = self._slots.get(name)
        return None if not named else named.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """This optimizer's slot and non-slot variables in the default graph, sorted by name."""
        graph = get_default_graph()
        out = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        out += [v for named in self._slots.values() for v in named.values() if v.graph is graph]
        return sorted(out, key=lambda v: v.name)

    # -- what subclasses build on ----------------------------------------------------------------
    def _update(self, grad: Any, var: Variable) -> Any:
        if not isinstance(var, Variable):  # a Tensor in var_list gets a gradient, but cannot be updated
            raise NotImplementedError(f"Trying to update a Tensor {var!r}")
        if isinstance(grad, Tensor):
            update = self._apply_dense(grad, var)
            if var.constraint is not None:
                with control_dependencies([update]):
                    # A fresh read: `w/read` holds the value from before the update (TF1's aliases the buffer).
                    return var.assign(var.constraint(var.read_value()))
            return update
        if var.constraint is not None:
            raise RuntimeError("Cannot use a constraint function on a sparse variable.")
        return self._apply_sparse_duplicate_indices(grad, var)

    def _create_slots(self, var_list: list[Variable]) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError()

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        """Sums the rows of `grad` that share an index, then `_apply_sparse` (TF1's default)."""
        unique_indices, positions = unique(grad.indices)
        summed = array.unsorted_segment_sum(grad.values, positions, array.shape(unique_indices)[0])
        return self._apply_sparse(IndexedSlices(summed, unique_indices, grad.dense_shape), var)

    def _finish(self, update_ops: list[Any], name_scope: str) -> Operation:
        return group(*update_ops, name=name_scope)

    def _assert_valid_dtypes(self, tensors: list[Any]) -> None:
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in _VALID_DTYPES:
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: {list(_VALID_DTYPES)}.")

    def _slot_dict(self, slot_name: str) -> dict[Operation, Variable]:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot_with_initializer(self, var: Variable, initializer: Callable[..., Tensor], shape: Any,
                                           dtype: Any, slot_name: str, op_name: str) -> Variable:
        """The slot `slot_name` of `var`, made once as `initializer(shape, dtype)` (a dynamic shape if unknown)."""
        named = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named:
            dtype = dtypes.as_dtype(dtype).base_dtype
            known = var.shape.is_fully_defined()
            named[key] = _create_slot(
                var, lambda: initializer(var.shape if known else _dynamic_shape(var), dtype), op_name, dtype, known)
        return named[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        return self._get_or_make_slot_with_initializer(var, array.zeros, var.shape, var.dtype, slot_name, op_name)

    def _create_non_slot_variable(self, initial_value: Any, name: str, colocate_with: Variable) -> Variable:
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.as_default(), graph.control_dependencies(None), graph.colocate_with(colocate_with.op):
                v = Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Graph | None = None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    def _cast(self, t: Tensor, var: Variable) -> Tensor:
        return math.cast(t, var.dtype.base_dtype)


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    return [x]


def _gate(grads: list[Any]) -> list[Any]:
    """GATE_GRAPH: every gradient is available only once all of them are (TF's control_flow_ops.tuple)."""
    parts = [g.values if isinstance(g, IndexedSlices) else g for g in grads if g is not None]
    if not parts:
        return grads
    with name_scope("tuple"):
        gate = group(*parts)
        with control_dependencies([gate]):
            return [None if g is None else
                    IndexedSlices(array.identity(g.values, name="control_dependency"), g.indices, g.dense_shape)
                    if isinstance(g, IndexedSlices) else array.identity(g, name="control_dependency")
                    for g in grads]


def _hyper(value: Any, name: str) -> Tensor:
    return convert_to_tensor(_call_if_callable(value), name=name)


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad; sparse gradients scatter-subtract into the touched rows only."""

    def __init__(self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor: Tensor | None = None

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_gradient_descent(var, self._cast(self._learning_rate_tensor, var), grad,
                                          use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        delta = IndexedSlices(grad.values * self._cast(self._learning_rate_tensor, var), grad.indices,
                              grad.dense_shape)
        return var.scatter_sub(delta, use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (Nesterov: var -= lr * (grad + momentum * accum))."""

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        self._momentum_tensor = _hyper(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_momentum(var, self.get_slot(var, "momentum"), self._cast(self._learning_rate_tensor, var),
                                  grad, self._cast(self._momentum_tensor, var), use_locking=self._use_locking,
                                  use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_momentum(var, self.get_slot(var, "momentum"),
                                         self._cast(self._learning_rate_tensor, var), grad.values, grad.indices,
                                         self._cast(self._momentum_tensor, var), use_locking=self._use_locking,
                                         use_nesterov=self._use_nesterov).op


class AdagradOptimizer(Optimizer):
    """accum += grad ** 2; var -= lr * grad / sqrt(accum), accum starting at `initial_accumulator_value`."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list[Variable]) -> None:
        value = self._initial_accumulator_value

        def init(shape: Any, dtype: dtypes.DType) -> Tensor:
            if isinstance(shape, Tensor):
                return array.fill(shape, constant(value, dtype=dtype))
            return constant(value, dtype=dtype, shape=shape.as_list())

        for v in var_list:
            self._get_or_make_slot_with_initializer(v, init, v.shape, v.dtype, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return ops.apply_adagrad(var, self.get_slot(var, "accumulator"), self._cast(self._learning_rate_tensor, var),
                                 grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return ops.sparse_apply_adagrad(var, self.get_slot(var, "accumulator"),
                                        self._cast(self._learning_rate_tensor, var), grad.values, grad.indices,
                                        use_locking=self._use_locking).op


class AdamOptimizer(Optimizer):
    """Kingma & Ba's Adam as TF1 writes it: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
    m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2; var -= lr_t * m / (sqrt(v) + epsilon)."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self) -> tuple[Variable, Variable]:
        graph = get_default_graph()
        return self._get_non_slot_variable("beta1_power", graph), self._get_non_slot_variable("beta2_power", graph)

    def _create_slots(self, var_list: list[Variable]) -> None:
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = _hyper(self._lr, "learning_rate")
        self._beta1_t = _hyper(self._beta1, "beta1")
        self._beta2_t = _hyper(self._beta2, "beta2")
        self._epsilon_t = _hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        beta1_power, beta2_power = self._get_beta_accumulators()
        return ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), self._cast(beta1_power, var),
            self._cast(beta2_power, var), self._cast(self._lr_t, var), self._cast(self._beta1_t, var),
            self._cast(self._beta2_t, var), self._cast(self._epsilon_t, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """TF1's `_apply_sparse_shared`: decay m and v everywhere, scatter-add the rows, update var densely."""
        beta1_power, beta2_power = (self._cast(p, var) for p in self._get_beta_accumulators())
        lr_t, beta1_t, beta2_t, epsilon_t = (self._cast(t, var) for t in (self._lr_t, self._beta1_t, self._beta2_t,
                                                                           self._epsilon_t))
        lr = lr_t * math.sqrt(1 - beta2_power) / (1 - beta1_power)
        m = self.get_slot(var, "m")
        m_scaled_g_values = grad.values * (1 - beta1_t)
        m_t = state.assign(m, m * beta1_t, use_locking=self._use_locking)
        with control_dependencies([m_t]):
            m_t = state.scatter_add(m, grad.indices, m_scaled_g_values, use_locking=self._use_locking)
        v = self.get_slot(var, "v")
        v_scaled_g_values = (grad.values * grad.values) * (1 - beta2_t)
        v_t = state.assign(v, v * beta2_t, use_locking=self._use_locking)
        with control_dependencies([v_t]):
            v_t = state.scatter_add(v, grad.indices, v_scaled_g_values, use_locking=self._use_locking)
        v_sqrt = math.sqrt(v_t)
        var_update = state.assign_sub(var, lr * m_t / (v_sqrt + epsilon_t), use_locking=self._use_locking)
        return group(var_update, m_t, v_t)

    def _finish(self, update_ops: list[Any], name_scope: str) -> Operation:
        with control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with colocate_with(beta1_power.op):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t, use_locking=self._use_locking)
                update_beta2 = beta2_power.assign(beta2_power * self._beta2_t, use_locking=self._use_locking)
        return group(*update_ops, update_beta1, update_beta2, name=name_scope)


class RMSPropOptimizer(Optimizer):
    """ms = decay * ms + (1 - decay) * g^2 (centered: also mg = decay * mg + (1 - decay) * g, and the
    denominator uses ms - mg^2); mom = momentum * mom + lr * g / sqrt(ms + epsilon); var -= mom."""

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0, epsilon: Any = 1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(v, array.ones, v.shape, v.dtype, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = _hyper(self._learning_rate, "learning_rate")
        self._decay_tensor = _hyper(self._decay, "decay")
        self._momentum_tensor = _hyper(self._momentum, "momentum")
        self._epsilon_tensor = _hyper(self._epsilon, "epsilon")

    def _scalars(self, var: Variable) -> list[Tensor]:
        return [self._cast(t, var) for t in (self._learning_rate_tensor, self._decay_tensor, self._momentum_tensor,
                                             self._epsilon_tensor)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return ops.apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *self._scalars(var), grad,
                                               use_locking=self._use_locking).op
        return ops.apply_rms_prop(var, rms, mom, *self._scalars(var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return ops.sparse_apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *self._scalars(var),
                                                      grad.values, grad.indices, use_locking=self._use_locking).op
        return ops.sparse_apply_rms_prop(var, rms, mom, *self._scalars(var), grad.values, grad.indices,
                                         use_locking=self._use_locking).op


__all__ = [
    "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdagradOptimizer", "AdamOptimizer",
    "RMSPropOptimizer", *_training_util_all,
]
