"""`af.nn` names TF1 programs still meet that the other nn_* modules lack, each built from ops already
declared (no kernel here): the nn homes of space_to_batch / space_to_depth /
depth_to_space, the pooling spellings max_pool2d, avg_pool2d, max_pool_v2 and avg_pool_v2, the public
conv2d_backprop_input / conv2d_backprop_filter and depthwise_conv2d_native_backprop_input / _filter
wrappers (+ TF1's depthwise_conv2d_backprop_* names), conv1d_transpose, silu, compute_average_loss,
scale_regularization_loss (one replica: no distribution strategy) and
batch_norm_with_global_normalization. Names, name scopes and argument handling follow TF 2.21's
nn_ops.py / nn_impl.py / nn_impl_distribute.py.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.array_extra import depth_to_space, space_to_depth
from asyncflow.ops.array_more import space_to_batch
from asyncflow.ops.check_ops import assert_integer, assert_scalar
from asyncflow.ops.math_more import div_no_nan
from asyncflow.ops.nn_conv import _convert_padding, _get_sequence, _pool_api, avg_pool, max_pool_op
from asyncflow.ops.nn_conv_backprop import conv2d_backprop_filter_op, conv2d_backprop_input_op
from asyncflow.ops.nn_conv_extra import (
    depthwise_conv2d_native_backprop_filter_op,
    depthwise_conv2d_native_backprop_input_op,
)
from asyncflow.ops.nn_extra import swish
from asyncflow.ops.nn_norm import batch_normalization
from asyncflow.ops.nn_pool_extra import avg_pool1d, max_pool1d
from asyncflow.ops.registry import convert_to_tensor

__all__ = [
    "space_to_batch", "space_to_depth", "depth_to_space", "max_pool2d", "avg_pool2d",
    "max_pool_v2", "avg_pool_v2", "conv2d_backprop_input", "conv2d_backprop_filter",
    "depthwise_conv2d_native_backprop_input", "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter", "conv1d_transpose", "silu",
    "compute_average_loss", "scale_regularization_loss", "batch_norm_with_global_normalization",
]

silu = swish  # TF exports one function under both names
avg_pool2d = avg_pool  # tf.compat.v1.nn.avg_pool2d is the v1 avg_pool (value=, input=)


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """`af.nn.max_pool2d`: max_pool with TF2's argument names; ksize and strides may be ints."""
    return _pool_api(max_pool_op, "MaxPool2d", input, ksize, strides, padding, data_format, name)


def _pool_rank(input: Any, data_format: str | None, fn: str) -> int:  # noqa: A002
    rank = convert_to_tensor(input).shape.ndims
    if rank is None:
        if data_format is None:
            raise ValueError(f"{fn}: `input` must have a static shape or a data format must be given. Received: "
                             f"input.shape=<unknown> and data_format=None")
        rank = len(data_format)
    if not 3 <= rank <= 5:
        raise ValueError(f"{fn}: `input.shape.rank` must be 3, 4 or 5. Received: input of rank {rank}.")
    if rank == 5:
        raise NotImplementedError(f"{fn}: 3-D pooling (MaxPool3D / AvgPool3D) is not in asyncflow yet")
    return rank - 2


def max_pool_v2(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str | None = None,  # noqa: A002
                name: str | None = None) -> Tensor:
    """`af.nn.max_pool_v2`: max pooling over the 1 or 2 spatial dims of a rank-3 or rank-4 input."""
    if _pool_rank(input, data_format, "max_pool_v2") == 1:
        return max_pool1d(input, ksize, strides, padding, data_format or "NWC", name)
    return max_pool2d(input, ksize, strides, padding, data_format or "NHWC", name)


def avg_pool_v2(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str | None = None,  # noqa: A002
                name: str | None = None) -> Tensor:
    """`af.nn.avg_pool_v2`: average pooling over the 1 or 2 spatial dims of a rank-3 or rank-4 input."""
    if _pool_rank(input, data_format, "avg_pool_v2") == 1:
        return avg_pool1d(input, ksize, strides, padding, data_format or "NWC", name)
    return avg_pool(input, ksize, strides, padding, data_format or "NHWC", name)


def _lookup(new_name: str, new: Any, old_name: str, old: Any) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return old if new is None else new


