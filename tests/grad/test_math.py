"""Gradients of the math ops (asyncflow/ops/math.py, math_reduce.py): finite differences, then analytic values.

Rows (see tests/grad/harness.py) cover every differentiable math op type with several shapes, broadcasting
in both directions, unknown static shapes (static_shapes=False: the run-time paths of `unbroadcast` and of
the reductions' kept-dims shape), and complex inputs built from two float64 inputs (z = re + i im) with a
real result, so that the conjugations of TF's complex rules are checked too. Inputs keep away from the
points where an op is not differentiable (ties, zeros of abs, jumps of floormod).

The analytic tests pin down the rules finite differences cannot see, with TF 2.21's values re-derived in
numpy: ties of maximum/minimum go to x, reduce_max/reduce_min split the gradient among tied elements,
pow's gradient at x = 0 and x < 0, reduce_prod with zeros, cast's dtypes and None for integers, select's
zeros where a branch is not taken.
"""

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops.math import Div
from asyncflow.ops.math_unary import SigmoidGrad, TanhGrad
from tests.grad.harness import GradCase, check_gradient, grad_params

RNG = np.random.default_rng(20240611)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, shape)


def away_from_zero(*shape: int) -> np.ndarray:
    return RNG.uniform(0.3, 1.5, shape) * RNG.choice([-1.0, 1.0], shape)


def distinct(*shape: int) -> np.ndarray:
    """Values at least 0.1 apart, so that max/min/argmax-style ops have no ties within eps."""
    n = int(np.prod(shape))
    return RNG.permutation(np.arange(n) * 0.37 - n * 0.15).reshape(shape)


def complex_of(af_, re, im):
    """z = re + i im from two float64 tensors (the harness perturbs only real inputs)."""
    return af_.cast(re, af_.complex128) + af_.cast(im, af_.complex128) * 1j


def real_part(af_, z, c=0.3 - 0.7j):
    """Re(c z): a real result depending on both parts of z (c mixes them), through a differentiable Cast."""
    return af_.cast(z * c, af_.float64)


X23, Y3, Y23 = normal(2, 3), away_from_zero(3), away_from_zero(2, 3)
COL21, ROW13 = away_from_zero(2, 1), away_from_zero(1, 3)
SCALAR = np.array(1.7)
X4x1x3, X2x1 = normal(4, 1, 3), away_from_zero(2, 1)
# floormod: x / y keeps at least 0.1 away from an integer, where floormod jumps.
FM_X = np.array([[5.3, -2.65, 1.2], [-4.1, 0.45, 7.9]])
FM_Y = np.array([2.0, 1.5, -0.7])
# maximum/minimum: the two inputs differ everywhere (ties are tested analytically below).
MX_X = np.array([[0.5, -1.0, 2.0], [3.0, -0.2, 0.1]])
MX_Y = np.array([1.0, -0.5, 0.7])

