"""Helpers the v1 layers share: `smart_cond` (a Python bool or a constant picks a branch at build time, a boolean
tensor builds a `cond`), and the argument checks and output-length arithmetic of TF's conv_utils, with its messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from asyncflow import init_ops
from asyncflow.control_flow import cond
from asyncflow.graph import Tensor
from asyncflow.ops import math, nn_extra, nn_ops
from asyncflow.ops.array_identity import get_static_value


def constant_value(pred: Any) -> bool | None:
    """The Python value of a training flag: a bool (or 0/1), a tensor whose value is known at build time, else None."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, (int, np.integer)):
        if pred not in (0, 1):
            raise ValueError(f"`pred` must be a Tensor, a Python bool, or 1 or 0. Received: pred={pred}")
        return bool(pred)
    if isinstance(pred, Tensor) or hasattr(pred, "_as_graph_element"):
        value = get_static_value(pred) if isinstance(pred, Tensor) else None
        return None if value is None else bool(value)
    raise TypeError(f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Received: {pred!r}")


def smart_cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: str | None = None) -> Any:
    """TF's smart_cond: `true_fn()` or `false_fn()` when `pred` is known now, else `cond(pred, true_fn, false_fn)`."""
    value = constant_value(pred)
    if value is None:
        return cond(pred, true_fn, false_fn, name=name)
    return true_fn() if value else false_fn()


def normalize_tuple(value: Any, n: int, name: str, allow_zero: bool = False) -> tuple[int, ...]:
    """An int or n ints as a tuple of n ints (> 0, or >= 0 with `allow_zero`)."""
    message = f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(message) from None
        if len(values) != n:
            raise ValueError(message)
        for v in values:
            try:
                int(v)
            except (ValueError, TypeError):
                raise ValueError(f"{message}including element {v} of type {type(v)}") from None
        values = tuple(int(v) for v in values)
    bad = {v for v in values if (v < 0 if allow_zero else v <= 0)}
    if bad:
        raise ValueError(f"{message} including {bad} that does not satisfy the requirement "
                         f"`{'>= 0' if allow_zero else '> 0'}`.")
    return values


def normalize_padding(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f'The `padding` argument must be one of "valid", "same" (or "causal", only for `Conv1D). '
                         f"Received: {value}")
    padding = value.lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError(f'The `padding` argument must be a list/tuple or one of "valid", "same" (or "causal", only '
                         f"for `Conv1D). Received: {padding}")
    return padding


def normalize_data_format(value: Any) -> str:
    data_format = (value if value is not None else "channels_last").lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", "channels_last". '
                         f"Received: {value}")
    return data_format


def convert_data_format(data_format: str, ndim: int) -> str:
    """'channels_last' -> NWC / NHWC / NDHWC, 'channels_first' -> NCW / NCHW / NCDHW."""
    spatial = {3: "W", 4: "HW", 5: "DHW"}[ndim]
    return f"N{spatial}C" if data_format == "channels_last" else f"NC{spatial}"


def conv_output_length(length: int | None, filter_size: int, padding: str, stride: int, dilation: int = 1):
    """The output length of a convolution or pool along one axis (None if the input length is unknown)."""
    if length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        out = length
    elif padding == "valid":
        out = length - dilated + 1
    else:  # "full"
        out = length + dilated - 1
    return (out + stride - 1) // stride


def deconv_output_length(length: Any, filter_size: int, padding: str, stride: int, dilation: int = 1) -> Any:
    """The output length of a transposed convolution (works on a scalar tensor too: TF's mul/add ops)."""
    if length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    if padding == "valid":
        return length * stride + max(dilated - stride, 0)
    if padding == "full":
        return length * stride - (stride + dilated - 2)
    return length * stride


def validate_axis(axis: Any, rank: int | None) -> list[int]:
    """An int or list of ints as a list of non-negative axes of a rank-`rank` input (Keras's validate_axis)."""
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if rank is None:
        raise ValueError(f"Input has undefined rank. Received: input_shape={rank}.")
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise ValueError(f"Invalid value for `axis` argument. Expected 0 <= axis < inputs.rank (with "
                             f"inputs.rank={rank}). Received: axis={tuple(axes)}")
        if a < 0:
            axes[i] = a + rank
    if len(axes) != len(set(axes)):
        raise ValueError(f"Duplicate axis: {tuple(axes)}")
    return axes


def get_activation(activation: Any) -> Callable[[Any], Any] | None:
    """A callable as given; a Keras activation name ('relu', 'tanh', ..., 'linear') as the matching op."""
    if activation is None or callable(activation):
        return activation
    table = {"relu": nn_ops.relu, "relu6": nn_ops.relu6, "elu": nn_ops.elu, "selu": nn_extra.selu,
             "softplus": nn_ops.softplus, "softsign": nn_extra.softsign, "softmax": nn_ops.softmax,
             "sigmoid": math.sigmoid, "tanh": math.tanh, "linear": None}
    if activation not in table:
        raise ValueError(f"Unknown activation function: '{activation}'. Expected a callable or one of "
                         f"{sorted(table)}")
    return table[activation]


def get_initializer(initializer: Any) -> Any:
    """An initializer as given; a Keras name ('zeros', 'ones', 'glorot_uniform', ...) as TF1's initializer."""
    if initializer is None or not isinstance(initializer, str):
        return initializer
    table = {"zeros": init_ops.Zeros, "ones": init_ops.Ones, "glorot_uniform": init_ops.GlorotUniform,
             "glorot_normal": init_ops.GlorotNormal, "random_uniform": init_ops.RandomUniform,
             "random_normal": init_ops.RandomNormal, "truncated_normal": init_ops.TruncatedNormal}
    if initializer not in table:
        raise ValueError(f"Unknown initializer: '{initializer}'. Expected an initializer or one of {sorted(table)}")
    return table[initializer]()
