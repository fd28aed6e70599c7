"""More math ops real models call: the remaining elementwise functions (tan, asin, erf, lgamma, ...),
truncated division, cumulative sums/products, the to_* casts, logsumexp, count_nonzero, bincount,
confusion_matrix, accumulate_n, the monotonicity checks, and the sorted/unsorted segment reductions.

Elementwise ops are declared with `asyncflow.ops.math._unary`/`_binary`, each beside its TF gradient
(math_grad.py's rules). Segment reductions follow TF's CPU kernels: `segment_*` need sorted ids
(InvalidArgumentError otherwise) and fill empty segments with 0; `unsorted_segment_max/min` fill
empty segments with the dtype's lowest/highest value and drop negative ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sp

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array import reshape, shape, size, zeros_like
from asyncflow.ops.array_index import gather, unsorted_segment_sum
from asyncflow.ops.array_manip import concat
from asyncflow.ops.array_slice import strided_slice
from asyncflow.ops.math import (
    FloorDiv,
    _binary,
    _gen_binary,
    _gen_unary,
    _unary,
    cast,
)
from asyncflow.ops.math_unary import Cos, Exp, Reciprocal, Sqrt, Square
from asyncflow.ops.registry import FLOAT, INDEX, NUMERIC, REAL, BuildContext, convert_to_tensor, op
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.shapes import TensorShape, unknown_shape

__all__ = [
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "erf", "erfc",
    "lgamma", "digamma", "rint", "atan2", "truncatediv", "truncatemod", "floor_div", "log_sigmoid",
    "cumsum", "cumprod", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16",
    "reduce_logsumexp", "count_nonzero", "accumulate_n", "is_non_decreasing", "is_strictly_increasing",
    "bincount", "confusion_matrix", "segment_sum", "segment_mean", "segment_max", "segment_min",
    "segment_prod", "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
    "unsorted_segment_mean", "unsorted_segment_sqrt_n",
]


# -- elementwise functions ----------------------------------------------------------------------------
Tan = _unary("Tan", np.tan, FLOAT, upcast=True)
Asin = _unary("Asin", np.arcsin, FLOAT, upcast=True)
Acos = _unary("Acos", np.arccos, FLOAT, upcast=True)
Atan = _unary("Atan", np.arctan, FLOAT, upcast=True)
Sinh = _unary("Sinh", np.sinh, FLOAT, upcast=True)
Cosh = _unary("Cosh", np.cosh, FLOAT, upcast=True)
Asinh = _unary("Asinh", np.arcsinh, FLOAT, upcast=True)
Acosh = _unary("Acosh", np.arccosh, FLOAT, upcast=True)
Atanh = _unary("Atanh", np.arctanh, FLOAT, upcast=True)
Expm1 = _unary("Expm1", np.expm1, FLOAT, upcast=True)
Erf = _unary("Erf", sp.erf, FLOAT, upcast=True)
Erfc = _unary("Erfc", sp.erfc, FLOAT, upcast=True)
Lgamma = _unary("Lgamma", sp.gammaln, FLOAT, upcast=True)
Digamma = _unary("Digamma", sp.digamma, FLOAT, upcast=True)
Rint = _unary("Rint", np.rint, FLOAT, differentiable=False)  # half to even, as TF


@Tan.gradient
def _tan_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Square(Reciprocal(Cos(op.inputs[0])))


@Asin.gradient
def _asin_grad(op: Any, grad: Tensor) -> Tensor:
    x = op.inputs[0]
    return grad * Reciprocal(Sqrt(1 - Square(x)))


@Acos.gradient
def _acos_grad(op: Any, grad: Tensor) -> Tensor:
    x = op.inputs[0]
    return -grad * Reciprocal(Sqrt(1 - Square(x)))


@Atan.gradient
def _atan_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Reciprocal(1 + Square(op.inputs[0]))


@Sinh.gradient
def _sinh_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Cosh(op.inputs[0])


@Cosh.gradient
def _cosh_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Sinh(op.inputs[0])


@Asinh.gradient
def _asinh_grad(op: Any, grad: Tensor) -> Tensor:
    return grad / Cosh(op.outputs[0])


@Acosh.gradient
def _acosh_grad(op: Any, grad: Tensor) -> Tensor:
    return grad / Sinh(op.outputs[0])


@Atanh.gradient
def _atanh_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Reciprocal(1 - Square(op.inputs[0]))


@Expm1.gradient
def _expm1_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Exp(op.inputs[0])


@Erf.gradient
def _erf_grad(op: Any, grad: Tensor) -> Tensor:
    x = op.inputs[0]
    return grad * (2 / np.sqrt(np.pi)) * Exp(-Square(x))


@Erfc.gradient
def _erfc_grad(op: Any, grad: Tensor) -> Tensor:
    x = op.inputs[0]
    return grad * (-2 / np.sqrt(np.pi)) * Exp(-Square(x))


@Lgamma.gradient
def _lgamma_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * Digamma(op.inputs[0])


def _polygamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """TF's kernel: the a-th derivative of digamma at x, NaN where a is not a non-negative integer."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    valid = (a == np.floor(a)) & (a >= 0)
    out = np.full(a.shape, np.nan)
    out[valid] = sp.polygamma(a[valid].astype(np.int64), x[valid])
    return out