CASES = [
    # -- binary arithmetic, with broadcasting both ways and unknown shapes -------------------------------
    GradCase("add_same", ("AddV2",), lambda af, x, y: x + y, [X23, Y23]),
    GradCase("add_row", ("AddV2",), lambda af, x, y: af.add(x, y), [X23, Y3]),
    GradCase("add_both_broadcast", ("AddV2",), lambda af, x, y: x + y, [COL21, ROW13]),
    GradCase("add_rank3", ("AddV2",), lambda af, x, y: x + y, [X4x1x3, X2x1]),
    GradCase("add_dynamic", ("AddV2",), lambda af, x, y: x + y, [COL21, ROW13], static_shapes=False),
    GradCase("sub_scalar", ("Sub",), lambda af, x, y: x - y, [SCALAR, X23]),
    GradCase("sub_dynamic", ("Sub",), lambda af, x, y: x - y, [X4x1x3, X2x1], static_shapes=False),
    GradCase("mul_row", ("Mul",), lambda af, x, y: x * y, [X23, Y3]),
    GradCase("mul_dynamic", ("Mul",), lambda af, x, y: x * y, [COL21, ROW13], static_shapes=False),
    GradCase("realdiv_row", ("RealDiv",), lambda af, x, y: x / y, [X23, Y3]),
    GradCase("realdiv_scalar_num", ("RealDiv",), lambda af, x, y: x / y, [SCALAR, Y23]),
    GradCase("realdiv_dynamic", ("RealDiv",), lambda af, x, y: x / y, [COL21, ROW13], static_shapes=False),
    GradCase("div", ("Div",), lambda af, x, y: Div(x, y), [X23, Y3]),
    GradCase("div_dynamic", ("Div",), lambda af, x, y: Div(x, y), [X23, COL21], static_shapes=False),
    GradCase("floormod", ("FloorMod",), lambda af, x, y: af.floormod(x, y), [FM_X, FM_Y]),
    GradCase("floormod_dynamic", ("FloorMod",), lambda af, x, y: x % y, [FM_X, FM_Y], static_shapes=False),
    GradCase("pow_row", ("Pow",), lambda af, x, y: af.pow(x, y), [positive(2, 3), normal(3)]),
    GradCase("pow_scalar_exponent", ("Pow",), lambda af, x, y: x ** y, [positive(2, 3), np.array(2.5)]),
    # 0 ** y (integral y > 1, so that (-eps) ** y is defined): d/dx = y * 0 ** (y - 1) = 0, and d/dy = 0 from
    # TF's masked log.
    GradCase("pow_zero_base", ("Pow",), lambda af, x, y: af.pow(x, y),
             [np.array([0.0, 1.3, 0.0, 2.0]), np.array([2.0, 1.5, 3.0, 1.2])]),
    # A negative base with integral exponents: only d/dx exists.
    GradCase("pow_negative_base", ("Pow",), lambda af, x, y: af.pow(x, y),
             [np.array([[-1.5, 2.0], [-0.7, -2.2]]), np.array([2.0, 3.0])], wrt=(0,)),
    GradCase("pow_dynamic", ("Pow",), lambda af, x, y: af.pow(x, y), [positive(2, 1), normal(1, 3)],
             static_shapes=False),
    GradCase("maximum", ("Maximum",), lambda af, x, y: af.maximum(x, y), [MX_X, MX_Y]),
    GradCase("maximum_dynamic", ("Maximum",), lambda af, x, y: af.maximum(x, y), [MX_X, MX_Y],
             static_shapes=False),
    GradCase("minimum", ("Minimum",), lambda af, x, y: af.minimum(x, y), [MX_X, MX_Y]),
    GradCase("minimum_scalar", ("Minimum",), lambda af, x, y: af.minimum(x, y), [MX_X, np.array(0.3)]),
    GradCase("clip_by_value", ("Minimum", "Maximum"), lambda af, x, lo, hi: af.clip_by_value(x, lo, hi),
             [MX_X, np.array(-0.5), np.array(1.0)]),
    GradCase("squared_difference", ("SquaredDifference",), lambda af, x, y: af.squared_difference(x, y),
             [X23, Y3]),
    GradCase("squared_difference_dynamic", ("SquaredDifference",),
             lambda af, x, y: af.squared_difference(x, y), [COL21, ROW13], static_shapes=False),
    # -- unary ------------------------------------------------------------------------------------------
    GradCase("neg", ("Neg",), lambda af, x: -x, [X23]),
    GradCase("abs", ("Abs",), lambda af, x: af.abs(x), [away_from_zero(2, 3)]),
    GradCase("sign", ("Sign",), lambda af, x: af.sign(x) * x, [away_from_zero(2, 3)]),
    GradCase("square", ("Square",), lambda af, x: af.square(x), [normal(4)]),
    GradCase("sqrt", ("Sqrt",), lambda af, x: af.sqrt(x), [positive(2, 3)]),
    GradCase("rsqrt", ("Rsqrt",), lambda af, x: af.rsqrt(x), [positive(2, 3)]),
    GradCase("reciprocal", ("Reciprocal",), lambda af, x: af.reciprocal(x), [away_from_zero(2, 3)]),
    GradCase("exp", ("Exp",), lambda af, x: af.exp(x), [normal(2, 3)]),
    GradCase("log", ("Log",), lambda af, x: af.log(x), [positive(3, 2)]),
    GradCase("log1p", ("Log1p",), lambda af, x: af.log1p(x), [positive(5) - 0.4]),
    GradCase("sin", ("Sin",), lambda af, x: af.sin(x), [normal(2, 3)]),
    GradCase("cos", ("Cos",), lambda af, x: af.cos(x), [normal(2, 3)]),
    GradCase("tanh", ("Tanh",), lambda af, x: af.tanh(x), [normal(2, 3)]),
    GradCase("sigmoid", ("Sigmoid",), lambda af, x: af.sigmoid(x), [normal(2, 3) * 2]),
    GradCase("tanh_grad", ("TanhGrad",), lambda af, y, dy: TanhGrad(y, dy), [normal(2, 3) * 0.5, normal(2, 3)]),
    GradCase("sigmoid_grad", ("SigmoidGrad",), lambda af, y, dy: SigmoidGrad(y, dy), [normal(2, 3), normal(2, 3)]),
    GradCase("tanh_sigmoid_second_order", ("TanhGrad", "SigmoidGrad"),
             lambda af, x: af.gradients(af.tanh(x) * af.sigmoid(x), x)[0], [normal(2, 3)]),
    GradCase("tanh_sigmoid_grad_complex", ("TanhGrad", "SigmoidGrad"),
             lambda af, a, b: [real_part(af, TanhGrad(complex_of(af, a, b), complex_of(af, b, a)), 0.3 - 0.2j),
                               real_part(af, SigmoidGrad(complex_of(af, a, b), complex_of(af, b, a)), 0.1 + 0.7j)],
             [normal(3), normal(3)], rtol=1e-4),
    GradCase("scalar_chain", ("Exp", "Sin", "Mul"), lambda af, x: af.exp(af.sin(x)) * x, [np.array(0.4)]),
    # -- casts (float32 rounding: a linear function, so a large eps is exact) -----------------------------
    GradCase("cast_float32", ("Cast",), lambda af, x: af.cast(af.cast(x, af.float32), af.float64) * x,
             [normal(2, 3)], eps=1e-2, rtol=1e-4, atol=1e-4),
    GradCase("cast_complex_roundtrip", ("Cast",),
             lambda af, x: af.cast(af.cast(x, af.complex128) * (2 - 1j), af.float64), [normal(3)]),
    # -- complex: z = re + i im, real result Re(c f(z)) ---------------------------------------------------
    GradCase("complex_mul", ("Mul", "Cast", "AddV2"),
             lambda af, a, b, c, d: real_part(af, complex_of(af, a, b) * complex_of(af, c, d)),
             [normal(2, 2), normal(2, 2), normal(2), normal(2)]),
    GradCase("complex_div", ("RealDiv",),
             lambda af, a, b, c, d: real_part(af, complex_of(af, a, b) / complex_of(af, c, d)),
             [normal(3), normal(3), away_from_zero(3), away_from_zero(3)]),
    GradCase("complex_unary", ("Exp", "Log", "Sqrt", "Tanh", "Reciprocal", "Square", "Sigmoid", "Sin", "Cos",
                               "Rsqrt", "Log1p", "Neg"),
             lambda af, a, b: [real_part(af, f(complex_of(af, a, b)), c) for f, c in (
                 (af.exp, 0.3 - 0.7j), (af.log, 0.5 + 0.2j), (af.sqrt, -0.4 + 0.9j), (af.tanh, 0.8 + 0.1j),
                 (af.reciprocal, 0.2 - 0.6j), (af.square, 0.7 + 0.7j), (af.sigmoid, -0.3 + 0.4j),
                 (af.sin, 0.9 - 0.2j), (af.cos, 0.1 + 0.5j), (af.rsqrt, 0.6 - 0.3j), (af.log1p, 0.4 + 0.8j),
                 (lambda z: -z, 0.2 + 0.3j))],
             [positive(3), away_from_zero(3) * 0.5], rtol=1e-4),
    GradCase("conj", ("Conj",), lambda af, a, b: real_part(af, af.conj(complex_of(af, a, b))),
             [normal(2, 3), normal(2, 3)]),
    GradCase("complex_abs", ("ComplexAbs",), lambda af, a, b: af.abs(complex_of(af, a, b)),
             [away_from_zero(2, 3), away_from_zero(2, 3)]),
    GradCase("complex_reduce", ("Sum", "Prod", "Mean"),
             lambda af, a, b: [real_part(af, r(complex_of(af, a, b), 1)) for r in (
                 af.reduce_sum, af.reduce_prod, af.reduce_mean)],
             [normal(2, 3), normal(2, 3)]),
    GradCase("complex_matmul", ("MatMul", "Conj"),
             lambda af, a, b, c, d: real_part(af, af.matmul(complex_of(af, a, b), complex_of(af, c, d),
                                                            adjoint_a=True)),
             [normal(3, 2), normal(3, 2), normal(3, 2), normal(3, 2)]),
    GradCase("complex_batch_matmul", ("BatchMatMulV2",),
             lambda af, a, b, c, d: real_part(af, af.matmul(complex_of(af, a, b), complex_of(af, c, d),
                                                            adjoint_b=True)),
             [normal(2, 2, 3), normal(2, 2, 3), normal(2, 3), normal(2, 3)]),
    # -- reductions: several axes, keepdims, negative axes, unknown shapes, fed axes ----------------------
    GradCase("sum_all", ("Sum",), lambda af, x: af.reduce_sum(x), [normal(2, 3, 2)]),
    GradCase("sum_axis", ("Sum",), lambda af, x: af.reduce_sum(x, 1), [normal(2, 3, 2)]),
    GradCase("sum_axes_keepdims", ("Sum",), lambda af, x: af.reduce_sum(x, [0, -1], keepdims=True),
             [normal(2, 3, 2)]),
    GradCase("sum_scalar_input", ("Sum",), lambda af, x: af.reduce_sum(x), [np.array(1.3)]),
    GradCase("sum_dynamic", ("Sum",), lambda af, x: af.reduce_sum(x, [-1, 0]), [normal(2, 3, 2)],
             static_shapes=False),
    GradCase("sum_dynamic_all", ("Sum",), lambda af, x: af.reduce_sum(x), [normal(3, 2)], static_shapes=False),
    GradCase("sum_fed_axis", ("Sum",), lambda af, x, a: af.reduce_sum(x, a),
             [normal(2, 3, 2), np.array([2, 0], np.int32)], static_shapes=False),
    GradCase("mean_axis", ("Mean",), lambda af, x: af.reduce_mean(x, 0), [normal(4, 3)]),
    GradCase("mean_all_keepdims", ("Mean",), lambda af, x: af.reduce_mean(x, keepdims=True), [normal(2, 3)]),
    GradCase("mean_dynamic", ("Mean",), lambda af, x: af.reduce_mean(x, [1, 2]), [normal(2, 3, 2)],
             static_shapes=False),
    GradCase("prod_axis", ("Prod",), lambda af, x: af.reduce_prod(x, 1), [away_from_zero(3, 4)]),
    # Rows with one zero and with two zeros: the product of the others is still exact.
    GradCase("prod_with_zeros", ("Prod",), lambda af, x: af.reduce_prod(x, 1),
             [np.array([[0.0, 1.5, -2.0, 0.7], [0.0, 1.2, 0.0, 3.0], [1.1, -0.9, 2.0, 0.5]])]),
    GradCase("prod_all_with_zero", ("Prod",), lambda af, x: af.reduce_prod(x),
             [np.array([[1.2, 0.0], [-0.8, 1.5]])]),
    GradCase("prod_dynamic", ("Prod",), lambda af, x: af.reduce_prod(x, [0, 2], keepdims=True),
             [np.array([[[0.0, 1.1], [0.9, -1.3]], [[1.4, 0.6], [0.0, 0.0]]])], static_shapes=False),
    GradCase("max_axis", ("Max",), lambda af, x: af.reduce_max(x, 1), [distinct(3, 4)]),
    GradCase("max_all", ("Max",), lambda af, x: af.reduce_max(x), [distinct(2, 3)]),
    GradCase("max_dynamic", ("Max",), lambda af, x: af.reduce_max(x, [0, 2], keepdims=True),
             [distinct(2, 3, 2)], static_shapes=False),
    GradCase("min_axis", ("Min",), lambda af, x: af.reduce_min(x, -1), [distinct(3, 4)]),
    GradCase("min_dynamic", ("Min",), lambda af, x: af.reduce_min(x, 0), [distinct(4, 3)], static_shapes=False),
    GradCase("add_n", ("AddN",), lambda af, x, y: af.add_n([x, y, x]), [normal(2, 3), normal(2, 3)]),
    GradCase("add_n_dynamic", ("AddN",), lambda af, x, y: af.add_n([x * x, y]), [normal(2, 3), normal(2, 3)],
             static_shapes=False),
    # -- matmul: the four transpose combinations, batches with broadcasting and adjoints -------------------
    GradCase("matmul", ("MatMul",), lambda af, a, b: af.matmul(a, b), [normal(2, 3), normal(3, 4)]),
    GradCase("matmul_ta", ("MatMul",), lambda af, a, b: af.matmul(a, b, transpose_a=True),
             [normal(3, 2), normal(3, 4)]),
    GradCase("matmul_tb", ("MatMul",), lambda af, a, b: af.matmul(a, b, transpose_b=True),
             [normal(2, 3), normal(4, 3)]),
    GradCase("matmul_ta_tb", ("MatMul",), lambda af, a, b: af.matmul(a, b, transpose_a=True, transpose_b=True),
             [normal(3, 2), normal(4, 3)]),
    GradCase("matmul_dynamic", ("MatMul",), lambda af, a, b: af.matmul(a, b), [normal(2, 3), normal(3, 4)],
             static_shapes=False),
    GradCase("batch_matmul", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b),
             [normal(2, 2, 3), normal(2, 3, 4)]),
    GradCase("batch_matmul_adj_x", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b, adjoint_a=True),
             [normal(2, 3, 2), normal(2, 3, 4)]),
    GradCase("batch_matmul_adj_y", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b, transpose_b=True),
             [normal(2, 2, 3), normal(2, 4, 3)]),
    GradCase("batch_matmul_adj_both", ("BatchMatMulV2",),
             lambda af, a, b: af.matmul(a, b, adjoint_a=True, adjoint_b=True), [normal(2, 3, 2), normal(2, 4, 3)]),
    GradCase("batch_matmul_broadcast", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b),
             [normal(2, 1, 2, 3), normal(3, 3, 2)]),
    GradCase("batch_matmul_matrix_times_batch", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b),
             [normal(2, 3), normal(4, 3, 2)]),
    GradCase("batch_matmul_broadcast_dynamic", ("BatchMatMulV2",), lambda af, a, b: af.matmul(a, b),
             [normal(2, 1, 2, 3), normal(3, 3, 2)], static_shapes=False),
    # -- select / where ---------------------------------------------------------------------------------
    GradCase("select_elementwise", ("Select",), lambda af, c, x, y: af.where(c, x, y),
             [np.array([[True, False, True], [False, False, True]]), normal(2, 3), normal(2, 3)]),
    GradCase("select_vector_condition", ("Select",), lambda af, c, x, y: af.where(c, x, y),
             [np.array([False, True, True]), normal(3, 2), normal(3, 2)]),
    GradCase("select_scalar_condition", ("Select",), lambda af, c, x, y: af.where(c, x, y),
             [np.array(True), normal(2, 2), normal(2, 2)]),
    GradCase("select_dynamic", ("Select",), lambda af, c, x, y: af.where(c, x, y),
             [np.array([True, False]), normal(2, 3), normal(2, 3)], static_shapes=False),
    GradCase("select_v2_broadcast", ("SelectV2",), lambda af, c, x, y: af.where_v2(c, x, y),
             [np.array([True, False, True]), normal(2, 1), np.array(0.5)]),
    GradCase("select_v2_dynamic", ("SelectV2",), lambda af, c, x, y: af.where_v2(c, x, y),
             [np.array([[True], [False]]), normal(1, 3), normal(2, 3)], static_shapes=False),
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_gradient_matches_finite_differences(case: GradCase) -> None:
    check_gradient(case)


