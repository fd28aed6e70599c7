"""Traced steps of the embedded Session: TF's StepStats shape, every node that ran, sensible times and outputs."""

from __future__ import annotations

import time

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.executor import needed_ops
from asyncflow.exec.step_stats import peak_bytes

FULL = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE)
DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def _mlp():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 3], name="x")
        w = af.Variable(np.ones((3, 4), np.float32), name="w")
        y = af.nn.relu(af.matmul(x, w), name="y")
        loss = af.reduce_sum(y, name="loss")
        init = af.global_variables_initializer()
    return g, x, y, loss, init


def _ran(fetches, feeds):
    """The ops a step runs: what it needs, less the fed placeholders and the constants (preset, never run)."""
    return sorted(op.name for op in needed_ops(fetches, [], feeds) if op.type != "Const")


def test_a_traced_step_records_every_node_with_times_inside_the_step_and_its_outputs():
    g, x, y, loss, init = _mlp()
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        sess.run(init)
        before = time.time_ns() // 1000
        out = sess.run([y, loss], {x: np.ones((2, 3))}, options=FULL, run_metadata=meta)
        after = time.time_ns() // 1000 + 1
    assert out[1] == 24.0
    (dev,) = meta.step_stats.dev_stats
    assert dev.device == DEVICE
    names = [n.node_name for n in dev.node_stats]
    assert sorted(names) == _ran([y, loss], [x.op.outputs[0]])
    for n in dev.node_stats:
        assert before <= n.all_start_micros and n.all_start_micros + n.all_end_rel_micros <= after, n.node_name
        assert 0 <= n.op_start_rel_micros <= n.op_end_rel_micros <= n.all_end_rel_micros
        assert n.all_start_nanos // 1000 == n.all_start_micros and n.all_end_rel_nanos >= 0
        assert n.thread_id in dev.thread_names
    stats = {n.node_name: n for n in dev.node_stats}
    assert stats["w/read"].timeline_label == "w/read = Identity(w)"  # TF's label format
    assert stats["MatMul"].timeline_label == "MatMul = MatMul(x, w/read)"
    (mm,) = stats["MatMul"].output
    desc = mm.tensor_description
    assert mm.slot == 0 and desc.dtype == af.float32.as_datatype_enum
    assert [d.size for d in desc.shape.dim] == [2, 4]
    assert desc.allocation_description.allocated_bytes == desc.allocation_description.requested_bytes == 32
    (s,) = stats["loss"].output
    assert s.tensor_description.shape.dim == [] and s.tensor_description.allocation_description.requested_bytes == 4
    starts = {n: stats[n].all_start_nanos for n in ("MatMul", "y", "loss")}
    assert starts["MatMul"] <= starts["y"] <= starts["loss"]  # dependencies ran in order
    peaks = [n.memory[0].peak_bytes for n in sorted(dev.node_stats, key=lambda n: n.all_start_nanos)]
    assert peaks == sorted(peaks) and peak_bytes(meta.step_stats)[DEVICE] == peaks[-1] >= 32 + 32 + 4


def test_tracing_off_leaves_step_stats_empty_and_a_traced_step_replaces_them():
    g, x, y, loss, init = _mlp()
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        sess.run(init)
        sess.run(loss, {x: np.ones((2, 3))}, run_metadata=meta)
        assert meta.step_stats.dev_stats == []
        sess.run(loss, {x: np.ones((2, 3))}, options=af.RunOptions(timeout_in_ms=1000), run_metadata=meta)
        assert meta.step_stats.dev_stats == []
        sess.run(loss, {x: np.ones((2, 3))}, options=FULL, run_metadata=meta)
        first = meta.step_stats
        sess.run(y, {x: np.ones((2, 3))}, options=af.RunOptions(trace_level=af.RunOptions.SOFTWARE_TRACE),
                 run_metadata=meta)
        assert meta.step_stats is not first
        assert "loss" not in [n.node_name for n in meta.step_stats.dev_stats[0].node_stats]
        call = sess.make_callable(loss, [x])
        call(np.ones((2, 3)), options=FULL, run_metadata=meta)
        assert "loss" in [n.node_name for n in meta.step_stats.dev_stats[0].node_stats]


def test_a_while_loop_step_records_each_iteration():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")
        i, total = af.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + af.cast(i, af.float32) * 2.0),
                                 [af.constant(0), af.constant(0.0)])
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        before = time.time_ns() // 1000
        assert sess.run(total, {n: 5}, options=FULL, run_metadata=meta) == 20.0
        after = time.time_ns() // 1000 + 1
    (dev,) = meta.step_stats.dev_stats
    counts: dict[str, int] = {}
    for s in dev.node_stats:
        counts[s.node_name] = counts.get(s.node_name, 0) + 1
        assert before <= s.all_start_micros <= s.all_start_micros + s.all_end_rel_micros <= after
    # The condition runs for the 5 iterations that go on and the one that stops; the body once per iteration.
    assert counts["while/Less"] == counts["while/Switch"] == 6
    assert counts["while/add"] == counts["while/add_1"] == counts["while/NextIteration"] == 5
    assert counts[total.op.name] == 1  # Exit runs once, in the outer frame
    assert not [name for name in counts if "Merge" in name]  # the executor routes Merges without a kernel


async def test_a_step_with_a_waiting_kernel_is_traced_on_the_loop():
    g = af.Graph()
    with g.as_default():
        q = af.FIFOQueue(2, [af.float32], shapes=[[2]], name="q")
        v = af.placeholder(af.float32, [2], name="v")
        enq = q.enqueue([v], name="enq")
        deq = af.identity(q.dequeue(name="deq") * 2.0, name="out")
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        import asyncio

        waiting = asyncio.ensure_future(sess.arun(deq, options=FULL, run_metadata=meta))
        await asyncio.sleep(0.05)
        await sess.arun(enq, {v: [1.0, 2.0]})
        np.testing.assert_array_equal(await waiting, [2.0, 4.0])
    stats = {s.node_name: s for s in meta.step_stats.dev_stats[0].node_stats}
    assert stats["deq"].all_end_rel_micros >= 30_000  # it waited for the enqueue, and the record says so
    assert stats["out"].all_start_micros >= stats["deq"].all_start_micros + stats["deq"].all_end_rel_micros - 1


def test_step_stats_convert_to_tensorboards_protos():
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import config_pb2

    g, x, y, loss, init = _mlp()
    meta = af.RunMetadata()
    with af.Session(graph=g) as sess:
        sess.run(init)
        sess.run(loss, {x: np.ones((2, 3))}, options=FULL, run_metadata=meta)
    proto = config_pb2.RunMetadata.FromString(meta.SerializeToString())
    (dev,) = proto.step_stats.dev_stats
    assert dev.device == DEVICE
    mine = meta.step_stats.dev_stats[0].node_stats
    assert [n.node_name for n in dev.node_stats] == [n.node_name for n in mine]
    mm = next(n for n in dev.node_stats if n.node_name == "MatMul")
    assert mm.timeline_label == "MatMul = MatMul(x, w/read)"
    assert list(mm.output[0].tensor_description.shape.dim[i].size for i in range(2)) == [2, 4]
