"""Decompositions and matrix functions of TF1's `tf.linalg`: Svd, Qr, SelfAdjointEigV2, Lu, Cross,
MatrixExponential, MatrixSquareRoot, MatrixLogarithm, MatrixSolveLs, and the composites TF1 builds on
them and on linalg_ops (cholesky_solve, matrix_solve_ls/lstsq, logdet, pinv, matrix_rank, matvec,
adjoint, normalize).

Outputs follow TF, not numpy: `svd` returns (s, u, v) with v itself (a = u diag(s) v^H), `qr` and `svd`
are reduced unless `full_matrices`, `lu` returns the packed L\\U factor and the row permutation p with
a[p] = L U. Kernels are batched numpy/scipy; float16 is computed in float32. Gradients are TF's
linalg_grad.py rules (Svd, Qr, SelfAdjointEigV2, MatrixSolveLs, Cross). For the matrix functions TF's
expm is a composite and its sqrtm rule solves a Kronecker system; here both use one identity instead:
for a primary matrix function f, the gradient G -> L_f(A^H, G) is the upper-right block of
f([[A^H, G], [0, A^H]]) (Higham, Functions of Matrices, 3.2). Lu and MatrixLogarithm have no gradient,
as in TF.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.linalg as sla

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array import shape, zeros_like
from asyncflow.ops.array_dims import expand_dims, squeeze
from asyncflow.ops.array_manip import concat
from asyncflow.ops.linalg_ops import (
    Cholesky,
    MatrixBandPart,
    MatrixDiag,
    MatrixDiagPart,
    MatrixSetDiag,
    MatrixTriangularSolve,
    _dim,
    _invalid,
    _matrix_shape,
    eye,
    matrix_transpose,
    norm,
)
from asyncflow.ops.math import COMPLEX, cast
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.math_unary import Log, Reciprocal, Square
from asyncflow.ops.registry import NUMERIC, BuildContext, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape

__all__ = ["svd", "qr", "self_adjoint_eig", "self_adjoint_eigvals", "cross", "cholesky_solve", "matrix_solve_ls",
           "matrix_square_root"]

# TF's decompositions: float16, float32, float64, complex64, complex128 (no bfloat16)
DECOMP = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _work(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _adj(x: Tensor) -> Tensor:
    return matrix_transpose(x, conjugate=True)


def _safe_reciprocal(x: Tensor, epsilon: float = 1e-20) -> Tensor:
    """x / (x^2 + eps): TF's guard for the 1/(s_i^2 - s_j^2) terms of equal values."""
    return x * Reciprocal(x * x + epsilon)


# -- singular value decomposition -------------------------------------------------------------------------------
def _svd_shape(b: BuildContext) -> list[TensorShape]:
    s = _matrix_shape(b, square=False)
    if s.ndims is None:
        return [unknown_shape(), unknown_shape(), unknown_shape()]
    batch, m, n = s[:-2], _dim(s[-2]), _dim(s[-1])
    p = None if m is None or n is None else min(m, n)
    if not b.attrs["compute_uv"]:
        return [batch.concatenate([p]), TensorShape([0]), TensorShape([0])]
    full = b.attrs["full_matrices"]
    return [batch.concatenate([p]), batch.concatenate([m, m if full else p]),
            batch.concatenate([n, n if full else p])]


@op("Svd", inputs="input: T", outputs="s: T, u: T, v: T", types={"T": DECOMP},
    attrs={"compute_uv": True, "full_matrices": False}, shape=_svd_shape)
def Svd(k, x):
    dt = k.out_dtypes[0]
    x = _work(x)
    if not k.compute_uv:
        empty = np.zeros([0], dt)
        return np.linalg.svd(x, compute_uv=False).astype(dt), empty, empty
    u, s, vh = np.linalg.svd(x, full_matrices=k.full_matrices)
    v = np.conj(np.swapaxes(vh, -1, -2))
    return s.astype(dt), np.ascontiguousarray(u).astype(dt), np.ascontiguousarray(v).astype(dt)


