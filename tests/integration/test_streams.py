"""Streams between real processes: a token-protected cluster runs its steps over them; the handshake
refuses a wrong token and an old incarnation; a worker killed mid-step fails the step at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import asyncflow as af
from asyncflow import errors
from asyncflow.net.stream import BlockingStream
from tests.integration.conftest import LocalCluster

TOKEN = "s" * 40


@pytest.fixture
def secured(procs):
    env = dict(os.environ, ASYNCFLOW_TOKEN=TOKEN)
    return LocalCluster(procs, ps=1, workers=1, env=env)


def test_steps_run_over_streams_and_the_handshake_guards_them(secured, monkeypatch):
    monkeypatch.setenv("ASYNCFLOW_TOKEN", TOKEN)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        with af.device("/job:ps/task:0"):
            v = af.Variable(np.zeros(3, np.float32))
        with af.device("/job:worker/task:0"):
            update = af.assign_add(v, x * 2.0)
    with af.Session(secured.target, graph=g) as sess:
        sess.run(v.initializer)
        for _ in range(5):
            got = sess.run(update, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(got, np.array([10.0, 20.0, 30.0], np.float32))

    worker = secured.address("worker", 0)
    ok = BlockingStream(worker, TOKEN.encode(), task="/job:worker/replica:0/task:0")
    status = ok.request("GET", "/v1/worker/status")  # a route over the stream, no per-request signature
    assert status.status == 200 and ok.destination.task == "/job:worker/replica:0/task:0"
    with pytest.raises(errors.UnauthenticatedError):
        BlockingStream(worker, b"x" * 40).request("GET", "/v1/worker/status")
    stale = BlockingStream(worker, TOKEN.encode())
    stale.expect = f"{ok.destination.task} {ok.destination.incarnation + 1:x}"  # not this incarnation
    with pytest.raises(errors.AbortedError):
        stale.request("GET", "/v1/worker/status")
    assert ok.request("GET", "/v1/worker/status").status == 200  # refusals left the task serving
    ok.close()


def test_a_worker_killed_mid_step_fails_the_step_with_unavailable(procs):
    cluster = LocalCluster(procs, ps=1, workers=1)
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker/task:0"):
            q = af.FIFOQueue(1, [af.float32], shapes=[[]])
            waiting = q.dequeue()  # waits forever on the worker
    with af.Session(cluster.target, graph=g) as sess:
        start = time.monotonic()
        threading.Timer(0.5, lambda: os.kill(cluster.tasks[("worker", 0)].pid, signal.SIGKILL)).start()
        with pytest.raises((errors.UnavailableError, errors.AbortedError)) as info:
            sess.run(waiting, options=af.RunOptions(timeout_in_ms=60_000))
        assert time.monotonic() - start < 15  # the dropped stream is the signal, not the step's deadline
    assert "task:0" in str(info.value) or "worker" in str(info.value)
