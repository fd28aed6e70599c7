"""The transformation stages: map, filter, shuffle, repeat, take/skip, zip, concatenate, prefetch, cache.

Each reads its input stage(s) block by block (see runtime_stages.py). The ones that wait on
something other than their input: `prefetch`, whose producer task (owned by the pipeline's
`TaskOwner`) fills a bounded buffer while the consumer (the step's `IteratorGetNext`) takes from
it, so input work overlaps the training step's awaits; and a `map` of a Python-holding function
with `num_parallel_calls`, which keeps that many calls in flight in the data thread pool and
hands the results on in input order (in a parallel interleave's inner pipelines, `Env.threaded`, even
one call runs there, so that inner iterators' calls overlap). The stages that regroup rows (batch,
padded_batch, unbatch, window) are in runtime_batch.py; flat_map and interleave in runtime_interleave.py.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.data import runtime_batch, runtime_cache, runtime_interleave
from asyncflow.data.runtime import AUTOTUNE, THREADED_AUTOTUNE, Block, Env, ShapeCheck, check_element, pool
from asyncflow.data.runtime_stages import Maker, Rows, Stage, _specs, _what, build, builder

__all__ = ["build", "runtime_batch", "runtime_interleave"]  # imported for the stages they register


# -- map and filter -----------------------------------------------------------------------------------------
class _Map(Stage):
    def __init__(self, node: dict, env: Env, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.rows = Rows(self.input)
        self.node = node
        self.fn = env.function(node["fn"])
        self.types, self.shapes = _specs(node)
        self.check_shapes = ShapeCheck(self.types, self.shapes, _what(node))
        p = node.get("num_parallel_calls") or 1
        self.parallel = max(1, (THREADED_AUTOTUNE if p == AUTOTUNE else p) if self.fn.threaded else 1)
        self.offload = self.fn.threaded and (self.parallel > 1 or env.threaded)
        self.pending: deque = deque()
        self.out: deque[Block | errors.OpError] = deque()  # an element's error is raised in its place

    def _check(self, outs: list[np.ndarray], batched: bool) -> list[np.ndarray]:
        if len(outs) != len(self.types):
            raise errors.InvalidArgumentError(None, None, f"{_what(self.node)}: the function returned {len(outs)} "
                                                          f"values, expected {len(self.types)}")
        self.check_shapes([o[0] for o in outs] if batched else outs)
        return outs

    async def next(self) -> Block | None:
        if self.fn.vectorised:
            block = await self.input.next()
            if block is None:
                return None
            outs = self._check(self.fn.call_block(block), True) if block.n else []
            return Block(outs, block.n)
        while not self.out:
            if self.offload:
                if not await self._next_parallel():
                    return None
                continue
            n = await self.rows.ensure()
            if not n:
                return None
            self.out.extend(self._rows(self.rows.take_now(n)))
        item = self.out.popleft()
        if isinstance(item, errors.OpError):
            raise item  # one element failed, as in TF: the next call goes on with the rows after it
        return item

    def _rows(self, block: Block) -> list[Block | errors.OpError]:
        """The function on each row of `block`, as blocks (one per run of rows whose outputs share shapes),
        a failed row's error in its place."""
        outs: list[Any] = []
        for i in range(block.n):
            try:
                outs.append(self._check(self.fn.call(block.row(i)), False))
            except errors.OpError as exc:
                outs.append(exc)
        runs: list[Block | errors.OpError] = []
        start = 0
        for i, o in enumerate(outs + [None]):
            if o is None or isinstance(o, errors.OpError):
                runs.extend(_stacked(outs[start:i]))
                if o is not None:
                    runs.append(o)
                start = i + 1
        return runs

    async def _next_parallel(self) -> bool:
        """Keeps `parallel` calls in flight in the thread pool, a few rows each (fewer hand-offs), and
        waits for the oldest; False at the end."""
        loop = asyncio.get_running_loop()
        while len(self.pending) < self.parallel:
            n = await self.rows.ensure()
            if not n:
                break
            chunk = self.rows.take_now(max(1, min(16, n // self.parallel)))
            self.pending.append(loop.run_in_executor(pool(), self._rows, chunk))
        if not self.pending:
            return False
        self.out.extend(await self.pending.popleft())
        return True

    async def aclose(self) -> None:
        for f in self.pending:
            f.cancel()
        self.pending.clear()
        await super().aclose()


def _stacked(outs: list[list[np.ndarray]]) -> list[Block]:
    if not outs:
        return []
    if len(outs) > 1 and all(len({o[i].shape for o in outs}) == 1 for i in range(len(outs[0]))):
        return [Block([np.stack([o[i] for o in outs]) for i in range(len(outs[0]))], len(outs))]
    return [Block.of_element(o) for o in outs]


@builder("MapDataset", "ParallelMapDataset")
def _map(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Map(node, env, make_input)


class _Filter(Stage):
    def __init__(self, node: dict, env: Env, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.node = node
        self.fn = env.function(node["fn"])

    def _keep(self, value: Any) -> bool:
        v = np.asarray(value)
        if v.shape != () or v.dtype != np.bool_:
            raise errors.InvalidArgumentError(None, None, f"{_what(self.node)}: the predicate must return a "
                                                          f"scalar bool, got {v.dtype} {list(v.shape)}")
        return bool(v)

    async def next(self) -> Block | None:
        while True:
            block = await self.input.next()
            if block is None:
                return None
            if self.fn.vectorised:
                mask = np.asarray(self.fn.call_block(block)[0], dtype=bool).reshape(block.n)
            else:
                mask = np.array([self._keep(self.fn.call(block.row(i))[0]) for i in range(block.n)], dtype=bool)
            k = int(mask.sum())
            if k == block.n:
                return block
            if k:
                return Block([c[mask] for c in block.cols], k)


@builder("FilterDataset")
def _filter(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Filter(node, env, make_input)


# -- order: shuffle, repeat, take, skip, zip, concatenate ---------------------------------------------------
class _Shuffle(Stage):
    """TF's shuffle buffer: fill `size` rows, then each output is a uniformly random buffered row, whose slot
    takes the next input row; at the end of the input the rest leave in random order."""

    def __init__(self, size: int, rng: np.random.Generator, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.rows = Rows(self.input)
        self.size = size
        self.rng = rng
        self.buf: list[np.ndarray] | None = None
        self.filled = 0
        self.listed: list[Block] | None = None  # rows of varying shapes: one Block per row

    def _fits(self, block: Block) -> bool:
        return all(c.shape[1:] == b.shape[1:] and c.dtype == b.dtype for c, b in zip(block.cols, self.buf))

    def _to_list(self) -> None:
        self.listed = [Block([c[i:i + 1] for c in self.buf], 1) for i in range(self.filled)]
        self.buf = None

    def _append(self, block: Block) -> None:
        if self.listed is not None:
            self.listed.extend(block.slice(i, i + 1) for i in range(block.n))
            return
        if self.buf is None:
            cap = min(self.size, max(block.n, 16))
            self.buf = [np.empty((cap,) + c.shape[1:], c.dtype) for c in block.cols]
        elif not self._fits(block):
            self._to_list()
            self._append(block)
            return
        need = self.filled + block.n
        if need > len(self.buf[0]):
            cap = min(self.size, max(need, 2 * len(self.buf[0])))
            self.buf = [np.concatenate([b[:self.filled], np.empty((cap - self.filled,) + b.shape[1:], b.dtype)])
                        for b in self.buf]
        for b, c in zip(self.buf, block.cols):
            b[self.filled:need] = c
        self.filled = need

    def _count(self) -> int:
        return len(self.listed) if self.listed is not None else self.filled

    async def next(self) -> Block | None:
        while self._count() < self.size:
            block = await self.rows.take(self.size - self._count())
            if block is None:
                break
            self._append(block)
        n = await self.rows.ensure() if self._count() >= self.size else 0
        if n and self.listed is None and not self._fits(self.rows.block):
            self._to_list()
        if self.listed is not None:
            return self._next_listed(n)
        if n:
            return self._exchange(self.rows.take_now(n))
        if not self.filled:
            return None
        order = self.rng.permutation(self.filled)  # the input has ended: the rest in random order
        out = Block([b[:self.filled][order] for b in self.buf], self.filled)
        self.filled = 0
        return out

    def _exchange(self, block: Block) -> Block:
        k = block.n
        picks = self.rng.integers(0, self.filled, size=k).tolist()
        src = np.empty(k, np.int64)
        from_in = np.zeros(k, bool)
        last: dict[int, int] = {}
        for t, j in enumerate(picks):
            p = last.get(j)
            if p is None:
                src[t] = j
            else:
                src[t] = p
                from_in[t] = True
            last[j] = t
        slots, rows = list(last.keys()), list(last.values())
        cols = []
        for b, c in zip(self.buf, block.cols):
            out = b[src] if not from_in.any() else np.where(
                from_in.reshape((k,) + (1,) * (b.ndim - 1)), c[np.where(from_in, src, 0)], b[np.where(from_in, 0, src)])
            b[slots] = c[rows]
            cols.append(out)
        return Block(cols, k)

    def _next_listed(self, n: int) -> Block | None:
        if n:
            j = int(self.rng.integers(0, len(self.listed)))
            out = self.listed[j]
            self.listed[j] = self.rows.take_now(1)
            return out
        if not self.listed:
            return None
        j = int(self.rng.integers(0, len(self.listed)))
        self.listed[j], self.listed[-1] = self.listed[-1], self.listed[j]
        return self.listed.pop()


@builder("ShuffleDataset")
def _shuffle(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    size = int(env.capture(node["captures"][0]))
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, f"{_what(node)}: buffer_size must be greater than zero.")
    seed, seed2 = node["seed"], node["seed2"]
    seeds = np.random.default_rng([seed, seed2] if seed is not None else None)
    fixed = int(seeds.integers(2**62))

    def make() -> Stage:
        epoch_seed = int(seeds.integers(2**62)) if node["reshuffle_each_iteration"] else fixed
        return _Shuffle(size, np.random.default_rng(epoch_seed), make_input)
    return make


class _Repeat(Stage):
    def __init__(self, count: int, make_input: Maker):
        self.make_input = make_input
        self.count = count
        self.epoch = 0
        self.current = make_input() if count != 0 else None
        self.produced = False

    async def next(self) -> Block | None:
        while self.current is not None:
            block = await self.current.next()
            if block is not None:
                self.produced = True
                return block
            await self.current.aclose()
            self.epoch += 1
            if (self.count >= 0 and self.epoch >= self.count) or not self.produced:
                self.current = None  # an empty input repeated forever ends, as TF's
            else:
                self.current = self.make_input()
        return None

    async def aclose(self) -> None:
        if self.current is not None:
            await self.current.aclose()


@builder("RepeatDataset")
def _repeat(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    count = int(env.capture(node["captures"][0]))
    return lambda: _Repeat(count, make_input)


class _TakeSkip(Stage):
    def __init__(self, count: int, skip: bool, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.rows = Rows(self.input)
        self.left = count
        self.skip = skip

    async def next(self) -> Block | None:
        if self.skip:
            while self.left:
                n = await self.rows.ensure()
                if not n:
                    return None
                self.rows.take_now(n if self.left < 0 else min(n, self.left))
                self.left = self.left - min(n, self.left) if self.left > 0 else -1
                if self.left < 0 and not n:
                    break
            return await self.rows.take(1 << 62)
        if self.left == 0:
            return None
        block = await self.rows.take(self.left if self.left > 0 else 1 << 62)
        if block is not None and self.left > 0:
            self.left -= block.n
        return block


@builder("TakeDataset", "SkipDataset")
def _take_skip(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    count = int(env.capture(node["captures"][0]))
    return lambda: _TakeSkip(count, node["op"] == "SkipDataset", make_input)


class _Zip(Stage):
    def __init__(self, makers: list[Maker]):
        self.inputs = tuple(m() for m in makers)
        self.readers = [Rows(s) for s in self.inputs]

    async def next(self) -> Block | None:
        sizes = [await r.ensure() for r in self.readers]
        k = min(sizes)
        if not k:
            return None
        blocks = [r.take_now(k) for r in self.readers]
        return Block([c for b in blocks for c in b.cols], k)


@builder("ZipDataset")
def _zip(node: dict, env: Env) -> Maker:
    makers = [build(n, env) for n in node["inputs"]]
    return lambda: _Zip(makers)


class _Concatenate(Stage):
    def __init__(self, makers: list[Maker]):
        self.makers = deque(makers)
        self.current = self.makers.popleft()()

    async def next(self) -> Block | None:
        while self.current is not None:
            block = await self.current.next()
            if block is not None:
                return block
            await self.current.aclose()
            self.current = self.makers.popleft()() if self.makers else None
        return None

    async def aclose(self) -> None:
        if self.current is not None:
            await self.current.aclose()


@builder("ConcatenateDataset")
def _concatenate(node: dict, env: Env) -> Maker:
    makers = [build(n, env) for n in node["inputs"]]
    return lambda: _Concatenate(makers)


# -- prefetch and cache ---------------------------------------------------------------------------------------
class _Prefetch(Stage):
    """A bounded buffer of rows filled by a producer task the pipeline owns (module docstring)."""

    def __init__(self, node: dict, env: Env, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        size = int(env.capture(node["captures"][0]))
        self.size = 4 if size == AUTOTUNE else max(size, 1)
        self.owner = env.owner
        self.name = node["name"]
        self.items: deque[Any] = deque()
        self.rows = 0
        self.task: asyncio.Task | None = None
        self.ready = asyncio.Event()
        self.room = asyncio.Event()

    async def _produce(self) -> None:
        while True:
            while self.rows >= self.size:
                self.room.clear()
                await self.room.wait()
            try:
                block = await self.input.next()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer in its place, as one row
                self.items.append(exc)
                self.ready.set()
                self.rows += 1
                continue
            self.items.append(block)
            self.ready.set()
            if block is None:
                return
            self.rows += block.n

    async def next(self) -> Block | None:
        if self.task is None:
            self.task = self.owner.spawn(self._produce(), f"prefetch:{self.name}")
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        item = self.items[0]
        if item is None:
            return None
        self.items.popleft()
        self.rows -= 1 if isinstance(item, BaseException) else item.n
        self.room.set()
        if isinstance(item, BaseException):
            raise item  # the producer goes on with the input: an error is one element, as in TF
        return item

    async def aclose(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.input.aclose()


@builder("PrefetchDataset")
def _prefetch(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Prefetch(node, env, make_input)


class _Recording(Stage):
    def __init__(self, make_input: Maker, done: Any):
        self.input = make_input()
        self.inputs = (self.input,)
        self.blocks: list[Block] = []
        self.done = done

    async def next(self) -> Block | None:
        block = await self.input.next()
        if block is None:
            self.done(self.blocks)
        else:
            self.blocks.append(block)
        return block


class _Replay(Stage):
    def __init__(self, blocks: list[Block]):
        self.blocks = iter(blocks)

    async def next(self) -> Block | None:
        return next(self.blocks, None)


@builder("CacheDataset")
def _cache(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    filename = env.capture(node["captures"][0])
    filename = filename.item() if isinstance(filename, np.ndarray) else filename
    filename = filename.decode() if isinstance(filename, bytes) else str(filename)
    types, shapes = _specs(node)
    kept: list[list[Block]] = []

    def finished(blocks: list[Block]) -> None:
        if not kept:
            kept.append(blocks)
            if filename:
                runtime_cache.write(filename, blocks, types)

    def make() -> Stage:
        if kept:
            return _Replay(kept[0])
        if filename and runtime_cache.exists(filename):
            blocks = runtime_cache.read(filename, types)
            for b in blocks:
                check_element(b.row(0) if b.n else [], types, shapes, _what(node))
            kept.append(blocks)
            return _Replay(blocks)
        return _Recording(make_input, finished)
    return make
