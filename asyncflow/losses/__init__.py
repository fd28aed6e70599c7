"""af.losses, as tf.compat.v1.losses."""

__all__: list[str] = []
