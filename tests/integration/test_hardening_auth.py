"""Issue 12, defects 3 and 4, against real processes with a cluster token: a signed request replayed at
another task, a captured step replayed after a flood of signed requests, and a step from a client whose
clock is ahead replayed once the server would have forgotten it.

The servers run with a 3 s window and room for 40 nonces (`--auth-window`,
`--auth-max-nonces`): the defects' 300 s window and 200,001-request flood, scaled down so that a
test takes seconds. The arithmetic is the same: the replay comes after the request's arrival plus the
window (when the old cache forgot it) but while its time is still valid.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import time
import urllib.request

import pytest

import asyncflow as af
from asyncflow.net import auth, wire
from asyncflow.net.http import BlockingClient
from tests.integration.conftest import LocalCluster, Processes, healthy, wait_until

TOKEN = "s3cret"
WINDOW_S = 3.0
MAX_NONCES = 40
AUTH_ARGS = ("--auth-window", str(WINDOW_S), "--auth-max-nonces", str(MAX_NONCES))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    p = Processes(tmp_path_factory.mktemp("auth"))
    try:
        yield LocalCluster(p, ps=1, workers=1, env={"ASYNCFLOW_TOKEN": TOKEN}, master_args=AUTH_ARGS,
                           worker_args=AUTH_ARGS)
    finally:
        p.kill_all()


@pytest.fixture
def token_env(monkeypatch):
    monkeypatch.setenv("ASYNCFLOW_TOKEN", TOKEN)


def _identity(address: str) -> auth.Destination:
    with urllib.request.urlopen(f"http://{address}/healthz", timeout=10) as r:
        return auth.Destination.parse(r.headers[auth.IDENTITY_HEADER])


def _post(address: str, path: str, body: bytes, headers: dict) -> tuple[int, dict]:
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw[:1] == b"{" else {})
    finally:
        conn.close()


def _signed(path: str, body: bytes, dest: auth.Destination, now: float | None = None) -> dict:
    return {auth.HEADER: auth.sign(TOKEN.encode(), "POST", path, dest, hashlib.sha256(body).digest(), now),
            "Content-Type": wire.FRAME_CONTENT_TYPE}


def _refused(address: str, cause: str) -> int:
    text = bytes(BlockingClient(address, TOKEN.encode()).request("GET", "/metrics").body).decode()
    return int(re.search(rf'asyncflow_requests_refused_total{{cause="{cause}"}} (\d+)', text).group(1))


class _Counter:
    """`w` on the ps and one captured `w += 1` step (its master request, as a client sent it)."""

    def __init__(self, c: LocalCluster):
        g = af.Graph()
        with g.as_default():
            with af.device("/job:ps/task:0"):
                self.w = af.Variable(1.0, name="w")
            self.inc = af.assign_add(self.w, 1.0)
        self.sess = af.Session(c.target, graph=g)
        self.sess.run(self.w.initializer)
        remote = self.sess._remote
        self.path, chunks, _ = remote._step_request(remote._callable([], [self.inc.op], []), [], None)
        self.body = b"".join(bytes(memoryview(ch)) for ch in chunks)

    def value(self) -> float:
        return float(self.sess.run(self.w))


def test_a_request_signed_for_the_ps_is_refused_by_a_worker(cluster, token_env):
    ps, worker, master = cluster.address("ps", 0), cluster.address("worker", 0), cluster.master_address
    body = wire.dumps(wire.Reset([]))
    headers = _signed("/v1/worker/reset", body, _identity(ps))
    before = _refused(worker, "replay")
    assert _post(ps, "/v1/worker/reset", body, headers)[0] == 200
    status, answer = _post(worker, "/v1/worker/reset", body, headers)
    assert status == 401 and answer["error"]["code"] == af.errors.UNAUTHENTICATED
    assert "signed for /job:ps/replica:0/task:0, not for this task (/job:worker/replica:0/task:0)" in \
        answer["error"]["message"]
    assert _post(master, "/v1/worker/reset", body, headers)[0] == 401  # nor at the master (nor is its route there)
    status, answer = _post(ps, "/v1/worker/reset", body, headers)
    assert status == 401 and "replayed" in answer["error"]["message"]
    assert _refused(worker, "replay") == before + 1
    # Each task announces what it signs for: its task name and the incarnation the cluster knows it by.
    for address, task, key in [(ps, "/job:ps/replica:0/task:0", "incarnation"),
                               (master, "/job:master", "master_incarnation")]:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=10) as r:
            announced, body = auth.Destination.parse(r.headers[auth.IDENTITY_HEADER]), json.loads(r.read())
        assert announced == auth.Destination(task, body[key])


def test_a_step_from_a_client_clock_ahead_is_not_replayable(cluster, token_env):
    counter = _Counter(cluster)
    master = _identity(cluster.master_address)
    # 60 s ahead: outside the tolerance, refused at once.
    status, answer = _post(cluster.master_address, counter.path, counter.body,
                           _signed(counter.path, counter.body, master, time.time() + 60))
    assert status == 401 and "ahead of this server's clock" in answer["error"]["message"]
    # 2 to 3 s ahead (inside the 3 s window): runs once, w 1 -> 2.
    arrived = time.time()
    stamp = int(arrived) + 3
    headers = _signed(counter.path, counter.body, master, stamp)
    assert _post(cluster.master_address, counter.path, counter.body, headers)[0] == 200
    assert counter.value() == 2.0
    # Replayed after arrival + window (where the old cache had dropped it), its time still valid: a replay.
    time.sleep(max(0.0, arrived + WINDOW_S + 0.3 - time.time()))
    assert time.time() < stamp + WINDOW_S - 1.0
    status, answer = _post(cluster.master_address, counter.path, counter.body, headers)
    assert status == 401 and "replayed" in answer["error"]["message"], answer
    # Replayed once its time left the window: refused for its time, whatever the cache holds.
    time.sleep(max(0.0, stamp + WINDOW_S + 1.2 - time.time()))
    status, answer = _post(cluster.master_address, counter.path, counter.body, headers)
    assert status == 401 and "outside the accepted window" in answer["error"]["message"], answer
    assert counter.value() == 2.0
    counter.sess.close()


def test_a_captured_step_replayed_after_a_flood_is_refused(cluster, token_env):
    counter = _Counter(cluster)
    # Signed with its time rounded up (a clock a fraction of a second ahead) so that it stays valid for a
    # whole window after it is sent: the replay below comes within that window.
    captured = _signed(counter.path, counter.body, _identity(cluster.master_address), int(time.time()) + 1)
    assert _post(cluster.master_address, counter.path, counter.body, captured)[0] == 200
    assert counter.value() == 2.0
    # A flood of signed requests (the token holder's): past the cap the master refuses, it forgets nothing.
    flood = BlockingClient(cluster.master_address, TOKEN.encode())
    statuses = [flood.request("GET", "/v1/master/devices").status for _ in range(MAX_NONCES + 10)]
    assert set(statuses) == {200, 503} and statuses.count(503) >= 10, statuses
    status, answer = _post(cluster.master_address, counter.path, counter.body, captured)
    assert status == 401 and "replayed" in answer["error"]["message"], answer
    # Within a window the flood's nonces expire and the cluster serves again; w was incremented once.
    wait_until(lambda: flood.request("GET", "/v1/master/devices").status == 200, 3 * WINDOW_S, "the flood to expire")
    assert counter.value() == 2.0
    time.sleep(max(0.0, int(captured[auth.HEADER].split(" ")[1]) + WINDOW_S + 1.2 - time.time()))
    status, answer = _post(cluster.master_address, counter.path, counter.body, captured)
    assert status == 401 and "outside the accepted window" in answer["error"]["message"], answer
    assert counter.value() == 2.0
    flood.close()
    counter.sess.close()


def test_a_restarted_task_refuses_its_old_incarnation_and_its_peers_sign_again(cluster, token_env):
    """Runs last: it restarts the ps. A request signed for the old incarnation gets 409 naming the new one;
    the master's and the worker's clients, which signed for the old one, re-sign and the cluster serves on."""
    ps = cluster.address("ps", 0)
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            v = af.Variable(3.0, name="v")
        with af.device("/job:worker/task:0"):
            y = v * 2.0
    with af.Session(cluster.target, graph=g) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 6.0
    old = _identity(ps)
    cluster.tasks[("ps", 0)].kill()
    cluster.tasks[("ps", 0)].wait(10)
    cluster.tasks[("ps", 0)] = cluster.procs.start("worker", "--cluster", cluster.spec_json, "--job", "ps", "--task",
                                                   "0", *AUTH_ARGS, env=cluster.env)
    wait_until(lambda: healthy(ps), 30, "the ps to serve again")
    new = _identity(ps)
    assert new.task == old.task and new.incarnation != old.incarnation
    body = wire.dumps(wire.Reset([]))
    stale = _signed("/v1/worker/reset", body, old)  # by a client that has not seen the restart (or captured before)
    host, _, port = ps.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    conn.request("POST", "/v1/worker/reset", body=body, headers=stale)
    r = conn.getresponse()
    answer = json.loads(r.read())
    conn.close()
    assert r.status == 409 and answer["error"]["code"] == af.errors.ABORTED, answer
    assert auth.Destination.parse(r.getheader(auth.IDENTITY_HEADER)) == new
    assert "has restarted" in answer["error"]["message"]

    def answers() -> bool:
        try:
            with af.Session(cluster.target, graph=g) as sess:
                sess.run(v.initializer)
                return sess.run(y) == 6.0
        except (af.errors.UnavailableError, af.errors.AbortedError):
            return False  # the master has not seen the new incarnation yet

    wait_until(answers, 30, "a step on the restarted ps")
