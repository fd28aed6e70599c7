"""map_fn, scan, foldl, foldr on while_loop."""

__all__: list[str] = []
