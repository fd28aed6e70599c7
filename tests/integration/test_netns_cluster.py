"""A cluster across Linux network namespaces: one host per process, the link to the ps shaped.

Each task (ps, two workers), the master and the client get a network namespace of their own,
joined by veth pairs to a bridge in a hub namespace, with addresses 10.77.0.x/24; the root
namespace is not touched, so runs in parallel (names carry the pid) do not collide. The ps's
link is shaped both ways with `tc tbf` (200 Mbit/s). Every server is started with the same CLI a
user types, `ip netns exec NS python -m asyncflow.cli worker --cluster ... --host 10.77.0.x
--token-file F` (a non-loopback bind needs the token), so nothing may assume loopback beyond the
default bind. The client, this file run as a module inside its namespace, trains a
`replica_device_setter` model whose gradients are computed on both workers and checks the values
against numpy, then times the pull of an 8 MiB ps variable by a worker: it cannot take less than
the shaped rate allows, which shows the traffic really crossed the shaped link.

Skipped, with the reason, where namespaces cannot be made (not root, no `ip`, no permission).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBNET = "10.77.0"
PORT = 2222
# (namespace role, host octet): the tasks, the master and the client
HOSTS = {"ps0": 2, "w0": 3, "w1": 4, "master": 5, "client": 6}
SPEC = {"ps": [f"{SUBNET}.2:{PORT}"], "worker": [f"{SUBNET}.3:{PORT}", f"{SUBNET}.4:{PORT}"]}
MASTER = f"{SUBNET}.5:{PORT}"
RATE_MBIT = 200
TBF = ["tbf", "rate", f"{RATE_MBIT}mbit", "burst", "256kb", "latency", "50ms"]
BIG_FLOATS = 2 << 20  # 8 MiB of float32
LR = 0.05
STEPS = 8


# -- the client: runs inside its namespace (`python -m tests.integration.test_netns_cluster TARGET OUT`) --------
def _feeds(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    return rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)


def client_main(target: str, out: str) -> None:
    import asyncflow as af

    g = af.Graph()
    with g.as_default():
        with af.device(af.train.replica_device_setter(cluster=SPEC, worker_device="/job:worker/task:0")):
            w = af.get_variable("w", initializer=np.zeros(4, np.float32))
            big = af.get_variable("big", [BIG_FLOATS], af.float32, initializer=af.random_uniform_initializer())
            step = af.train.get_or_create_global_step()
        with af.device("/job:worker/task:0"):
            a = af.placeholder(af.float32, [4], name="a")
            loss_a = af.reduce_sum(af.square(w - a))
            pull = af.reduce_sum(big)  # the worker reads all 8 MiB from the ps
        with af.device("/job:worker/task:1"):
            b = af.placeholder(af.float32, [4], name="b")
            loss_b = af.reduce_sum(af.square(w - b))
        train = af.train.GradientDescentOptimizer(LR).minimize(loss_a + loss_b, global_step=step,
                                                               colocate_gradients_with_ops=True)
        init = af.global_variables_initializer()
    sess = af.Session(target, graph=g)
    sess.run(init)
    with sess:
        devices = sess.list_devices()
        for i in range(STEPS):
            fa, fb = _feeds(i)
            sess.run(train, {a: fa, b: fb})
        w_value, step_value = sess.run([w, step])
        big_sum = float(sess.run(pull))
        seconds = []
        for _ in range(2):
            start = time.perf_counter()
            sess.run(pull)
            seconds.append(time.perf_counter() - start)
        big_value = sess.run(big)
    Path(out).write_text(json.dumps({"w": w_value.tolist(), "step": int(step_value), "devices": devices,
                                     "pull_seconds": seconds, "big_sum": big_sum,
                                     "big_sum_here": float(big_value.astype(np.float64).sum())}))


def expected_w() -> np.ndarray:
    """SGD on sum((w - a)^2) + sum((w - b)^2), in float32 as the kernels run it."""
    w = np.zeros(4, np.float32)
    for i in range(STEPS):
        fa, fb = _feeds(i)
        w = w - np.float32(LR) * (np.float32(2) * (w - fa) + np.float32(2) * (w - fb))
    return w


# -- the namespaces -----------------------------------------------------------------------------------------------
def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)


class Namespaces:
    """A hub namespace with a bridge and one namespace per role, each joined to the bridge by a veth pair."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.hub = f"{prefix}hub"
        self.created: list[str] = []

    def name(self, role: str) -> str:
        return f"{self.prefix}{role}"

    def setup(self) -> None:
        """Builds everything; pytest.skip naming the command and its stderr when the host cannot."""
        self._add(self.hub)
        self._run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
        self._run("ip", "-n", self.hub, "link", "set", "br0", "up")
        for role, octet in HOSTS.items():
            ns = self.name(role)
            self._add(ns)
            self._run("ip", "-n", self.hub, "link", "add", f"v{role}", "type", "veth", "peer", "name", "eth0",
                      "netns", ns)
            self._run("ip", "-n", self.hub, "link", "set", f"v{role}", "master", "br0", "up")
            self._run("ip", "-n", ns, "addr", "add", f"{SUBNET}.{octet}/24", "dev", "eth0")
            self._run("ip", "-n", ns, "link", "set", "eth0", "up")
            self._run("ip", "-n", ns, "link", "set", "lo", "up")
        # the ps's link, both ways: what it sends (its eth0) and what it receives (the hub's end of its veth)
        self._run("tc", "-n", self.name("ps0"), "qdisc", "add", "dev", "eth0", "root", *TBF)
        self._run("tc", "-n", self.hub, "qdisc", "add", "dev", "vps0", "root", *TBF)

    def _add(self, ns: str) -> None:
        _sh("ip", "netns", "del", ns)  # a leftover of a killed run of this pid
        self._run("ip", "netns", "add", ns)
        self.created.append(ns)

    def _run(self, *cmd: str) -> None:
        done = _sh(*cmd)
        if done.returncode != 0:
            pytest.skip(f"cannot build the network namespaces: `{' '.join(cmd)}` failed: {done.stderr.strip()}")

    def teardown(self) -> None:
        for ns in reversed(self.created):  # veths go with their namespace
            _sh("ip", "netns", "del", ns)