Polygamma = _binary("Polygamma", _polygamma, (dtypes.float32, dtypes.float64))


@Polygamma.gradient
def _polygamma_grad(op: Any, grad: Tensor) -> list[Any]:
    """TF differentiates in x only: d/dx polygamma(a, x) = polygamma(a + 1, x)."""
    from asyncflow.ops.grad_util import unbroadcast

    a, x = op.inputs
    return [None, unbroadcast(grad * Polygamma(a + 1, x), x)]


@Digamma.gradient
def _digamma_grad(op: Any, grad: Tensor) -> Tensor:
    from asyncflow.ops.math import cast

    x = op.inputs[0]
    dtype = x.dtype.base_dtype
    wide = x if dtype in (dtypes.float32, dtypes.float64) else cast(x, dtypes.float32)  # Polygamma: f32/f64 only
    trigamma = Polygamma(convert_to_tensor(1, dtype=wide.dtype.base_dtype), wide)
    return grad * (trigamma if wide is x else cast(trigamma, dtype))


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    if x.dtype.kind == "u":
        return np.floor_divide(x, y)
    return np.trunc(np.true_divide(x, y)).astype(x.dtype) if x.dtype.kind == "i" else np.trunc(x / y)


def _trunc_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.fmod(x, y)  # C's %: the sign of the dividend


Atan2 = _binary("Atan2", np.arctan2, FLOAT)
TruncateDiv = _binary("TruncateDiv", _trunc_div, NUMERIC, differentiable=False)
TruncateMod = _binary("TruncateMod", _trunc_mod, REAL, differentiable=False)


@Atan2.gradient
def _atan2_grad(op: Any, grad: Tensor) -> list[Tensor]:
    from asyncflow.ops.grad_util import unbroadcast_pair

    y, x = op.inputs
    inv = grad * Reciprocal(Square(x) + Square(y))
    return unbroadcast_pair(x * inv, -y * inv, y, x)


