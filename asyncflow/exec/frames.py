"""The executor for plans with control flow: tagged tokens (frame, iteration) and dead values.

A plan whose ops include the whitepaper's primitives (Switch, Merge, Enter, Exit, NextIteration)
runs as a `FrameStep`, which keeps `Step`'s asynchronous shell (tasks for suspended kernels, the
first error wins, timeouts, cancellation) and replaces its bookkeeping:

Static (`FramePlan`, compiled once): each node's frame (the root frame is ""; an Enter's node
is in its `frame_name`, an Exit's output is in its frame's parent), its outgoing edges
(src output or -1 for control, dst, dst input or -1, and whether the edge is a loop's back edge
NextIteration -> Merge) and the same edges as `routes` (dst's frame-local index and what a delivery
to it does), how many forward and back data inputs a Merge has, and per-frame tables: each frame's
slots and nodes numbered from 0, and the pending counts a new iteration starts from.

Per step: `_Frame` instances (one per entry into a frame: name, parent frame and iteration),
each with `_Iter` states keyed by iteration number holding the frame's values and pending counts
as lists (indexed by frame-local slot and node; an iteration's values go when it retires), dead
marks and the Merges' progress. A ready entry is (node, frame, iteration).

Fast path: a loop frame none of whose kernels may wait (nor those of the frames inside it) is
compiled into straight-line code (exec/frame_compile.py); when all its Enters have fired in a
parent iteration the scheduler runs the whole loop as one call and delivers its Exits. A traced
step takes the dynamic path everywhere (each kernel through its timed call).

Rules: a node with a dead input does not run and its outputs are dead (control edges carry
dead-ness too; a constant, once its control inputs are in, delivers its value without running);
a Merge fires on its first live data input, or dead once every data input it
can receive in that iteration is dead (iteration 0 of a loop: the forward inputs; later ones:
the back edges); Enter delivers into the child frame (a constant Enter into every iteration,
now and later); NextIteration delivers into iteration k+1, or defers it while
`parallel_iterations` iterations are active; a dead NextIteration ends that path (the loop's
way to stop); Exit delivers a live value to the parent frame, and an Exit that never saw a
live value delivers dead there when its frame completes (a loop inside an untaken branch). A
frame completes when all its Enters have fired and nothing in it is ready, running or deferred;
iterations retire in order once idle. The step completes when the root frame does.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.exec.executor import Plan, Step, control_inputs
from asyncflow.exec.frame_compile import CompiledFrame, compile_fast_frames, op_at
from asyncflow.ops.control_flow_ops import DEAD

_CONTROL = -1
_TO_NODE, _TO_MERGE, _TO_EXIT, _TO_CONSTANT = range(4)  # what a delivery to a node does (FramePlan.routes)


@dataclass
class FramePlan:
    plan: Plan
    kind: list[str | None]
    frame_of: list[str]
    parent_of: dict[str, str]
    out_edges: list[list[tuple[int, int, int, bool]]]
    in_count: list[int]  # non-merge: every input edge but back edges; merge: its control edges
    merge_forward: list[int]
    merge_back: list[int]
    enters_into: dict[str, int]
    exits_of: dict[str, list[int]]
    initial_ready: list[int]
    const_out: list[Any]  # a constant node's value (None for others): delivered without running it
    compiled: dict[str, CompiledFrame] = field(default_factory=dict)  # loop frames with a straight-line form
    # Per-frame tables: an iteration keeps its frame's values and pending counts in lists, not dicts.
    local_slot: list[int] = field(default_factory=list)  # plan slot -> position in its frame's value list
    local_node: list[int] = field(default_factory=list)  # node -> position in the pending list of the frame it runs in
    slot_frame: list[str] = field(default_factory=list)  # plan slot -> the frame its values live in
    n_local_slots: dict[str, int] = field(default_factory=dict)
    pending0: dict[str, list[int]] = field(default_factory=dict)  # per frame: pending counts of a new iteration
    in_local: list[tuple[int, ...]] = field(default_factory=list)  # node -> its inputs' local positions
    getters: list[Any] = field(default_factory=list)  # node -> a local position, or an itemgetter of several
    out_local: list[int] = field(default_factory=list)  # node -> its first output's local position
    passing: list[bool] = field(default_factory=list)  # node -> an Enter/Exit/NextIteration that reads no variable
    no_passing: list[bool] = field(default_factory=list)
    # node -> per out edge (src output or -1, dst, dst's local node, _TO_*, dst input): out_edges made ready to route
    routes: list[tuple[tuple[int, int, int, int, int], ...]] = field(default_factory=list)


COMPILE = True  # compile qualifying loop frames (exec/frame_compile.py); tests turn it off to compare


def compile_frames(plan: Plan, back_edges: set[tuple[int, int]]) -> FramePlan:
    """The frame structure of `plan`; `back_edges` holds (NextIteration node, Merge node) pairs."""
    nodes = plan.nodes
    index = {op: i for i, op in enumerate(nodes)}
    kind = [op.op_def.control_flow for op in nodes]
    out_edges: list[list[tuple[int, int, int, bool]]] = [[] for _ in nodes]
    in_count = [0] * len(nodes)
    merge_forward = [0] * len(nodes)
    merge_back = [0] * len(nodes)
    fed = set(plan.feed_tensors)
    for d, op in enumerate(nodes):
        for j, t in enumerate(op._inputs):
            if t in fed:
                continue
            s = index[t.op]
            back = (s, d) in back_edges
            out_edges[s].append((t.value_index, d, j, back))
            if kind[d] == "merge":
                if back:
                    merge_back[d] += 1
                else:
                    merge_forward[d] += 1
            elif not back:
                in_count[d] += 1
        for c in control_inputs(op, fed):
            s = index[c]
            out_edges[s].append((_CONTROL, d, _CONTROL, False))
            in_count[d] += 1
    frame_of, parent_of = _assign_frames(plan, kind, back_edges, index)
    enters_into: dict[str, int] = {}
    exits_of: dict[str, list[int]] = {}
    for i in range(len(nodes)):
        if kind[i] == "enter":
            enters_into[frame_of[i]] = enters_into.get(frame_of[i], 0) + 1
        elif kind[i] == "exit":
            exits_of.setdefault(frame_of[i], []).append(i)
    initial = [i for i in range(len(nodes)) if in_count[i] == 0 and kind[i] != "merge"]
    const_out = [plan.ctxs[i].output if op.op_def.constant else None for i, op in enumerate(nodes)]
    fp = FramePlan(plan, kind, frame_of, parent_of, out_edges, in_count, merge_forward, merge_back,
                   enters_into, exits_of, initial, const_out)
    _local_tables(fp)
    if COMPILE:
        fp.compiled = compile_fast_frames(fp)
    return fp


def _local_tables(fp: FramePlan) -> None:
    """Numbers each frame's slots and nodes from 0: a value lives in the frame it is delivered to (an Enter's
    in the child, an Exit's in the parent, a feed in the root); a node's pending count in the frame it runs in
    (an Enter runs in its parent frame: its input is there)."""
    plan, kind, frame_of = fp.plan, fp.kind, fp.frame_of
    run_frame = [fp.parent_of.get(frame_of[i], "") if kind[i] == "enter" else frame_of[i]
                 for i in range(len(plan.nodes))]
    slot_frame = [""] * plan.n_slots
    for i in range(len(plan.nodes)):
        out = fp.parent_of.get(frame_of[i], "") if kind[i] == "exit" else frame_of[i]
        for j in range(plan.n_out[i]):
            slot_frame[plan.out_base[i] + j] = out
    counts: dict[str, int] = {}
    local_slot = []
    for f in slot_frame:
        local_slot.append(counts.get(f, 0))
        counts[f] = local_slot[-1] + 1
    pending0: dict[str, list[int]] = {}
    local_node = []
    for i, f in enumerate(run_frame):
        row = pending0.setdefault(f, [])
        local_node.append(len(row))
        row.append(fp.in_count[i])
    for name in [""] + list(fp.parent_of):
        counts.setdefault(name, 0)
        pending0.setdefault(name, [])
    fp.local_slot, fp.local_node, fp.slot_frame = local_slot, local_node, slot_frame
    fp.n_local_slots, fp.pending0 = counts, pending0
    fp.in_local = [tuple(local_slot[s] for s in slots) for slots in plan.in_slots]
    fp.passing = [kind[i] in ("enter", "exit", "next_iteration") and plan.deref[i] is None and plan.arity[i] == 1
                  for i in range(len(plan.nodes))]
    fp.no_passing = [False] * len(plan.nodes)
    fp.out_local = [local_slot[plan.out_base[i]] if plan.n_out[i] else 0 for i in range(len(plan.nodes))]

    def route(d: int) -> int:
        if kind[d] == "merge":
            return _TO_MERGE
        if kind[d] == "exit":
            return _TO_EXIT
        return _TO_CONSTANT if fp.const_out[d] is not None else _TO_NODE

    fp.routes = [tuple((src_out, d, local_node[d], route(d), d_in) for src_out, d, d_in, _back in edges)
                 for edges in fp.out_edges]
    fp.getters = [None if plan.arity[i] not in (1, 2) else
                  (fp.in_local[i][0] if plan.arity[i] == 1 else itemgetter(*fp.in_local[i]))
                  for i in range(len(plan.nodes))]


def _assign_frames(plan: Plan, kind: list[str | None], back_edges: set[tuple[int, int]],
                   index: dict) -> tuple[list[str], dict[str, str]]:
    nodes = plan.nodes
    frame_of = [""] * len(nodes)
    parent_of: dict[str, str] = {}
    fed = set(plan.feed_tensors)

    def out_frame(i: int) -> str:
        return parent_of.get(frame_of[i], "") if kind[i] == "exit" else frame_of[i]

    for d, op in enumerate(nodes):  # plan.nodes is topological once back edges are ignored
        sources = [index[t.op] for t in op._inputs if t not in fed and (index[t.op], d) not in back_edges]
        sources += [index[c] for c in control_inputs(op, fed)]
        frames = {out_frame(s) for s in sources}
        if len(frames) > 1:
            raise errors.InvalidArgumentError(
                None, op, f"Op '{op.name}' has inputs from different frames: {sorted(frames)}; values enter a "
                          f"loop only through Enter and leave it only through Exit")
        outer = frames.pop() if frames else ""
        if kind[d] == "enter":
            name = op._attrs["frame_name"]
            if parent_of.setdefault(name, outer) != outer:
                raise errors.InvalidArgumentError(
                    None, op, f"Frame '{name}' is entered from two different frames")
            frame_of[d] = name
        else:
            frame_of[d] = outer
    return frame_of, parent_of


class _Iter:
    __slots__ = ("values", "pending", "dead", "outstanding", "merges", "merge_out")

    def __init__(self, n_slots: int, pending0: list[int]) -> None:
        self.values: list[Any] = [None] * n_slots  # by the frame's local slot (None: not delivered)
        self.pending: list[int] = pending0.copy()  # by the frame's local node
        self.dead: set[int] = set()
        self.outstanding = 0
        self.merges: dict[int, list] = {}  # node -> [fired, dead_count, control_pending, chosen input]
        self.merge_out: dict[int, tuple[Any, Any]] = {}


class _Frame:
    __slots__ = ("name", "parent", "parent_iter", "iters", "pending_enters", "outstanding", "consts",
                 "exit_live", "deferred", "parallel", "oldest", "newest", "done", "key", "n_slots", "pending0")

    def __init__(self, fp: FramePlan, name: str, parent: _Frame | None, parent_iter: int, pending_enters: int,
                 parallel: int):
        self.name = name
        self.parent = parent
        self.parent_iter = parent_iter
        self.n_slots = fp.n_local_slots[name]
        self.pending0 = fp.pending0[name]
        self.iters: dict[int, _Iter] = {0: _Iter(self.n_slots, self.pending0)}
        self.pending_enters = pending_enters
        self.outstanding = 0
        self.consts: list[tuple[int, list[Any]]] = []
        self.exit_live: set[int] = set()
        self.deferred: dict[int, list[tuple[int, list[Any]]]] = {}
        self.parallel = max(1, parallel)
        self.oldest = 0
        self.newest = 0
        self.done = False
        self.key: Any = None


class FrameStep(Step):
    """One run of a plan with control flow (see the module docstring)."""

    def __init__(self, fplan: FramePlan, feed_values: Any, lock: Any, step_id: int = 0,
                 shuffle_seed: int | None = None):
        super().__init__(fplan.plan, feed_values, lock, step_id, shuffle_seed)
        self.fplan = fplan
        self.remaining = 1  # becomes 0 when the root frame completes
        self.root = _Frame(fplan, "", None, 0, 0, 1)
        root_values = self.root.iters[0].values
        for slot, v in zip(fplan.plan.feed_slots, feed_values):
            root_values[fplan.local_slot[slot]] = v
        self.frames: dict[Any, _Frame] = {}
        self.ready = deque()
        for i in fplan.initial_ready:
            self._push(i, self.root, 0)
        self._pending_kernels: dict[asyncio.Task, tuple[int, _Frame, int]] = {}
        self._fast = fplan.compiled  # compiled loop frames (none in a traced step)
        self._entering: dict[tuple, list] = {}  # a compiled frame's Enters seen so far, per parent iteration
        if not self.ready:
            self._retire(self.root)

    def start_trace(self) -> None:
        super().start_trace()
        self._fast = {}  # every node through its timed call: loops take the dynamic path

    # -- scheduling ------------------------------------------------------------------------------
    def _push(self, i: int, frame: _Frame, k: int) -> None:
        self.ready.append((i, frame, k))
        frame.outstanding += 1
        frame.iters[k].outstanding += 1

    def _drain_ready(self) -> None:
        fp, plan = self.fplan, self.plan
        kinds, n_out, arity, getters, calls, direct = fp.kind, plan.n_out, plan.arity, fp.getters, self._calls, \
            self._direct
        ready = self.ready
        pop = ready.popleft if self._rng is None else self._pop_random
        passing = fp.passing if self.trace is None else fp.no_passing  # a traced step times every node
        while ready:
            i, frame, k = pop()
            it = frame.iters[k]
            kind = kinds[i]
            if kind == "merge":
                outs = list(it.merge_out.pop(i))
                dead = outs[0] is DEAD
            elif i in it.dead:
                outs, dead = [DEAD] * n_out[i], True
            elif passing[i]:  # Enter, Exit, NextIteration: the scheduler moves the value itself
                outs, dead = [it.values[getters[i]]], False
            else:
                try:
                    a = arity[i]
                    if a == 2:
                        args = getters[i](it.values)
                    elif a == 1:
                        args = (it.values[getters[i]],)
                    elif a == 0:
                        args = ()
                    else:
                        args = self._frame_args(i, it)
                    f = direct[i]
                    if f is not None:
                        out = f(*args)
                    else:
                        coro = calls[i](*args)
                        try:
                            yielded = coro.send(None)
                        except StopIteration as stop:
                            out = stop.value
                        else:
                            if not self._suspend_in_frame(i, frame, k, coro, yielded):
                                return
                            continue
                except BaseException as exc:  # noqa: BLE001 - the step's first error
                    self._fail(plan.nodes[i], exc)
                    return
                n = n_out[i]
                outs = [out] if n == 1 else ([] if n == 0 else list(out))
                dead = False
            if kind is None:
                self._deliver(i, outs, dead, frame, k)
            else:
                self._propagate(i, frame, k, outs, dead)
            it.outstanding -= 1
            frame.outstanding -= 1
            if not it.outstanding:
                self._retire(frame)
        if self.remaining == 0 and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _frame_args(self, i: int, it: _Iter) -> tuple:
        """The arguments of a node that reads a variable's value or takes the step."""
        plan = self.plan
        values = it.values
        args = [values[s] for s in self.fplan.in_local[i]]
        flags = plan.deref[i]
        if flags is not None:
            args = [a.read() if d else a for a, d in zip(args, flags)]
        if plan.uses_step[i]:
            return (self, *args)
        return tuple(args)

    def _outputs(self, i: int, out: Any) -> list[Any]:
        n = self.plan.n_out[i]
        if n == 1:
            return [out]
        return [] if n == 0 else list(out)

    def _suspend_in_frame(self, i: int, frame: _Frame, k: int, coro: Any, yielded: Any) -> bool:
        task = self._task_for(i, coro, yielded)
        if task is None:
            return False
        self._pending_kernels[task] = (i, frame, k)
        task.add_done_callback(self._frame_kernel_done)
        return True

    def _frame_kernel_done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        i, frame, k = self._pending_kernels.pop(task)
        with self._lock:
            ok, out = self._task_result(i, task)
            if not ok:
                return
            self._propagate(i, frame, k, self._outputs(i, out), False)
            self._finish(frame, k)
            self._drain()

    # -- routing --------------------------------------------------------------------------------
    def _propagate(self, i: int, frame: _Frame, k: int, outs: list[Any], dead: bool) -> None:
        kind = self.fplan.kind[i]
        if kind == "enter":
            comp = self._fast.get(self.fplan.frame_of[i])
            if comp is not None:
                self._enter_fast(comp, i, frame, k, DEAD if dead else outs[0])
                return
            child = self._child(i, frame, k)
            child.pending_enters -= 1
            if self.plan.nodes[i]._attrs["is_constant"] and not dead:
                child.consts.append((i, outs))
                for n in sorted(child.iters):
                    self._deliver(i, outs, dead, child, n)
            else:
                self._deliver(i, outs, dead, child, 0)
            self._retire(child)
        elif kind == "exit":
            if not dead and outs[0] is not DEAD:
                frame.exit_live.add(i)
                self._deliver(i, outs, False, frame.parent, frame.parent_iter)
        elif kind == "next_iteration":
            if not dead and outs[0] is not DEAD:
                self._next_iteration(i, outs, frame, k)
        else:
            self._deliver(i, outs, dead, frame, k)

    def _child(self, i: int, frame: _Frame, k: int) -> _Frame:
        name = self.fplan.frame_of[i]
        key = (name, id(frame), k)
        child = self.frames.get(key)
        if child is None:
            parallel = int(self.plan.nodes[i]._attrs.get("parallel_iterations", 10))
            child = _Frame(self.fplan, name, frame, k, self.fplan.enters_into[name], parallel)
            child.key = key
            self.frames[key] = child
            frame.outstanding += 1  # a live child frame keeps its parent iteration open
            frame.iters[k].outstanding += 1
        return child

    def _deliver(self, i: int, outs: list[Any], dead: bool, frame: _Frame, k: int) -> None:
        fp = self.fplan
        it = frame.iters[k]
        if outs:
            values = it.values
            base = fp.out_local[i]
            if len(outs) == 1:
                values[base] = outs[0]
            else:
                values[base:base + len(outs)] = outs
        pending = it.pending
        for src_out, d, ld, route, d_in in fp.routes[i]:
            is_dead = dead if src_out < 0 else outs[src_out] is DEAD
            if route == _TO_MERGE:
                self._activate(d, d_in, is_dead, frame, k, it)
                continue
            left = pending[ld] - 1
            pending[ld] = left
            if is_dead:
                it.dead.add(d)
            if left:
                continue
            if route == _TO_EXIT and d in it.dead:
                continue  # the loop goes on: a dead Exit does nothing (its frame's end settles it)
            if route == _TO_CONSTANT:  # a constant gated by control edges (a loop's or branch's pivot)
                gone = d in it.dead
                self._deliver(d, [DEAD] if gone else [fp.const_out[d]], gone, frame, k)
                continue
            self.ready.append((d, frame, k))
            frame.outstanding += 1
            it.outstanding += 1

    def _activate(self, d: int, d_in: int, is_dead: bool, frame: _Frame, k: int, it: _Iter) -> None:
        fp = self.fplan
        if fp.kind[d] == "merge":
            # [decided, dead data inputs, control inputs still to come, chosen input, a control input was dead]
            state = it.merges.get(d)
            if state is None:
                state = it.merges[d] = [False, 0, fp.in_count[d], None, False]
            if d_in == _CONTROL:
                state[2] -= 1
                state[4] = state[4] or is_dead
            elif state[0]:
                return
            elif not is_dead:
                state[0], state[3] = True, d_in
            else:
                state[1] += 1
                expected = fp.merge_back[d] if k > 0 and fp.merge_back[d] else fp.merge_forward[d]
                if state[1] >= expected:
                    state[0] = True
            if state[0] and state[2] == 0:
                chosen = state[3]
                if chosen is None or state[4]:
                    it.merge_out[d] = (DEAD, DEAD)
                else:
                    it.merge_out[d] = (it.values[fp.in_local[d][chosen]], np.int32(chosen))
                self._push(d, frame, k)
            return
        ld = fp.local_node[d]
        pending = it.pending[ld] - 1
        it.pending[ld] = pending
        if is_dead:
            it.dead.add(d)
        if pending == 0:
            self._push(d, frame, k)

    def _next_iteration(self, i: int, outs: list[Any], frame: _Frame, k: int) -> None:
        nk = k + 1
        if nk not in frame.iters:
            if nk in frame.deferred or nk - frame.oldest >= frame.parallel:
                frame.deferred.setdefault(nk, []).append((i, outs))
                frame.outstanding += 1
                return
            self._start_iteration(frame, nk)
        self._deliver(i, outs, False, frame, nk)

    def _start_iteration(self, frame: _Frame, n: int) -> None:
        frame.iters[n] = _Iter(frame.n_slots, frame.pending0)
        frame.newest = max(frame.newest, n)
        for enter, outs in frame.consts:
            self._deliver(enter, outs, False, frame, n)

    # -- compiled loop frames (exec/frame_compile.py) ------------------------------------------------
    def _enter_fast(self, comp: CompiledFrame, i: int, frame: _Frame, k: int, value: Any) -> None:
        """Notes one Enter of a compiled frame in (frame, k); the last one runs the whole frame."""
        key = (comp.name, id(frame), k)
        got = self._entering.get(key)
        if got is None:
            got = self._entering[key] = [len(comp.enters), [DEAD] * len(comp.enters)]
            frame.outstanding += 1  # the running frame keeps its parent iteration open
            frame.iters[k].outstanding += 1
        got[1][comp.enter_pos[i]] = value
        got[0] -= 1
        if not got[0]:
            del self._entering[key]
            self._drive_fast(comp, comp.fn(self, got[1]), frame, k)

    def _drive_fast(self, comp: CompiledFrame, gen: Any, frame: _Frame, k: int) -> None:
        """Runs a compiled frame until it ends (its Exits go to the parent iteration) or, on an event loop,
        until its time slice is over (then it resumes from the loop's ready callbacks)."""
        try:
            gen.send(None)
        except StopIteration as stop:
            for x, v in zip(comp.exits, stop.value):
                self._deliver(x, [v], v is DEAD, frame, k)
            self._finish(frame, k)
            return
        except BaseException as exc:  # noqa: BLE001 - the step's first error, named by the op that raised
            op = op_at(exc)
            self._fail(op if op is not None else self.plan.nodes[comp.enters[0]], exc)
            return
        asyncio.get_running_loop().call_soon(self._resume_fast, comp, gen, frame, k)

    def _resume_fast(self, comp: CompiledFrame, gen: Any, frame: _Frame, k: int) -> None:
        with self._lock:
            if self.error is not None:
                gen.close()
                return
            self._slice_end = time.perf_counter() + self.YIELD_EVERY_S
            with np.errstate(all="ignore"):
                self._drive_fast(comp, gen, frame, k)
                self._drain_ready()

    # -- completion -------------------------------------------------------------------------------
    def _finish(self, frame: _Frame, k: int) -> None:
        frame.iters[k].outstanding -= 1
        frame.outstanding -= 1
        self._retire(frame)

    def _retire(self, frame: _Frame) -> None:
        """Retires idle iterations in order, starts deferred ones, and completes an idle frame."""
        while (frame.pending_enters == 0 and frame.iters[frame.oldest].outstanding == 0
               and (frame.oldest < frame.newest or frame.oldest + 1 in frame.deferred)):
            del frame.iters[frame.oldest]
            frame.oldest += 1
            nk = frame.newest + 1
            while nk in frame.deferred and nk - frame.oldest < frame.parallel:
                items = frame.deferred.pop(nk)
                self._start_iteration(frame, nk)
                for i, outs in items:
                    frame.outstanding -= 1
                    self._deliver(i, outs, False, frame, nk)
                nk += 1
        if frame.done or frame.outstanding or frame.pending_enters:
            return
        frame.done = True
        parent = frame.parent
        if parent is None:
            self.remaining = 0
            return
        for e in self.fplan.exits_of.get(frame.name, []):
            if e not in frame.exit_live:
                self._deliver(e, [DEAD], True, parent, frame.parent_iter)
        self.frames.pop(frame.key, None)
        parent.iters[frame.parent_iter].outstanding -= 1
        parent.outstanding -= 1
        self._retire(parent)

    def _fetches(self) -> list[Any]:
        values = self.root.iters[0].values
        out = []
        for slot, ref in zip(self.plan.fetch_slots, self.plan.fetch_deref):
            fp = self.fplan
            v = values[fp.local_slot[slot]] if fp.slot_frame[slot] == "" else None
            if v is None or v is DEAD:
                raise errors.InvalidArgumentError(
                    None, None, "Retval does not have value: a fetched tensor is dead (on the untaken side of "
                                "a cond, or never produced)")
            out.append(v.read() if ref else v)
        return out
