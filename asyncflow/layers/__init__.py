"""af.layers, as tf.compat.v1.layers."""

__all__: list[str] = []