# -- analytic values ------------------------------------------------------------------------------------------
def _grads(build, inputs, shapes=None, grad_ys=None):
    """d sum(y) / d inputs (or with `grad_ys`), as numpy arrays (None where af.gradients gives None)."""
    with af.Graph().as_default():
        phs = [af.placeholder(af.as_dtype(np.asarray(v).dtype), None if shapes is None else shapes[i])
               for i, v in enumerate(inputs)]
        y = build(*phs)
        grads = af.gradients(y, phs, grad_ys=grad_ys)
        with af.Session() as sess:
            fetch = [g for g in grads if g is not None]
            values = iter(sess.run(fetch, dict(zip(phs, inputs))))
        return [None if g is None else next(values) for g in grads]


def test_maximum_minimum_ties_go_to_x():
    # TF: Maximum routes the gradient to x where x >= y, Minimum where x <= y (so ties go to x).
    x = np.array([1.0, 2.0, 3.0, -1.0])
    y = np.array([1.0, 5.0, 3.0, -2.0])
    up = np.array([1.0, 2.0, 3.0, 4.0])
    gx, gy = _grads(lambda a, b: af.maximum(a, b), [x, y], grad_ys=up)
    np.testing.assert_array_equal(gx, np.where(x >= y, up, 0))
    np.testing.assert_array_equal(gy, np.where(x >= y, 0, up))
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 4.0])
    gx, gy = _grads(lambda a, b: af.minimum(a, b), [x, y], grad_ys=up)
    np.testing.assert_array_equal(gx, np.where(x <= y, up, 0))
    np.testing.assert_array_equal(gy, np.where(x <= y, 0, up))


