"""Convolution and pooling ops of `af.nn`: Conv2D, MaxPool, AvgPool (NHWC, and NCHW by transposing).

One padding rule serves all three (`_window`): VALID, SAME (TF's split, the extra pixel after)
and EXPLICIT. Conv2D is im2col per chunk of the batch and one GEMM per chunk (`conv_util`, whose
scratch buffers live on the kernel context); the pools loop over the few window offsets, never over
pixels. 16-bit floats compute in float32.

Each op's gradient sits below it and builds TF's backward ops (Conv2DBackpropInput/Filter,
MaxPoolGrad, AvgPoolGrad), which are declared with their own gradients in `nn_conv_backprop.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops.conv_util import conv_forward, padded_input, scratch
from asyncflow.ops.registry import FLOAT, REAL, REQUIRED, BuildContext, op
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

_PADDINGS = ("SAME", "VALID", "EXPLICIT")


# -- geometry shared by conv and pools --------------------------------------------------------------
def _window(size: int | None, k: int, stride: int, dilation: int, padding: str, pads: tuple[int, int],
            where: Any) -> tuple[int | None, int, int]:
    """(output size, padding before, padding after) of one spatial dimension, as TF computes them."""
    eff = (k - 1) * dilation + 1
    if size is None:
        return None, 0, 0
    if padding == "VALID":
        if size < eff:
            raise where(f"Negative dimension size caused by subtracting {eff} from {size}")
        return (size - eff) // stride + 1, 0, 0
    if padding == "SAME":
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2, total - total // 2
    before, after = pads
    if size + before + after < eff:
        raise where(f"Computed output size would be negative: input {size} + padding {before}+{after} is "
                    f"smaller than the window {eff}")
    return (size + before + after - eff) // stride + 1, before, after


def _spatial_index(data_format: str) -> tuple[int, int, int]:
    """(H, W, C) positions in the 4-D layout."""
    return (2, 3, 1) if data_format == "NCHW" else (1, 2, 3)


def _check_common(b: BuildContext, list_attrs: Sequence[str]) -> None:
    a = b.attrs
    if a["data_format"] not in ("NHWC", "NCHW"):
        raise b.error(f"data_format must be 'NHWC' or 'NCHW', got {a['data_format']!r}")
    if a["padding"] not in _PADDINGS[: 3 if "explicit_paddings" in a else 2]:
        allowed = ", ".join(f'"{p}"' for p in _PADDINGS[: 3 if "explicit_paddings" in a else 2])
        raise b.error(f"Attr 'padding' passed string {a['padding']!r} not in: {allowed}.")
    for name in list_attrs:
        if len(a[name]) != 4:
            raise b.error(f"{name} must have 4 elements (one per dimension of {a['data_format']}), got {a[name]}")
        if any(int(v) < 1 for v in a[name]):
            raise b.error(f"{name} must be positive, got {a[name]}")
    explicit = list(a.get("explicit_paddings", []))
    if a["padding"] == "EXPLICIT":
        c = _spatial_index(a["data_format"])[2]
        if len(explicit) != 8 or any(int(v) < 0 for v in explicit):
            raise b.error(f"explicit_paddings must be 8 non-negative values, got {explicit}")
        if any(explicit[2 * d] or explicit[2 * d + 1] for d in (0, c)):
            raise b.error(f"Nonzero explicit padding in the batch or depth dimensions is not supported "
                          f"(explicit_paddings={explicit})")
    elif explicit:
        raise b.error(f"explicit_paddings must be empty unless padding is EXPLICIT, got {explicit}")


def _pads(attrs: dict, dim: int) -> tuple[int, int]:
    explicit = list(attrs.get("explicit_paddings", [])) or [0] * 8
    return int(explicit[2 * dim]), int(explicit[2 * dim + 1])


def _require_rank4(b: BuildContext, i: int, arg: str) -> TensorShape:
    s = b.shape(i)
    if s.ndims is not None and s.ndims != 4:
        raise b.error(f"Shape must be rank 4 but is rank {s.ndims} ({arg} has shape {s})")
    return s if s.ndims is not None else unknown_shape(4)


def _nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if data_format == "NCHW" else x


def _from_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if data_format == "NCHW" else x


_NARROW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def widen(x: Any) -> np.ndarray:
    """16-bit floats widened to float32 for the arithmetic (the result is rounded once); others as they are."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype in _NARROW else x


