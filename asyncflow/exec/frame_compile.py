"""Loop frames compiled into straight-line Python: the frame executor's fast path.

A loop frame qualifies when no kernel in it (or in the frames nested in it) may wait, and its
shape is a loop's: each Merge either joins values of one iteration (a cond's Merge) or takes its
forward inputs from the frame's Enters and its back inputs from the frame's NextIterations (a
loop's Merge); a non-constant Enter feeds only loop Merges. Such a frame becomes one generated
generator function `frame(step, enter_values) -> exit values`, run by `FrameStep` (exec/frames.py)
when all the frame's Enters have fired in a parent iteration. It runs the iterations one after
another, each node once per iteration in topological order (back edges removed), each value a
local variable:

- Enter, Exit, NextIteration, Merge, Switch (on a LoopCond) and Identity are assignments, not kernel
  calls; constants gated by control edges are preset values; every other node is one plain call.
- Dead values are the DEAD marker: a node with a dead data or control input does not run and its
  outputs are DEAD; a Merge takes its first live input (a loop Merge: the Enters' in iteration 0, the
  back inputs' later), or is DEAD; a live Exit sets the frame's result, an Exit never live returns DEAD
  (a loop inside an untaken branch); the next iteration runs while some NextIteration is live.
  A value that never arrives (a NextIteration that was dead while another was live) reads as DEAD:
  both mean "this node does not run", so kernels run and Exits deliver exactly as the dynamic rules say.
- A nested frame is one call (`yield from`) placed where all its Enters' inputs are ready.
- Iterations run one at a time: with no kernel that waits, that is one of the schedules
  `parallel_iterations` allows (a loop with a waiting kernel keeps the dynamic scheduler).
- On an event loop the function yields between iterations once the step's time slice is over, so a
  long loop does not stop heartbeats; `FrameStep` resumes it later.
- An error names its op: the generated code's line numbers map back to nodes (`op_at`).
"""

from __future__ import annotations

import heapq
import itertools
import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.ops.control_flow_ops import DEAD

_CONTROL = -1
_COUNTER = itertools.count()


class _LineMap:
    """Which node each line of one generated function calls; kept alive by its CompiledFrame only."""

    def __init__(self, nodes: list[Any], line_node: dict[int, int]):
        self.nodes, self.line_node = nodes, line_node


# No string literal, escape or comment can be in generated code: nothing from a graph (names, attrs, which
# may come over the network) is ever written into it, only integers and names made here.
_UNSAFE = re.compile(r"[\"'\\#]")

# generated file name -> its line map, for naming the op of an error; entries go with their plans
LINES: weakref.WeakValueDictionary[str, _LineMap] = weakref.WeakValueDictionary()


@dataclass
class CompiledFrame:
    name: str
    fn: Any  # generator function (step, enter values) -> tuple of exit values
    enters: list[int]  # the frame's Enter nodes, in the order of `enter values`
    enter_pos: dict[int, int]
    exits: list[int]  # its Exit nodes, in the order of the result
    source: str = field(repr=False, default="")
    lines: Any = field(repr=False, default=None)  # its _LineMap (LINES holds it weakly)


def _drive(call: Any, *args: Any) -> Any:
    """A kernel declared without is_async but written as a coroutine: run to its end (it must not wait)."""
    coro = call(*args)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise errors.InternalError(None, None, "Kernel suspended inside a loop compiled for kernels that never wait; "
                                           "ops whose kernels await must be declared is_async=True.")


