"""Math ops against numpy references (rows: see tests/ops/harness.py), plus their errors and TF1 naming.

References are numpy (or Python's own `//` and `%` for the integer floor rules); where TF's rule
differs from numpy's default (float FloorDiv is floor(x / y), integer reduce_mean truncates
toward zero, argmax skips NaN) the reference spells TF's rule out.
"""

import operator

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops.math import Div, Equal, NotEqual
from asyncflow.ops.math_unary import SigmoidGrad, TanhGrad
from tests.ops.harness import Case, case_params, check_case

X = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], dtype=np.float32)
Y = np.array([2.0, 0.5, -3.0], dtype=np.float32)

RNG = np.random.default_rng(7)
A23 = RNG.standard_normal((2, 3)).astype(np.float32)
A34 = RNG.standard_normal((3, 4)).astype(np.float32)
A234 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
A45 = RNG.standard_normal((4, 5)).astype(np.float32)
POS = np.array([[0.5, 1.0, 2.25], [4.0, 9.0, 100.0]], dtype=np.float32)
SPECIAL = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7, np.nan, np.inf, -np.inf], dtype=np.float32)

# Integer operands with every sign combination, numerators as a row and divisors as a column.
NUM = np.array([[7, -7, 5, -5, 0, 1, -1, 6]], dtype=np.int32)
DEN = np.array([[3], [-3], [2], [-2], [1]], dtype=np.int32)
FNUM = np.array([[5.5, -5.5, 7.25, -0.75]])
FDEN = np.array([[2.0], [-2.0], [0.5]])
BASES = np.array([2, 3, -2, 0, 7], np.int32)
EXPONENTS = np.array([31, 2, 3, 0, 12], np.int32)


def quiet(fn):
    """A reference computed without numpy's warnings (TF gives inf/nan silently)."""
    def run():
        with np.errstate(all="ignore"):
            return fn()
    return run


def python_int(fn, x, y, dtype):
    """Applies Python's integer operator elementwise (with broadcasting): the reference for // and %."""
    xb, yb = np.broadcast_arrays(x, y)
    values = [fn(int(a), int(b)) for a, b in zip(xb.ravel(), yb.ravel())]
    return np.array(values, dtype=dtype).reshape(xb.shape)


def python_float(fn, x, y):
    xb, yb = np.broadcast_arrays(x, y)
    values = [fn(float(a), float(b)) for a, b in zip(xb.ravel(), yb.ravel())]
    return np.array(values, x.dtype).reshape(xb.shape)


def feed(name, value):
    return lambda g: {g.get_tensor_by_name(f"{name}:0"): value}


def c_trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_mean(x, axis):
    """TF's integer mean: the exact sum divided with truncation toward zero."""
    s = np.sum(x.astype(object), axis=axis)
    n = x.size // np.size(s) if np.ndim(s) else x.size
    return np.vectorize(lambda v: c_trunc_div(int(v), n), otypes=[x.dtype])(s).astype(x.dtype)


def sigmoid_ref(x):
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


