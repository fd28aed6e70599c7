"""Sparse ops (sparse_tensor_to_dense, sparse_reduce_sum, ...)."""

__all__: list[str] = []
