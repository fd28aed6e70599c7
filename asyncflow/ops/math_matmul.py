"""MatMul and BatchMatMulV2, the public `matmul`, and their gradients.

Re-exported by `asyncflow.ops.math` (so `af.matmul` comes from there). Semantics follow TF's CPU
kernels: float16/bfloat16 products accumulate in float32; matmul of rank > 2 (or unknown rank) is
BatchMatMulV2 with batch broadcasting, whose gradient sums each input's part back over the batch
axes it was broadcast along. Static shape errors name the op and both shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.grad_util import unbroadcast
from asyncflow.ops.kernel_util import as_out
from asyncflow.ops.math import Conj
from asyncflow.ops.math_reduce import _LOW_PRECISION, _fmt
from asyncflow.ops.registry import BuildContext, convert_to_tensor, op
from asyncflow.ops.shape_fns import broadcast_shapes
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

MATMUL_TYPES = dtypes.FLOATING + (dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32,
                                  dtypes.uint64) + dtypes.COMPLEX
BATCH_MATMUL_TYPES = MATMUL_TYPES + (dtypes.int16,)


# -- matmul ----------------------------------------------------------------------------------------------
def _inner_mismatch(b: BuildContext, a: TensorShape, c: TensorShape, ka: Dimension, kb: Dimension,
                    flags: str) -> ValueError:
    return b.error(f"inner dimensions differ, {_fmt(a)} x {_fmt(c)}{flags}: Dimensions must be equal, "
                   f"but are {ka.value} and {kb.value}")


def _matmul_shape(b: BuildContext) -> TensorShape:
    a, c = b.shape(0), b.shape(1)
    for s, arg in ((a, "a"), (c, "b")):
        if s.ndims is not None and s.ndims != 2:
            raise b.error(f"Shape must be rank 2 but is rank {s.ndims} for '{arg}' "
                          f"(input shapes: {_fmt(a)}, {_fmt(c)})")
    ta, tb = b.attrs["transpose_a"], b.attrs["transpose_b"]
    a2, c2 = a.dims or [Dimension(None)] * 2, c.dims or [Dimension(None)] * 2
    m, ka = (a2[1], a2[0]) if ta else (a2[0], a2[1])
    kb, n = (c2[1], c2[0]) if tb else (c2[0], c2[1])
    if not ka.is_compatible_with(kb):
        flags = f" (transpose_a={ta}, transpose_b={tb})" if ta or tb else ""
        raise _inner_mismatch(b, a, c, ka, kb, flags)
    return TensorShape([m, n])


def _low_precision_matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype in _LOW_PRECISION:  # accumulate in float32, as TF's half/bfloat16 GEMM does
        return np.matmul(x.astype(np.float32), y.astype(np.float32))
    return np.matmul(x, y)


@op("MatMul", inputs="a: T, b: T", outputs="product: T", types={"T": MATMUL_TYPES},
    attrs={"transpose_a": False, "transpose_b": False}, shape=_matmul_shape)
def MatMul(k, a, b):
    if np.ndim(a) != 2 or np.ndim(b) != 2:
        raise ValueError(f"In[0] and In[1] must be matrices, got shapes {list(np.shape(a))} and "
                         f"{list(np.shape(b))}")
    x = a.T if k.transpose_a else a
    y = b.T if k.transpose_b else b
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: {list(b.shape)}")
    return as_out(_low_precision_matmul(x, y), k.out_dtypes[0])


@MatMul.gradient
def _matmul_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """TF's four cases: each input's gradient is one MatMul of grad with the other (conjugated) input."""
    t_a, t_b = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])
    if not t_a and not t_b:
        return [MatMul(grad, b, transpose_b=True), MatMul(a, grad, transpose_a=True)]
    if not t_a and t_b:
        return [MatMul(grad, b), MatMul(grad, a, transpose_a=True)]
    if t_a and not t_b:
        return [MatMul(b, grad, transpose_b=True), MatMul(a, grad)]
    return [MatMul(b, grad, transpose_a=True, transpose_b=True), MatMul(grad, a, transpose_a=True, transpose_b=True)]


def _batch_matmul_shape(b: BuildContext) -> TensorShape:
    x, y = b.shape(0), b.shape(1)
    for s, arg in ((x, "x"), (y, "y")):
        if s.ndims is not None and s.ndims < 2:
            raise b.error(f"Shape must be at least rank 2 but is rank {s.ndims} for '{arg}' "
                          f"(input shapes: {_fmt(x)}, {_fmt(y)})")
    if x.ndims is None or y.ndims is None:
        return unknown_shape()
    adj_x, adj_y = b.attrs["adj_x"], b.attrs["adj_y"]
    m, kx = (x[-1], x[-2]) if adj_x else (x[-2], x[-1])
    ky, n = (y[-1], y[-2]) if adj_y else (y[-2], y[-1])
    if not kx.is_compatible_with(ky):
        flags = f" (adj_x={adj_x}, adj_y={adj_y})" if adj_x or adj_y else ""
        raise _inner_mismatch(b, x, y, kx, ky, flags)
    batch = broadcast_shapes(x[:-2], y[:-2], f"{b.op_type} '{b.name}': batch dimensions of {_fmt(x)} and "
                                             f"{_fmt(y)} do not broadcast: ")
    return batch.concatenate([m, n])


@op("BatchMatMulV2", inputs="x: T, y: T", outputs="output: T", types={"T": BATCH_MATMUL_TYPES},
    attrs={"adj_x": False, "adj_y": False}, shape=_batch_matmul_shape)
def BatchMatMulV2(k, x, y):
    if np.ndim(x) < 2 or np.ndim(y) < 2:
        raise ValueError(f"In[0] and In[1] must have rank >= 2, got shapes {list(np.shape(x))} and "
                         f"{list(np.shape(y))}")
    a = np.conj(np.swapaxes(x, -1, -2)) if k.adj_x else x
    c = np.conj(np.swapaxes(y, -1, -2)) if k.adj_y else y
    if a.shape[-1] != c.shape[-2]:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(x.shape)}, In[1]: {list(y.shape)}")
    try:
        np.broadcast_shapes(a.shape[:-2], c.shape[:-2])
    except ValueError:
        raise ValueError(f"In[0] and In[1] must have compatible batch dimensions: {list(x.shape)} vs. "
                         f"{list(y.shape)}") from None
    return as_out(_low_precision_matmul(a, c), k.out_dtypes[0])


@BatchMatMulV2.gradient
def _batch_matmul_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """TF's rule with adjoints, then each gradient summed over the batch axes its input was broadcast along."""
    x, y = op.inputs
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not adj_x and not adj_y:
        gx, gy = matmul(grad, y, adjoint_b=True), matmul(x, grad, adjoint_a=True)
    elif not adj_x:
        gx, gy = matmul(grad, y), matmul(grad, x, adjoint_a=True)
    elif not adj_y:
        gx, gy = matmul(y, grad, adjoint_b=True), matmul(x, grad)
    else:
        gx, gy = matmul(y, grad, adjoint_a=True, adjoint_b=True), matmul(grad, x, adjoint_a=True, adjoint_b=True)
    return [unbroadcast(gx, x), unbroadcast(gy, y)]  # the matrix axes agree, so only batch axes are summed


