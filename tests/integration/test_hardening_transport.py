"""Issue 12, defects 1 and 6, against real processes: compressed bodies are refused from the head (no
inflation, bounded memory), chunked bodies are bounded while read, half-sent heads and idle sockets are
closed within the configured timeouts, a flood of sockets from one address meets its per-peer cap and
locks nobody else out, and `/metrics` counts the refusals by cause."""

from __future__ import annotations

import json
import re
import socket
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import asyncflow as af
from asyncflow.cli import free_port
from asyncflow.net.http import BlockingClient
from tests.integration.conftest import LocalCluster, healthy, wait_until

TOKEN = "s3cret"


def deflate_bomb(inflated: int, chunk: int = 1 << 20) -> bytes:
    """A valid zlib stream of `inflated` zero bytes, about 1/1000 of that size, built in milliseconds: every
    1 MiB of zeros compresses to the same bytes after a full flush, so one such block is repeated."""
    c = zlib.compressobj(9)
    zeros = bytes(chunk)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    n = inflated // chunk
    adler_b = n * chunk % 65521  # Adler-32 of zeros: a stays 1, b adds 1 per byte
    return first + block * (n - 1) + b"\x03\x00" + struct.pack(">I", (adler_b << 16) | 1)  # empty final block


def test_the_bomb_is_what_it_claims():
    bomb = deflate_bomb(8 << 20)
    assert zlib.decompress(bomb) == bytes(8 << 20)
    assert 2_000_000 < len(deflate_bomb(2 << 30)) < 2_200_000


def vm_kb(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


def raw_request(address: str, head: str, body: bytes = b"", timeout: float = 10.0) -> tuple[int, bytes, float]:
    """Sends `head` and `body` on a fresh socket; (status, answer, seconds until the answer's head)."""
    host, _, port = address.rpartition(":")
    start = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head.encode("latin-1") + b"\r\n")
        try:
            s.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the body was read: the answer is waiting
        answer = b""
        while b"\r\n\r\n" not in answer:
            got = s.recv(65536)
            if not got:
                break
            answer += got
        took = time.monotonic() - start
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0
    return status, answer, took


def refused(address: str, token: str | None = None) -> dict[str, int]:
    """`asyncflow_requests_refused_total` by cause, from /metrics."""
    client = BlockingClient(address, token.encode() if token else None)
    try:
        text = bytes(client.request("GET", "/metrics", timeout=10.0).body).decode()
    finally:
        client.close()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'asyncflow_requests_refused_total\{cause="(\w+)"\} (\d+)',
                                                              text)}


def metric(address: str, name: str) -> float:
    client = BlockingClient(address)
    try:
        text = bytes(client.request("GET", "/metrics", timeout=10.0).body).decode()
    finally:
        client.close()
    return float(re.search(rf"^{name} (\S+)$", text, re.M).group(1))


def one_step(target: str) -> None:
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            v = af.Variable(2.0, name="v")
        y = v * 3.0
    with af.Session(target, graph=g) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == np.float32(6.0)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return deflate_bomb(2 << 30)


def test_a_deflate_bomb_without_the_token_is_refused_before_inflating(procs, monkeypatch, bomb):
    c = LocalCluster(procs, ps=1, workers=1, env={"ASYNCFLOW_TOKEN": TOKEN})
    ps = c.address("ps", 0)
    pid = c.tasks[("ps", 0)].pid
    peak_before = vm_kb(pid, "VmHWM")
    for path, encoding in (("/v1/worker/graphs", "deflate"), ("/v1/worker/graphs", "gzip"),
                           ("/v1/master/sessions", "deflate")):
        head = (f"POST {path} HTTP/1.1\r\nHost: {ps}\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Encoding: {encoding}\r\nContent-Length: {len(bomb)}\r\n")
        status, answer, took = raw_request(ps, head, bomb)
        assert 400 <= status < 500, answer[:300]
        assert took < 2.0, took
    assert (vm_kb(pid, "VmHWM") - peak_before) * 1024 < 100 << 20  # peak memory, not just what is left
    monkeypatch.setenv("ASYNCFLOW_TOKEN", TOKEN)
    one_step(c.target)  # the cluster keeps serving a real client
    counts = refused(ps, TOKEN)
    assert counts["size"] + counts["auth"] >= 3, counts


