"""Request signing, and the small HTTP client against an aiohttp server in this process."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time

import numpy as np
import pytest
from aiohttp import web

from asyncflow.net import auth
from asyncflow.net.http import AsyncClient, BlockingClient, PeerUnavailable

# -- auth ------------------------------------------------------------------------------------------------
_PS = auth.Destination("/job:ps/replica:0/task:0", 0x51)


def test_signatures_verify_only_with_the_same_token_path_and_body():
    digest = hashlib.sha256(b"body").digest()
    header = auth.sign(b"tok", "POST", "/v1/x?a=1", _PS, digest)
    auth.Verifier(b"tok", _PS).verify(header, "POST", "/v1/x?a=1", digest)
    for token, method, path, body in [(b"other", "POST", "/v1/x?a=1", b"body"), (b"tok", "GET", "/v1/x?a=1", b"body"),
                                      (b"tok", "POST", "/v1/x?a=2", b"body")]:
        with pytest.raises(auth.AuthError, match="bad request signature"):
            auth.Verifier(token, _PS).verify(header, method, path, hashlib.sha256(body).digest())
    with pytest.raises(auth.AuthError, match="body does not match"):  # the signature covers the body's SHA-256
        auth.Verifier(b"tok", _PS).verify(header, "POST", "/v1/x?a=1", hashlib.sha256(b"bodY").digest())
    verifier = auth.Verifier(b"tok", _PS)
    verifier.verify(header, "POST", "/v1/x?a=1", digest)
    with pytest.raises(auth.AuthError, match="replayed"):
        verifier.verify(header, "POST", "/v1/x?a=1", digest)
    for bad in (None, "", "AF1 x y", "Basic abc", "AF2 notatime n 00", "AF1 1 n 00"):
        with pytest.raises(auth.AuthError):
            verifier.verify(bad, "POST", "/", digest)
    old = auth.sign(b"tok", "POST", "/v1/x?a=1", _PS, digest, now=time.time() - 3600)
    with pytest.raises(auth.AuthError, match="window"):
        verifier.verify(old, "POST", "/v1/x?a=1", digest)


def test_token_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("ASYNCFLOW_TOKEN", raising=False)
    assert auth.load_token() is None
    monkeypatch.setenv("ASYNCFLOW_TOKEN", " env-token\n")
    assert auth.load_token() == b"env-token"
    f = tmp_path / "token"
    f.write_text("file-token\n")
    assert auth.load_token(str(f)) == b"file-token"
    f.write_text("  ")
    with pytest.raises(ValueError, match="is empty"):
        auth.load_token(str(f))
    with pytest.raises(ValueError, match="cannot read"):
        auth.load_token(str(tmp_path / "missing"))


# -- the HTTP client ------------------------------------------------------------------------------------
class _Server:
    """An aiohttp app on its own loop thread: /big/{n} answers n bytes, /echo echoes, /slow sleeps."""

    def __init__(self):
        ready = threading.Event()
        self.loop = asyncio.new_event_loop()

        async def big(request):
            n = int(request.match_info["n"])
            return web.Response(body=np.arange(n, dtype=np.uint8).tobytes())

        async def echo(request):
            return web.Response(body=hashlib.sha256(await request.read()).digest() + request.path_qs.encode())

        async def slow(request):
            await asyncio.sleep(1)
            return web.Response(body=b"late")

        async def start():
            app = web.Application(client_max_size=1 << 30)
            app.router.add_get("/big/{n}", big)
            app.router.add_post("/echo", echo)
            app.router.add_get("/slow", slow)
            self.runner = web.AppRunner(app, access_log=None)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]
            ready.set()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(start())
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)
        self.address = f"127.0.0.1:{self.port}"

    def close(self):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def server():
    s = _Server()
    yield s
    s.close()


def test_blocking_client_reads_bodies_and_reuses_connections(server):
    client = BlockingClient(server.address)
    for n in (0, 1, 100_000, 5_000_000):
        r = client.request("GET", f"/big/{n}")
        assert r.status == 200 and r.body.nbytes == n and r.body.readonly
        assert bytes(r.body[-3:]) == np.arange(n, dtype=np.uint8)[-3:].tobytes()
    assert len(client._idle) == 1  # one keep-alive socket served every request
    payload = [b"x" * 100, memoryview(np.ones(3_000_000, np.uint8)), b"tail"]
    r = client.request("POST", "/echo?q=1", payload)
    assert bytes(r.body[:32]) == hashlib.sha256(b"".join(bytes(p) for p in payload)).digest()
    assert bytes(r.body[32:]) == b"/echo?q=1"
    with pytest.raises(TimeoutError):
        client.request("GET", "/slow", timeout=0.2)
    client.close()


def test_async_client_reads_bodies_in_place(server):
    async def main():
        client = AsyncClient(server.address)
        results = await asyncio.gather(*(client.request("GET", f"/big/{n}") for n in (10, 3_000_000, 0, 777)))
        assert [r.body.nbytes for r in results] == [10, 3_000_000, 0, 777]
        assert bytes(results[1].body[:4]) == bytes([0, 1, 2, 3])
        assert 1 <= len(client._idle) <= 4
        r = await client.request("POST", "/echo", [b"a" * 70_000, b"b"])
        assert bytes(r.body[:32]) == hashlib.sha256(b"a" * 70_000 + b"b").digest()
        with pytest.raises(TimeoutError):
            await client.request("GET", "/slow", timeout=0.2)
        client.close()

    asyncio.run(main())


def test_unreachable_peers_raise_peer_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(PeerUnavailable, match="cannot connect"):
            BlockingClient(f"127.0.0.1:{port}").request("GET", "/")

        async def main():
            with pytest.raises(PeerUnavailable, match="cannot connect"):
                await AsyncClient(f"127.0.0.1:{port}").request("GET", "/")

        asyncio.run(main())


def test_a_peer_that_closes_mid_response_is_unavailable():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    address = f"127.0.0.1:{listener.getsockname()[1]}"

    def serve_once():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        conn.close()

    for use_async in (False, True):
        t = threading.Thread(target=serve_once)
        t.start()
        with pytest.raises(PeerUnavailable):
            if use_async:
                asyncio.run(AsyncClient(address).request("GET", "/"))
            else:
                BlockingClient(address).request("GET", "/")
        t.join(5)
    listener.close()
