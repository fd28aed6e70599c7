"""py_func and numpy_function (in-process only)."""

__all__: list[str] = []
