"""`af.flags` (also `af.app.flags`), as `tf.compat.v1.flags`: absl-py's flags, the library TF itself uses.

Every absl name is here (`DEFINE_string/integer/float/boolean/bool/list/enum/multi_string/
multi_integer`, `mark_flag_as_required`, `FlagValues`, the error classes, ...), defining flags in
absl's one global `FLAGS`, so a program that mixes `af.flags` and `absl.flags` sees one set. Two
things differ from absl, as in TF1:

- `FLAGS` parses `sys.argv` the first time a flag value is read before any parse (absl raises
  `UnparsedFlagAccessError`); an unknown flag on that command line raises absl's
  `UnrecognizedFlagError` ("Unknown command line flag 'x'"). `af.app.run` parses instead, leaving
  unknown flags to `main`'s argv, as TF1's `tf.app.run`.
- The define functions accept TF1's old keyword names `flag_name`, `default_value`, `docstring`.
"""

from __future__ import annotations

import functools
import logging as _logging
import sys as _sys
from typing import Any

from absl import flags as _absl_flags
from absl.flags import *  # noqa: F403 - the whole absl namespace, as tf.flags

# Flags defined through the wrappers below belong to the caller's module, not this one: absl skips
# modules that disclaim key flags when it looks for the defining module (`--helpshort` lists them).
_absl_flags.disclaim_key_flags()

_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _accept_old_names(define: Any) -> Any:
    @functools.wraps(define)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = [k for k in _RENAMED if k in kwargs]
        for key in old:
            kwargs[_RENAMED[key]] = kwargs.pop(key)
        if old:
            _logging.getLogger("asyncflow").warning(
                "Use of the keyword argument names (flag_name, default_value, docstring) is deprecated, please use "
                "(name, default, help) instead.")
        return define(*args, **kwargs)

    return wrapper


DEFINE_string = _accept_old_names(_absl_flags.DEFINE_string)
DEFINE_boolean = _accept_old_names(_absl_flags.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean
DEFINE_float = _accept_old_names(_absl_flags.DEFINE_float)
DEFINE_integer = _accept_old_names(_absl_flags.DEFINE_integer)


class _ParseOnRead:
    """absl's global FLAGS, parsing `sys.argv` when a value is read before any parse (TF1's wrapper)."""

    def __init__(self, flag_values: _absl_flags.FlagValues):
        self.__dict__["_wrapped"] = flag_values

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__["_wrapped"]
        try:  # FlagValues' own methods (is_parsed, unparse_flags, ...) never parse
            return object.__getattribute__(wrapped, name)
        except AttributeError:
            pass
        if not wrapped.is_parsed():
            wrapped(_sys.argv)
        return getattr(wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name: str) -> Any:
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name: str, flag: Any) -> None:
        self.__dict__["_wrapped"][name] = flag

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_wrapped"]

    def __len__(self) -> int:
        return len(self.__dict__["_wrapped"])

    def __iter__(self) -> Any:
        return iter(self.__dict__["_wrapped"])

    def __str__(self) -> str:
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _ParseOnRead(_absl_flags.FLAGS)

__all__ = sorted(set(_absl_flags.__all__) | {"DEFINE_bool", "FLAGS"})
