"""`af.assert_variables_initialized`, TF1's deprecated check that variables hold values: one `Rank` op
per variable, reading it, so running the result fails with FailedPreconditionError naming the first
uninitialized variable. Kept apart from variables.py, which it only reads.
"""

from __future__ import annotations

from typing import Any

from asyncflow.graph import colocate_with, get_default_graph
from asyncflow.ops.array import rank_op, stack
from asyncflow.variables import global_variables, local_variables


def assert_variables_initialized(var_list: Any = None) -> Any:
    """`af.assert_variables_initialized`: an op that fails when run if any of `var_list` (default: the global
    and local variables, else every VariableV2 of the graph) is uninitialized; None when there are none."""
    if var_list is None:
        var_list = global_variables() + local_variables()
        if not var_list:
            var_list = [op.outputs[0] for op in get_default_graph().get_operations() if op.type == "VariableV2"]
    if not var_list:
        return None
    ranks = []
    for var in var_list:
        with colocate_with(var.op):
            ranks.append(rank_op(var.value() if hasattr(var, "value") else var))
    return ranks[0] if len(ranks) == 1 else stack(ranks)


__all__ = ["assert_variables_initialized"]
