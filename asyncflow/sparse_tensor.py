"""SparseTensor and SparseTensorValue."""

__all__: list[str] = []
