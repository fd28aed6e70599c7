"""Math ops, elementwise: arithmetic, comparisons, logic, casts, and their TF1 public functions.

Elementwise ops are declared from small tables (one row per op: its TF type, the allowed
dtypes as in TF's op registry, the numpy function); the public functions reproduce TF1's
naming (`af.add` makes an op named `Add`, `x + y` one named `add`, `af.truediv` on ints casts
first under `truediv/`). Each differentiable op's gradient (TF's rule) sits below its
declaration. Unary ops live in `asyncflow.ops.math_unary`; reductions, selection, `add_n` and
`range` in `asyncflow.ops.math_reduce`; matmul in `asyncflow.ops.math_matmul`: all re-exported here.

Numeric semantics follow TF's CPU kernels, not numpy's where the two differ: integer
division and modulo floor (FloorDiv/FloorMod, the remainder has the divisor's sign), an integer
divisor of zero is an InvalidArgumentError, float FloorDiv is `floor(x / y)`, integer overflow
wraps silently, and float division by zero, `log(0)`, `sqrt(-1)` give inf/nan without warnings.
Every kernel returns exactly its declared output dtype (numpy promotion is undone).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from asyncflow import dtypes
from asyncflow import errors as _errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.grad_util import unbroadcast
from asyncflow.ops.kernel_util import as_out
from asyncflow.ops.registry import (
    ALL_TYPES,
    FLOAT,
    FLOAT_COMPLEX,
    NUMERIC,
    REAL,
    OpDef,
    constant_folder,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.ops.shape_fns import broadcast, same_as_input
from asyncflow.shapes import TensorShape

# Type lists as TF's op registry declares them (tf.raw_ops), so the same programs are accepted.
SIGNED = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
COMPLEX = dtypes.COMPLEX
FLOAT_SIGNED = FLOAT + SIGNED  # Abs
FLOAT_SIGNED_COMPLEX = FLOAT + SIGNED + COMPLEX  # Neg, Sign, Pow, Round
ORDERED = REAL  # Maximum, Minimum, Less, ..., FloorMod
SQUARED_DIFF_TYPES = FLOAT + (dtypes.int32, dtypes.int64) + COMPLEX

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))



# The ufunc each Python operator stands for: a kernel computing with a ufunc can write its result into
# an input buffer the executor hands it (`out=`, TF's buffer forwarding; exec/executor.py).
_UFUNC_OF = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply}


def _forwarding_ufunc(fn: Callable[..., Any], out: str) -> np.ufunc | None:
    """The ufunc a kernel may compute `fn` with into a forwarded buffer (None: it always allocates)."""
    if out != "T":
        return None
    ufunc = _UFUNC_OF.get(fn, fn)
    return ufunc if isinstance(ufunc, np.ufunc) else None


def _binary(op_type: str, fn: Callable[..., Any], types: tuple, out: str = "T", **traits: Any) -> OpDef:
    """Declares an elementwise binary op `z = fn(x, y)` (broadcasting, as TF's cwise ops)."""
    out_spec = "z: T" if out == "T" else f"z: {out}"
    ufunc = _forwarding_ufunc(fn, out)

    def kernel(k, x, y, out=None):
        if out is not None and out.dtype.type is k.out_dtypes[0] and out.dtype.kind in "biufc" and \
                out.shape == (x.shape if x.shape == y.shape else np.broadcast_shapes(x.shape, y.shape)):
            return ufunc(x, y, out=out)
        return as_out(fn(x, y), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="x: T, y: T", outputs=out_spec, types={"T": types}, shape=broadcast,
              forwards=ufunc is not None, **traits)(kernel)


def _unary(op_type: str, fn: Callable[..., Any], types: tuple, out: str = "T", upcast: bool = False,
           **traits: Any) -> OpDef:
    """Declares an elementwise unary op `y = fn(x)`; `upcast` computes float16/bfloat16 in float32."""
    out_spec = "y: T" if out == "T" else f"y: {out}"
    ufunc = _forwarding_ufunc(fn, out)

    def kernel(k, x, out=None):
        if upcast and x.dtype in _LOW_PRECISION:
            x = x.astype(np.float32)
        elif out is not None and out.dtype.type is k.out_dtypes[0] and out.dtype.kind in "fc" and \
                out.shape == x.shape:
            return ufunc(x, out=out)
        return as_out(fn(x), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="x: T", outputs=out_spec, types={"T": types}, shape=same_as_input,
              forwards=ufunc is not None, **traits)(kernel)


# -- integer division rules (TF's google_floor_div / google_floor_mod / safe_div) ----------------------
def _check_divisor(y: np.ndarray) -> None:
    if y.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_divisor(y)
    if x.dtype.kind in "iu":
        return np.floor_divide(x, y)
    return np.floor(np.true_divide(x, y))  # TF: floor(x / y), not numpy's fmod-based floor_divide


def _floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_divisor(y)
    if x.dtype.kind in "iu":
        return np.mod(x, y)  # Python's rule, as TF: the result has the sign of the divisor
    r = np.fmod(x, y)
    return np.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TF1's `Div`: C division (truncation toward zero) for integers, true division otherwise."""
    _check_divisor(y)
    if x.dtype.kind == "u":
        return np.floor_divide(x, y)
    if x.dtype.kind == "i":
        q = np.floor_divide(x, y)
        return np.where((np.mod(x, y) != 0) & ((x < 0) != (y < 0)), q + 1, q)
    return np.true_divide(x, y)


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise ValueError("Integers to negative integer powers are not allowed")
    return np.power(x, y)


def _squared_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = np.subtract(x, y)
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


# -- binary arithmetic ----------------------------------------------------------------------------
# Gradients follow TF's math_grad.py rule by rule (complex inputs: the conjugate, as TF); `unbroadcast`
# sums each input's gradient back over the axes it was broadcast along.
AddV2 = _binary("AddV2", operator.add, NUMERIC, commutative=True)


@AddV2.gradient
def _add_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return [unbroadcast(grad, x), unbroadcast(grad, y)]


# TF builds `Add` rather than AddV2 for strings (`x + y` concatenates them elementwise).
StringAdd = _binary("Add", operator.add, (dtypes.string,), differentiable=False)

Sub = _binary("Sub", operator.sub, NUMERIC)


@Sub.gradient
def _sub_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return [unbroadcast(grad, x), unbroadcast(-grad, y)]


Mul = _binary("Mul", operator.mul, NUMERIC, commutative=True)


@Mul.gradient
def _mul_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return [unbroadcast(grad * conj(y), x), unbroadcast(conj(x) * grad, y)]


RealDiv = _binary("RealDiv", np.true_divide, FLOAT_COMPLEX)  # TF has no CPU kernel for ints
Div = _binary("Div", _trunc_div, NUMERIC)  # integer inputs get no gradient (the driver skips them)


@RealDiv.gradient
@Div.gradient
def _div_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """d(x/y) = grad / y, -grad * x / y / y (TF divides twice rather than by y*y, which may overflow)."""
    x, y = op.inputs
    cx, cy = conj(x), conj(y)
    return [unbroadcast(RealDiv(grad, cy), x), unbroadcast(grad * RealDiv(RealDiv(-cx, cy), cy), y)]


FloorDiv = _binary("FloorDiv", _floor_div, REAL, differentiable=False)  # TF: None for both inputs
FloorMod = _binary("FloorMod", _floor_mod, REAL)


@FloorMod.gradient
def _floor_mod_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """x mod y = x - floor(x / y) * y, so (grad, -grad * floor(x / y)), as TF."""
    x, y = op.inputs
    return [unbroadcast(grad, x), unbroadcast(grad * -FloorDiv(x, y), y)]


Pow = _binary("Pow", _pow, FLOAT_SIGNED_COMPLEX)


@Pow.gradient
def _pow_grad(op: Any, grad: Tensor) -> list[Tensor]:
    """(grad * y * x^(y-1), grad * z * log x); log x is taken as 0 where x <= 0 (x != 0 for complex), as TF."""
    from asyncflow.ops.array import ones_like, zeros_like

    x, y = op.inputs
    cx, cy = conj(x), conj(y)
    gx = grad * cy * Pow(cx, cy - 1)
    mask = NotEqual(cx, 0) if x.dtype.is_complex else Greater(cx, 0)
    log_x = _math_reduce.where(mask, Log(_math_reduce.where(mask, cx, ones_like(x))), zeros_like(x))
    gy = grad * conj(op.outputs[0]) * log_x
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


def _select_grad_pair(op: Any, grad: Tensor, x_wins: Callable[..., Tensor]) -> list[Tensor]:
    """Maximum/Minimum: the whole gradient goes to x where `x_wins(x, y)` (ties included), else to y."""
    from asyncflow.ops.array import zeros_like

    x, y = op.inputs
    zeros = zeros_like(grad)
    mask = x_wins(x, y)
    gx = _math_reduce.where_v2(mask, grad, zeros)
    gy = _math_reduce.where_v2(mask, zeros, grad)
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


Maximum = _binary("Maximum", np.maximum, ORDERED)  # NaN propagates, as TF
Minimum = _binary("Minimum", np.minimum, ORDERED)


@Maximum.gradient
def _maximum_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return _select_grad_pair(op, grad, GreaterEqual)


@Minimum.gradient
def _minimum_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return _select_grad_pair(op, grad, LessEqual)


SquaredDifference = _binary("SquaredDifference", _squared_difference, SQUARED_DIFF_TYPES, commutative=True)


@SquaredDifference.gradient
def _squared_difference_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    x_grad = (2 * grad) * (x - y)
    return [unbroadcast(x_grad, x), unbroadcast(-x_grad, y)]


# -- comparisons and logic --------------------------------------------------------------------------
Less = _binary("Less", np.less, ORDERED, out="bool", differentiable=False)
LessEqual = _binary("LessEqual", np.less_equal, ORDERED, out="bool", differentiable=False)
Greater = _binary("Greater", np.greater, ORDERED, out="bool", differentiable=False)
GreaterEqual = _binary("GreaterEqual", np.greater_equal, ORDERED, out="bool", differentiable=False)


def _equality_shape(b: Any) -> Any:
    try:
        return broadcast(b)
    except ValueError:
        if b.attrs["incompatible_shape_error"]:
            raise
        return TensorShape([])  # TF's answer for shapes that cannot broadcast: one scalar


def _equality(op_type: str, fn: Callable[..., Any], when_incompatible: bool) -> OpDef:
    def kernel(k, x, y):
        try:
            shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        except ValueError:
            if k.incompatible_shape_error:
                shapes = f"{list(np.shape(x))} vs. {list(np.shape(y))}"
                raise ValueError(f"Incompatible shapes: {shapes}") from None
            return np.bool_(when_incompatible)  # TF's answer for shapes that cannot broadcast
        return as_out(fn(x, y), np.bool_).reshape(shape)

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="x: T, y: T", outputs="z: bool", types={"T": ALL_TYPES},
              attrs={"incompatible_shape_error": True}, shape=_equality_shape, commutative=True,
              differentiable=False)(kernel)