def _only_spatial(k, values: Sequence[int], what: str, message: str) -> None:
    c = _spatial_index(k.data_format)[2]
    if int(values[0]) != 1 or int(values[c]) != 1:
        raise errors.UnimplementedError(None, None, f"{k.op_type} '{k.name}': {message} ({what}={list(values)})")


def _geometry(k, in_h: int, in_w: int, kh: int, kw: int, dilations: Sequence[int]) -> tuple:
    h, w, _ = _spatial_index(k.data_format)

    def fail(msg: str) -> ValueError:
        return ValueError(f"{k.op_type} '{k.name}': {msg}")

    oh, pt, pb = _window(in_h, kh, int(k.strides[h]), int(dilations[h]), k.padding, _pads(k.__dict__, h), fail)
    ow, pl, pr = _window(in_w, kw, int(k.strides[w]), int(dilations[w]), k.padding, _pads(k.__dict__, w), fail)
    return oh, ow, ((0, 0), (pt, pb), (pl, pr), (0, 0))


# -- Conv2D -------------------------------------------------------------------------------------------
def _conv2d_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("strides", "dilations"))
    x = _require_rank4(b, 0, "input")
    f = _require_rank4(b, 1, "filter")
    h, w, c = _spatial_index(b.attrs["data_format"])
    in_depth, f_depth, out_depth = x[c].value, f[2].value, f[3].value
    if in_depth is not None and f_depth is not None:
        if f_depth == 0 or in_depth % f_depth:
            raise b.error(f"Depth of input ({in_depth}) is not a multiple of input depth of filter ({f_depth}): "
                          f"input shape {x}, filter shape {f}")
        groups = in_depth // f_depth
        if out_depth is not None and out_depth % groups:
            raise b.error(f"Depth of output ({out_depth}) is not a multiple of the number of groups ({groups}): "
                          f"input shape {x}, filter shape {f}")
    a = b.attrs
    dims: list[Any] = [None] * 4
    dims[0] = x[0]
    dims[c] = f[3]
    for spatial, kdim in ((h, 0), (w, 1)):
        k = f[kdim].value
        if k is None:
            continue

        def fail(msg: str) -> ValueError:
            return b.error(f"{msg}: input shape {x}, filter shape {f}")

        out, _, _ = _window(x[spatial].value, k, int(a["strides"][spatial]), int(a["dilations"][spatial]),
                            a["padding"], _pads(a, spatial), fail)
        dims[spatial] = out
    return TensorShape([d if isinstance(d, Dimension) else Dimension(d) for d in dims])


@op("Conv2D", inputs="input: T, filter: T", outputs="output: T",
    types={"T": (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32)},
    attrs={"strides": REQUIRED, "use_cudnn_on_gpu": True, "padding": REQUIRED, "explicit_paddings": [],
           "data_format": "NHWC", "dilations": [1, 1, 1, 1]},
    shape=_conv2d_shape)
