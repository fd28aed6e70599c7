"""The backward ops of convolution and pooling, as TF declares them: Conv2DBackpropInput,
Conv2DBackpropFilter, MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad, each with its own gradient.

They share the forward ops' geometry (`nn_conv._geometry`: VALID, SAME, EXPLICIT padding) and work
in NHWC (NCHW is transposed in and out). The arithmetic is `conv_util`'s: the filter gradient is
(patch matrix of the padded input)ᵀ · out_backprop, one GEMM per chunk of images; the input
gradient of a stride-1 convolution is out_backprop convolved with the flipped filter, of a strided
one a GEMM per kernel offset scatter-added into strided slices of the padded input. Max pool routes
each output gradient to the element its window's maximum came from: the first maximum in
row-major window order, as TF's CPU kernel (`conv_util.first_max_hits`), one vectorised compare
and add per window offset. Average pool spreads each output gradient evenly over the window's
elements inside the input (SAME windows at the border count only those).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Operation, Tensor
from asyncflow.ops.conv_util import (
    Scratch,
    conv_filter_grad,
    conv_forward,
    conv_input_grad,
    first_max_hits,
    flipped_filter,
    flipped_pads,
    has_padding,
    masked_adder,
    offset_slices,
    padded_input,
    scratch,
)
from asyncflow.ops.nn_conv import (
    _check_common,
    _from_nhwc,
    _geometry,
    _nhwc,
    _only_spatial,
    _require_rank4,
    _spatial_index,
    _valid_counts,
    avg_pool_op,
    conv2d_op,
    widen,
)
from asyncflow.ops.registry import FLOAT, REAL, REQUIRED, BuildContext, op
from asyncflow.shapes import TensorShape, unknown_shape

_CONV_ATTRS = ("strides", "use_cudnn_on_gpu", "padding", "explicit_paddings", "data_format", "dilations")
_CONV_ATTR_DEFAULTS = {"strides": REQUIRED, "use_cudnn_on_gpu": True, "padding": REQUIRED, "explicit_paddings": [],
                       "data_format": "NHWC", "dilations": [1, 1, 1, 1]}


def conv_attrs(op: Operation) -> dict[str, Any]:
    """The attrs a Conv2D (or one of its backprops) hands on to the ops of its gradient."""
    return {name: op.get_attr(name) for name in _CONV_ATTRS}


def shape_of(t: Tensor) -> Tensor:
    """`t`'s shape as an int32 tensor: a constant when statically known (so shape functions can read it)."""
    from asyncflow.ops.array import shape

    return shape(t)


def _sizes(b: BuildContext, i: int, arg: str) -> TensorShape:
    """The shape an int32 vector argument (input_sizes, filter_sizes) spells out, as far as it is known."""
    s = b.shape(i)
    if s.ndims is not None and s.ndims != 1:
        raise b.error(f"{arg} must be a 1-D tensor, got shape {s}")
    return b.const_shape(i)


def _sizes_value(k, sizes: Any, arg: str, allowed: tuple[int, ...]) -> list[int]:
    values = [int(v) for v in np.reshape(sizes, -1)]
    if np.ndim(sizes) != 1 or len(values) not in allowed or any(v < 0 for v in values):
        raise ValueError(f"{k.op_type} '{k.name}': {arg} must be a vector of {' or '.join(map(str, allowed))} "
                         f"non-negative sizes, got {values}")
    return values


def _check_conv_attrs(k) -> None:
    _only_spatial(k, k.strides, "strides", "Current implementation does not yet support strides in the batch "
                                           "and depth dimensions.")
    _only_spatial(k, k.dilations, "dilations", "Current implementation does not yet support dilations in the "
                                               "batch and depth dimensions.")


