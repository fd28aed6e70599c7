"""Array ops that add, remove or broadcast dimensions: ExpandDims, Squeeze, BroadcastTo.

`af.expand_dims`, `af.squeeze` and `af.broadcast_to` with TF1's arguments (`dim` and
`squeeze_dims` are TF1's deprecated aliases). Static shapes follow TF's shape functions: an
ExpandDims whose axis is not constant has an unknown shape, a Squeeze without axes of an input
with an unknown dimension too (that dimension may or may not be 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.ops.array import check_rank, fold_ops, reshape, shape
from asyncflow.ops.grad_util import unbroadcast
from asyncflow.ops.registry import ALL_TYPES, INDEX, BuildContext, op
from asyncflow.ops.shape_fns import broadcast_shapes
from asyncflow.shapes import TensorShape, unknown_shape


# -- adding and removing size-1 dimensions ---------------------------------------------------------------
def _expand_dims_shape(b: BuildContext) -> TensorShape:
    x = b.shape(0)
    if b.shape(1).num_elements() not in (None, 1):
        raise b.error(f"'dim' must be a tensor with a single value, got shape {b.shape(1)}")
    dim = b.const(1)
    if x.ndims is None or dim is None:
        return unknown_shape()  # as TF, even when the rank is known
    axis = int(np.reshape(dim, -1)[0])
    if not -x.ndims - 1 <= axis <= x.ndims:
        raise b.error(f"dim {axis} not in the interval [{-x.ndims - 1}, {x.ndims}] for input shape {x}")
    dims = x.dims
    dims.insert(axis % (x.ndims + 1), 1)
    return TensorShape(dims)


@op("ExpandDims", inputs="input: T, dim: Tdim", outputs="output: T",
    types={"T": ALL_TYPES, "Tdim": INDEX}, type_defaults={"Tdim": dtypes.int32}, shape=_expand_dims_shape)
def expand_dims_op(k, x, dim):
    if np.size(dim) != 1:
        raise ValueError(f"ExpandDims '{k.name}': 'dim' must be a tensor with a single value, got shape "
                         f"{list(np.shape(dim))}")
    axis, ndim = int(np.reshape(dim, -1)[0]), np.ndim(x)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"ExpandDims '{k.name}': Tried to expand dim index {axis} for tensor with {ndim} "
                         f"dimensions.")
    return np.expand_dims(x, axis)


@expand_dims_op.gradient
def _expand_dims_grad(op: Any, grad: Any) -> list[Any]:
    return [reshape(grad, shape(op.inputs[0])), None]


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:  # noqa: A002
    """`af.expand_dims`: inserts a size-1 dimension at `axis` (`dim` is TF1's deprecated alias)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return expand_dims_op(input, axis, name=name)


def _squeeze_shape(b: BuildContext) -> TensorShape:
    x = b.shape(0)
    if x.ndims is None:
        return unknown_shape()
    rank, wanted = x.ndims, b.attrs["squeeze_dims"]
    drop = set()
    for j, axis in enumerate(wanted):
        if not -rank <= axis < rank:
            raise b.error(f"squeeze_dims[{j}] not in [{-rank},{rank}) for input shape {x}")
        drop.add(axis % rank)
    out = []
    for i, d in enumerate(x.dims):
        if wanted:
            if i in drop and d.value not in (None, 1):
                raise b.error(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d.value} "
                              f"(input shape {x})")
            if i not in drop:
                out.append(d)
        elif d.value is None:
            return unknown_shape()  # it may or may not be 1
        elif d.value != 1:
            out.append(d)
    return TensorShape(out)


@op("Squeeze", inputs="input: T", outputs="output: T", types={"T": ALL_TYPES}, attrs={"squeeze_dims": []},
    shape=_squeeze_shape)
def squeeze_op(k, x):
    shape, rank = np.shape(x), np.ndim(x)
    if not k.squeeze_dims:
        return np.reshape(x, [d for d in shape if d != 1])
    drop = set()
    for axis in k.squeeze_dims:
        if not -rank <= axis < rank:
            raise ValueError(f"Squeeze '{k.name}': Tried to squeeze dim index {axis} for tensor with {rank} "
                             f"dimensions.")
        if shape[axis] != 1:
            raise ValueError(f"Squeeze '{k.name}': Can not squeeze dim[{axis % rank}], expected a dimension "
                             f"of 1, got {shape[axis]}")
        drop.add(axis % rank)
    return np.reshape(x, [d for i, d in enumerate(shape) if i not in drop])


@squeeze_op.gradient
def _squeeze_grad(op: Any, grad: Any) -> list[Tensor]:
    return [reshape(grad, shape(op.inputs[0]))]


def squeeze(input: Any, axis: Any = None, name: str | None = None, squeeze_dims: Any = None) -> Tensor:  # noqa: A002
    """`af.squeeze`: removes size-1 dimensions (all of them, or those listed in `axis`)."""
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'.")
    axis = squeeze_dims if axis is None else axis
    if axis is None:
        axis = []
    elif np.isscalar(axis):
        axis = [axis]
    return squeeze_op(input, squeeze_dims=[int(a) for a in axis], name=name)


# -- broadcast_to ---------------------------------------------------------------------------------------
def _broadcast_to_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 1, "shape")
    out, x = b.const_shape(1), b.shape(0)
    if out.ndims is None or x.ndims is None:
        return out
    if x.ndims > out.ndims:
        raise b.error(f"Rank of input ({x.ndims}) must be no greater than rank of output shape "
                      f"({out.ndims}): input shape {x}, output shape {out}")
    dims = out.as_list()
    for i, d in enumerate(x.as_list()):
        j = out.ndims - x.ndims + i
        if d is None or d == 1:
            continue
        if dims[j] is None:
            dims[j] = d
        elif dims[j] != d:
            raise b.error(f"Dimensions must be equal, but are {dims[j]} and {d}: cannot broadcast shape {x} "
                          f"to {out}")
    return TensorShape(dims)


@op("BroadcastTo", inputs="input: T, shape: Tidx", outputs="output: T",
    types={"T": ALL_TYPES, "Tidx": INDEX}, type_defaults={"Tidx": dtypes.int32}, shape=_broadcast_to_shape)
def broadcast_to_op(k, x, target):
    target = [int(d) for d in target]
    try:
        broadcast_shapes(TensorShape(np.shape(x)), TensorShape(target))
        return np.broadcast_to(x, target)
    except ValueError:
        raise ValueError(f"BroadcastTo '{k.name}': Unable to broadcast tensor of shape {list(np.shape(x))} to "
                         f"tensor of shape {target}") from None


@broadcast_to_op.gradient
def _broadcast_to_grad(op: Any, grad: Any) -> list[Any]:
    return [unbroadcast(grad, op.inputs[0]), None]  # summed over the broadcast axes, as TF's BroadcastGradientArgs


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return broadcast_to_op(input, shape, name=name)


fold_ops("ExpandDims", "Squeeze", "BroadcastTo")

__all__ = ["expand_dims", "squeeze", "broadcast_to"]