@Svd.gradient
def _svd_grad(op: Any, grad_s: Tensor, grad_u: Tensor, grad_v: Tensor) -> Tensor:
    """TF's rule (Giles; Townsend for reduced matrices); full_matrices needs |m - n| <= 1, as TF."""
    a = op.inputs[0]
    grad_s = cast(grad_s, a.dtype.base_dtype)
    grad_s_mat = MatrixDiag(grad_s)
    if not op.get_attr("compute_uv"):
        s, u, v = Svd(a, compute_uv=True)
        return matmul(u, matmul(grad_s_mat, v, adjoint_b=True))
    m, n = (_dim(a.shape[-2]), _dim(a.shape[-1])) if a.shape.ndims is not None else (None, None)
    if m is None or n is None:
        raise NotImplementedError("SVD gradient has not been implemented for input with unknown inner matrix shape.")
    full_matrices = op.get_attr("full_matrices")
    s, u, v = op.outputs
    use_adjoint = m > n
    if use_adjoint:  # the gradient of a^H = v s u^H, transposed back at the end
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    if full_matrices and abs(m - n) > 1:
        raise NotImplementedError(f"svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True. "
                                  f"Received: m={m} and n={n} from op input={a.name} with shape={a.shape}.")
    s_mat = MatrixDiag(s)
    s2 = Square(s)
    f = MatrixSetDiag(_safe_reciprocal(expand_dims(s2, -2) - expand_dims(s2, -1)), zeros_like(s))
    s_inv_mat = MatrixDiag(_safe_reciprocal(s))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    f_u = f * matmul(u, grad_u, adjoint_a=True)
    v_gv = matmul(v1, grad_v1, adjoint_a=True)
    f_v = f * v_gv
    term1_nouv = grad_s_mat + matmul(f_u + _adj(f_u), s_mat) + matmul(s_mat, f_v + _adj(f_v))
    grad_a = matmul(u, matmul(term1_nouv, v1, adjoint_b=True))
    if m != n:
        gv1t = _adj(grad_v1)
        term2_nous = gv1t - matmul(matmul(gv1t, v1), v1, adjoint_b=True)
        if full_matrices:
            v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
            term2_nous -= matmul(matmul(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
        grad_a += matmul(matmul(u, s_inv_mat), term2_nous)
    if a.dtype.is_complex:
        ell = eye(m, dtype=a.dtype.base_dtype) * v_gv
        term3_nouv = matmul(s_inv_mat, _adj(ell) - ell)
        grad_a += 0.5 * matmul(u, matmul(term3_nouv, v1, adjoint_b=True))
    return _adj(grad_a) if use_adjoint else grad_a


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None) -> Any:
    """`af.svd`/`af.linalg.svd`: (s, u, v) with tensor = u diag(s) v^H (v, not v^H, unlike numpy), s in
    descending order; just s with `compute_uv=False`. u and v are [.., m, p] and [.., n, p] (p = min(m, n))
    unless `full_matrices`."""
    s, u, v = Svd(tensor, compute_uv=compute_uv, full_matrices=full_matrices, name=name)
    from asyncflow.ops.math_more import real

    return (real(s), u, v) if compute_uv else real(s)


# -- QR ------------------------------------------------------------------------------------------------------
def _qr_shape(b: BuildContext) -> list[TensorShape]:
    s = _matrix_shape(b, square=False)
    if s.ndims is None:
        return [unknown_shape(), unknown_shape()]
    batch, m, n = s[:-2], _dim(s[-2]), _dim(s[-1])
    p = None if m is None or n is None else min(m, n)
    k = m if b.attrs["full_matrices"] else p
    return [batch.concatenate([m, k]), batch.concatenate([k, n])]


@op("Qr", inputs="input: T", outputs="q: T, r: T", types={"T": DECOMP}, attrs={"full_matrices": False},
    shape=_qr_shape)
def Qr(k, x):
    dt = k.out_dtypes[0]
    q, r = np.linalg.qr(_work(x), mode="complete" if k.full_matrices else "reduced")
    return np.ascontiguousarray(q).astype(dt), np.ascontiguousarray(r).astype(dt)


def _upper_solve_right(x: Tensor, r: Tensor) -> Tensor:
    """x @ inv(r)^H for an upper-triangular r."""
    return _adj(MatrixTriangularSolve(r, _adj(x), lower=False, adjoint=False))


def _qr_grad_square_or_deep(q: Tensor, r: Tensor, dq: Tensor, dr: Tensor) -> Tensor:
    qdq = matmul(q, dq, adjoint_a=True)
    rdr = matmul(r, dr, adjoint_b=True)
    tril = MatrixBandPart(qdq - _adj(qdq) + rdr - _adj(rdr), -1, 0)
    grad = matmul(q, dr + _upper_solve_right(tril, r)) + _upper_solve_right(dq - matmul(q, qdq), r)
    if q.dtype.is_complex:
        from asyncflow.ops.math_more import real

        mm = rdr - _adj(qdq)
        eyem = MatrixSetDiag(zeros_like(mm), MatrixDiagPart(mm))
        correction = eyem - cast(real(eyem), q.dtype.base_dtype)
        grad = grad + _upper_solve_right(matmul(q, _adj(correction)), r)
    return grad


@Qr.gradient
def _qr_grad(op: Any, dq: Tensor, dr: Tensor) -> Tensor:
    """TF's rule (arXiv:2009.10071): reduced square or tall matrices, and wide ones by splitting a = [x, y]."""
    q, r = op.outputs
    if r.shape.ndims is None or _dim(r.shape[-2]) is None or _dim(r.shape[-1]) is None:
        raise NotImplementedError(f"QrGrad not implemented with dynamic shapes. Received r.shape: {r.shape}")
    rows, cols = _dim(q.shape[-2]), _dim(r.shape[-1])
    if _dim(r.shape[-2]) > cols and _dim(q.shape[-2]) == _dim(q.shape[-1]):
        raise NotImplementedError(f"QrGrad not implemented when nrows > ncols and full_matrices is true. "
                                  f"Received r.shape={r.shape} with nrows={r.shape[-2]}and ncols={r.shape[-1]}.")
    if rows >= cols:
        return _qr_grad_square_or_deep(q, r, dq, dr)
    a = op.inputs[0]
    y, u = a[..., :, rows:], r[..., :, :rows]
    dv, du = dr[..., :, rows:], dr[..., :, :rows]
    dx = _qr_grad_square_or_deep(q, u, dq + matmul(y, dv, adjoint_b=True), du)
    return concat([dx, matmul(q, dv)], axis=-1)


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """`af.qr`/`af.linalg.qr`: (q, r) with q orthonormal columns and r upper triangular; reduced unless
    `full_matrices` (then q is [.., m, m] and r [.., m, n])."""
    return tuple(Qr(input, full_matrices=full_matrices, name=name))


# -- Hermitian eigendecomposition ----------------------------------------------------------------------------
def _eig_shape(b: BuildContext) -> list[TensorShape]:
    s = _matrix_shape(b)
    if s.ndims is None:
        return [unknown_shape(), unknown_shape()]
    n = s[-1] if _dim(s[-1]) is not None else s[-2]
    e = s[:-2].concatenate([n])
    return [e, s[:-2].concatenate([n, n]) if b.attrs["compute_v"] else TensorShape([0])]


@op("SelfAdjointEigV2", inputs="input: T", outputs="e: T, v: T", types={"T": DECOMP}, attrs={"compute_v": True},
    shape=_eig_shape)
def SelfAdjointEigV2(k, x):
    dt = k.out_dtypes[0]
    x = _work(x)  # only the lower triangle is read, as TF
    if not k.compute_v:
        return np.linalg.eigvalsh(x, UPLO="L").astype(dt), np.zeros([0], dt)
    e, v = np.linalg.eigh(x, UPLO="L")
    return e.astype(dt), np.ascontiguousarray(v).astype(dt)


@SelfAdjointEigV2.gradient
def _self_adjoint_eig_grad(op: Any, grad_e: Tensor, grad_v: Tensor) -> Tensor:
    """TF's rule; like TF it is infinite (NaN) for repeated eigenvalues. Symmetrised onto the lower
    triangle, the only part the forward op reads."""
    e = op.outputs[0]
    if op.get_attr("compute_v"):
        v = op.outputs[1]
        f = MatrixSetDiag(_safe_reciprocal(expand_dims(e, -2) - expand_dims(e, -1)), zeros_like(e))
        inner = MatrixDiag(grad_e) + f * matmul(v, grad_v, adjoint_a=True)
    else:
        _, v = SelfAdjointEigV2(op.inputs[0], compute_v=True)
        inner = MatrixDiag(grad_e)
    grad_a = matmul(v, matmul(inner, v, adjoint_b=True))
    grad_a = MatrixBandPart(grad_a + _adj(grad_a), -1, 0)
    return MatrixSetDiag(grad_a, 0.5 * MatrixDiagPart(grad_a))


def self_adjoint_eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.self_adjoint_eig` (`af.linalg.eigh`): ascending eigenvalues e and eigenvectors v (columns) of each
    Hermitian matrix, reading its lower triangle."""
    e, v = SelfAdjointEigV2(tensor, compute_v=True, name=name)
    return e, v


def self_adjoint_eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """`af.self_adjoint_eigvals` (`af.linalg.eigvalsh`): the ascending eigenvalues only."""
    return SelfAdjointEigV2(tensor, compute_v=False, name=name)[0]


# -- LU ------------------------------------------------------------------------------------------------------
def _lu_shape(b: BuildContext) -> list[TensorShape]:
    s = _matrix_shape(b)
    return [s, unknown_shape() if s.ndims is None else s[:-1]]


@op("Lu", inputs="input: T", outputs="lu: T, p: output_idx_type",
    types={"T": DECOMP, "output_idx_type": (dtypes.int32, dtypes.int64)},
    type_defaults={"output_idx_type": dtypes.int32}, shape=_lu_shape, differentiable=False)
def Lu(k, x):
    x = _work(np.asarray(x))
    n = x.shape[-1]
    flat = x.reshape((-1, n, n))
    packed, perms = np.empty_like(flat), np.empty(flat.shape[:-1], np.int64)
    for i, a in enumerate(flat):
        with warnings.catch_warnings():  # a singular matrix is reported below as TF's error, not warned about
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            lu, piv = sla.lu_factor(a, check_finite=False)
        perm = np.arange(n)
        for row, other in enumerate(piv):  # LAPACK's sequential row swaps, as one permutation
            perm[[row, other]] = perm[[other, row]]
        packed[i], perms[i] = lu, perm
    if np.any(np.diagonal(packed, axis1=-2, axis2=-1) == 0):
        raise _invalid(k, "Input is not invertible.")
    return packed.reshape(x.shape).astype(k.out_dtypes[0]), perms.reshape(x.shape[:-1]).astype(k.out_dtypes[1])


def lu(input: Any, output_idx_type: Any = dtypes.int32, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """`af.linalg.lu`: (lu, p): L (unit diagonal, below) and U (on and above) packed in one matrix, and the
    permutation p with input[..., p, :] = L @ U. A singular matrix is InvalidArgumentError."""
    return tuple(Lu(input, output_idx_type=output_idx_type, name=name))


# -- cross product -----------------------------------------------------------------------------------------
def _cross_shape(b: BuildContext) -> TensorShape:
    a, c = b.shape(0), b.shape(1)
    if not a.is_compatible_with(c):
        raise b.error(f"inputs must have the same shape, got {a} and {c}")
    out = a.merge_with(c)
    if out.ndims is not None:
        if out.ndims < 1 or _dim(out[-1]) not in (None, 3):
            raise b.error(f"the last dimension of the inputs must be 3, got shape {out}")
    return out


@op("Cross", inputs="a: T, b: T", outputs="product: T", types={"T": tuple(d for d in NUMERIC if not d.is_complex)},
    shape=_cross_shape)
def Cross(k, a, b):
    if a.shape != b.shape or a.ndim < 1 or a.shape[-1] != 3:
        raise _invalid(k, f"inputs must have the same shape with 3 in the last dimension, got {list(a.shape)} "
                          f"and {list(b.shape)}")
    return np.cross(a, b).astype(k.out_dtypes[0])


@Cross.gradient
def _cross_grad(op: Any, grad: Tensor) -> list[Tensor]:
    u, v = op.inputs
    return [Cross(v, grad), Cross(grad, u)]


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """`af.cross`/`af.linalg.cross`: the pairwise cross product of 3-vectors (same shapes, no broadcasting)."""
    return Cross(a, b, name=name)


# -- matrix functions ------------------------------------------------------------------------------------------
def _per_matrix(fn: Any, x: np.ndarray, out_dtype: Any) -> np.ndarray:
    x = _work(np.asarray(x))
    n = x.shape[-1]
    flat = x.reshape((-1, n, n))
    out = np.stack([fn(a) for a in flat]) if len(flat) else np.zeros_like(flat)
    if out.dtype.kind == "c" and np.dtype(out_dtype).kind != "c":
        # a real matrix whose function is not real (a negative eigenvalue under sqrtm) is all NaN, as TF
        scale = np.maximum(np.abs(out).max(axis=(-2, -1), keepdims=True), 1)
        real = np.all(np.abs(out.imag) <= 1e-6 * scale, axis=(-2, -1), keepdims=True)
        out = np.where(real, out.real, np.nan)
    return out.reshape(x.shape).astype(out_dtype)


def _block_function_grad(opdef: Any, op: Any, grad: Tensor) -> Tensor:
    """L_f(A^H, grad): the upper-right block of f([[A^H, grad], [0, A^H]]) (see the module docstring)."""
    a_h = _adj(op.inputs[0])
    n = _dim(a_h.shape[-1]) if a_h.shape.ndims is not None else None
    top = concat([a_h, grad], axis=-1)
    bottom = concat([zeros_like(a_h), a_h], axis=-1)
    big = opdef(concat([top, bottom], axis=-2))
    if n is None:
        size = shape(a_h)[-1]
        return big[..., :size, size:]
    return big[..., :n, n:]


@op("MatrixExponential", inputs="input: T", outputs="output: T", types={"T": DECOMP},
    shape=lambda b: _matrix_shape(b))
def MatrixExponential(k, x):
    return _per_matrix(sla.expm, x, k.out_dtypes[0])


@MatrixExponential.gradient
def _matrix_exponential_grad(op: Any, grad: Tensor) -> Tensor:
    return _block_function_grad(MatrixExponential, op, grad)


@op("MatrixSquareRoot", inputs="input: T", outputs="output: T", types={"T": DECOMP},
    shape=lambda b: _matrix_shape(b))
def MatrixSquareRoot(k, x):
    return _per_matrix(lambda a: sla.sqrtm(a), x, k.out_dtypes[0])


@MatrixSquareRoot.gradient
def _matrix_square_root_grad(op: Any, grad: Tensor) -> Tensor:
    return _block_function_grad(MatrixSquareRoot, op, grad)


@op("MatrixLogarithm", inputs="input: T", outputs="output: T", types={"T": COMPLEX},
    shape=lambda b: _matrix_shape(b), differentiable=False)
def MatrixLogarithm(k, x):
    return _per_matrix(sla.logm, x, k.out_dtypes[0])


def expm(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.linalg.expm`: the matrix exponential of each square matrix (op `MatrixExponential`, scope
    `matrix_exponential` as TF's composite)."""
    with name_scope(name, "matrix_exponential", [input]) as scope:
        return MatrixExponential(convert_to_tensor(input, name="input"), name=scope)


def matrix_square_root(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.matrix_square_root` (`af.linalg.sqrtm`): the principal square root of each square matrix; NaN for a
    real matrix whose root is not real."""
    return MatrixSquareRoot(input, name=name)


def logm(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.linalg.logm`: the principal logarithm of each complex square matrix (TF's op takes complex only)."""
    return MatrixLogarithm(input, name=name)


# -- least squares --------------------------------------------------------------------------------------------
def _regularized_gramian_cholesky(matrix: Tensor, l2_regularizer: Any, first_kind: bool) -> Tensor:
    """chol(A^H A + l2 I) (first kind) or chol(A A^H + l2 I), as TF's _RegularizedGramianCholesky."""
    gramian = matmul(matrix, matrix, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2_regularizer, Tensor) or l2_regularizer != 0:
        small = matrix.shape[-1 if first_kind else -2] if matrix.shape.ndims is not None else None
        small_dim = _dim(small) if small is not None else None
        if small_dim is None:
            small_dim = shape(matrix)[-1 if first_kind else -2]
        batch = matrix.shape[:-2].as_list() if matrix.shape[:-2].is_fully_defined() else shape(matrix)[:-2]
        gramian += l2_regularizer * eye(small_dim, batch_shape=batch, dtype=matrix.dtype.base_dtype)
    return Cholesky(gramian)


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """`af.cholesky_solve`/`af.linalg.cholesky_solve`: X with A X = rhs, given A's lower Cholesky factor."""
    with name_scope(name, "cholesky_solve", [chol, rhs]):
        y = MatrixTriangularSolve(chol, rhs, adjoint=False, lower=True)
        return MatrixTriangularSolve(chol, y, adjoint=True, lower=True)


def _solve_ls_shape(b: BuildContext) -> TensorShape:
    a, rhs = _matrix_shape(b, square=False), b.shape(1)
    if a.ndims is None or rhs.ndims is None:
        return unknown_shape()
    if not a[-2].is_compatible_with(rhs[-2]):
        raise b.error(f"matrix and rhs have incompatible row counts: {a} vs {rhs}")
    return a[:-2].merge_with(rhs[:-2]).concatenate([a[-1], rhs[-1]])


@op("MatrixSolveLs", inputs="matrix: T, rhs: T, l2_regularizer: float64", outputs="output: T",
    types={"T": DECOMP}, attrs={"fast": True}, shape=_solve_ls_shape)
def MatrixSolveLs(k, a, rhs, l2):
    a, rhs, l2 = _work(a), _work(rhs), float(l2)
    if not k.fast:  # TF's complete orthogonal decomposition: the minimum-norm solution; l2 is not used
        flat_a = a.reshape((-1,) + a.shape[-2:])
        flat_b = rhs.reshape((-1,) + rhs.shape[-2:])
        out = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(flat_a, flat_b)])
        return out.reshape(a.shape[:-2] + out.shape[-2:]).astype(k.out_dtypes[0])
    m, n = a.shape[-2:]
    a_h = np.conj(np.swapaxes(a, -1, -2))
    try:
        if m >= n:
            out = np.linalg.solve(a_h @ a + l2 * np.eye(n), a_h @ rhs)
        else:
            out = a_h @ np.linalg.solve(a @ a_h + l2 * np.eye(m), rhs)
    except np.linalg.LinAlgError:
        raise _invalid(k, "Cholesky decomposition was not successful. The input might not be valid.") from None
    return out.astype(k.out_dtypes[0])


@MatrixSolveLs.gradient
def _matrix_solve_ls_grad(op: Any, grad: Tensor) -> list[Any]:
    """TF's rule for the fast (normal equations) solution; none for fast=False, as TF."""
    if not op.get_attr("fast"):
        raise ValueError("Gradient not defined for fast=False")
    a, b = op.inputs[0], op.inputs[1]
    l2 = cast(op.inputs[2], a.dtype.base_dtype)
    m, n = _dim(a.shape[-2]), _dim(a.shape[-1])
    if m is None or n is None:
        raise NotImplementedError(f"MatrixSolveLs gradient needs a static matrix shape, got {a.shape}")
    if m >= n:
        x = op.outputs[0]
        z = cholesky_solve(_regularized_gramian_cholesky(a, l2, first_kind=True), grad)
        xzt = matmul(x, z, adjoint_b=True)
        grad_a = -matmul(a, xzt + matrix_transpose(xzt)) + matmul(b, z, adjoint_b=True)
        return [grad_a, matmul(a, z), None]
    chol = _regularized_gramian_cholesky(a, l2, first_kind=False)
    grad_b = cholesky_solve(chol, matmul(a, grad))
    tmp = cholesky_solve(chol, b)
    a1 = -matmul(grad_b, matmul(tmp, a, adjoint_a=True))
    a2 = matmul(tmp, grad - matmul(a, grad_b, adjoint_a=True), adjoint_b=True)
    return [a1 + a2, grad_b, None]


def matrix_solve_ls(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
                    name: str | None = None) -> Tensor:
    """`af.matrix_solve_ls` (`af.linalg.lstsq`): the least-squares X minimising ||matrix X - rhs||^2 +
    l2 ||X||^2. fast=True builds TF's composite on the regularised normal equations (a Cholesky of the
    smaller Gramian, differentiable); fast=False, or unknown inner dimensions, run the MatrixSolveLs op (with
    fast=False: the minimum-norm solution, l2 unused, as TF)."""
    matrix = convert_to_tensor(matrix, name="matrix")
    if matrix.dtype.base_dtype == dtypes.complex128 and (isinstance(l2_regularizer, Tensor) or l2_regularizer != 0):
        raise NotImplementedError("matrix_solve_ls is currently disabled for complex128 and l2_regularizer != 0 "
                                  "due to poor accuracy.")
    m, n = (_dim(matrix.shape[-2]), _dim(matrix.shape[-1])) if matrix.shape.ndims else (None, None)
    if not fast or m is None or n is None:
        # TF picks the branch with a cond when the inner dimensions are unknown; the op decides at run time
        return MatrixSolveLs(matrix, rhs, l2_regularizer, fast=fast, name=name)
    with name_scope(name, "matrix_solve_ls", [matrix, rhs, l2_regularizer]):
        rhs = convert_to_tensor(rhs, name="rhs", dtype=matrix.dtype.base_dtype)
        if m >= n:
            chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=True)
            return cholesky_solve(chol, matmul(matrix, rhs, adjoint_a=True))
        chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=False)
        return matmul(matrix, cholesky_solve(chol, rhs), adjoint_a=True)


