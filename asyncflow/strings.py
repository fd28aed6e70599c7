"""af.strings, as tf.compat.v1.strings."""

__all__: list[str] = []
