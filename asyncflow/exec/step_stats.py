"""Step statistics: what a traced step records per node, in the shape of TF's `StepStats` proto.

The data model (`StepStats` > `DeviceStepStats` > `NodeExecStats` > `NodeOutput` >
`TensorDescription`, ...) is a set of dataclasses whose field names are the proto's, so code
written against TF's `RunMetadata.step_stats` reads them unchanged; `as_proto` converts them to
TensorBoard's copy of the protos (for event files), when tensorboard is installed.

Recording. A traced step (`Step.start_trace`, chosen once per step) calls kernels through
`traced_calls`: each kernel's coroutine is awaited inside a `_timed` coroutine that notes the
clock (`perf_counter_ns`) and the thread when the executor first drives it, and at its end (return
or error; a kernel that waited ends when its value comes) appends one record `(node, start_ns,
end_ns, thread, sent_bytes, outputs)` to the step's `trace`, with each output's shape, bytes and
buffer identity (`_Send`s note the bytes they hand over). An untraced step never sees any of this: it runs
the plan's plain calls, and the executor's loop has no tracing branch. What is recorded is every
kernel that ran, once per run (a loop's body once per iteration); constants the executor presets
and Merges it routes itself call no kernel and have no record.

Building. `device_step_stats(plan, records, device)` turns the records into a `DeviceStepStats`:
wall-clock times (the perf counter anchored to `time.time_ns` when it is built), TF's
`timeline_label` ("name = Op(input, input:1, ^control)"; `_Send`/`_Recv` as
"name = _Send(tensor @peer_device)"), output descriptions (dtype enum, shape, bytes),
`_Send`'s input bytes as its `referenced_tensor`, small thread ids with `thread_names`, and per
node the step's memory as TF's allocator stats (`memory[0]`: bytes of distinct live buffers after
the node ran, the peak so far, the total allocated), replayed from the records the way the
executor frees values (`_Memory`); `peak_bytes` is a step's peak per device.

Between processes. `to_obj`/`from_obj` carry a `DeviceStepStats` as JSON (checked on the way in);
`clock_offset_ns` estimates how far a peer's clock is from ours from one request/response
(NTP's formula), `ClockFilter` keeps the best of a peer's recent estimates (heartbeats and
traced steps), and `shift` moves a peer's records onto our clock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Any

ALLOCATOR = "cpu"
_SENDS = ("_Send", "_HostSend")


# -- the data model (TF's step_stats.proto, tensor_description.proto, ...) -------------------------------
@dataclass(slots=True)
class AllocationDescription:
    requested_bytes: int = 0
    allocated_bytes: int = 0
    allocator_name: str = ""
    allocation_id: int = 0
    has_single_reference: bool = False
    ptr: int = 0


@dataclass(slots=True)
class Dim:
    size: int = 0
    name: str = ""


@dataclass(slots=True)
class TensorShapeProto:
    dim: list[Dim] = field(default_factory=list)
    unknown_rank: bool = False


@dataclass(slots=True)
class TensorDescription:
    dtype: int = 0  # TF's DataType enum (DT_FLOAT = 1, ...)
    shape: TensorShapeProto = field(default_factory=TensorShapeProto)
    allocation_description: AllocationDescription = field(default_factory=AllocationDescription)


@dataclass(slots=True)
class NodeOutput:
    slot: int = 0
    tensor_description: TensorDescription = field(default_factory=TensorDescription)


@dataclass(slots=True)
class AllocatorMemoryUsed:
    allocator_name: str = ""
    total_bytes: int = 0
    peak_bytes: int = 0
    live_bytes: int = 0
    allocator_bytes_in_use: int = 0


@dataclass(slots=True)
class NodeExecStats:
    node_name: str = ""
    all_start_micros: int = 0
    op_start_rel_micros: int = 0
    op_end_rel_micros: int = 0
    all_end_rel_micros: int = 0
    memory: list[AllocatorMemoryUsed] = field(default_factory=list)
    output: list[NodeOutput] = field(default_factory=list)
    timeline_label: str = ""
    scheduled_micros: int = 0
    thread_id: int = 0
    referenced_tensor: list[AllocationDescription] = field(default_factory=list)
    all_start_nanos: int = 0
    op_start_rel_nanos: int = 0
    op_end_rel_nanos: int = 0
    all_end_rel_nanos: int = 0
    scheduled_nanos: int = 0


@dataclass(slots=True)
class DeviceStepStats:
    device: str = ""
    node_stats: list[NodeExecStats] = field(default_factory=list)
    thread_names: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class StepStats:
    dev_stats: list[DeviceStepStats] = field(default_factory=list)

    def SerializeToString(self) -> bytes:  # noqa: N802 - the proto's name
        return as_proto(self).SerializeToString()


# -- recording ----------------------------------------------------------------------------------------------
async def _timed(node: int, call: Any, sink: list, n_out: int, *args: Any, **kwargs: Any) -> Any:
    """Runs a kernel's call as the executor would, noting its start (and thread) and its end in `sink`."""
    thread = threading.get_ident()
    start = time.perf_counter_ns()
    try:
        out = await call(*args, **kwargs)
    except BaseException:
        sink.append((node, start, time.perf_counter_ns(), thread, 0, ()))
        raise
    end = time.perf_counter_ns()
    if n_out == 1:
        sink.append((node, start, end, thread, 0, (_describe(out),)))
    else:
        sink.append((node, start, end, thread, 0, tuple(_describe(v) for v in out) if n_out else ()))
    return out