# -- composites -------------------------------------------------------------------------------------------
def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """`af.linalg.adjoint`: the conjugate transpose of the last two dimensions."""
    with name_scope(name, "adjoint", [matrix]):
        return matrix_transpose(convert_to_tensor(matrix, name="matrix"), conjugate=True)


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """`af.linalg.matvec`: a @ b for a (batch of) matrix a and vector b, under scope `MatVec`."""
    with name_scope(name, "MatVec", [a, b]):
        out = matmul(a, expand_dims(b, axis=-1), transpose_a=transpose_a, adjoint_a=adjoint_a,
                     a_is_sparse=a_is_sparse, b_is_sparse=b_is_sparse)
        return squeeze(out, axis=-1)


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """`af.linalg.logdet`: log det of each Hermitian positive-definite matrix, 2 sum(log(diag(chol)))."""
    from asyncflow.ops.math_more import real

    with name_scope(name, "logdet", [matrix]):
        chol = Cholesky(matrix)
        return 2.0 * mr.reduce_sum(Log(real(MatrixDiagPart(chol))), axis=[-1])


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """`af.linalg.pinv`: the Moore-Penrose pseudo-inverse by SVD; singular values at or below
    rcond * max(s) (default 10 max(m, n) eps) count as zero."""
    from asyncflow.ops.math import maximum

    with name_scope(name or "pinv"):
        a = convert_to_tensor(a, name="a")
        _check_matrix(a, "pinv")
        np_dtype = a.dtype.base_dtype.as_numpy_dtype
        if rcond is None:
            rows, cols = _dim(a.shape[-2]), _dim(a.shape[-1])
            if rows is not None and cols is not None:
                most = float(max(rows, cols))
            else:
                dims = shape(a)
                most = cast(maximum(dims[-2], dims[-1]), a.dtype.base_dtype)
            rcond = 10.0 * most * np.finfo(np_dtype).eps
        rcond = convert_to_tensor(rcond, dtype=a.dtype.base_dtype, name="rcond")
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = rcond * mr.reduce_max(s, axis=-1)
        # small singular values become inf, so 1/s is 0 without a NaN gradient (TF's trick)
        s = mr.where_v2(s > expand_dims(cutoff, -1), s, np.array(np.inf, np_dtype))
        out = matmul(v / expand_dims(s, -2), u, adjoint_b=True)
        if a.shape.ndims is not None:
            out.set_shape(a.shape[:-2].concatenate([a.shape[-1], a.shape[-2]]))
        return out


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """`af.linalg.matrix_rank`: how many singular values exceed `tol` (default eps max(m, n) max(s)), int32."""
    with name_scope(name or "matrix_rank"):
        a = convert_to_tensor(a, dtype_hint=dtypes.float32, name="a")
        _check_matrix(a, "matrix_rank")
        s = svd(a, compute_uv=False)
        if tol is None:
            if a.shape[-2:].is_fully_defined():
                most = max(a.shape[-2:].as_list())
            else:
                most = mr.reduce_max(shape(a)[-2:])
            eps = np.finfo(a.dtype.base_dtype.as_numpy_dtype).eps
            tol = eps * cast(most, a.dtype.base_dtype) * mr.reduce_max(s, axis=-1, keepdims=True)
        return mr.reduce_sum(cast(s > tol, dtypes.int32), axis=-1)


def normalize(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002 - TF's argument name
              name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.linalg.normalize`: (tensor / norm, norm), the norm kept with size-1 dims (any `af.norm` order)."""
    with name_scope(name, "normalize", [tensor]):
        tensor = convert_to_tensor(tensor)
        nrm = cast(norm(tensor, ord, axis, keepdims=True), tensor.dtype.base_dtype)
        return tensor / nrm, nrm


def _check_matrix(a: Tensor, fn: str) -> None:
    if a.shape.ndims is not None and a.shape.ndims < 2:
        raise ValueError(f"{fn}: input `a` must have at least 2 dimensions, got shape {a.shape}")
