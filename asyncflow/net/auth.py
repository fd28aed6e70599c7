"""Cluster tokens: every request signed with an HMAC bound to its destination, replays refused.

With a token set (`ASYNCFLOW_TOKEN`, or `--token-file`), a request carries

    X-Asyncflow-Auth: AF2 <unix time, s> <nonce> <task> <incarnation> <body SHA-256> <HMAC-SHA256>

The HMAC (keyed with the token, which itself never travels) covers the scheme, the method, the
path with its query, the time, the nonce, the destination task and incarnation, and the body's
SHA-256. A server refuses a request (and counts it in `asyncflow.net.metrics` by cause) when:

- the header is missing, malformed or its HMAC is wrong: 401, cause "auth";
- it was signed for another task (a request captured on its way to the ps, replayed at a worker):
  401, cause "replay";
- it was signed for an earlier incarnation of this task (captured before a restart): 409 with
  this task's identity in `X-Asyncflow-Identity`, cause "replay"; our clients sign again for the
  new incarnation, once (`asyncflow.net.http`);
- its time is more than `WINDOW_S` from the server's clock, ahead or behind, whatever the nonce
  cache holds: 401, cause "replay";
- its (time, nonce) was already seen: 401, cause "replay";
- accepting it would hold more than `MAX_NONCES` nonces: 503 with `Retry-After`, cause "replay";
- its body does not match the SHA-256 it was signed with: 401, cause "auth".

Destination. A serving process is identified by its task name as the cluster spec gives it
("/job:ps/replica:0/task:0"; "/job:master" for a master alone) and its incarnation (random, new at
every start; a worker's is the one in the master's task table). The server's guard announces it
(`Destination`, as "<task> <incarnation hex>") in the `X-Asyncflow-Identity` header of `/healthz`
answers, where a client learns it before its first signed request. Each process keeps its own
nonces: binding the signature to the destination is what keeps one task's nonce cache from being
bypassed at another, or at the same task restarted with an empty cache.

Window and skew. `WINDOW_S` (30 s) is both the validity of a signature and the clock skew
tolerated between any two tasks: a request is accepted while the server's clock is within
`WINDOW_S` of its time, in either direction, and refused outside whatever the cache holds.
Clocks must agree within it (NTP does); a refusal says by how much they differ.

Nonces are kept for exactly the window, in one set per second of request time; a second's set is
dropped once that second has left the window (by time, never early, never for room). At most
`MAX_NONCES` are held (about 40 MB): past that, new signed requests are refused with 503 rather
than forgetting a nonce, so a flood (which needs the token) denies service for at most one window
and never opens a replay. 500,000 per 30 s is ~16,000 signed requests/s, far above a cluster's
steady rate.

The head alone authenticates (`verify_head`, before any of the body is read: unauthenticated
requests never cost a body read), then `Signed.check_body` checks the body against the digest the
signature covers. A server process sets the two limits explicitly (`ServerOptions.auth_window_s` and
`auth_max_nonces`, the flags `--auth-window` and `--auth-max-nonces`; tests shrink them).
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import os
import random
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from asyncflow import errors

HEADER = "X-Asyncflow-Auth"
IDENTITY_HEADER = "X-Asyncflow-Identity"  # "<task> <incarnation hex>", on /healthz answers and 409 refusals
SCHEME = "AF2"
WINDOW_S = 30.0  # validity of a signature and the clock skew tolerated, each way
MAX_NONCES = 500_000  # nonces held at most (one window's worth of signed requests)
_EMPTY_SHA256 = hashlib.sha256(b"").digest()


# -- refusals ---------------------------------------------------------------------------------------------
class AuthError(Exception):
    """A request that fails authentication: `status` is the HTTP answer, `cause` the metrics' cause."""

    status = 401
    cause = "auth"

    def __init__(self, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.headers = headers or {}  # to send with the refusal

    def op_error(self) -> errors.OpError:
        return errors.UnauthenticatedError(None, None, str(self))


class ReplayError(AuthError):
    """A validly signed request that must not run here or now: replayed, out of the window, or for another task."""

    cause = "replay"


class StaleIncarnation(ReplayError):
    """Signed for an earlier incarnation of this task; `headers` announce the current one (409)."""

    status = 409

    def __init__(self, message: str, current: Destination):
        super().__init__(message, {IDENTITY_HEADER: str(current)})

    def op_error(self) -> errors.OpError:
        return errors.AbortedError(None, None, str(self))


class NonceCacheFull(ReplayError):
    """Accepting one more request would forget a nonce early (503 until the oldest second leaves the window)."""

    status = 503

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message, {"Retry-After": str(max(1, int(retry_after_s + 0.999)))})

    def op_error(self) -> errors.OpError:
        return errors.UnavailableError(None, None, str(self))