def test_bombs_and_chunked_bodies_on_a_1_mib_route_are_bounded(procs, bomb):
    c = LocalCluster(procs, ps=1, workers=1)
    ps = c.address("ps", 0)
    pid = c.tasks[("ps", 0)].pid
    small = deflate_bomb(1000 << 20)  # 1 GB of zeros in 1.04 MB: the body, under the route's 1 MiB
    assert len(small) < 1 << 20
    peak_before = vm_kb(pid, "VmHWM")
    for path in ("/v1/worker/reset", "/v1/worker/abort/1"):
        head = f"POST {path} HTTP/1.1\r\nHost: {ps}\r\nContent-Encoding: deflate\r\nContent-Length: {len(small)}\r\n"
        status, answer, took = raw_request(ps, head, small)
        assert 400 <= status < 500 and took < 2.0, (status, answer[:300], took)
        assert (vm_kb(pid, "VmHWM") - peak_before) * 1024 < 100 << 20
    # A chunked body declares no length: it is refused once what arrived passes the route's 1 MiB.
    piece = b"x" * (256 << 10)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(32)) + b"0\r\n\r\n"
    head = f"POST /v1/worker/reset HTTP/1.1\r\nHost: {ps}\r\nTransfer-Encoding: chunked\r\n"
    status, answer, _ = raw_request(ps, head, chunked)
    assert status == 413, answer[:300]
    # Declared too large: refused from the head, nothing sent.
    status, answer, took = raw_request(ps, f"POST /v1/worker/reset HTTP/1.1\r\nHost: {ps}\r\n"
                                           f"Content-Length: {8 << 30}\r\n")
    assert status == 413 and took < 2.0, answer[:300]
    assert (vm_kb(pid, "VmHWM") - peak_before) * 1024 < 100 << 20
    counts = refused(ps)
    assert counts["size"] >= 4, counts
    one_step(c.target)


def _closed_within(sock: socket.socket, limit: float, trickle: bytes = b"") -> float:
    """Seconds until the server closes `sock` (sending `trickle` a byte at a time meanwhile); fails past `limit`."""
    start = time.monotonic()
    sock.settimeout(0.2)
    sent = 0
    while time.monotonic() - start < limit:
        try:
            if sent < len(trickle):
                sock.send(trickle[sent:sent + 1])
                sent += 1
            if sock.recv(4096) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start
    raise AssertionError(f"connection still open after {limit} s")


def test_idle_sockets_and_half_sent_heads_are_closed_within_the_timeouts(procs):
    port = free_port()
    address = f"127.0.0.1:{port}"
    p = procs.start("worker", "--cluster", json.dumps({"worker": [address]}), "--job", "worker", "--task", "0",
                    "--head-timeout", "1", "--idle-timeout", "2.5")
    wait_until(lambda: healthy(address), 30, "the worker to serve")
    host = ("127.0.0.1", port)
    idle = socket.create_connection(host)
    half = socket.create_connection(host)
    half.sendall(b"POST /v1/worker/reset HTTP/1.1\r\nHost: x\r\nContent-")
    slow = socket.create_connection(host)
    kept = socket.create_connection(host)  # a keep-alive connection idle after one request
    kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert kept.recv(4096).startswith(b"HTTP/1.1 200")
    try:
        assert _closed_within(half, 2.5) < 2.5  # head timeout 1 s
        assert _closed_within(slow, 2.5, b"GET /healthz HTTP/1.1\r\nHost: slowloris\r\n" * 10) < 2.5
        assert _closed_within(idle, 4.0) < 4.0  # idle timeout 2.5 s, from its opening
        assert _closed_within(kept, 4.0) < 4.0
    finally:
        for s in (idle, half, slow, kept):
            s.close()
    assert refused(address)["deadline"] >= 2
    assert healthy(address) and p.poll() is None


def _flood(address: str, n: int, source: str) -> list[socket.socket]:
    host, _, port = address.rpartition(":")
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.connect((host, int(port)))
        socks.append(s)
    return socks


def test_a_flood_of_idle_sockets_from_one_address_locks_nobody_else_out(procs):
    cap = ("--max-connections-per-peer", "32")
    c = LocalCluster(procs, ps=1, workers=1, master_args=cap, worker_args=cap)
    master = c.master_address
    socks = _flood(master, 300, "127.0.0.2")  # loopback's other addresses stand for another host
    try:
        # Every one of them was accepted, then all but the newest 32 closed by the cap.
        wait_until(lambda: metric(master, "asyncflow_connections_open") <= 32 + 2, 10, "the cap to close the flood")
        assert healthy(master)
        one_step(c.target)
        # Busy connections (a head whose body never comes) are never evicted: a new one is refused instead.
        busy = _flood(c.address("ps", 0), 32, "127.0.0.3")
        for s in busy:
            s.sendall(b"POST /v1/worker/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
        time.sleep(0.3)
        extra = _flood(c.address("ps", 0), 1, "127.0.0.3")[0]
        assert _closed_within(extra, 3.0) < 3.0
        busy[0].settimeout(0.2)
        with pytest.raises(TimeoutError):  # the oldest busy one is still open (its body has 120 s to come)
            busy[0].recv(1)
        for s in busy + [extra]:
            s.close()
    finally:
        for s in socks:
            s.close()
    assert refused(master)["connections"] >= 300 - 32
    assert "connection cap: peer 127.0.0.2 holds 32 connections" in procs.output(c.master)
    assert "connection cap: peer 127.0.0.3" in procs.output(c.tasks[("ps", 0)])
