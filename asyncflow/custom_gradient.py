"""`af.custom_gradient` and `af.make_template`, as TF1 builds them in graph mode.

`custom_gradient(f)`: `f(*xs)` returns `(y, grad_fn)`; the decorated function passes y (and the xs)
through one `IdentityN` whose gradient is overridden by a function registered under a fresh name,
which hands the incoming gradients of y to `grad_fn` and returns its results as the gradients of
the xs. The path from the xs to y inside f gets no gradient, as in TF.

`make_template(name_, func_, ...)`: a callable that creates its variables on the first call, in a
variable scope of its own, and reuses them on every later call.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from asyncflow.gradients import RegisterGradient
from asyncflow.graph import GraphKeys, Operation, get_collection, get_default_graph
from asyncflow.ops.array_identity import identity_n
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.variable_scope import variable_scope

_ids = itertools.count()


def _flatten(structure: Any) -> list[Any]:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(structure: Any, leaves: list[Any]) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if isinstance(s, (list, tuple)):
            items = [build(v) for v in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)

    return build(structure)


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """`tf.custom_gradient`: `f` returns `(y, grad_fn)`; gradients of y reach f's inputs through grad_fn."""

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ValueError(f"The custom_gradient decorator currently supports keywords arguments only when "
                             f"eager execution is enabled; got {sorted(kwargs)}")
        xs = [convert_to_tensor(x) for x in args]
        result, grad_fn = f(*xs)
        flat = [convert_to_tensor(t) for t in _flatten(result)]
        name = f"CustomGradient-{next(_ids)}"

        @RegisterGradient(name)
        def _grad(op: Operation, *grads: Any) -> list[Any]:
            ys_grads = list(grads[:len(flat)])
            input_grads = grad_fn(*ys_grads)
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != len(xs):
                raise ValueError(f"custom_gradient {f.__name__}: grad_fn returned {len(input_grads)} gradients "
                                 f"for {len(xs)} inputs")
            return [None] * len(flat) + input_grads

        with get_default_graph().gradient_override_map({"IdentityN": name}):
            passed = identity_n(flat + xs)
        return _pack(result, passed[:len(flat)])

    return decorated


class Template:
    """What `make_template` returns: calls `func_` in one variable scope, sharing its variables."""

    def __init__(self, name: str, func: Callable[..., Any], create_scope_now: bool, unique_name: str | None,
                 custom_getter: Any, kwargs: dict[str, Any]):
        self._func = functools.partial(func, **kwargs)
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(self._unique_name, self._name, custom_getter=custom_getter) as scope:
                self._variable_scope = scope

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is None:
            with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as scope:
                self._variable_scope = scope
                result = self._func(*args, **kwargs)
            self._variables_created = True
            return result
        reuse = self._variables_created
        with variable_scope(self._variable_scope, reuse=True if reuse else None):
            result = self._func(*args, **kwargs)
        self._variables_created = True
        return result

    name = property(lambda self: self._name)
    variable_scope = property(lambda self: self._variable_scope)
    variable_scope_name = property(lambda self: self._variable_scope.name if self._variable_scope else None)

    @property
    def global_variables(self) -> list[Any]:
        return get_collection(GraphKeys.GLOBAL_VARIABLES, self.variable_scope_name + "/") \
            if self._variables_created else []

    @property
    def trainable_variables(self) -> list[Any]:
        return get_collection(GraphKeys.TRAINABLE_VARIABLES, self.variable_scope_name + "/") \
            if self._variables_created else []

    variables = global_variables


def make_template(name_: str, func_: Callable[..., Any], create_scope_now_: bool = False,
                  unique_name_: str | None = None, custom_getter_: Any = None, **kwargs: Any) -> Template:
    """`tf.make_template`: `func_` wrapped so every call shares the variables the first call created."""
    if not name_:
        raise ValueError("name cannot be None or empty.")
    return Template(name_, func_, create_scope_now_, unique_name_, custom_getter_, kwargs)


__all__ = ["custom_gradient", "make_template"]
