"""`asyncflow.python.client.timeline`, as TF1's: Chrome/Perfetto trace files from a RunMetadata's step_stats.

    run_metadata = af.RunMetadata()
    sess.run(train, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    trace = timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
    open("timeline.json", "w").write(trace)     # chrome://tracing or https://ui.perfetto.dev

The trace (the Trace Event Format's JSON object form) has one process per device ("<device>
Compute"), and in it thread lanes: each thread of the device gets as many lanes as its
overlapping ops need (a `_Recv` waiting for its tensor spans the ops that run meanwhile). Every
node run is a complete event (`"ph": "X"`, category "Op", named by its op type) whose args are
its node name, op and inputs (`input0`, ...), as TF's. With `show_dataflow`, flow arrows
(`"ph": "s"` then `"t"`, category "DataFlow") join each `_Send` to its `_Recv` on the other
device (one arrow per transfer, its bytes in the Recv's args) and, within a device, a producer
to a consumer on another lane. With `show_memory`, an "Allocators" process has a counter per
allocator: the bytes of the step's tensors alive over time (from a node's start to the end of
its last consumer on that device), whose maxima `analyze_step_stats` returns.

Times (`ts`, `dur`) are microseconds, to the nanosecond where the stats have nanoseconds, counted
from the whole second before the step's first record (the trace's `otherData.origin_micros`, in
epoch microseconds), so they keep their sub-microsecond digits.

`Timeline` reads the step stats by their proto field names, so it takes asyncflow's
(`asyncflow.exec.step_stats`) and TF's protos alike. `transfers(step_stats)` (asyncflow's
addition) lists the step's transfers: each `_Send` matched with its `_Recv` by tensor and
devices, with the bytes sent.
"""

from __future__ import annotations

import collections
import json
from typing import Any, NamedTuple

__all__ = ["Timeline", "AllocationMaximum", "StepStatsAnalysis", "Transfer", "transfers"]

_SENDS = ("_Send", "_HostSend")
_RECVS = ("_Recv", "_HostRecv")
_OP_TIMES = ("schedule", "gpu", "all")


class AllocationMaximum(NamedTuple):
    """The most bytes an allocator held: when, how many, and the tensors alive then."""

    timestamp: float
    num_bytes: int
    tensors: set


class StepStatsAnalysis(NamedTuple):
    """What `Timeline.analyze_step_stats` returns: the trace and each allocator's maximum."""

    chrome_trace: Any
    allocator_maximums: dict


class Transfer(NamedTuple):
    """One cross-device edge of a step: its `_Send` and `_Recv` node stats, devices and bytes."""

    tensor_name: str
    send_device: str
    recv_device: str
    send: Any
    recv: Any
    num_bytes: int


def parse_label(label: str) -> tuple[str, str, list[str]]:
    """(node, op, inputs) of a timeline label "node = Op(a, b:1, ^c)"; ("unknown", "unknown", []) otherwise."""
    node, sep, call = label.partition(" = ")
    op, paren, args = call.partition("(")
    if not sep or not paren or not args.endswith(")"):
        return "unknown", "unknown", []
    args = args[:-1]
    return node, op, args.split(", ") if args else []


def _times(ns: Any, origin_us: int) -> tuple[float, float]:
    """(start since `origin_us`, duration) in microseconds, to the nanosecond when those fields are filled in."""
    if ns.all_start_nanos:
        return (ns.all_start_nanos - origin_us * 1000) / 1000.0, ns.all_end_rel_nanos / 1000.0
    return float(ns.all_start_micros - origin_us), float(ns.all_end_rel_micros)


def _origin(step_stats: Any) -> int:
    """The whole second (in epoch microseconds) before the step's first record: trace times count from it, so
    that they keep sub-microsecond digits (a double holds epoch microseconds only to a quarter of one)."""
    first = min((ns.all_start_micros for dev in step_stats.dev_stats for ns in dev.node_stats), default=0)
    return first - first % 1_000_000


def _endpoint(ns: Any) -> tuple[str, str, str] | None:
    """(op, tensor name, peer device) of a _Send/_Recv's label "name = _Send(tensor @device)"."""
    _, op, inputs = parse_label(ns.timeline_label)
    if op not in _SENDS + _RECVS or len(inputs) != 1:
        return None
    tensor, at, peer = inputs[0].rpartition(" @")
    return (op, tensor, peer) if at else None


def _bytes(ns: Any, sending: bool) -> int:
    if sending:
        return sum(r.requested_bytes for r in ns.referenced_tensor)
    return sum(o.tensor_description.allocation_description.requested_bytes for o in ns.output)