Equal = _equality("Equal", np.equal, False)
NotEqual = _equality("NotEqual", np.not_equal, True)


def _logical(op_type: str, fn: Callable[..., Any]) -> OpDef:
    def kernel(k, x, y):
        return fn(x, y)

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="x: bool, y: bool", outputs="z: bool", shape=broadcast, commutative=True,
              differentiable=False)(kernel)


LogicalAnd = _logical("LogicalAnd", np.logical_and)
LogicalOr = _logical("LogicalOr", np.logical_or)


@op("LogicalNot", inputs="x: bool", outputs="y: bool", shape=same_as_input, differentiable=False)
def LogicalNot(k, x):
    return np.logical_not(x)


# Elementwise unary ops and their gradients (they use the comparisons above, hence the import here).
from asyncflow.ops.math_unary import (  # noqa: E402
    Abs,
    Ceil,
    ComplexAbs,
    Conj,
    Cos,
    Exp,
    Floor,
    IsFinite,
    IsInf,
    IsNan,
    Log,
    Log1p,
    Neg,
    Reciprocal,
    Round,
    Rsqrt,
    Sigmoid,
    Sign,
    Sin,
    Sqrt,
    Square,
    Tanh,
)


# -- cast -----------------------------------------------------------------------------------------
def _cast_value(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """TF's Cast: complex to real keeps the real part, float to int truncates toward zero."""
    x = np.asarray(x)
    if x.dtype.kind == "c" and dst.kind != "c":
        x = x.real
    if x.dtype == ml_dtypes.bfloat16 and dst.kind != "f":
        x = x.astype(np.float32)
    if dst.kind == "b":
        return x != 0
    with np.errstate(all="ignore"):
        return x.astype(dst)  # out-of-range floats to int: the hardware's value, as TF's kernel


@op("Cast", inputs="x: SrcT", outputs="y: DstT", types={"SrcT": ALL_TYPES, "DstT": ALL_TYPES},
    attrs={"Truncate": False}, shape=same_as_input)
def Cast(k, x):
    if (k.SrcT == dtypes.string) != (k.DstT == dtypes.string):
        raise _errors.UnimplementedError(
            None, None, f"Cast '{k.name}': Cast {k.SrcT.name} to {k.DstT.name} is not supported")
    return _cast_value(x, np.dtype(k.out_dtypes[0]))


_CAST_DIFFERENTIABLE = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64) + COMPLEX


