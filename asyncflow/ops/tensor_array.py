"""TensorArray (TF1's TensorArrayV3 family)."""

__all__: list[str] = []
