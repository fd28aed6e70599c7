"""The executor: a partition compiled once into a `Plan`, then run once per step.

Plan (built by `compile_plan`, never changed afterwards), for node index i in topological order:
  kernels[i]      the op's kernel, a coroutine function `kernel(ctx, *inputs)`
  ctxs[i]         its `KernelContext` (attrs, xp, resources) made once per plan
  in_slots[i]     where each input value lives in the step's value array
  deref[i]        None, or a tuple of booleans: which inputs read a variable's current value
  out_base[i]     the first slot of its outputs; n_out[i] how many it has
  consumers[i]    node indices to notify when it finishes, one entry per edge (data or control)
  pending0[i]     how many edges it waits for; `initial_ready` are the nodes with none
  preset          the value array a step starts from: feeds' slots empty, and the outputs of
                  constant nodes (no inputs, no control inputs) already filled in, as TF's executor
                  forwards a constant kernel's tensor without running it; such nodes never run
Feeds take slots of their own; consumers of a fed tensor read the feed slot, so the op that
would have produced it need not run (partial execution).

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
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.exec.optimize import Rewrite, optimize
from asyncflow.exec.step_stats import traced_calls
from asyncflow.graph import Operation, Tensor
from asyncflow.ops.registry import KernelContext, WouldWait


@dataclass
class Plan:
    nodes: list[Operation]
    kernels: list[Any]
    ctxs: list[KernelContext]
    in_slots: list[tuple[int, ...]]
    deref: list[tuple[bool, ...] | None]
    uses_step: list[bool]
    calls: list[Any]
    arity: list[int]
    getters: list[Any]
    out_base: list[int]
    n_out: list[int]
    consumers: list[tuple[int, ...]]
    pending0: list[int]
    initial_ready: list[int]
    preset: list[Any]
    n_to_run: int
    n_slots: int
    feed_slots: list[int]
    fetch_slots: list[int]
    fetch_deref: list[bool]
    has_async: bool
    offload: list[bool] = field(default_factory=list)  # may run in a worker thread when its inputs are large
    stateful_nodes: list[str] = field(default_factory=list)
    feed_tensors: list[Tensor] = field(default_factory=list)
    back_edges: set[tuple[int, int]] = field(default_factory=set)  # (NextIteration, Merge) node pairs
    frames: Any = None  # the FramePlan, for plans with control flow (exec/frames.py)
    direct: list[Any] = field(default_factory=list)  # the kernel as a plain call (ctx bound), None if it may wait
    reads0: list[int] = field(default_factory=list)  # per slot: reads left before its value is dropped (0: kept)
    drops: list[tuple[int, ...]] = field(default_factory=list)  # per node: droppable slots it reads, once per read
    donor: list[int] = field(default_factory=list)  # per node: the input it may write its output into, or -1
    program: list[tuple] | None = None  # the straight-line form, when no kernel may wait (`Step._run_program`)
    may_offload: bool = False  # some node may run in a worker thread (then a step on a loop takes the scheduler)
    sync_first: bool = False  # has async kernels, all `try_sync`: a plain thread's step tries them there first
    try_sync: list[bool] = field(default_factory=list)  # per node: its op is `try_sync` (may raise WouldWait)
    trace_info: Any = None  # nodes' timeline labels and output dtypes, made on the first traced step


OFFLOAD_BYTES = 4 << 20  # inputs at least this large send a pure kernel to a worker thread


def _may_offload(op: Operation) -> bool:
    """Whether `op` is pure and may see inputs of OFFLOAD_BYTES (static shapes unknown or that large)."""
    d = op.op_def
    if d.stateful or d.is_async or d.uses_step or d.control_flow or not op._inputs:
        return False
    total = 0
    for t in op._inputs:
        n = t.shape.num_elements() if t.shape.ndims is not None else None
        if n is None or t.dtype.base_dtype.as_numpy_dtype is object:
            return True
        total += n * np.dtype(t.dtype.base_dtype.as_numpy_dtype).itemsize
    return total >= OFFLOAD_BYTES


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


def control_inputs(op: Operation, fed: set[Tensor]) -> list[Operation]:
    """`op`'s control inputs that must run: one whose every output is fed is satisfied by the feed, as in TF
    (a feed replaces the fed op for data and control edges alike), so a fed placeholder is never run."""
    return [c for c in op._control_inputs if not (c._outputs and all(t in fed for t in c._outputs))] \
        if fed else list(op._control_inputs)


def needed_ops(fetches: Sequence[Tensor], targets: Sequence[Operation], feeds: Sequence[Tensor],
               rewrite: Rewrite | None = None) -> list[Operation]:
    """The ops that must run to produce `fetches` and `targets` given `feeds` (and the optimiser's
    `rewrite`, when given), in topological order."""
    edges = _Edges(feeds, rewrite)
    needed: set[Operation] = set()
    stack: list[Operation] = [t.op for t in map(edges.source, fetches) if edges.produced(t)] + list(targets)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t.op for t in edges.inputs(op) if edges.produced(t) and t.op not in needed)
        stack.extend(c for c in edges.controls(op) if c not in needed)
    return topological(needed, edges)


class _Edges:
    """A graph's edges as a plan sees them: fed tensors have no producer, and the optimiser's rewrite
    (exec/optimize.py) redirects inputs, folds tensors to constants and moves control edges."""

    def __init__(self, feeds: Sequence[Tensor], rewrite: Rewrite | None = None):
        self.fed = set(feeds)
        self.rewrite = rewrite if rewrite else None

    def source(self, t: Tensor) -> Tensor:
        """Where `t`'s value is read from."""
        rw = self.rewrite
        if rw is not None and t not in self.fed:
            while t in rw.tensors:
                t = rw.tensors[t]
        return t

    def produced(self, t: Tensor) -> bool:
        """Whether a source tensor's op must run (not fed, not folded)."""
        return t not in self.fed and (self.rewrite is None or t not in self.rewrite.folded)

    def inputs(self, op: Operation) -> list[Tensor]:
        if self.rewrite is None:
            return op._inputs
        return [self.source(t) for t in op._inputs]

    def controls(self, op: Operation) -> list[Operation]:
        deps = control_inputs(op, self.fed)
        rw = self.rewrite
        if rw is None:
            return deps
        out = []
        for c in deps:
            while c is not None and c in rw.ops:
                c = rw.ops[c]
            if c is not None and c not in out:
                out.append(c)
        return out


