"""The assert_* family (tf.debugging / TF1 top-level names)."""

__all__: list[str] = []
