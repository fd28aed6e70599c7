"""af.image, as tf.compat.v1.image."""

__all__: list[str] = []
