"""`af.layers.Layer`: TF1's layer base (`tf.compat.v1.layers.Layer`), which the layers and the RNN cells share.

A layer owns one variable scope, chosen on its first call: its `name`, or the class name in snake
case made unique in the enclosing variable scope (`dense`, `dense_1`), or the enclosing scope itself
when `reuse` asks for existing variables. The first call builds the variables (`build`, through
`add_weight` -> `get_variable`) and every later call reuses them, in the same name scope (`dense/`),
so op names are TF1's (`dense/MatMul`, then `dense/MatMul_1`). Weight regularizers add to
REGULARIZATION_LOSSES (`dense/kernel/Regularizer/...`), `add_update` to UPDATE_OPS, as the v1 layers do.
A layer's `input_spec` (asyncflow/layers/input_spec.py) is checked on every call, before the first build; an
activity regularizer's loss is divided by the batch size (`<layer>/ActivityRegularizer/truediv`), as TF's.
The functional forms (`af.layers.dense(..., name=, reuse=)`) pass `_scope=name`: the variable scope is then
captured when the layer is made, in the enclosing scope, as TF1's.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Graph, GraphKeys, Tensor, add_to_collection, add_to_collections, get_default_graph
from asyncflow.graph import name_scope as name_scope_op
from asyncflow.layers.input_spec import InputSpec, assert_input_compatibility
from asyncflow.ops import array, math
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.variable_scope import get_variable, variable_scope

_layer_names: weakref.WeakKeyDictionary[Graph, dict[str, int]] = weakref.WeakKeyDictionary()


def to_snake_case(name: str) -> str:
    """Keras's rule: `BasicLSTMCell` -> `basic_lstm_cell`, `Conv2D` -> `conv2d`."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def _unique_layer_name(base: str) -> str:
    used = _layer_names.setdefault(get_default_graph(), {})
    n = used.get(base, 0)
    used[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _shapes(inputs: Any) -> Any:
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_shapes(x) for x in inputs) if not hasattr(inputs, "_fields") else \
            type(inputs)(*(_shapes(x) for x in inputs))
    return getattr(inputs, "shape", None)


def _first_dtype(inputs: Any) -> Any:
    if isinstance(inputs, (list, tuple)):
        for x in inputs:
            d = _first_dtype(x)
            if d is not None:
                return d
        return None
    d = getattr(inputs, "dtype", None)
    return d.base_dtype if isinstance(d, dtypes.DType) else None


class Layer:
    """`af.layers.Layer(trainable=True, name=None, dtype=None, **kwargs)`: subclasses give `build(input_shape)`
    and `call(inputs, ...)`; calling the layer builds it once and then reuses its variables."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None, **kwargs: Any):
        self._reuse = kwargs.pop("_reuse", None)
        self._activity_regularizer = kwargs.pop("activity_regularizer", None)
        kwargs.pop("input_shape", None)
        scope = kwargs.pop("_scope", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        self.trainable = trainable
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if name is None:
            base = to_snake_case(type(self).__name__)
            self._name, self._base_name = _unique_layer_name(base), base
        else:
            self._name = self._base_name = name
        self._scope: Any = None
        if scope:
            with variable_scope(scope) as captured:
                self._scope = captured
        self._current_scope: Any = None
        self.input_spec: Any = None
        self.built = False
        self._trainable_weights: list[Any] = []
        self._non_trainable_weights: list[Any] = []
        self._losses: list[Any] = []
        self._updates: list[Any] = []

    # -- what subclasses give -------------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return inputs

    # -- scopes ----------------------------------------------------------------------------------------------
    def _set_scope(self, scope: Any = None) -> None:
        if self._scope is not None:
            return
        if self._reuse:
            with variable_scope(scope if scope is not None else self._base_name) as captured:
                self._scope = captured
        else:
            with variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        self._set_scope(kwargs.pop("scope", None))
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with name_scope_op(self._scope.original_name_scope):
                assert_input_compatibility(self.input_spec, inputs, self.name)
                if not self.built:
                    if self._dtype is None:
                        self._dtype = _first_dtype(inputs)
                    self.build(_shapes(inputs))
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self._activity_regularizer is not None:
                    self._regularize_activity(outputs)
        return outputs

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """TF1's alias of calling the layer."""
        return self(inputs, *args, **kwargs)

    def _regularize_activity(self, outputs: Any) -> None:
        # The loss is per example: the regularizer's value over the batch size (Keras's rule since TF 1.14).
        with name_scope_op("ActivityRegularizer"):
            for out in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
                loss = self._activity_regularizer(out)
                if loss is None:
                    continue
                loss = convert_to_tensor(loss)
                batch = math.cast(array.shape(out)[0], loss.dtype.base_dtype)
                self.add_loss(math.truediv(loss, batch))

    # -- weights, losses, updates ------------------------------------------------------------------------------
    def add_weight(self, name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                   regularizer: Any = None, trainable: bool | None = None, constraint: Any = None,
                   partitioner: Any = None, use_resource: Any = None, **kwargs: Any) -> Any:
        """A variable `<layer scope>/<name>` from `get_variable` (reused after the first call), tracked by the layer."""
        trainable = True if trainable is None else trainable
        dtype = dtypes.as_dtype(dtype if dtype is not None else (self._dtype or dtypes.float32))
        reuse = True if self.built else self._reuse
        graph = get_default_graph()
        existing = set(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with name_scope_op(self._scope.original_name_scope):
                variable = get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                                        trainable=trainable and self.trainable, constraint=constraint,
                                        partitioner=partitioner, collections=kwargs.get("collections"))
                if regularizer is not None and variable not in existing:
                    with name_scope_op(name + "/Regularizer"):
                        self.add_loss(regularizer(variable))
        (self._trainable_weights if trainable and self.trainable else self._non_trainable_weights).append(variable)
        return variable

    add_variable = add_weight

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Adds losses (None skipped) to the layer and to REGULARIZATION_LOSSES, as the v1 layers do."""
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            self._losses.append(loss)
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        """Adds update ops to the layer and to UPDATE_OPS (what a train op must depend on)."""
        updates = list(updates) if isinstance(updates, (list, tuple)) else [updates]
        updates = [u() if callable(u) else u for u in updates]
        # TF1 keeps the update's op, not its tensor (running UPDATE_OPS gives None each, as for any op)
        updates = [u.op if isinstance(u, Tensor) else u for u in updates]
        self._updates.extend(updates)
        collection = get_default_graph().get_collection_ref(GraphKeys.UPDATE_OPS)
        for u in updates:
            if not any(u is c for c in collection):
                add_to_collections([GraphKeys.UPDATE_OPS], u)

    # -- TF1's properties -----------------------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype.name if self._dtype is not None else None)

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(f'No name available for layer scope because the layer "{self._name}" has not been used '
                             "yet. The scope name is determined the first time the layer instance is called. You must "
                             "therefore call the layer before querying `scope_name`.")
        return self._scope.name

    losses = property(lambda self: list(self._losses))
    updates = property(lambda self: list(self._updates))
    activity_regularizer = property(lambda self: self._activity_regularizer)

    @property
    def trainable_weights(self) -> list[Any]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list[Any]:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def get_losses_for(self, inputs: Any) -> list[Any]:
        return self.losses

    def get_updates_for(self, inputs: Any) -> list[Any]:
        return self.updates

    def count_params(self) -> int:
        return sum(int(w.shape.num_elements() or 0) for w in self.weights)


__all__ = ["Layer", "InputSpec"]