def test_maximum_with_broadcast_tie_sums_back_to_the_scalar():
    x = np.array([[0.5, 2.0], [1.0, -3.0]])
    gx, gy = _grads(lambda a, b: af.maximum(a, b), [x, np.array(1.0)])
    np.testing.assert_array_equal(gx, (x >= 1.0).astype(float))
    assert gy.shape == () and gy == np.sum(x < 1.0)


def test_clip_by_value_passes_gradient_inside_and_at_the_bounds():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    (gx,) = _grads(lambda a: af.clip_by_value(a, -1.0, 1.0), [x])
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 1.0, 0.0])


def test_reduce_max_and_min_split_the_gradient_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [0.0, 2.0, 0.0], [5.0, 5.0, 5.0]])
    up = np.array([2.0, 4.0, 6.0])
    (g,) = _grads(lambda a: af.reduce_max(a, 1), [x], grad_ys=up)
    is_max = x == x.max(1, keepdims=True)
    np.testing.assert_allclose(g, is_max / is_max.sum(1, keepdims=True) * up[:, None])
    np.testing.assert_allclose(g[2], [2.0, 2.0, 2.0])
    (g,) = _grads(lambda a: af.reduce_min(a, 1), [x], grad_ys=up)
    is_min = x == x.min(1, keepdims=True)
    np.testing.assert_allclose(g, is_min / is_min.sum(1, keepdims=True) * up[:, None])
    np.testing.assert_allclose(g[1], [2.0, 0.0, 2.0])
    (g,) = _grads(lambda a: af.reduce_max(a), [x])  # over everything: the three 5s share it
    np.testing.assert_allclose(g, (x == 5.0) / 3.0)


