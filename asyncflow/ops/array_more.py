"""Array ops of TF1's surface that model and input code call: roll, searchsorted (LowerBound /
UpperBound), setdiff1d (ListDiff), space_to_batch_nd / batch_to_space_nd and their 4-D forms
space_to_batch / batch_to_space, required_space_to_batch_paddings, parallel_stack (ParallelConcat)
and extract_image_patches.

Roll, SpaceToBatchND, BatchToSpaceND and ParallelConcat carry gradients (each other's, as TF's);
ExtractImagePatches's gradient is TF's idea written as a composite: the patches of an image of pixel
numbers say which pixel each patch entry came from, and an UnsortedSegmentSum adds the gradient back
there. searchsorted and setdiff1d are not differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math
from asyncflow.ops.array import reshape, stack, zeros
from asyncflow.ops.array import shape as shape_of
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.array_index import unsorted_segment_sum
from asyncflow.ops.array_manip import transpose, unstack
from asyncflow.ops.math_reduce import range as range_
from asyncflow.ops.registry import ALL_TYPES, INDEX, REAL, BuildContext, constant_value, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape

__all__ = [
    "roll", "searchsorted", "setdiff1d", "space_to_batch_nd", "batch_to_space_nd", "space_to_batch", "batch_to_space",
    "required_space_to_batch_paddings", "parallel_stack", "extract_image_patches",
]


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


# -- roll --------------------------------------------------------------------------------------------------
def _roll_shape(b: BuildContext) -> TensorShape:
    shift, axis = b.shape(1), b.shape(2)
    for what, s in (("shift", shift), ("axis", axis)):
        if s.ndims is not None and s.ndims > 1:
            raise b.error(f"{what} must be a scalar or a 1-D vector, got shape {s}")
    if shift.ndims is not None and axis.ndims is not None and shift.ndims and axis.ndims and \
            not shift.is_compatible_with(axis):
        raise b.error(f"shift and axis must have the same size, got shapes {shift} and {axis}")
    return b.shape(0)


@op("Roll", inputs="input: T, shift: Tshift, axis: Taxis", outputs="output: T",
    types={"T": ALL_TYPES, "Tshift": INDEX, "Taxis": INDEX}, shape=_roll_shape)
def roll_op(k, x, shift, axis):
    x, shift, axis = np.asarray(x), np.asarray(shift).reshape(-1), np.asarray(axis).reshape(-1)
    if x.ndim == 0:
        raise _invalid(k, "input must be 1-D or higher")
    if shift.shape != axis.shape:
        raise _invalid(k, f"shift and axis must have the same size, got {shift.size} and {axis.size}")
    for a in axis.tolist():
        if not -x.ndim <= a < x.ndim:
            raise _invalid(k, f"axis {a} is out of range [{-x.ndim}, {x.ndim})")
    return np.roll(x, shift.tolist(), axis.tolist())  # a repeated axis adds its shifts, as TF


@roll_op.gradient
def _roll_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [roll_op(grad, math.negative(op_.inputs[1]), op_.inputs[2]), None, None]


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.roll` / `af.manip.roll`: elements shifted (with wrap-around) by `shift` along `axis`."""
    return roll_op(input, shift, axis, name=name)


# -- searchsorted ------------------------------------------------------------------------------------------
def _bound_shape(b: BuildContext) -> TensorShape:
    seq, values = b.shape(0), b.shape(1)
    for what, s in (("sorted_inputs", seq), ("values", values)):
        if s.ndims is not None and s.ndims != 2:
            raise b.error(f"Shape must be rank 2 but is rank {s.ndims} ({what}, shape {s})")
    if seq.ndims == 2 and values.ndims == 2 and not seq[:1].is_compatible_with(values[:1]):
        raise b.error(f"Dimensions must be equal, but are {seq[0]} and {values[0]} (the leading dimensions of "
                      f"sorted_inputs {seq} and values {values})")
    return values


