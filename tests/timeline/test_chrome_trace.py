"""`Timeline(step_stats).generate_chrome_trace_format()`: JSON that loads, one process per device, every node run as
an op event with TF's args, lanes that never overlap, memory counters, and TF's protos read the same way."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.step_stats import (
    AllocationDescription,
    DeviceStepStats,
    NodeExecStats,
    StepStats,
    as_proto,
)
from asyncflow.python.client import timeline

FULL = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE)


def _traced_step():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 3], name="x")
        w = af.Variable(np.ones((3, 4), np.float32), name="w")
        y = af.nn.relu(af.matmul(x, w), name="y")
        loss = af.reduce_sum(y, name="loss")
        init = af.global_variables_initializer()
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        sess.run(init)
        sess.run(loss, {x: np.ones((2, 3))}, options=FULL, run_metadata=meta)
    return meta.step_stats


def _events(step_stats, **kwargs):
    return json.loads(timeline.Timeline(step_stats).generate_chrome_trace_format(**kwargs))["traceEvents"]


def test_every_node_is_an_op_event_with_tfs_args():
    stats = _traced_step()
    trace = json.loads(timeline.Timeline(stats).generate_chrome_trace_format())
    origin, events = trace["otherData"]["origin_micros"], trace["traceEvents"]
    (process,) = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert process["args"]["name"] == "/job:localhost/replica:0/task:0/device:CPU:0 Compute"
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert sorted(ops) == sorted(n.node_name for n in stats.dev_stats[0].node_stats)
    mm = ops["MatMul"]
    assert (mm["name"], mm["cat"], mm["args"]) == ("MatMul", "Op", {"name": "MatMul", "op": "MatMul", "input0": "x",
                                                                     "input1": "w/read"})
    node = next(n for n in stats.dev_stats[0].node_stats if n.node_name == "MatMul")
    assert 0 < node.all_start_micros - origin < 1_000_000  # counted from the whole second before the step
    assert mm["ts"] == pytest.approx((node.all_start_nanos - origin * 1000) / 1000, abs=0.001)
    assert mm["dur"] == pytest.approx(node.all_end_rel_nanos / 1000, abs=0.001)
    assert not [e for e in _events(stats, show_dataflow=False) if e["ph"] in ("s", "t")]


def test_memory_counters_and_allocator_maximums():
    stats = _traced_step()
    analysis = timeline.Timeline(stats).analyze_step_stats(show_memory=True)
    best = analysis.allocator_maximums["cpu"]
    assert best.num_bytes >= 32 + 32 + 4 and {"MatMul", "y"} & best.tensors
    trace = json.loads(analysis.chrome_trace.format_to_string())
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters and max(e["args"]["cpu"] for e in counters) == best.num_bytes and counters[-1]["args"]["cpu"] == 0
    with pytest.raises(ValueError, match="op_time"):
        timeline.Timeline(stats).generate_chrome_trace_format(op_time="wall")


async def test_overlapping_ops_get_lanes_of_their_own():
    g = af.Graph()
    with g.as_default():
        q = af.FIFOQueue(4, [af.float32], shapes=[[]], name="q")
        v = af.placeholder(af.float32, [], name="v")
        enq = q.enqueue([v])
        waited = q.dequeue(name="waited")
        limit = af.placeholder(af.float32, [], name="limit")  # fed: `busy` is computed, not folded at plan time
        busy = af.reduce_sum(af.range(0.0, limit), name="busy")  # runs while the dequeue waits
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        pending = asyncio.ensure_future(sess.arun([waited, busy], {limit: 10.0}, options=FULL, run_metadata=meta))
        await asyncio.sleep(0.05)
        await sess.arun(enq, {v: 1.0})
        await pending
    ops = [e for e in _events(meta.step_stats) if e["ph"] == "X"]
    by_name = {e["args"]["name"]: e for e in ops}
    assert by_name["waited"]["tid"] != by_name["busy"]["tid"]
    lanes: dict = {}
    for e in sorted(ops, key=lambda e: e["ts"]):
        end = lanes.get((e["pid"], e["tid"]), float("-inf"))
        assert e["ts"] >= end - 0.001, e["args"]["name"]
        lanes[(e["pid"], e["tid"])] = e["ts"] + e["dur"]


def test_transfers_and_flow_arrows_from_hand_made_stats():
    def node(name, label, start, dur, **kw):
        return NodeExecStats(node_name=name, timeline_label=label, all_start_micros=start, all_end_rel_micros=dur,
                             **kw)

    a, b = "/job:a/replica:0/task:0/device:CPU:0", "/job:b/replica:0/task:0/device:CPU:0"
    send = node("t/_send", f"t/_send = _Send(t:0 @{b})", 10, 2)
    send.referenced_tensor = [AllocationDescription(64, 64, "cpu")]
    recv = node("t/_recv", f"t/_recv = _Recv(t:0 @{a})", 5, 20)
    stray = node("u/_recv", f"u/_recv = _Recv(u:0 @{a})", 5, 1)  # its send is not in the stats: no arrow
    stats = StepStats([DeviceStepStats(a, [send]), DeviceStepStats(b, [recv, stray])])
    (move,) = timeline.transfers(stats)
    assert (move.tensor_name, move.send_device, move.recv_device, move.num_bytes) == ("t:0", a, b, 64)
    events = _events(stats)
    (start,) = [e for e in events if e["ph"] == "s"]
    (end,) = [e for e in events if e["ph"] == "t"]
    assert start["id"] == end["id"] and (start["pid"], end["pid"]) == (1, 2)
    assert 10 <= start["ts"] <= 12 and 5 <= end["ts"] <= 25 and end["ts"] >= start["ts"]


def test_tfs_protos_give_the_same_trace():
    pytest.importorskip("tensorboard")
    stats = _traced_step()
    ours = [e for e in _events(stats) if e["ph"] == "X"]
    theirs = [e for e in _events(as_proto(stats)) if e["ph"] == "X"]
    assert ours == theirs
