"""`af.train.ExponentialMovingAverage` and `assign_moving_average`, as TF1 builds them.

`apply(var_list)` gives every variable (or float tensor) a shadow variable named
`<its op name>/<ema name>` (`conv1/weights/ExponentialMovingAverage`), made once, non-trainable,
colocated with a variable primary, in GLOBAL_VARIABLES; a variable's shadow starts at the
variable's value (or its initial value while it is uninitialised: TF1's cond), a tensor's at zeros.
The variables themselves join MOVING_AVERAGE_VARIABLES. Each call returns one grouped op (named
after the EMA's name scope) that moves each shadow towards its variable:

    shadow -= (1 - decay) * (shadow - value)

with `decay` capped at (1 + num_updates) / (10 + num_updates) when `num_updates` is given. Tensor
shadows with `zero_debias=True` use TF1's debiasing: a `biased` accumulator and a `local_step`
counter (variables in the shadow's own variable scope) and shadow = biased / (1 - decay^step).

`variables_to_restore()` is the name map a Saver uses to load the shadows' values into the
original variables (evaluation with averaged weights): checkpoint key `<var>/<ema name>` for each
averaged variable, its own name for every other global variable.
"""

from __future__ import annotations

import contextlib
from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import cond
from asyncflow.graph import (
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    colocate_with,
    device,
    get_default_graph,
    name_scope,
)
from asyncflow.ops import array, math, state
from asyncflow.ops.control import group
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.variable_scope import get_variable, get_variable_scope, variable_scope
from asyncflow.variables import (
    Variable,
    global_variables,
    is_variable_initialized,
    moving_average_variables,
    trainable_variables,
)

_FLOATS = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)
_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


def _create_shadow(primary: Any, initial: Any, name: str, colocate: bool, validate_shape: bool) -> Variable:
    """TF1's slot_creator: `<variable scope>/<primary op name>/<name>` (made unique), non-trainable, created
    outside the caller's name scope and control dependencies."""
    graph = primary.graph
    scope = get_variable_scope().name
    prefix = f"{scope}/" if scope else ""
    with graph.name_scope(""), graph.control_dependencies(None), \
            colocate_with(primary.op) if colocate else contextlib.nullcontext():
        return Variable(initial, name=f"{prefix}{primary.op.name}/{name}", trainable=False,
                        dtype=primary.dtype.base_dtype, validate_shape=validate_shape)


def _zero_debias(unbiased: Variable, value: Any, one_minus_decay: Tensor) -> Tensor:
    """The debiased update of `unbiased` (TF1's `_zero_debias`): biased EMA over (1 - decay^local_step)."""
    with variable_scope(unbiased.op.name, values=[unbiased, value, one_minus_decay]):
        scope = get_variable_scope()

        def unique(name: str) -> str:
            if scope.reuse:
                return name
            taken = {v.op.name for v in global_variables()}
            full, i = f"{scope.name}/{name}", 1
            if full not in taken:
                return name
            while f"{full}_{i}" in taken:
                i += 1
            return f"{name}_{i}"

        with colocate_with(unbiased.op):
            biased = get_variable(unique("biased"), shape=unbiased.shape, dtype=unbiased.dtype.base_dtype,
                                  initializer=_zeros_initializer, trainable=False)
            local_step = get_variable(unique("local_step"), shape=[], dtype=unbiased.dtype.base_dtype,
                                      initializer=_zeros_initializer, trainable=False)
    update_biased = state.assign_sub(biased, (biased - value) * one_minus_decay)
    update_local_step = local_step.assign_add(1)
    bias_factor = 1 - math.pow(1.0 - one_minus_decay, update_local_step)
    return state.assign(unbiased, update_biased / bias_factor, name=get_default_graph().get_name_scope() + "/")


def _zeros_initializer(shape: Any, dtype: Any = dtypes.float32, partition_info: Any = None) -> Tensor:
    return array.zeros(shape, dtype=dtype)


def assign_moving_average(variable: Variable, value: Any, decay: Any, zero_debias: bool = True,
                          name: str | None = None) -> Tensor:
    """variable -= (1 - decay) * (variable - value), debiased as Adam's moments when `zero_debias`."""
    with name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        one_minus_decay = convert_to_tensor(1.0 - decay, name="decay")
        if one_minus_decay.dtype.base_dtype != variable.dtype.base_dtype:
            one_minus_decay = math.cast(one_minus_decay, variable.dtype.base_dtype)
        if zero_debias:
            return _zero_debias(variable, value, one_minus_decay)
        return state.assign_sub(variable, (variable - value) * one_minus_decay, name=scope)


class ExponentialMovingAverage:
    """`af.train.ExponentialMovingAverage(decay, num_updates=None, zero_debias=False, name=...)`."""

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[Any, Variable] = {}  # keyed by the Variable or Tensor object itself

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: Any = None) -> Operation:
        """Creates the shadows of `var_list` (default: the trainable variables) once; returns the op that
        updates them all."""
        var_list = trainable_variables() if var_list is None else list(var_list)
        debiased: set[int] = set()
        for var in var_list:
            if not isinstance(var, (Variable, Tensor)):
                raise TypeError(f"ExponentialMovingAverage.apply: var_list holds Variables and Tensors, got {var!r}")
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                continue
            graph = var.graph
            with graph.as_default(), graph.init_scope():
                if isinstance(var, Variable):
                    with device(var.device):
                        # Starts at the variable's value, or at its initial value if that runs in this same step.
                        initial = cond(is_variable_initialized(var), var.read_value, lambda v=var: v.initial_value)
                    avg = _create_shadow(var, initial, self._name, colocate=True,
                                         validate_shape=initial.shape.is_fully_defined())
                    add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                else:
                    known = var.shape.is_fully_defined()
                    shape = var.shape.as_list() if known else None
                    avg = _create_shadow(
                        var, (lambda s=shape, v=var: array.zeros(s if s is not None else array.shape(v),
                                                                 dtype=v.dtype.base_dtype)),
                        self._name, colocate=var.op.type in _VARIABLE_OPS, validate_shape=known)
                    if self._zero_debias:
                        debiased.add(id(avg))
            self._averages[var] = avg
        with name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                num_updates = math.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay, zero_debias=id(self._averages[var])
                                             in debiased) for var in var_list]
            return group(*updates, name=scope)

    def average(self, var: Any) -> Variable | None:
        """The shadow variable of `var`, or None if `apply` never saw it."""
        return self._averages.get(var)

    def average_name(self, var: Any) -> str:
        """The shadow's op name: the one `apply` made, or the one it would make now (a checkpoint key)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Any]:
        """{checkpoint key: variable}: each averaged variable restored from its shadow's key, every other
        global variable from its own name."""
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + moving_average_variables()
        averaged = list(dict.fromkeys(moving_avg_variables))
        name_map = {self.average_name(v): v for v in averaged}
        averaged_names = {v.name for v in averaged}
        for v in global_variables():
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


__all__ = ["ExponentialMovingAverage"]