def _conv_geometry(k, in_shape: tuple[int, ...], filter_shape: tuple[int, ...], dy_shape: tuple[int, ...]) -> tuple:
    """(strides, dilations, paddings) of the forward Conv2D, after checking the three shapes (all NHWC) agree."""
    n, in_h, in_w, depth = in_shape
    kh, kw, f_depth, out_depth = filter_shape
    if f_depth == 0 or depth % f_depth or out_depth % (depth // f_depth or 1):
        raise ValueError(f"{k.op_type} '{k.name}': input depth {depth} must be a multiple of the filter's input "
                         f"depth {f_depth}, and the filter's output depth {out_depth} of the number of groups "
                         f"(input shape {list(in_shape)}, filter shape {list(filter_shape)})")
    oh, ow, pads = _geometry(k, in_h, in_w, kh, kw, k.dilations)
    if tuple(dy_shape) != (n, oh, ow, out_depth):
        raise ValueError(f"{k.op_type} '{k.name}': Size of out_backprop doesn't match computed: actual = "
                         f"{list(dy_shape)}, computed = {[n, oh, ow, out_depth]} (input shape {list(in_shape)}, "
                         f"filter shape {list(filter_shape)}, NHWC)")
    h, w, _ = _spatial_index(k.data_format)
    strides = (int(k.strides[h]), int(k.strides[w]))
    dilations = (int(k.dilations[h]), int(k.dilations[w]))
    return strides, dilations, pads


# -- Conv2DBackpropInput -------------------------------------------------------------------------------------
def _conv2d_backprop_input_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("strides", "dilations"))
    f = _require_rank4(b, 1, "filter")
    dy = _require_rank4(b, 2, "out_backprop")
    sizes = _sizes(b, 0, "input_sizes")
    h, w, c = _spatial_index(b.attrs["data_format"])
    if sizes.ndims == 2:  # TF also takes the spatial sizes alone: batch and depth come from the other inputs
        dims: list[Any] = [None] * 4
        dims[0], dims[h], dims[w], dims[c] = dy[0], sizes[0], sizes[1], f[2]
        return TensorShape(dims)
    if sizes.ndims not in (None, 4):
        raise b.error(f"input_sizes must have 4 (or 2) elements, got {sizes.ndims}")
    try:
        return (sizes if sizes.ndims == 4 else unknown_shape(4)).merge_with(TensorShape([dy[0], None, None, None]))
    except ValueError:
        raise b.error(f"input_sizes {sizes} and out_backprop {dy} differ in the batch dimension") from None


@op("Conv2DBackpropInput", inputs="input_sizes: int32, filter: T, out_backprop: T", outputs="output: T",
    types={"T": (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32)},
    attrs=dict(_CONV_ATTR_DEFAULTS), shape=_conv2d_backprop_input_shape)
def conv2d_backprop_input_op(k, input_sizes, filter, out_backprop):  # noqa: A002 - TF's argument names
    _check_conv_attrs(k)
    w, dy = widen(filter), widen(_nhwc(np.asarray(out_backprop), k.data_format))
    if w.ndim != 4 or dy.ndim != 4:
        raise ValueError(f"Conv2DBackpropInput '{k.name}': filter and out_backprop must be 4-D, got shapes "
                         f"{list(w.shape)} and {list(np.shape(out_backprop))}")
    sizes = _sizes_value(k, input_sizes, "input_sizes", (4, 2))
    h, w_, c = _spatial_index(k.data_format)
    if len(sizes) == 4:
        in_shape = (sizes[0], sizes[h], sizes[w_], sizes[c])
    else:
        in_shape = (dy.shape[0], sizes[0], sizes[1], w.shape[2])
    strides, dilations, pads = _conv_geometry(k, in_shape, w.shape, dy.shape)
    dx = conv2d_input_grad_nhwc(k, dy, w, in_shape, pads, strides, dilations)
    return _from_nhwc(dx, k.data_format).astype(k.out_dtypes[0], copy=False)