def op_at(exc: BaseException) -> Any:
    """The op whose generated line raised `exc` (the innermost compiled frame in its traceback), or None."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        entry = LINES.get(tb.tb_frame.f_code.co_filename)
        if entry is not None:
            node = entry.line_node.get(tb.tb_lineno)
            if node is not None:
                found = entry.nodes[node]
        tb = tb.tb_next
    return found


def compile_fast_frames(fp: Any) -> dict[str, CompiledFrame]:
    """Every loop frame of the FramePlan `fp` that qualifies (see the module docstring), by name."""
    c = _Compiler(fp)
    out: dict[str, CompiledFrame] = {}
    for name in sorted(c.children, key=c.depth, reverse=True):  # inner frames first
        if name and c.qualifies(name, out):
            out[name] = c.generate(name, out)
    return out


class _Compiler:
    def __init__(self, fp: Any):
        self.fp = fp
        plan = self.plan = fp.plan
        n = len(plan.nodes)
        self.producer: dict[int, int] = {}
        for i in range(n):
            for j in range(plan.n_out[i]):
                self.producer[plan.out_base[i] + j] = i
        self.ctrl_in: list[list[int]] = [[] for _ in range(n)]
        self.back_in: list[set[int]] = [set() for _ in range(n)]  # a Merge's input positions that are back edges
        self.readers: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (dst, dst input or -1)
        for s, edges in enumerate(fp.out_edges):
            for src_out, d, d_in, back in edges:
                self.readers[s].append((d, d_in))
                if src_out == _CONTROL:
                    self.ctrl_in[d].append(s)
                elif back:
                    self.back_in[d].add(d_in)
        self.children: dict[str, list[str]] = {"": []}
        for name in fp.parent_of:
            self.children.setdefault(name, [])
        for name, parent in fp.parent_of.items():
            self.children.setdefault(parent, []).append(name)
        self.members: dict[str, list[int]] = {name: [] for name in self.children}
        for i, f in enumerate(fp.frame_of):
            self.members.setdefault(f, []).append(i)

    def depth(self, name: str) -> int:
        d = 0
        while name:
            name = self.fp.parent_of.get(name, "")
            d += 1
        return d

    def _child_of(self, name: str, i: int) -> str | None:
        """The direct child frame of `name` that holds node i (None: i is not inside a child of `name`)."""
        f = self.fp.frame_of[i]
        while f:
            parent = self.fp.parent_of.get(f, "")
            if parent == name:
                return f
            f = parent
        return None

    # -- which frames qualify, and in what order a frame's nodes run ------------------------------------
    def qualifies(self, name: str, done: dict[str, CompiledFrame]) -> bool:
        if any(child not in done for child in self.children[name]):
            return False
        fp, plan = self.fp, self.plan
        kinds = fp.kind
        for i in self.members[name]:
            kind = kinds[i]
            opdef = plan.nodes[i].op_def
            if kind is None and (opdef.is_async or (plan.direct[i] is None and plan.calls[i] is None)):
                return False
            if kind == "merge" and self.back_in[i]:
                for j, s in enumerate(plan.in_slots[i]):
                    p = self.producer.get(s)
                    if p is None:
                        return False
                    if j in self.back_in[i]:
                        if kinds[p] != "next_iteration" or fp.frame_of[p] != name:
                            return False
                    elif kinds[p] != "enter" or fp.frame_of[p] != name:
                        return False
            if kind == "enter" and not plan.nodes[i]._attrs.get("is_constant"):
                for d, d_in in self.readers[i]:
                    if d_in == _CONTROL or kinds[d] != "merge" or d_in in self.back_in[d]:
                        return False
            if kind == "next_iteration":
                if any(d_in == _CONTROL or kinds[d] != "merge" for d, d_in in self.readers[i]):
                    return False
        return self.order(name) is not None

    def order(self, name: str) -> list[Any] | None:
        """The frame's body (nodes, and ("frame", child) for nested frames) in dependency order, or None
        when a nested frame's results feed its own Enters (no straight-line order exists)."""
        fp, plan = self.fp, self.plan
        units: dict[Any, int] = {}  # unit -> smallest node index (the tie-break: plan order)
        for i in self.members[name]:
            if fp.kind[i] != "enter":
                units[i] = i
        for child in self.children[name]:
            units[("frame", child)] = min(self._all_members(child))
        deps: dict[Any, set] = {u: set() for u in units}

        def unit_of(i: int) -> Any:
            if fp.frame_of[i] == name:
                return None if fp.kind[i] == "enter" else i
            child = self._child_of(name, i)
            return ("frame", child) if child is not None else None

        for u in units:
            if isinstance(u, tuple):
                sources = []
                for e in self._all_members(u[1]):
                    if fp.kind[e] == "enter" and fp.frame_of[e] == u[1]:
                        sources += [self.producer[s] for s in plan.in_slots[e] if s in self.producer]
                        sources += self.ctrl_in[e]
            else:
                sources = [self.producer[s] for j, s in enumerate(plan.in_slots[u])
                           if s in self.producer and j not in self.back_in[u]]
                sources += self.ctrl_in[u]
            for p in sources:
                pu = unit_of(p)
                if pu is not None and pu != u:
                    deps[u].add(pu)
        users: dict[Any, list] = {u: [] for u in units}
        for u, ds in deps.items():
            for d in ds:
                users[d].append(u)
        left = {u: len(ds) for u, ds in deps.items()}
        heap = [(units[u], n, u) for n, u in enumerate(units) if not left[u]]
        heapq.heapify(heap)
        tie = itertools.count(len(units))
        out = []
        while heap:
            _, _, u = heapq.heappop(heap)
            out.append(u)
            for w in users[u]:
                left[w] -= 1
                if not left[w]:
                    heapq.heappush(heap, (units[w], next(tie), w))
        return out if len(out) == len(units) else None

    def _all_members(self, name: str) -> list[int]:
        out = list(self.members[name])
        for child in self.children[name]:
            out += self._all_members(child)
        return out

    # -- code generation ------------------------------------------------------------------------------
    def generate(self, name: str, done: dict[str, CompiledFrame]) -> CompiledFrame:
        g = _Gen(self, name, done)
        return g.build()


