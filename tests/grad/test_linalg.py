"""Finite-difference rows for the linalg ops (TF's linalg_grad rules) and Einsum's gradient forms."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(3)
A = RNG.randn(3, 3) + 3 * np.eye(3)
AB = RNG.randn(2, 3, 3) + 3 * np.eye(3)
RHS = RNG.randn(3, 2)
M = RNG.randn(3, 4)
T3 = RNG.randn(2, 3, 4)


def _sym_pd(af, x):
    return af.matmul(x, x, transpose_b=True) + 3 * np.eye(3)


CASES = [
    GradCase("matrix_inverse", ("MatrixInverse",), lambda af, x: af.matrix_inverse(x), [A]),
    GradCase("matrix_inverse_adjoint", ("MatrixInverse",), lambda af, x: af.matrix_inverse(x, adjoint=True), [AB]),
    GradCase("matrix_determinant", ("MatrixDeterminant",), lambda af, x: af.matrix_determinant(x), [AB]),
    GradCase("log_matrix_determinant", ("LogMatrixDeterminant",),
             lambda af, x: af.ops.linalg_ops.log_matrix_determinant(x)[1], [A]),
    GradCase("cholesky", ("Cholesky",), lambda af, x: af.cholesky(_sym_pd(af, x)), [A], rtol=1e-4, atol=1e-5),
    GradCase("matrix_solve", ("MatrixSolve",), lambda af, a, b: af.matrix_solve(a, b), [A, RHS]),
    GradCase("matrix_solve_adjoint", ("MatrixSolve",), lambda af, a, b: af.matrix_solve(a, b, adjoint=True),
             [A, RHS]),
    GradCase("triangular_solve", ("MatrixTriangularSolve",), lambda af, a, b: af.matrix_triangular_solve(a, b),
             [A, RHS]),
    GradCase("triangular_solve_upper_adjoint", ("MatrixTriangularSolve",),
             lambda af, a, b: af.matrix_triangular_solve(a, b, lower=False, adjoint=True), [A, RHS]),
    GradCase("matrix_diag", ("MatrixDiag",), lambda af, x: af.matrix_diag(x), [M]),
    GradCase("matrix_diag_part", ("MatrixDiagPart",), lambda af, x: af.matrix_diag_part(x), [T3]),
    GradCase("matrix_set_diag", ("MatrixSetDiag",), lambda af, x, d: af.matrix_set_diag(x, d), [M, RNG.randn(3)]),
    GradCase("matrix_band_part", ("MatrixBandPart",), lambda af, x: af.matrix_band_part(x, 1, 0), [M]),
    GradCase("diag", ("Diag",), lambda af, x: af.diag(x), [M[:2, :2]]),
    GradCase("diag_part", ("DiagPart",), lambda af, x: af.diag_part(x), [A]),
    GradCase("einsum_ellipsis_matmul", ("Einsum",), lambda af, a, b: af.einsum("...ij,jk->...ik", a, b),
             [T3, RNG.randn(4, 2)]),
    GradCase("einsum_broadcast_batch", ("Einsum",), lambda af, a, b: af.einsum("...ij,...jk->...ik", a, b),
             [T3, RNG.randn(1, 4, 2)]),
    GradCase("einsum_summed_only_in_one", ("Einsum",), lambda af, a, b: af.einsum("ij,k->ik", a, b),
             [M, RNG.randn(2)]),
    GradCase("einsum_implicit_outer", ("Einsum",), lambda af, a, b: af.einsum("j,i", a, b),
             [RNG.randn(3), RNG.randn(2)]),
    GradCase("einsum_three_operands", ("Einsum",), lambda af, a, b, c: af.einsum("ij,jk,kl->il", a, b, c),
             [M, RNG.randn(4, 2), RNG.randn(2, 3)]),
    GradCase("tensordot", ("MatMul", "Transpose"), lambda af, a, b: af.tensordot(a, b, [[1, 2], [1, 0]]),
             [T3, RNG.randn(4, 3, 2)]),
    GradCase("norm_fro_and_p", ("Sqrt", "Pow"), lambda af, x: [af.norm(x, axis=[0, 1]), af.norm(x, ord=3, axis=0)],
             [M]),
    GradCase("trace", ("Sum",), lambda af, x: af.trace(x), [T3[:, :, :3]]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
