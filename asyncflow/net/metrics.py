"""Process-wide counters of the net layer, for `/metrics`: refusals by cause, open connections.

Any module of `asyncflow.net` counts through this one registry (one per process: a process serves
one task, and in-process test servers share it, which only makes their counts add up):

    from asyncflow.net import metrics
    metrics.refused("auth")            # a request refused: 401 for a bad/missing/replayed signature ...
    metrics.connection_opened(peer)    # a TCP connection accepted from `peer` (its address, no port)
    metrics.connection_closed(peer)
    metrics.snapshot()                 # {"refused": {cause: n}, "connections_open": n, ...}

Causes (`CAUSES`): "auth" (no/bad signature), "replay" (a nonce or a time outside the window),
"size" (a body or a decoded tensor over its limit, compressed bodies), "deadline" (a head or body
not sent in time; idle keep-alive connections closed are not refusals and are not counted),
"malformed" (undecodable input, bad HTTP), "connections" (a connection closed by a peer's cap).
An unknown cause is a bug: ValueError. Counting is a dict update on the event loop's thread; a
lock keeps it right from other threads too (graph threads may count).
"""

from __future__ import annotations

import os
import threading

CAUSES = ("auth", "size", "deadline", "replay", "malformed", "connections")

_lock = threading.Lock()
_refused: dict[str, int] = dict.fromkeys(CAUSES, 0)
_open_by_peer: dict[str, int] = {}
_opened_total = 0


def refused(cause: str, n: int = 1) -> None:
    """Counts `n` requests (or connections) refused for `cause` (one of `CAUSES`)."""
    if cause not in _refused:
        raise ValueError(f"metrics.refused: unknown cause {cause!r} (expected one of {', '.join(CAUSES)})")
    with _lock:
        _refused[cause] += n


def connection_opened(peer: str) -> int:
    """Counts a connection from `peer`; returns how many that peer now holds open (this one included)."""
    global _opened_total
    with _lock:
        _opened_total += 1
        count = _open_by_peer.get(peer, 0) + 1
        _open_by_peer[peer] = count
        return count


def connection_closed(peer: str) -> None:
    """Counts a connection from `peer` closed (each `connection_opened` gets exactly one)."""
    with _lock:
        count = _open_by_peer.get(peer, 0) - 1
        if count > 0:
            _open_by_peer[peer] = count
        else:
            _open_by_peer.pop(peer, None)


def open_connections(peer: str | None = None) -> int:
    """Connections open now: from `peer`, or from everyone."""
    with _lock:
        return _open_by_peer.get(peer, 0) if peer is not None else sum(_open_by_peer.values())


def rss_bytes() -> int:
    """This process's resident set size, bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def snapshot() -> dict:
    """A copy of every counter: `refused` (cause -> n), `connections_open`, `connections_total`, `rss_bytes`."""
    with _lock:
        out = {"refused": dict(_refused), "connections_open": sum(_open_by_peer.values()),
               "connections_total": _opened_total}
    out["rss_bytes"] = rss_bytes()
    return out


def prometheus_lines() -> list[str]:
    """The registry in the Prometheus text format, for `/metrics`."""
    snap = snapshot()
    lines = [f'asyncflow_requests_refused_total{{cause="{c}"}} {n}' for c, n in snap["refused"].items()]
    lines.append(f"asyncflow_connections_open {snap['connections_open']}")
    lines.append(f"asyncflow_connections_total {snap['connections_total']}")
    lines.append(f"asyncflow_process_resident_memory_bytes {snap['rss_bytes']}")
    return lines


__all__ = ["CAUSES", "refused", "connection_opened", "connection_closed", "open_connections", "rss_bytes",
           "snapshot", "prometheus_lines"]
