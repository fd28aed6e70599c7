"""More array ops real models call (eye, diag, sequence_mask, meshgrid, reverse_sequence, ...)."""

__all__: list[str] = []