def conv2d_op(k, input, filter):  # noqa: A002 - TF's argument names
    _only_spatial(k, k.strides, "strides", "Current implementation does not yet support strides in the batch "
                                           "and depth dimensions.")
    _only_spatial(k, k.dilations, "dilations", "Current implementation does not yet support dilations in the "
                                               "batch and depth dimensions.")
    x = widen(_nhwc(np.asarray(input), k.data_format))
    w = widen(np.asarray(filter))
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"Conv2D '{k.name}': input and filter must be 4-D, got shapes {list(np.shape(input))} "
                         f"and {list(np.shape(filter))}")
    n, in_h, in_w, depth = x.shape
    kh, kw, f_depth, out_depth = w.shape
    if f_depth == 0 or depth % f_depth or out_depth % (depth // f_depth):
        raise ValueError(f"Conv2D '{k.name}': input depth {depth} must be a multiple of the filter's input depth "
                         f"{f_depth} (filter shape {list(w.shape)})")
    h, w_, _ = _spatial_index(k.data_format)
    sh, sw = int(k.strides[h]), int(k.strides[w_])
    dh, dw = int(k.dilations[h]), int(k.dilations[w_])
    oh, ow, pads = _geometry(k, in_h, in_w, kh, kw, k.dilations)
    return _from_nhwc(conv2d_nhwc(k, x, w, (oh, ow), pads, (sh, sw), (dh, dw)), k.data_format).astype(
        k.out_dtypes[0], copy=False)


@conv2d_op.gradient
def _conv2d_grad(op: Operation, grad: Tensor) -> list[Any]:
    from asyncflow.ops.nn_conv_backprop import conv2d_backprop_filter_op, conv2d_backprop_input_op, conv_attrs, shape_of

    x, w = op.inputs
    attrs = conv_attrs(op)
    return [conv2d_backprop_input_op(shape_of(x), w, grad, **attrs),
            conv2d_backprop_filter_op(x, shape_of(w), grad, **attrs)]


def conv2d_nhwc(k: Any, x: np.ndarray, w: np.ndarray, out_hw: tuple[int, int], pads: tuple,
                strides: tuple[int, int], dilations: tuple[int, int]) -> np.ndarray:
    """The (grouped) convolution of NHWC `x` with `w` as a fresh NHWC array: im2col of the padded input and
    one GEMM (`conv_util.conv_forward`), the padded input and the patch matrix reused from `k`'s scratch."""
    n, _, _, depth = x.shape
    out = np.empty((n, *out_hw, w.shape[3]), dtype=np.result_type(x, w))
    if not out.size:
        return out
    if not x.size or not depth:
        out[...] = 0
        return out
    pool = scratch(k)
    with padded_input(pool, x, pads) as padded:
        conv_forward(out, padded, w, strides, dilations, pool)
    return out


def _get_sequence(value: Any, n: int, channel_index: int, name: str) -> list[int]:
    """TF's `_get_sequence`: an int or a list of n or n + 2 values, as a list of n + 2."""
    if value is None:
        return [1] * (n + 2)
    if isinstance(value, (int, np.integer)):
        value = [int(value)]
    value = [int(v) for v in value]
    if len(value) == n + 2:
        return value
    if len(value) == 1:
        value = value * n
    elif len(value) != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. Received: {name}={value} of length "
                         f"{len(value)}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def _convert_padding(padding: Any) -> tuple[Any, list[int]]:
    """TF's `convert_padding`: a list of 4 [before, after] pairs becomes EXPLICIT padding."""
    if padding == "EXPLICIT":
        raise ValueError('"EXPLICIT" is not a valid value for `padding`. To use explicit padding, `padding` must be '
                         'a list.')
    if isinstance(padding, (list, tuple)):
        explicit: list[int] = []
        for i, pair in enumerate(padding):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"When `padding` is a list, each element of `padding` must be a list/tuple of size "
                                 f"2. Received: padding={padding} with element at index {i} of {pair!r}")
            explicit.extend(int(p) for p in pair)
        if len(padding) != 4:
            raise ValueError(f"When padding is a list, it must be of size 4. Received: padding={padding} of size "
                             f"{len(padding)}")
        return "EXPLICIT", explicit
    return padding, []


def _data_format(data_format: str | None) -> str:
    data_format = data_format or "NHWC"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return data_format


