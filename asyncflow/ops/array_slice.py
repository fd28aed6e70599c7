"""Slicing: `Slice`, `StridedSlice`, and `tensor[...]` (TF's `_slice_helper`).

`_strided_slice_plan` is a port of TF's `ValidateStridedSliceOp`: it turns the sparse slice
spec (begin/end/strides plus the five masks) into one canonical (begin, end, stride, shrink)
per input dimension and the output shape. The shape function runs it with whatever is known
(unknown dims, begin/end not constant); the kernel runs it with everything known and slices
with plain Python slices, so static shapes and values follow one rule. StridedSliceGrad (TF's op
for StridedSlice's gradient) runs the same plan to write the gradient back through the slice.
"""

from __future__ import annotations

import builtins
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.array import check_rank, fold_by_kernel, fold_ops, ones_like, rank, reshape, shape, stack
from asyncflow.ops.registry import ALL_TYPES as _ALL
from asyncflow.ops.registry import (
    BuildContext,
    constant,
    constant_folder,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

_SLICE_INDEX = (dtypes.int16, dtypes.int32, dtypes.int64)


# -- Slice ------------------------------------------------------------------------------------------
def _slice_shape(b: BuildContext) -> TensorShape:
    """TF's Slice shape function: sizes give the dims; a -1 size is the dim minus begin."""
    check_rank(b, 1, 1, "begin")
    check_rank(b, 2, 1, "size")
    x = b.shape(0)
    n = b.shape(1)[0].value if b.shape(1).ndims == 1 else None
    n = n if n is not None else (b.shape(2)[0].value if b.shape(2).ndims == 1 else None)
    if n is not None and x.ndims not in (None, n):
        raise b.error(f"begin and size have {n} elements but the input has rank {x.ndims} (shape {x})")
    sizes = b.const(2)
    if sizes is None:
        partial = b.const_shape(2)
        if partial.ndims is not None:
            return partial
        return unknown_shape(x.ndims if x.ndims is not None else n)
    begin = b.const_shape(1)
    x = x if x.ndims is not None else unknown_shape(len(sizes))
    dims = []
    for i, s in enumerate(int(v) for v in sizes):
        if s < -1:
            raise b.error(f"size[{i}] = {s}: Slice size must be greater than or equal to -1")
        if s >= 0:
            dims.append(s)
            continue
        dim, start = x[i].value, begin[i].value if begin.ndims is not None else None
        if dim is not None and start is not None and start > dim:
            raise b.error(f"begin[{i}] = {start} is past the end of dimension {i} of input shape {x}")
        dims.append(None if dim is None or start is None else dim - start)
    return TensorShape(dims)


@op("Slice", inputs="input: T, begin: Index, size: Index", outputs="output: T",
    types={"T": _ALL, "Index": (dtypes.int32, dtypes.int64)}, shape=_slice_shape)
def slice_op(k, x, begin, size):
    shape = np.shape(x)
    if np.ndim(begin) != 1 or np.shape(begin) != np.shape(size) or len(begin) != len(shape):
        raise ValueError(f"Slice '{k.name}': Expected begin and size arguments to be 1-D tensors of size "
                         f"{len(shape)}, but got shapes {list(np.shape(begin))} and {list(np.shape(size))} "
                         f"instead.")
    index = []
    for i, (dim, b, s) in enumerate(zip(shape, begin.tolist(), size.tolist())):
        s = dim - b if s == -1 else s
        if not 0 <= b <= dim:
            raise ValueError(f"Slice '{k.name}': Expected begin[{i}] in [0, {dim}], but got {b}")
        if not 0 <= s <= dim - b:
            raise ValueError(f"Slice '{k.name}': Expected size[{i}] in [0, {dim - b}], but got {s}")
        index.append(builtins.slice(b, b + s))
    return np.asarray(x)[tuple(index)]


@slice_op.gradient
def _slice_grad(op: Any, grad: Any) -> list[Any]:
    """The gradient padded with zeros back to the input's shape (TF's _SliceGrad)."""
    from asyncflow.ops.array_manip import concat
    from asyncflow.ops.array_pad import pad

    x, begin = op.inputs[0], op.inputs[1]
    index_dtype = begin.dtype.base_dtype
    column = stack([rank(x), 1])
    before = reshape(begin, column)
    after = reshape(shape(x, out_type=index_dtype) - shape(op.outputs[0], out_type=index_dtype) - begin, column)
    x_grad = pad(grad, concat([before, after], 1))
    x_grad.set_shape(x.shape)  # the paddings are computed, so Pad's shape function cannot see this
    return [x_grad, None, None]


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """`af.slice`: `size[i]` elements from `begin[i]` along each dimension; -1 takes the rest."""
    return slice_op(input_, begin, size, name=name)


# -- StridedSlice ---------------------------------------------------------------------------------
_NEW_AXIS, _SHRINK = -1, -2


@dataclass
class _Dense:
    """The slice spec with one entry per input dim; `gather` maps output dims to input dims."""

    begin: list[int]
    end: list[int]
    stride: list[int]
    begin_masked: list[bool]
    end_masked: list[bool]
    shrink: list[bool]
    gather: list[int]  # an input dim, or _NEW_AXIS; shrunk dims are left out


@dataclass
class _Plan:
    """Per input dim: canonical begin/end (None where unknown), stride, shrink; the output dims."""

    begins: list[int | None]
    ends: list[int | None]
    strides: list[int]
    shrink: list[bool]
    processing: list[int | None]
    final: list[int | None]


def _dense_spec(rank: int, begin: list[int] | None, end: list[int] | None, strides: list[int], begin_mask: int,
                end_mask: int, ellipsis_mask: int, new_axis_mask: int, shrink_axis_mask: int) -> _Dense:
    """TF's BuildDenseSpec: expands the (one) ellipsis, implicit at the end when absent."""
    n = len(strides)
    if (begin is not None and len(begin) != n) or (end is not None and len(end) != n) or n >= 32:
        raise ValueError(f"Expected begin, end, and strides to be 1D equal size tensors, but got sizes "
                         f"{None if begin is None else len(begin)}, {None if end is None else len(end)}, "
                         f"and {n} instead.")
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    first_ellipsis = next((i for i in range(n) if ellipsis_mask & (1 << i)), None)
    new_after_ellipsis = 0 if first_ellipsis is None else \
        sum(1 for i in range(first_ellipsis + 1, n) if new_axis_mask & (1 << i))
    sparse_n = n
    if first_ellipsis is None:
        ellipsis_mask |= 1 << n
        sparse_n += 1
    dense = _Dense([0] * rank, [0] * rank, [1] * rank, [False] * rank, [False] * rank, [False] * rank, [])
    full = 0
    for i in range(sparse_n):
        bit = 1 << i
        if ellipsis_mask & bit:
            stop = min(rank - (sparse_n - i) + 1 + new_after_ellipsis, rank)
            for j in range(full, stop):
                dense.begin_masked[j] = dense.end_masked[j] = True
                dense.gather.append(j)
            full = max(stop, full)
        elif new_axis_mask & bit:
            dense.gather.append(_NEW_AXIS)
        else:
            if full == rank:
                if rank == 0:
                    raise ValueError("Attempting to slice scalar input.")
                raise ValueError(f"Index out of range using input dim {full}; input has only {rank} dims")
            dense.begin[full] = begin[i] if begin is not None else 0
            dense.end[full] = end[i] if end is not None else 0
            dense.stride[full] = strides[i]
            dense.begin_masked[full] = bool(begin_mask & bit)
            dense.end_masked[full] = bool(end_mask & bit)
            dense.shrink[full] = bool(shrink_axis_mask & bit)
            if not dense.shrink[full]:
                dense.gather.append(full)
            full += 1
    return dense


def _strided_slice_plan(dims: list[int | None], begin: list[int] | None, end: list[int] | None,
                        strides: list[int], *masks: int) -> _Plan:
    """TF's ValidateStridedSliceOp: canonical ranges and the output shape, from what is known."""
    d = _dense_spec(len(dims), begin, end, strides, *masks)
    known = begin is not None and end is not None
    plan = _Plan([None] * len(dims), [None] * len(dims), d.stride, d.shrink, [], [])
    for i, dim in enumerate(dims):
        s, shrink = d.stride[i], d.shrink[i]
        if s == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        if dim is None:
            plan.processing.append(1 if shrink else None)
            continue
        if shrink and s <= 0:
            raise ValueError("only stride 1 allowed on non-range indexing.")
        length = None
        if known:
            plan.begins[i], plan.ends[i] = _canonical_range(i, d, dim)
            length = plan.ends[i] - plan.begins[i]
        elif shrink:
            length = 1
        elif d.begin_masked[i] and d.end_masked[i]:
            length = -dim if s < 0 else dim
        if length is None:
            plan.processing.append(None)
        elif length == 0 or (length < 0) != (s < 0):
            plan.processing.append(0)
        else:
            plan.processing.append(length // s + (1 if length % s else 0))
    plan.final = [1 if g == _NEW_AXIS else plan.processing[g] for g in d.gather]
    return plan


def _canonical_range(i: int, d: _Dense, dim: int) -> tuple[int, int]:
    """Dim i's begin and end made explicit: masks give the full range, the rest clamps into it.

    With a negative stride the range runs from dim-1 down to -1 ("before 0"). A shrunk dim must
    index inside the dim; its end is begin + 1 (TF's "foo[-1]" fix).
    """
    stride = d.stride[i]
    if d.shrink[i]:
        x = d.begin[i] + dim if d.begin[i] < 0 else d.begin[i]
        if not 0 <= x < dim:
            raise ValueError(f"slice index {x} of dimension {i} out of bounds.")
        return x, x + 1
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)

    def canonical(x: int, masked: bool, is_end: bool) -> int:
        if masked:
            return (hi if is_end else lo) if stride > 0 else (lo if is_end else hi)
        x = dim + x if x < 0 else x
        return min(max(x, lo), hi)

    return canonical(d.begin[i], d.begin_masked[i], False), canonical(d.end[i], d.end_masked[i], True)


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _ints(v: np.ndarray | None) -> list[int] | None:
    return None if v is None else [int(x) for x in np.reshape(v, -1)]


def _strided_slice_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((1, "begin"), (2, "end"), (3, "strides")):
        check_rank(b, i, 1, arg)
    x, strides = b.shape(0), b.const(3)
    if x.ndims is None or strides is None:
        return unknown_shape()
    try:
        plan = _strided_slice_plan(x.as_list(), _ints(b.const(1)), _ints(b.const(2)), _ints(strides),
                                   *(b.attrs[m] for m in _MASKS))
    except ValueError as e:
        raise b.error(f"{e} (input shape {x})") from None
    return TensorShape(plan.final)


@op("StridedSlice", inputs="input: T, begin: Index, end: Index, strides: Index", outputs="output: T",
    types={"T": _ALL, "Index": _SLICE_INDEX}, attrs={m: 0 for m in _MASKS}, shape=_strided_slice_shape)
def strided_slice_op(k, x, begin, end, strides):
    x = np.asarray(x)
    if not np.ndim(begin) == np.ndim(end) == np.ndim(strides) == 1:
        raise ValueError(f"StridedSlice '{k.name}': begin, end and strides must be vectors, got shapes "
                         f"{list(np.shape(begin))}, {list(np.shape(end))}, {list(np.shape(strides))}")
    try:
        plan = _strided_slice_plan(list(x.shape), _ints(begin), _ints(end), _ints(strides),
                                   *(getattr(k, m) for m in _MASKS))
    except ValueError as e:
        raise ValueError(f"StridedSlice '{k.name}': {e} (input shape {list(x.shape)})") from None
    index = []
    for b, e, s, size in zip(plan.begins, plan.ends, plan.strides, plan.processing):
        # Canonical bounds are non-negative except an end of -1 with a negative stride ("before 0"),
        # which a Python slice spells None; an empty range is spelled 0:0 (a -1 begin means "last").
        index.append(builtins.slice(0, 0) if size == 0 else builtins.slice(b, None if e < 0 else e, s))
    return x[tuple(index)].reshape(plan.final)


@strided_slice_op.gradient
def _strided_slice_grad(op: Any, grad: Any) -> list[Any]:
    """A StridedSliceGrad: zeros of the input's shape with `grad` written through the same slice."""
    begin, end, strides = op.inputs[1:]
    index_dtype = begin.dtype.base_dtype
    if index_dtype == dtypes.int16:  # StridedSliceGrad takes int32/int64 only (TF cannot do this case)
        begin, end, strides = (_cast(t, dtypes.int32) for t in (begin, end, strides))
        index_dtype = dtypes.int32
    # Constant spec inputs are repeated as constants, so the gradient does not depend on forward tensors.
    spec = [shape(op.inputs[0], out_type=index_dtype), begin, end, strides]
    spec = [t if constant_value(t) is None or t.op.type == "Const" else
            constant(constant_value(t), dtype=index_dtype) for t in spec]
    masks = {m: op.get_attr(m) for m in _MASKS}
    return [strided_slice_grad(*spec, grad, **masks), None, None, None]


def _strided_slice_grad_shape(b: BuildContext) -> TensorShape:
    for i, arg in ((0, "shape"), (1, "begin"), (2, "end"), (3, "strides")):
        check_rank(b, i, 1, arg)
    return b.const_shape(0)


@op("StridedSliceGrad", inputs="shape: Index, begin: Index, end: Index, strides: Index, dy: T",
    outputs="output: T", types={"T": _ALL, "Index": (dtypes.int32, dtypes.int64)}, attrs={m: 0 for m in _MASKS},
    shape=_strided_slice_grad_shape)
def strided_slice_grad_op(k, x_shape, begin, end, strides, dy):
    """Zeros of `shape` with `dy` placed where StridedSlice with the same spec would have read."""
    dims = [int(d) for d in np.reshape(x_shape, -1)]
    try:
        plan = _strided_slice_plan(dims, _ints(begin), _ints(end), _ints(strides), *(getattr(k, m) for m in _MASKS))
    except ValueError as e:
        raise ValueError(f"StridedSliceGrad '{k.name}': {e} (input shape {dims})") from None
    dy = np.asarray(dy)
    if list(dy.shape) != plan.final:
        raise ValueError(f"StridedSliceGrad '{k.name}': shape of dy was {list(dy.shape)} instead of {plan.final}")
    dtype = k.out_dtypes[0]
    out = np.full(dims, b"", dtype=object) if dtype == np.object_ else np.zeros(dims, dtype=dtype)
    index = tuple(builtins.slice(0, 0) if size == 0 else builtins.slice(b, None if e < 0 else e, s)
                  for b, e, s, size in zip(plan.begins, plan.ends, plan.strides, plan.processing))
    out[index] = dy.reshape(plan.processing)  # a strided slice reads each element at most once
    return out


@strided_slice_grad_op.gradient
def _strided_slice_grad_grad(op: Any, grad: Any) -> list[Any]:
    return [None, None, None, None, strided_slice(grad, *op.inputs[1:4], **{m: op.get_attr(m) for m in _MASKS})]


def strided_slice_grad(shape: Any, begin: Any, end: Any, strides: Any, dy: Any, begin_mask: int = 0,
                       end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                       name: str | None = None) -> Tensor:
    """TF's `strided_slice_grad`: the gradient of StridedSlice for an input of the given shape."""
    return strided_slice_grad_op(shape, begin, end, strides, dy, begin_mask=begin_mask, end_mask=end_mask,
                                 ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                                 shrink_axis_mask=shrink_axis_mask, name=name)


@constant_folder("StridedSlice")
def _fold_strided_slice(t: Tensor) -> np.ndarray | None:
    """Also folds slices of a Shape whose selected dims are known (`af.shape(x)[1]` for x of [None, 3])."""
    value = fold_by_kernel(t)
    src = t.op.inputs[0]
    if value is not None or src.op.type != "Shape" or src.op.inputs[0].shape.ndims is None:
        return value
    spec = [constant_value(x) for x in t.op.inputs[1:]]
    if any(v is None for v in spec):
        return None
    dims = src.op.inputs[0].shape.as_list()
    positions = _run_strided_slice(t, np.arange(len(dims)), spec)
    if positions is None or any(dims[p] is None for p in positions.reshape(-1)):
        return None
    return np.array([dims[p] for p in positions.reshape(-1)], dtype=t.dtype.as_numpy_dtype).reshape(
        positions.shape)


def _run_strided_slice(t: Tensor, x: np.ndarray, spec: list[np.ndarray]) -> np.ndarray | None:
    attrs = t.op._attrs
    try:
        plan = _strided_slice_plan([len(x)], _ints(spec[0]), _ints(spec[1]), _ints(spec[2]),
                                   *(attrs[m] for m in _MASKS))
    except ValueError:
        return None
    b, e, s = plan.begins[0], plan.ends[0], plan.strides[0]
    out = x[0:0] if plan.processing[0] == 0 else x[b:None if e < 0 else e:s]
    return out.reshape(plan.final)


def strided_slice(
    input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0, end_mask: int = 0,
    ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0, var: Any = None,
    name: str | None = None,
) -> Tensor:
    """`af.strided_slice` with TF's mask semantics; `strides=None` means all ones.

    `var` is accepted for TF1's signature; the `.assign` that TF attaches for sliced variables is
    not provided.
    """
    if strides is None:
        strides = ones_like(begin)
    return strided_slice_op(input_, begin, end, strides, begin_mask=begin_mask, end_mask=end_mask,
                            ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                            shrink_axis_mask=shrink_axis_mask, name=name)


# -- tensor[...] ------------------------------------------------------------------------------------
_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")


def _check_index(idx: Any) -> None:
    if isinstance(idx, (numbers.Integral, Dimension)):
        return
    dtype = getattr(idx, "dtype", None)
    try:
        dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
    except TypeError:
        dtype = None
    idx_shape = getattr(idx, "shape", None)
    idx_rank = idx_shape.ndims if isinstance(idx_shape, TensorShape) else np.ndim(idx)
    if dtype not in _SLICE_INDEX or idx_rank == 1:
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")


def _bound(v: Any) -> Any:
    """A slice bound: None stays None (an unknown Dimension too), a Dimension becomes its int."""
    if isinstance(v, Dimension):
        return v.value
    return v


def _slice_helper(tensor: Any, slice_spec: Any, var: Any = None) -> Tensor:
    """`tensor[slice_spec]`, exactly as TF1's `array_ops._slice_helper` builds it."""
    tensor = convert_to_tensor(tensor)
    is_bool_tensor = isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype == dtypes.bool
    if isinstance(slice_spec, bool) or is_bool_tensor or \
            (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        from asyncflow.ops.array_index import boolean_mask

        return boolean_mask(tensor=tensor, mask=slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]

    begin: list[Any] = []
    end: list[Any] = []
    strides: list[Any] = []
    masks = dict.fromkeys(_MASKS, 0)
    for index, s in enumerate(slice_spec):
        bit = 1 << index
        if isinstance(s, builtins.slice):
            dtype = _bounds_dtype(s)
            for value, out, mask, default in ((s.start, begin, "begin_mask", 0), (s.stop, end, "end_mask", 0),
                                              (s.step, strides, None, 1)):
                value = _bound(value)
                if value is not None:
                    _check_index(value)
                    out.append(value)
                else:
                    out.append(default if dtype is None else constant(default, dtype=dtype))
                    if mask:
                        masks[mask] |= bit
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            s = _bound(s)
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            wide = isinstance(s, Tensor) and s.dtype.base_dtype in (dtypes.int16, dtypes.int64)
            strides.append(constant(1, dtype=s.dtype.base_dtype) if wide else 1)
            masks["shrink_axis_mask"] |= bit

    with name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        if begin:
            packed = [stack(begin), stack(end), stack(strides)]
            if any(p.dtype.base_dtype == dtypes.int64 for p in packed):
                packed = [_cast(p, dtypes.int64) for p in packed]
        else:
            empty = constant([], dtype=dtypes.int32)
            packed = [empty, empty, empty]
        return strided_slice(tensor, *packed, var=var, name=name, **masks)


def _bounds_dtype(s: Any) -> dtypes.DType | None:
    """TF's choice of dtype for the defaults of a slice whose given bounds are tensors."""
    dtype = None
    for t in (s.start, s.stop, s.step):
        if not isinstance(t, Tensor):
            continue
        base = t.dtype.base_dtype
        if base == dtypes.int64:
            dtype = dtypes.int64
        elif base == dtypes.int32 and dtype != dtypes.int64:
            dtype = dtypes.int32
        elif base == dtypes.int16 and dtype is None:
            dtype = dtypes.int16
    return dtype


def _cast(t: Tensor, dtype: dtypes.DType) -> Tensor:
    if t.dtype.base_dtype == dtype:
        return t
    from asyncflow.ops import math as _math

    return _math.cast(t, dtype)


fold_ops("Slice", "StridedSliceGrad")

__all__ = ["slice", "strided_slice"]
