"""`af.app`, as `tf.compat.v1.app` (issue 11)."""

__all__: list[str] = []
