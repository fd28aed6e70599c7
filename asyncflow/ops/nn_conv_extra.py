"""More convolutions and pooling of `af.nn`, as `tf.compat.v1.nn`: conv1d, conv2d_transpose,
DepthwiseConv2dNative (and its two backprop ops), depthwise_conv2d, separable_conv2d, atrous_conv2d(_transpose),
the generic convolution / pool, max_pool1d / avg_pool1d and MaxPoolWithArgmax.

Everything reuses the arithmetic of `nn_conv` / `nn_conv_backprop`: 1-D ops are TF1's expand_dims + 2-D op +
squeeze; conv2d_transpose is TF's Conv2DBackpropInput; a depthwise convolution with channel multiplier M over C
channels is a grouped convolution with C groups (the filter [KH, KW, C, M] read as [KH, KW, 1, C*M], which keeps
TF's output channel order c*M + m), so its kernels call the grouped Conv2D helpers. Dilation (`rate`) is the
ops' `dilations` attr rather than TF's SpaceToBatchND wrapping: the values are the same, the graph is smaller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array
from asyncflow.ops.nn_conv import (
    _convert_padding,
    _get_sequence,
    conv2d_op,
)
from asyncflow.ops.nn_conv_backprop import (
    conv2d_backprop_input_op,
)
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.shapes import Dimension


def _alias(new_name: str, new: Any, old_name: str, old: Any) -> Any:
    """TF's `deprecated_argument_lookup`: one of two spellings of an argument, never both."""
    if new is not None:
        if old is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return new
    return old


def _dims_equal(op_name: str, a: Any, b: Any, what: str) -> None:
    """TF's shape-function merge of two dimensions, as a ValueError naming the op when both are known and differ."""
    a, b = Dimension(a).value, Dimension(b).value
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b} for '{op_name}' ({what})")


# -- conv1d ---------------------------------------------------------------------------------------------------
def _format_1d(data_format: str | None) -> tuple[str, int, int]:
    """(2-D data format, axis where the dummy spatial dimension goes, channel index of the 1-D layout)."""
    if data_format in (None, "NHWC", "NWC"):
        return "NHWC", -3, 2
    if data_format in ("NCHW", "NCW"):
        return "NCHW", -2, 1
    raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
           use_cudnn_on_gpu: bool | None = None, data_format: str | None = None, name: str | None = None,
           input: Any = None, dilations: Any = None) -> Tensor:  # noqa: A002 - TF's argument names
    """`af.nn.conv1d`: `value` [N, W, C] (NWC) or [N, C, W] (NCW) convolved with `filters` [KW, C, F],
    as TF1: ExpandDims of both, one Conv2D over a height of 1, Squeeze."""
    value = _alias("input", input, "value", value)
    with name_scope(name, "conv1d", [value, filters]) as scope:
        fmt, spatial_start, channel_index = _format_1d(data_format)
        strides = [1] + _get_sequence(stride, 1, channel_index, "stride")
        dilations = [1] + _get_sequence(dilations, 1, channel_index, "dilations")
        value = array.expand_dims(value, spatial_start)
        filters = array.expand_dims(filters, 0)
        if value.shape.ndims is not None and value.shape.ndims > 4:
            raise ValueError(f"conv1d '{scope[:-1]}': input must be rank 3 (batch, width, channels), got shape "
                             f"{value.shape[:spatial_start]}{value.shape[spatial_start + 1:]}")
        attrs: dict[str, Any] = {}
        if use_cudnn_on_gpu is not None:
            attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
        result = conv2d_op(value, filters, strides=strides, padding=padding, data_format=fmt, dilations=dilations,
                           name=scope, **attrs)
        return array.squeeze(result, [spatial_start])


# -- conv2d_transpose ------------------------------------------------------------------------------------------
def conv2d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None,  # noqa: A002
                     strides: Any = None, padding: Any = "SAME", data_format: str = "NHWC", name: str | None = None,
                     input: Any = None, filters: Any = None, dilations: Any = None) -> Tensor:  # noqa: A002
    """`af.nn.conv2d_transpose`: the transpose (input gradient) of conv2d: `value` [N, H, W, in] with `filter`
    [KH, KW, out, in] gives `output_shape`; TF's Conv2DBackpropInput op."""
    value = _alias("input", input, "value", value)
    filter = _alias("filters", filters, "filter", filter)
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        data_format = data_format or "NHWC"
        channel_index = 1 if data_format.startswith("NC") else 3
        strides = _get_sequence(strides, 2, channel_index, "strides")
        dilations = _get_sequence(dilations, 2, channel_index, "dilations")
        padding, explicit = _convert_padding(padding)
        value = convert_to_tensor(value, name="out_backprop")
        filter = convert_to_tensor(filter, dtype=value.dtype.base_dtype, name="filter")
        _check_transpose_shapes(scope[:-1], value, filter, output_shape, data_format)
        output_shape = convert_to_tensor(output_shape, dtype=dtypes.int32, name="input_sizes")
        return conv2d_backprop_input_op(output_shape, filter, value, strides=strides, padding=padding,
                                        explicit_paddings=explicit, data_format=data_format, dilations=dilations,
                                        name=scope)


def _check_transpose_shapes(op_name: str, value: Tensor, filter: Tensor, output_shape: Any,  # noqa: A002
                            data_format: str) -> None:
    """What TF's Conv2DBackpropInput shape function merges: value's depth with the filter's last dimension and,
    when output_shape is a constant of 4, its batch with value's batch."""
    x, f = value.shape, filter.shape
    if x.ndims == 4 and f.ndims == 4:
        c = 1 if data_format.startswith("NC") else 3
        _dims_equal(op_name, x[c], f[3], f"value {x} has {x[c]} channels, filter {f} takes {f[3]}")
    if x.ndims == 4 and isinstance(output_shape, (list, tuple, np.ndarray)) and np.ndim(output_shape) == 1 \
            and len(output_shape) == 4 and not any(isinstance(v, Tensor) for v in output_shape):
        _dims_equal(op_name, output_shape[0], x[0], f"output_shape {list(output_shape)} and value {x} differ in "
                                                    f"the batch dimension")


__all__ = ["conv1d", "conv2d_transpose"]
