"""Identity-like ops and small top-level helpers of TF1: `identity_n` (IdentityN), `ensure_shape`
(EnsureShape), `is_tensor`, `get_static_value`, `dimension_value`, `dimension_at_index`,
`broadcast_static_shape`, `arg_max`/`arg_min`, `newaxis`.

IdentityN passes a list of tensors through as one op, which is what `custom_gradient` overrides the
gradient of; EnsureShape checks a tensor's run-time shape against a (partial) shape and refines its
static shape.
"""

from __future__ import annotations

from typing import Any

from asyncflow import errors
from asyncflow.graph import Operation, Tensor
from asyncflow.ops.math_reduce import argmax, argmin
from asyncflow.ops.registry import ALL_TYPES, BuildContext, TypeList, constant_value, convert_to_tensor, op
from asyncflow.shapes import Dimension, TensorShape, as_shape

newaxis = None


@op("IdentityN", inputs="input: T", outputs="output: T", types={"T": TypeList(ALL_TYPES)},
    shape=lambda b: b.shapes(0))
def identity_n_op(k, *inputs):
    return tuple(inputs)


@identity_n_op.gradient
def _identity_n_grad(op_: Operation, *grads: Any) -> list[Any]:
    return list(grads)


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:  # noqa: A002 - TF's name
    """`tf.identity_n`: each of the tensors, passed through by one op."""
    tensors = [convert_to_tensor(t) for t in input]
    return identity_n_op(tensors, name=name)


def _ensure_shape_shape(b: BuildContext) -> list[TensorShape]:
    want = b.attrs["shape"]
    got = b.shape(0)
    if not got.is_compatible_with(want):
        raise b.error(f"Shape of tensor {b.inputs[0].name} {got} is not compatible with expected shape {want}.")
    return [got.merge_with(want)]


@op("EnsureShape", inputs="input: T", outputs="output: T", types={"T": ALL_TYPES}, attrs={"shape": None},
    shape=_ensure_shape_shape)
def ensure_shape_op(k, value):
    want = k.shape
    if not want.is_compatible_with(TensorShape(list(getattr(value, "shape", ())))):
        raise errors.InvalidArgumentError(
            None, k.op, f"Shape of tensor {k.op.inputs[0].name} {list(value.shape)} is not compatible with "
                        f"expected shape {want}.")
    return value


@ensure_shape_op.gradient
def _ensure_shape_grad(op_: Operation, grad: Any) -> Any:
    return grad


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.ensure_shape`: x, checked at run time against `shape` (None dims match anything)."""
    return ensure_shape_op(convert_to_tensor(x, name="x"), shape=as_shape(shape), name=name)


def is_tensor(x: Any) -> bool:
    """`tf.is_tensor`: a Tensor (or something that stands for one in a graph: a Variable, an IndexedSlices)."""
    return isinstance(x, Tensor) or hasattr(x, "_as_graph_element") or type(x).__name__ in (
        "IndexedSlices", "SparseTensor")


def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """`tf.get_static_value`: the value if it is known without running the graph, else None."""
    if not isinstance(tensor, Tensor):
        return tensor
    return constant_value(tensor)


def dimension_value(dimension: Any) -> int | None:
    """`tf.dimension_value`: a Dimension (or int, or None) as an int or None."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """`tf.dimension_at_index`: `shape`'s dimension `index` as a Dimension (unknown if the rank is)."""
    shape = as_shape(shape)
    if shape.ndims is None:
        return Dimension(None)
    return shape.dims[index] if isinstance(shape.dims[index], Dimension) else Dimension(shape.dims[index])


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """`tf.broadcast_static_shape`: the broadcast of two static shapes, or a ValueError."""
    x, y = as_shape(shape_x), as_shape(shape_y)
    if x.ndims is None or y.ndims is None:
        return TensorShape(None)
    a, b = x.as_list(), y.as_list()
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out: list[int | None] = []
    for da, db in zip(a, b):
        if da == 1 or da == db:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None or db is None:  # an unknown dimension broadcasts against a known one > 1
            out.append(db if da is None else da)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {x} and {y}")
    return TensorShape(out)


def arg_max(input: Any, dimension: Any, name: str | None = None, output_type: Any = None) -> Tensor:  # noqa: A002
    """`tf.arg_max`: TF1's older name of `argmax` (a required `dimension`)."""
    return argmax(input, dimension, name=name, **({"output_type": output_type} if output_type else {}))


def arg_min(input: Any, dimension: Any, name: str | None = None, output_type: Any = None) -> Tensor:  # noqa: A002
    """`tf.arg_min`: TF1's older name of `argmin`."""
    return argmin(input, dimension, name=name, **({"output_type": output_type} if output_type else {}))


__all__ = [
    "identity_n", "ensure_shape", "is_tensor", "get_static_value", "dimension_value", "dimension_at_index",
    "broadcast_static_shape", "arg_max", "arg_min", "newaxis",
]
