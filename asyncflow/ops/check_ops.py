"""The `assert_*` family, as TF1's `check_ops`: composites of `Assert` (logging_ops.py).

Each returns the op to run (or to put in `control_dependencies`). As in TF1, a check whose inputs are
constants is decided while the graph is built: a failing one raises `InvalidArgumentError` at once
(the rank and type checks raise `ValueError`/`TypeError`), and the data shown on failure defaults to
TF1's message (`Condition x == y did not hold element-wise:`, the tensors' names and values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops import math
from asyncflow.ops.array import rank as rank_op
from asyncflow.ops.array import zeros
from asyncflow.ops.control import no_op
from asyncflow.ops.logging_ops import Assert
from asyncflow.ops.math_reduce import reduce_all, reduce_any
from asyncflow.ops.registry import constant_value, convert_to_tensor

_COMPARISONS: dict[str, tuple[Callable[..., Tensor], Callable[..., Any], str]] = {
    "assert_equal": (math.equal, np.equal, "Condition x == y did not hold element-wise:"),
    "assert_less": (math.less, np.less, "Condition x < y did not hold element-wise:"),
    "assert_less_equal": (math.less_equal, np.less_equal, "Condition x <= y did not hold element-wise:"),
    "assert_greater": (math.greater, np.greater, "Condition x > y did not hold element-wise:"),
    "assert_greater_equal": (math.greater_equal, np.greater_equal, "Condition x >= y did not hold element-wise:"),
}


def _static_fail(data: Sequence[Any]) -> None:
    """TF1's `_assert_static`: a check decided false at graph construction."""
    shown = []
    for d in data:
        value = constant_value(d) if isinstance(d, Tensor) else d
        shown.append(str(value if not isinstance(value, bytes) else value.decode()))
    raise errors.InvalidArgumentError(None, None, "\n".join(shown))


def _messages(message: str | None, *lines: Any) -> list[Any]:
    return ([message] if message else []) + list(lines)


