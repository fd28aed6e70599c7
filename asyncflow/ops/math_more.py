"""The rest of TF1's `tf.math`: the NaN-safe products and quotients (xlogy, xdivy, xlog1py, MulNoNan,
DivNoNan), the special functions (erfinv, ndtri, the incomplete gamma and beta functions, Hurwitz
zeta, polygamma, the modified Bessel functions I0/I1), complex parts (Complex, Real, Imag, Angle),
EuclideanNorm, CumulativeLogsumexp, NextAfter, and the composites TF1 builds from them
(reduce_variance/reduce_std, lbeta, polyval, erfcinv, reciprocal_no_nan).

Op types, dtypes and gradients are TF's (math_grad.py). Kernels are numpy/scipy.special; float16 and
bfloat16 are computed in float32. TF1 exposes some of these at the top level (`tf.div_no_nan`,
`tf.igamma`, `tf.real`, ...): those are this module's `__all__`; the others only under `af.math`
(bound in asyncflow/math.py). The `Polygamma` op itself is declared in math_extra.py, beside Digamma's
gradient, which uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sp

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.grad_util import unbroadcast, unbroadcast_pair
from asyncflow.ops.kernel_util import as_out
from asyncflow.ops.math import (
    _LOW_PRECISION,
    COMPLEX,
    Conj,
    Equal,
    Greater,
    Less,
    Mul,
    NotEqual,
    Sign,
    _unary,
    cast,
    conj,
    truediv_operands,
)
from asyncflow.ops.math_extra import Lgamma, Polygamma
from asyncflow.ops.math_unary import Exp, Log, Reciprocal, Sqrt, Square
from asyncflow.ops.registry import FLOAT_COMPLEX, INDEX, NUMERIC, convert_to_tensor, op
from asyncflow.ops.shape_fns import broadcast, broadcast_all, same_as_input

__all__ = ["div_no_nan", "complex", "real", "imag", "angle", "lbeta", "igamma", "igammac", "betainc", "zeta",
           "polygamma"]

F32_64 = (dtypes.float32, dtypes.float64)
HALF_FLOAT = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)


def _upcast(*xs: np.ndarray) -> list[np.ndarray]:
    return [x.astype(np.float32) if x.dtype in _LOW_PRECISION else x for x in xs]


def _nary(op_type: str, fn: Callable[..., Any], types: tuple, names: str = "x, y", out: str = "z",
          **traits: Any) -> Any:
    """Declares a broadcasting op `z = fn(*inputs)` of one dtype T; float16/bfloat16 computed in float32."""
    def kernel(k, *xs):
        with np.errstate(all="ignore"):
            return as_out(fn(*_upcast(*(np.asarray(x) for x in xs))), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    spec = ", ".join(f"{n.strip()}: T" for n in names.split(","))
    return op(op_type, inputs=spec, outputs=f"{out}: T", types={"T": types},
              shape=broadcast if spec.count(":") == 2 else broadcast_all, **traits)(kernel)


def _zero_where(cond: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.where(cond, np.zeros((), value.dtype), value)


# -- NaN-safe products and quotients ---------------------------------------------------------------------
Xlogy = _nary("Xlogy", lambda x, y: _zero_where(x == 0, x * np.log(y)), FLOAT_COMPLEX)
Xdivy = _nary("Xdivy", lambda x, y: _zero_where(x == 0, x / y), FLOAT_COMPLEX)
Xlog1py = _nary("Xlog1py", lambda x, y: _zero_where(x == 0, x * np.log1p(y)), FLOAT_COMPLEX)
MulNoNan = _nary("MulNoNan", lambda x, y: _zero_where(y == 0, x * y), FLOAT_COMPLEX)
DivNoNan = _nary("DivNoNan", lambda x, y: _zero_where(y == 0, x / y), FLOAT_COMPLEX)


def _nonzero(x: Tensor) -> Tensor:
    return cast(NotEqual(x, 0), x.dtype.base_dtype)


@Xlogy.gradient
def _xlogy_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return unbroadcast_pair(Xlogy(_nonzero(x), y) * grad, Xdivy(x, y) * grad, x, y)


@Xlog1py.gradient
def _xlog1py_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return unbroadcast_pair(Xlog1py(_nonzero(x), y) * grad, Xdivy(x, y + 1) * grad, x, y)


@Xdivy.gradient
def _xdivy_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return unbroadcast_pair(Xdivy(_nonzero(x), y) * grad, Xdivy(-x, Square(y)) * grad, x, y)


@MulNoNan.gradient
def _mul_no_nan_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return unbroadcast_pair(MulNoNan(grad, y), MulNoNan(x, grad), x, y)


@DivNoNan.gradient
def _div_no_nan_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    cx, cy = conj(x), conj(y)
    return unbroadcast_pair(DivNoNan(grad, cy), grad * DivNoNan(DivNoNan(-cx, cy), cy), x, y)


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.div_no_nan` (`af.math.divide_no_nan`): x / y, and 0 where y is 0; integers are cast to float
    first as `truediv` does (op `DivNoNan`)."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        if not isinstance(x, Tensor) and isinstance(y, Tensor):
            x = convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
        else:
            x = convert_to_tensor(x, name="x")
            y = convert_to_tensor(y, dtype_hint=x.dtype.base_dtype, name="y")
        x, y = truediv_operands(x, y, "tf.math.divide_no_nan")
        return DivNoNan(x, y, name=scope)


divide_no_nan = div_no_nan


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.math.multiply_no_nan`: x * y, and 0 where y is 0 even if x is NaN or infinite (op `MulNoNan`)."""
    with name_scope(name, "multiply_no_nan", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        return MulNoNan(x, y, name=scope)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """`af.math.reciprocal_no_nan`: 1 / x, and 0 where x is 0 (DivNoNan of a constant `one`)."""
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        from asyncflow.ops.registry import constant

        one = constant(1, dtype=x.dtype.base_dtype, name="one")
        return DivNoNan(one, x, name=scope)


def _scoped_binary(opdef: Any, scope_name: str) -> Callable[..., Tensor]:
    def api(x: Any, y: Any, name: str | None = None) -> Tensor:
        with name_scope(name, scope_name, [x]):
            return opdef(x, y)

    api.__name__ = api.__qualname__ = scope_name
    api.__doc__ = f"`af.math.{scope_name}(x, y)`: 0 where x is 0, whatever y (op `{opdef.type}`)."
    return api


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`af.math.xlogy(x, y)`: x * log(y), and 0 where x is 0 (op `Xlogy`, TF's generated wrapper)."""
    return Xlogy(x, y, name=name)


xdivy = _scoped_binary(Xdivy, "xdivy")
xlog1py = _scoped_binary(Xlog1py, "xlog1py")


# -- special functions of one argument ---------------------------------------------------------------------
Erfinv = _unary("Erfinv", sp.erfinv, HALF_FLOAT, upcast=True)
Ndtri = _unary("Ndtri", sp.ndtri, HALF_FLOAT, upcast=True)
BesselI0 = _unary("BesselI0", sp.i0, HALF_FLOAT, upcast=True)
BesselI0e = _unary("BesselI0e", sp.i0e, HALF_FLOAT, upcast=True)
BesselI1 = _unary("BesselI1", sp.i1, HALF_FLOAT, upcast=True)
BesselI1e = _unary("BesselI1e", sp.i1e, HALF_FLOAT, upcast=True)


@Erfinv.gradient
def _erfinv_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * (np.sqrt(np.pi) / 2) * Exp(Square(op.outputs[0]))


@Ndtri.gradient
def _ndtri_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * np.sqrt(2 * np.pi) * Exp(Square(op.outputs[0]) / 2.0)


@BesselI0.gradient
def _bessel_i0_grad(op: Any, grad: Tensor) -> Tensor:
    return grad * BesselI1(op.inputs[0])


@BesselI0e.gradient
def _bessel_i0e_grad(op: Any, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    return grad * (BesselI1e(x) - Sign(x) * y)


def _at_zero(x: Tensor, value: float, elsewhere: Tensor) -> Tensor:
    """`value` where x is 0 (the limit TF imputes where its formula divides by x), else `elsewhere`."""
    return mr.where_v2(Equal(x, 0), cast(value, x.dtype.base_dtype), elsewhere)


@BesselI1.gradient
def _bessel_i1_grad(op: Any, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    return grad * _at_zero(x, 1.0, BesselI0(x) - y / x)


@BesselI1e.gradient
def _bessel_i1e_grad(op: Any, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    return grad * _at_zero(x, 0.5, BesselI0e(x) - y * (Sign(x) + Reciprocal(x)))


def _scoped_unary(opdef: Any, scope_name: str) -> Callable[..., Tensor]:
    def api(x: Any, name: str | None = None) -> Tensor:
        with name_scope(name, scope_name, [x]):
            return opdef(x)

    api.__name__ = api.__qualname__ = scope_name
    api.__doc__ = f"`af.math.{scope_name}(x)`: elementwise (op `{opdef.type}` under scope `{scope_name}`)."
    return api


erfinv = _scoped_unary(Erfinv, "erfinv")
ndtri = _scoped_unary(Ndtri, "ndtri")
bessel_i0 = _scoped_unary(BesselI0, "bessel_i0")
bessel_i0e = _scoped_unary(BesselI0e, "bessel_i0e")
bessel_i1 = _scoped_unary(BesselI1, "bessel_i1")
bessel_i1e = _scoped_unary(BesselI1e, "bessel_i1e")


def erfcinv(x: Any, name: str | None = None) -> Tensor:
    """`af.math.erfcinv`: the inverse of erfc, -ndtri(x / 2) / sqrt(2) as TF."""
    with name_scope(name, "erfcinv", [x]):
        x = convert_to_tensor(x, name="start")
        return -ndtri(0.5 * x) * np.sqrt(0.5)


# -- incomplete gamma and beta functions, Hurwitz zeta ---------------------------------------------------------
Igamma = _nary("Igamma", sp.gammainc, HALF_FLOAT, "a, x")
Igammac = _nary("Igammac", sp.gammaincc, HALF_FLOAT, "a, x")
Betainc = _nary("Betainc", sp.betainc, F32_64, "a, b, x")
Zeta = _nary("Zeta", sp.zeta, F32_64, "x, q")


def _igamma_grad_a(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d/da P(a, x): scipy has no closed form, so a Richardson-extrapolated central difference in float64
    (error about 1e-10, far below float32's resolution)."""
    a, x = np.asarray(a, np.float64), np.asarray(x, np.float64)
    h = 1e-3 * np.maximum(a, 1.0)
    h = np.minimum(h, a / 4)  # stay inside a > 0

    def central(step: np.ndarray) -> np.ndarray:
        return (sp.gammainc(a + step, x) - sp.gammainc(a - step, x)) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3


IgammaGradA = _nary("IgammaGradA", _igamma_grad_a, F32_64, "a, x", differentiable=False)


@Igamma.gradient
def _igamma_grad(op: Any, grad: Tensor) -> list[Tensor]:
    a, x = op.inputs
    # log space, since Gamma(a) alone overflows long before the quotient does
    partial_x = Exp(-x + (a - 1) * Log(x) - Lgamma(a))
    return unbroadcast_pair(IgammaGradA(a, x) * grad, partial_x * grad, a, x)


@Igammac.gradient
def _igammac_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return [-g for g in _igamma_grad(op, grad)]


@Betainc.gradient
def _betainc_grad(op: Any, grad: Tensor) -> list[Any]:
    """d/dx only (TF gives None for a and b): x^(a-1) (1-x)^(b-1) / B(a, b), in log space."""
    a, b, x = op.inputs
    log_beta = Lgamma(a) + Lgamma(b) - Lgamma(a + b)
    partial_x = Exp(Xlog1py(b - 1, -x) + Xlogy(a - 1, x) - log_beta)
    return [None, None, unbroadcast(partial_x * grad, x)]


@Zeta.gradient
def _zeta_grad(op: Any, grad: Tensor) -> list[Any]:
    """d/dq only (TF gives None for x): -x zeta(x + 1, q)."""
    x, q = op.inputs
    return [None, unbroadcast(-x * Zeta(x + 1, q) * grad, q)]


def igamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.igamma(a, x)`: the regularized lower incomplete gamma function P(a, x) (op `Igamma`)."""
    return Igamma(a, x, name=name)


def igammac(a: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.igammac(a, x)`: the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return Igammac(a, x, name=name)


def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.betainc(a, b, x)`: the regularized incomplete beta function I_x(a, b) (op `Betainc`)."""
    return Betainc(a, b, x, name=name)


def zeta(x: Any, q: Any, name: str | None = None) -> Tensor:
    """`af.zeta(x, q)`: the Hurwitz zeta function, sum over n of (q + n)^-x (op `Zeta`)."""
    return Zeta(x, q, name=name)


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """`af.polygamma(a, x)`: the a-th derivative of digamma (op `Polygamma`, NaN where a is not a non-negative
    integer, differentiable in x only, as TF)."""
    with name_scope(name, "Polygamma", [a, x]) as scope:
        a = convert_to_tensor(a, name="a")
        x = convert_to_tensor(x, name="x", dtype=a.dtype.base_dtype)
        if a.dtype.base_dtype not in F32_64:
            raise TypeError(f"polygamma: `a` and `x` must be float32 or float64, got {a.dtype.name}")
        return Polygamma(a, x, name=scope)


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """`af.lbeta(x)`: log|B(x)| over the last axis, sum(lgamma(x)) - lgamma(sum(x)), as TF."""
    with name_scope(name, "lbeta", [x]):
        x = convert_to_tensor(x, name="x")
        log_prod_gamma_x = mr.reduce_sum(Lgamma(x), axis=[-1])
        return log_prod_gamma_x - Lgamma(mr.reduce_sum(x, axis=[-1]))


def polyval(coeffs: list, x: Any, name: str | None = None) -> Tensor:
    """`af.math.polyval(coeffs, x)`: the polynomial with coefficients highest degree first, by Horner's rule."""
    if not isinstance(coeffs, list):
        raise ValueError(f"Argument coeffs must be list type. Received type {type(coeffs)}.")
    from asyncflow.ops.array import zeros_like

    with name_scope(name, "polyval", coeffs + [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if not coeffs:
            return zeros_like(x, name=scope)
        coeffs = [convert_to_tensor(c, name=f"coeff_{i}") for i, c in enumerate(coeffs)]
        p = coeffs[0]
        for c in coeffs[1:]:
            p = c + p * x
        return p


# -- complex numbers -------------------------------------------------------------------------------------
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


@op("Complex", inputs="real: T, imag: T", outputs="out: Tout", types={"T": F32_64, "Tout": COMPLEX},
    type_defaults={"T": dtypes.float32, "Tout": dtypes.complex64}, shape=broadcast)
def Complex(k, re, im):
    return as_out(np.asarray(re) + 1j * np.asarray(im), k.out_dtypes[0])


def _part(op_type: str, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    def kernel(k, x):
        return as_out(fn(np.asarray(x)), k.out_dtypes[0])

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="input: T", outputs="output: Tout", types={"T": COMPLEX, "Tout": F32_64},
              type_defaults={"T": dtypes.complex64, "Tout": dtypes.float32}, shape=same_as_input)(kernel)


Real = _part("Real", np.real)
Imag = _part("Imag", np.imag)
Angle = _part("Angle", np.angle)


@Complex.gradient
def _complex_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    real_dtype = x.dtype.base_dtype
    return unbroadcast_pair(Real(grad, Tout=real_dtype), Imag(grad, Tout=real_dtype), x, y)


def _as_complex(op: Any, re: Any, im: Any) -> Tensor:
    real_dtype = op.outputs[0].dtype.base_dtype
    return Complex(re, im, Tout=_COMPLEX_OF[real_dtype])


@Real.gradient
def _real_grad(op: Any, grad: Tensor) -> Tensor:
    return _as_complex(op, grad, cast(0, grad.dtype.base_dtype))


@Imag.gradient
def _imag_grad(op: Any, grad: Tensor) -> Tensor:
    return _as_complex(op, cast(0, grad.dtype.base_dtype), grad)


@Angle.gradient
def _angle_grad(op: Any, grad: Tensor) -> Tensor:
    """-grad / (Im(x) + i Re(x)), as TF."""
    x = op.inputs[0]
    real_dtype = op.outputs[0].dtype.base_dtype
    z = Reciprocal(_as_complex(op, Imag(x, Tout=real_dtype), Real(x, Tout=real_dtype)))
    return -_as_complex(op, grad, cast(0, real_dtype)) * z


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`af.complex(real, imag)`: complex64 from two float32 tensors, complex128 from two float64."""
    real = convert_to_tensor(real, name="real")
    imag = convert_to_tensor(imag, name="imag")
    with name_scope(name, "Complex", [real, imag]) as scope:
        pair = (real.dtype.base_dtype, imag.dtype.base_dtype)
        if pair[0] != pair[1] or pair[0] not in _COMPLEX_OF:
            raise TypeError(f"The `real` and `imag` components have incorrect types: {pair[0].name} {pair[1].name}. "
                            f"They must be consistent, and one of [float32, float64]")
        return Complex(real, imag, Tout=_COMPLEX_OF[pair[0]], name=scope)


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 - TF's argument name
    """`af.real`: the real part of a complex tensor (op `Real`); a real tensor comes back itself."""
    with name_scope(name, "Real", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return Real(x, Tout=x.dtype.real_dtype, name=scope)
        if x.dtype.is_numeric:
            return x
        raise TypeError(f"input must be a numeric tensor, but got tensor with dtype {x.dtype.name}")


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.imag`: the imaginary part of a complex tensor (op `Imag`); zeros for a real tensor."""
    from asyncflow.ops.array import zeros_like

    with name_scope(name, "Imag", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return Imag(x, Tout=x.dtype.real_dtype, name=scope)
        return zeros_like(x)


def angle(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.angle`: the argument of a complex tensor (op `Angle`); pi where a real tensor is negative, else 0."""
    from asyncflow.ops.array import ones_like, zeros_like

    with name_scope(name, "Angle", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return Angle(x, Tout=x.dtype.real_dtype, name=scope)
        return mr.where(Less(x, 0), np.pi * ones_like(x), zeros_like(x))


# -- reductions and scans ------------------------------------------------------------------------------
def _euclidean(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    x = _upcast(x)[0]
    squares = (x * np.conj(x)) if x.dtype.kind == "c" else x.astype(np.float64) * x if x.dtype.kind in "iu" else x * x
    return np.sqrt(np.sum(squares, axis=axes, keepdims=keep))


EuclideanNorm = mr._reduction("EuclideanNorm", _euclidean, NUMERIC)


@EuclideanNorm.gradient
def _euclidean_norm_grad(op: Any, grad: Tensor) -> list[Any]:
    output, grad = mr._keep_dims(op, op.outputs[0], grad)
    return [op.inputs[0] / (output / grad), None]


_reduce_euclidean_norm = mr._reduction_api(EuclideanNorm, "reduce_euclidean_norm")


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """`af.math.reduce_euclidean_norm`: sqrt(sum(|x|^2)) over `axis` (op `EuclideanNorm`)."""
    return _reduce_euclidean_norm(input_tensor, axis, keepdims=bool(keepdims), name=name)


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """`af.math.reduce_variance`: mean of the squared deviations from the mean (|.|^2 for complex, whose
    variance is real), as TF's composite; integer input is a TypeError."""
    with name_scope(name or "reduce_variance"):
        x = convert_to_tensor(input_tensor)
        means = mr.reduce_mean(x, axis=axis, keepdims=True)
        if means.dtype.is_integer:
            raise TypeError(f"Input must be either real or complex. Received integer type {means.dtype.name}.")
        diff = x - means
        if diff.dtype.is_complex:
            squared = Real(Mul(Conj(diff), diff), Tout=diff.dtype.real_dtype)
        else:
            squared = Square(diff)
        return mr.reduce_mean(squared, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """`af.math.reduce_std`: the square root of `reduce_variance`."""
    with name_scope(name or "reduce_std"):
        x = convert_to_tensor(input_tensor)
        return Sqrt(reduce_variance(x, axis=axis, keepdims=keepdims))


def _cumulative_logsumexp_kernel(k, x, axis):
    x, ax = np.asarray(x), int(axis)
    if not -x.ndim <= ax < x.ndim:
        raise errors.InvalidArgumentError(None, k.op, f"CumulativeLogsumexp '{k.name}': axis {ax} is out of range "
                                                      f"for input of rank {x.ndim}")
    work = _upcast(x)[0]
    if k.reverse:
        work = np.flip(work, ax)
    with np.errstate(all="ignore"):
        out = np.logaddexp.accumulate(work, axis=ax) if work.shape[ax] else work
    if k.exclusive and work.shape[ax]:
        pad = np.full_like(np.take(out, [0], axis=ax), -np.inf)  # log(0): the empty prefix
        out = np.concatenate([pad, np.delete(out, -1, axis=ax)], axis=ax)
    if k.reverse:
        out = np.flip(out, ax)
    return as_out(np.ascontiguousarray(out), k.out_dtypes[0])


CumulativeLogsumexp = op("CumulativeLogsumexp", inputs="x: T, axis: Tidx", outputs="out: T",
                         types={"T": HALF_FLOAT, "Tidx": INDEX}, type_defaults={"Tidx": dtypes.int32},
                         attrs={"exclusive": False, "reverse": False},
                         shape=same_as_input)(_cumulative_logsumexp_kernel)


@CumulativeLogsumexp.gradient
def _cumulative_logsumexp_grad(op: Any, grad: Tensor) -> list[Any]:
    """TF's rule: the incoming gradient split by sign so each part can go through logs."""
    x, axis = op.inputs
    out = op.outputs[0]
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    lowest = cast(grad.dtype.base_dtype.min, grad.dtype.base_dtype)
    log_pos = mr.where_v2(Greater(grad, 0), Log(grad), lowest)
    log_neg = mr.where_v2(Less(grad, 0), Log(-grad), lowest)

    def back(log_part: Tensor) -> Tensor:
        return Exp(CumulativeLogsumexp(log_part - out, axis, exclusive=exclusive, reverse=not reverse) + x)

    return [back(log_pos) - back(log_neg), None]


def cumulative_logsumexp(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Tensor:
    """`af.math.cumulative_logsumexp`: log(cumsum(exp(x))) along `axis`, with cumsum's `exclusive`/`reverse`."""
    with name_scope(name, "CumulativeLogsumexp", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return CumulativeLogsumexp(x, axis, exclusive=exclusive, reverse=reverse, name=scope)


NextAfter = _nary("NextAfter", np.nextafter, (dtypes.float64, dtypes.float32), "x1, x2", out="output")


@NextAfter.gradient
def _next_after_grad(op: Any, grad: Tensor) -> list[Tensor]:
    from asyncflow.ops.array import zeros_like

    x1, x2 = op.inputs
    return unbroadcast_pair(grad, zeros_like(grad), x1, x2)


def nextafter(x1: Any, x2: Any, name: str | None = None) -> Tensor:
    """`af.math.nextafter(x1, x2)`: the next representable value after x1 toward x2 (op `NextAfter`)."""
    return NextAfter(x1, x2, name=name)