def _bound_kernel(side: str) -> Any:
    def kernel(k, seq, values):
        seq, values = np.asarray(seq), np.asarray(values)
        if seq.shape[0] != values.shape[0]:
            raise _invalid(k, f"Leading dim_size of both tensors must match, got {seq.shape[0]} and {values.shape[0]}")
        out = np.empty(values.shape, k.out_dtypes[0])
        for row in range(seq.shape[0]):
            out[row] = np.searchsorted(seq[row], values[row], side=side)
        return out

    return kernel


_BOUND = dict(inputs="sorted_inputs: T, values: T", outputs="output: out_type",
              types={"T": ALL_TYPES, "out_type": INDEX}, type_defaults={"out_type": dtypes.int32},
              shape=_bound_shape, differentiable=False)
lower_bound_op = op("LowerBound", **_BOUND)(_bound_kernel("left"))
upper_bound_op = op("UpperBound", **_BOUND)(_bound_kernel("right"))


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = dtypes.int32,
                 name: str | None = None) -> Tensor:
    """`af.searchsorted`: where each of `values` goes in the innermost rows of `sorted_sequence`."""
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: `side` = '{side}'.")
    seq = convert_to_tensor(sorted_sequence)
    values = convert_to_tensor(values)
    seq_2d = reshape(seq, stack([-1, shape_of(seq)[-1]]))
    values_2d = reshape(values, stack([-1, shape_of(values)[-1]]))
    opdef = upper_bound_op if side == "right" else lower_bound_op
    return reshape(opdef(seq_2d, values_2d, out_type=dtypes.as_dtype(out_type)), shape_of(values), name=name)


# -- setdiff1d -------------------------------------------------------------------------------------------------
def _list_diff_shape(b: BuildContext) -> list[TensorShape]:
    for i, what in ((0, "x"), (1, "y")):
        if b.shape(i).ndims not in (None, 1):
            raise b.error(f"Shape must be rank 1 but is rank {b.shape(i).ndims} ({what}, shape {b.shape(i)})")
    return [TensorShape([None]), TensorShape([None])]


@op("ListDiff", inputs="x: T, y: T", outputs="out: T, idx: out_idx", types={"T": ALL_TYPES, "out_idx": INDEX},
    type_defaults={"out_idx": dtypes.int32}, shape=_list_diff_shape, differentiable=False)
