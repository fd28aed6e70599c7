"""A traced step through a real `asyncflow` cluster: every task's device, every op, every transfer with its bytes,
clocks on the client's (a tensor never arrives before it was sent), and its Chrome trace."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.executor import needed_ops
from asyncflow.python.client import timeline

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
TOLERANCE_NS = 2_000_000  # what NTP's estimate may be off by on a loaded machine: well under a step


def _model():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [4, 3], name="x")
        with af.device("/job:ps/task:0"):
            w = af.Variable(np.ones((3, 2), np.float32), name="w")
            steps = af.Variable(0, name="steps")
        with af.device("/job:worker/task:0"):
            h = af.nn.relu(af.matmul(x, w), name="h")
        with af.device("/job:worker/task:1"):
            loss = af.reduce_sum(h * h, name="loss")
            with af.control_dependencies([loss]):  # a control edge across tasks travels as a token
                count = af.assign_add(steps, 1, name="count")
        init = af.global_variables_initializer()
    return g, x, loss, count, init


@pytest.fixture(scope="module", params=["master", "worker0"])
def traced(cluster, request):
    """One traced step through the master process, or through worker 0 (which serves the master API too, and
    runs its own partition in process)."""
    target = cluster.target if request.param == "master" else f"http://{cluster.address('worker', 0)}"
    g, x, loss, count, init = _model()
    meta = af.RunMetadata()
    with af.Session(target, graph=g) as sess:
        sess.run(init)
        before = time.time_ns()
        value, _ = sess.run([loss, count], {x: np.ones((4, 3))}, options=af.RunOptions(trace_level=3),
                            run_metadata=meta)
        after = time.time_ns()
        assert value == 72.0
        untraced = af.RunMetadata()
        sess.run(loss, {x: np.ones((4, 3))}, run_metadata=untraced)
        assert untraced.step_stats.dev_stats == []
    expected = {op.name for op in needed_ops([loss], [count.op], [x]) if op.type != "Const"}
    return meta.step_stats, expected, before, after


def test_every_task_reports_every_op_it_ran(traced):
    stats, expected, before, after = traced
    devices = {d.device: d for d in stats.dev_stats}
    assert sorted(devices) == sorted([PS, W0, W1])
    ran = {n.node_name: d.device for d in stats.dev_stats for n in d.node_stats}
    assert expected <= ran.keys(), expected - ran.keys()
    assert ran["w"] == ran["w/read"] == ran["steps"] == ran["count"] == PS
    assert ran["MatMul"] == ran["h"] == W0 and ran["loss"] == ran["mul"] == W1
    for d in stats.dev_stats:
        for n in d.node_stats:
            start, end = n.all_start_nanos, n.all_start_nanos + n.all_end_rel_nanos
            assert before - TOLERANCE_NS <= start <= end <= after + TOLERANCE_NS, (d.device, n.node_name)


def test_every_transfer_is_recorded_at_both_ends_with_its_bytes_and_arrives_after_it_was_sent(traced):
    stats = traced[0]
    sends = sorted(n.node_name for d in stats.dev_stats for n in d.node_stats if "= _Send(" in n.timeline_label)
    recvs = sorted(n.node_name for d in stats.dev_stats for n in d.node_stats if "= _Recv(" in n.timeline_label)
    moves = timeline.transfers(stats)
    assert len(moves) == len(sends) == len(recvs) >= 3
    by_tensor = {t.tensor_name: t for t in moves}
    assert (by_tensor["w/read:0"].send_device, by_tensor["w/read:0"].recv_device) == (PS, W0)
    assert by_tensor["w/read:0"].num_bytes == 3 * 2 * 4
    assert (by_tensor["h:0"].send_device, by_tensor["h:0"].recv_device, by_tensor["h:0"].num_bytes) == (W0, W1, 32)
    for t in moves:
        out = t.recv.output[0].tensor_description
        assert out.allocation_description.requested_bytes == t.num_bytes
        assert t.send.referenced_tensor[0].requested_bytes == t.num_bytes
        sent = t.send.all_start_nanos
        arrived = t.recv.all_start_nanos + t.recv.all_end_rel_nanos
        assert arrived >= sent - TOLERANCE_NS, (t.tensor_name, arrived - sent)


def test_the_chrome_trace_has_every_op_and_one_flow_arrow_per_transfer(traced):
    stats = traced[0]
    trace = json.loads(timeline.Timeline(stats).generate_chrome_trace_format(show_memory=True))
    events = trace["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(processes.values()) == sorted([f"{d} Compute" for d in (PS, W0, W1)] + ["Allocators"])
    ops = [e for e in events if e["ph"] == "X"]
    assert sorted((processes[e["pid"]], e["args"]["name"]) for e in ops) == \
        sorted((f"{d.device} Compute", n.node_name) for d in stats.dev_stats for n in d.node_stats)
    lanes = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in ops} <= lanes
    moves = timeline.transfers(stats)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "t"}
    assert starts.keys() == ends.keys()
    crossing = [(s["name"], processes[s["pid"]], processes[ends[i]["pid"]]) for i, s in starts.items()
                if s["pid"] != ends[i]["pid"]]
    assert sorted(crossing) == sorted((t.tensor_name, f"{t.send_device} Compute", f"{t.recv_device} Compute")
                                      for t in moves)
    recv_events = [e for e in ops if e["args"]["op"] == "_Recv"]
    assert sorted(e["args"]["bytes"] for e in recv_events) == sorted(t.num_bytes for t in moves)