tan = _gen_unary(Tan, "tan")
asin = _gen_unary(Asin, "asin")
acos = _gen_unary(Acos, "acos")
atan = _gen_unary(Atan, "atan")
sinh = _gen_unary(Sinh, "sinh")
cosh = _gen_unary(Cosh, "cosh")
asinh = _gen_unary(Asinh, "asinh")
acosh = _gen_unary(Acosh, "acosh")
atanh = _gen_unary(Atanh, "atanh")
expm1 = _gen_unary(Expm1, "expm1")
erf = _gen_unary(Erf, "erf")
erfc = _gen_unary(Erfc, "erfc")
lgamma = _gen_unary(Lgamma, "lgamma")
digamma = _gen_unary(Digamma, "digamma")
rint = _gen_unary(Rint, "rint")
truncatediv = _gen_binary(TruncateDiv, "truncatediv")
truncatemod = _gen_binary(TruncateMod, "truncatemod")


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.atan2(y, x)`: elementwise arctan of y/x in the right quadrant (op `Atan2`)."""
    return Atan2(y, x, name=name)


def floor_div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.floor_div`: TF1's generated `FloorDiv` wrapper (no gradient, as TF)."""
    return FloorDiv(x, y, name=name)


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`af.log_sigmoid`: Neg(Softplus(Neg(x))) under scope `LogSigmoid`, as TF1's math_ops."""
    from asyncflow.ops.math_unary import Neg
    from asyncflow.ops.nn_ops import softplus

    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return Neg(softplus(Neg(x)), name=scope)


# -- cumulative sums and products ---------------------------------------------------------------------
def _cumulative(fn: Any, identity: int) -> Any:
    def kernel(k, x, axis):
        x = np.asarray(x)
        ax = int(axis)
        if not -x.ndim <= ax < x.ndim:
            raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': axis {ax} is out of range "
                                                          f"for input of rank {x.ndim}")
        if k.reverse:
            x = np.flip(x, ax)
        out = fn(x, axis=ax, dtype=x.dtype)
        if k.exclusive:
            pad = np.full_like(np.take(out, [0], axis=ax), identity)
            out = np.concatenate([pad, np.delete(out, -1, axis=ax)], axis=ax) if x.shape[ax] else out
        if k.reverse:
            out = np.flip(out, ax)
        return np.ascontiguousarray(out)
    return kernel


_CUM = dict(inputs="x: T, axis: Tidx", outputs="out: T", types={"T": NUMERIC, "Tidx": INDEX},
            type_defaults={"Tidx": dtypes.int32}, attrs={"exclusive": False, "reverse": False}, shape=same_as_input)
Cumsum = op("Cumsum", **_CUM)(_cumulative(np.cumsum, 0))
Cumprod = op("Cumprod", **_CUM)(_cumulative(np.cumprod, 1))


@Cumsum.gradient
def _cumsum_grad(op: Any, grad: Tensor) -> list[Any]:
    return [Cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"), reverse=not op.get_attr("reverse")),
            None]