async def _timed_send(node: int, call: Any, sink: list, n_out: int, *args: Any) -> Any:
    """`_timed` for a `_Send`: its record carries the bytes it hands over."""
    thread = threading.get_ident()
    start = time.perf_counter_ns()
    try:
        await call(*args)
    finally:
        sink.append((node, start, time.perf_counter_ns(), thread, sum(getattr(a, "nbytes", 0) for a in args), ()))


def _describe(value: Any) -> tuple | None:
    """(shape, bytes, buffer identity) of an array output; None for anything else (a dead value, a handle)."""
    shape = getattr(value, "shape", None)
    if type(shape) is not tuple:
        return None
    base = getattr(value, "base", None)
    return shape, getattr(value, "nbytes", 0), id(value if base is None else base)


def traced_calls(plan: Any, sink: list) -> list[Any]:
    """The plan's kernel calls, each wrapped so that it appends its record to `sink` when it ends."""
    sends = _plan_info(plan)[2]
    return [partial(_timed_send if send else _timed, i, call, sink, n)
            for i, (call, n, send) in enumerate(zip(plan.calls, plan.n_out, sends))]


# -- building ------------------------------------------------------------------------------------------------
def _input_name(t: Any) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def timeline_label(op: Any) -> str:
    """TF's label: "name = Op(a, b:1, ^c)"; a transfer names its tensor and its peer device."""
    if op.type in _SENDS:
        return f"{op.name} = {op.type}({op._attrs['tensor_name']} @{op._attrs['recv_device']})"
    if op.type in ("_Recv", "_HostRecv"):
        return f"{op.name} = {op.type}({op._attrs['tensor_name']} @{op._attrs['send_device']})"
    inputs = [_input_name(t) for t in op._inputs] + [f"^{c.name}" for c in op._control_inputs]
    return f"{op.name} = {op.type}({', '.join(inputs)})"


def _plan_info(plan: Any) -> tuple[list[str], list[list[int]], list[bool]]:
    """(labels, output dtype enums, which are sends) of a plan's nodes, made on its first traced step and kept."""
    info = plan.trace_info
    if info is None:
        labels = [timeline_label(op) for op in plan.nodes]
        enums = [[t.dtype.base_dtype.as_datatype_enum for t in op._outputs] for op in plan.nodes]
        info = plan.trace_info = (labels, enums, [op.type in _SENDS for op in plan.nodes])
    return info


def _shape_proto(shape: tuple) -> TensorShapeProto:
    return TensorShapeProto([Dim(d) for d in shape] if shape else [])


