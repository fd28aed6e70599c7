"""Math ops that are not elementwise: reductions, arg-reductions, add_n, select/where, range; gradients.

Re-exported by `asyncflow.ops.math` (so `af.reduce_sum`, `af.where`, ... come from there); matmul
lives in `asyncflow.ops.math_matmul`.
Semantics follow TF's CPU kernels: integer `reduce_mean` sums in 64 bits and truncates toward
zero; float16/bfloat16 sums accumulate in float32; `reduce_max` of an empty axis is the lowest
value of the dtype; `argmax` skips NaN; TF1's `Select` takes a condition of x's shape, a scalar,
or a vector along x's first dimension. Static shape errors name the op and both shapes.
Reduction gradients reshape the output gradient to the kept-dims shape (`kept_dims_shape`, built
with ops when shapes are unknown) and broadcast it over the input, as TF's math_grad.py.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.grad_util import unbroadcast
from asyncflow.ops.kernel_util import as_out
from asyncflow.ops.math import Conj, Equal, Maximum, Minimum, cast
from asyncflow.ops.registry import (
    ALL_TYPES,
    INDEX,
    NUMERIC,
    REAL,
    BuildContext,
    _contains_tensor,
    constant,
    constant_folder,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.ops.shape_fns import broadcast_all, reduced_shape
from asyncflow.shapes import TensorShape, unknown_shape

_BF16 = np.dtype(ml_dtypes.bfloat16)
_LOW_PRECISION = (np.dtype(np.float16), _BF16)
WHERE_TYPES = NUMERIC + (dtypes.bool,)
RANGE_TYPES = dtypes.FLOATING + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint16,
                                 dtypes.uint32, dtypes.uint64)


def _fmt(shape: TensorShape) -> str:
    """A shape as TF prints it in errors: [8,64], [?,3], <unknown>."""
    if shape.ndims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"



def _lookup(new_name: str, new_value: Any, old_name: str, old_value: Any) -> Any:
    """TF's deprecated_argument_lookup: `axis` or its old name, never both."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return old_value
    return new_value


# -- reductions ------------------------------------------------------------------------------------
def _reduce_axes(x: np.ndarray, axes: np.ndarray) -> tuple[int, ...]:
    ndim = np.ndim(x)
    seen: list[int] = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -ndim <= a < ndim:
            raise ValueError(f"Invalid reduction dimension {a} for input with {ndim} dimensions.")
        a %= ndim
        if a in seen:
            raise ValueError(f"Invalid reduction arguments: Axes contains duplicate dimension: {a}")
        seen.append(a)
    return tuple(seen)


def _reduction_shape(b: BuildContext) -> TensorShape:
    axes = b.shape(1)
    if axes.ndims is not None and axes.ndims > 1:
        raise b.error(f"Shape must be at most rank 1 but is rank {axes.ndims} for 'reduction_indices' "
                      f"(input shapes: {_fmt(b.shape(0))}, {_fmt(axes)})")
    return reduced_shape(b)


