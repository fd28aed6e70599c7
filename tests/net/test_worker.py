"""The worker service without sockets: registration checks, stale transfers, aborts, late arrivals."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.partition import partition
from asyncflow.net import wire
from asyncflow.net.worker import WorkerService
from asyncflow.ops.comm import rendezvous_key
from asyncflow.serialization import graph_to_parts
from asyncflow.train.cluster import ClusterSpec

CLUSTER = ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})
PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"


def _register(worker, part):
    header, buffers = graph_to_parts(part.graph)
    req = wire.RegisterGraph("s", header, [t.name for t in part.feeds], [t.name for t in part.fetches],
                             part.target_names)
    return worker.register_graph(req, buffers).handle


def _two_device_graph():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        with af.device(PS):
            y = af.multiply(x, 2.0, name="y")
        with af.device(W0):
            z = af.add(y, 1.0, name="z")
    placement = {op.name: (PS if op.name in ("x", "y", "y/y") else W0) for op in g.get_operations()}
    return partition([z], [], [x], placement, incarnations={"/job:ps/replica:0/task:0": 0})


def test_registration_refuses_ops_placed_on_another_task():
    pg = _two_device_graph()
    ps = WorkerService(CLUSTER, "ps", 0)
    wrong = pg.by_device()[W0]
    with pytest.raises(af.errors.InvalidArgumentError, match="placed on /job:worker/replica:0/task:0"):
        _register(ps, wrong)
    with pytest.raises(af.errors.InvalidArgumentError, match="cannot register partition"):
        ps.register_graph(wire.RegisterGraph("s", {"format": "nope"}, [], [], []), [])


def test_sent_tensors_are_served_once_and_stale_incarnations_are_refused():
    ps = WorkerService(CLUSTER, "ps", 0)
    pg = _two_device_graph()
    part = pg.by_device()[PS]
    # The partition's keys name incarnation 0; this worker's differs, so the master would re-plan.
    handle = _register(ps, part)
    key = rendezvous_key(PS, ps.incarnation, W0, "y:0")
    stale = rendezvous_key(PS, 0, W0, "y:0")

    async def main():
        d, chunks = wire.encode_value(np.array([1.0, 2.0], np.float32))
        run = asyncio.ensure_future(ps.run_graph(handle, wire.RunGraph(5, tensors=[d]), [b"".join(chunks)]))
        with pytest.raises(af.errors.AbortedError, match="stale transfer refused"):
            await ps.serve_tensor(5, stale)
        state = ps._state(5)
        state.rendezvous.send(key, np.float32(3.0))  # what a _Send with the current incarnation would do
        assert await ps.serve_tensor(5, key) == np.float32(3.0)
        ps.abort(5, wire.ErrorInfo(af.errors.CANCELLED, "test over"))
        with pytest.raises(af.errors.OpError):
            await run

    asyncio.run(main())


def test_abort_before_the_run_fails_the_late_run_and_late_pulls_at_once():
    ps = WorkerService(CLUSTER, "ps", 0)
    handle = _register(ps, _two_device_graph().by_device()[PS])
    ps.abort(9, wire.ErrorInfo(af.errors.INVALID_ARGUMENT, "boom in z", "z", "/job:worker/replica:0/task:0"))

    async def main():
        d, chunks = wire.encode_value(np.zeros(2, np.float32))
        with pytest.raises(af.errors.AbortedError, match=r"aborted on /job:ps/replica:0/task:0: boom in z \(on "
                                                         r"/job:worker/replica:0/task:0\)") as info:
            await ps.run_graph(handle, wire.RunGraph(9, tensors=[d]), [b"".join(chunks)])
        assert info.value.derived
        with pytest.raises(af.errors.AbortedError):
            await ps.serve_tensor(9, rendezvous_key(PS, ps.incarnation, W0, "y:0"))

    asyncio.run(main())


def test_bad_feeds_name_the_feed():
    ps = WorkerService(CLUSTER, "ps", 0)
    handle = _register(ps, _two_device_graph().by_device()[PS])

    async def main():
        with pytest.raises(af.errors.InvalidArgumentError, match="takes 1 feeds, got 0"):
            await ps.run_graph(handle, wire.RunGraph(1), [])
        d, chunks = wire.encode_value(np.zeros(3, np.float32))
        with pytest.raises(af.errors.InvalidArgumentError, match=r"feed 'x/_feed_0:0': received shape \[3\]"):
            await ps.run_graph(handle, wire.RunGraph(2, tensors=[d]), [b"".join(chunks)])
        with pytest.raises(af.errors.AbortedError, match="has no partition"):
            await ps.run_graph("nope", wire.RunGraph(3), [])

    asyncio.run(main())


def test_a_batched_pull_answers_with_what_is_ready_once_something_is():
    ps = WorkerService(CLUSTER, "ps", 0)
    a, b, c = (rendezvous_key(PS, ps.incarnation, W0, f"{n}:0") for n in "abc")

    async def main():
        rdv = ps._state(3).rendezvous
        rdv.send(a, np.float32(1.0))
        keys, values = await ps.serve_tensors(3, wire.PullTensors([a, b], ["", ""]))
        assert keys == [a] and values == [np.float32(1.0)]  # b is not sent yet: not waited for
        waiting = asyncio.ensure_future(ps.serve_tensors(3, wire.PullTensors([b, c], ["", "float16"])))
        await asyncio.sleep(0)
        assert not waiting.done()
        with pytest.raises(af.errors.InternalError, match="requested twice"):
            await ps.serve_tensor(3, c)
        rdv.send(c, np.float32(3.0))
        rdv.send(b, np.float32(2.0))  # in the same turn: both go in the answer
        keys, values = await waiting
        assert keys == [b, c] and values == [np.float32(2.0), np.float32(3.0)]
        with pytest.raises(wire.WireError, match="distinct keys"):
            await ps.serve_tensors(3, wire.PullTensors([a, a], ["", ""]))
        with pytest.raises(wire.WireError, match="unknown compression"):
            await ps.serve_tensors(3, wire.PullTensors([a], ["zip"]))
        with pytest.raises(af.errors.InvalidArgumentError, match="does not send"):
            await ps.serve_tensors(3, wire.PullTensors([rendezvous_key(W0, 1, PS, "x:0")], [""]))
        blocked = asyncio.ensure_future(ps.serve_tensors(3, wire.PullTensors([rendezvous_key(PS, ps.incarnation, W0,
                                                                                             "d:0")], [""])))
        await asyncio.sleep(0)
        ps.abort(3, wire.ErrorInfo(af.errors.CANCELLED, "test over"))
        with pytest.raises(af.errors.AbortedError, match="test over"):
            await blocked

    asyncio.run(main())
