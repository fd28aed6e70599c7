"""`af.gfile`, as `tf.compat.v1.gfile` (issue 11)."""

__all__: list[str] = []
