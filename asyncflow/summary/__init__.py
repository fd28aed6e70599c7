"""`af.summary`, as `tf.compat.v1.summary`: summary ops and TensorBoard event files (issue 11)."""

__all__: list[str] = []
