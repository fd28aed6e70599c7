"""The stages of a running pipeline: one async iterator class per dataset kind, and `build`.

A stage's `next()` returns the next `Block` (rows of elements) or None at the end; `aclose()`
closes it and the stages it reads. Stages pass blocks, not single elements, so a slice of a
tensor, a vectorised map, a shuffle and a batch cost a few numpy calls per block rather than
Python per element; a stage that must look at elements one by one (a generator, a per-element
map) makes blocks of one row. `build(node, env)` returns a *maker*, a function giving a fresh
stage each call (`repeat` makes its input again per epoch; a cache keeps what it recorded in the
maker, across epochs).
"""

from __future__ import annotations

import asyncio
import glob
import os
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.data.runtime import Block, Env, check_element, pool, where
from asyncflow.shapes import TensorShape

CHUNK = 1024  # rows per block from a tensor source
Maker = Callable[[], Any]
BUILDERS: dict[str, Callable[[dict, Env], Maker]] = {}
SOURCES: dict[str, Any] = {}  # SourceDataset subclasses by source kind (registered by af.data.dataset)
_END = object()  # a generator's end, as a value (StopIteration does not cross a thread's future)


def builder(*kinds: str) -> Callable[[Callable[[dict, Env], Maker]], Callable[[dict, Env], Maker]]:
    def register(fn: Callable[[dict, Env], Maker]) -> Callable[[dict, Env], Maker]:
        for kind in kinds:
            BUILDERS[kind] = fn
        return fn
    return register


def build(node: dict, env: Env) -> Maker:
    return BUILDERS[node["op"]](node, env)


def _what(node: dict) -> str:
    return where(node["op"], node["name"])


def _specs(node: dict) -> tuple[list[Any], list[TensorShape]]:
    types = [dtypes.as_dtype(t) for t in node["types"]]
    shapes = [TensorShape(s) for s in node["shapes"]]
    return types, shapes


class Stage:
    inputs: tuple = ()

    async def next(self) -> Block | None:
        raise NotImplementedError

    async def aclose(self) -> None:
        for s in self.inputs:
            await s.aclose()


class Rows:
    """Reads a stage row-wise: `ensure()` the rows left in the current block, `take(k)` up to k of them."""

    def __init__(self, stage: Stage):
        self.stage = stage
        self.block: Block | None = None
        self.pos = 0
        self.ended = False

    async def ensure(self) -> int:
        while not self.ended and (self.block is None or self.pos >= self.block.n):
            self.block = await self.stage.next()
            self.pos = 0
            if self.block is None:
                self.ended = True
        return 0 if self.ended else self.block.n - self.pos

    def take_now(self, k: int) -> Block:
        b = self.block.slice(self.pos, self.pos + k)
        self.pos += b.n
        return b

    async def take(self, k: int) -> Block | None:
        n = await self.ensure()
        return self.take_now(min(k, n)) if n else None


# -- sources --------------------------------------------------------------------------------------------------
class _Blocks(Stage):
    def __init__(self, blocks: list[Block]):
        self._blocks = deque(blocks)

    async def next(self) -> Block | None:
        return self._blocks.popleft() if self._blocks else None


@builder("TensorSliceDataset")
def _slices(node: dict, env: Env) -> Maker:
    if node.get("sparse"):
        from asyncflow.data.runtime_batch import sparse_slices  # it builds on this module

        return sparse_slices(node, env)
    cols = [np.asarray(env.capture(i)) for i in node["captures"]]
    n = cols[0].shape[0] if cols and cols[0].ndim else 0
    for i, c in enumerate(cols):
        if c.ndim == 0 or c.shape[0] != n:
            raise errors.InvalidArgumentError(
                None, None, f"{_what(node)}: all components must have the same size in dimension 0; component 0 "
                            f"has shape {list(cols[0].shape)} and component {i} has shape {list(c.shape)}")
    return lambda: _Blocks([Block([c[s:s + CHUNK] for c in cols], min(CHUNK, n - s)) for s in range(0, n, CHUNK)])


@builder("TensorDataset")
def _tensors(node: dict, env: Env) -> Maker:
    values = [env.capture(i) for i in node["captures"]]
    return lambda: _Blocks([Block.of_element(values)])


class _Range(Stage):
    def __init__(self, start: int, stop: int, step: int):
        self.values = iter(range(start, stop, step))
        self.start, self.stop, self.step = start, stop, step

    async def next(self) -> Block | None:
        if self.step > 0 and self.start >= self.stop or self.step < 0 and self.start <= self.stop:
            return None
        end = self.start + self.step * CHUNK
        end = min(end, self.stop) if self.step > 0 else max(end, self.stop)
        col = np.arange(self.start, end, self.step, dtype=np.int64)
        self.start = end
        return Block([col], len(col))


