"""Issue 12, defect 5: per-step, per-graph and per-session state has an owner and a deadline.

Against real processes on loopback: pulls for steps that never run (disconnected, timed out, aborted)
leave no entry behind; a session whose client was SIGKILLed is collected after the master's idle
deadline and its graphs deregistered, while a session in use (steps, or its keepalive) never is; a
worker drops the graphs of a master it stopped hearing from, and a master that comes back re-plans.
A normal step works throughout. Deadlines are set small with the servers' flags.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

import asyncflow as af
from asyncflow.net import wire
from asyncflow.ops.comm import rendezvous_key
from tests.integration.conftest import LocalCluster, wait_until

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
ROOT = Path(__file__).resolve().parents[2]


def _get(address: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://{address}{path}", timeout=5) as r:
        return r.read()


def _post(address: str, path: str, body: bytes = b"") -> int:
    req = urllib.request.Request(f"http://{address}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _metric(address: str, name: str) -> int:
    found = re.search(rf"^asyncflow_{name} (\d+)$", _get(address, "/metrics").decode(), re.M)
    assert found, f"no asyncflow_{name} in {address}/metrics"
    return int(found.group(1))


def _graph():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            v = af.Variable(2.0, name="v")
        with af.device("/job:worker/task:0"):
            y = v * 3.0  # pulled from the ps: a cross-task transfer every step
    return g, v, y


def _pull_requests(address: str, incarnation: int, steps: range) -> list[socket.socket]:
    """One GET of a tensor the ps would send, per step id, each on its own connection; none of those steps runs."""
    key = quote(rendezvous_key(PS, incarnation, W0, "never:0"), safe="")
    host, _, port = address.rpartition(":")
    socks = []
    for step in steps:
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(f"GET /v1/worker/tensors/{step}/{key} HTTP/1.1\r\nHost: {address}\r\n\r\n".encode())
        socks.append(s)
    return socks


def _status_of(sock: socket.socket) -> int:
    head = sock.recv(4096)
    return int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0


def test_pulls_for_steps_that_never_run_leave_no_state(procs):
    c = LocalCluster(procs, ps=1, workers=1, worker_args=("--step-start-timeout", "3"))
    ps = c.address("ps", 0)
    incarnation = json.loads(_get(ps, "/healthz"))["incarnation"]
    g, v, y = _graph()
    with af.Session(c.target, graph=g) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == np.float32(6.0)
        baseline = _metric(ps, "steps_in_flight")
        assert baseline == 0

        # 1,000 pulls for unknown steps whose peers disconnect: each entry goes with its connection.
        for wave in range(5):
            socks = _pull_requests(ps, incarnation, range(10_000 + 200 * wave, 10_200 + 200 * wave))
            wait_until(lambda: _metric(ps, "steps_in_flight") == baseline + 200, 10, "the pulls to wait")
            for s in socks:
                s.close()
            wait_until(lambda: _metric(ps, "steps_in_flight") == baseline, 2.5, "disconnected pulls to go")
        assert _metric(ps, "unstarted_steps_released_total") >= 1000
        assert sess.run(y) == np.float32(6.0)

        # Pulls that stay connected get 408 at the step-start deadline, and their entries go with them.
        socks = _pull_requests(ps, incarnation, range(20_000, 20_200))
        wait_until(lambda: _metric(ps, "steps_in_flight") == baseline + 200, 10, "the pulls to wait")
        assert sess.run(y) == np.float32(6.0)  # a normal step while they wait
        assert {_status_of(s) for s in socks} == {408}
        for s in socks:
            s.close()
        assert _metric(ps, "steps_in_flight") == baseline
        assert _metric(ps, "unstarted_steps_expired_total") == 200

        # Aborting the steps removes their entries at once (before their deadline: the pulls get 409, not 408).
        socks = _pull_requests(ps, incarnation, range(30_000, 30_100))
        wait_until(lambda: _metric(ps, "steps_in_flight") == baseline + 100, 10, "the pulls to wait")
        abort = wire.dumps(wire.AbortStep(wire.ErrorInfo(af.errors.CANCELLED, "client gone")))
        for step in range(30_000, 30_100):
            assert _post(ps, f"/v1/worker/abort/{step}", abort) == 200
        assert _metric(ps, "steps_in_flight") == baseline
        assert {_status_of(s) for s in socks} == {409}
        for s in socks:
            s.close()
        assert _metric(ps, "unstarted_steps_aborted_total") == 100
        assert sess.run(y) == np.float32(6.0)
        assert _metric(ps, "steps_in_flight") == baseline


_CLIENT = """
import sys, time
import asyncflow as af
g = af.Graph()
with g.as_default():
    with af.device("/job:ps/task:0"):
        v = af.Variable(2.0, name="v")
    with af.device("/job:worker/task:0"):
        y = v * 3.0
