"""Pooled keep-alive connections the server closed while idle (asyncflow.net.http): servers close idle
connections (`--idle-timeout`), and a POST, which is never retried, must not be sent on such a socket."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from aiohttp import web

from asyncflow.net.http import AsyncClient, BlockingClient

IDLE_S = 0.2  # the server's keep-alive timeout


class _Server:
    """An aiohttp app on a loop thread that closes idle keep-alive connections after `IDLE_S`; it counts the
    connections its requests came on."""

    def __init__(self) -> None:
        self.peers: set[tuple] = set()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        self.address = f"127.0.0.1:{self.port}"

    async def _echo(self, request: web.Request) -> web.Response:
        self.peers.add(request.transport.get_extra_info("peername"))
        return web.Response(body=await request.read())

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/echo", self._echo)
        self.runner = web.AppRunner(app, access_log=None, keepalive_timeout=IDLE_S)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def test_blocking_client_posts_after_the_server_closed_its_idle_socket(server):
    client = BlockingClient(server.address)
    try:
        first = client.request("POST", "/echo", [b"one"], timeout=5)
        assert first.status == 200 and bytes(first.body) == b"one"
        time.sleep(IDLE_S * 4)  # the server closes the pooled socket meanwhile
        second = client.request("POST", "/echo", [b"two"], timeout=5)
        assert second.status == 200 and bytes(second.body) == b"two"
        assert len(server.peers) == 2  # a new connection, not the closed one
        third = client.request("POST", "/echo", [b"three"], timeout=5)  # an open pooled socket is still reused
        assert bytes(third.body) == b"three" and len(server.peers) == 2
    finally:
        client.close()


def test_async_client_posts_after_the_server_closed_its_idle_connection(server):
    async def run() -> None:
        client = AsyncClient(server.address)
        try:
            first = await client.request("POST", "/echo", [b"one"], timeout=5)
            assert first.status == 200 and bytes(first.body) == b"one"
            await asyncio.sleep(IDLE_S * 4)  # the loop sees the server's close: the pooled connection is dropped
            second = await client.request("POST", "/echo", [b"two"], timeout=5)
            assert second.status == 200 and bytes(second.body) == b"two"
            assert len(server.peers) == 2
        finally:
            client.close()

    asyncio.run(run())
