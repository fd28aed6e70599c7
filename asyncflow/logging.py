"""`af.logging`, as `tf.compat.v1.logging` (issue 11)."""

__all__: list[str] = []
