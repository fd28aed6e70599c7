"""af.sparse, as tf.compat.v1.sparse."""

__all__: list[str] = []