def device_step_stats(plan: Any, records: list, device: str, wall_ns: Any = time.time_ns) -> DeviceStepStats:
    """The `DeviceStepStats` of one traced step's `records` (see the module docstring)."""
    labels, enums, sends = _plan_info(plan)
    anchor = wall_ns() - time.perf_counter_ns()  # wall clock = perf counter + anchor
    nodes = plan.nodes
    threads: dict[int, int] = {}
    memory = _Memory(plan)
    stats = []
    for i, start, end, thread, in_bytes, outs in sorted(records, key=itemgetter(1, 2)):
        outputs = []
        for slot, desc in enumerate(outs):
            if desc is None:
                continue
            shape, nbytes, buffer = desc
            memory.produce(plan.out_base[i] + slot, buffer, nbytes)
            alloc = AllocationDescription(nbytes, nbytes, ALLOCATOR, buffer & 0x7FFFFFFFFFFFFFFF)
            outputs.append(NodeOutput(slot, TensorDescription(enums[i][slot], _shape_proto(shape), alloc)))
        used = AllocatorMemoryUsed(ALLOCATOR, memory.total, memory.peak, memory.live, memory.live)
        memory.consumed(i)
        start_ns = start + anchor
        dur = end - start
        ns = NodeExecStats(nodes[i].name, start_ns // 1000, 0, dur // 1000, dur // 1000, [used], outputs,
                           labels[i], start_ns // 1000, threads.setdefault(thread, len(threads)), [], start_ns, 0,
                           dur, dur, start_ns)
        if sends[i]:
            ns.referenced_tensor.append(AllocationDescription(in_bytes, in_bytes, ALLOCATOR))
        stats.append(ns)
    names = {t.ident: t.name for t in threading.enumerate()}
    return DeviceStepStats(device, stats, {tid: names.get(ident, f"thread {tid}") for ident, tid in threads.items()})


class _Memory:
    """Replays a traced step's buffers: a buffer is live from the node that produced it until the last value
    holding it is dropped, as the executor drops them (a flat plan: at its last reader; fetched values stay).
    A forwarded output is its input's buffer, so it adds nothing. Plans with loops keep every buffer (their
    records repeat per iteration): an upper bound."""

    def __init__(self, plan: Any):
        self.plan = plan
        self.flat = plan.frames is None and bool(plan.reads0)
        self.reads = list(plan.reads0) if self.flat else []
        self.kept = set(plan.fetch_slots)
        self.slots: dict[int, int] = {}  # live slot -> its buffer
        self.buffers: dict[int, list[int]] = {}  # buffer -> [bytes, slots holding it]
        self.total = self.peak = self.live = 0

    def produce(self, slot: int, buffer: int, nbytes: int) -> None:
        held = self.buffers.get(buffer)
        if held is None:
            self.buffers[buffer] = [nbytes, 1]
            self.total += nbytes
            self.live += nbytes
            self.peak = max(self.peak, self.live)
        else:
            held[1] += 1
        self.slots[slot] = buffer

    def consumed(self, i: int) -> None:
        """Node `i` has run: the values it read last, and its outputs nothing reads, are dropped."""
        if not self.flat:
            return
        plan, reads = self.plan, self.reads
        for s in plan.drops[i]:
            reads[s] -= 1
            if not reads[s]:
                self._drop(s)
        for s in range(plan.out_base[i], plan.out_base[i] + plan.n_out[i]):
            if not plan.reads0[s] and s not in self.kept:
                self._drop(s)

    def _drop(self, slot: int) -> None:
        buffer = self.slots.pop(slot, None)
        if buffer is None:
            return
        held = self.buffers[buffer]
        held[1] -= 1
        if not held[1]:
            del self.buffers[buffer]
            self.live -= held[0]


def peak_bytes(step_stats: StepStats) -> dict[str, int]:
    """Per device, the most bytes of step-produced buffers held at once (see the module docstring)."""
    return {d.device: max((m.peak_bytes for n in d.node_stats for m in n.memory), default=0)
            for d in step_stats.dev_stats}


# -- between processes ---------------------------------------------------------------------------------------
def clock_offset_ns(sent_ns: int, received_ns: int, replied_ns: int, answered_ns: int) -> int:
    """How far a peer's clock is ahead of ours, from one exchange: we sent at `sent_ns` and had the answer at
    `answered_ns` (our clock); the peer had the request at `received_ns` and answered at `replied_ns` (its
    clock). NTP's estimate; its error is at most half the round trip's network time, less if symmetric."""
    return ((received_ns - sent_ns) + (replied_ns - answered_ns)) // 2


