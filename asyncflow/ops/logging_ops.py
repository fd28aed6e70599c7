"""Print, Assert, check_numerics."""

__all__: list[str] = []
