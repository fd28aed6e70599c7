"""`af.linalg`, as `tf.compat.v1.linalg`: TF1's linear-algebra names for functions defined in asyncflow.ops."""

from asyncflow._aliases import bind

_MORE = "ops.linalg_more."  # names TF1 has only under tf.linalg, not at the top level

__all__ = bind(globals(), """
    adjoint band_part cholesky cholesky_solve cross det diag diag_part eigh eigvalsh einsum expm eye global_norm
    inv l2_normalize logdet logm lstsq lu matmul matrix_rank matrix_transpose matvec norm normalize pinv qr
    set_diag slogdet solve sqrtm svd tensor_diag tensor_diag_part tensordot trace transpose triangular_solve
""", {"band_part": "matrix_band_part", "det": "matrix_determinant", "diag": "matrix_diag",
      "diag_part": "matrix_diag_part", "eigh": "self_adjoint_eig", "eigvalsh": "self_adjoint_eigvals",
      "inv": "matrix_inverse", "lstsq": "matrix_solve_ls", "set_diag": "matrix_set_diag",
      "slogdet": "ops.linalg_ops.log_matrix_determinant", "solve": "matrix_solve", "sqrtm": "matrix_square_root",
      "tensor_diag": "diag", "tensor_diag_part": "diag_part", "triangular_solve": "matrix_triangular_solve",
      "transpose": "matrix_transpose", "adjoint": _MORE + "adjoint", "expm": _MORE + "expm",
      "logdet": _MORE + "logdet", "logm": _MORE + "logm", "lu": _MORE + "lu", "matrix_rank": _MORE + "matrix_rank",
      "matvec": _MORE + "matvec", "normalize": _MORE + "normalize", "pinv": _MORE + "pinv"})
