"""More nn ops (top_k, in_top_k, lrn, l2_normalize, selu, ...)."""

__all__: list[str] = []
