"""`py_func` and `numpy_function`: a Python function of this process as an op, as TF1.

The function is kept in its graph's own table (`Graph._py_funcs`) under a token, and the op holds
only the token. So the callable never travels: a graph holding one is refused by the remote
session (`OpDef.in_process_only`), and a graph imported from a document (`import_graph_def`, a
`.meta` file) has an empty table, so its `PyFunc` ops fail when run instead of resolving a callable
from data. The function runs on the scheduler's thread with the inputs as numpy arrays (strings as
`bytes` objects) and returns an array or a list of arrays, converted to `Tout`; its exceptions map
onto TF's classes as TF1's do (ValueError/TypeError -> InvalidArgumentError, StopIteration and
IndexError -> OutOfRangeError, NotImplementedError -> UnimplementedError, others -> UnknownError).
As in TF1, the ops have no gradient.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Graph, get_default_graph
from asyncflow.ops.registry import ALL_TYPES, TypeList, apply_op, convert_to_tensor, op
from asyncflow.shapes import unknown_shape

_tokens = itertools.count()

_ERRORS: list[tuple[type[BaseException], Any]] = [
    (StopIteration, errors.OutOfRangeError),
    (IndexError, errors.OutOfRangeError),
    (NotImplementedError, errors.UnimplementedError),
    (MemoryError, errors.ResourceExhaustedError),
    (ValueError, errors.InvalidArgumentError),
    (TypeError, errors.InvalidArgumentError),
]


def _function_table(graph: Graph) -> dict[str, Callable[..., Any]]:
    table = getattr(graph, "_py_funcs", None)
    if table is None:
        table = graph._py_funcs = {}
    return table


def _as_output(value: Any, dtype: dtypes.DType, k: Any, i: int) -> np.ndarray:
    if dtype.is_string:
        arr = np.asarray(value, dtype=object)
        return np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(arr) \
            if arr.ndim else np.array(arr[()].encode() if isinstance(arr[()], str) else arr[()], dtype=object)
    arr = np.asarray(value)
    want = np.dtype(dtype.as_numpy_dtype)
    if arr.dtype != want:
        if not np.can_cast(arr.dtype, want, casting="same_kind") and not (arr.ndim == 0 or arr.dtype == object):
            raise errors.InvalidArgumentError(
                None, k.op, f"{k.op_type} '{k.name}': output {i} of the function is {arr.dtype}, but Tout says "
                            f"{dtype.name}")
        arr = arr.astype(want)
    return arr


async def _call(k, *inputs):
    func = getattr(k.op.graph, "_py_funcs", {}).get(k.token)
    if func is None:
        raise errors.FailedPreconditionError(
            None, k.op, f"{k.op_type} '{k.name}': no Python function is registered for token '{k.token}' in this "
                        "graph (py_func graphs run only in the process, and the graph object, that built them)")
    try:
        result = func(*inputs)
    except Exception as exc:  # noqa: BLE001 - every failure of user code becomes a TF error
        cls = next((c for t, c in _ERRORS if isinstance(exc, t)), errors.UnknownError)
        raise cls(None, k.op, f"{k.op_type} '{k.name}': {type(exc).__name__}: {exc}") from exc
    touts = list(k.Tout)
    if not touts:
        return None
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(touts):
        raise errors.InvalidArgumentError(
            None, k.op, f"{k.op_type} '{k.name}': the function returned {len(values)} values, Tout has "
                        f"{len(touts)}")
    return tuple(_as_output(v, dt, k, i) for i, (v, dt) in enumerate(zip(values, touts)))


def _unknown_shapes(b: Any) -> list:
    return [unknown_shape() for _ in b.attrs["Tout"]]


_SIGNATURE = dict(inputs="input: Tin", outputs="output: Tout",
                  types={"Tin": TypeList(ALL_TYPES), "Tout": TypeList(ALL_TYPES)}, attrs={"token": ""},
                  shape=_unknown_shapes, differentiable=False, in_process_only=True)
PyFunc = op("PyFunc", stateful=True, **_SIGNATURE)(_call)
PyFuncStateless = op("PyFuncStateless", **_SIGNATURE)(_call)


def py_func(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True,
            name: str | None = None) -> Any:
    """`tf.py_func`: `func(*arrays)` as an op of this process; a tensor, or a list when `Tout` is a list."""
    if not callable(func):
        raise TypeError(f"py_func: func must be callable, got {type(func).__name__}")
    single = not isinstance(Tout, (list, tuple))
    touts = [dtypes.as_dtype(t).base_dtype for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in inp]
    graph = get_default_graph()
    token = f"pyfunc_{next(_tokens)}"
    _function_table(graph)[token] = func
    made = apply_op(PyFunc if stateful else PyFuncStateless, [inputs], {"Tout": touts, "token": token}, name)
    if not touts:
        return made  # TF1: the Operation, when there is nothing to return
    return made.outputs[0] if single else list(made.outputs)


def numpy_function(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, name: str | None = None) -> Any:
    """`tf.numpy_function`: `py_func` (stateful, as TF1)."""
    return py_func(func, inp, Tout, stateful=True, name=name)


__all__ = ["py_func", "numpy_function"]