# -- identity ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Destination:
    """A serving process: its task name and incarnation."""

    task: str
    incarnation: int

    def __str__(self) -> str:
        return f"{quote(self.task, safe='/:')} {self.incarnation:x}"

    @classmethod
    def parse(cls, text: str | None) -> Destination | None:
        """The destination an `IDENTITY_HEADER` value names; None when it is missing or malformed."""
        parts = (text or "").split(" ")
        if len(parts) != 2 or not parts[0] or not _is_hex(parts[1]):
            return None
        return cls(unquote(parts[0]), int(parts[1], 16))


UNKNOWN = Destination("?", 0)  # what a client signs for when the server announced nothing (it checks no token)


def new_incarnation() -> int:
    """A random incarnation id for a process that has none of its own (a master alone)."""
    return random.SystemRandom().getrandbits(62) | 1


def _is_hex(s: str) -> bool:
    return 0 < len(s) <= 32 and all(c in "0123456789abcdef" for c in s)


# -- signing ----------------------------------------------------------------------------------------------
def load_token(token_file: str | None = None) -> bytes | None:
    """The cluster token: the file's contents (stripped) when given, else `ASYNCFLOW_TOKEN`, else None."""
    if token_file:
        try:
            text = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as e:
            raise ValueError(f"cannot read the token file {token_file!r}: {e.strerror}") from None
        if not text:
            raise ValueError(f"the token file {token_file!r} is empty")
        return text.encode()
    env = os.environ.get("ASYNCFLOW_TOKEN", "").strip()
    return env.encode() if env else None


def body_digest(chunks: Iterable[bytes | bytearray | memoryview]) -> bytes:
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.digest()


def _mac(token: bytes, method: str, path: str, stamp: str, nonce: str, dest: str, digest_hex: str) -> str:
    # One field per line: a path holds no newline and `dest` is quoted, so no two requests share a message.
    msg = f"{SCHEME}\n{method.upper()}\n{path}\n{stamp}\n{nonce}\n{dest}\n{digest_hex}".encode()
    return hmac.new(token, msg, hashlib.sha256).hexdigest()


def sign(token: bytes, method: str, path: str, destination: Destination, digest: bytes = _EMPTY_SHA256,
         now: float | None = None) -> str:
    """The `HEADER` value for a request to `destination` (`digest`: the SHA-256 of its body; `now`: the
    signer's clock, time.time() unless given)."""
    stamp = str(int(time.time() if now is None else now))
    nonce = secrets.token_hex(12)
    dest = str(destination)
    digest_hex = digest.hex()
    return f"{SCHEME} {stamp} {nonce} {dest} {digest_hex} {_mac(token, method, path, stamp, nonce, dest, digest_hex)}"


# -- verifying ----------------------------------------------------------------------------------------------
class NonceWindow:
    """The (time, nonce) pairs of accepted requests, one set per second of request time.

    A second's set goes once every request time in it has left the window (`expire`); nothing goes
    earlier. `add` refuses a pair already held (ReplayError) and, when `cap` pairs are held, any new
    one (NonceCacheFull)."""

    def __init__(self, window_s: float, cap: int):
        self.window_s = window_s
        self.cap = cap
        self._by_second: dict[int, set[str]] = {}
        self._seconds: list[int] = []  # heap of the keys of `_by_second`
        self.size = 0

    def expire(self, now: float) -> None:
        while self._seconds and now - self._seconds[0] > self.window_s:
            self.size -= len(self._by_second.pop(heapq.heappop(self._seconds)))

    def add(self, when: int, nonce: str, now: float) -> None:
        self.expire(now)
        seen = self._by_second.get(when)
        if seen is not None and nonce in seen:
            raise ReplayError(f"replayed request (nonce {nonce} already used within the {self.window_s:g} s window)")
        if self.size >= self.cap:
            wait = self._seconds[0] + self.window_s - now
            raise NonceCacheFull(f"too many signed requests: {self.size} accepted within the {self.window_s:g} s "
                                 f"window (the most this task holds); retry in {wait:.0f} s", wait)
        if seen is None:
            seen = self._by_second[when] = set()
            heapq.heappush(self._seconds, when)
        seen.add(nonce)
        self.size += 1