def is_back_edge(src: Operation, dst: Operation) -> bool:
    """A loop's back edge (NextIteration -> Merge): the one kind of cycle a graph may have."""
    return src.op_def.control_flow == "next_iteration" and dst.op_def.control_flow == "merge"


def topological(ops: set[Operation], fed: set[Tensor] | _Edges) -> list[Operation]:
    """`ops` in dependency order (creation order among the ready), loops' back edges ignored."""
    edges = fed if isinstance(fed, _Edges) else _Edges(fed)
    pending = {}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        deps = [t.op for t in edges.inputs(op) if edges.produced(t) and t.op in ops and not is_back_edge(t.op, op)]
        deps += [c for c in edges.controls(op) if c in ops]
        pending[op] = len(deps)
        for d in deps:
            users[d].append(op)
    ready = sorted((op for op in ops if pending[op] == 0), key=lambda o: o._id)
    order: list[Operation] = []
    queue = deque(ready)
    while queue:
        op = queue.popleft()
        order.append(op)
        for u in users[op]:
            pending[u] -= 1
            if pending[u] == 0:
                queue.append(u)
    if len(order) != len(ops):
        stuck = sorted(op.name for op in ops if pending[op] > 0)[:5]
        raise errors.InvalidArgumentError(None, None, f"Graph has a cycle through {stuck}")
    return order


