"""The queue resources behind the queue ops: element stores, blocked attempts, and the hand-off.

Elements travel as *pieces*: `(arrays, start, stop)` stands for rows start..stop of `arrays`, one
array per component with the rows along dimension 0. An `enqueue_many` adds its batch as one
piece and a `dequeue_many` that finds its rows in one piece gives slices of it (read-only views),
so a batch crosses the queue without per-row work; a single `enqueue` is a piece of one row.

A store keeps the pieces in the order the queue's kind takes them out: arrival order (FIFOQueue,
PaddingFIFOQueue: whole pieces, split only when a dequeue takes part of one), random
(RandomShuffleQueue: one-row pieces, from a seeded generator), lowest priority first
(PriorityQueue: one-row pieces; equal priorities in arrival order).

An op that cannot complete at once becomes an *attempt* in one of two lines, enqueuers and
dequeuers, with an asyncio future its kernel awaits. `_flush` (TF's FlushUnlocked) serves the
head of each line as far as the store allows and repeats while anything moved, so blocked ops
complete in the order they arrived. A dequeue attempt takes rows as they come (a dequeue_many
larger than the capacity completes) and keeps them in `taken` until its kernel has resumed; a
kernel cancelled on the way (session close, step error, RunOptions timeout) withdraws its attempt
and puts the taken rows back in front, so no element is lost or duplicated.

Queue ops that can wait or wake others are declared `is_async` and `try_sync`: a step from a plain
thread first runs them there, and an op that completes at once (room to enqueue, rows to dequeue,
nobody waiting ahead) costs no hop to the session's event loop; one that would wait raises
`WouldWait` before changing anything, and the executor moves the step onto the loop, where it
waits on a future. A queue's state is therefore touched from two threads, always under its
`_mutex`, and a future is completed on its own loop (`_settle`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.ops.registry import WouldWait
from asyncflow.shapes import TensorShape

Piece = tuple  # (arrays, start, stop[, priority order]): rows start..stop of each component array


# -- stores: the order elements leave in -------------------------------------------------------------
class FifoStore:
    """Arrival order."""

    def __init__(self) -> None:
        self._pieces: deque[Piece] = deque()
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def put(self, piece: Piece) -> None:
        self._pieces.append(piece)
        self._rows += piece[2] - piece[1]

    def take(self, n: int) -> list[Piece]:
        """The next `n` rows (n <= len(self)), as pieces."""
        out = []
        pieces = self._pieces
        while n:
            arrays, start, stop = pieces[0][:3]
            if stop - start <= n:
                out.append(pieces.popleft())
                n -= stop - start
                self._rows -= stop - start
            else:
                out.append((arrays, start, start + n))
                pieces[0] = (arrays, start + n, stop)
                self._rows -= n
                n = 0
        return out

    def restore(self, pieces: list[Piece]) -> None:
        """Puts taken pieces back in front, in their order."""
        self._pieces.extendleft(reversed(pieces))
        self._rows += sum(p[2] - p[1] for p in pieces)


class ShuffleStore(FifoStore):
    """A uniformly random row leaves (RandomShuffleQueue)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._items: list[Piece] = []
        self._rng = rng

    def __len__(self) -> int:
        return len(self._items)

    def put(self, piece: Piece) -> None:
        arrays, start, stop = piece
        self._items.extend((arrays, i, i + 1) for i in range(start, stop))

    def take(self, n: int) -> list[Piece]:
        items, out = self._items, []
        for _ in range(n):
            i = int(self._rng.integers(len(items)))
            items[i], items[-1] = items[-1], items[i]
            out.append(items.pop())
        return out

    def restore(self, pieces: list[Piece]) -> None:
        self._items.extend(pieces)