CASES = [
    Case("add_broadcast", ("AddV2",), lambda af: af.add(X, Y), lambda: X + Y, static_shape=[2, 3]),
    Case("add_strings_concatenate", ("Add",), lambda af: [af.constant([b"ab", b"c"]) + b"x", af.add(b"p", [b"q", b""])],
         [np.array([b"abx", b"cx"], dtype=object), np.array([b"pq", b"p"], dtype=object)]),
    Case("sub_int", ("Sub",), lambda af: af.subtract([1, 2], 3), np.array([-2, -1], np.int32)),
    Case("mul_f64", ("Mul",), lambda af: af.multiply(X.astype(np.float64), 2.0),
         lambda: X.astype(np.float64) * 2.0),

    # -- cast --------------------------------------------------------------------------------------
    Case("cast_float_to_int_truncates", ("Cast",), lambda af: af.cast(SPECIAL[:8], af.int32),
         lambda: np.trunc(SPECIAL[:8]).astype(np.int32)),
    Case("cast_float_to_int64_and_uint8", ("Cast",),
         lambda af: [af.cast(SPECIAL[:8], af.int64), af.cast(np.abs(SPECIAL[:8]), af.uint8)],
         lambda: [np.trunc(SPECIAL[:8]).astype(np.int64), np.trunc(np.abs(SPECIAL[:8])).astype(np.uint8)]),
    Case("cast_bool_numeric", ("Cast",),
         lambda af: [af.cast([0, 3, -1], af.bool), af.cast([True, False], af.float32),
                     af.cast(SPECIAL, af.bool)],
         lambda: [np.array([0, 3, -1]) != 0, np.array([1.0, 0.0], np.float32), SPECIAL != 0]),
    Case("cast_complex_to_real_keeps_real_part", ("Cast",),
         lambda af: af.cast(np.array([1 + 2j, -3.5 - 1j], np.complex64), af.float64),
         lambda: np.array([1.0, -3.5])),
    Case("cast_int_wraps_and_float16_overflows", ("Cast",),
         lambda af: [af.cast(np.array([300, -200, 127], np.int32), af.int8),
                     af.cast(np.array([1e6, 1.0001, -70000.0]), af.float16)],
         quiet(lambda: [np.array([300, -200, 127], np.int32).astype(np.int8),
                        np.array([1e6, 1.0001, -70000.0]).astype(np.float16)])),
    Case("cast_placeholder_partial_shape", ("Cast",),
         lambda af: af.cast(af.placeholder(af.float32, [None, 3], name="p"), af.int64),
         lambda: np.trunc(A23).astype(np.int64), static_shape=[None, 3], feeds=feed("p", A23)),

    # -- binary arithmetic ---------------------------------------------------------------------------
    Case("add_int64_wraps", ("AddV2",),
         lambda af: af.add(np.array([2**63 - 1, 5], np.int64), np.array(1, np.int64)),
         quiet(lambda: np.array([2**63 - 1, 5], np.int64) + np.array([1, 1], np.int64))),
    Case("add_float16_broadcast", ("AddV2",),
         lambda af: af.add(X.astype(np.float16), Y.astype(np.float16)[None, :]),
         lambda: X.astype(np.float16) + Y.astype(np.float16), rtol=1e-3),
    Case("sub_placeholder_broadcast", ("Sub",),
         lambda af: af.subtract(af.placeholder(af.float32, [None, 3], name="p"), Y),
         lambda: A23 - Y, static_shape=[None, 3], feeds=feed("p", A23)),
    Case("mul_complex", ("Mul",),
         lambda af: af.multiply(np.array([1 + 2j, 3j]), np.array([2 - 1j, 1 + 1j])),
         lambda: np.array([1 + 2j, 3j]) * np.array([2 - 1j, 1 + 1j])),
    Case("realdiv_float_by_zero_is_inf", ("RealDiv",),
         lambda af: af.realdiv(SPECIAL[1:5], np.array([0.0, 0.0, 0.0, 4.0], np.float32)),
         quiet(lambda: SPECIAL[1:5] / np.array([0.0, 0.0, 0.0, 4.0], np.float32))),
    Case("truediv_int32_casts_to_float64", ("Cast", "RealDiv"),
         lambda af: af.truediv(NUM, DEN), lambda: NUM.astype(np.float64) / DEN.astype(np.float64)),
    Case("truediv_int16_casts_to_float32", ("Cast", "RealDiv"),
         lambda af: af.truediv(NUM.astype(np.int16), DEN.astype(np.int16)),
         lambda: NUM.astype(np.float32) / DEN.astype(np.float32)),
    Case("divide_float64", ("RealDiv",), lambda af: af.divide(X.astype(np.float64), Y.astype(np.float64)),
         lambda: X.astype(np.float64) / Y.astype(np.float64)),
    Case("div_tf1_floors_ints_and_divides_floats", ("FloorDiv", "RealDiv"),
         lambda af: [af.div(NUM, DEN), af.div(X, Y)],
         lambda: [python_int(operator.floordiv, NUM, DEN, np.int32), X / Y]),
    Case("div_op_truncates_ints", ("Div",),
         lambda af: [Div(NUM, DEN), Div(NUM.astype(np.uint8)[:, [0, 2, 5]], np.uint8(2)), Div(X, Y)],
         lambda: [python_int(c_trunc_div, NUM, DEN, np.int32),
                  python_int(c_trunc_div, NUM.astype(np.uint8)[:, [0, 2, 5]], 2, np.uint8), X / Y]),
    Case("floordiv_int32_negative_like_python", ("FloorDiv",), lambda af: af.floordiv(NUM, DEN),
         lambda: python_int(operator.floordiv, NUM, DEN, np.int32), static_shape=[5, 8]),
    Case("floordiv_int64_negative_like_python", ("FloorDiv",),
         lambda af: af.floordiv(NUM.astype(np.int64) * 1000003, DEN.astype(np.int64)),
         lambda: python_int(operator.floordiv, NUM.astype(np.int64) * 1000003, DEN, np.int64)),
    Case("floordiv_float_is_floor_of_quotient", ("FloorDiv",),
         lambda af: af.floordiv(np.array([1.0, -1.0, 7.5, -7.5, 1.0], np.float32),
                                np.array([0.1, 0.1, 2.0, 2.0, 0.0], np.float32)),
         quiet(lambda: np.floor(np.array([1.0, -1.0, 7.5, -7.5, 1.0], np.float32)
                                / np.array([0.1, 0.1, 2.0, 2.0, 0.0], np.float32)))),
    Case("floormod_int32_sign_of_divisor", ("FloorMod",), lambda af: af.floormod(NUM, DEN),
         lambda: python_int(operator.mod, NUM, DEN, np.int32)),
    Case("mod_int64_sign_of_divisor", ("FloorMod",),
         lambda af: af.mod(NUM.astype(np.int64), DEN.astype(np.int64)),
         lambda: python_int(operator.mod, NUM, DEN, np.int64)),
    Case("floormod_float_like_python", ("FloorMod",),
         lambda af: af.floormod(FNUM, FDEN), lambda: python_float(operator.mod, FNUM, FDEN)),
    Case("pow_int32_wraps", ("Pow",), lambda af: af.pow(BASES, EXPONENTS),
         quiet(lambda: np.power(BASES, EXPONENTS))),
    Case("pow_float_broadcast", ("Pow",), lambda af: af.pow(POS, np.array([0.5, -1.0, 2.0], np.float32)),
         lambda: POS ** np.array([0.5, -1.0, 2.0], np.float32)),
    Case("pow_float16", ("Pow",), lambda af: af.pow(POS.astype(np.float16), np.float16(1.5)),
         lambda: (POS.astype(np.float64) ** 1.5).astype(np.float16), rtol=2e-3),
    Case("maximum_minimum_propagate_nan", ("Maximum", "Minimum"),
         lambda af: [af.maximum(SPECIAL, np.float32(0.5)), af.minimum(SPECIAL, np.float32(0.5))],
         lambda: [np.maximum(SPECIAL, np.float32(0.5)), np.minimum(SPECIAL, np.float32(0.5))]),
    Case("maximum_minimum_int_broadcast", ("Maximum", "Minimum"),
         lambda af: [af.maximum(NUM, DEN), af.minimum(NUM.astype(np.uint8), np.uint8(3))],
         lambda: [np.maximum(NUM, DEN), np.minimum(NUM.astype(np.uint8), np.uint8(3))]),
    Case("squared_difference_float_and_complex", ("SquaredDifference",),
         lambda af: [af.squared_difference(X, Y), af.squared_difference(np.array([1 + 1j]), np.array([0j]))],
         lambda: [(X - Y) ** 2, np.array([2 + 0j])]),
    Case("scalar_mul", ("Mul",), lambda af: af.scalar_mul(3, NUM), lambda: 3 * NUM),

    # -- comparisons and logic -----------------------------------------------------------------------
    Case("compare_broadcast", ("Less", "LessEqual", "Greater", "GreaterEqual"),
         lambda af: [af.less(NUM, DEN), af.less_equal(NUM, DEN), af.greater(X, Y), af.greater_equal(X, Y)],
         lambda: [NUM < DEN, NUM <= DEN, X > Y, X >= Y]),
    Case("compare_nan_float64", ("Less", "GreaterEqual"),
         lambda af: [af.less(SPECIAL.astype(np.float64), 0.5),
                     af.greater_equal(SPECIAL.astype(np.float64), 0.5)],
         lambda: [SPECIAL.astype(np.float64) < 0.5, SPECIAL.astype(np.float64) >= 0.5]),
    Case("equal_not_equal_numeric_string_bool", ("Equal", "NotEqual"),
         lambda af: [af.equal(NUM, DEN), af.not_equal(X, Y), af.equal(["a", "b"], "a"),
                     af.not_equal([True, False], True)],
         lambda: [NUM == DEN, X != Y, np.array([True, False]), np.array([False, True])]),
    Case("equal_partial_shapes", ("Equal",),
         lambda af: af.equal(af.placeholder(af.float32, [None, 3], name="p"), np.ones([2, 1], np.float32)),
         lambda: A23 == np.ones([2, 1], np.float32), static_shape=[2, 3], feeds=feed("p", A23)),
    Case("logical_ops_broadcast", ("LogicalAnd", "LogicalOr", "LogicalNot"),
         lambda af: [af.logical_and([[True], [False]], [True, False]), af.logical_or([True, False], False),
                     af.logical_not([True, False]), af.logical_xor([True, True, False, False],
                                                                   [True, False, True, False])],
         lambda: [np.logical_and([[True], [False]], [True, False]), np.array([True, False]),
                  np.array([False, True]),
                  np.logical_xor([True, True, False, False], [True, False, True, False])]),

    # -- unary ---------------------------------------------------------------------------------------
    Case("neg_int8_and_float", ("Neg",),
         lambda af: [af.negative(np.array([-128, -1, 5], np.int8)), af.negative(X)],
         quiet(lambda: [np.negative(np.array([-128, -1, 5], np.int8)), -X])),
    Case("abs_int_float16", ("Abs",),
         lambda af: [af.abs(NUM), af.abs(X.astype(np.float16))],
         lambda: [np.abs(NUM), np.abs(X.astype(np.float16))]),
    Case("abs_complex_is_complex_abs", ("ComplexAbs",),
         lambda af: [af.abs(np.array([3 + 4j, -1j], np.complex64)), af.abs(np.array([1 + 1j]))],
         lambda: [np.array([5.0, 1.0], np.float32), np.array([np.sqrt(2.0)])]),
    Case("sign_float_int_complex", ("Sign",),
         lambda af: [af.sign(SPECIAL), af.sign(NUM.astype(np.int64)), af.sign(np.array([3 + 4j, 0j]))],
         lambda: [np.sign(SPECIAL), np.sign(NUM.astype(np.int64)), np.array([0.6 + 0.8j, 0j])]),
    Case("square_int_uint8_complex", ("Square",),
         lambda af: [af.square(np.array([70000, -3], np.int32)), af.square(np.array([20, 3], np.uint8)),
                     af.square(np.array([1 + 2j]))],
         quiet(lambda: [np.square(np.array([70000, -3], np.int32)), np.square(np.array([20, 3], np.uint8)),
                        np.array([1 + 2j]) ** 2])),
    Case("sqrt_rsqrt_reciprocal", ("Sqrt", "Rsqrt", "Reciprocal"),
         lambda af: [af.sqrt(POS), af.rsqrt(POS.astype(np.float64)), af.reciprocal(POS),
                     af.sqrt(np.array([-4 + 0j], np.complex64)), af.sqrt(np.array([-1.0, 0.0], np.float32))],
         quiet(lambda: [np.sqrt(POS), 1 / np.sqrt(POS.astype(np.float64)), 1 / POS,
                        np.array([2j], np.complex64), np.sqrt(np.array([-1.0, 0.0], np.float32))])),
    Case("sqrt_float16", ("Sqrt",), lambda af: af.sqrt(POS.astype(np.float16)),
         lambda: np.sqrt(POS.astype(np.float64)).astype(np.float16), rtol=1e-3),
    Case("exp_log_log1p", ("Exp", "Log", "Log1p"),
         lambda af: [af.exp(X), af.log(np.array([0.0, 1.0, np.e, -1.0], np.float32)),
                     af.log1p(POS.astype(np.float64)), af.exp(np.array([1j]))],
         quiet(lambda: [np.exp(X), np.log(np.array([0.0, 1.0, np.e, -1.0], np.float32)),
                        np.log1p(POS.astype(np.float64)), np.exp(np.array([1j]))])),
    Case("sin_cos_tanh", ("Sin", "Cos", "Tanh"),
         lambda af: [af.sin(X), af.cos(X.astype(np.float64)), af.tanh(X), af.tanh(X.astype(np.float16))],
         lambda: [np.sin(X), np.cos(X.astype(np.float64)), np.tanh(X),
                  np.tanh(X.astype(np.float16).astype(np.float64)).astype(np.float16)], rtol=1e-3),
    Case("sigmoid_saturates_without_overflow", ("Sigmoid",),
         lambda af: [af.sigmoid(np.array([-1000.0, -20.0, 0.0, 0.3, 20.0, 1000.0], np.float32)),
                     af.sigmoid(np.array([-30.0, 0.3, 30.0], np.float16))],
         quiet(lambda: [sigmoid_ref(np.array([-1000.0, -20.0, 0.0, 0.3, 20.0, 1000.0], np.float32)),
                        sigmoid_ref(np.array([-30.0, 0.3, 30.0], np.float16))]), rtol=1e-3),
    # TF's fused gradients, inputs (y, dy): dy * (1 - y^2) and dy * y * (1 - y)
    Case("tanh_grad_sigmoid_grad", ("TanhGrad", "SigmoidGrad"),
         lambda af: [TanhGrad(np.tanh(X), X[::-1]), SigmoidGrad(sigmoid_ref(X), X[::-1]),
                     TanhGrad(np.float64(0.5), np.float64(2.0)),
                     SigmoidGrad(np.float16([0.25, 0.75]), np.float16([2.0, -4.0])),
                     TanhGrad(np.array([0.5 + 0.5j], np.complex64), np.array([1 - 2j], np.complex64))],
         lambda: [X[::-1] * (1 - np.tanh(X) ** 2), X[::-1] * sigmoid_ref(X) * (1 - sigmoid_ref(X)),
                  np.float64(1.5), np.float16([0.375, -0.75]),
                  np.array([(1 - 2j) * (1 - (0.5 + 0.5j) ** 2)], np.complex64)], rtol=1e-5),
    Case("floor_ceil_round_half_to_even", ("Floor", "Ceil", "Round"),
         lambda af: [af.floor(SPECIAL), af.ceil(SPECIAL.astype(np.float64)), af.round(SPECIAL),
                     af.round(SPECIAL.astype(np.float16))],
         lambda: [np.floor(SPECIAL), np.ceil(SPECIAL.astype(np.float64)), np.round(SPECIAL),
                  np.round(SPECIAL.astype(np.float16))]),
    Case("is_nan_is_inf_is_finite", ("IsNan", "IsInf", "IsFinite"),
         lambda af: [af.is_nan(SPECIAL), af.is_inf(SPECIAL.astype(np.float16)), af.is_finite(SPECIAL)],
         lambda: [np.isnan(SPECIAL), np.isinf(SPECIAL), np.isfinite(SPECIAL)]),
    Case("conj_complex", ("Conj",), lambda af: af.conj(np.array([1 + 2j, -3j], np.complex64)),
         lambda: np.conj(np.array([1 + 2j, -3j], np.complex64))),

    # -- reductions ----------------------------------------------------------------------------------
    Case("reduce_sum_all_axes", ("Sum",), lambda af: af.reduce_sum(X), lambda: np.sum(X), static_shape=[]),
    Case("reduce_sum_axis_negative_keepdims", ("Sum",),
         lambda af: [af.reduce_sum(X, 1), af.reduce_sum(X, -1, keepdims=True), af.reduce_sum(X, [0, -1]),
                     af.reduce_sum(X, reduction_indices=[0], keep_dims=True), af.reduce_sum(X, [])],
         lambda: [np.sum(X, 1), np.sum(X, -1, keepdims=True), np.sum(X), np.sum(X, 0, keepdims=True), X]),
    Case("reduce_sum_int8_wraps_float16_accumulates", ("Sum",),
         lambda af: [af.reduce_sum(np.array([100, 100], np.int8)),
                     af.reduce_sum(np.ones([4096], np.float16))],
         lambda: [np.array([100, 100], np.int8).sum(dtype=np.int8), np.float16(4096)]),
    Case("reduce_sum_partial_shape", ("Sum",),
         lambda af: af.reduce_sum(af.placeholder(af.float32, [None, 3], name="p"), 1),
         lambda: np.sum(A23, 1), static_shape=[None], feeds=feed("p", A23)),
    Case("reduce_sum_partial_keepdims", ("Sum",),
         lambda af: af.reduce_sum(af.placeholder(af.float32, [None, 3], name="p"), 1, keepdims=True),
         lambda: np.sum(A23, 1, keepdims=True), static_shape=[None, 1], feeds=feed("p", A23)),
    Case("reduce_sum_unknown_rank_is_scalar", ("Sum", "Range", "Rank"),
         lambda af: af.reduce_sum(af.placeholder(af.float64, None, name="p")),
         lambda: np.sum(A34.astype(np.float64)), static_shape=[], feeds=feed("p", A34.astype(np.float64))),
    Case("reduce_mean_float", ("Mean",),
         lambda af: [af.reduce_mean(X), af.reduce_mean(X.astype(np.float64), 0, keepdims=True),
                     af.reduce_mean(np.array([[1 + 1j, 2j]], np.complex64), 1)],
         lambda: [np.mean(X), np.mean(X.astype(np.float64), 0, keepdims=True),
                  np.mean(np.array([[1 + 1j, 2j]], np.complex64), 1)]),
    Case("reduce_mean_int_truncates_without_overflow", ("Mean",),
         lambda af: [af.reduce_mean(NUM * DEN, 1), af.reduce_mean(NUM * DEN, 0),
                     af.reduce_mean(np.array([2**31 - 1, 2**31 - 1, 2**31 - 4], np.int32)),
                     af.reduce_mean(np.array([200, 200, 201], np.uint8)),
                     af.reduce_mean(np.zeros([0], np.int32))],
         lambda: [int_mean(NUM * DEN, 1), int_mean(NUM * DEN, 0),
                  int_mean(np.array([2**31 - 1, 2**31 - 1, 2**31 - 4], np.int32), None),
                  int_mean(np.array([200, 200, 201], np.uint8), None), np.int32(0)]),
    Case("reduce_mean_float16", ("Mean",), lambda af: af.reduce_mean(np.full([4097], 1.5, np.float16)),
         lambda: np.float16(1.5)),
    Case("reduce_max_min_nan_and_keepdims", ("Max", "Min"),
         lambda af: [af.reduce_max(SPECIAL), af.reduce_min(X, -1, keepdims=True), af.reduce_max(NUM * DEN, 0),
                     af.reduce_min(np.array([[1.0, np.nan], [2.0, 3.0]]), 1)],
         lambda: [np.max(SPECIAL), np.min(X, -1, keepdims=True), np.max(NUM * DEN, 0),
                  np.min(np.array([[1.0, np.nan], [2.0, 3.0]]), 1)]),
    Case("reduce_max_min_empty_axis_is_lowest_highest", ("Max", "Min"),
         lambda af: [af.reduce_max(np.zeros([0, 2], np.float32), 0),
                     af.reduce_min(np.zeros([0, 2], np.int32), 0)],
         lambda: [np.full([2], -np.inf, np.float32), np.full([2], np.iinfo(np.int32).max, np.int32)]),
    Case("reduce_prod", ("Prod",),
         lambda af: [af.reduce_prod(POS, 1), af.reduce_prod(NUM[:, :4], -1),
                     af.reduce_prod(np.zeros([0], np.float32))],
         lambda: [np.prod(POS, 1), np.prod(NUM[:, :4], -1, dtype=np.int32), np.float32(1.0)]),
    Case("reduce_any_all", ("Any", "All"),
         lambda af: [af.reduce_any(NUM * DEN > 20, 1), af.reduce_all(NUM * DEN > -50, 0, keepdims=True),
                     af.reduce_all(np.zeros([0], bool)), af.reduce_any(np.zeros([0], bool))],
         lambda: [np.any(NUM * DEN > 20, 1), np.all(NUM * DEN > -50, 0, keepdims=True), np.True_, np.False_]),
    Case("argmax_argmin_axes_and_output_type", ("ArgMax", "ArgMin"),
         lambda af: [af.argmax(A34), af.argmax(A34, 1), af.argmin(A34, -1, output_type=af.int32),
                     af.argmin(NUM * DEN, dimension=0), af.argmax([False, True, True])],
         lambda: [np.argmax(A34, 0), np.argmax(A34, 1), np.argmin(A34, -1).astype(np.int32),
                  np.argmin(NUM * DEN, 0), np.int64(1)]),
    Case("argmax_argmin_skip_nan", ("ArgMax", "ArgMin"),
         lambda af: [af.argmax(np.array([[1.0, np.nan, 2.0], [np.nan, 1.0, 0.5]], np.float32), 1),
                     af.argmin(np.array([[1.0, np.nan, 2.0], [np.nan, 1.0, 0.5]]), 1)],
         lambda: [np.nanargmax(np.array([[1.0, np.nan, 2.0], [np.nan, 1.0, 0.5]]), 1),
                  np.nanargmin(np.array([[1.0, np.nan, 2.0], [np.nan, 1.0, 0.5]]), 1)]),
    Case("argmax_partial_shape", ("ArgMax",),
         lambda af: af.argmax(af.placeholder(af.float32, [None, 3], name="p"), 1),
         lambda: np.argmax(A23, 1), static_shape=[None], feeds=feed("p", A23)),
    Case("add_n_three_inputs", ("AddN",),
         lambda af: [af.add_n([NUM, NUM * 2, af.constant(NUM * 3)]), af.add_n([X, X, X])],
         lambda: [NUM * 6, X + X + X]),
    Case("add_n_merges_partial_shapes", ("AddN",),
         lambda af: af.add_n([af.placeholder(af.float32, [None, 3], name="p"),
                              af.placeholder(af.float32, [2, None], name="q")]),
         lambda: A23 * 2, static_shape=[2, 3],
         feeds=lambda g: {g.get_tensor_by_name("p:0"): A23, g.get_tensor_by_name("q:0"): A23}),

    # -- matmul --------------------------------------------------------------------------------------
    Case("matmul_2d", ("MatMul",), lambda af: af.matmul(A23, A34), lambda: A23 @ A34, static_shape=[2, 4],
         rtol=1e-5),
    Case("matmul_transposes_and_adjoint", ("MatMul",),
         lambda af: [af.matmul(A23.T, A34.T, transpose_a=True, transpose_b=True),
                     af.matmul(A23.T.astype(np.float64), A34.astype(np.float64), adjoint_a=True)],
         lambda: [A23 @ A34, A23.astype(np.float64) @ A34.astype(np.float64)], rtol=1e-5),
    Case("matmul_int32_and_float16", ("MatMul",),
         lambda af: [af.matmul(NUM.T, NUM), af.matmul(A23.astype(np.float16), A34.astype(np.float16))],
         quiet(lambda: [NUM.T @ NUM, (A23.astype(np.float16).astype(np.float32)
                                      @ A34.astype(np.float16).astype(np.float32)).astype(np.float16)]),
         rtol=1e-2, atol=1e-2),
    Case("matmul_complex_adjoint_conjugates", ("MatMul", "Conj"),
         lambda af: af.matmul(np.array([[1 + 1j, 2], [0, 1j]]), np.array([[1 + 2j], [3j]]), adjoint_a=True),
         lambda: np.array([[1 + 1j, 2], [0, 1j]]).conj().T @ np.array([[1 + 2j], [3j]])),
    Case("matmul_batched_broadcast", ("BatchMatMulV2",),
         lambda af: [af.matmul(A234, A45), af.matmul(A234[:, None], np.stack([A45] * 3))],
         lambda: [A234 @ A45, A234[:, None] @ np.stack([A45] * 3)], rtol=1e-5),
    Case("matmul_batched_transposes", ("BatchMatMulV2",),
         lambda af: af.matmul(np.stack([A23.T, 2 * A23.T]), np.stack([A34.T] * 2), transpose_a=True,
                              transpose_b=True),
         lambda: np.stack([A23 @ A34, 2 * A23 @ A34]), static_shape=[2, 2, 4], rtol=1e-5),
    Case("matmul_partial_shape", ("MatMul",),
         lambda af: af.matmul(af.placeholder(af.float32, [None, 3], name="p"), A34),
         lambda: A23 @ A34, static_shape=[None, 4], feeds=feed("p", A23), rtol=1e-5),
    Case("matmul_unknown_rank_is_batched", ("BatchMatMulV2",),
         lambda af: af.matmul(af.placeholder(af.float32, None, name="p"), A34),
         lambda: A23 @ A34, feeds=feed("p", A23), rtol=1e-5),

    # -- select / where ---------------------------------------------------------------------------------
    Case("where_select_same_shape", ("Select",),
         lambda af: af.where(X > 0, X, -X), lambda: np.where(X > 0, X, -X), static_shape=[2, 3]),
    Case("where_select_vector_and_scalar_condition", ("Select",),
         lambda af: [af.where([True, False], X, 2 * X), af.where(False, NUM, -NUM),
                     af.where([True, False], ["a", "b"], ["c", "d"])],
         lambda: [np.stack([X[0], 2 * X[1]]), -NUM, np.array([b"a", b"d"], dtype=object)]),
    Case("where_select_partial_shapes", ("Select",),
         lambda af: af.where(af.placeholder(af.bool, [None], name="c"),
                             af.placeholder(af.float32, [None, 3], name="p"), af.zeros([2, 3])),
         lambda: np.where(np.array([True, False])[:, None], A23, 0).astype(np.float32), static_shape=[2, 3],
         feeds=lambda g: {g.get_tensor_by_name("c:0"): np.array([True, False]),
                          g.get_tensor_by_name("p:0"): A23}),
    Case("where_v2_broadcasts", ("SelectV2",),
         lambda af: af.where_v2(Y > 0, X, 0.0), lambda: np.where(Y > 0, X, np.float32(0)),
         static_shape=[2, 3]),
    Case("where_coordinates", ("Where",),
         lambda af: [af.where(NUM * DEN > 10), af.where(X), af.where_v2(np.array([0, 3, 0, 1], np.int32))],
         lambda: [np.argwhere(NUM * DEN > 10), np.argwhere(X), np.array([[1], [3]])]),
    Case("where_coordinates_static_shape", ("Where",),
         lambda af: af.where(af.placeholder(af.bool, [3, None], name="p")),
         lambda: np.argwhere(np.eye(3, dtype=bool)), static_shape=[None, 2],
         feeds=feed("p", np.eye(3, dtype=bool))),

    # -- clip, range -----------------------------------------------------------------------------------
    Case("clip_by_value", ("Minimum", "Maximum"),
         lambda af: [af.clip_by_value(SPECIAL, -1.0, 2.0), af.clip_by_value(NUM, -2, 3),
                     af.clip_by_value(X, np.array([0.0, -1.0, 1.0], np.float32), 2.0)],
         lambda: [np.minimum(np.maximum(SPECIAL, np.float32(-1)), np.float32(2)), np.clip(NUM, -2, 3),
                  np.minimum(np.maximum(X, [0.0, -1.0, 1.0]), 2).astype(np.float32)]),
    Case("range_ints", ("Range",),
         lambda af: [af.range(5), af.range(5, 0, -2), af.range(-3, 4, 3), af.range(2, 2),
                     af.range(np.int64(3)), af.range(3, dtype=af.float64)],
         lambda: [np.arange(5, dtype=np.int32), np.arange(5, 0, -2, dtype=np.int32),
                  np.arange(-3, 4, 3, dtype=np.int32), np.arange(2, 2, dtype=np.int32),
                  np.arange(3, dtype=np.int64), np.arange(3, dtype=np.float64)]),
    Case("range_floats", ("Range", "Cast"),
         lambda af: [af.range(0.0, 1.0, 0.3), af.range(1.0, 0.0, -0.3), af.range(1, 3.5),
                     af.range(0.5, 10.25, 0.75, dtype=af.float64)],
         lambda: [np.float32(0) + np.arange(4).astype(np.float32) * np.float32(0.3),
                  np.float32(1) + np.arange(4).astype(np.float32) * np.float32(-0.3),
                  np.arange(1, 3.5, dtype=np.float32), np.arange(0.5, 10.25, 0.75)]),
    Case("range_placeholder_limit", ("Range",),
         lambda af: af.range(af.placeholder(af.int32, [], name="p")), lambda: np.arange(4, dtype=np.int32),
         static_shape=[None], feeds=feed("p", 4)),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_math(case):
    check_case(case)


def run(fetch, feed_dict=None):
    with af.Session(graph=fetch.graph) as sess:
        return sess.run(fetch, feed_dict)


# -- errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda: af.floordiv(af.constant([1, 2]), af.constant([0, 1])),
    lambda: af.floormod(af.constant([1, 2], af.int64), af.constant([1, 0], af.int64)),
    lambda: af.div(af.constant([4], af.uint8), af.constant([0], af.uint8)),
    lambda: af.constant([7]) // 0,
    lambda: af.constant([7]) % 0,
    lambda: Div(af.constant([7]), 0),
], ids=["floordiv", "floormod", "div_uint8", "op_floordiv", "op_mod", "Div"])
def test_integer_division_by_zero_is_invalid_argument(build):
    with af.Graph().as_default():
        with pytest.raises(af.errors.InvalidArgumentError, match="Integer division by zero"):
            run(build())


