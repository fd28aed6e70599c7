"""`af.logging`, as `tf.compat.v1.logging`, on Python's `logging`, through the `asyncflow` logger.

TF1's functions wrote to the `tensorflow` logger, which its own modules used too, so
`tf.logging.set_verbosity(tf.logging.INFO)` also showed the library's messages (checkpoints
saved, `LoggingTensorHook` values, step rates). asyncflow's modules log to children of the
`asyncflow` logger (`asyncflow.train`, ...), so `af.logging` uses that logger: its verbosity
governs both the program's messages and asyncflow's. As TF1, the default level is Python's
(WARNING, from the root logger), and the first use adds a stderr handler with TF1's format
(`INFO:asyncflow:message`) only when the root logger has none, so a program that configures
`logging` itself gets no duplicate lines. `fatal` logs at FATAL and does not exit (TF1).
"""

from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading
from logging import DEBUG, ERROR, FATAL, INFO, WARN
from typing import Any

_LOGGER_NAME = "asyncflow"
_lock = _threading.Lock()
_configured = False
_counts: dict[tuple[str, int], int] = {}  # log_every_n / log_first_n: calls per (file, line) of the caller


def get_logger() -> _logging.Logger:
    """The `asyncflow` logger, given a stderr handler on first use when nothing else handles records."""
    global _configured
    logger = _logging.getLogger(_LOGGER_NAME)
    if not _configured:
        with _lock:
            if not _configured:
                if not _logging.getLogger().handlers and not logger.handlers:
                    handler = _logging.StreamHandler(_sys.stderr)
                    handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))
                    logger.addHandler(handler)
                _configured = True
    return logger


# stacklevel=2: records name the caller's file and line, not this module's (TF1 patched findCaller).
def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().info(msg, *args, stacklevel=2, **kwargs)


def warn(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().error(msg, *args, stacklevel=2, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().critical(msg, *args, stacklevel=2, **kwargs)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def _next_count(depth: int = 2) -> int:
    frame = _sys._getframe(depth)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        _counts[key] = _counts.get(key, -1) + 1
        return _counts[key]


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs the 1st, (n+1)th, (2n+1)th, ... call made from one line."""
    if _next_count() % n == 0:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs only the first `n` calls made from one line."""
    if _next_count() < n:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_if(level: int, msg: Any, condition: Any, *args: Any) -> None:
    if condition:
        get_logger().log(level, msg, *args, stacklevel=2)


def get_verbosity() -> int:
    """The effective level: WARNING (30) until `set_verbosity`, as TF1."""
    return get_logger().getEffectiveLevel()


def set_verbosity(v: int) -> None:
    get_logger().setLevel(v)


def TaskLevelStatusMessage(msg: Any) -> None:  # noqa: N802 - TF's name
    error(msg)


def flush() -> None:
    raise NotImplementedError()  # TF1's flush raises too


__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "get_logger", "log", "debug", "info", "warn", "warning",
           "error", "fatal", "vlog", "log_every_n", "log_first_n", "log_if", "get_verbosity", "set_verbosity",
           "TaskLevelStatusMessage", "flush"]