sess = af.Session(sys.stdin.readline().strip(), graph=g)
sess.run(v.initializer)
sess.run(y)
print("ready", flush=True)
time.sleep(600)
"""


def test_an_abandoned_session_is_collected_and_live_ones_are_not(procs):
    idle_s = 3.0
    env = {k: val for k, val in os.environ.items() if k != "ASYNCFLOW_TOKEN"}
    # The client to abandon its session: started first, so its imports overlap the cluster's start.
    client = subprocess.Popen([sys.executable, "-c", _CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=str(ROOT), env=env)
    try:
        c = LocalCluster(procs, ps=1, workers=1, master_args=("--session-idle-timeout", str(idle_s)))
    except BaseException:
        client.kill()
        client.wait(timeout=10)
        raise
    ps, worker, master = c.address("ps", 0), c.address("worker", 0), c.master_address
    g, v, y = _graph()
    live = af.Session(c.target, graph=g)  # runs steps all along
    kept = af.Session(c.target, graph=g)  # runs one step, then only renews its lease (touch)
    live.run(v.initializer)
    live.run(y)
    kept.run(y)
    graphs = {a: _metric(a, "registered_graphs") for a in (ps, worker)}
    failures: list[BaseException] = []
    stop = threading.Event()

    def keep_using() -> None:
        while not stop.is_set():
            try:
                assert live.run(y) == np.float32(6.0)
                assert b"error" not in _touch(master, kept._remote.handle)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                failures.append(e)
            stop.wait(0.2)

    user = threading.Thread(target=keep_using)
    user.start()
    try:
        client.stdin.write(f"{c.target}\n".encode())
        client.stdin.close()
        assert client.stdout.readline().strip() == b"ready"
        assert _metric(master, "master_sessions") == 3
        assert all(_metric(a, "registered_graphs") > graphs[a] for a in (ps, worker))
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=10)
        killed = time.monotonic()
        wait_until(lambda: _metric(master, "master_sessions") == 2, 2 * idle_s + 2, "the abandoned session to go")
        assert time.monotonic() - killed > idle_s * 0.9
        assert _metric(master, "sessions_collected_total") == 1
        wait_until(lambda: all(_metric(a, "registered_graphs") == graphs[a] for a in (ps, worker)), 5,
                   "its graphs to be deregistered")
        time.sleep(max(0.0, killed + 2 * idle_s - time.monotonic()))  # the live ones outlast two idle deadlines
        assert _metric(master, "master_sessions") == 2
    finally:
        stop.set()
        user.join(timeout=30)
        if client.poll() is None:
            client.kill()
            client.wait(timeout=10)
    try:
        assert not failures, failures
        assert kept.run(y) == np.float32(6.0) and live.run(y) == np.float32(6.0)
        assert b"no session 'nosuchsession'" in _touch(master, "nosuchsession")  # NotFoundError, in the body
    finally:
        live.close()
        kept.close()
    assert _metric(master, "master_sessions") == 0
    wait_until(lambda: all(_metric(a, "registered_graphs") == 0 for a in (ps, worker)), 5, "closed sessions' graphs")


def _touch(master: str, handle: str) -> bytes:
    req = urllib.request.Request(f"http://{master}/v1/master/sessions/{handle}/touch", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.read()


def test_a_workers_graphs_go_when_their_master_is_gone_and_a_returning_master_replans(procs):
    c = LocalCluster(procs, ps=1, workers=1, worker_args=("--master-timeout", "1.5"))
    ps, worker = c.address("ps", 0), c.address("worker", 0)
    g, v, y = _graph()
    with af.Session(c.target, graph=g) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == np.float32(6.0)
        assert _metric(ps, "registered_graphs") >= 1 and _metric(worker, "registered_graphs") >= 1
        time.sleep(2.0)  # heartbeats keep an idle master's graphs past the deadline
        assert _metric(ps, "registered_graphs") >= 1 and _metric(worker, "registered_graphs") >= 1
        os.kill(c.master.pid, signal.SIGSTOP)  # silent: its workers stop hearing from it
        try:
            wait_until(lambda: _metric(ps, "registered_graphs") == 0 and _metric(worker, "registered_graphs") == 0,
                       6, "the silent master's graphs to be dropped")
        finally:
            os.kill(c.master.pid, signal.SIGCONT)
        assert _metric(ps, "graphs_collected_total") >= 1
        try:  # the partition is gone: at most one step fails (retryable), the next one re-plans
            assert sess.run(y) == np.float32(6.0)
        except af.errors.AbortedError as e:
            assert "has no partition" in str(e)
            assert sess.run(y) == np.float32(6.0)
        assert sess.run(v) == np.float32(2.0)  # the variable lived on in the ps's container

    c.master.kill()
    c.master.wait(timeout=10)
    wait_until(lambda: _metric(ps, "registered_graphs") == 0 and _metric(worker, "registered_graphs") == 0, 6,
               "a killed master's graphs to be dropped")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