def test_integer_pow_with_negative_exponent_is_invalid_argument():
    with af.Graph().as_default():
        with pytest.raises(af.errors.InvalidArgumentError, match="Integers to negative integer powers"):
            run(af.pow(af.constant([2, 3]), af.constant([1, -1])))


def test_matmul_inner_dimension_mismatch_names_op_and_shapes():
    with af.Graph().as_default():
        message = r"MatMul 'dense/MatMul': inner dimensions differ, \[8,64\] x \[32,10\]"
        with pytest.raises(ValueError, match=message):
            with af.name_scope("dense"):
                af.matmul(af.placeholder(af.float32, [8, 64]), af.zeros([32, 10]))
        with pytest.raises(ValueError, match=r"BatchMatMulV2 'MatMul': inner dimensions differ, \[2,8,64\]"):
            af.matmul(af.zeros([2, 8, 64]), af.zeros([32, 10]))
        with pytest.raises(ValueError, match=r"BatchMatMulV2 'MatMul_1': batch dimensions of \[2,8,4\] and"):
            af.matmul(af.zeros([2, 8, 4]), af.zeros([3, 4, 10]))
        with pytest.raises(ValueError, match=r"MatMul 'MatMul_2': Shape must be rank 2 but is rank 1"):
            af.matmul(af.zeros([2]), af.zeros([2, 2]))
        with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a`"):
            af.matmul(af.zeros([2, 2]), af.zeros([2, 2]), transpose_a=True, adjoint_a=True)


def test_matmul_runtime_mismatch_is_invalid_argument():
    with af.Graph().as_default():
        a = af.placeholder(af.float32, None)
        with pytest.raises(af.errors.InvalidArgumentError, match="Matrix size-incompatible"):
            run(af.matmul(a, af.zeros([2, 2])), {a: np.ones([2, 3], np.float32)})


def test_incompatible_broadcast_raises_value_error_at_construction():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match=r"AddV2 'Add'.*Dimensions must be equal, but are 3 and 4"):
            af.add(af.zeros([2, 3]), af.zeros([4]))
        with pytest.raises(ValueError, match=r"Equal 'Equal'.*incompatible"):
            af.equal(af.zeros([2]), af.zeros([3]))
        with pytest.raises(ValueError, match="AddN 'AddN': all inputs must have the same shape"):
            af.add_n([af.zeros([2]), af.zeros([1])])
        with pytest.raises(ValueError, match="clip_by_value"):
            af.clip_by_value(af.zeros([2]), af.zeros([3]), 1.0)


def test_incompatible_broadcast_at_run_time_is_invalid_argument():
    with af.Graph().as_default():
        p = af.placeholder(af.float32, None)
        with pytest.raises(af.errors.InvalidArgumentError, match="AddV2 'Add'"):
            run(af.add(p, af.zeros([2, 2])), {p: np.ones([2, 3], np.float32)})


def test_reduce_axis_out_of_range():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="Sum 'Sum'.*out of range"):
            af.reduce_sum(af.zeros([2, 3]), axis=2)
        with pytest.raises(ValueError, match=r"ArgMax 'ArgMax': Dimension \(-3\) must be in the range"):
            af.argmax(af.zeros([2, 3]), -3)
        with pytest.raises(ValueError, match="Cannot specify both 'reduction_indices' and 'axis'"):
            af.reduce_mean(af.zeros([2, 3]), axis=1, reduction_indices=1)
        with pytest.raises(ValueError, match="Cannot specify both 'keep_dims' and 'keepdims'"):
            af.reduce_max(af.zeros([2, 3]), keepdims=True, keep_dims=True)
        axis = af.placeholder(af.int32, [])
        with pytest.raises(af.errors.InvalidArgumentError, match="Invalid reduction dimension 5"):
            run(af.reduce_sum(af.zeros([2, 3]), axis), {axis: 5})
        with pytest.raises(af.errors.InvalidArgumentError, match="duplicate dimension"):
            run(af.reduce_sum(af.zeros([2, 3]), [1, -1]))
        with pytest.raises(af.errors.InvalidArgumentError, match="Reduction axis 1 is empty"):
            run(af.argmax(af.zeros([2, 0]), 1))


def test_select_condition_shape_mismatch():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match=r"Select 'Select': condition vector of shape \[3\]"):
            af.where([True, False, True], np.ones([2, 2]), np.zeros([2, 2]))
        with pytest.raises(ValueError, match=r"Select 'Select_1': condition of shape \[1,2\]"):
            af.where([[True, False]], np.ones([2, 2]), np.zeros([2, 2]))
        with pytest.raises(ValueError, match="x and y must both be non-None or both be None"):
            af.where([True], [1])
        cond = af.placeholder(af.bool, None)
        with pytest.raises(af.errors.InvalidArgumentError, match="Select"):
            run(af.where(cond, af.zeros([2, 2]), af.ones([2, 2])), {cond: np.array([[True, False, True]])})


def test_dtype_mix_is_type_error():
    with af.Graph().as_default():
        i, f = af.constant([1]), af.constant([1.0])
        with pytest.raises(TypeError, match="AddV2"):
            af.add(i, f)
        with pytest.raises(TypeError, match="different dtypes"):
            i + f  # noqa: B018
        with pytest.raises(TypeError):
            af.matmul(af.zeros([2, 2], af.int32), af.zeros([2, 2]))
        with pytest.raises(TypeError, match="Sigmoid"):
            af.sigmoid(i)
        with pytest.raises(TypeError, match="same dtype"):
            af.truediv(i, f)
        with pytest.raises(TypeError, match="Invalid dtype bool in __truediv__"):
            af.truediv(True, False)


def test_range_checks_delta_and_bounds():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="Range 'range': Requires delta != 0"):
            af.range(0, 5, 0)
        with pytest.raises(ValueError, match="Requires start <= limit when delta > 0"):
            af.range(5, 0, 1)
        delta = af.placeholder(af.int32, [])
        with pytest.raises(af.errors.InvalidArgumentError, match="Requires delta != 0"):
            run(af.range(0, 5, delta), {delta: 0})


def test_cast_string_to_number_is_unimplemented():
    with af.Graph().as_default():
        with pytest.raises(af.errors.UnimplementedError, match="Cast string to int32 is not supported"):
            run(af.cast(af.constant(["1"]), af.int32))


def test_add_n_needs_a_nonempty_list():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="at least one"):
            af.add_n([])
        with pytest.raises(ValueError, match="The input scalar must be a 0-D value"):
            af.scalar_mul(af.zeros([2]), af.zeros([2]))


# -- TF1 naming (checked against tensorflow.compat.v1 graph mode) ---------------------------------------
def ops_of(graph):
    return [(op.name, op.type) for op in graph.get_operations()]


NAMING = [
    ("cast_python", lambda: af.cast(1, af.float32), "Cast:0", [("Cast/x", "Const"), ("Cast", "Cast")]),
    ("add", lambda: af.add(af.constant([1.0], name="a"), 2.0), "Add:0",
     [("a", "Const"), ("Add/y", "Const"), ("Add", "AddV2")]),
    ("truediv_int8",
     lambda: af.truediv(af.constant([1], af.int8, name="a"), af.constant([2], af.int8, name="b")),
     "truediv:0", [("a", "Const"), ("b", "Const"), ("truediv/Cast", "Cast"), ("truediv/Cast_1", "Cast"),
                   ("truediv", "RealDiv")]),
    ("div_ints", lambda: af.div([1], [2]), "div:0",
     [("div/x", "Const"), ("div/y", "Const"), ("div", "FloorDiv")]),
    ("mod", lambda: af.mod([1], [2], name="md"), "md:0",
     [("md/x", "Const"), ("md/y", "Const"), ("md", "FloorMod")]),
    ("abs_complex", lambda: af.abs([1j]), "Abs:0", [("Abs/x", "Const"), ("Abs", "ComplexAbs")]),
    ("reduce_sum", lambda: af.reduce_sum(af.constant([[1.0]], name="a")), "Sum:0",
     [("a", "Const"), ("Const", "Const"), ("Sum", "Sum")]),
    ("reduce_sum_unknown_rank", lambda: af.reduce_sum(af.placeholder(af.float32, name="p")), "Sum:0",
     [("p", "Placeholder"), ("Rank", "Rank"), ("range/start", "Const"), ("range/delta", "Const"),
      ("range", "Range"), ("Sum", "Sum")]),
    ("reduce_mean_axis", lambda: af.reduce_mean(af.constant([[1.0]], name="a"), 0, name="m"), "m:0",
     [("a", "Const"), ("m/reduction_indices", "Const"), ("m", "Mean")]),
    ("argmax", lambda: af.argmax([1, 3, 2]), "ArgMax:0",
     [("ArgMax/input", "Const"), ("ArgMax/dimension", "Const"), ("ArgMax", "ArgMax")]),
    ("add_n", lambda: af.add_n([[1.0, 2.0], [3.0, 4.0]]), "AddN:0",
     [("Const", "Const"), ("Const_1", "Const"), ("AddN", "AddN")]),
    ("add_n_single", lambda: af.add_n([[1.0, 2.0]], name="q"), "q:0",
     [("Const", "Const"), ("q", "Identity")]),
    ("logical_xor", lambda: af.logical_xor(af.constant([True], name="a"), af.constant([False], name="b")),
     "LogicalXor:0", [("a", "Const"), ("b", "Const"), ("LogicalOr", "LogicalOr"),
                      ("LogicalAnd", "LogicalAnd"), ("LogicalNot", "LogicalNot"),
                      ("LogicalXor", "LogicalAnd")]),
    ("where_select", lambda: af.where([True], [1], [2]), "Select:0",
     [("Select/condition", "Const"), ("Select/t", "Const"), ("Select/e", "Const"), ("Select", "Select")]),
    ("where_coordinates", lambda: af.where([True, False]), "Where:0",
     [("Where/condition", "Const"), ("Where", "Where")]),
    ("where_v2", lambda: af.where_v2(af.constant([True], name="c"), af.constant([1.0], name="x"), 0.0),
     "SelectV2:0", [("c", "Const"), ("x", "Const"), ("SelectV2/e", "Const"), ("SelectV2", "SelectV2")]),
    ("matmul_batched", lambda: af.matmul(af.zeros([2, 2, 2], name="a"), af.zeros([2, 2], name="b")),
     "MatMul:0",
     [("a", "Const"), ("b", "Const"), ("MatMul", "BatchMatMulV2")]),
    ("clip_by_value", lambda: af.clip_by_value([1.0, 5.0], 2.0, 4.0), "clip_by_value:0",
     [("clip_by_value/t", "Const"), ("clip_by_value/Minimum/y", "Const"),
      ("clip_by_value/Minimum", "Minimum"), ("clip_by_value/y", "Const"), ("clip_by_value", "Maximum")]),
    ("range_mixed", lambda: af.range(1, 3.0), "range:0",
     [("range/start", "Const"), ("range/limit", "Const"), ("range/delta", "Const"), ("range/Cast", "Cast"),
      ("range/Cast_1", "Cast"), ("range", "Range")]),
    ("scalar_mul", lambda: af.scalar_mul(2.0, af.constant([1.0], name="a"), name="sm"), "sm:0",
     [("a", "Const"), ("scalar", "Const"), ("sm", "Mul")]),
]


@pytest.mark.parametrize("build,name,ops", [pytest.param(b, n, o, id=i) for i, b, n, o in NAMING])
def test_tf1_op_names(build, name, ops):
    graph = af.Graph()
    with graph.as_default():
        assert build().name == name
    assert ops_of(graph) == ops


def test_attrs_follow_tf():
    with af.Graph().as_default():
        s = af.reduce_sum(af.zeros([2, 3]), 1, keepdims=True)
        assert s.op.get_attr("keep_dims") is True
        assert [t.name for t in s.op.inputs][1] == "Sum/reduction_indices:0"
        m = af.matmul(af.zeros([3, 2]), af.zeros([4, 3]), transpose_a=True, transpose_b=True)
        assert m.op.type == "MatMul"
        assert (m.op.get_attr("transpose_a"), m.op.get_attr("transpose_b")) == (True, True)
        b = af.matmul(af.zeros([5, 3, 2]), af.zeros([4, 3]), transpose_a=True, adjoint_b=True)
        assert (b.op.type, b.op.get_attr("adj_x"), b.op.get_attr("adj_y")) == ("BatchMatMulV2", True, True)
        assert af.argmax(af.zeros([2])).dtype == af.int64
        assert af.equal(1, 2).op.get_attr("incompatible_shape_error") is True
        c = af.cast(af.zeros([2]), af.int32)
        attrs = (c.op.get_attr("SrcT"), c.op.get_attr("DstT"), c.op.get_attr("Truncate"))
        assert attrs == (af.float32, af.int32, False)
        x = af.zeros([2])
        assert af.cast(x, af.float32) is x
        i = af.constant([1, 2])
        assert af.round(i) is i


# -- Python operators ------------------------------------------------------------------------------------
I1 = np.array([7, -7, 5, 0], np.int32)
I2 = np.array([3, 3, -2, 4], np.int32)
B1 = np.array([True, True, False, False])
B2 = np.array([True, False, True, False])

OPERATORS = [
    ("add", lambda x, y: x + y, "add", "AddV2", lambda: I1 + I2),
    ("add_python", lambda x, y: x + 1, "add", "AddV2", lambda: I1 + 1),
    ("rsub_python", lambda x, y: 2 - x, "sub", "Sub", lambda: 2 - I1),
    ("truediv_ints_is_float64", lambda x, y: x / y, "truediv", "RealDiv", lambda: I1.astype(np.float64) / I2),
    ("floordiv", lambda x, y: x // y, "floordiv", "FloorDiv",
     lambda: python_int(operator.floordiv, I1, I2, np.int32)),
    ("mod", lambda x, y: x % y, "mod", "FloorMod", lambda: python_int(operator.mod, I1, I2, np.int32)),
    ("pow", lambda x, y: x ** 2, "pow", "Pow", lambda: I1 ** 2),
    ("rpow", lambda x, y: 2 ** af.abs(x), "pow", "Pow", lambda: 2 ** np.abs(I1)),
    ("matmul", lambda x, y: af.reshape(x, [4, 1]) @ af.reshape(y, [1, 4]), "matmul", "MatMul",
     lambda: I1[:, None] @ I2[None, :]),
    ("neg", lambda x, y: -x, "Neg", "Neg", lambda: -I1),
    ("abs", lambda x, y: abs(x), "Abs", "Abs", lambda: np.abs(I1)),
    ("lt", lambda x, y: x < y, "Less", "Less", lambda: I1 < I2),
    ("ge", lambda x, y: x >= y, "GreaterEqual", "GreaterEqual", lambda: I1 >= I2),
    ("gt_python", lambda x, y: x > 0, "Greater", "Greater", lambda: I1 > 0),
]


@pytest.mark.parametrize("build,name,op_type,expect",
                         [pytest.param(b, n, t, e, id=i) for i, b, n, t, e in OPERATORS])
def test_operator_overloads(build, name, op_type, expect):
    graph = af.Graph()
    with graph.as_default():
        out = build(af.constant(I1, name="x"), af.constant(I2, name="y"))
        assert (out.op.name, out.op.type) == (name, op_type)
        got = run(out)
    want = expect()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_operator_overload_constant_and_cast_names():
    graph = af.Graph()
    with graph.as_default():
        x, y = af.constant(I1, name="x"), af.constant(I2, name="y")
        x + 1  # noqa: B018
        2 - x  # noqa: B018
        x / y  # noqa: B018
    names = [op.name for op in graph.get_operations()]
    assert names[2:] == ["add/y", "add", "sub/x", "sub", "truediv/Cast", "truediv/Cast_1", "truediv"]


@pytest.mark.parametrize("build,name,expect", [
    pytest.param(lambda a, b: a & b, "and", lambda: B1 & B2, id="and"),
    pytest.param(lambda a, b: a | b, "or", lambda: B1 | B2, id="or"),
    pytest.param(lambda a, b: ~a, "LogicalNot", lambda: ~B1, id="invert"),
    pytest.param(lambda a, b: a ^ b, "xor", lambda: B1 ^ B2, id="xor"),
])
def test_logical_operator_overloads(build, name, expect):
    graph = af.Graph()
    with graph.as_default():
        out = build(af.constant(B1, name="a"), af.constant(B2, name="b"))
        assert out.op.name == name
        got = run(out)
    np.testing.assert_array_equal(got, expect())
    if name == "xor":  # composed as TF does, inside the operator's scope
        assert [op.name for op in graph.get_operations()][2:] == ["xor/LogicalOr", "xor/LogicalAnd",
                                                                  "xor/LogicalNot", "xor"]


def test_float_operators_keep_dtype():
    with af.Graph().as_default():
        x = af.constant(X.astype(np.float16))
        x16 = X.astype(np.float16)
        for out, want in [(x / 2, x16 / np.float16(2)), (x // 0.5, np.floor(x16 / np.float16(0.5))),
                          (x % 1, python_float(operator.mod, x16, np.float16(1)))]:
            got = run(out)
            assert got.dtype == np.float16
            np.testing.assert_allclose(got, want.astype(np.float16), rtol=1e-3)


def test_sign_of_negative_zero_is_positive_zero():
    with af.Graph().as_default():
        got = run(af.sign(np.array([-0.0, 0.0], np.float32)))
    assert not np.signbit(got).any()


def test_equal_without_incompatible_shape_error_answers_a_scalar():
    with af.Graph().as_default():
        x, y = af.constant([1, 2]), af.constant([1, 2, 3])
        eq = Equal(x, y, incompatible_shape_error=False)
        ne = NotEqual(x, y, incompatible_shape_error=False)
        assert eq.shape.as_list() == ne.shape.as_list() == []
        assert run(eq).item() is False and run(ne).item() is True
        broadcast = Equal(x, [[1], [3]], incompatible_shape_error=False)
        np.testing.assert_array_equal(run(broadcast), np.array([1, 2]) == np.array([[1], [3]]))
