"""Shared helpers for the af.data tests: run an iterator to its end."""

from __future__ import annotations

from typing import Any

import asyncflow as af


def drain(sess: Any, fetch: Any, feed: dict | None = None, limit: int = 10_000) -> list[Any]:
    """Every element `fetch` gives until OutOfRangeError."""
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(fetch, feed))
        except af.errors.OutOfRangeError:
            return out
    raise AssertionError(f"no end after {limit} elements")


def elements(ds: Any) -> list[Any]:
    """All elements of `ds` through a one-shot iterator in a fresh session."""
    n = ds.make_one_shot_iterator().get_next()
    with af.Session() as sess:
        return drain(sess, n)


def ints(values: list[Any]) -> list[Any]:
    return [v.tolist() if hasattr(v, "tolist") else v for v in values]
