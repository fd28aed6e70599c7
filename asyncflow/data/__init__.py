"""`af.data`, as `tf.compat.v1.data`: datasets and iterators on the asyncio runtime (issue 11)."""

__all__: list[str] = []
