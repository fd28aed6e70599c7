"""The global step, as tf.train names it: an int64 scalar variable `global_step`, not trainable, in the
GLOBAL_STEP and GLOBAL_VARIABLES collections (`get_or_create_global_step`, `get_global_step`, ...)."""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Graph, GraphKeys, Tensor, get_default_graph
from asyncflow.init_ops import zeros_initializer
from asyncflow.variable_scope import get_variable
from asyncflow.variables import Variable


def get_global_step(graph: Graph | None = None) -> Any:
    """The global step variable (or the tensor `global_step:0`), or None when the graph has none."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        return None  # TF logs "Multiple tensors in global_step collection." and gives up too
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """Creates `global_step` (int64, zero) in `graph`; ValueError if it already has one."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(""):  # as TF1: get_variable, so the variable scope names it
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64, initializer=zeros_initializer(),
                            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Graph | None = None) -> Any:
    """The graph's global step, created first when it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step


def assert_global_step(global_step_tensor: Any) -> None:
    """TypeError unless `global_step_tensor` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f"Existing \"global_step\" must be a Variable or Tensor: {global_step_tensor}.")
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {global_step_tensor.dtype}")
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f"Existing \"global_step\" is not scalar: {shape}")


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The global step's current value, as a Python int."""
    return int(sess.run(global_step_tensor))


__all__ = ["get_global_step", "create_global_step", "get_or_create_global_step", "assert_global_step",
           "global_step"]
