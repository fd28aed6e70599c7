"""The executor: runs a `Plan` (asyncflow/exec/plan.py, compiled once per partition) once per step.

Step state (a `Step`): the value array, a copy of the pending counts, the ready deque, the
count of nodes still to finish, the tasks of suspended kernels, the first error, and the
step's rendezvous (what `_Send`/`_Recv` kernels of a partitioned graph talk to; None otherwise).

Scheduling policy: pop the oldest ready node (FIFO; `shuffle_seed` pops a random one instead,
for tests that hunt ordering bugs), call its kernel and drive the coroutine eagerly with
`send(None)`. A kernel that returns without suspending costs a call; one that suspends (a
queue, a Recv) is wrapped in an asyncio Task owned by the step, and its completion re-enters
`_drain`. A step with no suspended kernel never touches the event loop. The first error wins:
it cancels the step's tasks and reaches the caller with the op's name; cancellations that
follow never replace it. One scheduler lock (the session's) is held while kernels run, so
concurrent steps from several threads never run kernels at the same time.

On an event loop, a kernel with large inputs (at least `OFFLOAD_BYTES` together) that is pure
(not stateful, not async, reads no variable, takes no step) runs in a worker thread instead
(`offload[i]` marks the nodes that may: their static shapes are unknown or large), so that one
long matmul does not stop the loop: a worker keeps answering heartbeats and transfers while it
computes, and independent heavy kernels overlap (numpy releases the GIL). Its completion
re-enters `_drain` like a suspended kernel's.

Tracing (`RunOptions(trace_level=FULL_TRACE)`): `Step.start_trace`, before the step runs, swaps
the calls the loop makes for timed wrappers (exec/step_stats.py); the loop itself is the same, so
untraced steps pay nothing for it.

`run_reference` is the plain path (one node at a time, in topological order) that the tests
compare the real executor against.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.exec.plan import (  # noqa: F401 - the plan's names, re-exported where callers import them
    FORWARD_MIN_BYTES,
    OFFLOAD_BYTES,
    Plan,
    compile_plan,
    control_inputs,
    is_back_edge,
    needed_ops,
    topological,
)
from asyncflow.exec.step_stats import traced_calls
from asyncflow.graph import Operation
from asyncflow.ops.registry import WouldWait


def _pool() -> ThreadPoolExecutor:
    from asyncflow.exec.threads import offload_pool  # sized against BLAS's threads (exec/threads.py)

    return offload_pool()


def _complete(coro: Any) -> Any:
    """Runs a pure kernel's coroutine to its end in a worker thread (it never awaits)."""
    with np.errstate(all="ignore"):
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
    coro.close()
    raise RuntimeError("a kernel offloaded to a worker thread suspended; only pure kernels are offloaded")


def op_error(op: Operation, exc: BaseException) -> errors.OpError:
    """Maps a kernel's exception onto TF's error classes, naming the op."""
    where = f"\n\t [[node {op.name} ({op.type})]]"
    if isinstance(exc, errors.OpError):
        if exc.op is None:
            exc._op = op
        if "[[node " not in exc._message:
            exc._message += where
            exc.args = (exc._message,)
        return exc
    if isinstance(exc, (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, FloatingPointError)):
        cls = errors.InvalidArgumentError
    elif isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(exc, (asyncio.CancelledError,)):
        cls = errors.CancelledError
    else:
        cls = errors.InternalError
    detail = str(exc) or type(exc).__name__
    prefix = f"{op.type} '{op.name}': "
    err = cls(None, op, f"{'' if detail.startswith(prefix) else prefix}{detail}{where}")
    err.__cause__ = exc
    return err


def _nbytes(args: tuple) -> int:
    return sum(getattr(a, "nbytes", 0) for a in args)


