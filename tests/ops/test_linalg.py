"""linalg_ops and linalg_einsum against numpy references: inverse, determinants, Cholesky, solves,
diagonal/band ops, eye/trace/matrix_transpose, einsum forms, tensordot, norm (names and static
shapes pinned with TF 2.21's compat.v1 while this was written)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops import linalg_ops
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(2)
A = RNG.randn(3, 3) + 3 * np.eye(3)
AB = (RNG.randn(2, 3, 3) + 3 * np.eye(3)).astype(np.float32)
PD = A @ A.T
RHS = RNG.randn(3, 2)
M = RNG.randn(3, 4).astype(np.float32)
T3 = RNG.randn(2, 3, 4)


def band(x, lo, hi):
    i, j = np.indices(x.shape[-2:])
    return np.where(((lo < 0) | (i - j <= lo)) & ((hi < 0) | (j - i <= hi)), x, 0)


def set_diag(x, d):
    out = x.copy()
    n = min(x.shape[-2:])
    out[..., range(n), range(n)] = d
    return out


CASES = [
    Case("matrix_inverse", ("MatrixInverse",), lambda af: af.matrix_inverse(A), np.linalg.inv(A)),
    Case("matrix_inverse_batch_adjoint", ("MatrixInverse",), lambda af: af.matrix_inverse(AB, adjoint=True),
         np.linalg.inv(np.swapaxes(AB, -1, -2)), rtol=1e-5, atol=1e-5),
    Case("matrix_determinant_batch", ("MatrixDeterminant",), lambda af: af.matrix_determinant(AB),
         np.linalg.det(AB).astype(np.float32), rtol=1e-5, static_shape=[2]),
    Case("log_matrix_determinant", ("LogMatrixDeterminant",),
         lambda af: list(linalg_ops.log_matrix_determinant(-A)), list(np.linalg.slogdet(-A))),
    Case("cholesky", ("Cholesky",), lambda af: af.cholesky(PD), np.linalg.cholesky(PD)),
    Case("matrix_solve", ("MatrixSolve",), lambda af: af.matrix_solve(A, RHS), np.linalg.solve(A, RHS),
         static_shape=[3, 2]),
    Case("matrix_solve_adjoint", ("MatrixSolve",), lambda af: af.matrix_solve(A, RHS, adjoint=True),
         np.linalg.solve(A.T, RHS)),
    Case("triangular_solve_lower", ("MatrixTriangularSolve",), lambda af: af.matrix_triangular_solve(A, RHS),
         np.linalg.solve(np.tril(A), RHS)),
    Case("triangular_solve_upper_adjoint", ("MatrixTriangularSolve",),
         lambda af: af.matrix_triangular_solve(A, RHS, lower=False, adjoint=True), np.linalg.solve(np.triu(A).T, RHS)),
    Case("matrix_diag", ("MatrixDiag",), lambda af: af.matrix_diag(M), np.stack([np.diag(r) for r in M]),
         static_shape=[3, 4, 4]),
    Case("matrix_diag_part", ("MatrixDiagPart",), lambda af: af.matrix_diag_part(T3),
         np.diagonal(T3, axis1=-2, axis2=-1), static_shape=[2, 3]),
    Case("matrix_set_diag", ("MatrixSetDiag",), lambda af: af.matrix_set_diag(M, [7.0, 8.0, 9.0]),
         set_diag(M, [7, 8, 9])),
    Case("matrix_band_part", ("MatrixBandPart",),
         lambda af: [af.matrix_band_part(M, 1, 0), af.matrix_band_part(M, -1, 1), af.matrix_band_part(M, 0, -1)],
         [band(M, 1, 0), band(M, -1, 1), band(M, 0, -1)]),
    Case("diag", ("Diag",), lambda af: af.diag(np.array([[1, 2], [3, 4]], np.int32)),
         np.diag([1, 2, 3, 4]).astype(np.int32).reshape(2, 2, 2, 2), static_shape=[2, 2, 2, 2]),
    Case("diag_part", ("DiagPart",), lambda af: af.diag_part(A), np.diag(A)),
    Case("eye", ("MatrixDiag", "MatrixSetDiag"),
         lambda af: [af.eye(3), af.eye(2, 3, batch_shape=[2], dtype=af.int32)],
         [np.eye(3, dtype=np.float32), np.stack([np.eye(2, 3, dtype=np.int32)] * 2)]),
    Case("eye_tensor_rows", ("MatrixDiag",), lambda af: af.eye(af.constant(2), dtype=af.float64), np.eye(2)),
    Case("trace", ("MatrixDiagPart", "Sum"), lambda af: af.trace(T3), np.trace(T3, axis1=-2, axis2=-1)),
    Case("matrix_transpose", ("Transpose",), lambda af: af.matrix_transpose(T3), np.swapaxes(T3, -1, -2)),
    Case("einsum_matmul_ellipsis", ("Einsum",), lambda af: af.einsum("...ij,jk->...ik", T3, M.T.astype(np.float64)),
         np.einsum("...ij,jk->...ik", T3, M.T), static_shape=[2, 3, 3], rtol=1e-5),
    Case("einsum_implicit", ("Einsum",), lambda af: af.einsum("ij,jk", M, M.T), M @ M.T, rtol=1e-5),
    Case("einsum_trace_outer_transpose", ("Einsum",),
         lambda af: [af.einsum("ii", A), af.einsum("i,j->ij", A[0], A[1]), af.einsum("ijk->kji", T3),
                     af.einsum("bij,bjk->bik", T3, np.swapaxes(T3, 1, 2))],
         [np.trace(A), np.outer(A[0], A[1]), T3.transpose(2, 1, 0), T3 @ np.swapaxes(T3, 1, 2)]),
    Case("tensordot_pairs", ("Transpose", "Reshape", "MatMul"),
         lambda af: af.tensordot(T3, np.ones((4, 3, 5)), [[1, 2], [1, 0]]),
         np.tensordot(T3, np.ones((4, 3, 5)), [[1, 2], [1, 0]]), static_shape=[2, 5]),
    Case("tensordot_int_axes", ("MatMul",), lambda af: [af.tensordot(T3, np.ones((4, 2)), 1), af.tensordot(A, A, 0)],
         [np.tensordot(T3, np.ones((4, 2)), 1), np.tensordot(A, A, 0)]),
    Case("norm_vector_and_matrix", ("Sqrt", "Max", "Pow"),
         lambda af: [af.norm(A), af.norm(A, axis=1), af.norm(A, ord=1, axis=[0, 1]),
                     af.norm(A, ord=np.inf, axis=(0, 1), keepdims=True), af.norm(A[0], ord=3),
                     af.norm(A, ord=np.inf, axis=0)],
         [np.linalg.norm(A), np.linalg.norm(A, axis=1), np.linalg.norm(A, 1), np.linalg.norm(A, np.inf)[None, None],
          np.sum(np.abs(A[0]) ** 3) ** (1 / 3), np.abs(A).max(0)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case):
    check_case(case)


def test_partially_known_tensordot():
    with af.Graph().as_default():
        x = af.placeholder(af.float64, [None, 3, 4])
        y = af.tensordot(x, np.ones((4, 5)), 1)
        with af.Session() as s:
            np.testing.assert_allclose(s.run(y, {x: T3}), np.tensordot(T3, np.ones((4, 5)), 1))


def test_singular_and_not_positive_definite_are_invalid_argument():
    with af.Graph().as_default(), af.Session() as s:
        with pytest.raises(af.errors.InvalidArgumentError, match="Input is not invertible"):
            s.run(af.matrix_inverse(np.zeros((2, 2))))
        with pytest.raises(af.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
            s.run(af.cholesky(-np.eye(2)))


def test_build_time_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="square"):
            af.matrix_inverse(M)
        with pytest.raises(ValueError, match="ord"):
            af.norm(A, ord="nuc", axis=[0, 1])
        with pytest.raises(ValueError, match="axes"):
            af.tensordot(A, A, [[0], [0, 1]])


def test_names_as_tf1():
    with af.Graph().as_default():
        assert af.einsum("ij,jk->ik", A, A).op.name == "einsum/Einsum"
        assert af.tensordot(T3, np.ones((4, 3, 5)), [[1, 2], [1, 0]]).op.name == "Tensordot/MatMul"
        assert af.eye(3).op.name == "eye/diag"
        assert af.eye(2, 3).op.name == "eye_1/set_diag"
        assert af.trace(A).op.name == "Trace"
        assert af.matrix_transpose(A).op.name == "matrix_transpose/transpose"
        assert af.norm(A).op.name == "norm/Squeeze"
        assert af.matrix_band_part(A, 1, 0).op.inputs[1].dtype == af.int32