def _sum(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    acc = np.float32 if x.dtype in _LOW_PRECISION else x.dtype  # ints wrap in their own width, as TF
    return np.sum(x, axis=axes, dtype=acc, keepdims=keep)


def _prod(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    acc = np.float32 if x.dtype in _LOW_PRECISION else x.dtype
    return np.prod(x, axis=axes, dtype=acc, keepdims=keep)


def _mean(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    n = math.prod(x.shape[a] for a in axes)
    if x.dtype.kind in "iu":
        # TF sums integers in 64 bits and divides with C's truncation toward zero.
        s = np.sum(x, axis=axes, dtype=np.int64 if x.dtype.kind == "i" else np.uint64, keepdims=keep)
        if n == 0:
            return np.zeros_like(s)
        q = s // n
        return np.where((s % n != 0) & (s < 0), q + 1, q)
    if x.dtype in _LOW_PRECISION:
        # Summed in float32, rounded to the input type, then divided: TF's order (sums may overflow to inf).
        s = np.sum(x, axis=axes, dtype=np.float32, keepdims=keep).astype(x.dtype)
        return s.astype(np.float32) / np.float32(n)
    return np.sum(x, axis=axes, keepdims=keep) / n


def _extreme(fn: Any, lowest: bool) -> Any:
    def reduce(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
        if x.dtype == _BF16:
            x = x.astype(np.float32)
        if x.dtype.kind == "f":
            initial = -np.inf if lowest else np.inf
        else:
            info = np.iinfo(x.dtype)
            initial = info.min if lowest else info.max
        # `initial` is what TF returns for an empty axis; NaN still propagates.
        return fn(x, axis=axes, keepdims=keep, initial=initial)

    return reduce


def _reduction(op_type: str, fn: Any, types: tuple | None) -> Any:
    def kernel(k, x, axes):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return as_out(fn(x, _reduce_axes(x, axes), k.keep_dims), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    if types is None:  # Any, All
        spec, outs, type_map = "input: bool, reduction_indices: Tidx", "output: bool", {"Tidx": INDEX}
    else:
        spec, outs, type_map = "input: T, reduction_indices: Tidx", "output: T", {"T": types, "Tidx": INDEX}
    return op(op_type, inputs=spec, outputs=outs, types=type_map, attrs={"keep_dims": False},
              type_defaults={"Tidx": dtypes.int32}, shape=_reduction_shape,
              differentiable=types is not None)(kernel)


Sum = _reduction("Sum", _sum, NUMERIC)
Prod = _reduction("Prod", _prod, NUMERIC)
Mean = _reduction("Mean", _mean, NUMERIC)
Max = _reduction("Max", _extreme(np.max, lowest=True), REAL)
Min = _reduction("Min", _extreme(np.min, lowest=False), REAL)
Any_ = _reduction("Any", lambda x, axes, keep: np.any(x, axis=axes, keepdims=keep), None)
All = _reduction("All", lambda x, axes, keep: np.all(x, axis=axes, keepdims=keep), None)


# -- reduction gradients: the output gradient reshaped to the kept-dims shape broadcasts over the input ---------
def kept_dims_shape(op: Any) -> Any:
    """TF's `reduced_shape`: the input's shape with the reduced axes set to 1, for reduction `op`.

    A list when the input's shape and the axes are known at build time, else an int32 tensor built
    with ops (shape, range, equal, any, select), so it works for unknown shapes and fed axes.
    """
    from asyncflow.ops.array import expand_dims, ones_like, reshape, shape, size

    x, axes = op.inputs
    axes_value = constant_value(axes)
    if x.shape.is_fully_defined() and axes_value is not None:
        dims = x.shape.as_list()
        for a in np.reshape(axes_value, -1).tolist():
            dims[a % len(dims)] = 1
        return dims
    input_shape = shape(x, out_type=dtypes.int32)
    rank = size(input_shape)
    axes = (reshape(cast(axes, dtypes.int32), [-1]) + rank) % Maximum(rank, 1)  # rank 0: no axes, no x % 0
    reduced = reduce_any(Equal(expand_dims(range(0, rank), 1), expand_dims(axes, 0)), 1)
    return SelectV2(reduced, ones_like(input_shape), input_shape)


def _keep_dims(op: Any, *tensors: Tensor) -> list[Tensor]:
    """Output-shaped tensors (the gradient, the output) reshaped to the kept-dims shape, unless keep_dims."""
    from asyncflow.ops.array import reshape

    if op.get_attr("keep_dims"):
        return list(tensors)
    kept = kept_dims_shape(op)
    return [reshape(t, kept) for t in tensors]


def _input_shape(x: Tensor) -> Any:
    from asyncflow.ops.array import shape

    return x.shape.as_list() if x.shape.is_fully_defined() else shape(x)


@Sum.gradient
def _sum_grad(op: Any, grad: Tensor) -> list[Any]:
    from asyncflow.ops.array import broadcast_to

    x = op.inputs[0]
    (grad,) = _keep_dims(op, grad)
    if grad.shape.is_fully_defined() and grad.shape == x.shape:
        return [grad, None]
    out = broadcast_to(grad, _input_shape(x))
    out.set_shape(x.shape)
    return [out, None]


@Mean.gradient
def _mean_grad(op: Any, grad: Tensor) -> list[Any]:
    """The Sum gradient divided by the number of elements reduced into each output element."""
    from asyncflow.ops.array import size

    sum_grad = _sum_grad(op, grad)[0]
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        factor = constant(x.shape.num_elements() // max(y.shape.num_elements(), 1),
                          dtype=sum_grad.dtype.base_dtype)
    else:
        factor = cast(size(x) // Maximum(size(y), 1), sum_grad.dtype.base_dtype)
    return [sum_grad / factor, None]


@Prod.gradient
def _prod_grad(op: Any, grad: Tensor) -> list[Any]:
    """d prod / d x_i = the product of the other elements of x_i's group, computed without dividing by 0.

    TF uses two exclusive cumprods; this counts the zeros of each group instead: with none, the product of
    the others is prod / x_i; with exactly one, it is the product of the non-zeros at the zero and 0
    elsewhere; with more, 0 everywhere.
    """
    from asyncflow.ops.array import ones_like, zeros_like

    x, axes = op.inputs
    (grad,) = _keep_dims(op, grad)
    is_zero = Equal(x, 0)
    safe_x = Select(is_zero, ones_like(x), x)
    nonzero_prod = reduce_prod(safe_x, axes, keepdims=True)
    zeros = reduce_sum(cast(is_zero, dtypes.int32), axes, keepdims=True)
    zero_like_x = zeros_like(x)
    at_zero = SelectV2(Equal(zeros, 1), nonzero_prod, zero_like_x)
    elsewhere = SelectV2(Equal(zeros, 0), nonzero_prod / safe_x, zero_like_x)
    others = Select(is_zero, at_zero, elsewhere)
    if x.dtype.is_complex:
        others = Conj(others)
    return [grad * others, None]


@Max.gradient
@Min.gradient
def _min_or_max_grad(op: Any, grad: Tensor) -> list[Any]:
    """TF's _MinOrMaxGrad: the gradient split equally among the elements equal to the extreme."""
    x, axes = op.inputs
    y, grad = _keep_dims(op, op.outputs[0], grad)
    indicators = cast(Equal(y, x), grad.dtype.base_dtype)
    num_selected = reduce_sum(indicators, axes, keepdims=True)
    return [indicators / num_selected * grad, None]


def _reduction_input(x: Any) -> tuple[Any, int | None]:
    """The input (converted only when it holds tensors) and its static rank."""
    if isinstance(x, Tensor):
        return x, x.shape.ndims
    if hasattr(x, "_as_graph_element") or _contains_tensor(x):
        x = convert_to_tensor(x)
        return x, x.shape.ndims
    try:
        return x, np.ndim(np.asarray(x))
    except (TypeError, ValueError):
        return x, None


def _reduction_api(opdef: Any, py_name: str) -> Any:
    def api(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
            reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
        axis = _lookup("axis", axis, "reduction_indices", reduction_indices)
        keepdims = bool(_lookup("keepdims", keepdims, "keep_dims", keep_dims))
        x, ndim = _reduction_input(input_tensor)
        if axis is not None:
            dims = axis
        elif ndim is not None:
            dims = constant(np.arange(ndim, dtype=np.int32))  # TF: a Const "Const" outside the op's scope
        else:
            from asyncflow.ops.array import rank  # lazily: array's modules import this one

            dims = range(0, rank(x))
        out = opdef(x, dims, keep_dims=keepdims, name=name)
        if axis is None and not keepdims and not out.shape.is_fully_defined():
            out.set_shape([])
        return out

    api.__name__ = api.__qualname__ = py_name
    api.__doc__ = (f"`af.{py_name}(input_tensor, axis=None, keepdims=None, ...)`: op `{opdef.type}`; "
                   "`axis=None` reduces every dimension.")
    return api


reduce_sum = _reduction_api(Sum, "reduce_sum")
reduce_prod = _reduction_api(Prod, "reduce_prod")
reduce_mean = _reduction_api(Mean, "reduce_mean")
reduce_max = _reduction_api(Max, "reduce_max")
reduce_min = _reduction_api(Min, "reduce_min")
reduce_any = _reduction_api(Any_, "reduce_any")
reduce_all = _reduction_api(All, "reduce_all")


# -- argmax / argmin ---------------------------------------------------------------------------------
def _arg_shape(b: BuildContext) -> TensorShape:
    shape, dim_shape = b.shape(0), b.shape(1)
    if dim_shape.ndims not in (None, 0):
        raise b.error(f"Shape must be rank 0 but is rank {dim_shape.ndims} for 'dimension' "
                      f"(input shapes: {_fmt(shape)}, {_fmt(dim_shape)})")
    ndim = shape.ndims
    if ndim is None or ndim == 0:  # TF builds a scalar's argmax and fails at run time
        return unknown_shape() if ndim is None else TensorShape([])
    axis = b.const(1)
    if axis is None:
        return unknown_shape(ndim - 1)
    a = int(axis)
    if not -ndim <= a < ndim:
        raise b.error(f"Dimension ({a}) must be in the range [{-ndim}, {ndim}), where {ndim} is the number "
                      f"of dimensions in the input (shape {_fmt(shape)}).")
    dims = shape.dims
    del dims[a % ndim]
    return TensorShape(dims)


def _arg_reduction(op_type: str, fn: Any, nan_fill: float) -> Any:
    def kernel(k, x, dim):
        x = np.asarray(x)
        ndim, a = x.ndim, int(dim)
        if not -ndim <= a < ndim:
            raise ValueError(f"Expected dimension in the range [{-ndim}, {ndim}), but got {a}")
        if x.shape[a] == 0:
            raise ValueError(f"Reduction axis {a} is empty in shape {list(x.shape)}")
        if x.dtype == _BF16:
            x = x.astype(np.float32)
        if x.dtype.kind == "f":
            x = np.where(np.isnan(x), nan_fill, x)  # TF's comparison never picks a NaN
        return as_out(fn(x, axis=a), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="input: T, dimension: Tidx", outputs="output: output_type",
              types={"T": REAL + (dtypes.bool,), "Tidx": INDEX, "output_type": INDEX},
              type_defaults={"Tidx": dtypes.int32, "output_type": dtypes.int64}, shape=_arg_shape,
              differentiable=False)(kernel)


ArgMax = _arg_reduction("ArgMax", np.argmax, -np.inf)
ArgMin = _arg_reduction("ArgMin", np.argmin, np.inf)


def argmax(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    """`af.argmax`: index of the largest value along `axis` (default 0), as `output_type` (int64)."""
    axis = _lookup("axis", axis, "dimension", dimension)
    return ArgMax(input, 0 if axis is None else axis, output_type=output_type, name=name)


def argmin(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    """`af.argmin`: index of the smallest value along `axis` (default 0), as `output_type` (int64)."""
    axis = _lookup("axis", axis, "dimension", dimension)
    return ArgMin(input, 0 if axis is None else axis, output_type=output_type, name=name)


# -- add_n ---------------------------------------------------------------------------------------------
def _add_n_shape(b: BuildContext) -> TensorShape:
    shapes = b.shapes(0)
    merged = shapes[0]
    for i, s in enumerate(shapes[1:], 1):
        try:
            merged = merged.merge_with(s)
        except ValueError:
            raise b.error(f"all inputs must have the same shape (no broadcasting): input 0 has shape "
                          f"{_fmt(shapes[0])}, input {i} has shape {_fmt(s)}") from None
    return merged


@op("AddN", inputs="inputs: N * T", outputs="sum: T", types={"T": NUMERIC}, shape=_add_n_shape,
    commutative=True)
def AddN(k, *xs):
    shape = np.shape(xs[0])
    for i, x in enumerate(xs):
        if getattr(x, "shape", None) != shape:
            raise ValueError(f"Inputs must have the same size and shape. Input 0: {list(shape)} "
                             f"!= input {i}: {list(np.shape(x))}")
    total = xs[0]
    if len(xs) == 1:
        return as_out(total, k.out_dtypes[0])
    if not shape:  # scalars: numpy's scalar arithmetic is far cheaper than a ufunc call each
        for x in xs[1:]:
            total = total + x
        return as_out(total, k.out_dtypes[0])
    total = as_out(np.add(xs[0], xs[1]), k.out_dtypes[0])  # a fresh array, so the rest add in place
    for x in xs[2:]:
        np.add(total, x, out=total)
    return total


@AddN.gradient
def _add_n_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return [grad] * len(op.inputs)  # no broadcasting: every input has the sum's shape


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """`af.add_n`: the sum of a list of same-shape tensors (op `AddN`); one input comes back as is."""
    if not inputs or isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)):
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices with the same "
                         "dtype and shape.")
    inputs = [convert_to_tensor(x) for x in inputs]
    if len(inputs) == 1:
        from asyncflow.ops.array import identity

        return identity(inputs[0], name=name) if name else inputs[0]
    return AddN(inputs, name=name)


# -- select / where ---------------------------------------------------------------------------------------
def _select_shape(b: BuildContext) -> TensorShape:
    """TF1 Select: t and e agree; cond is a scalar, has their shape, or is a vector along dim 0."""
    cond, t, e = b.shape(0), b.shape(1), b.shape(2)
    try:
        data = t.merge_with(e)
    except ValueError:
        raise b.error(f"'t' and 'e' must have the same shape, got {_fmt(t)} and {_fmt(e)}") from None
    if cond.ndims is None or data.ndims is None or cond.ndims == 0:
        return data
    if cond.ndims == 1 and data.ndims >= 1:
        if not cond[0].is_compatible_with(data[0]):
            raise b.error(f"condition vector of shape {_fmt(cond)} must match the first dimension of 't' and "
                          f"'e' {_fmt(data)}")
        return data
    try:
        return data.merge_with(cond)
    except ValueError:
        raise b.error(f"condition of shape {_fmt(cond)} must be a scalar, a vector matching the first "
                      f"dimension, or the shape of 't' and 'e' {_fmt(data)}") from None


@op("Select", inputs="condition: bool, t: T, e: T", outputs="output: T", types={"T": ALL_TYPES},
    shape=_select_shape)
def Select(k, cond, t, e):
    if np.shape(t) != np.shape(e):
        raise ValueError(f"'then' and 'else' must have the same size. but received: {list(np.shape(t))} vs. "
                         f"{list(np.shape(e))}")
    if np.ndim(cond) == 0:
        return t if cond else e
    if np.shape(cond) == np.shape(t):
        return np.where(cond, t, e)
    if np.ndim(cond) == 1 and np.ndim(t) >= 1 and len(cond) == np.shape(t)[0]:
        return np.where(np.reshape(cond, (-1,) + (1,) * (np.ndim(t) - 1)), t, e)
    raise ValueError(f"'condition' of shape {list(np.shape(cond))} must be a scalar, a vector matching the "
                     f"first dimension of 'then', or 'then''s shape {list(np.shape(t))}")


@Select.gradient
def _select_grad(op: Any, grad: Tensor) -> list[Any]:
    """The gradient goes to t where the condition holds and to e elsewhere (zeros in the other)."""
    from asyncflow.ops.array import zeros_like

    cond, t, _ = op.inputs
    zeros = zeros_like(t)
    return [None, Select(cond, grad, zeros), Select(cond, zeros, grad)]


@op("SelectV2", inputs="condition: bool, t: T, e: T", outputs="output: T", types={"T": ALL_TYPES},
    shape=broadcast_all)
def SelectV2(k, cond, t, e):
    return as_out(np.where(cond, t, e), k.out_dtypes[0])


@SelectV2.gradient
def _select_v2_grad(op: Any, grad: Tensor) -> list[Any]:
    """As Select's, each gradient then summed back over the axes its input was broadcast along."""
    cond, t, e = op.inputs
    zero = constant(0, dtype=grad.dtype.base_dtype)
    return [None, unbroadcast(SelectV2(cond, grad, zero), t), unbroadcast(SelectV2(cond, zero, grad), e)]


def _where_shape(b: BuildContext) -> TensorShape:
    return TensorShape([None, b.shape(0).ndims])


@op("Where", inputs="input: T", outputs="index: int64", types={"T": WHERE_TYPES},
    type_defaults={"T": dtypes.bool}, shape=_where_shape, differentiable=False)
def Where(k, x):
    if np.ndim(x) == 0:
        raise ValueError("WhereOp: input must have rank >= 1, got a scalar")
    return np.argwhere(x).astype(np.int64)


def _where_coordinates(condition: Any, name: str | None) -> Tensor:
    with name_scope(name, "Where", [condition]) as scope:
        condition = convert_to_tensor(condition, preferred_dtype=dtypes.bool, name="condition")
        return Where(condition, name=scope)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """TF1's `af.where`: `Select` (x where condition else y), or `Where` (int64 coordinates of trues)."""
    if x is None and y is None:
        return _where_coordinates(condition, name)
    if x is not None and y is not None:
        return Select(condition, x, y, name=name)
    raise ValueError("x and y must both be non-None or both be None.")


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`af.where_v2`: `SelectV2`, broadcasting condition, x and y together; or `Where` with x=y=None."""
    if x is None and y is None:
        return _where_coordinates(condition, name)
    if x is not None and y is not None:
        return SelectV2(condition, x, y, name=name)
    raise ValueError("x and y must both be non-None or both be None.")


# -- clip_by_value -----------------------------------------------------------------------------------------
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Tensor:
    """`af.clip_by_value`: Minimum then Maximum under scope `clip_by_value`; bounds may not grow `t`."""
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert_to_tensor(t, name="t")
        t_min = Minimum(values, clip_value_max)
        if not values.shape.is_compatible_with(t_min.shape):
            raise ValueError(f"clip_by_value '{scope[:-1]}': clip_value_max would broadcast t of shape "
                             f"{_fmt(values.shape)} to {_fmt(t_min.shape)}")
        t_max = Maximum(t_min, clip_value_min, name=scope)
        if not values.shape.is_compatible_with(t_max.shape):
            raise ValueError(f"clip_by_value '{scope[:-1]}': clip_value_min would broadcast t of shape "
                             f"{_fmt(values.shape)} to {_fmt(t_max.shape)}")
        return t_max


# -- range --------------------------------------------------------------------------------------------------
def _range_size(start: Any, limit: Any, delta: Any, dtype: np.dtype) -> int:
    """The element count of Range, with TF's checks; raises ValueError (message without the op)."""
    if delta == 0:
        raise ValueError("Requires delta != 0")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if dtype.kind in "iu":
        start, limit, delta = int(start), int(limit), int(delta)
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    with np.errstate(all="ignore"):
        size = np.ceil(np.abs((dtype.type(limit) - dtype.type(start)) / dtype.type(delta)))
    if not np.isfinite(size):
        raise ValueError(f"Requires a finite range, got start={start}, limit={limit}, delta={delta}")
    return int(size)


def _range_values(start: Any, limit: Any, delta: Any, dtype: np.dtype) -> np.ndarray:
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    size = _range_size(start.item(), limit.item(), delta.item(), dtype)
    if dtype.kind in "iu":
        steps = np.arange(size, dtype=np.int64) * delta.astype(np.int64)
        return (start.astype(np.int64) + steps).astype(dtype)
    with np.errstate(all="ignore"):  # TF: start + T(i) * delta, computed in T
        return np.arange(size).astype(dtype) * delta.astype(dtype) + start.astype(dtype)


def _range_shape(b: BuildContext) -> TensorShape:
    for i, arg in enumerate(("start", "limit", "delta")):
        s = b.shape(i)
        if s.ndims is not None and s.ndims > 1:
            raise b.error(f"Shape must be at most rank 1 but is rank {s.ndims} for '{arg}'")
    values = [b.const(0), b.const(1), b.const(2)]  # (`range` is af.range in this module)
    if any(v is None for v in values):
        return TensorShape([None])
    try:
        size = _range_size(*(np.asarray(v).reshape(-1)[0].item() for v in values), b.attrs["Tidx"].np)
    except ValueError as e:
        raise b.error(str(e)) from None
    return TensorShape([size])


@op("Range", inputs="start: Tidx, limit: Tidx, delta: Tidx", outputs="output: Tidx",
    types={"Tidx": RANGE_TYPES}, type_defaults={"Tidx": dtypes.int32}, shape=_range_shape,
    differentiable=False)
def Range(k, start, limit, delta):
    for v, arg in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if np.size(v) != 1 or np.ndim(v) > 1:
            raise ValueError(f"{arg} must be a scalar, not shape {list(np.shape(v))}")
    return _range_values(start, limit, delta, np.dtype(k.out_dtypes[0]))


@constant_folder("Range")
def _fold_range(t: Tensor) -> np.ndarray | None:
    values = [constant_value(x) for x in t.op.inputs]
    if any(v is None or np.size(v) != 1 for v in values):
        return None
    return _range_values(*values, t.dtype.np)


_RANGE_HIERARCHY = (dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32,
                    dtypes.float64)


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001 - TF's name
          name: str = "range") -> Tensor:
    """`af.range`: [start, limit) by delta (op `Range`); the dtype is the widest of the arguments'."""
    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range", [start, limit, delta]) as scope:
        args = []
        for value, arg in ((start, "start"), (limit, "limit"), (delta, "delta")):
            if not isinstance(value, Tensor):
                value = convert_to_tensor(value, dtype=dtype, name=arg)
            args.append(value)
        if dtype is None:
            found = [x.dtype.base_dtype for x in args]
            bad = [d.name for d in found if d not in _RANGE_HIERARCHY]
            if bad:
                raise TypeError(f"range: arguments must be int32, int64 or floating, got {', '.join(bad)}")
            target = max(found, key=_RANGE_HIERARCHY.index)
        else:
            target = dtypes.as_dtype(dtype)
        args = [cast(x, target) for x in args]  # named Cast, Cast_1 in this scope where a cast is needed
        return Range(*args, name=scope)


__all__ = [
    "reduce_sum", "reduce_prod", "reduce_mean", "reduce_max", "reduce_min", "reduce_any", "reduce_all",
    "argmax", "argmin", "add_n", "where", "where_v2", "clip_by_value", "range",
]
