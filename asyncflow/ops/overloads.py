"""Python operators on Tensors (`+ - * / // % ** @`, unary `-`, `abs`, `< <= > >=`, `& | ~`, `[]`).

Each operator builds the op TF1 builds, with TF1's names: `x + y` is an `AddV2` named `add`
(its converted constant `add/y`), `-x` a `Neg` named `Neg`, `x[1:]` a `StridedSlice` named
`strided_slice`. Attached to `Tensor` once, when asyncflow is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.registry import OPS, convert_to_tensor


def _by_type(op_type: str) -> Callable[..., Tensor]:
    return lambda x, y, name: OPS[op_type](x, y, name=name)


def _binary(op_name: str, build: Callable[..., Tensor]) -> tuple[Callable, Callable]:
    def forward(x: Tensor, y: Any) -> Any:
        with name_scope(None, op_name, [x, y]) as scope:
            try:
                y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
            except (TypeError, ValueError):
                return NotImplemented if not isinstance(y, Tensor) and not hasattr(y, "_as_graph_element") \
                    else _raise_mismatch(op_name, x, y)
            return build(x, y, scope)

    def reverse(y: Tensor, x: Any) -> Any:
        with name_scope(None, op_name, [x, y]) as scope:
            try:
                x = convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            except (TypeError, ValueError):
                return NotImplemented
            return build(x, y, scope)

    return forward, reverse


def _raise_mismatch(op_name: str, x: Tensor, y: Any) -> Any:
    y = convert_to_tensor(y)
    raise TypeError(f"{op_name}: operands have different dtypes: {x.name} is {x.dtype.base_dtype.name}, "
                    f"{y.name} is {y.dtype.base_dtype.name}; cast one with af.cast")


_BINARY = {
    "add": ("__add__", "__radd__", lambda x, y, name: OPS["Add" if x.dtype.base_dtype == dtypes.string
                                                          else "AddV2"](x, y, name=name)),
    "sub": ("__sub__", "__rsub__", _by_type("Sub")),
    "mul": ("__mul__", "__rmul__", _by_type("Mul")),
    "truediv": ("__truediv__", "__rtruediv__", lambda x, y, name: math.truediv(x, y, name=name)),
    "floordiv": ("__floordiv__", "__rfloordiv__", lambda x, y, name: math.floordiv(x, y, name=name)),
    "mod": ("__mod__", "__rmod__", _by_type("FloorMod")),
    "pow": ("__pow__", "__rpow__", _by_type("Pow")),
    "matmul": ("__matmul__", "__rmatmul__", lambda x, y, name: math.matmul(x, y, name=name)),
    "and": ("__and__", "__rand__", lambda x, y, name: math.logical_and(x, y, name=name)),
    "or": ("__or__", "__ror__", lambda x, y, name: math.logical_or(x, y, name=name)),
    "xor": ("__xor__", "__rxor__", lambda x, y, name: math.logical_xor(x, y, name=name)),
}

_COMPARISONS = {"__lt__": "Less", "__le__": "LessEqual", "__gt__": "Greater", "__ge__": "GreaterEqual"}


def _comparison(op_type: str) -> Callable[[Tensor, Any], Tensor]:
    def compare(x: Tensor, y: Any) -> Tensor:
        return OPS[op_type](x, y)

    return compare


def attach() -> None:
    for op_name, (fwd, rev, build) in _BINARY.items():
        forward, reverse = _binary(op_name, build)
        setattr(Tensor, fwd, forward)
        setattr(Tensor, rev, reverse)
    for method, op_type in _COMPARISONS.items():
        setattr(Tensor, method, _comparison(op_type))
    Tensor.__neg__ = lambda x: OPS["Neg"](x)
    Tensor.__abs__ = lambda x: math.abs(x)
    Tensor.__invert__ = lambda x: math.logical_not(x)
    Tensor.__getitem__ = lambda x, spec: array._slice_helper(x, spec)