@Cast.gradient
def _cast_grad(op: Any, grad: Tensor) -> Tensor | None:
    """The gradient cast back to the input's type, between floating/complex types only (TF's rule)."""
    src = op.inputs[0].dtype.base_dtype
    if src in _CAST_DIFFERENTIABLE and grad.dtype.base_dtype in _CAST_DIFFERENTIABLE:
        return cast(grad, src)
    return None


@constant_folder("Cast")
def _fold_cast(t: Tensor) -> np.ndarray | None:
    value = constant_value(t.op.inputs[0])
    if value is None or (t.op.inputs[0].dtype.base_dtype == dtypes.string) != (t.dtype == dtypes.string):
        return None
    return _cast_value(value, t.dtype.np)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`af.cast`: `x` as `dtype` (op `Cast`); returns `x` itself when it already has that dtype."""
    base = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype.base_dtype == base:
        return x
    with name_scope(name, "Cast", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.base_dtype == base:
            return x
        return Cast(x, DstT=base, name=scope)


# -- public functions -------------------------------------------------------------------------------
def _binary_api(opdef: OpDef, default_name: str) -> Callable[..., Tensor]:
    """TF's python wrappers that convert `y` with `x`'s dtype as a hint (`tf.add`)."""

    def api(x: Any, y: Any, name: str | None = None) -> Tensor:
        with name_scope(name, default_name, [x, y]) as scope:
            x = convert_to_tensor(x, name="x")
            y = convert_to_tensor(y, dtype_hint=x.dtype.base_dtype, name="y")
            return opdef(x, y, name=scope)

    api.__name__ = default_name.lower()
    return api


def _gen_binary(opdef: OpDef, py_name: str) -> Callable[..., Tensor]:
    """A generated op wrapper: inputs converted inside the op's name scope (`Maximum/y`)."""

    def api(x: Any, y: Any, name: str | None = None) -> Tensor:
        return opdef(x, y, name=name)

    api.__name__ = api.__qualname__ = py_name
    api.__doc__ = f"`af.{py_name}(x, y)`: elementwise, with broadcasting (op `{opdef.type}`)."
    return api


