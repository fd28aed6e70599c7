"""Issue 12, defect 2: a compressed Arrow stream is refused before it is inflated, on real processes.

The issue's attack: a 33 KB ZSTD-compressed Arrow feed declaring a float32 tensor of 1 GiB, sent
through the master's run route, took a worker from 86 MB to 1.1 GB before it was refused for its
shape. Now the first process that parses the frame (here the master, which forwards feeds unread)
answers 400 from the stream's metadata alone; the same holds for graph constants sent to the master
or straight to a worker. Memory of the master and the worker grows by less than 100 MB, and a normal
step runs afterwards.
"""

from __future__ import annotations

import http.client
import json

import numpy as np
import orjson
import pyarrow as pa

import asyncflow as af
from asyncflow.net import wire
from asyncflow.serialization import graph_to_parts
from tests.integration.conftest import LocalCluster

W0 = "/job:worker/task:0"


def _compressed(values, codec: str) -> bytes:
    """A float32 tensor stream as our codec writes it, but with Arrow's IPC body compression."""
    values = np.asarray(values, np.float32)
    meta = {b"asyncflow.dtype": b"float32", b"asyncflow.shape": orjson.dumps([values.size])}
    schema = pa.schema([pa.field("values", pa.float32(), nullable=False)], metadata=meta)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
        column = pa.Array.from_buffers(pa.float32(), values.size, [None, pa.py_buffer(values)])
        writer.write_batch(pa.record_batch([column], schema=schema))
    return sink.getvalue().to_pybytes()


def _post(address: str, path: str, body: bytes, content_type: str = wire.FRAME_CONTENT_TYPE) -> tuple[int, bytes]:
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": content_type})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _frame(message, buffers) -> bytes:
    return b"".join(bytes(memoryview(c)) for c in wire.frame_chunks(message, [[b] for b in buffers]))


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _graph():
    g = af.Graph()
    with g.as_default(), af.device(W0):
        x = af.placeholder(af.float32, [None], name="x")  # any length: only the stream's metadata can refuse it
        y = af.reduce_sum(x * 2.0, name="y")
        c = af.constant(np.arange(3, dtype=np.float32), name="c")
    return g, x, y, c


def _refused(status: int, answer: bytes, where: str) -> None:
    assert status == 400, (where, status, answer[:300])
    error = json.loads(answer)["error"]
    assert error["code"] == af.errors.INVALID_ARGUMENT, error
    assert "zstd-compressed, declaring 1073741824 bytes once inflated" in error["message"], error


def test_a_compressed_arrow_bomb_gets_400_with_bounded_memory_and_the_cluster_serves_on(procs):
    c = LocalCluster(procs, ps=0, workers=1)
    g, x, y, const = _graph()
    bomb = _compressed(np.zeros((1 << 30) // 4, np.float32), "zstd")  # calloc'd zeros: never resident here
    assert len(bomb) < 40_000
    with af.Session(c.target, graph=g) as sess:
        assert sess.run(y, {x: [1.0, 2.0]}) == np.float32(6.0)
    master, worker = c.master_address, c.address("worker", 0)
    pids = {"master": c.master.pid, "worker": c.tasks[("worker", 0)].pid}
    before = {k: _rss(p) for k, p in pids.items()}

    # A session of our own, over the raw protocol, with a callable feeding x.
    header, buffers = graph_to_parts(g)
    status, answer = _post(master, "/v1/master/sessions", _frame(wire.CreateSession(header), buffers))
    assert status == 200, answer[:300]
    created = wire.loads(answer, wire.SessionCreated)
    path = f"/v1/master/sessions/{created.session}"
    status, answer = _post(master, path + "/callables", wire.dumps(wire.MakeCallable(["x:0"], ["y:0"], [],
                                                                                     created.graph_version)),
                           "application/json")
    assert status == 200, answer[:300]
    call = wire.loads(answer, wire.CallableMade).callable

    # The feed, through the master's run route, a few times.
    for _ in range(3):
        _refused(*_post(master, path + "/run", _frame(wire.RunStep(call), [bomb])), "run")
    # Even a small compressed feed: no asyncflow sender compresses Arrow bodies.
    small = _compressed([1.0, 2.0], "lz4")
    status, answer = _post(master, path + "/run", _frame(wire.RunStep(call), [small]))
    assert status == 400 and "lz4_frame-compressed" in json.loads(answer)["error"]["message"], answer[:300]
    # The same stream as a graph constant: to the master, and straight to a worker.
    const_index = [n["name"] for n in header["node"] if n["attr"].get("value", {}).get("tensor")].index("c")
    bombed = [bomb if i == const_index else b for i, b in enumerate(buffers)]
    _refused(*_post(master, "/v1/master/sessions", _frame(wire.CreateSession(header), bombed)), "create")
    register = wire.RegisterGraph("s", header, [], ["c:0"], [])
    _refused(*_post(worker, "/v1/worker/graphs", _frame(register, bombed)), "register")

    after = {k: _rss(p) for k, p in pids.items()}
    for k in pids:
        assert after[k] - before[k] < 100 << 20, (k, before[k], after[k])

    # The session that was attacked still runs a normal step, and so does a new client.
    good = b"".join(bytes(memoryview(ch)) for ch in wire.tensor_chunks(np.ones(5, np.float32)))
    status, answer = _post(master, path + "/run", _frame(wire.RunStep(call), [good]))
    assert status == 200, answer[:300]
    done, out = wire.parse_frame(answer, wire.StepDone)
    assert done.error is None, done.error
    descriptors = wire.check_descriptors(done.tensors, len(out), "StepDone")
    assert wire.decode_value(descriptors[0], out[0]) == np.float32(10.0)
    with af.Session(c.target, graph=g) as sess:
        assert sess.run(y, {x: [3.0]}) == np.float32(6.0)