def list_diff_op(k, x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 1 or y.ndim != 1:
        raise _invalid(k, f"x and y must be 1-D, got shapes {list(x.shape)} and {list(y.shape)}")
    keep = np.flatnonzero(~np.isin(x, y)) if x.dtype != object else \
        np.asarray([i for i, v in enumerate(x.tolist()) if v not in set(y.tolist())], np.int64)
    return x[keep], keep.astype(k.out_dtypes[1])


def setdiff1d(x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.setdiff1d`: (out, idx), the values of `x` not in `y` in their order, and where they were in `x`."""
    out, idx = list_diff_op(x, y, out_idx=dtypes.as_dtype(index_dtype), name=name)
    return out, idx


# -- space_to_batch_nd, batch_to_space_nd --------------------------------------------------------------------
def _block_args(b: BuildContext, what: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    block, pads = b.const(1), b.const(2)
    if b.shape(1).ndims not in (None, 1):
        raise b.error(f"block_shape must be a vector, got shape {b.shape(1)}")
    if b.shape(2).ndims not in (None, 2) or (b.shape(2).ndims == 2 and b.shape(2)[1] not in (None, 2)):
        raise b.error(f"{what} must be of shape [M, 2], got {b.shape(2)}")
    if block is not None and (np.asarray(block) < 1).any():
        raise b.error(f"block_shape must be positive, got {np.asarray(block).tolist()}")
    if pads is not None and (np.asarray(pads) < 0).any():
        raise b.error(f"{what} must be non-negative, got {np.asarray(pads).tolist()}")
    return block, pads


def _space_batch_shape(to_batch: bool) -> Any:
    def shape_fn(b: BuildContext) -> TensorShape:
        block, pads = _block_args(b, "paddings" if to_batch else "crops")
        x = b.shape(0)
        if x.ndims is None or block is None or pads is None:
            return unknown_shape() if x.ndims is None else unknown_shape(x.ndims)
        block, pads = np.asarray(block).reshape(-1), np.asarray(pads).reshape(-1, 2)
        m, dims = len(block), x.as_list()
        if x.ndims < m + 1:
            raise b.error(f"input rank should be >= {m + 1} (1 + the length of block_shape), got shape {x}")
        prod = int(np.prod(block))
        out = list(dims)
        if to_batch:
            out[0] = None if dims[0] is None else dims[0] * prod
            for i in range(m):
                if dims[i + 1] is not None:
                    padded = dims[i + 1] + int(pads[i].sum())
                    if padded % block[i]:
                        raise b.error(f"padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={block[i]}")
                    out[i + 1] = padded // int(block[i])
        else:
            if dims[0] is not None:
                if dims[0] % prod:
                    raise b.error(f"Input batch dimension ({dims[0]}) is not divisible by product of block sizes "
                                  f"({prod})")
                out[0] = dims[0] // prod
            for i in range(m):
                if dims[i + 1] is not None:
                    out[i + 1] = dims[i + 1] * int(block[i]) - int(pads[i].sum())
                    if out[i + 1] < 0:
                        raise b.error(f"Negative output dimension size caused by too large crops: {out[i + 1]}")
        return TensorShape(out)

    return shape_fn


def _check_block(k: Any, x: np.ndarray, block: np.ndarray, pads: np.ndarray, what: str) -> tuple[list, np.ndarray]:
    block, pads = np.asarray(block).reshape(-1), np.asarray(pads)
    m = len(block)
    if pads.shape != (m, 2):
        raise _invalid(k, f"{what} should have shape [{m}, 2] instead of {list(pads.shape)}")
    if x.ndim < m + 1:
        raise _invalid(k, f"input rank should be >= {m + 1} instead of {x.ndim}")
    if (block < 1).any():
        raise _invalid(k, f"All values in block_shape must be positive, got {block.tolist()}")
    if (pads < 0).any():
        raise _invalid(k, f"All values in {what} must be non-negative, got {pads.tolist()}")
    return [int(v) for v in block], pads.astype(np.int64)


@op("SpaceToBatchND", inputs="input: T, block_shape: Tblock_shape, paddings: Tpaddings", outputs="output: T",
    types={"T": ALL_TYPES, "Tblock_shape": INDEX, "Tpaddings": INDEX},
    type_defaults={"Tblock_shape": dtypes.int32, "Tpaddings": dtypes.int32},
    shape=_space_batch_shape(True))
def space_to_batch_nd_op(k, x, block_shape, paddings):
    x = np.asarray(x)
    block, pads = _check_block(k, x, block_shape, paddings, "paddings")
    m, batch = len(block), x.shape[0]
    padded = np.pad(x, [(0, 0)] + [tuple(p) for p in pads.tolist()] + [(0, 0)] * (x.ndim - m - 1))
    for i in range(m):
        if padded.shape[i + 1] % block[i]:
            raise _invalid(k, f"padded_shape[{i}]={padded.shape[i + 1]} is not divisible by "
                              f"block_shape[{i}]={block[i]}")
    rest = list(padded.shape[m + 1:])
    split = [batch] + [d for i in range(m) for d in (padded.shape[i + 1] // block[i], block[i])] + rest
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(2 * m + 1, len(split)))
    out = padded.reshape(split).transpose(perm)
    return np.ascontiguousarray(out.reshape([batch * int(np.prod(block))] +
                                            [padded.shape[i + 1] // block[i] for i in range(m)] + rest))


@op("BatchToSpaceND", inputs="input: T, block_shape: Tblock_shape, crops: Tcrops", outputs="output: T",
    types={"T": ALL_TYPES, "Tblock_shape": INDEX, "Tcrops": INDEX},
    type_defaults={"Tblock_shape": dtypes.int32, "Tcrops": dtypes.int32},
    shape=_space_batch_shape(False))
def batch_to_space_nd_op(k, x, block_shape, crops):
    x = np.asarray(x)
    block, crops = _check_block(k, x, block_shape, crops, "crops")
    m, prod = len(block), int(np.prod(block))
    if x.shape[0] % prod:
        raise _invalid(k, f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes ({prod})")
    batch, spatial, rest = x.shape[0] // prod, list(x.shape[1:m + 1]), list(x.shape[m + 1:])
    v = x.reshape(block + [batch] + spatial + rest)
    perm = [m] + [d for i in range(m) for d in (m + 1 + i, i)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    v = v.transpose(perm).reshape([batch] + [spatial[i] * block[i] for i in range(m)] + rest)
    index = [slice(None)]
    for i in range(m):
        start, stop = int(crops[i, 0]), v.shape[i + 1] - int(crops[i, 1])
        if stop < start:
            raise _invalid(k, f"Crops must be less than the output size, got {crops.tolist()} for size "
                              f"{v.shape[i + 1]}")
        index.append(slice(start, stop))
    return np.ascontiguousarray(v[tuple(index)])


@space_to_batch_nd_op.gradient
def _space_to_batch_nd_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [batch_to_space_nd_op(grad, op_.inputs[1], op_.inputs[2]), None, None]


@batch_to_space_nd_op.gradient
def _batch_to_space_nd_grad(op_: Any, grad: Tensor) -> list[Any]:
    return [space_to_batch_nd_op(grad, op_.inputs[1], op_.inputs[2]), None, None]


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.space_to_batch_nd`: zero-pads the spatial dims, then moves blocks of them into the batch dim."""
    return space_to_batch_nd_op(input, block_shape, paddings, name=name)


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.batch_to_space_nd`: the inverse of space_to_batch_nd, cropping `crops` from the spatial dims."""
    return batch_to_space_nd_op(input, block_shape, crops, name=name)


def _block_size(block_size: Any, block_shape: Any, fn: str) -> int:
    if block_size is not None and block_shape is not None:
        raise ValueError("Cannot specify both 'block_shape' and 'block_size'")
    size = block_shape if block_size is None else block_size
    if size is None:
        raise TypeError(f"{fn}() missing required argument: 'block_size'")
    return int(size)


def _rank4(t: Tensor) -> Tensor:
    t.set_shape(t.shape.merge_with(unknown_shape(4)))
    return t


def space_to_batch(input: Any, paddings: Any, block_size: Any = None, name: str | None = None,  # noqa: A002
                   block_shape: Any = None) -> Tensor:
    """`af.space_to_batch`: space_to_batch_nd of a 4-D NHWC input with a square block."""
    size = _block_size(block_size, block_shape, "space_to_batch")
    return _rank4(space_to_batch_nd_op(input, np.array([size, size], np.int64), paddings, name=name))


def batch_to_space(input: Any, crops: Any, block_size: Any = None, name: str | None = None,  # noqa: A002
                   block_shape: Any = None) -> Tensor:
    """`af.batch_to_space`: batch_to_space_nd of a 4-D NHWC input with a square block."""
    size = _block_size(block_size, block_shape, "batch_to_space")
    return _rank4(batch_to_space_nd_op(input, np.array([size, size], np.int64), crops, name=name))


def required_space_to_batch_paddings(input_shape: Any, block_shape: Any, base_paddings: Any = None,
                                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.required_space_to_batch_paddings`: (paddings, crops) that make input_shape divisible by block_shape
    (base_paddings at the start, the least extra at the end), as TF1 computes them."""
    with name_scope(name, "required_space_to_batch_paddings", [input_shape, block_shape]):
        input_shape = convert_to_tensor(input_shape, dtype=dtypes.int32, name="input_shape")
        block_shape = convert_to_tensor(block_shape, dtype=dtypes.int32, name="block_shape")
        if not block_shape.shape.is_fully_defined() or block_shape.shape.ndims != 1:
            raise ValueError(f"block_shape must be a vector of known length, got shape {block_shape.shape}")
        m = block_shape.shape.as_list()[0]
        if m == 0:
            return zeros([0, 2], dtypes.int32), zeros([0, 2], dtypes.int32)
        if not input_shape.shape.is_compatible_with([m]):
            raise ValueError(f"Shapes {input_shape.shape} and {[m]} are incompatible (input_shape and block_shape)")
        if base_paddings is not None:
            base_paddings = convert_to_tensor(base_paddings, dtype=dtypes.int32, name="base_paddings")
            if not base_paddings.shape.is_compatible_with([m, 2]):
                raise ValueError(f"Shapes {base_paddings.shape} and {[m, 2]} are incompatible (base_paddings)")
        else:
            base_paddings = zeros([m, 2], dtypes.int32)
        known = [constant_value(t) for t in (block_shape, input_shape, base_paddings)]
        if all(v is not None for v in known):  # TF1 computes in numpy when everything is constant
            block_shape, input_shape, base_paddings = known
        pad_start, orig_pad_end = base_paddings[:, 0], base_paddings[:, 1]
        full_input_shape = input_shape + pad_start + orig_pad_end
        pad_end_extra = (block_shape - full_input_shape % block_shape) % block_shape
        pad_end = orig_pad_end + pad_end_extra
        paddings = stack([[pad_start[i], pad_end[i]] for i in range(m)], name="paddings")
        crops = stack([[0, pad_end_extra[i]] for i in range(m)], name="crops")
        return paddings, crops


# -- parallel_stack ------------------------------------------------------------------------------------------
def _parallel_concat_shape(b: BuildContext) -> TensorShape:
    declared = TensorShape(b.attrs["shape"])
    for s in b.shapes(0):
        if s.ndims is not None and declared.ndims is not None and (s.ndims != declared.ndims or
                                                                     not s[1:].is_compatible_with(declared[1:])):
            raise b.error(f"input shape {s} is incompatible with the output shape {declared} (each input is "
                          f"[1] + one element's shape)")
    return declared


@op("ParallelConcat", inputs="values: N * T", outputs="output: T", types={"T": ALL_TYPES}, attrs={"shape": None},
    shape=_parallel_concat_shape)
def parallel_concat_op(k, *values):
    out = np.concatenate([np.asarray(v) for v in values], axis=0)
    declared = TensorShape(k.shape)
    if not declared.is_compatible_with(out.shape):
        raise _invalid(k, f"the inputs make shape {list(out.shape)}, not the declared {declared}")
    return out


@parallel_concat_op.gradient
def _parallel_concat_grad(op_: Any, grad: Tensor) -> list[Any]:
    # TF registers none; each input is one row of the output, so its gradient is that row.
    return [expand_dims(g, 0) for g in unstack(grad, num=len(op_.inputs))]


def parallel_stack(values: list[Any], name: str = "parallel_stack") -> Tensor:
    """`af.parallel_stack`: stacks same-shaped tensors along a new first axis (op ParallelConcat)."""
    with name_scope(name):
        first = convert_to_tensor(values[0])
        output_shape = TensorShape([len(values)]).concatenate(first.shape)
        return parallel_concat_op([expand_dims(v, 0) for v in values], shape=output_shape)


# -- extract_image_patches -------------------------------------------------------------------------------------
def _window(size: int | None, k: int, stride: int, rate: int, padding: str) -> tuple[int | None, int]:
    """(output size, padding before) of one spatial dim, as TF's GetWindowedOutputSize with dilation."""
    if size is None:
        return None, 0
    eff = (k - 1) * rate + 1
    if padding == "VALID":
        return max(0, (size - eff + stride) // stride), 0
    out = -(-size // stride)
    return out, max(0, (out - 1) * stride + eff - size) // 2


def _four(name: str, values: Any) -> list[int]:
    values = list(values)
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError(f"ExtractImagePatches: {name} must be [1, rows, cols, 1], got {values}")
    return values


def _patches_shape(b: BuildContext) -> TensorShape:
    x = b.shape(0)
    if x.ndims is None:
        return unknown_shape(4)
    if x.ndims != 4:
        raise b.error(f"input must be 4-dimensional, got shape {x}")
    ks, st, rt = b.attrs["ksizes"], b.attrs["strides"], b.attrs["rates"]
    n, h, w, c = x.as_list()
    rows, _ = _window(h, ks[1], st[1], rt[1], b.attrs["padding"])
    cols, _ = _window(w, ks[2], st[2], rt[2], b.attrs["padding"])
    return TensorShape([n, rows, cols, None if c is None else ks[1] * ks[2] * c])


@op("ExtractImagePatches", inputs="images: T", outputs="patches: T", types={"T": REAL + (dtypes.bool,)},
    attrs={"ksizes": None, "strides": None, "rates": None, "padding": "VALID"}, shape=_patches_shape)
def extract_image_patches_op(k, images):
    x = np.asarray(images)
    if x.ndim != 4:
        raise _invalid(k, f"input must be 4-dimensional, got shape {list(x.shape)}")
    n, h, w, c = x.shape
    (kr, kc), (sr, sc), (rr, rc) = k.ksizes[1:3], k.strides[1:3], k.rates[1:3]
    rows, top = _window(h, kr, sr, rr, k.padding)
    cols, left = _window(w, kc, sc, rc, k.padding)
    # Zero-pad far enough that every window of every output position lies inside the padded image.
    bottom = max(0, (rows - 1) * sr + (kr - 1) * rr + 1 - h - top)
    right = max(0, (cols - 1) * sc + (kc - 1) * rc + 1 - w - left)
    padded = np.pad(x, [(0, 0), (top, bottom), (left, right), (0, 0)])
    out = np.empty((n, rows, cols, kr, kc, c), x.dtype)
    for i in range(kr):
        for j in range(kc):
            out[:, :, :, i, j, :] = padded[:, i * rr:i * rr + (rows - 1) * sr + 1:sr,
                                           j * rc:j * rc + (cols - 1) * sc + 1:sc, :]
    return out.reshape(n, rows, cols, kr * kc * c)


@extract_image_patches_op.gradient
def _extract_image_patches_grad(op_: Any, grad: Tensor) -> Tensor:
    images = op_.inputs[0]
    dims = shape_of(images, out_type=dtypes.int64)
    n, h, w, c = dims[0], dims[1], dims[2], dims[3]
    # Pixel p (counted from 1; 0 is padding) of an image of pixel numbers lands where pixel p's values went.
    pixels = reshape(range_(1, h * w + 1, dtype=dtypes.int64), stack([1, h, w, 1]))
    where = extract_image_patches_op(pixels, ksizes=op_.get_attr("ksizes"), strides=op_.get_attr("strides"),
                                     rates=op_.get_attr("rates"), padding=op_.get_attr("padding"))
    # grad [n, rows, cols, kr*kc*c] -> [rows*cols*kr*kc, n, c], one segment id per leading row.
    g = reshape(grad, stack([n, -1, c]))
    g = transpose(g, [1, 0, 2])
    summed = unsorted_segment_sum(g, reshape(where, [-1]), h * w + 1)
    back = reshape(summed[1:], stack([h, w, n, c]))
    return transpose(back, [2, 0, 1, 3])


def extract_image_patches(images: Any, ksizes: Any = None, strides: Any = None, rates: Any = None,
                          padding: str | None = None, name: str | None = None, sizes: Any = None) -> Tensor:
    """`af.extract_image_patches` / `af.image.extract_patches`: each [ksize] window (dilated by `rates`,
    every `strides`) of an NHWC image, flattened into the depth dimension."""
    if ksizes is not None and sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and 'sizes'")
    ksizes = sizes if ksizes is None else ksizes
    if ksizes is None or strides is None or rates is None or padding is None:
        raise TypeError("extract_image_patches() needs ksizes (or sizes), strides, rates and padding")
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    return extract_image_patches_op(images, ksizes=_four("ksizes", ksizes), strides=_four("strides", strides),
                                    rates=_four("rates", rates), padding=padding, name=name)

