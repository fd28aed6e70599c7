"""A partition compiled once into a `Plan`: what a step of it runs, where values live, when they go.

Plan (built by `compile_plan`, never changed afterwards), for node index i in topological order:
  kernels[i]      the op's kernel as a coroutine function `kernel(ctx, *inputs)`; direct[i] the same as a
                  plain call (ctx bound) when it never waits
  ctxs[i]         its `KernelContext` (attrs, xp, resources) made once per plan
  in_slots[i]     where each input value lives in the step's value array
  deref[i]        None, or a tuple of booleans: which inputs read a variable's current value
  out_base[i]     the first slot of its outputs; n_out[i] how many it has
  consumers[i]    node indices to notify when it finishes, one entry per edge (data or control)
  pending0[i]     how many edges it waits for; `initial_ready` are the nodes with none
  preset          the value array a step starts from: feeds' slots empty, the outputs of constant
                  nodes (no inputs, no control inputs) already filled in, as TF's executor forwards a
                  constant kernel's tensor without running it (such nodes never run), and the values
                  the graph optimiser folded (exec/optimize.py)
  reads0, drops, donor, program   when values are dropped, which inputs an output may reuse, and the
                  straight-line form of a plan none of whose kernels may wait (`_plan_memory`)
Feeds take slots of their own; consumers of a fed tensor read the feed slot, so the op that
would have produced it need not run (partial execution). `asyncflow.exec.executor` runs plans.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.exec.optimize import Rewrite, optimize
from asyncflow.graph import Operation, Tensor
from asyncflow.ops.registry import KernelContext


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
