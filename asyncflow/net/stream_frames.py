"""The bytes of a stream: WebSocket framing (the client's side), stream messages, and the handshake's proofs.

A stream is one WebSocket connection between two asyncflow processes (`asyncflow.net.stream`). The
server side is aiohttp's; the client side frames by hand (`ws_frame`, `FrameReader`), because a
blocking `Session.run` speaks it over a plain socket and an event loop's client over a protocol,
and neither wants a third-party client in between.

**Messages.** Each binary WebSocket message is one stream message: a 12-byte header
(`MESSAGE`: kind, flags, status, request id, head length), the head (UTF-8), then the body.

- REQUEST: head `"<METHOD> <path?query>\\n<content type>"`, body the request's bytes (what an HTTP
  body would be). Requests are multiplexed by id: replies may come in any order.
- REPLY: `status` as HTTP's; head the reply's headers, one `"Name: value"` per line; body.
- CANCEL: the client gave up on request `id` (timeout, cancellation); no head, no body.
- HELLO: the handshake (below); head a JSON object, no body.

**Handshake.** The server speaks first: `{"task", "incarnation", "nonce"}` (its identity and a
fresh 128-bit nonce). The client answers `{"task", "incarnation", "expect", "nonce", "proof"}`: its
own identity, the server identity it means to reach ("" for any), its own fresh nonce, and
`proof("client", ...)`. The server refuses a proof that does not verify (401), or an `expect` that is
not itself (409, with its identity: the task restarted), else answers `{"proof": proof("server",
...)}`, which the client checks, so each end has shown the other that it holds the cluster token.
A proof is an HMAC-SHA256 keyed with the token over both identities and both nonces: a recorded
handshake is useless against a fresh server nonce, and a proof for one task or incarnation is not
one for another. Without a token both proofs are empty and only identities are exchanged. After the
handshake frames carry no signature.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

REQUEST, REPLY, CANCEL, HELLO = 1, 2, 3, 4
KINDS = (REQUEST, REPLY, CANCEL, HELLO)
MESSAGE = struct.Struct("<BBHII")  # kind, flags, status, request id, head length
MAX_HEAD = 8192  # a request line and content type, or a reply's headers
PATH = "/v1/stream"
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

# WebSocket opcodes
CONTINUATION, BINARY, CLOSE, PING, PONG = 0x0, 0x2, 0x8, 0x9, 0xA


class StreamError(ValueError):
    """A malformed stream message or WebSocket frame, or a failed handshake (the stream is closed)."""


# -- stream messages -----------------------------------------------------------------------------------------
def message(kind: int, request_id: int, head: bytes = b"", body: Sequence[Any] = (), status: int = 0) -> list[Any]:
    """A stream message as chunks to write (the body's buffers are not joined)."""
    return [MESSAGE.pack(kind, 0, status, request_id, len(head)) + head, *body]


def parse_message(data: bytes | memoryview) -> tuple[int, int, int, str, memoryview]:
    """(kind, status, request id, head, body view) of one message; StreamError when malformed."""
    view = memoryview(data).cast("B")
    if view.nbytes < MESSAGE.size:
        raise StreamError(f"stream message of {view.nbytes} bytes is shorter than its {MESSAGE.size}-byte header")
    kind, flags, status, request_id, head_len = MESSAGE.unpack_from(view)
    if kind not in KINDS or flags:
        raise StreamError(f"unknown stream message kind {kind} (flags {flags})")
    if head_len > MAX_HEAD or MESSAGE.size + head_len > view.nbytes:
        raise StreamError(f"stream message head of {head_len} bytes does not fit (limit {MAX_HEAD})")
    try:
        head = bytes(view[MESSAGE.size:MESSAGE.size + head_len]).decode("utf-8")
    except UnicodeDecodeError:
        raise StreamError("stream message head is not UTF-8") from None
    return kind, status, request_id, head, view[MESSAGE.size + head_len:]


def request_head(method: str, path: str, content_type: str | None) -> bytes:
    return f"{method} {path}\n{content_type or ''}".encode()


def parse_request_head(head: str) -> tuple[str, str, str]:
    """(method, path with query, content type) of a REQUEST's head."""
    line, _, content_type = head.partition("\n")
    method, _, path = line.partition(" ")
    if not method.isalpha() or not path.startswith("/") or "\n" in content_type:
        raise StreamError(f"malformed stream request head {head[:80]!r}")
    return method, path, content_type


def reply_head(headers: dict[str, str]) -> bytes:
    return "\n".join(f"{k}: {v}" for k, v in headers.items()).encode()


def parse_reply_head(head: str) -> dict[str, str]:
    """A REPLY's headers, names lower-cased (as the HTTP client gives them)."""
    out = {}
    for line in head.split("\n"):
        if line:
            k, _, v = line.partition(":")
            out[k.strip().lower()] = v.strip()
    return out


def hello(obj: dict) -> list[Any]:
    return message(HELLO, 0, orjson.dumps(obj))


def parse_hello(data: bytes | memoryview) -> dict:
    kind, _, _, head, body = parse_message(data)
    if kind != HELLO or body.nbytes:
        raise StreamError(f"expected the handshake's HELLO, got a message of kind {kind}")
    try:
        obj = orjson.loads(head)
    except orjson.JSONDecodeError:
        raise StreamError("handshake HELLO is not JSON") from None
    if not isinstance(obj, dict) or not all(isinstance(v, (str, int)) for v in obj.values()):
        raise StreamError("handshake HELLO must be a flat JSON object")
    return obj


def proof(token: bytes | None, role: str, server: str, client: str, server_nonce: str, client_nonce: str) -> str:
    """The handshake's proof that `role` ("client"/"server") holds `token` ("" without a token)."""
    if token is None:
        return ""
    text = "\n".join(("AFS1", role, server, client, server_nonce, client_nonce)).encode()
    return hmac.new(token, text, hashlib.sha256).hexdigest()


def proofs_match(a: Any, b: str) -> bool:
    return isinstance(a, str) and hmac.compare_digest(a.encode(), b.encode())


def new_nonce() -> str:
    return random.SystemRandom().getrandbits(128).to_bytes(16, "big").hex()


# -- WebSocket, the client's side (RFC 6455) ------------------------------------------------------------------
def upgrade_request(host: str) -> tuple[bytes, str]:
    """The HTTP request that opens a stream, and the Sec-WebSocket-Accept value the answer must carry."""
    key = base64.b64encode(random.getrandbits(128).to_bytes(16, "big")).decode()
    accept = base64.b64encode(hashlib.sha1(key.encode() + _WS_GUID).digest()).decode()
    lines = [f"GET {PATH} HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), accept


def check_upgrade(head: bytes, accept: str) -> None:
    """Raises StreamError unless `head` (the answer's head, up to its blank line) accepts the upgrade."""
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")
    if len(status) < 2 or status[1] != "101":
        raise StreamError(f"stream refused: {lines[0][:120]!r}")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if headers.get("sec-websocket-accept") != accept:
        raise StreamError("stream upgrade answered with a wrong Sec-WebSocket-Accept")


def _mask(data: bytes, key: bytes) -> bytes:
    n = len(data)
    if n < 4096:
        whole = key * (n // 4 + 1)
        return (int.from_bytes(data, "little") ^ int.from_bytes(whole[:n], "little")).to_bytes(n, "little")
    out = np.frombuffer(data, np.uint8).copy()
    words = n // 8
    out[:words * 8].view(np.uint64)[:] ^= np.frombuffer(key * 2, np.uint64)[0]
    tail = np.frombuffer((key * 2)[:n - words * 8], np.uint8)
    out[words * 8:] ^= tail
    return out.tobytes()


def ws_frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame (a client must mask every frame it sends)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    key = random.getrandbits(32).to_bytes(4, "little")
    return head + key + _mask(payload, key)


class FrameReader:
    """Parses the server's (unmasked) WebSocket frames from bytes as they arrive; yields whole messages.

    `feed(data)` returns the complete messages and control frames now available, as (opcode, payload)
    pairs (BINARY for an assembled message); a frame or message over `max_message` bytes, a masked
    server frame, a text message or a stray continuation is a StreamError (before anything is allocated
    for an oversized one)."""

    def __init__(self, max_message: int):
        self.max_message = max_message
        self._buf = bytearray()
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes | bytearray | memoryview) -> list[tuple[int, bytes]]:
        buf = self._buf
        buf += data
        out: list[tuple[int, bytes]] = []
        pos = 0
        while True:
            if len(buf) - pos < 2:
                break
            b0, b1 = buf[pos], buf[pos + 1]
            fin, opcode, n, at = b0 & 0x80, b0 & 0x0F, b1 & 0x7F, pos + 2
            if b1 & 0x80:
                raise StreamError("a server frame is masked")
            if b0 & 0x70:
                raise StreamError("a frame uses reserved bits (no extension was agreed)")
            if n == 126:
                if len(buf) - at < 2:
                    break
                n, at = int.from_bytes(buf[at:at + 2], "big"), at + 2
            elif n == 127:
                if len(buf) - at < 8:
                    break
                n, at = int.from_bytes(buf[at:at + 8], "big"), at + 8
            if opcode < 8 and self._size + n > self.max_message:
                raise StreamError(f"stream message over the limit of {self.max_message} bytes")
            if len(buf) - at < n:
                break
            payload = bytes(buf[at:at + n])
            pos = at + n
            if opcode >= 8:  # control frames: whole, never fragmented
                if not fin or n > 125:
                    raise StreamError("a fragmented or oversized control frame")
                out.append((opcode, payload))
                continue
            if opcode == 0x1:
                raise StreamError("a text message on a binary stream")
            if (opcode == CONTINUATION) != bool(self._parts):
                raise StreamError("a message fragment out of sequence")
            if fin and not self._parts:
                out.append((BINARY, payload))
                continue
            self._parts.append(payload)
            self._size += n
            if fin:
                out.append((BINARY, b"".join(self._parts)))
                self._parts, self._size = [], 0
        del buf[:pos]
        return out