class _Resumed(Coroutine):
    """A kernel coroutine that already suspended once, handed to an asyncio Task to finish.

    The Task's first step gets the future the kernel is waiting on; everything after (results,
    and a cancellation even before the Task first ran) goes straight into the kernel coroutine,
    so a kernel always sees its CancelledError and can clean up (a queue drops its waiter).
    """

    __slots__ = ("_coro", "_first", "_started")

    def __init__(self, coro: Any, yielded: Any):
        self._coro = coro
        self._first = yielded
        self._started = False

    def send(self, value: Any) -> Any:
        if not self._started:
            self._started = True
            return self._first
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._started = True
        return self._coro.throw(val if val is not None else typ)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Any:
        return self

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        return self.send(None)


class Step:
    """One run of a Plan: values, pending counts, ready queue, suspended kernels, first error."""

    def __init__(
        self,
        plan: Plan,
        feed_values: Sequence[Any],
        lock: threading.Lock,
        step_id: int = 0,
        shuffle_seed: int | None = None,
        rendezvous: Any = None,
    ):
        self.plan = plan
        self.step_id = step_id
        self.rendezvous = rendezvous  # where _Send/_Recv kernels exchange tensors (exec.rendezvous)
        self.values: list[Any] = plan.preset.copy()
        for slot, v in zip(plan.feed_slots, feed_values):
            self.values[slot] = v
        self.pending = plan.pending0.copy()
        self.ready = deque(plan.initial_ready)
        self.remaining = plan.n_to_run
        self.error: BaseException | None = None
        self.tasks: set[asyncio.Task] = set()
        self._lock = lock
        self._done: asyncio.Future | None = None
        self._rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
        self.trace: list[tuple] | None = None  # a traced step's records (exec/step_stats.py)
        self._calls = plan.calls  # what the loop calls: the plan's kernels, or timed ones in a traced step
        self._direct = plan.direct  # plain calls of kernels that never wait (none in a traced step)
        self.reads = plan.reads0.copy()  # reads left per slot; a value is dropped at its last
        self.wants_loop = False  # a kernel tried outside a loop would have waited (run_sync_first)
        # the straight-line path's position (-1: the scheduler runs this step); a step that may offload a
        # kernel to a thread takes the scheduler
        self._pc = 0 if plan.program is not None else -1
        self._slice_end = 0.0  # on an event loop: when _drain hands the loop back

    # -- the synchronous core ------------------------------------------------------------------
    def _drain(self) -> None:
        """Runs ready nodes until none is left; suspended kernels become tasks.

        Kernels compute as TF does, IEEE results without warnings (1/0 is inf, log(0) is -inf),
        so numpy's floating-point warnings are off while they run, set once here, not per kernel.
        """
        with np.errstate(all="ignore"):
            self._drain_ready()

    # On an event loop, a long run of kernels hands the loop back this often (heartbeats, transfers).
    YIELD_EVERY_S = 0.02

    def _yield_to_loop(self) -> bool:
        """On an event loop, past the time slice: resume later (call_soon) and return True."""
        if self._done is None or time.perf_counter() < self._slice_end:
            return False
        asyncio.get_running_loop().call_soon(self._resume_drain)
        return True

    def _resume_drain(self) -> None:
        with self._lock:
            if self.error is None:
                self._slice_end = time.perf_counter() + self.YIELD_EVERY_S
                self._drain()

    def _drain_ready(self) -> None:
        if self._pc >= 0:
            self._run_program()
            return
        plan = self.plan
        calls, direct, arity, getters = self._calls, self._direct, plan.arity, plan.getters
        out_base, n_out, consumers = plan.out_base, plan.n_out, plan.consumers
        drops, donor, reads, try_sync = plan.drops, plan.donor, self.reads, plan.try_sync
        values, pending, ready = self.values, self.pending, self.ready
        pop = ready.popleft if self._rng is None else self._pop_random
        offload = plan.offload if self._done is not None else None
        done = 0
        while ready:
            if not done & 63 and done and self._yield_to_loop():
                break
            i = pop()
            try:
                kind = arity[i]
                if kind == 1:
                    args = (values[getters[i]],)
                elif kind == 2:
                    args = getters[i](values)
                elif kind == 0:
                    args = ()
                else:
                    args = self._general_args(i)
                f = direct[i]
                if offload is not None and offload[i] and _nbytes(args) >= OFFLOAD_BYTES:
                    self._drop(drops[i])
                    d = donor[i]
                    given = self._donated(args, d) if d >= 0 else None
                    self._offload(i, calls[i](*args) if given is None else calls[i](*args, out=given))
                    continue
                if f is None:  # a kernel that may wait (or a traced step's timed call): its coroutine
                    retry = try_sync[i]  # may raise WouldWait: its reads count only once it ran
                    if not retry:
                        self._drop(drops[i])
                    d = donor[i]
                    given = self._donated(args, d) if d >= 0 else None
                    coro = calls[i](*args) if given is None else calls[i](*args, out=given)
                    given = None
                    try:
                        yielded = coro.send(None)
                    except StopIteration as stop:
                        out = stop.value
                    except WouldWait:  # outside a loop (a step from a plain thread): move onto the loop
                        coro.close()
                        ready.appendleft(i)
                        self.wants_loop = True
                        break
                    else:
                        if not self._suspend(i, coro, yielded):
                            self.remaining -= done
                            return
                        if retry:
                            self._drop(drops[i])
                        continue
                    if retry:
                        self._drop(drops[i])
                else:
                    for slot in drops[i]:  # before the call: a value read last here may be forwarded
                        r = reads[slot] - 1
                        reads[slot] = r
                        if not r:
                            values[slot] = None
                    d = donor[i]
                    given = self._donated(args, d) if d >= 0 else None
                    out = f(*args) if given is None else f(*args, out=given)
                    given = None
                del args
            except BaseException as exc:  # noqa: BLE001 - every kernel failure becomes the step's error
                self.remaining -= done
                self._fail(plan.nodes[i], exc)
                return
            k = n_out[i]
            if k == 1:
                values[out_base[i]] = out
            elif k:
                b = out_base[i]
                values[b:b + k] = out
            out = None
            done += 1
            for c in consumers[i]:
                p = pending[c] - 1
                pending[c] = p
                if not p:
                    ready.append(c)
        self.remaining -= done
        if self.remaining == 0 and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _run_program(self) -> None:
        """The straight-line path: a plan none of whose kernels may wait runs its program in order, each node
        a plain call, each value dropped when its last reader starts; no pending counts, no ready queue."""
        plan = self.plan
        direct, values = self._direct, self.values
        program = plan.program
        pc = self._pc
        end = len(program)
        timed = self._done is not None
        i = -1
        try:
            while pc < end:
                if timed and not pc & 63 and pc and self._yield_to_loop():
                    self._pc = pc
                    return
                i, kind, get, base, k, drop, unread, d = program[pc]
                pc += 1
                if kind == 1:
                    args = (values[get],)
                elif kind == 2:
                    args = get(values)
                elif kind == 0:
                    args = ()
                else:
                    args = self._general_args(i)
                for slot in drop:
                    values[slot] = None
                if d >= 0:
                    given = self._donated(args, d)
                    out = direct[i](*args) if given is None else direct[i](*args, out=given)
                    given = None
                else:
                    out = direct[i](*args)
                del args
                if k == 1:
                    values[base] = out
                elif k:
                    values[base:base + k] = out
                out = None
                for slot in unread:
                    values[slot] = None
        except BaseException as exc:  # noqa: BLE001 - every kernel failure becomes the step's error
            self._pc = end
            self._fail(plan.nodes[i], exc)
            return
        self._pc = end
        self.remaining = 0
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _drop(self, slots: tuple[int, ...]) -> None:
        """Counts one read of each slot; a value whose last read this was is dropped."""
        reads, values = self.reads, self.values
        for slot in slots:
            r = reads[slot] - 1
            reads[slot] = r
            if not r:
                values[slot] = None

    @staticmethod
    def _donated(args: tuple, j: int) -> Any:
        """`args[j]` when the kernel may write its output into it (TF's buffer forwarding): an array that owns
        its memory and that nothing but this call holds (the step dropped its value before the call, so the
        references are `args`, the local `a` and getrefcount's own: 3; another holder, a view of it, a feed, a
        constant, a variable's buffer or a fetched value adds one). None otherwise."""
        a = args[j]
        if type(a) is np.ndarray and a.base is None and a.nbytes >= FORWARD_MIN_BYTES and \
                sys.getrefcount(a) == 3 and a.flags.writeable:
            return a
        return None

    def _general_args(self, i: int) -> tuple:
        """The arguments of a node whose inputs include a variable to read, or whose kernel takes the step."""
        plan = self.plan
        args = [self.values[s] for s in plan.in_slots[i]]
        flags = plan.deref[i]
        if flags is not None:
            args = [a.read() if d else a for a, d in zip(args, flags)]
        if plan.uses_step[i]:
            return (self, *args)
        return tuple(args)

    def start_trace(self) -> None:
        """Makes this a traced step (before it runs): its kernels are called through timed wrappers that
        record each node's times, thread and outputs in `trace` (exec/step_stats.py). The choice is made
        once per step, so an untraced step's loop carries no tracing check."""
        self.trace = []
        self._calls = traced_calls(self.plan, self.trace)
        self._direct = [None] * len(self.plan.nodes)  # every kernel through its timed coroutine
        self._pc = -1

    def _pop_random(self) -> int:
        j = self._rng.randrange(len(self.ready))
        self.ready.rotate(-j)
        return self.ready.popleft()

    def _fail(self, op: Operation, exc: BaseException) -> None:
        if self.error is None:
            self.error = op_error(op, exc)
            for task in self.tasks:
                task.cancel()
            if self._done is not None and not self._done.done():
                self._done.set_exception(self.error)

    # -- the asynchronous shell ---------------------------------------------------------------------
    def _offload(self, i: int, coro: Any) -> None:
        """Runs a pure kernel with large inputs in a worker thread; it finishes like a suspended one."""
        future = asyncio.get_running_loop().run_in_executor(_pool(), _complete, coro)
        self.tasks.add(future)  # type: ignore[arg-type]
        future.add_done_callback(lambda f, i=i: self._kernel_done(i, f))

    def _suspend(self, i: int, coro: Any, yielded: Any) -> bool:
        """Hands a suspended kernel to a Task; False (and the step fails) outside an event loop."""
        task = self._task_for(i, coro, yielded)
        if task is None:
            return False
        task.add_done_callback(lambda t, i=i: self._kernel_done(i, t))
        return True

    def _task_for(self, i: int, coro: Any, yielded: Any) -> asyncio.Task | None:
        """The Task, owned by the step, that finishes a suspended kernel; None (the step fails) when the
        step is synchronous: a kernel that awaits must be declared is_async."""
        op = self.plan.nodes[i]
        if self._done is None:
            coro.close()
            self._fail(op, errors.InternalError(
                None, op, f"Kernel of '{op.name}' ({op.type}) suspended in a synchronous step; "
                          f"ops whose kernels await must be declared is_async=True."))
            return None
        task = asyncio.get_running_loop().create_task(_Resumed(coro, yielded), name=op.name)
        self.tasks.add(task)
        return task

    def _task_result(self, i: int, task: asyncio.Task) -> tuple[bool, Any]:
        """(True, output) of a suspended kernel's task; (False, None) when it failed (the step's error
        is recorded) or the step had already failed."""
        if self.error is not None:
            return False, None
        if task.cancelled():
            self._fail(self.plan.nodes[i], errors.CancelledError(None, None, "Step was cancelled"))
            return False, None
        exc = task.exception()
        if exc is not None:
            self._fail(self.plan.nodes[i], exc)
            return False, None
        return True, task.result()

    def _kernel_done(self, i: int, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        with self._lock:
            ok, out = self._task_result(i, task)
            if not ok:
                return
            plan = self.plan
            k = plan.n_out[i]
            if k == 1:
                self.values[plan.out_base[i]] = out
            elif k:
                b = plan.out_base[i]
                self.values[b:b + k] = out
            self.remaining -= 1
            for c in plan.consumers[i]:
                self.pending[c] -= 1
                if not self.pending[c]:
                    self.ready.append(c)
            self._slice_end = time.perf_counter() + self.YIELD_EVERY_S
            self._drain()

    def run_sync_first(self) -> bool:
        """Runs what it can of a `sync_first` plan's step in the calling thread (no event loop): True when the
        step finished (then `run_sync`'s checks and fetches follow), False when a kernel would wait and the
        step must go on with `run_async` on an event loop, which takes it up where it stopped."""
        with self._lock:
            self._drain()
        return not self.wants_loop or self.error is not None

    def run_sync(self) -> list[Any]:
        """Runs a step whose plan has no async kernel, entirely in the calling thread."""
        with self._lock:
            self._drain()
        return self.result()

    def result(self) -> list[Any]:
        """A finished synchronous step's fetched values, or its error."""
        if self.error is not None:
            raise self.error
        if self.remaining:
            raise errors.InternalError(None, None, f"step stalled with {self.remaining} nodes not run")
        return self._fetches()

    async def run_async(self, timeout: float | None = None) -> list[Any]:
        """Runs the step on the current event loop; suspended kernels become tasks owned by the step."""
        self._done = asyncio.get_running_loop().create_future()
        self.wants_loop = False
        if self.plan.may_offload:
            self._pc = -1
        self._slice_end = time.perf_counter() + self.YIELD_EVERY_S
        with self._lock:
            self._drain()
        if self.error is not None and not self._done.done():
            self._done.set_exception(self.error)
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._done)
        except TimeoutError:
            self._fail_deadline(timeout)
        except asyncio.CancelledError:
            with self._lock:
                if self.error is None:
                    self.error = errors.CancelledError(None, None, "Step was cancelled")
            await self._cancel_tasks()
            raise
        except errors.OpError:
            pass
        await self._cancel_tasks()
        if self.error is not None:
            raise self.error
        return self._fetches()

    def _fail_deadline(self, timeout: float | None) -> None:
        with self._lock:
            if self.error is None:
                waiting = sorted(t.get_name() for t in self.tasks)[:3]
                self.error = errors.DeadlineExceededError(
                    None, None, f"Timed out after {timeout:.3f}s waiting for the step to finish "
                                f"(ops still waiting: {waiting})")

    def cancel(self, message: str) -> None:
        """Aborts the step from outside (session closed): pending kernels are cancelled."""
        with self._lock:
            if self.error is None:
                self.error = errors.CancelledError(None, None, message)
                for task in self.tasks:
                    task.cancel()
                if self._done is not None and not self._done.done():
                    self._done.set_exception(self.error)

    async def _cancel_tasks(self) -> None:
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks.clear()

    def _fetches(self) -> list[Any]:
        values = self.values
        out = []
        for slot, ref in zip(self.plan.fetch_slots, self.plan.fetch_deref):
            v = values[slot]
            out.append(v.read() if ref else v)
        return out


async def run_reference(plan: Plan, feed_values: Sequence[Any]) -> list[Any]:
    """The plain path: each node in topological order, awaited to completion, one at a time."""
    values: list[Any] = plan.preset.copy()  # what the optimiser folded; the constants below run again
    for slot, v in zip(plan.feed_slots, feed_values):
        values[slot] = v
    for i, op in enumerate(plan.nodes):  # constants run here too: the reference takes no shortcut
        args = [values[s] for s in plan.in_slots[i]]
        if plan.deref[i] is not None:
            args = [a.read() if d else a for a, d in zip(args, plan.deref[i])]
        try:
            with np.errstate(all="ignore"):
                if plan.uses_step[i]:
                    out = await plan.kernels[i](plan.ctxs[i], None, *args)
                else:
                    out = await plan.kernels[i](plan.ctxs[i], *args)
        except Exception as exc:
            raise op_error(op, exc) from exc
        k = plan.n_out[i]
        if k == 1:
            values[plan.out_base[i]] = out
        elif k:
            values[plan.out_base[i]:plan.out_base[i] + k] = out
    return [values[s].read() if ref else values[s] for s, ref in zip(plan.fetch_slots, plan.fetch_deref)]