def _pairs(step_stats: Any) -> list[tuple[tuple[str, str, str], tuple[int, int], tuple[int, int]]]:
    """((tensor, send device, recv device), (device index, node index) of the _Send, and of the _Recv)."""
    sends, recvs = {}, {}
    for d, dev in enumerate(step_stats.dev_stats):
        for k, ns in enumerate(dev.node_stats):
            end = _endpoint(ns)
            if end is None:
                continue
            op, tensor, peer = end
            if op in _SENDS:
                sends[(tensor, dev.device, peer)] = (d, k)
            else:
                recvs[(tensor, peer, dev.device)] = (d, k)
    return [(key, at, recvs[key]) for key, at in sends.items() if key in recvs]


def transfers(step_stats: Any) -> list[Transfer]:
    """The step's transfers: every `_Send` whose `_Recv` is in `step_stats` (same tensor, same two devices)."""
    out = []
    devs = step_stats.dev_stats
    for (tensor, src, dst), (sd, sk), (rd, rk) in _pairs(step_stats):
        send, recv = devs[sd].node_stats[sk], devs[rd].node_stats[rk]
        out.append(Transfer(tensor, src, dst, send, recv, _bytes(send, True) or _bytes(recv, False)))
    return out


class _ChromeTrace:
    """The events of a trace, written as the Trace Event Format's JSON object."""

    def __init__(self, origin_us: int) -> None:
        self.metadata: list[dict] = []
        self.events: list[dict] = []
        self.origin_us = origin_us

    def process(self, pid: int, name: str) -> None:
        self.metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self.metadata.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})

    def thread(self, pid: int, tid: int, name: str) -> None:
        self.metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})

    def op(self, pid: int, tid: int, ts: float, dur: float, name: str, args: dict) -> None:
        self.events.append({"ph": "X", "cat": "Op", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                            "args": args})

    def flow(self, name: str, flow_id: int, start: tuple[int, int, float], end: tuple[int, int, float]) -> None:
        for ph, (pid, tid, ts) in (("s", start), ("t", end)):
            self.events.append({"ph": ph, "cat": "DataFlow", "name": name, "pid": pid, "tid": tid, "ts": ts,
                                "id": flow_id})

    def counter(self, pid: int, ts: float, name: str, value: int) -> None:
        self.events.append({"ph": "C", "cat": "Memory", "name": name, "pid": pid, "tid": 0, "ts": ts,
                            "args": {name: value}})

    def format_to_string(self, pretty: bool = False) -> str:
        trace = {"traceEvents": self.metadata + self.events, "displayTimeUnit": "ns",
                 "otherData": {"origin_micros": self.origin_us}}
        return json.dumps(trace, indent=4) if pretty else json.dumps(trace, separators=(",", ":"))


def _inside(start: float, dur: float, at_end: bool) -> float:
    """A timestamp inside the slice [start, start + dur] (near its end or start) that a flow event binds to."""
    return round(start + dur - min(dur / 2, 0.001) if at_end else start, 3)