@dataclass
class Signed:
    """A request whose head verified; `check_body` once its body is read."""

    digest_hex: str

    def check_body(self, digest: bytes) -> None:
        if not hmac.compare_digest(digest.hex(), self.digest_hex):
            raise AuthError("request body does not match the SHA-256 it was signed with")


class Verifier:
    """Checks signed requests to one destination with one token; remembers nonces for the window."""

    def __init__(self, token: bytes, destination: Destination, window_s: float = WINDOW_S,
                 max_nonces: int = MAX_NONCES, clock: Callable[[], float] = time.time):
        self._token = token
        self.destination = destination
        self.window_s = float(window_s)
        self.nonces = NonceWindow(self.window_s, int(max_nonces))
        self._clock = clock
        self._latest = 0.0  # the latest time seen: the clock used never goes back (a nonce dropped stays out)

    def now(self) -> float:
        self._latest = max(self._latest, self._clock())
        return self._latest

    def verify_head(self, header: str | None, method: str, path: str) -> Signed:
        """Authenticates a request from its head and records its nonce; raises an AuthError to answer with.
        The body is checked by the returned `Signed`."""
        if not header:
            raise AuthError(f"missing {HEADER} header: this server requires the cluster token")
        parts = header.split(" ")
        if len(parts) != 7 or parts[0] != SCHEME:
            raise AuthError(f"malformed {HEADER} header (expected '{SCHEME} time nonce task incarnation sha256 mac')")
        _, stamp, nonce, task, incarnation, digest_hex, mac = parts
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
            raise AuthError(f"malformed {HEADER} header: bad time {stamp[:20]!r}")
        if not (_is_hex(nonce) and _is_hex(incarnation) and len(digest_hex) == 64 and len(mac) == 64):
            raise AuthError(f"malformed {HEADER} header")
        want = _mac(self._token, method, path, stamp, nonce, f"{task} {incarnation}", digest_hex)
        if not hmac.compare_digest(want, mac):
            raise AuthError("bad request signature (wrong cluster token?)")
        now = self.now()
        self.nonces.expire(now)
        when = int(stamp)
        if abs(now - when) > self.window_s:
            ahead = when - now
            raise ReplayError(f"request time is {abs(ahead):.0f} s {'ahead of' if ahead > 0 else 'behind'} this "
                              f"server's clock, outside the accepted window of +-{self.window_s:g} s (clock skew "
                              f"or a replay)")
        if unquote(task) != self.destination.task:
            raise ReplayError(f"request signed for {unquote(task)}, not for this task ({self.destination.task})")
        if int(incarnation, 16) != self.destination.incarnation:
            raise StaleIncarnation(f"request signed for incarnation {incarnation} of {self.destination.task}, which "
                                   f"has restarted (now incarnation {self.destination.incarnation:x})",
                                   self.destination)
        self.nonces.add(when, nonce, now)
        return Signed(digest_hex)

    def verify(self, header: str | None, method: str, path: str, digest: bytes) -> None:
        """`verify_head` and the body's check in one call."""
        self.verify_head(header, method, path).check_body(digest)


__all__ = ["HEADER", "IDENTITY_HEADER", "WINDOW_S", "MAX_NONCES", "AuthError", "ReplayError", "StaleIncarnation",
           "NonceCacheFull", "Destination", "NonceWindow", "Signed", "Verifier", "load_token", "sign", "body_digest",
           "new_incarnation"]
