"""Linear-algebra ops (tf.linalg and their TF1 top-level names)."""

__all__: list[str] = []
