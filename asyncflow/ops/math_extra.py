"""More math ops real models call (cumulative, segment, counting, einsum/tensordot)."""

__all__: list[str] = []