def conv2d_input_grad_nhwc(k: Any, dy: np.ndarray, w: np.ndarray, in_shape: tuple[int, ...], pads: tuple,
                           strides: tuple[int, int], dilations: tuple[int, int]) -> np.ndarray:
    """The transposed convolution as a fresh NHWC array: each kernel offset adds dy · w[offset]ᵀ into the input
    positions it read (`conv_util.conv_input_grad`); with padding, into a scratch padded input first."""
    dtype = np.result_type(w, dy)
    n, in_h, in_w, depth = in_shape
    flipped = flipped_pads(pads, w.shape[:2], dilations) if strides == (1, 1) else None
    if flipped is not None and dy.size and n * in_h * in_w * depth:
        # stride 1: the input gradient is out_backprop (padded) convolved with the flipped filter, which
        # is im2col and one GEMM like the forward op (measured faster than the scatter-add below)
        dx = np.empty(in_shape, dtype)
        pool = scratch(k)
        with padded_input(pool, dy, flipped) as padded:
            conv_forward(dx, padded, flipped_filter(w, depth // w.shape[2]), (1, 1), dilations, pool)
        return dx
    if not has_padding(pads):
        dx = np.zeros(in_shape, dtype)
        if dx.size and dy.size:
            conv_input_grad(dx, dy, w, strides, dilations, scratch(k))
        return dx
    if not dy.size or not n * in_h * in_w * depth:
        return np.zeros(in_shape, dtype)
    (top, bottom), (left, right) = pads[1], pads[2]
    pool = scratch(k)
    with pool.borrow("padded", (n, in_h + top + bottom, in_w + left + right, depth), dtype) as padded:
        padded[...] = 0
        conv_input_grad(padded, dy, w, strides, dilations, pool)
        return padded[:, top:top + in_h, left:left + in_w, :].copy()


# -- Conv2DBackpropFilter ----------------------------------------------------------------------------------
def _conv2d_backprop_filter_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("strides", "dilations"))
    _require_rank4(b, 0, "input")
    dy = _require_rank4(b, 2, "out_backprop")
    sizes = _sizes(b, 1, "filter_sizes")
    if sizes.ndims not in (None, 4):
        raise b.error(f"filter_sizes must have 4 elements, got {sizes.ndims}")
    try:
        return (sizes if sizes.ndims == 4 else unknown_shape(4)).merge_with(
            TensorShape([None, None, None, dy[_spatial_index(b.attrs["data_format"])[2]]]))
    except ValueError:
        raise b.error(f"filter_sizes {sizes} and out_backprop {dy} differ in the output depth") from None


@op("Conv2DBackpropFilter", inputs="input: T, filter_sizes: int32, out_backprop: T", outputs="output: T",
    types={"T": FLOAT}, attrs=dict(_CONV_ATTR_DEFAULTS), shape=_conv2d_backprop_filter_shape)
def conv2d_backprop_filter_op(k, input, filter_sizes, out_backprop):  # noqa: A002
    _check_conv_attrs(k)
    x, dy = widen(_nhwc(np.asarray(input), k.data_format)), widen(_nhwc(np.asarray(out_backprop), k.data_format))
    if x.ndim != 4 or dy.ndim != 4:
        raise ValueError(f"Conv2DBackpropFilter '{k.name}': input and out_backprop must be 4-D, got shapes "
                         f"{list(np.shape(input))} and {list(np.shape(out_backprop))}")
    filter_shape = tuple(_sizes_value(k, filter_sizes, "filter_sizes", (4,)))
    strides, dilations, pads = _conv_geometry(k, x.shape, filter_shape, dy.shape)
    return conv2d_filter_grad_nhwc(k, x, dy, filter_shape, pads, strides, dilations).astype(k.out_dtypes[0],
                                                                                            copy=False)


def conv2d_filter_grad_nhwc(k: Any, x: np.ndarray, dy: np.ndarray, filter_shape: tuple[int, ...], pads: tuple,
                            strides: tuple[int, int], dilations: tuple[int, int]) -> np.ndarray:
    """The filter gradient as a fresh array: (the patch matrix of the padded input)ᵀ · dy, one GEMM per group
    (`conv_util.conv_filter_grad`), the padded input and the patch matrix reused from `k`'s scratch."""
    dw = np.empty(filter_shape, np.result_type(x, dy))
    if not (x.size and dy.size):
        dw[...] = 0
        return dw
    pool = scratch(k)
    with padded_input(pool, x, pads) as padded:
        conv_filter_grad(dw, padded, np.ascontiguousarray(dy), strides, dilations, pool)
    return dw


@conv2d_backprop_input_op.gradient
def _conv2d_backprop_input_grad(op: Operation, grad: Tensor) -> list[Any]:
    _, w, dy = op.inputs
    attrs = conv_attrs(op)
    return [None, conv2d_backprop_filter_op(grad, shape_of(w), dy, **attrs), conv2d_op(grad, w, **attrs)]


@conv2d_backprop_filter_op.gradient
def _conv2d_backprop_filter_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, _, dy = op.inputs
    attrs = conv_attrs(op)
    return [conv2d_backprop_input_op(shape_of(x), grad, dy, **attrs), None, conv2d_op(x, grad, **attrs)]


# -- MaxPoolGrad / MaxPoolGradGrad --------------------------------------------------------------------------
def _pool_geometry(k, in_h: int, in_w: int) -> tuple:
    """((kh, kw), (sh, sw), (oh, ow), paddings) of a pool over an NHWC input of that height and width."""
    _only_spatial(k, k.ksize, "ksize", "Pooling is not yet supported on the batch or depth dimension.")
    _only_spatial(k, k.strides, "strides", "Pooling is not yet supported on the batch or depth dimension.")
    h, w, _ = _spatial_index(k.data_format)
    kh, kw = int(k.ksize[h]), int(k.ksize[w])
    oh, ow, pads = _geometry(k, in_h, in_w, kh, kw, [1, 1, 1, 1])
    return (kh, kw), (int(k.strides[h]), int(k.strides[w])), (oh, ow), pads


def _first_max_hits(k, x: np.ndarray, pool: Scratch) -> tuple[list[tuple[int, np.ndarray]], tuple]:
    """(`conv_util.first_max_hits` of MaxPool over NHWC `x`, the pool's geometry)."""
    ksize, strides, out_hw, pads = geometry = _pool_geometry(k, x.shape[1], x.shape[2])
    return first_max_hits(x, ksize, strides, out_hw, pads, pool), geometry


def _max_positions(k, x: np.ndarray) -> np.ndarray:
    """For each MaxPool output of NHWC `x`: the flat spatial index (row * width + column) of its window's first
    maximum, -1 for a window with no input element."""
    hits, ((_, kw), (sh, sw), (oh, ow), pads) = _first_max_hits(k, x, scratch(k))
    where = np.full((x.shape[0], oh, ow, x.shape[3]), -1, np.int64)
    for o, hit in hits:
        where += hit * (o + 1)
    rows = (np.arange(oh) * sh - pads[1][0])[None, :, None, None] + where // kw
    cols = (np.arange(ow) * sw - pads[2][0])[None, None, :, None] + where % kw
    return np.where(where >= 0, rows * x.shape[2] + cols, -1)


def _max_pool_grad_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("ksize", "strides"))
    for i, arg in ((1, "orig_output"), (2, "grad")):
        _require_rank4(b, i, arg)
    return _require_rank4(b, 0, "orig_input")