class _Gen:
    def __init__(self, c: _Compiler, name: str, done: dict[str, CompiledFrame]):
        self.c, self.name, self.done = c, name, done
        self.fp, self.plan = c.fp, c.plan
        self.lines: list[str] = []
        self.line_node: dict[int, int] = {}
        self.bound: dict[str, Any] = {"D": DEAD, "perf": time.perf_counter}
        members = c.members[name]
        kinds = self.fp.kind
        self.enters = [i for i in members if kinds[i] == "enter"]
        self.exits = [i for i in members if kinds[i] == "exit"]
        self.loop_merges = [i for i in members if kinds[i] == "merge" and c.back_in[i]]
        self.nexts = [i for i in members if kinds[i] == "next_iteration"]
        self.flagged: set[int] = set()  # nodes without outputs whose dead-ness a control edge reads

    def emit(self, indent: int, text: str, node: int | None = None) -> None:
        self.lines.append("    " * indent + text)
        if node is not None:
            self.line_node[len(self.lines)] = node

    def bind(self, prefix: str, value: Any) -> str:
        key = f"{prefix}{len(self.bound)}"
        self.bound[key] = value
        return key

    def v(self, slot: int) -> str:
        return f"v{slot}"

    def dead_of(self, i: int) -> str:
        """An expression true when node i (a control input) is dead."""
        plan, kind = self.plan, self.fp.kind[i]
        b = plan.out_base[i]
        if kind == "switch":
            return f"(v{b} is D and v{b + 1} is D)"
        if plan.n_out[i]:
            return f"v{b} is D"
        self.flagged.add(i)
        return f"d{i}"

    def ctrl_dead(self, i: int) -> str:
        return " or ".join(self.dead_of(c) for c in self.c.ctrl_in[i])

    def build(self) -> CompiledFrame:
        plan = self.plan
        body_start = len(self.lines)
        order = self.c.order(self.name)
        assert order is not None
        for u in order:
            if isinstance(u, tuple):
                self.child(u[1])
            else:
                self.node(u)
        body = self.lines[body_start:]
        body_map = {ln - body_start: n for ln, n in self.line_node.items()}
        self.lines, self.line_node = [], {}
        fname = f"<asyncflow-frame-{next(_COUNTER)}>"
        self.emit(0, "")  # the header, written last: it binds every name the body uses as a local
        self.emit(1, "timed = step._done is not None")
        if self.enters:
            self.emit(1, "".join(f"v{plan.out_base[e]}, " for e in self.enters) + "= ev")
        for x in self.exits:
            self.emit(1, f"v{plan.out_base[x]} = D")
        for i in self.flagged:
            self.emit(1, f"d{i} = True")
        for m in self.loop_merges:
            pairs = [(f"v{s}", j) for j, s in enumerate(plan.in_slots[m]) if j not in self.c.back_in[m]]
            self.first_live(1, f"c{m}", f"ci{m}", pairs)
        self.emit(1, "while True:")
        offset = len(self.lines)
        for text in body:
            self.lines.append("    " + text)
        for ln, n in body_map.items():
            self.line_node[offset + ln] = n
        if self.nexts:
            self.emit(2, "if " + " and ".join(f"n{j} is D" for j in self.nexts) + ":")
            self.emit(3, "break")
            for m in self.loop_merges:
                pairs = [(f"n{self.c.producer[s]}", j) for j, s in enumerate(plan.in_slots[m])
                         if j in self.c.back_in[m]]
                self.first_live(2, f"c{m}", f"ci{m}", pairs)
            self.emit(2, "if timed and perf() > step._slice_end:")
            self.emit(3, "yield")
        else:
            self.emit(2, "break")
        if not self.has_yield():
            self.emit(1, "if False:")
            self.emit(2, "yield")
        self.emit(1, "return (" + "".join(f"v{plan.out_base[x]}, " for x in self.exits) + ")")
        self.lines[0] = "def frame(step, ev, " + ", ".join(f"{k}={k}" for k in self.bound) + "):"
        source = "\n".join(self.lines) + "\n"
        if _UNSAFE.search(source):  # only slot numbers and generated names are written; values go in `ns`
            raise RuntimeError(f"generated loop code for frame {self.name!r} holds text it must not")
        ns = dict(self.bound)
        exec(compile(source, fname, "exec"), ns)  # noqa: S102 - code generated from the plan, no user text
        lines = LINES[fname] = _LineMap(plan.nodes, self.line_node)
        return CompiledFrame(self.name, ns["frame"], self.enters, {e: n for n, e in enumerate(self.enters)},
                             self.exits, source, lines)

    def has_yield(self) -> bool:
        return any(line.strip() == "yield" or "yield from" in line for line in self.lines)

    def first_live(self, ind: int, var: str, ivar: str, pairs: list[tuple[str, int]]) -> None:
        for n, (expr, j) in enumerate(pairs):
            self.emit(ind, f"{'if' if n == 0 else 'elif'} {expr} is not D:")
            self.emit(ind + 1, f"{var} = {expr}; {ivar} = {self.bind('I', np.int32(j))}")
        if pairs:
            self.emit(ind, "else:")
            self.emit(ind + 1, f"{var} = {ivar} = D")
        else:
            self.emit(ind, f"{var} = {ivar} = D")

    def child(self, name: str) -> None:
        comp = self.done[name]
        plan = self.plan
        fn = self.bind("F", comp.fn)
        args = []
        for e in comp.enters:
            (s,) = plan.in_slots[e]
            deref = plan.deref[e] is not None and plan.deref[e][0]
            value = f"(D if v{s} is D else v{s}.read())" if deref else f"v{s}"
            cd = self.ctrl_dead(e)
            args.append(f"(D if {cd} else {value})" if cd else value)
        outs = "".join(f"v{plan.out_base[x]}, " for x in comp.exits)
        target = f"({outs}) = " if comp.exits else ""
        line = f"{target}yield from {fn}(step, [{', '.join(args)}])"
        self.emit(1, line, comp.exits[0] if comp.exits else comp.enters[0])

    def node(self, i: int) -> None:
        plan, fp = self.plan, self.fp
        kind = fp.kind[i]
        slots = plan.in_slots[i]
        b = plan.out_base[i]
        cd = self.ctrl_dead(i)
        op = plan.nodes[i]
        if kind == "merge":
            if self.c.back_in[i]:
                self.emit(1, f"v{b} = c{i}; v{b + 1} = ci{i}")
            else:
                self.first_live(1, f"v{b}", f"v{b + 1}", [(f"v{s}", j) for j, s in enumerate(slots)])
            if cd:
                self.emit(1, f"if {cd}:")
                self.emit(2, f"v{b} = v{b + 1} = D")
            return
        if kind == "next_iteration":
            self.emit(1, f"n{i} = D if {cd} else v{slots[0]}" if cd else f"n{i} = v{slots[0]}")
            return
        if kind == "exit":
            cond = f"v{slots[0]} is not D" + (f" and not ({cd})" if cd else "")
            self.emit(1, f"if {cond}:")
            self.emit(2, f"v{b} = v{slots[0]}")
            return
        if kind == "switch" and self._pred_is_loop_cond(i) and plan.deref[i] is None:
            d, p = f"v{slots[0]}", f"v{slots[1]}"
            self.emit(1, f"if {d} is D or {p} is D{' or ' + cd if cd else ''}:")
            self.emit(2, f"v{b} = v{b + 1} = D")
            self.emit(1, f"elif {p}:")
            self.emit(2, f"v{b} = D; v{b + 1} = {d}")
            self.emit(1, "else:")
            self.emit(2, f"v{b} = {d}; v{b + 1} = D")
            return
        if kind is None and op.type == "Identity" and plan.deref[i] is None and not plan.uses_step[i]:
            self.emit(1, f"v{b} = D if {cd} else v{slots[0]}" if cd else f"v{b} = v{slots[0]}")
            return
        const = fp.const_out[i]
        if kind is None and const is not None and not slots:
            k = self.bind("K", const)
            self.emit(1, f"v{b} = D if {cd} else {k}" if cd else f"v{b} = {k}")
            return
        self.call(i, cd)

    def _pred_is_loop_cond(self, i: int) -> bool:
        p = self.c.producer.get(self.plan.in_slots[i][1])
        return p is not None and self.plan.nodes[p].type == "LoopCond"

    def call(self, i: int, cd: str) -> None:
        plan = self.plan
        f = plan.direct[i]
        k = self.bind("k", f if f is not None else _bound_drive(plan.calls[i]))
        flags = plan.deref[i]
        args = [f"v{s}.read()" if flags is not None and flags[j] else f"v{s}" for j, s in enumerate(plan.in_slots[i])]
        if plan.uses_step[i]:
            args.insert(0, "step")
        checks = [f"v{s} is D" for s in dict.fromkeys(plan.in_slots[i])]
        if cd:
            checks.append(cd)
        b, n = plan.out_base[i], plan.n_out[i]
        outs = ", ".join(f"v{b + j}" for j in range(n))
        call = f"{k}({', '.join(args)})"
        ind = 1
        if checks:
            self.emit(1, f"if {' or '.join(checks)}:")
            self.emit(2, f"{' = '.join(f'v{b + j}' for j in range(n))} = D" if n else f"d{i} = True")
            self.emit(1, "else:")
            ind = 2
        if n == 1:
            self.emit(ind, f"{outs} = {call}", i)
        elif n:
            self.emit(ind, f"{outs}, = {call}", i)
        else:
            self.emit(ind, call, i)
            self.emit(ind, f"d{i} = False")


def _bound_drive(call: Any) -> Any:
    def run(*args: Any) -> Any:
        return _drive(call, *args)

    return run