def _gen_unary(opdef: OpDef, py_name: str) -> Callable[..., Tensor]:
    def api(x: Any, name: str | None = None) -> Tensor:
        return opdef(x, name=name)

    api.__name__ = api.__qualname__ = py_name
    api.__doc__ = f"`af.{py_name}(x)`: elementwise (op `{opdef.type}`)."
    return api


_add_numeric = _binary_api(AddV2, "Add")
_add_strings = _binary_api(StringAdd, "Add")


def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.add(x, y)`: elementwise x + y (op `AddV2`; `Add`, concatenation, for strings, as TF)."""
    is_string = getattr(getattr(x, "dtype", None), "base_dtype", None) == dtypes.string or \
        isinstance(x, (str, bytes)) or (isinstance(x, (list, tuple)) and x and isinstance(x[0], (str, bytes)))
    return (_add_strings if is_string else _add_numeric)(x, y, name=name)
subtract = _gen_binary(Sub, "subtract")
multiply = _gen_binary(Mul, "multiply")
realdiv = _gen_binary(RealDiv, "realdiv")
floormod = _gen_binary(FloorMod, "floormod")
mod = _gen_binary(FloorMod, "mod")
maximum = _gen_binary(Maximum, "maximum")
minimum = _gen_binary(Minimum, "minimum")
squared_difference = _gen_binary(SquaredDifference, "squared_difference")
equal = _gen_binary(Equal, "equal")
not_equal = _gen_binary(NotEqual, "not_equal")
less = _gen_binary(Less, "less")
less_equal = _gen_binary(LessEqual, "less_equal")
greater = _gen_binary(Greater, "greater")
greater_equal = _gen_binary(GreaterEqual, "greater_equal")
logical_and = _gen_binary(LogicalAnd, "logical_and")
logical_or = _gen_binary(LogicalOr, "logical_or")

negative = _gen_unary(Neg, "negative")
sign = _gen_unary(Sign, "sign")
square = _gen_unary(Square, "square")
sqrt = _gen_unary(Sqrt, "sqrt")
rsqrt = _gen_unary(Rsqrt, "rsqrt")
reciprocal = _gen_unary(Reciprocal, "reciprocal")
exp = _gen_unary(Exp, "exp")
log = _gen_unary(Log, "log")
log1p = _gen_unary(Log1p, "log1p")
sin = _gen_unary(Sin, "sin")
cos = _gen_unary(Cos, "cos")
tanh = _gen_unary(Tanh, "tanh")
sigmoid = _gen_unary(Sigmoid, "sigmoid")
floor = _gen_unary(Floor, "floor")
ceil = _gen_unary(Ceil, "ceil")
is_nan = _gen_unary(IsNan, "is_nan")
is_inf = _gen_unary(IsInf, "is_inf")
is_finite = _gen_unary(IsFinite, "is_finite")
logical_not = _gen_unary(LogicalNot, "logical_not")


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`af.pow(x, y)`: x ** y elementwise (op `Pow`); integers to negative powers fail at run time."""
    with name_scope(name, "Pow", [x]) as scope:
        return Pow(x, y, name=scope)


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`af.abs(x)`: `Abs`, or `ComplexAbs` with the real dtype for complex `x`."""
    with name_scope(name, "Abs", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return ComplexAbs(x, Tout=x.dtype.real_dtype, name=scope)
        return Abs(x, name=scope)


def round(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`af.round(x)`: half to even (op `Round`); integer tensors come back unchanged."""
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_integer:
        return x
    return Round(x, name=name)


def conj(x: Any, name: str | None = None) -> Tensor:
    """`af.conj(x)`: complex conjugate (op `Conj`); real tensors come back unchanged."""
    if isinstance(x, Tensor) and (x.dtype.is_floating or x.dtype.is_integer):
        return x
    with name_scope(name, "Conj", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return Conj(x, name=scope)
        if x.dtype.is_floating or x.dtype.is_integer:
            return x
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype.name}")


def logical_xor(x: Any, y: Any, name: str = "LogicalXor") -> Tensor:
    """`af.logical_xor`: composed as TF does, `(x | y) & ~(x & y)`, the last op named `name`."""
    return LogicalAnd(LogicalOr(x, y), LogicalNot(LogicalAnd(x, y)), name=name)


# Integer dtypes that truediv casts before dividing, and the float type it casts them to (TF's table).
_TRUEDIV_TABLE = {
    dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32,
    dtypes.uint16: dtypes.float32, dtypes.int16: dtypes.float32,
    dtypes.uint32: dtypes.float64, dtypes.int32: dtypes.float64,
    dtypes.uint64: dtypes.float64, dtypes.int64: dtypes.float64,
    dtypes.bfloat16: None, dtypes.float16: None, dtypes.float32: None, dtypes.float64: None,
    dtypes.complex64: None, dtypes.complex128: None,
}


def truediv_operands(x: Tensor, y: Tensor, where: str) -> tuple[Tensor, Tensor]:
    """TF's `truediv` dtype rule, shared by the divisions that follow it: x and y of one dtype, integers
    cast to float32/float64 first; `where` names the caller in TF's error message."""
    x_dtype, y_dtype = x.dtype.base_dtype, y.dtype.base_dtype
    if x_dtype != y_dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got {x_dtype.name} != {y_dtype.name}.")
    if x_dtype not in _TRUEDIV_TABLE:
        allowed = ", ".join(d.name for d in _TRUEDIV_TABLE)
        raise TypeError(f"Invalid dtype {x_dtype.name} in {where}. Expected one of {{{allowed}}}.")
    target = _TRUEDIV_TABLE[x_dtype]
    return (cast(x, target), cast(y, target)) if target is not None else (x, y)


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.truediv` (Python 3 `/`): RealDiv, after casting integers to float32/float64 as TF does."""
    with name_scope(name, "truediv", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype_hint=x.dtype.base_dtype, name="y")
        x, y = truediv_operands(x, y, "__truediv__")
        return RealDiv(x, y, name=scope)


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.divide`: `x / y` (ops under `truediv`), or truediv named `name` when one is given."""
    if name is not None:
        return truediv(x, y, name=name)
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x, dtype=y.dtype.base_dtype if isinstance(y, Tensor) else None)
    return x / y


