"""Padding: Pad, PadV2, MirrorPad and MirrorPadGrad, with TF1's `af.pad`.

Part of the array family (re-exported by `array_manip` and `array`). `af.pad` picks the op as TF1
does: Pad for zeros, PadV2 for another constant, MirrorPad for REFLECT/SYMMETRIC. MirrorPadGrad
is TF's op for MirrorPad's gradient: each padded entry's gradient added onto the entry it copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.ops.array import check_rank, rank, reshape, shape, stack
from asyncflow.ops.registry import ALL_TYPES, INDEX, NUMERIC, REQUIRED, BuildContext, op
from asyncflow.shapes import TensorShape, unknown_shape


# -- pad ------------------------------------------------------------------------------------------------
def _pad_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 2, "paddings")
    x, p = b.shape(0), b.shape(1)
    if p.ndims == 2 and p[1].value not in (None, 2):
        raise b.error(f"paddings must have 2 columns, got shape {p}")
    rows = p[0].value if p.ndims == 2 else None
    if x.ndims is not None and rows is not None and rows != x.ndims:
        raise b.error(f"paddings must have one row per input dimension: input shape {x}, paddings shape {p}")
    rank = x.ndims if x.ndims is not None else rows
    if rank is None:
        return unknown_shape()
    paddings = b.const(1)
    if paddings is None:
        return unknown_shape(rank)
    if (paddings < 0).any():
        raise b.error(f"Paddings must be non-negative, got {paddings.tolist()}")
    x = x if x.ndims is not None else unknown_shape(rank)
    return TensorShape([d + int(lo) + int(hi) for d, (lo, hi) in zip(x.dims, paddings)])


def _paddings(k: Any, x: np.ndarray, paddings: Any) -> list[tuple[int, int]]:
    p = np.asarray(paddings)
    if p.shape != (x.ndim, 2):
        raise ValueError(f"{k.op_type} '{k.name}': The first dimension of paddings must be the rank of inputs "
                         f"and it must have 2 columns: paddings shape {list(p.shape)}, input shape {list(x.shape)}")
    for lo, hi in p.tolist():
        if lo < 0 or hi < 0:
            raise ValueError(f"{k.op_type} '{k.name}': Paddings must be non-negative: {lo} {hi}")
    return [(int(lo), int(hi)) for lo, hi in p.tolist()]


def _pad_constant(x: np.ndarray, paddings: list[tuple[int, int]], value: Any, dtype: Any) -> np.ndarray:
    out = np.full([d + lo + hi for d, (lo, hi) in zip(x.shape, paddings)], value, dtype=dtype)
    out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, paddings))] = x
    return out


@op("Pad", inputs="input: T, paddings: Tpaddings", outputs="output: T",
    types={"T": ALL_TYPES, "Tpaddings": INDEX}, type_defaults={"Tpaddings": dtypes.int32}, shape=_pad_shape)
def pad_op(k, x, paddings):
    x = np.asarray(x)
    zero = b"" if k.out_dtypes[0] == np.object_ else 0
    return _pad_constant(x, _paddings(k, x, paddings), zero, k.out_dtypes[0])


@pad_op.gradient
def _pad_grad(op: Any, grad: Any) -> list[Any]:
    """The input's window cut out of the gradient (TF's _PadGrad); PadV2's constant_values gets None, as TF."""
    from asyncflow.ops.array_slice import slice as slice_

    x, paddings = op.inputs[0], op.inputs[1]
    begin = reshape(slice_(paddings, [0, 0], stack([rank(x), 1])), [-1])
    x_grad = slice_(grad, begin, shape(x, out_type=begin.dtype.base_dtype))
    return [x_grad, None] + [None] * (len(op.inputs) - 2)


@op("PadV2", inputs="input: T, paddings: Tpaddings, constant_values: T", outputs="output: T",
    types={"T": ALL_TYPES, "Tpaddings": INDEX}, type_defaults={"Tpaddings": dtypes.int32}, shape=_pad_shape)
def pad_v2_op(k, x, paddings, value):
    x = np.asarray(x)
    if np.ndim(value) != 0:
        raise ValueError(f"PadV2 '{k.name}': constant_values must be a scalar, got shape {list(np.shape(value))}")
    return _pad_constant(x, _paddings(k, x, paddings), value, k.out_dtypes[0])


pad_v2_op.gradient(_pad_grad)


