"""af.logging: TF1's functions and levels on Python logging, through the `asyncflow` logger."""

from __future__ import annotations

import logging

import pytest

import asyncflow as af


@pytest.fixture
def records(monkeypatch):
    """The records the asyncflow logger emits, with its level restored after the test."""
    logger = logging.getLogger("asyncflow")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Keep(level=logging.DEBUG)
    logger.addHandler(handler)
    level = logger.level
    yield seen
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_levels_are_pythons_and_tf1s():
    assert (af.logging.DEBUG, af.logging.INFO, af.logging.WARN, af.logging.ERROR, af.logging.FATAL) == \
        (10, 20, 30, 40, 50)


def test_set_verbosity_filters_and_get_verbosity_reports(records):
    af.logging.set_verbosity(af.logging.WARN)
    assert af.logging.get_verbosity() == af.logging.WARN
    af.logging.info("hidden %d", 1)
    af.logging.debug("hidden")
    af.logging.warn("shown %s", "w")
    af.logging.warning("shown too")
    af.logging.error("an error")
    af.logging.fatal("fatal, but no exit")  # TF1 logs at FATAL and goes on
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (30, "shown w"), (30, "shown too"), (40, "an error"), (50, "fatal, but no exit")]
    records.clear()
    af.logging.set_verbosity(af.logging.DEBUG)
    af.logging.debug("d")
    af.logging.info("i %s", "x")
    af.logging.log(af.logging.INFO, "via log")
    af.logging.vlog(af.logging.INFO, "via vlog")
    assert [r.getMessage() for r in records] == ["d", "i x", "via log", "via vlog"]
    assert all(r.name == "asyncflow" for r in records)
    assert records[0].filename == "test_logging.py"  # the caller's file and line, not the wrapper's


def test_library_messages_follow_the_verbosity(records):
    """asyncflow's own modules log to children of the asyncflow logger: set_verbosity governs them too."""
    af.logging.set_verbosity(af.logging.INFO)
    logging.getLogger("asyncflow.train").info("from the library")
    assert [r.getMessage() for r in records] == ["from the library"]
    records.clear()
    af.logging.set_verbosity(af.logging.ERROR)
    logging.getLogger("asyncflow.train").info("hidden")
    assert records == []


def test_log_every_n_first_n_and_if(records):
    af.logging.set_verbosity(af.logging.INFO)
    for i in range(7):
        af.logging.log_every_n(af.logging.INFO, "every %d", 3, i)
    assert [r.getMessage() for r in records] == ["every 0", "every 3", "every 6"]  # the 1st, (n+1)th, ...
    records.clear()
    for i in range(5):
        af.logging.log_first_n(af.logging.INFO, "first %d", 2, i)
    assert [r.getMessage() for r in records] == ["first 0", "first 1"]
    records.clear()
    af.logging.log_if(af.logging.INFO, "yes %s", True, "a")
    af.logging.log_if(af.logging.INFO, "no", False)
    assert [r.getMessage() for r in records] == ["yes a"]
    with pytest.raises(NotImplementedError):
        af.logging.flush()