class PriorityStore(FifoStore):
    """The lowest priority (component 0, int64) leaves first; equal priorities in arrival order."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Piece]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def put(self, piece: Piece) -> None:
        arrays, start, stop = piece
        for i in range(start, stop):
            seq = next(self._seq)
            heapq.heappush(self._heap, (int(arrays[0][i]), seq, (arrays, i, i + 1, seq)))

    def take(self, n: int) -> list[Piece]:
        return [heapq.heappop(self._heap)[2] for _ in range(n)]

    def restore(self, pieces: list[Piece]) -> None:
        for p in pieces:
            heapq.heappush(self._heap, (int(p[0][0][p[1]]), p[3], p))


# -- attempts -------------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Enqueue:
    arrays: tuple
    start: int
    stop: int
    future: asyncio.Future


@dataclass(eq=False)
class _Dequeue:
    n: int
    allow_small: bool
    future: asyncio.Future
    taken: list = field(default_factory=list)
    count: int = 0  # rows in `taken`


# -- the queue ---------------------------------------------------------------------------------------------
class Queue:
    """One queue resource; `kind` is TF's class name ("FIFOQueue", ...) used in messages."""

    def __init__(self, kind: str, name: str, component_types: list[dtypes.DType], shapes: list[TensorShape],
                 capacity: int, store: FifoStore, min_after_dequeue: int = 0, signature: Any = None):
        self.kind = kind
        self.name = name
        self.component_types = list(component_types)
        self.np_types = [np.dtype(d.as_numpy_dtype) for d in component_types]
        self.shapes = list(shapes) if shapes else None  # None: unspecified, any shape per element
        self.dims = None if self.shapes is None else [tuple(s.as_list()) for s in self.shapes]
        self.capacity = capacity if capacity >= 0 else sys.maxsize
        self.min_after_dequeue = min_after_dequeue
        self.store = store
        self.signature = signature
        self.closed = False
        self._enqueuers: deque[_Enqueue] = deque()
        self._dequeuers: deque[_Dequeue] = deque()
        self._padded = kind == "PaddingFIFOQueue"
        self._mutex = threading.RLock()  # the state: a plain thread's step and the loop's both touch it

    def __repr__(self) -> str:
        return f"<{self.kind} '{self.name}' size={len(self.store)}{' closed' if self.closed else ''}>"

    # -- checking what comes in ------------------------------------------------------------------------
    def _where(self) -> str:
        return f"{self.kind} '{self.name}'"

    def check_types(self, types: list[dtypes.DType]) -> None:
        if len(types) != len(self.component_types):
            raise ValueError(f"{self._where()}: wrong number of components in tuple. Expected "
                             f"{len(self.component_types)}, got {len(types)}")
        for i, (want, got) in enumerate(zip(self.component_types, types)):
            if want != got:
                raise ValueError(f"{self._where()}: type mismatch in tuple component {i}. Expected {want.name}, "
                                 f"got {dtypes.as_dtype(got).name}")

    def _check_shape(self, i: int, shape: tuple[int, ...], batched: bool) -> None:
        if self.dims is None:
            return
        want = self.dims[i]
        ok = len(shape) == len(want) and all(w is None or w == d for w, d in zip(want, shape)) \
            if self._padded else shape == want
        if not ok:
            what = "element shape" if batched else "shape"
            raise ValueError(f"{self._where()}: shape mismatch in tuple component {i}. Expected {list(want)} "
                             f"({what}), got {list(shape)}")

    def _array(self, value: Any, i: int) -> np.ndarray:
        np_type = self.np_types[i]
        return value if isinstance(value, np.ndarray) and value.dtype == np_type else np.asarray(value, np_type)

    def element_of(self, components: tuple) -> Piece:
        """The one-row piece an enqueue adds, its components checked against the queue's shapes."""
        arrays = []
        for i, value in enumerate(components):
            arr = self._array(value, i)
            self._check_shape(i, arr.shape, False)
            arrays.append(arr[np.newaxis])
        if self.kind == "PriorityQueue" and arrays[0].shape != (1,):
            raise ValueError(f"{self._where()}: the priority (component 0) must be a scalar, got shape "
                             f"{list(arrays[0].shape[1:])}")
        return tuple(arrays), 0, 1

    def elements_of_batch(self, components: tuple) -> Piece:
        """The piece an enqueue_many adds: the components' rows, checked, not copied."""
        arrays = []
        size = None
        for i, value in enumerate(components):
            arr = self._array(value, i)
            if arr.ndim == 0:
                raise ValueError(f"{self._where()}: enqueue_many needs components of rank >= 1 (a batch); "
                                 f"component {i} is a scalar")
            if size is None:
                size = arr.shape[0]
            elif arr.shape[0] != size:
                raise ValueError(f"{self._where()}: enqueue_many needs the same batch size in every component; "
                                 f"component 0 has {size} rows, component {i} has {arr.shape[0]}")
            self._check_shape(i, arr.shape[1:], True)
            arrays.append(arr)
        if self.kind == "PriorityQueue" and arrays[0].ndim != 1:
            raise ValueError(f"{self._where()}: the priorities (component 0) must be a vector, got shape "
                             f"{list(arrays[0].shape)}")
        return tuple(arrays), 0, size

    # -- what kernels await ------------------------------------------------------------------------------
    async def enqueue(self, piece: Piece) -> None:
        """Adds the rows of `piece` in order, waiting for room; CancelledError once the queue is closed.
        Outside an event loop: at once, or WouldWait (nothing changed) when it would have to wait."""
        if self.closed:
            raise errors.CancelledError(None, None, f"{self._where()} is closed.")
        arrays, start, stop = piece
        if start == stop:
            return
        loop = asyncio._get_running_loop()
        with self._mutex:
            if loop is None:
                if self._enqueuers or stop - start > self.capacity - len(self.store):
                    raise WouldWait(self._where())
                self.store.put((arrays, start, stop))
                self._flush()
                return
            attempt = _Enqueue(arrays, start, stop, loop.create_future())
            self._enqueuers.append(attempt)
            self._flush()
        try:
            await attempt.future
        except asyncio.CancelledError:
            with self._mutex:
                _remove(self._enqueuers, attempt)  # rows not yet in the queue are dropped, as TF's
                _retrieve(attempt.future)
                self._flush()
            raise

    async def dequeue(self, n: int, allow_small: bool) -> list[Piece]:
        """Takes `n` rows (fewer only when `allow_small` and the queue is closed), waiting for them.
        Outside an event loop: at once, or WouldWait (nothing changed) when it would have to wait."""
        loop = asyncio._get_running_loop()
        with self._mutex:
            if loop is None:
                floor = 0 if self.closed else self.min_after_dequeue
                if self._dequeuers or len(self.store) - floor < n or n <= 0:
                    raise WouldWait(self._where())  # the loop's path has every rule, errors included
                taken = self.store.take(n)
                self._flush()
                return taken
            attempt = _Dequeue(n, allow_small, loop.create_future())
            self._dequeuers.append(attempt)
            self._flush()
        try:
            await attempt.future
        except asyncio.CancelledError:
            with self._mutex:
                _remove(self._dequeuers, attempt)
                self._give_back(attempt)
                _retrieve(attempt.future)
                self._flush()
            raise
        with self._mutex:
            taken, attempt.taken = attempt.taken, []
        return taken

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self._mutex:
            self.closed = True
            if cancel_pending_enqueues:
                while self._enqueuers:
                    attempt = self._enqueuers.popleft()
                    _settle(attempt.future, errors.CancelledError(None, None, f"{self._where()} is closed."))
            self._flush()

    def abort(self, reason: str) -> None:
        """The queue is dropped (its container was reset): every waiting op fails with CancelledError."""
        with self._mutex:
            self.closed = True
            for line in (self._enqueuers, self._dequeuers):
                while line:
                    _settle(line.popleft().future, errors.CancelledError(None, None, f"{self._where()}: {reason}"))

    # -- the hand-off --------------------------------------------------------------------------------------
    def _give_back(self, attempt: _Dequeue) -> bool:
        if not attempt.taken:
            return False
        self.store.restore(attempt.taken)
        attempt.taken, attempt.count = [], 0
        return True

    def _flush(self) -> None:
        store, capacity = self.store, self.capacity
        enqueuers, dequeuers = self._enqueuers, self._dequeuers
        moved = True
        while moved:
            moved = False
            while enqueuers:
                attempt = enqueuers[0]
                if attempt.future.done():  # cancelled: its kernel is about to withdraw it
                    enqueuers.popleft()
                    continue
                k = min(attempt.stop - attempt.start, capacity - len(store))
                if k > 0:
                    store.put((attempt.arrays, attempt.start, attempt.start + k))
                    attempt.start += k
                    moved = True
                if attempt.start < attempt.stop:
                    break
                enqueuers.popleft()
                _settle(attempt.future)
            while dequeuers:
                attempt = dequeuers[0]
                if attempt.future.done():  # cancelled before it completed: what it took goes back now
                    dequeuers.popleft()
                    moved |= self._give_back(attempt)
                    continue
                took, finished = self._serve(attempt)
                moved |= took
                if not finished:
                    break
                dequeuers.popleft()
                moved = True

    def _serve(self, attempt: _Dequeue) -> tuple[bool, bool]:
        """Moves rows to the head dequeuer; (whether any moved, whether it is finished)."""
        store = self.store
        floor = 0 if self.closed else self.min_after_dequeue  # min_after_dequeue stops counting once closed
        k = min(attempt.n - attempt.count, len(store) - floor)
        if k > 0:
            attempt.taken.extend(store.take(k))
            attempt.count += k
        took = k > 0
        if attempt.count == attempt.n:
            _settle(attempt.future)
            return took, True
        if not self.closed or any(e.start < e.stop for e in self._enqueuers):
            return took, False  # blocked enqueues of a closed queue may still bring rows
        if attempt.allow_small and attempt.count:
            _settle(attempt.future)
            return took, True
        size = len(store) + attempt.count  # what the queue holds once this attempt gives its rows back
        self._give_back(attempt)
        _settle(attempt.future, errors.OutOfRangeError(
            None, None, f"{self._where()} is closed and has insufficient elements (requested {attempt.n}, "
                        f"current size {size})"))
        return True, True

    # -- building outputs ------------------------------------------------------------------------------------
    def one(self, pieces: list[Piece]) -> list[Any]:
        """The components of the one row in `pieces` (read-only views where they are arrays)."""
        arrays, i = pieces[0][0], pieces[0][1]
        out = []
        for arr in arrays:
            value = arr[i]
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            elif not isinstance(value, np.generic):  # an object array's element: a string scalar
                value = _object_scalar(value)
            out.append(value)
        return out

    def require_shapes(self, op_name: str) -> None:
        if self.dims is None:
            raise ValueError(f"{self._where()}: DequeueMany and DequeueUpTo require the components to have "
                             f"specified shapes (op '{op_name}')")

    def batch(self, pieces: list[Piece]) -> list[np.ndarray]:
        """The rows of `pieces` stacked along dimension 0 per component (padded for a PaddingFIFOQueue)."""
        return [self._rows(pieces, i, np_type, self.dims[i]) for i, np_type in enumerate(self.np_types)]

    def _rows(self, pieces: list[Piece], i: int, np_type: np.dtype, dims: tuple) -> np.ndarray:
        if not pieces:
            return np.empty((0,) + tuple(d or 0 for d in dims), np_type)
        parts = [p[0][i][p[1]:p[2]] for p in pieces]
        if self._padded and len({p.shape[1:] for p in parts}) > 1:
            shape = [max(p.shape[1 + j] for p in parts) for j in range(len(dims))]
            out = np.full([sum(len(p) for p in parts)] + shape, b"" if np_type.kind == "O" else 0, dtype=np_type)
            row = 0
            for p in parts:
                out[(slice(row, row + len(p)),) + tuple(slice(0, s) for s in p.shape[1:])] = p
                row += len(p)
            return out
        if len(parts) == 1:
            out = parts[0]  # a slice of the enqueued batch: no copy
            out.flags.writeable = False
            return out
        return np.concatenate(parts)


def _object_scalar(value: Any) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _settle(future: asyncio.Future, error: BaseException | None = None) -> None:
    """Completes a waiting attempt's future (with `error`, if given) on its own loop: directly from that loop's
    thread, through call_soon_threadsafe from a plain thread's step. One already done (cancelled) is left."""
    loop = future.get_loop()
    if asyncio._get_running_loop() is loop:
        _complete(future, error)
    else:
        loop.call_soon_threadsafe(_complete, future, error)


def _complete(future: asyncio.Future, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def _remove(line: deque, attempt: Any) -> None:
    try:
        line.remove(attempt)
    except ValueError:
        pass


def _retrieve(future: asyncio.Future) -> None:
    """Marks an exception nobody will await as seen (asyncio would log it otherwise)."""
    if future.done() and not future.cancelled():
        future.exception()
