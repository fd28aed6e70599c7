"""`af.py_function`: TF's EagerPyFunc in a graph, in process only (the machinery of script_ops.py).

TF hands the function EagerTensors; asyncflow hands it `EagerValue`s, numpy arrays that also answer
`.numpy()` (and `.shape`, `.dtype` as numpy does), which covers what graph-mode TF1 code does with
them. Results may be arrays, numbers, lists or objects with `.numpy()`. No gradient, as for py_func.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import get_default_graph
from asyncflow.ops.registry import apply_op, convert_to_tensor, op
from asyncflow.ops.script_ops import _SIGNATURE, _call, _function_table, _tokens

__all__ = ["py_function", "eager_py_func"]


class EagerValue(np.ndarray):
    """A numpy array standing in for an EagerTensor inside `af.py_function`."""

    def numpy(self) -> np.ndarray:
        return np.asarray(self)


EagerPyFunc = op("EagerPyFunc", stateful=True, **_SIGNATURE)(_call)


def _eager(func: Callable[..., Any]) -> Callable[..., Any]:
    def call(*arrays: Any) -> Any:
        result = func(*[np.asarray(a).view(EagerValue) for a in arrays])
        if isinstance(result, (list, tuple)):
            return [r.numpy() if hasattr(r, "numpy") else r for r in result]
        return result.numpy() if hasattr(result, "numpy") else result

    return call


def py_function(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, name: str | None = None) -> Any:
    """`af.py_function`: `func` called on the values of `inp` (as arrays with `.numpy()`) when the op runs."""
    if not callable(func):
        raise TypeError(f"py_function: func must be callable, got {type(func).__name__}")
    single = not isinstance(Tout, (list, tuple))
    touts = [dtypes.as_dtype(t).base_dtype for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in inp]
    token = f"pyfunc_{next(_tokens)}"
    _function_table(get_default_graph())[token] = _eager(func)
    made = apply_op(EagerPyFunc, [inputs], {"Tout": touts, "token": token}, name)
    if not touts:
        return made
    return made.outputs[0] if single else list(made.outputs)


eager_py_func = py_function