def compile_plan(
    fetches: Sequence[Tensor],
    targets: Sequence[Operation],
    feeds: Sequence[Tensor],
    resources: Any,
    xp: Any = np,
    graph_options: Any = None,
) -> Plan:
    """Compiles the subgraph that `fetches`/`targets` need, given `feeds`, into a Plan, after the graph
    optimisations `graph_options` allows (exec/optimize.py; None: TF1's defaults)."""
    nodes = needed_ops(fetches, targets, feeds)
    rewrite = None
    if not any(op.op_def is not None and op.op_def.control_flow for op in nodes):  # frames read raw edges
        rewrite = optimize(nodes, fetches, targets, feeds, graph_options) or None
        if rewrite is not None:
            nodes = needed_ops(fetches, targets, feeds, rewrite)
    edges = _Edges(feeds, rewrite)
    index = {op: i for i, op in enumerate(nodes)}
    slot_of: dict[Tensor, int] = {}
    out_base, n_out = [], []
    n_slots = 0
    for op in nodes:
        out_base.append(n_slots)
        n_out.append(len(op._outputs))
        for t in op._outputs:
            slot_of[t] = n_slots
            n_slots += 1
    feed_slots = []
    for t in feeds:
        slot_of[t] = n_slots
        feed_slots.append(n_slots)
        n_slots += 1
    folded: list[tuple[int, Any]] = []
    if rewrite is not None:
        for t, value in rewrite.folded.items():
            if t not in slot_of:
                slot_of[t] = n_slots
                folded.append((n_slots, value))
                n_slots += 1
    fed = edges.fed

    kernels, ctxs, in_slots, deref, uses_step = [], [], [], [], []
    consumers: list[list[int]] = [[] for _ in nodes]
    pending0 = [0] * len(nodes)
    has_async = False
    for i, op in enumerate(nodes):
        opdef = op.op_def
        if opdef is None or opdef.kernel is None:
            raise errors.UnimplementedError(None, op, f"No kernel registered for op '{op.name}' ({op.type}).")
        kernels.append(_single_of_list(opdef.kernel) if _one_item_list_output(op) else opdef.kernel)
        ctxs.append(KernelContext(op, resources, xp))
        uses_step.append(opdef.uses_step)
        has_async |= opdef.is_async
        inputs = edges.inputs(op)
        in_slots.append(tuple(slot_of[t] for t in inputs))
        arg_is_ref = _arg_ref_flags(op)
        flags = tuple(t.dtype.is_ref_dtype and t not in fed and not ref for t, ref in zip(inputs, arg_is_ref))
        deref.append(flags if any(flags) else None)
        for t in inputs:
            if edges.produced(t) and not is_back_edge(t.op, op):
                consumers[index[t.op]].append(i)
                pending0[i] += 1
        for c in edges.controls(op):
            consumers[index[c]].append(i)
            pending0[i] += 1
    calls, arity, getters = [], [], []
    for i in range(len(nodes)):
        calls.append(partial(kernels[i], ctxs[i]))
        slots = in_slots[i]
        if deref[i] is not None or uses_step[i]:
            arity.append(3)
            getters.append(None)
        elif not slots:
            arity.append(0)
            getters.append(None)
        elif len(slots) == 1:
            arity.append(1)
            getters.append(slots[0])
        else:
            arity.append(2)
            getters.append(itemgetter(*slots))
    preset: list[Any] = [None] * n_slots
    for slot, value in folded:
        preset[slot] = value
    constant = [op.op_def.constant and not op._inputs and not op._control_inputs for op in nodes]
    for i in range(len(nodes)):
        if constant[i]:
            preset[out_base[i]] = ctxs[i].output
            for c in consumers[i]:
                pending0[c] -= 1
    control_flow = any(op.op_def.control_flow for op in nodes)
    offload = [not constant[i] and deref[i] is None and _may_offload(op) for i, op in enumerate(nodes)]
    plan = Plan(
        nodes=nodes,
        calls=calls,
        arity=arity,
        getters=getters,
        kernels=kernels,
        ctxs=ctxs,
        in_slots=in_slots,
        deref=deref,
        uses_step=uses_step,
        out_base=out_base,
        n_out=n_out,
        consumers=[tuple(c) for c in consumers],
        pending0=pending0,
        initial_ready=[i for i, p in enumerate(pending0) if p == 0 and not constant[i]],
        preset=preset,
        n_to_run=len(nodes) - sum(constant),
        n_slots=n_slots,
        feed_slots=feed_slots,
        fetch_slots=[slot_of[edges.source(t)] for t in fetches],
        fetch_deref=[t.dtype.is_ref_dtype and t not in fed for t in map(edges.source, fetches)],
        has_async=has_async,
        offload=offload,
        stateful_nodes=[op.name for op in nodes if op.op_def.stateful],
        feed_tensors=list(feeds),
        back_edges={(index[t.op], i) for i, op in enumerate(nodes) for t in op._inputs
                    if t not in fed and is_back_edge(t.op, op)},
    )
    plan.direct = [_direct_call(op, ctxs[i]) for i, op in enumerate(nodes)]
    plan.may_offload = any(offload)
    plan.try_sync = [op.op_def.try_sync for op in nodes]
    plan.sync_first = has_async and not control_flow and all(
        op.op_def.try_sync for op in nodes if op.op_def.is_async)
    if control_flow:
        from asyncflow.exec.frames import compile_frames

        plan.frames = compile_frames(plan, plan.back_edges)
    else:
        _plan_memory(plan, constant, edges)
    return plan