class Timeline:
    """`Timeline(step_stats, graph=None)`: a step's stats as a Chrome trace (see the module docstring)."""

    def __init__(self, step_stats: Any, graph: Any = None):
        self._step_stats = step_stats
        self._graph = graph

    def _lanes(self, trace: _ChromeTrace, pid: int, dev: Any) -> dict[int, tuple[int, float, float]]:
        """Each node's (tid, start, duration): per thread, the first lane free at its start."""
        placed: dict[int, tuple[int, float, float]] = {}
        lanes: dict[int, list[list[float]]] = {}  # thread -> its lanes' [end time, tid]
        names = dict(dev.thread_names)
        times = [_times(ns, trace.origin_us) for ns in dev.node_stats]
        for k in sorted(range(len(times)), key=times.__getitem__):
            ns = dev.node_stats[k]
            start, dur = times[k]
            own = lanes.setdefault(ns.thread_id, [])
            lane = next((lane for lane in own if lane[0] <= start), None)
            if lane is None:
                tid = sum(len(v) for v in lanes.values())
                lane = [0.0, tid]
                base = names.get(ns.thread_id, f"thread {ns.thread_id}")
                trace.thread(pid, tid, base if not own else f"{base} #{len(own)}")
                own.append(lane)
            lane[0] = start + dur
            placed[k] = (int(lane[1]), start, dur)
        return placed

    def analyze_step_stats(self, show_dataflow: bool = True, show_memory: bool = True,
                           op_time: str = "schedule") -> StepStatsAnalysis:
        """The trace of the step and, with `show_memory`, each allocator's maximum (TF's `StepStatsAnalysis`)."""
        if op_time not in _OP_TIMES:
            raise ValueError(f"Timeline: op_time must be one of {_OP_TIMES}, got {op_time!r}")
        trace = _ChromeTrace(_origin(self._step_stats))
        where: dict[tuple[int, int], tuple[int, int, float, float]] = {}  # (device, node) -> pid, tid, start, dur
        produced: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}  # (device, tensor) -> (node, allocation)
        last_use: dict[tuple[str, str], float] = {}
        devs = self._step_stats.dev_stats
        allocators_pid = len(devs) + 1
        flows = 0
        for d, dev in enumerate(devs):
            pid = d + 1
            trace.process(pid, f"{dev.device} Compute")
            placed = self._lanes(trace, pid, dev)
            for k, ns in enumerate(dev.node_stats):
                tid, start, dur = placed[k]
                where[(d, k)] = (pid, tid, start, dur)
                _, op, inputs = parse_label(ns.timeline_label)
                args = {"name": ns.node_name, "op": op, **{f"input{i}": name for i, name in enumerate(inputs)}}
                if op in _SENDS + _RECVS:
                    args["bytes"] = _bytes(ns, op in _SENDS)
                trace.op(pid, tid, round(start, 3), round(dur, 3), op, args)
                for out in ns.output:
                    tensor = ns.node_name if out.slot == 0 else f"{ns.node_name}:{out.slot}"
                    produced[(dev.device, tensor)] = ((d, k), out.tensor_description.allocation_description)
                    last_use[(dev.device, tensor)] = start + dur
            for k, ns in enumerate(dev.node_stats):  # producers first (above), then every consumer's inputs
                pid, tid, start, dur = where[(d, k)]
                for name in parse_label(ns.timeline_label)[2]:
                    got = produced.get((dev.device, name))
                    if got is None:
                        continue
                    last_use[(dev.device, name)] = max(last_use[(dev.device, name)], start + dur)
                    src_pid, src_tid, src_start, src_dur = where[got[0]]
                    if show_dataflow and src_tid != tid:  # arrows along one lane would only clutter it
                        flows += 1
                        trace.flow(name, flows, (src_pid, src_tid, _inside(src_start, src_dur, True)),
                                   (pid, tid, _inside(start, dur, False)))
        if show_dataflow:
            for (tensor, _, _), send, recv in _pairs(self._step_stats):
                s_pid, s_tid, s_start, s_dur = where[send]
                r_pid, r_tid, r_start, r_dur = where[recv]
                flows += 1
                trace.flow(tensor, flows, (s_pid, s_tid, _inside(s_start, s_dur, False)),
                           (r_pid, r_tid, _inside(r_start, r_dur, True)))
        maximums: dict = {}
        if show_memory:
            maximums = self._memory(trace, allocators_pid, produced, last_use, where)
        return StepStatsAnalysis(trace, maximums)

    @staticmethod
    def _memory(trace: _ChromeTrace, pid: int, produced: dict, last_use: dict, where: dict) -> dict:
        """Counters of live tensor bytes per allocator; each allocator's maximum."""
        trace.process(pid, "Allocators")
        changes: dict[str, list[tuple[float, int, str]]] = collections.defaultdict(list)
        for key, (node, alloc) in produced.items():
            name = alloc.allocator_name or "unknown"
            created = where[node][2]
            changes[name].append((created, alloc.requested_bytes, key[1]))
            changes[name].append((last_use[key], -alloc.requested_bytes, key[1]))
        maximums = {}
        for allocator, events in changes.items():
            total, alive, best = 0, set(), AllocationMaximum(0, 0, set())
            for ts, delta, tensor in sorted(events, key=lambda e: (e[0], e[1])):
                total += delta
                (alive.add if delta >= 0 else alive.discard)(tensor)
                if total > best.num_bytes:
                    best = AllocationMaximum(ts, total, set(alive))
                trace.counter(pid, round(ts, 3), allocator, total)
            maximums[allocator] = best
        return maximums

    def generate_chrome_trace_format(self, show_dataflow: bool = True, show_memory: bool = False,
                                     op_time: str = "schedule") -> str:
        """The step as a Chrome trace: a JSON string for chrome://tracing or Perfetto (TF's signature)."""
        analysis = self.analyze_step_stats(show_dataflow=show_dataflow, show_memory=show_memory, op_time=op_time)
        return analysis.chrome_trace.format_to_string(pretty=True)
