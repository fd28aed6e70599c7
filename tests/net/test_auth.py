"""Signatures bound to their destination, the validity window and the nonce window (asyncflow.net.auth),
and the HTTP clients learning a peer's identity and answering its restart (asyncflow.net.http)."""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import threading

import pytest
from aiohttp import web

from asyncflow import errors
from asyncflow.net import auth
from asyncflow.net.http import AsyncClient, BlockingClient, PeerUnavailable
from asyncflow.net.server import ServerOptions, build_app

TOKEN = b"s3cret"
PS = auth.Destination("/job:ps/replica:0/task:0", 0x1F)
WORKER = auth.Destination("/job:worker/replica:0/task:0", 0x2B)
T0 = 1_700_000_000.0
EMPTY = hashlib.sha256(b"").digest()


class Clock:
    def __init__(self, now: float = T0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def _verifier(dest=PS, clock=None, **kw) -> auth.Verifier:
    return auth.Verifier(TOKEN, dest, clock=clock or Clock(), **kw)


def _sign(dest=PS, at=T0, method="POST", path="/v1/worker/reset", digest=EMPTY) -> str:
    return auth.sign(TOKEN, method, path, dest, digest, now=at)


def _refusal(verifier, header, path="/v1/worker/reset", method="POST", digest=EMPTY) -> auth.AuthError:
    with pytest.raises(auth.AuthError) as info:
        verifier.verify(header, method, path, digest)
    return info.value


# -- what the signature binds -------------------------------------------------------------------------
def test_a_request_signed_for_the_ps_is_refused_by_a_worker():
    header = _sign(PS)
    _verifier(PS).verify(header, "POST", "/v1/worker/reset", EMPTY)
    e = _refusal(_verifier(WORKER), header)
    assert isinstance(e, auth.ReplayError) and (e.status, e.cause) == (401, "replay")
    assert "signed for /job:ps/replica:0/task:0, not for this task (/job:worker/replica:0/task:0)" in str(e)
    assert isinstance(e.op_error(), errors.UnauthenticatedError)


def test_the_destination_cannot_be_rewritten_in_the_header():
    parts = _sign(PS).split(" ")
    parts[3], parts[4] = "/job:worker/replica:0/task:0", f"{WORKER.incarnation:x}"
    e = _refusal(_verifier(WORKER), " ".join(parts))
    assert (e.status, e.cause) == (401, "auth") and "bad request signature" in str(e)


def test_a_request_for_an_earlier_incarnation_gets_409_with_the_current_identity():
    restarted = auth.Destination(PS.task, 0x77)
    e = _refusal(_verifier(restarted), _sign(PS))
    assert isinstance(e, auth.StaleIncarnation) and (e.status, e.cause) == (409, "replay")
    assert auth.Destination.parse(e.headers[auth.IDENTITY_HEADER]) == restarted
    assert isinstance(e.op_error(), errors.AbortedError) and "has restarted (now incarnation 77)" in str(e)


def test_method_path_and_body_are_covered():
    digest = hashlib.sha256(b"{}").digest()
    header = _sign(digest=digest)
    for method, path in [("GET", "/v1/worker/reset"), ("POST", "/v1/worker/reset?x=1"), ("POST", "/v1/worker/abort/1")]:
        assert "bad request signature" in str(_refusal(_verifier(), header, path, method, digest))
    assert "body does not match" in str(_refusal(_verifier(), header, digest=hashlib.sha256(b"{ }").digest()))


def test_destination_text_round_trips():
    odd = auth.Destination("/job:my job/replica:0/task:3", 0x3FFFFFFFFFFFFFFF)
    assert auth.Destination.parse(str(odd)) == odd and " " not in str(odd).split(" ")[0]
    for bad in (None, "", "x", "a b c", "/job:ps 12g", "/job:ps "):
        assert auth.Destination.parse(bad) is None
    header = auth.sign(TOKEN, "GET", "/metrics", odd)
    auth.Verifier(TOKEN, odd).verify(header, "GET", "/metrics", EMPTY)


# -- the window ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("offset, accepted", [(0.0, True), (30.0, True), (-30.0, True), (30.5, False),
                                              (-30.5, False), (60.0, False), (-3600.0, False)])