def _compare(kind: str, x: Any, y: Any, data: Any, summarize: int | None, message: str | None,
             name: str | None) -> Operation:
    build, reference, text = _COMPARISONS[kind]
    with name_scope(name, kind, [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        if data is None:
            data = _messages(message, text, f"x ({x.name}) = ", x, f"y ({y.name}) = ", y)
        condition = reduce_all(build(x, y))
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None and not np.all(reference(x_static, y_static)):
            _static_fail(data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                 name: str | None = None) -> Operation:
    """`tf.assert_equal`: fails the step unless x == y element-wise."""
    return _compare("assert_equal", x, y, data, summarize, message, name)


def assert_less(x: Any, y: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                name: str | None = None) -> Operation:
    """`tf.assert_less`: fails the step unless x < y element-wise."""
    return _compare("assert_less", x, y, data, summarize, message, name)


def assert_less_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                      name: str | None = None) -> Operation:
    """`tf.assert_less_equal`: fails the step unless x <= y element-wise."""
    return _compare("assert_less_equal", x, y, data, summarize, message, name)


def assert_greater(x: Any, y: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                   name: str | None = None) -> Operation:
    """`tf.assert_greater`: fails the step unless x > y element-wise."""
    return _compare("assert_greater", x, y, data, summarize, message, name)


def assert_greater_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                         message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_greater_equal`: fails the step unless x >= y element-wise."""
    return _compare("assert_greater_equal", x, y, data, summarize, message, name)


def assert_none_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                      name: str | None = None) -> Operation:
    """`tf.assert_none_equal`: fails the step if any element of x equals y's."""
    with name_scope(name, "assert_none_equal", [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        if data is None:
            data = _messages(message, "Condition x != y did not hold for every single element:",
                             f"x ({x.name}) = ", x, f"y ({y.name}) = ", y)
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None and np.any(np.equal(x_static, y_static)):
            _static_fail(data)
        return Assert(reduce_all(math.not_equal(x, y)), data, summarize=summarize)


def _against_zero(kind: str, text: str, x: Any, data: Any, summarize: int | None, message: str | None,
                  name: str | None, zero_first: bool, check: Callable[..., Operation]) -> Operation:
    with name_scope(name, kind, [x]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = _messages(message, text, f"x ({x.name}) = ", x)
        zero = zeros([], dtype=x.dtype.base_dtype)
        return check(zero, x, data=data, summarize=summarize) if zero_first else \
            check(x, zero, data=data, summarize=summarize)


def assert_positive(x: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                    name: str | None = None) -> Operation:
    """`tf.assert_positive`: fails the step unless x > 0 element-wise."""
    return _against_zero("assert_positive", "Condition x > 0 did not hold element-wise:", x, data, summarize,
                         message, name, True, assert_less)


def assert_negative(x: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                    name: str | None = None) -> Operation:
    """`tf.assert_negative`: fails the step unless x < 0 element-wise."""
    return _against_zero("assert_negative", "Condition x < 0 did not hold element-wise:", x, data, summarize,
                         message, name, False, assert_less)


def assert_non_negative(x: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                        name: str | None = None) -> Operation:
    """`tf.assert_non_negative`: fails the step unless x >= 0 element-wise."""
    return _against_zero("assert_non_negative", "Condition x >= 0 did not hold element-wise:", x, data, summarize,
                         message, name, True, assert_less_equal)


def assert_non_positive(x: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                        name: str | None = None) -> Operation:
    """`tf.assert_non_positive`: fails the step unless x <= 0 element-wise."""
    return _against_zero("assert_non_positive", "Condition x <= 0 did not hold element-wise:", x, data, summarize,
                         message, name, False, assert_less_equal)


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, data: Any = None, summarize: int | None = None,
                message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_near`: fails the step unless |x - y| <= atol + rtol * |y| element-wise (both default to
    10 * the dtype's machine epsilon)."""
    with name_scope(name, "assert_near", [x, y, rtol, atol]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        eps = np.finfo(x.dtype.base_dtype.as_numpy_dtype).eps
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=x.dtype.base_dtype)
        atol = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=x.dtype.base_dtype)
        if data is None:
            data = _messages(message, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                             f"x ({x.name}) = ", x, f"y ({y.name}) = ", y)
        tolerance = atol + rtol * math.abs(y)
        return Assert(reduce_all(math.less_equal(math.abs(x - y), tolerance)), data, summarize=summarize)


def _rank_check(kind: str, x: Any, ranks: Sequence[int], static_ok: Callable[[int], bool], describe: str,
                data: Any, summarize: int | None, message: str | None, name: str | None,
                dynamic: Callable[[Tensor], Tensor]) -> Operation:
    with name_scope(name, kind, [x]):
        x = convert_to_tensor(x, name="x")
        x_rank = x.shape.ndims
        if x_rank is not None:
            if not static_ok(x_rank):
                raise ValueError(f"{message or ''}  Tensor {x.name} must have rank {describe}.  "
                                 f"Received rank {x_rank}, shape {x.shape}")
            return no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = _messages(message, f"Tensor {x.name} must have rank {describe}.", "Received shape: ",
                             math.cast(rank_op(x), dtypes.int32))
        return Assert(dynamic(rank_op(x)), data, summarize=summarize)


def _static_int(value: Any, what: str) -> int:
    static = constant_value(value) if isinstance(value, Tensor) else np.asarray(value)
    if static is None or np.ndim(static) != 0 or np.asarray(static).dtype.kind not in "iu":
        raise ValueError(f"{what} must be a static integer scalar, got {value!r}")
    return int(static)


def assert_rank(x: Any, rank: Any, data: Any = None, summarize: int | None = None, message: str | None = None,
                name: str | None = None) -> Operation:
    """`tf.assert_rank`: x has rank `rank` (decided statically when x's rank is known: `ValueError`)."""
    r = _static_int(rank, "assert_rank: rank")
    return _rank_check("assert_rank", x, [r], lambda k: k == r, str(r), data, summarize, message, name,
                       lambda actual: math.equal(actual, r))


def assert_rank_at_least(x: Any, rank: Any, data: Any = None, summarize: int | None = None,
                         message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_rank_at_least`: x has rank >= `rank`."""
    r = _static_int(rank, "assert_rank_at_least: rank")
    return _rank_check("assert_rank_at_least", x, [r], lambda k: k >= r, f"at least {r}", data, summarize,
                       message, name, lambda actual: math.greater_equal(actual, r))


def assert_rank_in(x: Any, ranks: Sequence[Any], data: Any = None, summarize: int | None = None,
                   message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_rank_in`: x's rank is one of `ranks`."""
    rs = [_static_int(r, "assert_rank_in: ranks") for r in ranks]
    return _rank_check("assert_rank_in", x, rs, lambda k: k in rs, f"in {tuple(rs)}", data, summarize, message,
                       name, lambda actual: reduce_any(math.equal(actual, np.asarray(rs, np.int32))))


def assert_type(tensor: Any, tf_type: Any, message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_type`: a `TypeError` now unless `tensor` has dtype `tf_type`."""
    tf_type = dtypes.as_dtype(tf_type)
    with name_scope(name, "assert_type", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype.base_dtype != tf_type:
            raise TypeError(f"{message or ''}  {tensor.name} must be of type {tf_type.name}; "
                            f"got {tensor.dtype.base_dtype.name}")
        return no_op(name="statically_determined_correct_type")


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Operation:
    """`tf.assert_integer`: a `TypeError` now unless x has an integer dtype."""
    with name_scope(name, "assert_integer", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.base_dtype.is_integer:
            raise TypeError(f"{message or ''}  Expected \"x\" to be integer type.  Found: {x.name} of dtype "
                            f"{x.dtype.base_dtype.name}")
        return no_op(name="statically_determined_was_integer")


def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Tensor:
    """`tf.assert_scalar`: `tensor`, or a `ValueError` when its static rank is not 0."""
    with name_scope(name, "assert_scalar", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.shape.ndims != 0:
            raise ValueError(f"{message or ''}Expected scalar shape for {tensor.name}, saw shape: {tensor.shape}.")
        return tensor


def is_numeric_tensor(tensor: Any) -> bool:
    """`tf.is_numeric_tensor`: a Tensor whose dtype is numeric."""
    return isinstance(tensor, Tensor) and tensor.dtype.base_dtype in dtypes.NUMERIC


def assert_proper_iterable(values: Any) -> None:
    """`tf.assert_proper_iterable`: a `TypeError` for a Tensor, an array or a string posing as a list."""
    if isinstance(values, (Tensor, np.ndarray, str, bytes)) or hasattr(values, "_as_graph_element"):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: {type(values)}")
    iter(values)


def assert_same_float_dtype(tensors: Sequence[Any] | None = None, dtype: Any = None) -> dtypes.DType:
    """`tf.assert_same_float_dtype`: the one floating dtype of `tensors` (and `dtype`), float32 if none."""
    seen = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
    for t in tensors or []:
        t_dtype = t.dtype.base_dtype
        if seen is None:
            seen = t_dtype
        elif t_dtype != seen:
            raise ValueError(f"{t.name}, type={t_dtype.name}: expected type {seen.name}.")
    seen = seen or dtypes.float32
    if not seen.is_floating:
        raise ValueError(f"Expected floating point type, got {seen.name}.")
    return seen


__all__ = [
    "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal", "assert_greater",
    "assert_greater_equal", "assert_positive", "assert_negative", "assert_non_negative", "assert_non_positive",
    "assert_near", "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_type", "assert_integer",
    "assert_scalar", "is_numeric_tensor", "assert_proper_iterable", "assert_same_float_dtype",
]