def test_reductions_with_unknown_rank_and_fed_axes():
    x = np.arange(24.0).reshape(2, 3, 4) % 5 + 1
    grads = _grads(lambda a, ax: [af.reduce_sum(a, ax), af.reduce_mean(a, ax, keepdims=True) * 2,
                                  af.reduce_max(a, ax), af.reduce_prod(a, ax)],
                   [x, np.array([0, -1], np.int32)])
    count = 2 * 4
    is_max = x == x.max(axis=(0, 2), keepdims=True)
    expected = (1 + 2 / count + is_max / is_max.sum(axis=(0, 2), keepdims=True)
                + x.prod(axis=(0, 2), keepdims=True) / x)
    np.testing.assert_allclose(grads[0], expected)
    assert grads[1] is None  # the axes are integers


@pytest.mark.parametrize("value", [np.array(2.5), np.arange(1.0, 7.0).reshape(2, 3)], ids=["scalar", "matrix"])
def test_unknown_rank_gradients(value):
    # Unknown rank: reductions over every axis (axes from Range), matmul as BatchMatMulV2, select_v2.
    grads = _grads(lambda a: [af.reduce_sum(a), af.reduce_mean(a) * 3, af.reduce_max(a), af.reduce_prod(a)], [value])
    n = value.size
    is_max = value == value.max()
    np.testing.assert_allclose(grads[0], 1 + 3 / n + is_max / is_max.sum() + value.prod() / value)
    if value.ndim == 2:
        a, b = _grads(lambda p, q: af.matmul(p, q, adjoint_b=True), [value, value[:1]])
        np.testing.assert_allclose(a, np.ones((2, 1)) @ value[:1])
        np.testing.assert_allclose(b, np.ones((1, 2)) @ value)
        _, gx, gy = _grads(lambda c, p, q: af.where_v2(c, p, q), [np.array([True, False, True]), value, value[0]])
        np.testing.assert_allclose(gx, np.broadcast_to([1.0, 0.0, 1.0], (2, 3)))
        np.testing.assert_allclose(gy, [0.0, 2.0, 0.0])


