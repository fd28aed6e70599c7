"""Linear algebra: matrix inverse/determinant/solves/Cholesky, the diagonal and band ops, einsum, and the
composites TF1 builds from them (eye, trace, matrix_transpose, tensordot, norm).

Kernels are batched numpy (`...` leading dims as TF). A singular matrix is TF's InvalidArgumentError
"Input is not invertible."; a non positive-definite Cholesky input is InvalidArgumentError too.
Gradients are TF's linalg_grad.py rules, built from matmul and these ops. `Einsum` is one op on
numpy.einsum whose gradient is another einsum per input (summed-away and broadcast dims restored);
an operand that repeats an index (a trace like "ii->") has no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array import shape, stack, zeros_like
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.array_manip import concat, transpose
from asyncflow.ops.linalg_einsum import einsum, norm, tensordot  # split out to keep this module small
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.registry import ALL_TYPES, FLOAT_COMPLEX, INDEX, NUMERIC, BuildContext, convert_to_tensor, op
from asyncflow.shapes import Dimension, TensorShape, unknown_shape

__all__ = [
    "matrix_inverse", "matrix_determinant", "cholesky", "matrix_solve",
    "matrix_triangular_solve", "matrix_diag", "matrix_diag_part", "matrix_set_diag", "matrix_band_part",
    "diag", "diag_part", "eye", "trace", "matrix_transpose", "einsum", "tensordot", "norm",
]


def _dim(d: Any) -> int | None:
    return Dimension(d).value if not isinstance(d, int) else d


def _matrix_shape(b: BuildContext, i: int = 0, square: bool = True) -> TensorShape:
    s = b.shape(i)
    if s.ndims is None:
        return s
    if s.ndims < 2:
        raise b.error(f"input must be at least rank 2, got shape {s}")
    m, n = _dim(s[-2]), _dim(s[-1])
    if square and m is not None and n is not None and m != n:
        raise b.error(f"input must be a square matrix (or batch of them), got shape {s}")
    return s


def _square_shape(b: BuildContext) -> TensorShape:
    return _matrix_shape(b)


def _batch_shape(b: BuildContext) -> TensorShape:
    s = _matrix_shape(b)
    return s if s.ndims is None else s[:-2]


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


def _adj(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


# -- inverse, determinant ---------------------------------------------------------------------------------
@op("MatrixInverse", inputs="input: T", outputs="output: T", types={"T": FLOAT_COMPLEX}, attrs={"adjoint": False},
    shape=_square_shape)
def MatrixInverse(k, x):
    x = _adj(x) if k.adjoint else x
    try:
        out = np.linalg.inv(x)
    except np.linalg.LinAlgError:
        raise _invalid(k, "Input is not invertible.") from None
    if not np.all(np.isfinite(out)) and np.all(np.isfinite(x)):
        raise _invalid(k, "Input is not invertible.")
    return out.astype(k.out_dtypes[0])


@MatrixInverse.gradient
def _matrix_inverse_grad(op: Any, grad: Tensor) -> Tensor:
    ainv = op.outputs[0]
    adjoint = op.get_attr("adjoint")
    return -matmul(ainv, matmul(grad, ainv, adjoint_a=adjoint, adjoint_b=not adjoint), adjoint_a=not adjoint)


@op("MatrixDeterminant", inputs="input: T", outputs="output: T", types={"T": FLOAT_COMPLEX}, shape=_batch_shape)
def MatrixDeterminant(k, x):
    return np.asarray(np.linalg.det(x)).astype(k.out_dtypes[0])


@MatrixDeterminant.gradient
def _matrix_determinant_grad(op: Any, grad: Tensor) -> Tensor:
    a, c = op.inputs[0], op.outputs[0]
    a_adj_inv = MatrixInverse(a, adjoint=True)
    return expand_dims(expand_dims(grad * c, -1), -1) * a_adj_inv


@op("LogMatrixDeterminant", inputs="input: T", outputs="sign: T, log_abs_determinant: T",
    types={"T": FLOAT_COMPLEX}, shape=lambda b: [_batch_shape(b), _batch_shape(b)])
def LogMatrixDeterminant(k, x):
    sign, logdet = np.linalg.slogdet(x)
    dt = k.out_dtypes[0]
    return np.asarray(sign).astype(dt), np.asarray(logdet).astype(dt)


@LogMatrixDeterminant.gradient
def _log_matrix_determinant_grad(op: Any, _sign_grad: Any, grad: Tensor) -> Tensor:
    a_adj_inv = MatrixInverse(op.inputs[0], adjoint=True)
    return expand_dims(expand_dims(grad, -1), -1) * a_adj_inv


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.matrix_inverse` (`linalg.inv`): the inverse of each square matrix (of its adjoint with `adjoint`)."""
    return MatrixInverse(input, adjoint=adjoint, name=name)


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.matrix_determinant`: the determinant of each square matrix."""
    return MatrixDeterminant(input, name=name)


def log_matrix_determinant(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """TF1's `linalg.slogdet`: (sign, log|det|) of each square matrix (TF1 has no top-level name for it)."""
    return tuple(LogMatrixDeterminant(input, name=name))


# -- cholesky and solves --------------------------------------------------------------------------------------
@op("Cholesky", inputs="input: T", outputs="output: T", types={"T": FLOAT_COMPLEX}, shape=_square_shape)
def Cholesky(k, x):
    try:
        return np.linalg.cholesky(x).astype(k.out_dtypes[0])
    except np.linalg.LinAlgError:
        raise _invalid(k, "Cholesky decomposition was not successful. The input might not be valid.") from None


@Cholesky.gradient
def _cholesky_grad(op: Any, grad: Tensor) -> Tensor:
    """TF's rule (Murray 2016): Phi(L^H grad) sandwiched between L^-1, symmetrised."""
    ell = op.outputs[0]
    eye_ = eye(shape(ell)[-1], batch_shape=shape(ell)[:-2], dtype=ell.dtype)
    l_inverse = MatrixTriangularSolve(ell, eye_, lower=True, adjoint=False)
    middle = matmul(ell, grad, adjoint_a=True)
    middle = MatrixSetDiag(middle, 0.5 * MatrixDiagPart(middle))
    middle = MatrixBandPart(middle, -1, 0)
    grad_a = matmul(matmul(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a += matrix_transpose(grad_a, conjugate=True)
    return grad_a * 0.5


def _solve_shape(b: BuildContext) -> TensorShape:
    a = _matrix_shape(b)
    rhs = b.shape(1)
    if a.ndims is None or rhs.ndims is None:
        return rhs if rhs.ndims is None else unknown_shape(rhs.ndims)
    if rhs.ndims < 2:
        raise b.error(f"rhs must be at least rank 2, got shape {rhs}")
    if not Dimension(a[-2]).is_compatible_with(rhs[-2]):
        raise b.error(f"matrix and rhs have incompatible row counts: {a} vs {rhs}")
    return a[:-2].merge_with(rhs[:-2]).concatenate([a[-1], rhs[-1]]) if a.ndims == rhs.ndims else rhs


@op("MatrixSolve", inputs="matrix: T, rhs: T", outputs="output: T", types={"T": FLOAT_COMPLEX},
    attrs={"adjoint": False}, shape=_solve_shape)
def MatrixSolve(k, a, rhs):
    a = _adj(a) if k.adjoint else a
    try:
        return np.linalg.solve(a, rhs).astype(k.out_dtypes[0])
    except np.linalg.LinAlgError:
        raise _invalid(k, "Input matrix is not invertible.") from None


@MatrixSolve.gradient
def _matrix_solve_grad(op: Any, grad: Tensor) -> list[Tensor]:
    a, c = op.inputs[0], op.outputs[0]
    adjoint = op.get_attr("adjoint")
    grad_b = MatrixSolve(a, grad, adjoint=not adjoint)
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adjoint else -matmul(grad_b, c, adjoint_b=True)
    return [grad_a, grad_b]


@op("MatrixTriangularSolve", inputs="matrix: T, rhs: T", outputs="output: T", types={"T": FLOAT_COMPLEX},
    attrs={"lower": True, "adjoint": False}, shape=_solve_shape)
def MatrixTriangularSolve(k, a, rhs):
    tri = np.tril(a) if k.lower else np.triu(a)  # only the named triangle is read, as TF
    if np.any(np.diagonal(tri, axis1=-2, axis2=-1) == 0):
        raise _invalid(k, "Input matrix is not invertible.")
    return np.linalg.solve(_adj(tri) if k.adjoint else tri, rhs).astype(k.out_dtypes[0])


@MatrixTriangularSolve.gradient
def _matrix_triangular_solve_grad(op: Any, grad: Tensor) -> list[Tensor]:
    a, c = op.inputs[0], op.outputs[0]
    adjoint, lower = op.get_attr("adjoint"), op.get_attr("lower")
    grad_b = MatrixTriangularSolve(a, grad, lower=lower, adjoint=not adjoint)
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adjoint else -matmul(grad_b, c, adjoint_b=True)
    grad_a = MatrixBandPart(grad_a, -1, 0) if lower else MatrixBandPart(grad_a, 0, -1)
    return [grad_a, grad_b]


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.cholesky`: the lower Cholesky factor of each Hermitian positive-definite matrix."""
    return Cholesky(input, name=name)


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """`af.matrix_solve`: X with matrix @ X = rhs (matrix^H @ X = rhs with `adjoint`)."""
    return MatrixSolve(matrix, rhs, adjoint=adjoint, name=name)


def matrix_triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Tensor:
    """`af.matrix_triangular_solve`: a solve that reads only the lower (or upper) triangle of `matrix`."""
    return MatrixTriangularSolve(matrix, rhs, lower=lower, adjoint=adjoint, name=name)


# -- diagonals and bands ----------------------------------------------------------------------------------------
def _matrix_diag_shape(b: BuildContext) -> TensorShape:
    s = b.shape(0)
    if s.ndims is None:
        return s
    if s.ndims < 1:
        raise b.error(f"diagonal must be at least rank 1, got shape {s}")
    return s.concatenate([s[-1]])


def _matrix_diag_part_shape(b: BuildContext) -> TensorShape:
    s = _matrix_shape(b, square=False)
    if s.ndims is None:
        return s
    m, n = _dim(s[-2]), _dim(s[-1])
    return s[:-2].concatenate([None if m is None or n is None else min(m, n)])


@op("MatrixDiag", inputs="diagonal: T", outputs="output: T", types={"T": ALL_TYPES}, shape=_matrix_diag_shape)
def MatrixDiag(k, d):
    n = d.shape[-1]
    out = np.zeros(d.shape + (n,), d.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


@op("MatrixDiagPart", inputs="input: T", outputs="diagonal: T", types={"T": ALL_TYPES},
    shape=_matrix_diag_part_shape)
def MatrixDiagPart(k, x):
    return np.ascontiguousarray(np.diagonal(x, axis1=-2, axis2=-1))


def _set_diag_shape(b: BuildContext) -> TensorShape:
    s = _matrix_shape(b, square=False)
    d = b.shape(1)
    if s.ndims is not None and d.ndims is not None and d.ndims != s.ndims - 1:
        raise b.error(f"diagonal must be rank {s.ndims - 1} for input of shape {s}, got shape {d}")
    return s


@op("MatrixSetDiag", inputs="input: T, diagonal: T", outputs="output: T", types={"T": ALL_TYPES},
    shape=_set_diag_shape)
def MatrixSetDiag(k, x, d):
    n = min(x.shape[-2:])
    if d.shape != x.shape[:-2] + (n,):
        raise _invalid(k, f"diagonal must have shape {list(x.shape[:-2]) + [n]}, got {list(d.shape)}")
    out = np.array(x, copy=True)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


@op("MatrixBandPart", inputs="input: T, num_lower: Tindex, num_upper: Tindex", outputs="band: T",
    types={"T": ALL_TYPES, "Tindex": INDEX}, type_defaults={"Tindex": dtypes.int32},
    shape=lambda b: _matrix_shape(b, square=False))
def MatrixBandPart(k, x, lower, upper):
    m, n = x.shape[-2:]
    lower, upper = int(lower), int(upper)
    if lower > m or upper > n:
        raise _invalid(k, f"num_lower must be at most {m} and num_upper at most {n}, got {lower} and {upper}")
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, np.zeros((), x.dtype))


@MatrixDiag.gradient
def _matrix_diag_grad(op: Any, grad: Tensor) -> Tensor:
    return MatrixDiagPart(grad)


@MatrixDiagPart.gradient
def _matrix_diag_part_grad(op: Any, grad: Tensor) -> Tensor:
    return MatrixSetDiag(zeros_like(op.inputs[0]), grad)


@MatrixSetDiag.gradient
def _matrix_set_diag_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return [MatrixSetDiag(grad, zeros_like(op.inputs[1])), MatrixDiagPart(grad)]


@MatrixBandPart.gradient
def _matrix_band_part_grad(op: Any, grad: Tensor) -> list[Any]:
    return [MatrixBandPart(grad, op.inputs[1], op.inputs[2]), None, None]


def _diag_shape(b: BuildContext) -> TensorShape:
    s = b.shape(0)
    return s if s.ndims is None else s.concatenate(s)


def _diag_part_shape(b: BuildContext) -> TensorShape:
    s = b.shape(0)
    if s.ndims is None:
        return s
    if s.ndims % 2 or s.ndims == 0:
        raise b.error(f"input must have even and non-zero rank, got shape {s}")
    half = s.ndims // 2
    return s[:half].merge_with(s[half:])


@op("Diag", inputs="diagonal: T", outputs="output: T", types={"T": NUMERIC}, shape=_diag_shape)
def Diag(k, d):
    flat = d.reshape(-1)
    return np.diag(flat).reshape(d.shape + d.shape)


@op("DiagPart", inputs="input: T", outputs="diagonal: T", types={"T": NUMERIC}, shape=_diag_part_shape)
def DiagPart(k, x):
    half = x.ndim // 2
    if x.ndim % 2 or x.shape[:half] != x.shape[half:]:
        raise _invalid(k, f"input must have shape [D1..Dk, D1..Dk], got {list(x.shape)}")
    n = int(np.prod(x.shape[:half]))
    return np.ascontiguousarray(np.diagonal(x.reshape(n, n))).reshape(x.shape[:half])


@Diag.gradient
def _diag_grad(op: Any, grad: Tensor) -> Tensor:
    return DiagPart(grad)


@DiagPart.gradient
def _diag_part_grad(op: Any, grad: Tensor) -> Tensor:
    return Diag(grad)


def matrix_diag(diagonal: Any, name: str = "diag") -> Tensor:
    """`af.matrix_diag`: batched square matrices with `diagonal` on their main diagonal."""
    return MatrixDiag(diagonal, name=name)


def matrix_diag_part(input: Any, name: str = "diag_part") -> Tensor:  # noqa: A002
    """`af.matrix_diag_part`: the main diagonal of each (batched) matrix."""
    return MatrixDiagPart(input, name=name)


def matrix_set_diag(input: Any, diagonal: Any, name: str = "set_diag") -> Tensor:  # noqa: A002
    """`af.matrix_set_diag`: `input` with the main diagonal of each matrix replaced."""
    return MatrixSetDiag(input, diagonal, name=name)


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.matrix_band_part`: zero outside the band (a negative count keeps that whole triangle)."""
    return MatrixBandPart(input, num_lower, num_upper, name=name)


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """`af.diag`: the tensor with `diagonal` on its diagonal (rank doubles)."""
    return Diag(diagonal, name=name)


def diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.diag_part`: the inverse of `af.diag`."""
    return DiagPart(input, name=name)


# -- composites --------------------------------------------------------------------------------------------
def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None, dtype: Any = dtypes.float32,
        name: str | None = None) -> Tensor:
    """`af.eye`: an identity matrix (or a batch of them), as TF's linalg_ops_impl.eye."""
    from asyncflow.ops.array import ones, zeros
    from asyncflow.ops.math import minimum

    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        is_square = num_columns is None
        batch_shape = [] if batch_shape is None else batch_shape
        num_columns = num_rows if num_columns is None else num_columns
        if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
            diag_size = minimum(num_rows, num_columns)
        else:
            if not isinstance(num_rows, int) or not isinstance(num_columns, int):
                raise TypeError("num_rows and num_columns must be positive integer values.")
            is_square = num_rows == num_columns
            diag_size = min(num_rows, num_columns)
        if isinstance(batch_shape, Tensor) or isinstance(diag_size, Tensor):
            batch = convert_to_tensor(batch_shape, dtype=dtypes.int32)
            diag_shape = concat([batch, expand_dims(diag_size, 0)], 0)
            shape_ = None if is_square else concat([batch, stack([num_rows, num_columns])], 0)
        else:
            diag_shape = list(batch_shape) + [diag_size]
            shape_ = None if is_square else list(batch_shape) + [num_rows, num_columns]
        diag_ones = ones(diag_shape, dtype=dtype)
        if is_square:
            return matrix_diag(diag_ones)
        return matrix_set_diag(zeros(shape_, dtype=dtype), diag_ones)


def trace(x: Any, name: str | None = None) -> Tensor:
    """`af.trace`: the sum of each (batched) matrix's diagonal."""
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return mr.reduce_sum(matrix_diag_part(x), [-1], name=scope)


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """`af.matrix_transpose` (`linalg.transpose`): swaps the last two dimensions."""
    from asyncflow.ops.array import rank
    from asyncflow.ops.math import range as range_

    with name_scope(name, values=[a]):
        a = convert_to_tensor(a, name="a")
        ndims = a.shape.ndims
        if ndims is not None:
            if ndims < 2:
                raise ValueError(f"Argument 'a' should be a (batch) matrix, with rank >= 2.  Found: {a.shape}")
            perm = list(range(ndims - 2)) + [ndims - 1, ndims - 2]
        else:
            a_rank = rank(a)
            perm = concat([range_(a_rank - 2), [a_rank - 1, a_rank - 2]], 0)
        return transpose(a, perm=perm, conjugate=conjugate)

