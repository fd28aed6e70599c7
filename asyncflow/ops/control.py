"""Grouping ops: `no_op`, `group` and `tuple` (control dependencies without data).

The control-flow primitives of the whitepaper (Switch, Merge, Enter, ...) join this module in
the control-flow issue.
"""

from __future__ import annotations

import builtins
from typing import Any

from asyncflow.graph import Operation, Tensor, control_dependencies, name_scope
from asyncflow.ops.array import identity
from asyncflow.ops.registry import op


@op("NoOp", differentiable=False)
def no_op_kernel(k):
    return None


def no_op(name: str | None = None) -> Operation:
    return no_op_kernel(name=name)


def _as_op(x: Any) -> Operation:
    if hasattr(x, "_as_graph_element"):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"group/tuple expect Tensors or Operations, got {x!r}")


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that runs all `inputs` (their ops) and outputs nothing."""
    flat: list[Any] = []
    for x in inputs:
        flat.extend(x if isinstance(x, (list, builtins.tuple)) else [x])
    deps = []
    for x in flat:
        if x is not None and _as_op(x) not in deps:
            deps.append(_as_op(x))
    with name_scope(name, "group_deps", deps) as scope:
        with control_dependencies(deps):
            return no_op(name=scope)


def tuple(tensors: Any, name: str | None = None, control_inputs: Any = None) -> list[Any]:  # noqa: A001
    """Identities of `tensors` that are only available once all of them (and control_inputs) are."""
    with name_scope(name, "tuple", tensors) as scope:
        deps = [t for t in tensors if t is not None]
        if control_inputs:
            deps += list(control_inputs)
        gate = group(*deps)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with control_dependencies([gate]):
                out.append(identity(t) if isinstance(t, Tensor) else group(t))
        del scope
        return out


__all__ = ["no_op", "group", "tuple"]
