"""`af.flags`, as `tf.compat.v1.flags` (issue 11)."""

__all__: list[str] = []
