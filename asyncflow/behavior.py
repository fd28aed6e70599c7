"""TF's switches between v1 and v2 behaviour, as `tf.compat.v1` offers them.

asyncflow always behaves as `tf.compat.v1` after `disable_v2_behavior()`: graph mode, reference
variables, v1 control flow. The `disable_*` switches are therefore accepted no-ops, so programs
that call them first run unchanged; the `enable_*` switches that would leave that mode raise,
since a program that asks for eager execution would not get what it asked for.
"""

from __future__ import annotations


def disable_v2_behavior() -> None:
    """Accepted: asyncflow is already TF1 (graph mode, reference variables, v1 control flow)."""


def disable_eager_execution() -> None:
    """Accepted: asyncflow always builds graphs."""


def disable_resource_variables() -> None:
    """Accepted: asyncflow's variables are TF1's reference variables."""


def disable_control_flow_v2() -> None:
    """Accepted: `cond` and `while_loop` build TF1's Switch/Merge/Enter/Exit graphs."""


def disable_tensor_equality() -> None:
    """Accepted: tensors compare by identity and are hashable, as TF1."""


def disable_v2_tensorshape() -> None:
    """Accepted: `TensorShape` dimensions are `Dimension` objects, as TF1."""


def executing_eagerly() -> bool:
    """Always False: asyncflow builds graphs and runs them in a Session."""
    return False


def _not_in_asyncflow(what: str) -> None:
    raise NotImplementedError(
        f"{what}: asyncflow implements TF1's graph mode only (tf.compat.v1 with v2 behaviour disabled); "
        "build a graph and run it in af.Session()")


def enable_eager_execution(config: object = None, device_policy: object = None,
                           execution_mode: object = None) -> None:
    """Raises: eager execution is not part of asyncflow."""
    _not_in_asyncflow("enable_eager_execution")


def enable_v2_behavior() -> None:
    """Raises: TF2 behaviour (eager, resource variables) is not part of asyncflow."""
    _not_in_asyncflow("enable_v2_behavior")


__all__ = [
    "disable_v2_behavior", "disable_eager_execution", "disable_resource_variables", "disable_control_flow_v2",
    "disable_tensor_equality", "disable_v2_tensorshape", "executing_eagerly", "enable_eager_execution",
    "enable_v2_behavior",
]