def _conj(x: Tensor) -> Tensor:
    return Conj(x) if x.dtype.is_complex else x  # TF conjugates before transposing; a no-op for reals


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: str | None = None) -> Tensor:
    """`af.matmul`: MatMul for two matrices, BatchMatMulV2 (with batch broadcasting) for rank > 2.

    `a_is_sparse`/`b_is_sparse` are accepted as hints and ignored (TF may pick SparseMatMul).
    """
    with name_scope(name, "MatMul", [a, b]) as scope:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of `transpose_a` and `adjoint_a` can be True. "
                             f"Received `transpose_a`={transpose_a}, `adjoint_a`={adjoint_a}.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of `transpose_b` and `adjoint_b` can be True. "
                             f"Received `transpose_b`={transpose_b}, `adjoint_b`={adjoint_b}.")
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        batched = a.shape.ndims is None or a.shape.ndims > 2 or b.shape.ndims is None or b.shape.ndims > 2
        if batched:
            if transpose_a:
                a, adjoint_a = _conj(a), True
            if transpose_b:
                b, adjoint_b = _conj(b), True
            return BatchMatMulV2(a, b, adj_x=bool(adjoint_a), adj_y=bool(adjoint_b), name=scope)
        if adjoint_a:
            a, transpose_a = _conj(a), True
        if adjoint_b:
            b, transpose_b = _conj(b), True
        return MatMul(a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b), name=scope)


__all__ = ["matmul"]