@Cumprod.gradient
def _cumprod_grad(op: Any, grad: Tensor) -> list[Any]:
    # TF's rule (exact for nonzero inputs): cumsum of prod * grad in the other direction, over x.
    x, axis = op.inputs
    out = Cumsum(op.outputs[0] * grad, axis, exclusive=op.get_attr("exclusive"),
                 reverse=not op.get_attr("reverse"))
    return [out / x, None]


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """`af.cumsum`: the running sum along `axis` (`exclusive` leaves out the element itself)."""
    with name_scope(name, "Cumsum", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return Cumsum(x, axis, exclusive=exclusive, reverse=reverse, name=scope)


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """`af.cumprod`: the running product along `axis`."""
    with name_scope(name, "Cumprod", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return Cumprod(x, axis, exclusive=exclusive, reverse=reverse, name=scope)


# -- casts ------------------------------------------------------------------------------------------------
def _to(dtype: dtypes.DType, default_name: str) -> Any:
    def api(x: Any, name: str = default_name) -> Tensor:
        return cast(x, dtype, name=name)

    api.__name__ = api.__qualname__ = "to_" + dtype.name
    api.__doc__ = f"`af.{api.__name__}(x, name='{default_name}')`: TF1's deprecated cast to {dtype.name}."
    return api


to_float = _to(dtypes.float32, "ToFloat")
to_double = _to(dtypes.float64, "ToDouble")
to_int32 = _to(dtypes.int32, "ToInt32")
to_int64 = _to(dtypes.int64, "ToInt64")
to_bfloat16 = _to(dtypes.bfloat16, "ToBFloat16")


# -- reductions built from others -------------------------------------------------------------------------
def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool | None = None, name: str | None = None,
                     reduction_indices: Any = None, keep_dims: bool | None = None) -> Tensor:
    """`af.reduce_logsumexp`: log(sum(exp(x))) computed stably around the (finite) max, as TF1."""
    keep = bool(mr._lookup("keepdims", keepdims, "keep_dims", keep_dims))
    axis = mr._lookup("axis", axis, "reduction_indices", reduction_indices)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = mr.reduce_max(x, axis, keepdims=True)
        from asyncflow.ops.array import stop_gradient
        from asyncflow.ops.math_unary import IsFinite, Log

        my_max = stop_gradient(mr.where(IsFinite(raw_max), raw_max, zeros_like(raw_max)))
        result = Log(mr.reduce_sum(Exp(x - my_max), axis, keepdims=keep))
        if not keep:
            my_max = reshape(my_max, shape(result))
        from asyncflow.ops.math import add

        return add(result, my_max, name=scope)


def count_nonzero(input_tensor: Any = None, axis: Any = None, keepdims: bool | None = None,
                  dtype: Any = dtypes.int64, name: str | None = None, reduction_indices: Any = None,
                  keep_dims: bool | None = None, input: Any = None) -> Tensor:  # noqa: A002
    """`af.count_nonzero`: how many entries differ from zero (`""` for strings), summed in int64 then cast."""
    keep = bool(mr._lookup("keepdims", keepdims, "keep_dims", keep_dims))
    axis = mr._lookup("axis", axis, "reduction_indices", reduction_indices)
    input_tensor = mr._lookup("input_tensor", input_tensor, "input", input)
    with name_scope(name, "count_nonzero", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        from asyncflow.ops.math import not_equal

        zero = "" if x.dtype == dtypes.string else np.zeros((), x.dtype.as_numpy_dtype)
        nonzero = cast(not_equal(x, zero), dtypes.int64)
        return cast(mr.reduce_sum(nonzero, axis, keepdims=keep), dtype, name=scope)


def accumulate_n(inputs: Any, shape: Any = None, tensor_dtype: Any = None, name: str | None = None) -> Tensor:
    """`af.accumulate_n`: the elementwise sum of `inputs` (TF1 builds AddN when the graph is not eager)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = [convert_to_tensor(t) for t in inputs]
    if tensor_dtype is not None and any(t.dtype.base_dtype != dtypes.as_dtype(tensor_dtype) for t in inputs):
        raise TypeError(f"tensor_dtype is {tensor_dtype}, but input is of type {inputs[0].dtype.name}")
    return mr.add_n(inputs, name=name)


def _monotonic(x: Any, name: str | None, default: str, strict: bool) -> Tensor:
    with name_scope(name, default, [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_numeric:
            raise TypeError(f"Expected x to be numeric, but found {x.dtype.name}")
        flat = reshape(x, [-1])
        left = strided_slice(flat, [0], [-1])
        right = strided_slice(flat, [1], [0], end_mask=1)
        from asyncflow.ops.math import less, less_equal

        return mr.reduce_all((less if strict else less_equal)(left, right))


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """`af.is_non_decreasing`: whether x (flattened) never decreases; true for fewer than two elements."""
    return _monotonic(x, name, "is_non_decreasing", strict=False)


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """`af.is_strictly_increasing`: whether x (flattened) always increases."""
    return _monotonic(x, name, "is_strictly_increasing", strict=True)


# -- counting ------------------------------------------------------------------------------------------------
@op("Bincount", inputs="arr: int32, size: int32, weights: T", outputs="bins: T",
    types={"T": (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)},
    shape=lambda b: TensorShape([None if b.const(1) is None else int(b.const(1))]), differentiable=False)
def Bincount(k, arr, size_, weights):
    arr, n = np.asarray(arr).reshape(-1), int(size_)
    if n < 0:
        raise errors.InvalidArgumentError(None, k.op, f"Bincount '{k.name}': size must be non-negative, got {n}")
    if arr.size and arr.min() < 0:
        raise errors.InvalidArgumentError(None, k.op, f"Bincount '{k.name}': arr must be non-negative, "
                                                      f"got {int(arr.min())}")
    keep = arr < n  # TF drops values at or past `size`
    w = np.asarray(weights).reshape(-1)
    w = w[keep] if w.size else None
    return np.bincount(arr[keep], weights=w, minlength=n)[:n].astype(k.out_dtypes[0])


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = dtypes.int32) -> Tensor:
    """`af.bincount`: counts of each value in `arr` (or their summed `weights`), output length
    max(arr)+1 bounded below by `minlength` and above by `maxlength`, as TF1's math_ops."""
    with name_scope(None, "bincount", [arr, weights]):
        arr = convert_to_tensor(arr, name="arr", dtype=dtypes.int32)
        from asyncflow.ops.math import greater, maximum, minimum

        nonempty = cast(greater(size(arr), 0), dtypes.int32)

        output_size = nonempty * (mr.reduce_max(arr) + 1)
        if minlength is not None:
            output_size = maximum(minlength, output_size)
        if maxlength is not None:
            output_size = minimum(maxlength, output_size)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            return Bincount(arr, output_size, weights)
        weights = np.zeros([0], dtypes.as_dtype(dtype).as_numpy_dtype)
        return Bincount(arr, output_size, weights)


def _with_dependency(check: Any, t: Tensor) -> Tensor:
    """TF1's control_flow_ops.with_dependencies: `t` through an Identity that waits for `check`."""
    from asyncflow.graph import get_default_graph
    from asyncflow.ops.array import identity

    graph = get_default_graph()
    with graph.colocate_with(t.op), graph.control_dependencies([check]):
        return identity(t, name="control_dependency")


def _squeeze_last(labels: Tensor, predictions: Tensor) -> tuple[Tensor, Tensor]:
    """TF1's remove_squeezable_dimensions with static ranks: a trailing 1 that one side has more goes."""
    from asyncflow.ops.array_dims import squeeze

    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if pr - lr == 1 and predictions.shape.as_list()[-1] == 1:
            predictions = squeeze(predictions, [-1])
        elif lr - pr == 1 and labels.shape.as_list()[-1] == 1:
            labels = squeeze(labels, [-1])
    return labels, predictions


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, dtype: Any = dtypes.int32,
                     name: str | None = None, weights: Any = None) -> Tensor:
    """`af.confusion_matrix` (TF1's `tf.confusion_matrix` / `tf.math.confusion_matrix`): counts of
    (label, prediction) pairs as a [num_classes, num_classes] matrix, built with ScatterNd as TF1;
    negative or out-of-bound values fail their assertions at run time."""
    from asyncflow.ops.array import ones_like, stack
    from asyncflow.ops.array_index import scatter_nd
    from asyncflow.ops.check_ops import assert_less, assert_non_negative
    from asyncflow.ops.math import maximum

    with name_scope(name, "confusion_matrix", (predictions, labels, num_classes, weights)):
        labels, predictions = _squeeze_last(convert_to_tensor(labels, name="labels"),
                                            convert_to_tensor(predictions, name="predictions"))
        predictions, labels = cast(predictions, dtypes.int64), cast(labels, dtypes.int64)
        labels = _with_dependency(assert_non_negative(labels, message="`labels` contains negative values"), labels)
        predictions = _with_dependency(
            assert_non_negative(predictions, message="`predictions` contains negative values"), predictions)
        if num_classes is None:
            num_classes = maximum(mr.reduce_max(predictions), mr.reduce_max(labels)) + 1
        else:
            num_classes = cast(num_classes, dtypes.int64)
            labels = _with_dependency(assert_less(labels, num_classes, message="`labels` out of bound"), labels)
            predictions = _with_dependency(
                assert_less(predictions, num_classes, message="`predictions` out of bound"), predictions)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            predictions.shape.assert_is_compatible_with(weights.shape)
            weights = cast(weights, dtype)
        shape_ = stack([num_classes, num_classes])
        indices = stack([labels, predictions], axis=1)
        values = ones_like(predictions, dtype) if weights is None else weights
        return scatter_nd(indices, values, cast(shape_, dtypes.int64))


# -- segment reductions --------------------------------------------------------------------------------------
def _lowest(dt: np.dtype) -> Any:
    return np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min  # C++'s numeric_limits::lowest, as TF


def _highest(dt: np.dtype) -> Any:
    return np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max


# kind -> (ufunc, fill of an empty segment in the sorted ops, in the unsorted ops)
_REDUCERS = {
    "Sum": (np.add, lambda dt: 0, lambda dt: 0),
    "Mean": (np.add, lambda dt: 0, None),
    "Prod": (np.multiply, lambda dt: 1, lambda dt: 1),
    "Max": (np.maximum, lambda dt: 0, _lowest),
    "Min": (np.minimum, lambda dt: 0, _highest),
}


def _segment_reduce(kind: str, data: np.ndarray, ids: np.ndarray, num: int, sorted_: bool) -> np.ndarray:
    ufunc, sorted_fill, unsorted_fill = _REDUCERS[kind]
    init = 1 if kind == "Prod" else 0 if kind in ("Sum", "Mean") else (_lowest if kind == "Max" else _highest)(
        data.dtype)
    out = np.full((num,) + data.shape[ids.ndim:], init, dtype=data.dtype)
    keep = ids >= 0  # the unsorted ops drop negative ids; the sorted ones reject them first
    ufunc.at(out, ids[keep], data[keep])
    counts = np.bincount(ids[keep].reshape(-1), minlength=num)[:num]
    empty = (counts == 0).reshape((num,) + (1,) * (out.ndim - 1))
    fill = (sorted_fill if sorted_ else unsorted_fill)(data.dtype)
    out = np.where(empty, np.asarray(fill, data.dtype), out)
    if kind == "Mean":
        c = np.maximum(counts, 1).reshape(empty.shape)
        out = out / c if data.dtype.kind in "fc" else out // c
    return out.astype(data.dtype, copy=False)


def _sorted_segment_shape(b: BuildContext) -> TensorShape:
    ids = b.shape(1)
    if ids.ndims is not None and ids.ndims != 1:
        raise b.error(f"segment_ids must be a vector, got shape {ids}")
    data = b.shape(0)
    if data.ndims is None:
        return unknown_shape()
    if data.ndims == 0:
        raise b.error("data must have rank >= 1, got a scalar")
    return TensorShape([None]).concatenate(data[1:])  # TF infers no segment count, even from constant ids


def _sorted_segment_op(kind: str) -> Any:
    op_type = f"Segment{kind}"

    def kernel(k, data, segment_ids):
        data, ids = np.asarray(data), np.asarray(segment_ids)
        if data.ndim == 0 or ids.shape != (data.shape[0],):
            raise errors.InvalidArgumentError(None, k.op, f"{op_type} '{k.name}': segment_ids should be the same "
                                                          f"size as dimension 0 of data: {list(ids.shape)} vs "
                                                          f"{list(data.shape)}")
        if ids.size and (ids[0] < 0 or np.any(np.diff(ids) < 0)):
            bad = 0 if ids[0] < 0 else int(np.argmax(np.diff(ids) < 0)) + 1
            raise errors.InvalidArgumentError(None, k.op, f"{op_type} '{k.name}': segment ids are not increasing "
                                                          f"(or negative): segment_ids[{bad}] = {int(ids[bad])}")
        num = int(ids[-1]) + 1 if ids.size else 0
        return _segment_reduce(kind, data, ids, num, sorted_=True)

    kernel.__name__ = f"{op_type}_kernel"
    types = REAL if kind in ("Max", "Min") else NUMERIC
    return op(op_type, inputs="data: T, segment_ids: Tindices", outputs="output: T",
              types={"T": types, "Tindices": INDEX}, shape=_sorted_segment_shape)(kernel)


def _unsorted_segment_op(kind: str) -> Any:
    from asyncflow.ops.array_index import _unsorted_segment_sum_shape

    op_type = f"UnsortedSegment{kind}"

    def kernel(k, data, segment_ids, num_segments):
        data, ids, num = np.asarray(data), np.asarray(segment_ids), int(num_segments)
        if data.shape[:ids.ndim] != ids.shape:
            raise errors.InvalidArgumentError(None, k.op, f"{op_type} '{k.name}': segment_ids.shape = "
                                                          f"{list(ids.shape)} must be a prefix of data.shape = "
                                                          f"{list(data.shape)}")
        if ids.size and ids.max() >= num:
            raise errors.InvalidArgumentError(None, k.op, f"{op_type} '{k.name}': segment_ids value "
                                                          f"{int(ids.max())} is out of range [0, {num})")
        return _segment_reduce(kind, data, ids, num, sorted_=False)

    kernel.__name__ = f"{op_type}_kernel"
    types = REAL if kind in ("Max", "Min") else NUMERIC
    return op(op_type, inputs="data: T, segment_ids: Tindices, num_segments: Tnumsegments", outputs="output: T",
              types={"T": types, "Tindices": INDEX, "Tnumsegments": INDEX},
              type_defaults={"Tnumsegments": dtypes.int32}, shape=_unsorted_segment_sum_shape)(kernel)


SegmentSum = _sorted_segment_op("Sum")
SegmentMean = _sorted_segment_op("Mean")
SegmentProd = _sorted_segment_op("Prod")
SegmentMax = _sorted_segment_op("Max")
SegmentMin = _sorted_segment_op("Min")
UnsortedSegmentProd = _unsorted_segment_op("Prod")
UnsortedSegmentMax = _unsorted_segment_op("Max")
UnsortedSegmentMin = _unsorted_segment_op("Min")


def _safe_ids(ids: Tensor) -> tuple[Tensor, Tensor]:
    """Ids with negatives clipped to 0 (for gathers), and where ids are valid (dropped rows get 0)."""
    from asyncflow.ops.math import greater_equal, maximum

    return maximum(ids, zeros_like(ids)), greater_equal(ids, 0)


def _mask_rows(valid: Tensor, x: Tensor, ids: Tensor) -> Tensor:
    """`x` where the row's id is valid, 0 elsewhere; `valid` (ids' shape) broadcast over x's trailing dims."""
    from asyncflow.ops.array import ones
    from asyncflow.ops.array import rank as rank_

    trailing = ones(reshape(rank_(x) - rank_(ids), [1]), dtype=dtypes.int32)
    valid = reshape(valid, concat([shape(ids), trailing], 0))
    return mr.where_v2(valid, x, zeros_like(x))


@SegmentSum.gradient
def _segment_sum_grad(op: Any, grad: Tensor) -> list[Any]:
    return [gather(grad, op.inputs[1]), None]


@SegmentMean.gradient
def _segment_mean_grad(op: Any, grad: Tensor) -> list[Any]:
    from asyncflow.ops.array import ones_like

    data, ids = op.inputs
    counts = SegmentSum(ones_like(data), ids)
    return [gather(grad / counts, ids), None]


def _min_or_max_grad(op: Any, grad: Tensor, segment_sum_of: Any) -> list[Any]:
    """TF's _SegmentMinOrMaxGrad: the gradient goes to the inputs equal to their segment's result,
    shared among ties."""
    from asyncflow.ops.math import equal

    data, ids = op.inputs[0], op.inputs[1]
    safe, valid = _safe_ids(ids)
    is_selected = equal(data, gather(op.outputs[0], safe))
    num_selected = segment_sum_of(cast(is_selected, grad.dtype))
    gathered = gather(grad / num_selected, safe)
    picked = mr.where_v2(is_selected, gathered, zeros_like(gathered))
    return [_mask_rows(valid, picked, ids)] + [None] * (len(op.inputs) - 1)


@SegmentMax.gradient
def _segment_max_grad(op: Any, grad: Tensor) -> list[Any]:
    return _min_or_max_grad(op, grad, lambda x: SegmentSum(x, op.inputs[1]))


@SegmentMin.gradient
def _segment_min_grad(op: Any, grad: Tensor) -> list[Any]:
    return _min_or_max_grad(op, grad, lambda x: SegmentSum(x, op.inputs[1]))


@UnsortedSegmentMax.gradient
def _unsorted_segment_max_grad(op: Any, grad: Tensor) -> list[Any]:
    return _min_or_max_grad(op, grad, lambda x: unsorted_segment_sum(x, op.inputs[1], op.inputs[2]))


@UnsortedSegmentMin.gradient
def _unsorted_segment_min_grad(op: Any, grad: Tensor) -> list[Any]:
    return _min_or_max_grad(op, grad, lambda x: unsorted_segment_sum(x, op.inputs[1], op.inputs[2]))


def _prod_grad(op: Any, grad: Tensor) -> list[Any]:
    # d prod / d x_i = prod / x_i: exact for nonzero inputs (TF's rule also handles zeros).
    data, ids = op.inputs[0], op.inputs[1]
    safe, valid = _safe_ids(ids)
    g = gather(grad * op.outputs[0], safe) / data
    return [_mask_rows(valid, g, ids)] + [None] * (len(op.inputs) - 1)


SegmentProd.gradient(_prod_grad)
UnsortedSegmentProd.gradient(_prod_grad)


def _segment_api(opdef: Any, py_name: str) -> Any:
    def api(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
        return opdef(data, segment_ids, name=name)

    api.__name__ = api.__qualname__ = py_name
    api.__doc__ = f"`af.{py_name}(data, segment_ids)`: over sorted segment ids (op `{opdef.type}`)."
    return api


def _unsorted_api(opdef: Any, py_name: str) -> Any:
    def api(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
        return opdef(data, segment_ids, num_segments, name=name)

    api.__name__ = api.__qualname__ = py_name
    api.__doc__ = f"`af.{py_name}(data, segment_ids, num_segments)` (op `{opdef.type}`; negative ids dropped)."
    return api


segment_sum = _segment_api(SegmentSum, "segment_sum")
segment_mean = _segment_api(SegmentMean, "segment_mean")
segment_prod = _segment_api(SegmentProd, "segment_prod")
segment_max = _segment_api(SegmentMax, "segment_max")
segment_min = _segment_api(SegmentMin, "segment_min")
unsorted_segment_prod = _unsorted_api(UnsortedSegmentProd, "unsorted_segment_prod")
unsorted_segment_max = _unsorted_api(UnsortedSegmentMax, "unsorted_segment_max")
unsorted_segment_min = _unsorted_api(UnsortedSegmentMin, "unsorted_segment_min")


def _unsorted_segment_n(data: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """TF1's _unsorted_segment_N: per-row counts of each segment (at least 1), shaped to broadcast."""
    from asyncflow.ops.array import ones, ones_like
    from asyncflow.ops.array import rank as rank_
    from asyncflow.ops.math import maximum

    segment_ids = convert_to_tensor(segment_ids)
    n = unsorted_segment_sum(ones_like(segment_ids, dtype=data.dtype), segment_ids, num_segments)
    trailing = ones(reshape(rank_(data) - rank_(segment_ids), [1]), dtype=dtypes.int32)
    n = reshape(n, concat([shape(n), trailing], 0))
    return maximum(n, ones_like(n))


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """`af.unsorted_segment_mean`: the sum of each segment over its count (empty segments give 0)."""
    with name_scope(name, "UnsortedSegmentMean"):
        data = convert_to_tensor(data)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return unsorted_segment_sum(data, segment_ids, num_segments) / n


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """`af.unsorted_segment_sqrt_n`: the sum of each segment over the square root of its count."""
    with name_scope(name, "UnsortedSegmentSqrtN"):
        data = convert_to_tensor(data)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return unsorted_segment_sum(data, segment_ids, num_segments) / Sqrt(n)