class NamespaceProcesses:
    """Children started in namespaces, as tests/integration/conftest.py's Processes: each leads its own process
    group, logs to a file, and `kill_all` leaves none running."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.children: list[tuple[subprocess.Popen, Path]] = []

    def start(self, ns: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        log = self.log_dir / f"{ns}-{len(self.children)}.log"
        full_env = {k: v for k, v in os.environ.items() if k not in ("ASYNCFLOW_CONFIG", "ASYNCFLOW_TOKEN")}
        full_env.update(env or {})
        with open(log, "wb") as f:
            proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, *args], stdout=f,
                                    stderr=subprocess.STDOUT, env=full_env, cwd=str(ROOT), start_new_session=True)
        self.children.append((proc, log))
        return proc

    def output(self) -> str:
        return "\n".join(f"--- {log.name} ---\n{log.read_text(errors='replace')[-3000:]}" for _, log in self.children)

    def kill_all(self) -> None:
        for proc, _ in self.children:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except OSError:
                    pass
        for proc, _ in self.children:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a zombie we cannot reap
                pass


@pytest.fixture
def namespaces():
    if not sys.platform.startswith("linux"):
        pytest.skip("network namespaces are Linux's")
    if os.geteuid() != 0:
        pytest.skip("creating network namespaces (ip netns add) needs root")
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} (iproute2) not installed")
    spaces = Namespaces(f"af{os.getpid()}")
    try:
        spaces.setup()
        yield spaces
    finally:
        spaces.teardown()


def _wait_ready(procs: NamespaceProcesses, started: list[subprocess.Popen], timeout: float) -> None:
    """Until every server logged its `ready` line; fails with the logs when one died or took too long."""
    deadline = time.monotonic() + timeout
    logs = {proc: log for proc, log in procs.children}
    while True:
        dead = [p for p in started if p.poll() is not None]
        if dead:
            pytest.fail("a server exited at start:\n" + procs.output())
        if all("ready job=" in logs[p].read_text(errors="replace") for p in started):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"servers not ready after {timeout} s:\n" + procs.output())
        time.sleep(0.05)


def test_cluster_across_namespaces_trains_and_crosses_the_shaped_link(namespaces, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("netns-cluster-token\n")
    spec = json.dumps(SPEC)
    procs = NamespaceProcesses(tmp_path)
    try:
        servers = []
        for job, role_prefix in (("ps", "ps"), ("worker", "w")):
            for i, address in enumerate(SPEC[job]):
                servers.append(procs.start(namespaces.name(f"{role_prefix}{i}"), "-m", "asyncflow.cli", "worker",
                                           "--cluster", spec, "--job", job, "--task", str(i),
                                           "--host", address.rpartition(":")[0], "--token-file", str(token_file)))
        host, _, port = MASTER.rpartition(":")
        servers.append(procs.start(namespaces.name("master"), "-m", "asyncflow.cli", "master", "--cluster", spec,
                                   "--host", host, "--port", port, "--token-file", str(token_file)))
        _wait_ready(procs, servers, timeout=25)

        out = tmp_path / "client.json"
        client = procs.start(namespaces.name("client"), "-m", "tests.integration.test_netns_cluster",
                             f"http://{MASTER}", str(out), env={"ASYNCFLOW_TOKEN": "netns-cluster-token"})
        try:
            client.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the client did not finish in 60 s:\n" + procs.output())
        assert client.returncode == 0, procs.output()
        result = json.loads(out.read_text())
    finally:
        procs.kill_all()

    assert result["step"] == STEPS
    np.testing.assert_allclose(result["w"], expected_w(), rtol=1e-5, atol=1e-6)
    tasks = {d.split("/device:")[0] for d in result["devices"]}
    assert {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"} <= tasks
    # the worker's sum of the ps variable is the sum of the values the client fetched
    assert result["big_sum"] == pytest.approx(result["big_sum_here"], rel=1e-4)
    # 8 MiB through a 200 Mbit/s token bucket (256 KiB burst) takes at least (8 MiB - 256 KiB) * 8 / 200e6 s
    floor = (BIG_FLOATS * 4 - (256 << 10)) * 8 / (RATE_MBIT * 1e6)
    assert min(result["pull_seconds"]) >= floor * 0.95, (result["pull_seconds"], floor)


if __name__ == "__main__":
    client_main(sys.argv[1], sys.argv[2])
