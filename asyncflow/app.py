"""`af.app`, as `tf.compat.v1.app`: `run(main=None, argv=None)` on absl-py's `app.run`, and `af.app.flags`.

`run` parses the command line into `af.flags.FLAGS` keeping only the flags it knows, so an unknown
`--flag` reaches `main(argv)` in its argv instead of stopping the program (TF1's `tf.app.run`;
absl's own `app.run` rejects it). A malformed value of a known flag stops the program as absl
does (`FATAL Flags parsing error: ...`, exit status 1), `--helpfull` prints every flag and exits 0.
`main` defaults to the `__main__` module's `main`; its return value is the exit status.
"""

from __future__ import annotations

import sys as _sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from absl import app as _absl_app

from asyncflow import flags as flags


def _parse_flags_tolerate_undef(argv: Sequence[str]) -> list[str]:
    return flags.FLAGS(list(argv), known_only=True)


def run(main: Callable[[list[str]], Any] | None = None, argv: Sequence[str] | None = None) -> NoReturn:
    """Parses the flags (from `argv`, else `sys.argv`), calls `main(remaining argv)` and exits with its value."""
    main = main or _sys.modules["__main__"].main
    _absl_app.run(main=main, argv=None if argv is None else list(argv), flags_parser=_parse_flags_tolerate_undef)
    raise AssertionError("absl.app.run returned")  # pragma: no cover - it always exits


__all__ = ["run", "flags"]
