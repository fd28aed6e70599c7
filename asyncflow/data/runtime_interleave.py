"""The stages of `flat_map` and `interleave`, sequential and parallel.

Both follow TF's interleave order: a *cycle* of `cycle_length` open inner iterators (the datasets
the function returns for successive input elements), `block_length` rows from each in turn; an
exhausted one is closed, the cycle moves on, and its slot takes the next input element the next
time the cycle comes round to it. flat_map is cycle_length 1.

With `num_parallel_calls` (TF's ParallelInterleaveDatasetV4), the same consumer walks the cycle in
the same order, but each inner iterator is read ahead by a fetch task the pipeline's `TaskOwner`
owns, into a bounded buffer (at least `block_length` rows, one block more at most), and the next
`num_parallel_calls` input elements are opened ahead too (TF's "future elements"), in input order,
so the slot that needs a new element takes the oldest opened one: the output is the sequential
interleave's, element for element (`deterministic`, TF's default). A semaphore lets at most
`num_parallel_calls` fetches run at once. With `deterministic=False`, a slot whose next rows are
not ready yet is passed over for the next slot in the cycle that has rows, as TF's sloppy mode.

Fetch tasks end with their inner iterator, or are cancelled and awaited when the stage is closed
(iterator re-initialised or closed), and with every other task of the pipeline when the session
or its container goes. Inner pipelines of a parallel interleave run their Python (a `py_func` map,
a `from_generator` generator) in the pipeline's thread pool (`Env.threaded`), so that the waits of
several inner iterators overlap; elsewhere that Python runs on the loop, where a thread hop per
call would cost more than it buys.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.data.runtime import AUTOTUNE, Block, Env
from asyncflow.data.runtime_stages import Maker, Rows, Stage, _what, build, builder


def _inner_maker(node: dict, env: Env, threaded: bool) -> Any:
    fn = env.function(node["fn"])
    program = env.program.inner[node["inner"]]

    def open_element(row: list[np.ndarray]) -> Stage:
        inner_env = Env(program, fn.call(row), env.owner, threaded=threaded or env.threaded)
        return program.make(inner_env)
    return open_element


class _Direct:
    """An inner iterator read on demand (the sequential interleave's slot)."""

    def __init__(self, stage: Stage):
        self.stage = stage
        self.rows = Rows(stage)

    def ready(self) -> bool:
        return True

    async def take(self, k: int) -> Block | None:
        return await self.rows.take(k)

    async def aclose(self) -> None:
        await self.stage.aclose()


class _Interleave(Stage):
    """The consumer's walk round the cycle (module docstring); `_open_next` gives a new inner iterator."""

    def __init__(self, node: dict, env: Env, make_input: Maker):
        self.input = make_input()
        self.rows = Rows(self.input)
        self.open_element = _inner_maker(node, env, threaded=False)
        self.cycle: list[Any] = [None] * max(1, node.get("cycle_length", 1))
        self.block_length = max(1, node.get("block_length", 1))
        self.index = 0
        self.in_block = 0
        self.input_ended = False
        self.n_open = 0

    def _advance(self) -> None:
        self.in_block = 0
        self.index = (self.index + 1) % len(self.cycle)

    async def _open_next(self) -> Any:
        """The inner iterator of the next input element, or None once the input has ended."""
        row = await self.rows.take(1)
        if row is None:
            self.input_ended = True
            return None
        return _Direct(self.open_element(row.row(0)))

    def _more_to_open(self) -> bool:
        return not self.input_ended

    async def _pass_over(self) -> None:
        """Where the non-deterministic mode skips a slot that is not ready (nothing to do here)."""

    async def next(self) -> Block | None:
        while self._more_to_open() or self.n_open:
            await self._pass_over()
            current = self.cycle[self.index]
            if current is not None:
                block = await current.take(self.block_length - self.in_block)
                if block is not None:
                    self.in_block += block.n
                    if self.in_block >= self.block_length:
                        self._advance()
                    return block
                await current.aclose()
                self.cycle[self.index] = None
                self.n_open -= 1
                self._advance()
            elif self._more_to_open():
                opened = await self._open_next()
                if opened is not None:
                    self.cycle[self.index] = opened
                    self.n_open += 1
            else:
                self._advance()
        return None

    async def aclose(self) -> None:
        for slot in self.cycle:
            if slot is not None:
                await slot.aclose()
        self.cycle = [None] * len(self.cycle)
        self.n_open = 0
        await self.input.aclose()


class _Fetched:
    """An inner iterator read ahead by a task the pipeline owns, into a bounded buffer of blocks."""

    def __init__(self, stage: Stage, owner: Any, limit: int, gate: asyncio.Semaphore, name: str,
                 notify: asyncio.Event):
        self.stage = stage
        self.notify = notify  # the stage's "some slot has something" event (the non-deterministic mode's)
        self.limit = limit  # fetch while fewer rows than this are buffered
        self.items: deque[Any] = deque()  # Blocks and errors (one row each), then None at the end
        self.buffered = 0
        self.pos = 0  # rows already taken from items[0]
        self.ready_event = asyncio.Event()
        self.room = asyncio.Event()
        self.task = owner.spawn(self._fetch(gate), name)

    async def _fetch(self, gate: asyncio.Semaphore) -> None:
        while True:
            while self.buffered >= self.limit:
                self.room.clear()
                await self.room.wait()
            try:
                async with gate:
                    item = await self.stage.next()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - the consumer raises it in its place, as one row
                item = exc
            self.items.append(item)
            self.ready_event.set()
            self.notify.set()
            if item is None:
                return
            self.buffered += 1 if isinstance(item, BaseException) else item.n

    def ready(self) -> bool:
        return bool(self.items)

    async def take(self, k: int) -> Block | None:
        while not self.items:
            self.ready_event.clear()
            await self.ready_event.wait()
        item = self.items[0]
        if item is None:
            return None
        if isinstance(item, BaseException):
            self.items.popleft()
            self.buffered -= 1
            self.room.set()
            raise item  # an error is one element, as in TF: the inner iterator goes on after it
        block = item.slice(self.pos, self.pos + k)
        self.pos += block.n
        if self.pos >= item.n:
            self.items.popleft()
            self.pos = 0
        self.buffered -= block.n
        self.room.set()
        return block

    async def aclose(self) -> None:
        if not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.stage.aclose()


class _ParallelInterleave(_Interleave):
    """The interleave with inner iterators fetched ahead concurrently (module docstring)."""

    def __init__(self, node: dict, env: Env, make_input: Maker, parallel: int):
        super().__init__(node, env, make_input)
        self.open_element = _inner_maker(node, env, threaded=True)
        self.owner = env.owner
        self.name = node["name"]
        self.parallel = parallel
        self.deterministic = node.get("deterministic", True)
        self.gate = asyncio.Semaphore(parallel)
        self.any_ready = asyncio.Event()
        self.future: deque[_Fetched] = deque()  # input elements opened ahead, in input order
        self.opened = 0

    async def _fill_future(self) -> None:
        while len(self.future) < self.parallel and not self.input_ended:
            row = await self.rows.take(1)
            if row is None:
                self.input_ended = True
                return
            stage = self.open_element(row.row(0))
            self.future.append(_Fetched(stage, self.owner, self.block_length, self.gate,
                                        f"interleave:{self.name}:{self.opened}", self.any_ready))
            self.opened += 1

    async def _open_next(self) -> Any:
        await self._fill_future()
        if not self.future:
            return None
        opened = self.future.popleft()
        await self._fill_future()
        return opened

    def _more_to_open(self) -> bool:
        return not self.input_ended or bool(self.future)

    async def _pass_over(self) -> None:
        """Non-deterministic: move to the first slot, from the current one round the cycle, that has rows
        (or its end) ready, opening elements into empty slots; wait for one when none has."""
        if self.deterministic:
            return
        n = len(self.cycle)
        while True:
            self.any_ready.clear()  # before the scan: what becomes ready during it is not missed
            for step in range(n):
                j = (self.index + step) % n
                if self.cycle[j] is None and self._more_to_open():
                    opened = await self._open_next()
                    if opened is not None:
                        self.cycle[j] = opened
                        self.n_open += 1
                if self.cycle[j] is not None and self.cycle[j].ready():
                    if j != self.index:
                        self.index, self.in_block = j, 0
                    return
            if not self.n_open:
                return
            await self.any_ready.wait()

    async def aclose(self) -> None:
        while self.future:
            await self.future.popleft().aclose()
        await super().aclose()


def _parallelism(node: dict) -> int | None:
    """num_parallel_calls checked as TF's kernel checks it; None for the sequential ops."""
    if node["op"] not in ("ParallelInterleaveDatasetV4", "ParallelInterleaveDatasetV2"):
        return None
    p, cycle = node.get("num_parallel_calls", 1), node.get("cycle_length", 1)
    if p == AUTOTUNE:
        return cycle
    if p <= 0:
        raise errors.InvalidArgumentError(None, None, f"{_what(node)}: num_parallel_calls must be greater than zero.")
    if p > cycle and not node.get("cycle_autotune"):
        raise errors.InvalidArgumentError(
            None, None, f"{_what(node)}: If `cycle_length` is set to a fixed value, `num_parallel_calls` must be "
                        f"either `tf.data.AUTOTUNE` or a value less than or equal to `cycle_length`. However, "
                        f"`num_parallel_calls` is {p} and `cycle_length` is {cycle}")
    return min(p, cycle)


@builder("FlatMapDataset", "InterleaveDataset", "ParallelInterleaveDatasetV4", "ParallelInterleaveDatasetV2")
def _interleave(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    parallel = _parallelism(node)
    if parallel is None:
        return lambda: _Interleave(node, env, make_input)
    return lambda: _ParallelInterleave(node, env, make_input, parallel)