def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,  # noqa: A002
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = (1, 1, 1, 1),
           name: str | None = None, filters: Any = None) -> Tensor:
    """`af.nn.conv2d`: 2-D convolution (cross-correlation) of `input` [N,H,W,C] with `filter` [KH,KW,C/G,F]."""
    if filters is not None and filter is not None:
        raise ValueError("Cannot specify both 'filters' and 'filter'.")
    filter = filters if filter is None else filter
    if filter is None:
        raise ValueError("conv2d: the filter (`filter` or `filters`) must be given")
    data_format = _data_format(data_format)
    channel_index = 1 if data_format.startswith("NC") else 3
    padding, explicit = _convert_padding(padding)
    return conv2d_op(input, filter, strides=_get_sequence(strides, 2, channel_index, "strides"),
                     use_cudnn_on_gpu=bool(use_cudnn_on_gpu), padding=padding, explicit_paddings=explicit,
                     data_format=data_format, dilations=_get_sequence(dilations, 2, channel_index, "dilations"),
                     name=name)


# -- pools -----------------------------------------------------------------------------------------------
def _pool_shape(b: BuildContext) -> TensorShape:
    _check_common(b, ("ksize", "strides"))
    x = _require_rank4(b, 0, "input")
    a = b.attrs
    dims = list(x.dims)
    for d in range(4):
        def fail(msg: str) -> ValueError:
            return b.error(f"{msg}: input shape {x}, ksize {list(a['ksize'])}, strides {list(a['strides'])}")

        out, _, _ = _window(x[d].value, int(a["ksize"][d]), int(a["strides"][d]), 1, a["padding"], _pads(a, d),
                            fail)
        dims[d] = Dimension(out)
    return TensorShape(dims)


def _pool_windows(k, x: np.ndarray, fill: Any) -> tuple[np.ndarray, tuple, tuple, tuple[int, int], tuple]:
    """(padded NHWC input, window size, strides, output size, paddings) for a pool kernel."""
    if np.ndim(x) != 4:
        raise ValueError(f"{k.op_type} '{k.name}': input must be 4-D, got shape {list(np.shape(x))}")
    _only_spatial(k, k.ksize, "ksize", "Pooling is not yet supported on the batch or depth dimension.")
    _only_spatial(k, k.strides, "strides", "Pooling is not yet supported on the batch or depth dimension.")
    x = _nhwc(np.asarray(x), k.data_format)
    h, w, _ = _spatial_index(k.data_format)
    kh, kw = int(k.ksize[h]), int(k.ksize[w])
    oh, ow, pads = _geometry(k, x.shape[1], x.shape[2], kh, kw, [1, 1, 1, 1])
    if any(p for pair in pads for p in pair):
        x = np.pad(x, pads, constant_values=fill)
    return x, (kh, kw), (int(k.strides[h]), int(k.strides[w])), (oh, ow), pads


def _offsets(x: np.ndarray, ksize: tuple[int, int], strides: tuple[int, int], out_hw: tuple[int, int]):
    """The strided [n, oh, ow, c] view of x at each window offset (kh * kw of them)."""
    (kh, kw), (sh, sw), (oh, ow) = ksize, strides, out_hw
    for i in range(kh):
        for j in range(kw):
            yield x[:, i : i + (oh - 1) * sh + 1 : sh, j : j + (ow - 1) * sw + 1 : sw, :]


@op("MaxPool", inputs="input: T", outputs="output: T", types={"T": REAL},
    attrs={"ksize": REQUIRED, "strides": REQUIRED, "padding": REQUIRED, "explicit_paddings": [],
           "data_format": "NHWC"},
    shape=_pool_shape)
def max_pool_op(k, input):  # noqa: A002
    x = np.asarray(input)
    lowest = -np.inf if x.dtype.kind == "f" or str(x.dtype) == "bfloat16" else np.iinfo(x.dtype).min
    x, ksize, strides, (oh, ow), _ = _pool_windows(k, x, lowest)
    if oh == 0 or ow == 0:
        return np.zeros((x.shape[0], oh, ow, x.shape[3]), k.out_dtypes[0])
    out = None
    for view in _offsets(x, ksize, strides, (oh, ow)):
        out = view.copy() if out is None else np.maximum(out, view, out=out)
    return _from_nhwc(out, k.data_format).astype(k.out_dtypes[0], copy=False)