class ClockFilter:
    """NTP's clock filter for one peer: of its recent offset samples, the one whose exchange spent the least time
    in transit (its error is at most half that time). Heartbeats on an idle loop make good samples; a step's own
    exchange is often skewed by one side's busy loop, and then loses to them."""

    def __init__(self, keep: int = 8):
        self._samples: deque[tuple[int, int]] = deque(maxlen=keep)  # (time in transit, offset), newest last

    def add(self, sent_ns: int, received_ns: int, replied_ns: int, answered_ns: int) -> None:
        transit = (answered_ns - sent_ns) - (replied_ns - received_ns)
        self._samples.append((transit, clock_offset_ns(sent_ns, received_ns, replied_ns, answered_ns)))

    def offset_ns(self) -> int:
        """The best recent estimate of how far the peer's clock is ahead of ours (0 before any sample)."""
        return min(self._samples)[1] if self._samples else 0


def shift(dev: DeviceStepStats, delta_ns: int) -> DeviceStepStats:
    """Moves every time of `dev` by `delta_ns` (a peer's records onto our clock: minus its offset)."""
    for n in dev.node_stats:
        n.all_start_nanos += delta_ns
        n.all_start_micros = n.all_start_nanos // 1000
        n.scheduled_nanos += delta_ns
        n.scheduled_micros = n.scheduled_nanos // 1000
    return dev


def to_obj(dev: DeviceStepStats) -> dict:
    """A JSON-able form of `dev` (what a worker sends its master, and a master its client)."""
    nodes = []
    for n in dev.node_stats:
        outs = [[o.slot, o.tensor_description.dtype, [d.size for d in o.tensor_description.shape.dim],
                 o.tensor_description.allocation_description.allocated_bytes] for o in n.output]
        mem = n.memory[0].peak_bytes if n.memory else 0
        nodes.append([n.node_name, n.timeline_label, n.all_start_nanos, n.op_end_rel_nanos, n.all_end_rel_nanos,
                      n.thread_id, outs, [r.requested_bytes for r in n.referenced_tensor], mem])
    return {"device": dev.device, "threads": [[k, v] for k, v in dev.thread_names.items()], "nodes": nodes}


class StatsError(ValueError):
    """Malformed step statistics from another process."""


