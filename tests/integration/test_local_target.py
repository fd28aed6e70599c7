"""`asyncflow local` prints `target: ...` only once its master answers: a client that connects the
instant it reads that line is served (before, the line came first and the client got Connection refused)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import asyncflow as af
from tests.integration.conftest import port_closed

ROOT = Path(__file__).resolve().parents[2]


def test_a_client_connecting_at_the_target_line_is_served():
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCFLOW_CONFIG", "ASYNCFLOW_TOKEN")}
    proc = subprocess.Popen([sys.executable, "-m", "asyncflow.cli", "local", "--ps", "1", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=str(ROOT), env=env)
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 60
        target = None
        while target is None:
            line = proc.stdout.readline()
            assert line, f"asyncflow local exited ({proc.poll()}) before its target line: {lines}"
            assert time.monotonic() < deadline, "no target line within 60 s"
            lines.append(line)
            if line.startswith("target: "):
                target = line.split(": ", 1)[1].strip()
        # No wait, no retry: the first request goes out now.
        with af.Graph().as_default() as g:
            with af.device("/job:ps/task:0"):
                v = af.Variable(2.0, name="v")
            with af.device("/job:worker/task:1"):
                y = v * 4.0
        with af.Session(target, graph=g) as sess:
            sess.run(v.initializer)
            assert sess.run(y) == np.float32(8.0)
        # Everything printed before the target: the spec, and one started line per child.
        spec = json.loads(next(x for x in lines if x.startswith("cluster: ")).split(": ", 1)[1])
        assert sum(x.startswith("started job=") for x in lines) == len(spec["ps"]) + len(spec["worker"]) + 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
    assert port_closed(target[len("http://"):])