@builder("RangeDataset")
def _range(node: dict, env: Env) -> Maker:
    start, stop, step = (int(env.capture(i)) for i in node["captures"])
    if step == 0:
        raise errors.InvalidArgumentError(None, None, f"{_what(node)}: step must be a non-zero integer.")
    return lambda: _Range(start, stop, step)


class _Generator(Stage):
    def __init__(self, node: dict, env: Env):
        self.node = node
        self.types, self.shapes = _specs(node)
        fn = env.program.callables[node["callable"]]
        args = [env.capture(i) for i in node["captures"]]
        self.it = iter(fn(*args))
        self.np_types = [t.as_numpy_dtype for t in self.types]
        self.threaded = env.threaded  # inside a parallel interleave: the generator runs in the thread pool

    async def next(self) -> Block | None:
        try:
            if self.threaded:
                value = await asyncio.get_running_loop().run_in_executor(pool(), next, self.it, _END)
                if value is _END:
                    return None
            else:
                value = next(self.it)
        except StopIteration:
            return None
        except Exception as exc:  # noqa: BLE001 - a user generator's failure is the pipeline's error
            raise errors.InvalidArgumentError(None, None, f"{_what(self.node)}: the generator raised "
                                                          f"{type(exc).__name__}: {exc}") from exc
        flat = _flat_values(value, len(self.types))
        if flat is None:
            raise errors.InvalidArgumentError(
                None, None, f"{_what(self.node)}: `generator` yielded an element that did not match the expected "
                            f"structure ({len(self.types)} components): {value!r}")
        try:
            arrays = [_as_array(v, t) for v, t in zip(flat, self.types)]
        except (TypeError, ValueError) as exc:
            raise errors.InvalidArgumentError(
                None, None, f"{_what(self.node)}: `generator` yielded an element that could not be converted to "
                            f"the expected type ({exc})") from None
        check_element(arrays, self.types, self.shapes, _what(self.node))
        return Block.of_element(arrays)


def _flat_values(value: Any, n: int) -> list[Any] | None:
    from asyncflow.data.structure import flatten

    flat = flatten(value) if n > 1 or isinstance(value, dict) else [value]
    if n > 1 and isinstance(value, list):
        flat = list(value)
    return flat if len(flat) == n else None


def _as_array(v: Any, t: Any) -> np.ndarray:
    if t.is_string:
        arr = np.asarray(v, dtype=object)
        return np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(arr) \
            if arr.size else arr
    arr = np.asarray(v)
    want = np.dtype(t.as_numpy_dtype)
    if arr.dtype != want:
        if arr.dtype.kind not in "biufc" or (arr.dtype.kind == "f" and want.kind in "iu"):
            raise TypeError(f"{arr.dtype} is not {t.name}")
        arr = arr.astype(want)
    return arr


@builder("GeneratorDataset")
def _generator(node: dict, env: Env) -> Maker:
    return lambda: _Generator(node, env)


class _Source(Stage):
    """A `SourceDataset` subclass's async generator of elements (or of `Block`s)."""

    def __init__(self, node: dict, env: Env):
        self.node = node
        self.types, self.shapes = _specs(node)
        cls = SOURCES.get(node["kind"])
        if cls is None:
            raise errors.UnimplementedError(None, None, f"{_what(node)}: no source '{node['kind']}' is registered "
                                                        f"in this process")
        inputs = {k: env.capture(i) for k, i in node["inputs"].items()}
        self.agen = cls.elements(inputs, node["params"])

    async def next(self) -> Block | None:
        try:
            item = await self.agen.__anext__()
        except StopAsyncIteration:
            return None
        if isinstance(item, Block):
            return item
        flat = _flat_values(item, len(self.types))
        if flat is None:
            raise errors.InvalidArgumentError(None, None, f"{_what(self.node)}: an element has the wrong number "
                                                          f"of components")
        arrays = [_as_array(v, t) for v, t in zip(flat, self.types)]
        check_element(arrays, self.types, self.shapes, _what(self.node))
        return Block.of_element(arrays)

    async def aclose(self) -> None:
        await self.agen.aclose()


@builder("SourceDataset")
def _source(node: dict, env: Env) -> Maker:
    return lambda: _Source(node, env)


@builder("MatchingFilesDataset")
def _list_files(node: dict, env: Env) -> Maker:
    patterns = np.asarray(env.capture(node["captures"][0]), dtype=object).ravel()
    names = sorted({f for p in patterns for f in glob.glob(os.fsdecode(p))})
    if not names:
        raise errors.InvalidArgumentError(None, None, f"{_what(node)}: No files matched pattern: "
                                                      f"{', '.join(os.fsdecode(p) for p in patterns)}")
    col = np.array([n.encode() for n in names] + [None], dtype=object)[:-1]
    shuffle = node["shuffle"]
    rng = np.random.default_rng(node["seed"]) if shuffle else None

    def make() -> Stage:
        order = rng.permutation(len(col)) if rng is not None else np.arange(len(col))
        return _Blocks([Block([col[order]], len(col))])
    return make