_POOL_ATTRS = {"ksize": REQUIRED, "strides": REQUIRED, "padding": REQUIRED, "data_format": "NHWC"}


@op("MaxPoolGrad", inputs="orig_input: T, orig_output: T, grad: T", outputs="output: T", types={"T": REAL},
    type_defaults={"T": dtypes.float32}, attrs={**_POOL_ATTRS, "explicit_paddings": []}, shape=_max_pool_grad_shape)
def max_pool_grad_op(k, orig_input, orig_output, grad):
    x, g = _nhwc(np.asarray(orig_input), k.data_format), _nhwc(np.asarray(grad), k.data_format)
    if x.ndim != 4 or g.ndim != 4 or np.ndim(orig_output) != 4:
        raise ValueError(f"MaxPoolGrad '{k.name}': orig_input, orig_output and grad must be 4-D, got shapes "
                         f"{list(np.shape(orig_input))}, {list(np.shape(orig_output))} and {list(np.shape(grad))}")
    hits, ((_, kw), strides, out_hw, pads) = _first_max_hits(k, x, scratch(k))
    n, in_h, in_w, depth = x.shape
    if g.shape != (n, *out_hw, depth):
        raise ValueError(f"MaxPoolGrad '{k.name}': grad has shape {list(g.shape)} (NHWC), but the pool's output has "
                         f"shape {[n, *out_hw, depth]}")
    (top, bottom), (left, right) = pads[1], pads[2]
    g = widen(g)
    dx = np.zeros((n, in_h + top + bottom, in_w + left + right, depth), g.dtype)
    if g.size:
        # each offset adds the gradients of the windows whose maximum it holds into the slice it reads
        add_where = masked_adder(g)
        for o, hit in hits:
            add_where(dx[(slice(None), *offset_slices(o // kw, o % kw, out_hw, strides, (1, 1)))], g, hit)
    dx = dx[:, top:top + in_h, left:left + in_w, :]
    return _from_nhwc(dx, k.data_format).astype(k.out_dtypes[0], copy=False)


def _max_pool_grad_grad_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("ksize", "strides"))
    _require_rank4(b, 0, "orig_input")
    _require_rank4(b, 2, "grad")
    return _require_rank4(b, 1, "orig_output")


@op("MaxPoolGradGrad", inputs="orig_input: T, orig_output: T, grad: T", outputs="output: T", types={"T": REAL},
    attrs=dict(_POOL_ATTRS), shape=_max_pool_grad_grad_shape)
def max_pool_grad_grad_op(k, orig_input, orig_output, grad):
    x, g = _nhwc(np.asarray(orig_input), k.data_format), _nhwc(np.asarray(grad), k.data_format)
    if x.ndim != 4 or g.shape != x.shape:
        raise ValueError(f"MaxPoolGradGrad '{k.name}': orig_input and grad must be 4-D of the same shape, got "
                         f"{list(np.shape(orig_input))} and {list(np.shape(grad))}")
    pool = scratch(k)
    hits, ((_, kw), strides, out_hw, pads) = _first_max_hits(k, x, pool)
    out = np.zeros((x.shape[0], *out_hw, x.shape[3]), g.dtype)
    if out.size:
        # each output takes the gradient at its window's maximum: one masked add per window offset
        add_where = masked_adder(g)
        with padded_input(pool, g, pads) as padded:
            for o, hit in hits:
                add_where(out, padded[(slice(None), *offset_slices(o // kw, o % kw, out_hw, strides, (1, 1)))], hit)
    return _from_nhwc(out, k.data_format).astype(k.out_dtypes[0], copy=False)


def _pool_attrs(op: Operation, explicit: bool) -> dict[str, Any]:
    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}
    if explicit:
        attrs["explicit_paddings"] = op.get_attr("explicit_paddings")
    return attrs


@max_pool_grad_op.gradient
def _max_pool_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    from asyncflow.ops.array import zeros_like

    x, y, _ = op.inputs
    if op.get_attr("padding") == "EXPLICIT":  # MaxPoolGradGrad has no explicit padding, as in TF
        raise ValueError(f"MaxPoolGrad '{op.name}': no second derivative for EXPLICIT padding (MaxPoolGradGrad "
                         f"takes SAME or VALID only)")
    return [zeros_like(x), zeros_like(y), max_pool_grad_grad_op(x, y, grad, **_pool_attrs(op, explicit=False))]


@max_pool_grad_grad_op.gradient
def _max_pool_grad_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    from asyncflow.ops.array import zeros_like

    x, y, _ = op.inputs
    return [zeros_like(x), zeros_like(y), max_pool_grad_op(x, y, grad, **_pool_attrs(op, explicit=False))]


# -- AvgPoolGrad --------------------------------------------------------------------------------------------
def _avg_pool_grad_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("ksize", "strides"))
    _require_rank4(b, 1, "grad")
    sizes = _sizes(b, 0, "orig_input_shape")
    if sizes.ndims not in (None, 4):
        raise b.error(f"orig_input_shape must have 4 elements, got {sizes.ndims}")
    return sizes if sizes.ndims == 4 else unknown_shape(4)


@op("AvgPoolGrad", inputs="orig_input_shape: int32, grad: T", outputs="output: T", types={"T": FLOAT},
    attrs=dict(_POOL_ATTRS), shape=_avg_pool_grad_shape)
def avg_pool_grad_op(k, orig_input_shape, grad):
    sizes = _sizes_value(k, orig_input_shape, "orig_input_shape", (4,))
    h, w, c = _spatial_index(k.data_format)
    n, in_h, in_w, depth = sizes[0], sizes[h], sizes[w], sizes[c]
    g = widen(_nhwc(np.asarray(grad), k.data_format))
    (kh, kw), (sh, sw), (oh, ow), pads = _pool_geometry(k, in_h, in_w)
    if g.shape != (n, oh, ow, depth):
        raise ValueError(f"AvgPoolGrad '{k.name}': grad has shape {list(g.shape)} (NHWC), but pooling an input of "
                         f"shape {[n, in_h, in_w, depth]} gives {[n, oh, ow, depth]}")
    (top, bottom), (left, right) = pads[1], pads[2]
    padded = np.zeros((n, in_h + top + bottom, in_w + left + right, depth), g.dtype)
    if g.size:
        counts = np.outer(_valid_counts(in_h, kh, sh, oh, top), _valid_counts(in_w, kw, sw, ow, left))
        share = g / counts.astype(g.dtype)[None, :, :, None]
        for a in range(kh):
            for b in range(kw):
                rows, cols = offset_slices(a, b, (oh, ow), (sh, sw), (1, 1))
                padded[:, rows, cols, :] += share
    dx = padded[:, top:top + in_h, left:left + in_w, :]
    return _from_nhwc(dx, k.data_format).astype(k.out_dtypes[0], copy=False)


@avg_pool_grad_op.gradient
def _avg_pool_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [None, avg_pool_op(grad, **_pool_attrs(op, explicit=False))]