def test_reduce_prod_with_zeros():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    (g,) = _grads(lambda a: af.reduce_prod(a, 1), [x])
    # One zero: only the zero gets the product of the others; two zeros: nothing moves.
    np.testing.assert_allclose(g, [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]])


def test_pow_gradient_at_zero_and_negative_bases():
    x = np.array([0.0, 1.0, 2.0, -2.0, 3.0, 0.0])
    y = np.array([0.0, 1.0, 3.0, 2.0, -2.0, 2.0])
    gx, gy = _grads(lambda a, b: af.pow(a, b), [x, y])
    with np.errstate(all="ignore"):
        want_gx = y * x ** (y - 1)  # 0 * 0 ** -1 = nan at x = y = 0, as TF
        want_gy = np.where(x > 0, x ** y * np.log(np.where(x > 0, x, 1)), 0)  # TF: 0 where x <= 0
    np.testing.assert_allclose(gx, want_gx)
    assert np.isnan(gx[0])
    np.testing.assert_allclose(gy, want_gy)
    assert gy[3] == 0 and gy[5] == 0


def test_cast_gradient_dtypes_and_integer_casts():
    with af.Graph().as_default():
        x = af.placeholder(af.float32, [3])
        (g,) = af.gradients(af.cast(x, af.float64) * np.array([1.0, 2.0, 3.0]), x)
        assert g.dtype == af.float32
        (none,) = af.gradients(af.cast(af.cast(x, af.int32), af.float32), x)
        assert none is None  # TF: no gradient through an integer cast
        with af.Session() as sess:
            np.testing.assert_array_equal(sess.run(g, {x: np.zeros(3, np.float32)}), [1.0, 2.0, 3.0])


