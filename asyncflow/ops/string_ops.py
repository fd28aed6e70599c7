"""String ops used in input code (string_split, as_string, substr, strings.*)."""

__all__: list[str] = []