def test_window_edges(offset, accepted):
    """A request is accepted while the server's clock is within WINDOW_S of its time, either way."""
    assert auth.WINDOW_S == 30.0
    verifier = _verifier(clock=Clock(T0 + offset))
    if accepted:
        verifier.verify(_sign(), "POST", "/v1/worker/reset", EMPTY)
    else:
        e = _refusal(verifier, _sign())
        assert e.cause == "replay" and "outside the accepted window of +-30 s" in str(e)
        assert ("behind" if offset > 0 else "ahead of") in str(e)


def test_a_replay_is_refused_for_as_long_as_its_time_is_valid_and_the_nonce_expires_after():
    clock = Clock()
    verifier = _verifier(clock=clock)
    header = _sign()
    verifier.verify(header, "POST", "/v1/worker/reset", EMPTY)
    for now in (T0, T0 + 10, T0 + 30):
        clock.now = now
        assert "replayed" in str(_refusal(verifier, header))
        assert verifier.nonces.size == 1
    clock.now = T0 + 30.5
    assert "outside the accepted window" in str(_refusal(verifier, header))
    assert verifier.nonces.size == 0  # gone once its time left the window, not before


def test_skew_a_client_ahead_is_held_to_its_own_time():
    """The defect: a step from a client 60 s ahead was accepted and replayed 305 s later, its nonce forgotten
    300 s after it arrived. Nonces now live as long as their request's time is valid."""
    clock = Clock()
    verifier = _verifier(clock=clock)
    e = _refusal(verifier, _sign(at=T0 + 60))  # 60 s ahead: beyond the tolerance
    assert "60 s ahead of this server's clock" in str(e)
    ahead = _sign(at=T0 + 25)  # within the tolerance: accepted
    verifier.verify(ahead, "POST", "/v1/worker/reset", EMPTY)
    clock.now = T0 + 40  # 40 s after it arrived, its time is still valid: the nonce is still held
    assert "replayed" in str(_refusal(verifier, ahead))
    clock.now = T0 + 55
    assert "replayed" in str(_refusal(verifier, ahead))
    clock.now = T0 + 56
    assert "outside the accepted window" in str(_refusal(verifier, ahead))
    clock.now = T0 + 305
    assert "outside the accepted window" in str(_refusal(verifier, ahead))


def test_a_clock_stepping_back_does_not_bring_an_expired_request_back():
    clock = Clock()
    verifier = _verifier(clock=clock)
    header = _sign()
    verifier.verify(header, "POST", "/v1/worker/reset", EMPTY)
    clock.now = T0 + 31  # the nonce is dropped here
    _refusal(verifier, header)
    clock.now = T0 + 5  # the wall clock stepped back: the verifier keeps its latest time
    assert "outside the accepted window" in str(_refusal(verifier, header))


# -- the cap ----------------------------------------------------------------------------------------------
def test_a_full_nonce_cache_refuses_new_requests_and_forgets_nothing():
    clock = Clock()
    verifier = _verifier(clock=clock, max_nonces=3)
    first = _sign()
    verifier.verify(first, "POST", "/v1/worker/reset", EMPTY)
    clock.now = T0 + 10
    for _ in range(2):
        verifier.verify(_sign(at=clock.now), "POST", "/v1/worker/reset", EMPTY)
    e = _refusal(verifier, _sign(at=clock.now))
    assert isinstance(e, auth.NonceCacheFull) and (e.status, e.cause) == (503, "replay")
    assert e.headers == {"Retry-After": "20"} and isinstance(e.op_error(), errors.UnavailableError)
    assert "replayed" in str(_refusal(verifier, first))  # the flood did not push the captured nonce out
    clock.now = T0 + 30.5  # the first second left the window: room for one
    verifier.verify(_sign(at=clock.now), "POST", "/v1/worker/reset", EMPTY)
    assert isinstance(_refusal(verifier, _sign(at=clock.now)), auth.NonceCacheFull)
    assert "outside" in str(_refusal(verifier, first))


