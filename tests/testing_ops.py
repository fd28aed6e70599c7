"""Ops that exist only for executor tests: kernels that really wait, signal, or fail.

Their types start with `_Test` so the coverage test of the op tables ignores them.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np

from asyncflow.ops.registry import ALL_TYPES, OPS, op
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.shapes import TensorShape

CANCELLED: list[str] = []  # names of _TestWait kernels that saw their cancellation
RELEASE: dict[str, threading.Event] = {}  # _TestBlock: what its kernel blocks its thread on, by key
ABORTS_LEFT: dict[str, int] = {}  # _TestAbort: how many more runs of that key fail with AbortedError


def _event(k, key: str) -> asyncio.Event:
    return k.resources.state("test-event", key, asyncio.Event)


if "_TestWait" not in OPS:

    @op("_TestWait", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, attrs={"key": "e"},
        shape=same_as_input, is_async=True, stateful=True)
    async def _test_wait(k, x):
        """Waits until a `_TestSignal` with the same key has run, then passes x through."""
        try:
            await _event(k, k.key).wait()
        except asyncio.CancelledError:
            CANCELLED.append(k.name)
            raise
        return x

    @op("_TestSignal", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, attrs={"key": "e"},
        shape=same_as_input, is_async=True, stateful=True)
    async def _test_signal(k, x):
        await asyncio.sleep(0)
        _event(k, k.key).set()
        return x

    @op("_TestFail", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, attrs={"message": "boom"},
        shape=same_as_input)
    async def _test_fail(k, x):
        raise ValueError(k.message)

    @op("_TestUndeclaredAwait", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, shape=same_as_input)
    async def _test_undeclared_await(k, x):
        await asyncio.sleep(0)
        return x

    @op("_TestCount", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, shape=same_as_input,
        stateful=True)
    async def _test_count(k, x):
        counter = k.resources.state("test-count", k.name, lambda: [0])
        counter[0] += 1
        return np.asarray(x)


if "_TestBlock" not in OPS:

    @op("_TestBlock", inputs="x: T", outputs="released: bool", types={"T": ALL_TYPES}, attrs={"key": "b"},
        shape=lambda b: TensorShape([]))
    async def _test_block(k, x):
        """A pure kernel that blocks its thread (as a long computation does) until RELEASE[key] is set, for
        at most 10 s; gives whether it was released. On the event loop's own thread nothing could release it."""
        return np.bool_(RELEASE.setdefault(k.key, threading.Event()).wait(10.0))


def block(x, key="b", name=None):
    return OPS["_TestBlock"](x, key=key, name=name)


if "_TestAbort" not in OPS:

    @op("_TestAbort", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, attrs={"key": "a"},
        shape=same_as_input, stateful=True)
    async def _test_abort(k, x):
        """Fails with AbortedError while ABORTS_LEFT[key] > 0 (a parameter server that restarted)."""
        from asyncflow import errors

        if ABORTS_LEFT.get(k.key, 0) > 0:
            ABORTS_LEFT[k.key] -= 1
            raise errors.AbortedError(None, None, "the parameter server restarted (test)")
        return x

    @_test_abort.gradient
    def _test_abort_grad(op, grad):
        return [grad]


def abort(x, key="a", name=None):
    return OPS["_TestAbort"](x, key=key, name=name)


def wait(x, key="e", name=None):
    return OPS["_TestWait"](x, key=key, name=name)


def signal(x, key="e", name=None):
    return OPS["_TestSignal"](x, key=key, name=name)


def fail(x, message="boom", name=None):
    return OPS["_TestFail"](x, message=message, name=name)


def undeclared_await(x, name=None):
    return OPS["_TestUndeclaredAwait"](x, name=name)
