"""What gradient rules share: summing a broadcast gradient back to an input's shape.

Broadcasting is undone in one place. `unbroadcast(grad, x)` returns `grad` summed over the axes
along which `x` was broadcast, reshaped to `x`'s shape; with static shapes it builds only what
is needed (nothing when the shapes already agree), otherwise it uses `BroadcastGradientArgs`
(TF's op: the reduction axes for each of two broadcast shapes) at run time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow.graph import Tensor
from asyncflow.ops.registry import INDEX, BuildContext, op
from asyncflow.shapes import TensorShape


def _bga_shape(b: BuildContext) -> list[TensorShape]:
    return [TensorShape([None]), TensorShape([None])]


@op("BroadcastGradientArgs", inputs="s0: T, s1: T", outputs="r0: T, r1: T", types={"T": INDEX},
    shape=_bga_shape, differentiable=False)
def broadcast_gradient_args(k, s0, s1):
    s0, s1 = [int(d) for d in np.reshape(s0, -1)], [int(d) for d in np.reshape(s1, -1)]
    n = max(len(s0), len(s1))
    a, b = [1] * (n - len(s0)) + s0, [1] * (n - len(s1)) + s1
    r0, r1 = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"Incompatible shapes: {s0} vs. {s1}")
        if a == b:  # TF's BCast: identical shapes reduce nothing
            break
        if x == 1:  # a size-1 axis is summed (a no-op when both are 1, but TF lists it, so do we)
            r0.append(i)
        if y == 1:
            r1.append(i)
    dtype = k.out_dtypes[0]
    return np.array(r0, dtype=dtype), np.array(r1, dtype=dtype)


def _static_axes(grad_shape: TensorShape, x_shape: TensorShape) -> list[int] | None:
    """Axes to sum when both shapes are known; None when only run time can tell."""
    if not grad_shape.is_fully_defined() or not x_shape.is_fully_defined():
        return None
    g, x = grad_shape.as_list(), x_shape.as_list()
    lead = len(g) - len(x)
    if lead < 0:
        return None
    return list(range(lead)) + [lead + i for i, d in enumerate(x) if d == 1 and g[lead + i] != 1]


def unbroadcast(grad: Tensor, x: Tensor) -> Tensor:
    """`grad` (of a broadcast result) summed back to the shape of the input `x`."""
    from asyncflow.ops.array import reshape, shape
    from asyncflow.ops.math import reduce_sum

    if grad.shape.is_fully_defined() and grad.shape == x.shape:
        return grad
    axes = _static_axes(grad.shape, x.shape)
    if axes is not None:
        summed = reduce_sum(grad, axes) if axes else grad
        return reshape(summed, x.shape.as_list()) if summed.shape != x.shape else summed
    r0, _ = broadcast_gradient_args(shape(x), shape(grad))
    return reshape(reduce_sum(grad, r0), shape(x))


def unbroadcast_pair(grad_x: Tensor, grad_y: Tensor, x: Tensor, y: Tensor) -> list[Any]:
    return [unbroadcast(grad_x, x), unbroadcast(grad_y, y)]