@op("MirrorPad", inputs="input: T, paddings: Tpaddings", outputs="output: T",
    types={"T": ALL_TYPES, "Tpaddings": INDEX}, type_defaults={"Tpaddings": dtypes.int32},
    attrs={"mode": "REFLECT"}, shape=_pad_shape)
def mirror_pad_op(k, x, paddings):
    x = np.asarray(x)
    pads = _paddings(k, x, paddings)
    reflect = k.mode == "REFLECT"
    for dim, (lo, hi) in zip(x.shape, pads):
        if reflect and (lo >= dim or hi >= dim):
            raise ValueError(f"MirrorPad '{k.name}': paddings must be less than the dimension size: {lo}, {hi} "
                             f"not less than {dim}")
        if not reflect and (lo > dim or hi > dim):
            raise ValueError(f"MirrorPad '{k.name}': paddings must be no greater than the dimension size: {lo}, "
                             f"{hi} greater than {dim}")
    return np.pad(x, pads, mode="reflect" if reflect else "symmetric")


@mirror_pad_op.gradient
def _mirror_pad_grad(op: Any, grad: Any) -> list[Any]:
    return [mirror_pad_grad_op(grad, op.inputs[1], mode=op.get_attr("mode")), None]


def _mirror_pad_grad_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 2, "paddings")
    x, paddings = b.shape(0), b.const(1)
    if x.ndims is None or paddings is None:
        return unknown_shape(x.ndims)
    if paddings.shape != (x.ndims, 2):
        raise b.error(f"paddings must have shape [{x.ndims}, 2], got {list(paddings.shape)} (input shape {x})")
    return TensorShape([d - int(lo) - int(hi) for d, (lo, hi) in zip(x.dims, paddings)])


@op("MirrorPadGrad", inputs="input: T, paddings: Tpaddings", outputs="output: T",
    types={"T": NUMERIC, "Tpaddings": INDEX}, type_defaults={"Tpaddings": dtypes.int32}, attrs={"mode": REQUIRED},
    shape=_mirror_pad_grad_shape)
def mirror_pad_grad_op(k, grad, paddings):
    """MirrorPad's gradient: each padded entry's gradient added onto the input entry it mirrors."""
    grad = np.asarray(grad)
    pads = _paddings(k, grad, paddings)
    reflect = k.mode == "REFLECT"
    out_shape = [d - lo - hi for d, (lo, hi) in zip(grad.shape, pads)]
    for dim, (lo, hi) in zip(grad.shape, pads):
        if lo + hi >= dim:
            raise ValueError(f"MirrorPadGrad '{k.name}': Total paddings must be less than the input dimension size: "
                             f"{lo + hi} was not less than {dim}")
        n = dim - lo - hi
        if (reflect and (lo >= n or hi >= n)) or lo > n or hi > n:
            raise ValueError(f"MirrorPadGrad '{k.name}': paddings {lo}, {hi} do not fit a {k.mode} padding of an "
                             f"input dimension of size {n} (gradient shape {list(grad.shape)})")
    # Pad the input's flat positions the same way: each gradient entry learns which input entry it came from.
    source = np.pad(np.arange(int(np.prod(out_shape))).reshape(out_shape), pads,
                    mode="reflect" if reflect else "symmetric")
    out = np.zeros(int(np.prod(out_shape)), dtype=k.out_dtypes[0])
    np.add.at(out, source.reshape(-1), grad.reshape(-1))
    return out.reshape(out_shape)


@mirror_pad_grad_op.gradient
def _mirror_pad_grad_grad(op: Any, grad: Any) -> list[Any]:
    return [mirror_pad_op(grad, op.inputs[1], mode=op.get_attr("mode")), None]


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None,
        constant_values: Any = 0) -> Tensor:
    """`af.pad`: Pad (zeros), PadV2 (another constant) or MirrorPad (REFLECT, SYMMETRIC), as TF1 picks."""
    mode = mode.upper()
    if mode == "CONSTANT":
        is_zero = not isinstance(constant_values, Tensor) and np.ndim(constant_values) == 0 and \
            constant_values == np.zeros_like(constant_values)
        if is_zero:
            return pad_op(tensor, paddings, name=name)
        return pad_v2_op(tensor, paddings, constant_values, name=name)
    if mode in ("REFLECT", "SYMMETRIC"):
        return mirror_pad_op(tensor, paddings, mode=mode, name=name)
    raise ValueError(f'Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or "SYMMETRIC". '
                     f"Received `mode` = {mode}")


__all__ = ["pad"]