def conv2d_backprop_input(input_sizes: Any, filter: Any = None, out_backprop: Any = None,  # noqa: A002
                          strides: Any = None, padding: Any = None, use_cudnn_on_gpu: bool = True,
                          data_format: str = "NHWC", dilations: Any = (1, 1, 1, 1), name: str | None = None,
                          filters: Any = None) -> Tensor:
    """`af.nn.conv2d_backprop_input`: the gradient of conv2d with respect to its input (op Conv2DBackpropInput);
    strides and dilations are 4-lists."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    padding, explicit = _convert_padding(padding)
    return conv2d_backprop_input_op(input_sizes, filter, out_backprop, strides=list(strides), padding=padding,
                                    use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=explicit,
                                    data_format=data_format, dilations=list(dilations), name=name)


def conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any, strides: Any, padding: Any,  # noqa: A002
                           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = (1, 1, 1, 1),
                           name: str | None = None) -> Tensor:
    """`af.nn.conv2d_backprop_filter`: the gradient of conv2d with respect to its filter (Conv2DBackpropFilter)."""
    padding, explicit = _convert_padding(padding)
    return conv2d_backprop_filter_op(input, filter_sizes, out_backprop, strides=list(strides), padding=padding,
                                     use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=explicit,
                                     data_format=data_format, dilations=list(dilations), name=name)


def depthwise_conv2d_native_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                           strides: Any, padding: Any, data_format: str = "NHWC",
                                           dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Tensor:
    """`af.nn.depthwise_conv2d_native_backprop_input`: the input gradient of depthwise_conv2d_native."""
    padding, explicit = _convert_padding(padding)
    return depthwise_conv2d_native_backprop_input_op(input_sizes, filter, out_backprop, strides=list(strides),
                                                     padding=padding, explicit_paddings=explicit,
                                                     data_format=data_format, dilations=list(dilations), name=name)


def depthwise_conv2d_native_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                            strides: Any, padding: Any, data_format: str = "NHWC",
                                            dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Tensor:
    """`af.nn.depthwise_conv2d_native_backprop_filter`: the filter gradient of depthwise_conv2d_native."""
    padding, explicit = _convert_padding(padding)
    return depthwise_conv2d_native_backprop_filter_op(input, filter_sizes, out_backprop, strides=list(strides),
                                                      padding=padding, explicit_paddings=explicit,
                                                      data_format=data_format, dilations=list(dilations), name=name)


depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """`af.nn.conv1d_transpose`: the transpose of conv1d, as TF: ExpandDims of both, one
    Conv2DBackpropInput over a height of 1, Squeeze."""
    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        if data_format is None or data_format == "NWC":
            fmt, spatial_start, channel_index = "NHWC", 1, 2
        elif data_format == "NCW":
            fmt, spatial_start, channel_index = "NCHW", 2, 1
        else:
            raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
        strides = [1] + _get_sequence(strides, 1, channel_index, "stride")
        dilations = [1] + _get_sequence(dilations, 1, channel_index, "dilations")
        input = array.expand_dims(input, spatial_start)  # noqa: A001
        filters = array.expand_dims(filters, 0)
        output_shape = output_shape if isinstance(output_shape, Tensor) else list(output_shape)
        output_shape = array.concat([output_shape[:spatial_start], [1], output_shape[spatial_start:]], 0)
        result = conv2d_backprop_input_op(output_shape, filters, input, strides=strides, padding=padding,
                                          data_format=fmt, dilations=dilations, name=scope)
        return array.squeeze(result, [spatial_start])


def compute_average_loss(per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None) -> Tensor:
    """`af.nn.compute_average_loss`: sum(per_example_loss * sample_weight) / global_batch_size (0 when that is 0);
    the batch size defaults to the loss's first dimension (one replica)."""
    per_example_loss = convert_to_tensor(per_example_loss)
    input_dtype = per_example_loss.dtype.base_dtype
    if per_example_loss.shape.ndims == 0:
        raise ValueError(f"Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
                         f"Received per_example_loss={per_example_loss} with rank 0")
    if sample_weight is not None:
        # TF scales in float32 and matches the weights' rank to the losses' first.
        losses = math.cast(per_example_loss, dtypes.float32)
        weights = math.cast(convert_to_tensor(sample_weight), dtypes.float32)
        lr, wr = losses.shape.ndims, weights.shape.ndims
        if lr is not None and wr is not None:
            if wr - lr == 1:
                weights = array.squeeze(weights, [-1])
            elif lr - wr == 1:
                weights = array.expand_dims(weights, -1)
        per_example_loss = math.multiply(losses, weights)
    per_example_loss = math.cast(per_example_loss, input_dtype)
    if global_batch_size is None:
        global_batch_size = array.shape(per_example_loss)[0]
    global_batch_size = convert_to_tensor(global_batch_size)
    assert_scalar(global_batch_size, message="global_batch_size must be scalar.")
    assert_integer(global_batch_size, message="global_batch_size must be an integer.")
    loss = math.reduce_sum(per_example_loss)
    return div_no_nan(loss, math.cast(global_batch_size, input_dtype))


def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    """`af.nn.scale_regularization_loss`: sum(regularization_loss) / the number of replicas (here one)."""
    return math.reduce_sum(regularization_loss) / 1


def batch_norm_with_global_normalization(t: Any = None, m: Any = None, v: Any = None, beta: Any = None,
                                         gamma: Any = None, variance_epsilon: Any = None,
                                         scale_after_normalization: Any = None, name: str | None = None,
                                         input: Any = None, mean: Any = None,  # noqa: A002
                                         variance: Any = None) -> Tensor:
    """`af.nn.batch_norm_with_global_normalization` (deprecated in TF1): batch_normalization of `t` with the
    given moments, scaled by `gamma` only when `scale_after_normalization`."""
    t = _lookup("input", input, "t", t)
    m = _lookup("mean", mean, "m", m)
    v = _lookup("variance", variance, "v", v)
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None, variance_epsilon, name)