def test_cast_to_complex_and_back_takes_the_real_part():
    (g,) = _grads(lambda a: af.cast(af.cast(a, af.complex64) * (3 + 4j), af.float32),
                  [np.array([1.0, -2.0], np.float32)])
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [3.0, 3.0])


def test_select_gives_zeros_where_a_branch_is_not_taken():
    cond = np.array([[True, False, True], [False, True, False]])
    up = np.arange(1.0, 7.0).reshape(2, 3)
    _, gx, gy = _grads(lambda c, a, b: af.where(c, a, b), [cond, np.ones((2, 3)), np.ones((2, 3))], grad_ys=up)
    np.testing.assert_array_equal(gx, np.where(cond, up, 0))
    np.testing.assert_array_equal(gy, np.where(cond, 0, up))
    # TF1's vector condition picks whole rows.
    rows = np.array([False, True])
    _, gx, gy = _grads(lambda c, a, b: af.where(c, a, b), [rows, np.ones((2, 3)), np.ones((2, 3))], grad_ys=up)
    np.testing.assert_array_equal(gx, [[0, 0, 0], [4, 5, 6]])
    np.testing.assert_array_equal(gy, [[1, 2, 3], [0, 0, 0]])


def test_select_v2_sums_broadcast_branches():
    cond = np.array([[True], [False]])
    up = np.arange(1.0, 7.0).reshape(2, 3)
    _, gx, gy = _grads(lambda c, a, b: af.where_v2(c, a, b), [cond, np.ones(3), np.array(0.0)], grad_ys=up)
    np.testing.assert_array_equal(gx, np.where(cond, up, 0).sum(0))
    assert gy.shape == () and gy == np.where(cond, 0, up).sum()


def test_sign_gradient_is_zeros_not_none():
    (g,) = _grads(lambda a: af.sign(a), [np.array([-1.0, 0.0, 2.0])])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("fn", ["floor", "ceil", "round", "floordiv"])
def test_rounding_ops_pass_no_gradient(fn):
    x = np.array([1.5, -2.5])
    build = {"floor": af.floor, "ceil": af.ceil, "round": af.round,
             "floordiv": lambda a: af.floordiv(a, np.float64(2.0))}[fn]
    (g,) = _grads(build, [x])
    assert g is None


def test_batch_matmul_broadcast_gradient_is_summed_over_the_broadcast_batch():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(24.0).reshape(4, 3, 2) / 10
    ga, gb = _grads(lambda x, y: af.matmul(x, y), [a, b])
    np.testing.assert_allclose(ga, np.sum(np.ones((4, 2, 2)) @ np.swapaxes(b, -1, -2), axis=0))
    np.testing.assert_allclose(gb, np.broadcast_to(a.T @ np.ones((2, 2)), (4, 3, 2)))
