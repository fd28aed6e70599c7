"""Finite-difference rows for linalg_more (TF's linalg_grad rules). Decomposition outputs enter the loss
through quantities LAPACK's sign choices cannot change (singular/eigen values, squared entries of the
vectors, rank-one products u_i v_i^H), so the differences are well defined."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(23)
TALL = RNG.randn(4, 3)
WIDE = RNG.randn(2, 3, 4)
SQ = RNG.randn(3, 3)
N5 = RNG.randn(5, 4)


def svd_invariants(af, x, full=False):
    s, u, v = af.svd(x, full_matrices=full)
    rank_one = af.matmul(u[..., :, :1], v[..., :, :1], transpose_b=True) * s[..., :1, None]
    return [s, u * u, v * v, rank_one]


def sym(af, x):
    return af.matmul(x, x, transpose_a=True) + np.diag([0.0, 1.0, 3.0])  # well-separated eigenvalues


CASES = [
    GradCase("svd_values_only", ("Svd",), lambda af, x: af.svd(x, compute_uv=False), [WIDE]),
    GradCase("svd_tall", ("Svd",), lambda af, x: svd_invariants(af, x), [TALL]),
    GradCase("svd_wide_batch", ("Svd",), lambda af, x: svd_invariants(af, x), [WIDE]),
    GradCase("svd_square", ("Svd",), lambda af, x: svd_invariants(af, x), [SQ]),
    GradCase("svd_full_matrices_tall_by_one", ("Svd",), lambda af, x: svd_invariants(af, x, full=True), [TALL]),
    GradCase("qr_tall", ("Qr",), lambda af, x: [a * a for a in af.qr(x)], [TALL]),
    GradCase("qr_square", ("Qr",), lambda af, x: [a * a for a in af.qr(x)], [SQ]),
    GradCase("qr_wide_batch", ("Qr",), lambda af, x: [a * a for a in af.qr(x)], [WIDE]),
    GradCase("self_adjoint_eig", ("SelfAdjointEigV2",),
             lambda af, x: [af.self_adjoint_eig(sym(af, x))[0], af.square(af.self_adjoint_eig(sym(af, x))[1])], [SQ]),
    GradCase("self_adjoint_eigvals", ("SelfAdjointEigV2",), lambda af, x: af.self_adjoint_eigvals(sym(af, x)), [SQ]),
    GradCase("cross", ("Cross",), lambda af, a, b: af.cross(a, b), [TALL, TALL[::-1] + 1]),
    GradCase("expm", ("MatrixExponential",), lambda af, x: af.linalg.expm(x), [SQ / 2]),
    GradCase("expm_batch", ("MatrixExponential",), lambda af, x: af.linalg.expm(x), [np.stack([SQ, -SQ.T]) / 3]),
    GradCase("sqrtm", ("MatrixSquareRoot",), lambda af, x: af.linalg.sqrtm(sym(af, x)), [SQ]),
    GradCase("matrix_solve_ls_op_over", ("MatrixSolveLs",),
             lambda af, a, b: af.ops.linalg_more.MatrixSolveLs(a, b, 0.3), [N5, RNG.randn(5, 2)]),
    GradCase("matrix_solve_ls_op_under", ("MatrixSolveLs",),
             lambda af, a, b: af.ops.linalg_more.MatrixSolveLs(a, b, 0.3), [N5.T, RNG.randn(4, 2)]),
    GradCase("lstsq_composite", ("Cholesky", "MatrixTriangularSolve"),
             lambda af, a, b: [af.linalg.lstsq(a, b), af.matrix_solve_ls(af.matrix_transpose(a), b[:4], 0.5)],
             [N5, RNG.randn(5, 2)]),
    GradCase("logdet_pinv_normalize", ("Cholesky", "Svd"),
             lambda af, x: [af.linalg.logdet(sym(af, x)), af.linalg.pinv(x), af.linalg.normalize(x, axis=1)[0]],
             [SQ]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
