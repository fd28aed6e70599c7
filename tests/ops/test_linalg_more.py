"""linalg_more against numpy/scipy references. Decompositions are compared by what does not depend on
LAPACK's sign choices (singular/eigen values, reconstructions, |u^H u|, projectors u u^H, |r|); output order
and static shapes (svd's (s, u, v) with v not transposed, reduced unless full_matrices) and Lu's
permutation were checked against TF 2.21's compat.v1 with tools/tfdiff.py while this was written."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(21)
A = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 4.0], [0.0, 5.0, 1.0], [2.0, 2.0, 2.0]])  # tall 4x3
W = RNG.randn(2, 3, 4)  # a batch of wide matrices
M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
PD = M @ M.T + np.eye(3)
m = af.ops.linalg_more


def t(x):
    return np.swapaxes(x, -1, -2)


def proj(x):
    return x @ t(x).conj()


def svd_checks(af, x, full=False):
    s, u, v = af.svd(x, full_matrices=full)
    p = s.shape.as_list()[-1]
    us = u[..., :, :p] * af.cast(s, u.dtype)[..., None, :]
    return [s, af.matmul(us, v[..., :, :p], adjoint_b=True),
            af.abs(af.matmul(u, u, adjoint_a=True)), af.abs(af.matmul(v, v, adjoint_a=True))]


def svd_want(x, full=False):
    n_u, n_v = (x.shape[-2], x.shape[-1]) if full else (min(x.shape[-2:]),) * 2
    batch = x.shape[:-2]
    return [np.linalg.svd(x, compute_uv=False), x, np.broadcast_to(np.eye(n_u), batch + (n_u, n_u)),
            np.broadcast_to(np.eye(n_v), batch + (n_v, n_v))]


def lu_ref(x):
    p_mat, lower, upper = sla.lu(x)
    return np.tril(lower, -1) + upper, np.argmax(p_mat, axis=0).astype(np.int32)


CASES = [
    Case("svd_tall", ("Svd",), lambda af: svd_checks(af, A), svd_want(A), atol=1e-10),
    Case("svd_wide_batch_full", ("Svd",), lambda af: svd_checks(af, W, full=True), svd_want(W, full=True),
         atol=1e-10),
    Case("svd_projectors", ("Svd",), lambda af: [af.matmul(u, u, transpose_b=True) for u in af.svd(A)[1:]],
         [proj(np.linalg.svd(A, full_matrices=False)[0]), proj(t(np.linalg.svd(A, full_matrices=False)[2]))]),
    Case("svd_values_only_float32", ("Svd",), lambda af: af.svd(W.astype(np.float32), compute_uv=False),
         np.linalg.svd(W, compute_uv=False).astype(np.float32), static_shape=[2, 3], rtol=1e-5),
    Case("svd_complex", ("Svd",), lambda af: svd_checks(af, A + 1j * A[::-1]), svd_want(A + 1j * A[::-1]),
         atol=1e-10),
    Case("qr_tall", ("Qr",), lambda af: [af.matmul(*af.qr(A)), af.abs(af.qr(A)[1]), af.qr(A)[1]],
         [A, np.abs(np.linalg.qr(A)[1]), np.triu(np.linalg.qr(A)[1])], atol=1e-10,
         extra={"note": "r is upper triangular"}),
    Case("qr_wide_full_batch", ("Qr",),
         lambda af: [af.matmul(*af.qr(W, full_matrices=True)), af.abs(af.qr(W)[1]),
                     af.matmul(af.qr(A, full_matrices=True)[0], af.qr(A, full_matrices=True)[0], transpose_a=True)],
         [W, np.abs(np.linalg.qr(W)[1]), np.eye(4)], atol=1e-10),
    Case("self_adjoint_eig", ("SelfAdjointEigV2",),
         lambda af: [af.self_adjoint_eig(PD)[0], af.matmul(af.self_adjoint_eig(PD)[1] * af.self_adjoint_eig(PD)[0],
                                                          af.self_adjoint_eig(PD)[1], transpose_b=True)],
         [np.linalg.eigvalsh(PD), PD], rtol=1e-9),
    Case("eigvalsh_reads_lower_triangle", ("SelfAdjointEigV2",),
         lambda af: af.linalg.eigvalsh(np.tril(PD) + 5 * np.triu(PD, 1)),
         np.linalg.eigvalsh(PD), static_shape=[3], rtol=1e-9),
    # TF 2.21: lu(M) = [[7, 8, 10], [1/7, 6/7, 11/7], [4/7, 1/2, -1/2]], p = [2, 0, 1]
    Case("lu", ("Lu",), lambda af: list(af.linalg.lu(M)), list(lu_ref(M))),
    Case("lu_int64_batch", ("Lu",), lambda af: af.linalg.lu(np.stack([M, PD]), output_idx_type=af.int64)[1],
         np.stack([lu_ref(M)[1], lu_ref(PD)[1]]).astype(np.int64), static_shape=[2, 3]),
    Case("cross", ("Cross",), lambda af: af.cross(A[:, :3], A[::-1, :3]), np.cross(A[:, :3], A[::-1, :3])),
    Case("cross_int", ("Cross",),
         lambda af: af.linalg.cross(np.array([1, 0, 0], np.int32), np.array([0, 1, 0], np.int32)),
         np.array([0, 0, 1], np.int32)),
    Case("expm_batch", ("MatrixExponential",), lambda af: af.linalg.expm(np.stack([M / 10, -PD / 20])),
         np.stack([sla.expm(M / 10), sla.expm(-PD / 20)]), rtol=1e-9),
    Case("sqrtm", ("MatrixSquareRoot",), lambda af: af.linalg.sqrtm(PD), sla.sqrtm(PD), rtol=1e-9),
    # TF 2.21: a real matrix without a real principal root comes back all NaN
    Case("sqrtm_not_real_is_nan", ("MatrixSquareRoot",),
         lambda af: af.matrix_square_root(np.stack([-np.eye(2), [[0.0, 1.0], [-1.0, 0.0]]])),
         np.stack([np.full((2, 2), np.nan), sla.sqrtm(np.array([[0.0, 1.0], [-1.0, 0.0]])).real])),
    Case("logm_complex", ("MatrixLogarithm",), lambda af: af.linalg.logm(PD.astype(np.complex128)),
         sla.logm(PD).astype(np.complex128), rtol=1e-9),
    Case("matrix_solve_ls_slow_min_norm", ("MatrixSolveLs",),
         lambda af: af.matrix_solve_ls(A.T, M, l2_regularizer=0.5, fast=False), np.linalg.lstsq(A.T, M, rcond=None)[0]),
    Case("matrix_solve_ls_op_fast", ("MatrixSolveLs",), lambda af: m.MatrixSolveLs(A, M[:, :2].repeat(2, 0)[:4], 0.5),
         np.linalg.solve(A.T @ A + 0.5 * np.eye(3), A.T @ M[:, :2].repeat(2, 0)[:4])),
    Case("lstsq_composite", ("Cholesky", "MatrixTriangularSolve"),
         lambda af: [af.linalg.lstsq(A, A[:, :2]), af.matrix_solve_ls(A, A[:, :2], l2_regularizer=0.5),
                     af.matrix_solve_ls(A.T, M)],
         [np.eye(3)[:, :2], np.linalg.solve(A.T @ A + 0.5 * np.eye(3), A.T @ A[:, :2]),
          np.linalg.lstsq(A.T, M, rcond=None)[0]], atol=1e-10),
    Case("matrix_solve_ls_unknown_dims_runs_the_op", ("MatrixSolveLs",),
         lambda af: af.matrix_solve_ls(af.placeholder_with_default(A, [None, None]), A[:, :2], l2_regularizer=0.5),
         np.linalg.solve(A.T @ A + 0.5 * np.eye(3), A.T @ A[:, :2])),
    Case("cholesky_solve", ("MatrixTriangularSolve",), lambda af: af.cholesky_solve(np.linalg.cholesky(PD), M),
         np.linalg.solve(PD, M)),
    Case("logdet_slogdet", ("Cholesky", "LogMatrixDeterminant"),
         lambda af: [af.linalg.logdet(np.stack([PD, 2 * PD])), af.linalg.slogdet(M)[1]],
         [np.linalg.slogdet(np.stack([PD, 2 * PD]))[1], np.linalg.slogdet(M)[1]]),
    Case("pinv", ("Svd",), lambda af: af.linalg.pinv(A), np.linalg.pinv(A), static_shape=[3, 4]),
    Case("matrix_rank", ("Svd",), lambda af: af.linalg.matrix_rank(np.stack([A, np.outer(A[:, 0], A[0])])),
         np.array([3, 1], np.int32), static_shape=[2]),
    Case("matvec_adjoint", ("BatchMatMulV2", "Transpose"),
         lambda af: [af.linalg.matvec(W, np.ones(4)), af.linalg.adjoint(W + 1j)],
         [W @ np.ones(4), np.conj(t(W + 1j))]),
    Case("normalize", ("Sqrt",), lambda af: list(af.linalg.normalize(A)) + list(af.linalg.normalize(A, ord=1, axis=1)),
         [A / np.linalg.norm(A), np.linalg.norm(A).reshape(1, 1), A / np.abs(A).sum(1, keepdims=True),
          np.abs(A).sum(1, keepdims=True)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case):
    check_case(case)


def test_static_shapes_and_output_order_as_tf():
    """(s, u, v) and (q, r) shapes, as TF 2.21 infers them, for known and unknown dimensions."""
    with af.Graph().as_default():
        def shapes(ts):
            return [x.shape.as_list() for x in ts]

        assert shapes(af.svd(A)) == [[3], [4, 3], [3, 3]]
        assert shapes(af.svd(A, full_matrices=True)) == [[3], [4, 4], [3, 3]]
        assert shapes(af.qr(A)) == [[4, 3], [3, 3]]
        assert shapes(af.qr(A, full_matrices=True)) == [[4, 4], [4, 3]]
        assert shapes(af.qr(A.T)) == [[3, 3], [3, 4]]
        ph = af.placeholder(af.float64, [None, 4, 3])
        assert shapes(af.svd(ph)) == [[None, 3], [None, 4, 3], [None, 3, 3]]
        assert af.svd(ph, compute_uv=False).shape.as_list() == [None, 3]
        ph2 = af.placeholder(af.float64, [2, None, None])
        assert shapes(af.svd(ph2)) == [[2, None], [2, None, None], [2, None, None]]
        assert shapes(af.qr(ph2, full_matrices=True)) == [[2, None, None], [2, None, None]]
    with af.Graph().as_default():
        assert af.svd(A)[0].op.name == "Svd" and af.linalg.lu(M)[1].dtype == af.int32
        assert af.linalg.matvec(W, np.ones(4)).op.name == "MatVec/Squeeze"
        assert af.linalg.logdet(PD).op.name == "logdet/mul"
        assert af.linalg.pinv(A).op.name == "pinv/MatMul"


def test_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="last dimension of the inputs must be 3"):
            af.cross(np.ones((2, 2)), np.ones((2, 2)))
        with pytest.raises(ValueError, match="at least rank 2"):
            af.svd(np.ones(3))
        with pytest.raises(ValueError, match="square"):
            af.self_adjoint_eig(A)
        with pytest.raises(TypeError, match="allowed values"):
            af.linalg.logm(PD)  # TF's MatrixLogarithm takes complex input only
        with af.Session() as s, pytest.raises(af.errors.InvalidArgumentError, match="not invertible"):
            s.run(af.linalg.lu(np.zeros((2, 2))))