@max_pool_op.gradient
def _max_pool_grad(op: Operation, grad: Tensor) -> Tensor:
    from asyncflow.ops.nn_conv_backprop import max_pool_grad_op

    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "explicit_paddings", "data_format")}
    return max_pool_grad_op(op.inputs[0], op.outputs[0], grad, **attrs)


@op("AvgPool", inputs="value: T", outputs="output: T", types={"T": FLOAT},
    attrs={"ksize": REQUIRED, "strides": REQUIRED, "padding": REQUIRED, "data_format": "NHWC"},
    shape=_pool_shape)
def avg_pool_op(k, value):
    x = widen(np.asarray(value))
    n, in_h, in_w, _ = _nhwc(x, k.data_format).shape
    x, ksize, strides, (oh, ow), pads = _pool_windows(k, x, 0)
    total = np.zeros((x.shape[0], oh, ow, x.shape[3]), dtype=x.dtype)
    if total.size == 0:
        return _from_nhwc(total, k.data_format).astype(k.out_dtypes[0])
    for view in _offsets(x, ksize, strides, (oh, ow)):
        total += view
    # SAME averages over the window's elements inside the input only (TF's rule), so count them per axis.
    counts = [_valid_counts(size, kk, s, out, pad[0]) for size, kk, s, out, pad in
              ((in_h, ksize[0], strides[0], oh, pads[1]), (in_w, ksize[1], strides[1], ow, pads[2]))]
    total /= np.outer(counts[0], counts[1]).astype(x.dtype)[None, :, :, None]
    return _from_nhwc(total, k.data_format).astype(k.out_dtypes[0], copy=False)


@avg_pool_op.gradient
def _avg_pool_grad(op: Operation, grad: Tensor) -> Tensor:
    from asyncflow.ops.nn_conv_backprop import avg_pool_grad_op, shape_of

    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}
    return avg_pool_grad_op(shape_of(op.inputs[0]), grad, **attrs)


def _valid_counts(size: int, k: int, stride: int, out: int, pad_before: int) -> np.ndarray:
    start = np.arange(out) * stride - pad_before
    return np.minimum(start + k, size) - np.maximum(start, 0)


def _pool_api(opdef: Any, default_name: str, value: Any, ksize: Any, strides: Any, padding: Any,
              data_format: str | None, name: str | None) -> Tensor:
    with name_scope(name, default_name, [value]) as scope:
        data_format = _data_format(data_format)
        channel_index = 1 if data_format.startswith("NC") else 3
        ksize = _get_sequence(ksize, 2, channel_index, "ksize")
        strides = _get_sequence(strides, 2, channel_index, "strides")
        if any(v == 0 for v in ksize):
            raise ValueError(f"`ksize` cannot be zero. Received: ksize={ksize}")
        attrs: dict[str, Any] = {"ksize": ksize, "strides": strides, "data_format": data_format}
        if opdef is max_pool_op:
            attrs["padding"], attrs["explicit_paddings"] = _convert_padding(padding)
        elif isinstance(padding, (list, tuple)):
            raise TypeError(f"Expected string for argument 'padding' not {padding!r}.")
        else:
            attrs["padding"] = padding
        return opdef(value, name=scope, **attrs)


def max_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",
             name: str | None = None, input: Any = None) -> Tensor:  # noqa: A002
    """`af.nn.max_pool`: the maximum over each window (SAME pads with -inf, so padding never wins)."""
    if input is not None:
        if value is not None:
            raise ValueError("Cannot specify both 'value' and 'input'.")
        value = input
    return _pool_api(max_pool_op, "MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",
             name: str | None = None, input: Any = None) -> Tensor:  # noqa: A002
    """`af.nn.avg_pool`: the mean over each window (SAME: over the window's elements inside the input)."""
    if input is not None:
        if value is not None:
            raise ValueError("Cannot specify both 'value' and 'input'.")
        value = input
    return _pool_api(avg_pool_op, "AvgPool", value, ksize, strides, padding, data_format, name)


__all__ = ["conv2d", "max_pool", "avg_pool"]

from asyncflow.ops import nn_conv_backprop  # noqa: E402, F401 - registers the backward ops (they use this module)