def div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """TF1's `af.div`: RealDiv for floats and complex, FloorDiv for integers, named `div`."""
    with name_scope(name, "div", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
        if x.dtype.is_floating or x.dtype.is_complex:
            return RealDiv(x, y, name=scope)
        return FloorDiv(x, y, name=scope)


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.floordiv` (`//`): op FloorDiv, rounding toward negative infinity."""
    with name_scope(name, "floordiv", [x, y]) as scope:
        return FloorDiv(x, y, name=scope)


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.scalar_mul`: `scalar * x` as a Mul whose first input is the 0-D `scalar`."""
    x = convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {scalar.shape}.")
    return Mul(scalar, x, name=name)


# Reductions, selection, add_n, clip_by_value, range and matmul (they use cast, minimum and maximum
# from above, hence the import at the end).
from asyncflow.ops import math_matmul as _math_matmul  # noqa: E402
from asyncflow.ops import math_reduce as _math_reduce  # noqa: E402
from asyncflow.ops.math_matmul import *  # noqa: E402, F403
from asyncflow.ops.math_reduce import *  # noqa: E402, F403

__all__ = [
    "cast", "add", "subtract", "multiply", "divide", "truediv", "realdiv", "div", "floordiv", "floormod",
    "mod", "pow", "negative", "abs", "sign", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "log1p",
    "sin", "cos", "tanh", "sigmoid", "floor", "ceil", "round", "is_nan", "is_inf", "is_finite", "conj",
    "maximum", "minimum", "squared_difference", "scalar_mul", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "logical_xor",
    *_math_reduce.__all__, *_math_matmul.__all__,
]