FORWARD_MIN_BYTES = 1 << 16  # smaller inputs are not worth a forwarding check


def _direct_call(op: Operation, ctx: KernelContext) -> Any:
    """`op`'s kernel as a plain call with its context bound, or None when the kernel may wait."""
    sync = op.op_def.sync
    if sync is None or op.op_def.is_async:
        return None
    if _one_item_list_output(op):
        return lambda *args, **kw: sync(ctx, *args, **kw)[0]
    return partial(sync, ctx)


def _plan_memory(plan: Plan, constant: list[bool], edges: _Edges) -> None:
    """When a flat plan's values may be dropped, which inputs may be forwarded, and its straight-line form.

    A value is dropped when its last reader starts (its reads are counted per step; each read is one input
    of one node), unless it is fetched, fed or preset (constants). A node whose op forwards may write its
    output into an input that only it reads, once (its `donor`): the executor hands the buffer over only
    when nothing else holds it (see `Step._donated`). A plan none of whose kernels may wait also gets a
    straight-line `program`: its nodes in topological order, each dropping the values it reads last."""
    n_slots, nodes = plan.n_slots, plan.nodes
    reads = [0] * n_slots
    for slots in plan.in_slots:
        for s in slots:
            reads[s] += 1
    kept = set(plan.fetch_slots) | set(plan.feed_slots)
    for i, c in enumerate(constant):
        if c:
            kept.update(range(plan.out_base[i], plan.out_base[i] + plan.n_out[i]))
    for i in range(len(nodes)):  # a folded tensor's slot or a variable read through `deref` is never dropped
        if plan.deref[i] is not None:
            kept.update(s for s, d in zip(plan.in_slots[i], plan.deref[i]) if d)
    kept.update(range(sum(plan.n_out), n_slots))
    plan.reads0 = [0 if s in kept else r for s, r in enumerate(reads)]
    plan.drops = [tuple(s for s in slots if plan.reads0[s]) for slots in plan.in_slots]
    plan.donor = [_donor(plan, i, reads) for i in range(len(nodes))]
    if plan.has_async or not all(d is not None for i, d in enumerate(plan.direct) if not constant[i]):
        return
    last: dict[int, int] = {}
    for i, slots in enumerate(plan.in_slots):
        for s in slots:
            if plan.reads0[s]:
                last[s] = i
    program = []
    for i in range(len(nodes)):
        if constant[i]:
            continue
        drop = tuple(sorted({s for s in plan.in_slots[i] if last.get(s) == i}))
        unread = tuple(s for s in range(plan.out_base[i], plan.out_base[i] + plan.n_out[i])
                       if not reads[s] and s not in kept)
        program.append((i, plan.arity[i], plan.getters[i], plan.out_base[i], plan.n_out[i], drop, unread,
                        plan.donor[i]))
    plan.program = program


def _donor(plan: Plan, i: int, reads: list[int]) -> int:
    op = plan.nodes[i]
    if not op.op_def.forwards or plan.uses_step[i]:
        return -1
    for j, s in enumerate(plan.in_slots[i]):
        t = op._inputs[j]
        if plan.reads0[s] != 1 or reads[s] != 1 or t.dtype.is_ref_dtype:
            continue
        n = t.shape.num_elements() if t.shape.ndims is not None else None
        if n is not None and n * t.dtype.base_dtype.size < FORWARD_MIN_BYTES:
            continue
        return j
    return -1


def _one_item_list_output(op: Operation) -> bool:
    """A list output (`num * T`) that happens to have one element: the kernel returns a 1-sequence."""
    outs = op.op_def.outputs
    return len(op._outputs) == 1 and any(arg.is_list for arg in outs)


def _single_of_list(kernel: Any) -> Any:
    async def first(ctx: Any, *args: Any) -> Any:
        return (await kernel(ctx, *args))[0]

    return first


def _arg_ref_flags(op: Operation) -> list[bool]:
    flags: list[bool] = []
    for arg in op.op_def.inputs:
        count = arg.count(op._attrs)
        flags.extend([arg.is_ref] * count)
    return flags


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