def _int(v: Any, where: str) -> int:
    if type(v) is not int:
        raise StatsError(f"{where}: expected an integer, got {type(v).__name__}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise StatsError(f"{where}: expected a string, got {type(v).__name__}")
    return v


def _list(v: Any, where: str, n: int | None = None) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise StatsError(f"{where}: expected a list{'' if n is None else f' of {n}'}, got {str(v)[:60]}")
    return v


def from_obj(obj: Any) -> DeviceStepStats:
    """The `DeviceStepStats` of `to_obj`'s form; StatsError naming the field when malformed."""
    if not isinstance(obj, dict):
        raise StatsError(f"step stats: expected an object, got {type(obj).__name__}")
    device = _str(obj.get("device"), "step stats device")
    threads = {_int(k, "thread id"): _str(v, "thread name")
               for k, v in (_list(t, "thread", 2) for t in _list(obj.get("threads"), "threads"))}
    stats = []
    for node in _list(obj.get("nodes"), "nodes"):
        name, label, start, op_end, end, tid, outs, refs, mem = _list(node, "node", 9)
        where = f"node {str(name)[:60]}"
        ns = NodeExecStats(node_name=_str(name, where), timeline_label=_str(label, where),
                           all_start_nanos=_int(start, where), op_end_rel_nanos=_int(op_end, where),
                           all_end_rel_nanos=_int(end, where), thread_id=_int(tid, where))
        ns.all_start_micros = ns.scheduled_micros = start // 1000
        ns.scheduled_nanos = start
        ns.op_end_rel_micros, ns.all_end_rel_micros = op_end // 1000, end // 1000
        for out in _list(outs, where):
            slot, dtype, dims, nbytes = _list(out, f"{where} output", 4)
            alloc = AllocationDescription(_int(nbytes, where), nbytes, ALLOCATOR)
            shape = TensorShapeProto([Dim(_int(d, where)) for d in _list(dims, where)])
            ns.output.append(NodeOutput(_int(slot, where), TensorDescription(_int(dtype, where), shape, alloc)))
        ns.referenced_tensor = [AllocationDescription(_int(b, where), b, ALLOCATOR) for b in _list(refs, where)]
        held = _int(mem, where)
        ns.memory = [AllocatorMemoryUsed(ALLOCATOR, held, held, held)]
        stats.append(ns)
    return DeviceStepStats(device, stats, threads)


def from_peer(objs: Any, clock: Any, sent_ns: int, answered_ns: int,
              clocks: ClockFilter | None = None) -> list[DeviceStepStats]:
    """A peer's DeviceStepStats (`to_obj` forms) moved onto our clock: the peer stamped `clock` = [when it had
    our request, when it answered] on its clock; we sent at `sent_ns` and had the answer at `answered_ns`.
    With `clocks` (the peer's filter), this exchange is one more sample and the filter's best estimate is used."""
    if not isinstance(clock, list) or len(clock) != 2 or not all(type(t) is int for t in clock):
        raise StatsError(f"clock stamps must be two integers, got {str(clock)[:60]}")
    if clocks is None:
        offset = clock_offset_ns(sent_ns, clock[0], clock[1], answered_ns)
    else:
        clocks.add(sent_ns, clock[0], clock[1], answered_ns)
        offset = clocks.offset_ns()
    return [shift(from_obj(obj), -offset) for obj in _list(objs, "step stats")]


# -- TensorBoard's protos ------------------------------------------------------------------------------------
def as_proto(step_stats: StepStats) -> Any:
    """`step_stats` as TensorBoard's `StepStats` proto (needs the `tensorboard` extra)."""
    try:
        from tensorboard.compat.proto import step_stats_pb2
    except ImportError as e:  # pragma: no cover - the extra is missing
        raise ImportError("StepStats protos need tensorboard: pip install 'asyncflow[tensorboard]'") from e
    proto = step_stats_pb2.StepStats()
    for dev in step_stats.dev_stats:
        d = proto.dev_stats.add(device=dev.device)
        for k, v in dev.thread_names.items():
            d.thread_names[k] = v
        for n in dev.node_stats:
            p = d.node_stats.add(
                node_name=n.node_name, all_start_micros=n.all_start_micros, op_start_rel_micros=n.op_start_rel_micros,
                op_end_rel_micros=n.op_end_rel_micros, all_end_rel_micros=n.all_end_rel_micros,
                timeline_label=n.timeline_label, scheduled_micros=n.scheduled_micros, thread_id=n.thread_id,
                all_start_nanos=n.all_start_nanos, op_start_rel_nanos=n.op_start_rel_nanos,
                op_end_rel_nanos=n.op_end_rel_nanos, all_end_rel_nanos=n.all_end_rel_nanos,
                scheduled_nanos=n.scheduled_nanos)
            for m in n.memory:
                p.memory.add(allocator_name=m.allocator_name, total_bytes=m.total_bytes, peak_bytes=m.peak_bytes,
                             live_bytes=m.live_bytes)
            for o in n.output:
                out = p.output.add(slot=o.slot)
                td = o.tensor_description
                out.tensor_description.dtype = td.dtype
                for dim in td.shape.dim:
                    out.tensor_description.shape.dim.add(size=dim.size)
                a = td.allocation_description
                out.tensor_description.allocation_description.requested_bytes = a.requested_bytes
                out.tensor_description.allocation_description.allocated_bytes = a.allocated_bytes
                out.tensor_description.allocation_description.allocator_name = a.allocator_name
            for r in n.referenced_tensor:
                p.referenced_tensor.add(requested_bytes=r.requested_bytes, allocated_bytes=r.allocated_bytes,
                                        allocator_name=r.allocator_name)
    return proto


__all__ = ["StepStats", "DeviceStepStats", "NodeExecStats", "NodeOutput", "TensorDescription", "TensorShapeProto",
           "Dim", "AllocationDescription", "AllocatorMemoryUsed", "traced_calls", "device_step_stats",
           "timeline_label", "peak_bytes", "clock_offset_ns", "ClockFilter", "shift", "to_obj", "from_obj",
           "from_peer", "StatsError", "as_proto"]
