"""Hardening figures: time to error per fault, and requests refused by cause per attack (issue 12).

Prints one JSON object to stdout. Every server is its own `asyncflow` process on loopback, started
with the default flags (heartbeat every 1 s, dead after 10 s; --head-timeout 5; 256 connections per
peer); the client is this process.

  time_to_error     one ps, one worker, a master; a session runs `v * 3` (v on the ps, the product on
                    the worker) once, then a fault, then the same step: seconds until it raises, and
                    what it raised. Faults: the master stopped (SIGSTOP), the worker killed (SIGKILL),
                    the ps killed, the worker stopped. A step still waiting after `--cap` seconds is
                    reported with "error": null.
  refused           a cluster with the token set; a burst of each attack against the worker task, then
                    the change in its /metrics `asyncflow_requests_refused_total{cause=...}`, the HTTP
                    statuses the attack got, and the worker's resident memory after it. A normal
                    step must still run after all of them ("step_after").

    python benchmarks/bench_hardening.py [--burst 100] [--cap 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import asyncflow as af  # noqa: E402
from asyncflow.net import auth  # noqa: E402
from asyncflow.net.http import BlockingClient  # noqa: E402

TOKEN = "bench-hardening-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


class Cluster:
    """One ps, one worker and a master, each its own process."""

    def __init__(self, token: str | None):
        self.spec = {"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]}
        self.master_address = f"127.0.0.1:{free_port()}"
        env = {k: v for k, v in os.environ.items() if k not in ("ASYNCFLOW_TOKEN", "ASYNCFLOW_CONFIG")}
        if token:
            env["ASYNCFLOW_TOKEN"] = token
        cli = [sys.executable, "-m", "asyncflow.cli"]
        spec = json.dumps(self.spec)
        self.procs = {
            job: subprocess.Popen(cli + ["worker", "--cluster", spec, "--job", job, "--task", "0"], env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for job in self.spec}
        self.procs["master"] = subprocess.Popen(cli + ["master", "--cluster", spec, "--port",
                                                       self.master_address.rpartition(":")[2]], env=env, cwd=ROOT,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not all(healthy(a) for a in (self.spec["ps"][0], self.spec["worker"][0], self.master_address)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs.values()):
                self.close()
                raise RuntimeError("the cluster did not start")
            time.sleep(0.05)

    @property
    def target(self) -> str:
        return f"http://{self.master_address}"

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
        for p in self.procs.values():
            p.wait(timeout=10)


@contextmanager
def cluster(token: str | None = None):
    c = Cluster(token)
    try:
        yield c
    finally:
        c.close()


def step_graph() -> tuple[af.Graph, Any, Any]:
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            v = af.Variable(2.0, name="v")
        with af.device("/job:worker/task:0"):
            y = v * 3.0
    return g, v, y


# -- time to error per fault ---------------------------------------------------------------------------------------
FAULTS = {"stopped_master": ("master", signal.SIGSTOP), "killed_worker": ("worker", signal.SIGKILL),
          "killed_ps": ("ps", signal.SIGKILL), "stopped_worker": ("worker", signal.SIGSTOP)}


def time_to_error(fault: str, cap_s: float) -> dict[str, Any]:
    which, sig = FAULTS[fault]
    with cluster() as c:
        g, v, y = step_graph()
        sess = af.Session(c.target, graph=g)
        sess.run(v.initializer)
        assert sess.run(y) == 6.0
        outcome: dict[str, Any] = {}

        def step() -> None:
            try:
                sess.run(y)
                outcome["error"] = None
            except Exception as e:  # noqa: BLE001 - what the fault raised is the measurement
                outcome["error"] = type(e).__name__
                outcome["message"] = str(e).splitlines()[0][:200]
            outcome["seconds"] = round(time.monotonic() - start, 2)

        os.kill(c.procs[which].pid, sig)
        start = time.monotonic()
        thread = threading.Thread(target=step, daemon=True)  # abandoned if the step never ends
        thread.start()
        thread.join(cap_s)
        if thread.is_alive():
            return {"seconds": None, "error": None, "message": f"still waiting after {cap_s:g} s"}
        return outcome


# -- refusals by cause ------------------------------------------------------------------------------------------------
def metrics(address: str) -> dict[str, float]:
    client = BlockingClient(address, TOKEN.encode())
    try:
        text = client.request("GET", "/metrics", timeout=30).text
    finally:
        client.close()
    out = {}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name.startswith("asyncflow_requests_refused_total") or name == "asyncflow_process_resident_memory_bytes":
            out[name] = float(value)
    return out


def identity(address: str) -> auth.Destination:
    with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as r:
        dest = auth.Destination.parse(r.headers.get(auth.IDENTITY_HEADER))
    if dest is None:
        raise RuntimeError(f"{address} announced no identity")
    return dest


async def raw(address: str, data: bytes, wait_s: float = 10.0) -> int | None:
    host, _, port = address.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(data)
        line = await asyncio.wait_for(reader.readline(), wait_s)
        parts = line.split()
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    except (ConnectionError, TimeoutError):
        return None
    finally:
        writer.close()


def head(method: str, path: str, headers: list[str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: bench", *headers]
    if not any(h.lower().startswith("content-length") for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed(dest: auth.Destination, method: str, path: str, body: bytes = b"", token: str = TOKEN,
           now: float | None = None) -> bytes:
    value = auth.sign(token.encode(), method, path, dest, auth.body_digest([body]), now=now)
    return head(method, path, [f"{auth.HEADER}: {value}"], body)


async def flood(address: str, n: int, hold_s: float) -> list[str | None]:
    """n connections that send nothing, held for hold_s: those over the per-peer cap are closed by the server."""
    host, _, port = address.rpartition(":")
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(n)]
    await asyncio.sleep(hold_s)
    closed = [None if r.at_eof() or r.exception() else "open" for r, _ in conns]
    for _, w in conns:
        w.close()
    return closed


def attacks(address: str, ps_address: str, burst: int) -> dict[str, Any]:
    dest, ps_dest = identity(address), identity(ps_address)
    captured = signed(dest, "GET", "/v1/worker/status")
    kinds: dict[str, Any] = {
        "no_token": lambda: [head("GET", "/v1/worker/status", [])] * burst,
        "wrong_token": lambda: [signed(dest, "GET", "/v1/worker/status", token="wrong")] * burst,
        "replayed": lambda: [captured] * burst,
        "signed_for_another_task": lambda: [signed(ps_dest, "GET", "/v1/worker/status") for _ in range(burst)],
        "clock_60s_ahead": lambda: [signed(dest, "GET", "/v1/worker/status", now=time.time() + 60)
                                    for _ in range(burst)],
        "oversized_body": lambda: [head("POST", "/v1/worker/abort/1", [f"Content-Length: {2 << 20}"])] * burst,
        "compressed_body": lambda: [head("POST", "/v1/worker/graphs", ["Content-Encoding: deflate"], b"x" * 64)]
        * burst,
        "malformed_json": lambda: [signed(dest, "POST", "/v1/worker/abort/1", b"{not json") for _ in range(burst)],
        "half_sent_heads": lambda: [b"POST /v1/worker/graphs HTTP/1.1\r\nHost: bench\r\nContent-Len"] * burst,
    }
    out: dict[str, Any] = {}
    for kind, make in kinds.items():
        before = metrics(address)
        requests = make()

        async def send_all(requests: list[bytes] = requests) -> list[int | None]:
            statuses = []
            for i in range(0, len(requests), 50):  # 50 at a time: well under the per-peer cap
                statuses += await asyncio.gather(*(raw(address, r) for r in requests[i:i + 50]))
            return statuses

        start = time.monotonic()
        statuses = asyncio.run(send_all())
        out[kind] = _delta(kind, before, metrics(address), statuses, time.monotonic() - start)
    before = metrics(address)
    start = time.monotonic()
    closed = asyncio.run(flood(address, 300, 2.0))
    out["connection_flood_300_idle"] = _delta("flood", before, metrics(address), closed, time.monotonic() - start)
    return out


def _delta(kind: str, before: dict, after: dict, statuses: list, seconds: float) -> dict[str, Any]:
    refused = {}
    for name, value in after.items():
        if name.startswith("asyncflow_requests_refused_total") and value - before.get(name, 0.0):
            refused[name.split('"')[1]] = int(value - before.get(name, 0.0))
    return {"sent": len(statuses), "seconds": round(seconds, 2), "refused_by_cause": refused,
            "answers": {str(k) if k is not None else "closed": n for k, n in sorted(Counter(statuses).items(),
                                                                                   key=lambda kv: str(kv[0]))},
            "rss_mb_after": round(after.get("asyncflow_process_resident_memory_bytes", 0.0) / 2**20, 1)}


def refusals(burst: int) -> dict[str, Any]:
    with cluster(TOKEN) as c:
        os.environ["ASYNCFLOW_TOKEN"] = TOKEN
        try:
            out = attacks(c.spec["worker"][0], c.spec["ps"][0], burst)
            g, v, y = step_graph()
            with af.Session(c.target, graph=g) as sess:
                sess.run(v.initializer)
                out["step_after"] = float(sess.run(y))
        finally:
            del os.environ["ASYNCFLOW_TOKEN"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=100, help="requests per attack (default 100)")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds to wait for a faulted step (default 60)")
    args = parser.parse_args()
    os.environ.pop("ASYNCFLOW_TOKEN", None)
    started = time.monotonic()
    result: dict[str, Any] = {"time_to_error": {f: time_to_error(f, args.cap) for f in FAULTS}}
    result["refused"] = refusals(args.burst)
    result["cpus"] = os.cpu_count()
    result["total_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