def test_many_requests_stay_within_the_cap():
    clock = Clock()
    verifier = _verifier(clock=clock, window_s=2, max_nonces=50)
    refused = 0
    for i in range(400):
        clock.now = T0 + i * 0.02  # 50 a second, 100 a window
        try:
            verifier.verify(_sign(at=clock.now), "POST", "/v1/worker/reset", EMPTY)
        except auth.NonceCacheFull:
            refused += 1
        assert verifier.nonces.size <= 50
    assert 0 < refused < 400


def test_limits_are_explicit_options_and_flags():
    from asyncflow.cli import _Fail, _options, _parser

    assert (ServerOptions().auth_window_s, ServerOptions().auth_max_nonces) == (auth.WINDOW_S, auth.MAX_NONCES)
    defaults = _options(_parser().parse_args(["master", "--cluster", "{}", "--port", "1"]))
    assert (defaults.auth_window_s, defaults.auth_max_nonces) == (auth.WINDOW_S, auth.MAX_NONCES)
    for command in (["master", "--cluster", "{}", "--port", "1"], ["worker"]):
        opts = _options(_parser().parse_args(command + ["--auth-window", "3", "--auth-max-nonces", "100"]))
        assert (opts.auth_window_s, opts.auth_max_nonces) == (3.0, 100)
    for value in ("0", "-1"):
        with pytest.raises(_Fail, match="--auth-max-nonces"):
            _options(_parser().parse_args(["worker", "--auth-max-nonces", value]))
        with pytest.raises(_Fail, match="--auth-window"):
            _options(_parser().parse_args(["worker", "--auth-window", value]))
    for value in ("x", "1.5"):  # not an int: argparse refuses it
        with pytest.raises(SystemExit):
            _parser().parse_args(["worker", "--auth-max-nonces", value])
    assert _parser().parse_args(["local", "--auth-window", "3", "--auth-max-nonces", "100"]).auth_max_nonces == 100


# -- clients against a guarded server ------------------------------------------------------------------------
class _Guarded:
    """The guard of a master-less, worker-less app on a loop thread; `restart` serves a new incarnation on the
    same port."""

    def __init__(self, task: str = "/job:worker/replica:0/task:0"):
        self.task = task
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self._call(self._start())
        self.address = f"127.0.0.1:{self.port}"

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _start(self):
        self.runner = web.AppRunner(build_app(None, None, ServerOptions(token=TOKEN), self.task), access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def restart(self):
        self._call(self.runner.cleanup())
        self._call(self._start())

    def close(self):
        self._call(self.runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def guarded():
    s = _Guarded()
    yield s
    s.close()


def test_blocking_client_learns_the_identity_and_follows_a_restart(guarded):
    client = BlockingClient(guarded.address, TOKEN, task=guarded.task)
    assert client.request("GET", "/metrics").status == 200
    first = client.destination
    assert first is not None and first.task == guarded.task
    guarded.restart()
    response = client.request("GET", "/metrics")  # a 409 first: the client signs for the new incarnation
    assert response.status == 200, response.text
    assert client.destination.task == guarded.task and client.destination.incarnation != first.incarnation
    client.close()
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=10)  # the old incarnation's signature
    conn.request("GET", "/metrics", headers={auth.HEADER: auth.sign(TOKEN, "GET", "/metrics", first)})
    r = conn.getresponse()
    assert r.status == 409 and auth.Destination.parse(r.getheader(auth.IDENTITY_HEADER)) == client.destination
    assert b"has restarted" in r.read()
    conn.close()


def test_async_client_learns_the_identity_and_follows_a_restart(guarded):
    async def main():
        client = AsyncClient(guarded.address, TOKEN)
        assert (await client.request("GET", "/metrics")).status == 200
        first = client.destination
        await asyncio.to_thread(guarded.restart)
        assert (await client.request("GET", "/metrics")).status == 200
        assert client.destination.incarnation != first.incarnation
        client.close()

    asyncio.run(main())


def test_a_client_expecting_another_task_refuses_to_sign_for_this_one(guarded):
    with pytest.raises(PeerUnavailable, match="serves /job:worker/replica:0/task:0, not /job:ps/replica:0/task:0"):
        BlockingClient(guarded.address, TOKEN, task="/job:ps/replica:0/task:0").request("GET", "/metrics")
