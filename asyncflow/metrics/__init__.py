"""af.metrics, as tf.compat.v1.metrics."""

__all__: list[str] = []
