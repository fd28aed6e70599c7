"""The process's compute threads: the offload pool's workers and the BLAS library's threads.

Two kinds of threads compute in an asyncflow process. The executor sends a pure kernel whose
inputs are large (`executor.OFFLOAD_BYTES`) to a worker of the offload pool, so the event loop
keeps scheduling while numpy works without the GIL; and the BLAS library under numpy fans each
matrix product out to threads of its own. Left alone the two multiply: N pool workers each in a
GEMM with N BLAS threads is N*N busy threads on N cores, and OpenBLAS's spinning threads then make
a step several times slower on a busy machine. This module owns both numbers and the rule that
keeps their product within the cores.

The policy (`ThreadSettings`, computed by `settings()`):

- cores: the CPUs this process may run on (`os.sched_getaffinity`), else `os.cpu_count()`.
- BLAS threads, the first that applies:
  1. `ConfigProto(intra_op_parallelism_threads=n)` with n > 0, given to an in-process `Session`
     (`configure`, called when the session is made). Process-wide and the latest such session
     wins (TF1 sizes its one intra-op pool from the first session; a later, explicit request is
     what a user in a notebook means). n <= 0 is TF1's "the default" and changes nothing.
  2. the user's environment: OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else MKL_NUM_THREADS,
     which BLAS itself read when it loaded; asyncflow leaves the library as it is.
  3. the cores: TF1's default for 0, and OpenBLAS's own.
- offload-pool workers: max(1, cores // BLAS threads), so workers x BLAS threads <= cores. With
  the default (BLAS threads = cores) that is one worker, whose GEMMs use every core; with one BLAS
  thread it is one worker per core. The event loop's thread also runs kernels (those below the
  offload threshold: small, short BLAS calls) and is not counted.

Changing the BLAS count replaces the pool on its next use (`offload_pool`); the old pool finishes
the kernels it holds. `threadpoolctl` (the maintained library for this, from the scikit-learn
developers) is imported only when a count is set explicitly, so a plain `import asyncflow` does
not load it. `restore_defaults` puts the BLAS libraries and the pool back as they were (tests).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

__all__ = ["ThreadSettings", "available_cores", "env_blas_threads", "pool_workers_for", "settings", "configure",
           "offload_pool", "restore_defaults", "BLAS_ENV_VARS"]

BLAS_ENV_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ThreadSettings:
    """The process's compute threads as the policy sets them (see the module docstring)."""

    cores: int
    blas_threads: int
    blas_source: str  # "config" (intra_op_parallelism_threads), "env" (the user's variable) or "default"
    pool_workers: int


_lock = threading.Lock()
_configured: int | None = None  # BLAS threads asked for by a session's config; None: not asked
_limiters: list[Any] = []  # threadpoolctl limiters, in order applied; each can restore what it found
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0


def available_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def env_blas_threads() -> int | None:
    """The BLAS thread count the user's environment sets (the first positive integer among
    BLAS_ENV_VARS), or None."""
    for name in BLAS_ENV_VARS:
        raw = os.environ.get(name, "").strip().split(",")[0]  # OMP_NUM_THREADS may list nested levels
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
    return None


def pool_workers_for(cores: int, blas_threads: int) -> int:
    """Offload-pool workers for `blas_threads` BLAS threads on `cores` cores: workers x BLAS <= cores."""
    return max(1, cores // max(1, blas_threads))


def settings() -> ThreadSettings:
    """The current policy's numbers (what `offload_pool` sizes a new pool with)."""
    cores = available_cores()
    if _configured is not None:
        blas, source = _configured, "config"
    elif (env := env_blas_threads()) is not None:
        blas, source = env, "env"
    else:
        blas, source = cores, "default"
    return ThreadSettings(cores, blas, source, pool_workers_for(cores, blas))


def configure(intra_op_parallelism_threads: int) -> ThreadSettings:
    """Apply a session config's `intra_op_parallelism_threads`: n > 0 sets every loaded BLAS
    library to n threads and resizes the offload pool to match; n <= 0 (TF1's default) changes nothing."""
    global _configured
    n = int(intra_op_parallelism_threads)
    if n > 0:
        from threadpoolctl import ThreadpoolController

        with _lock:
            if n != _configured:
                # A fresh controller each time: it sees BLAS libraries loaded since (scipy's own OpenBLAS).
                _limiters.append(ThreadpoolController().limit(limits=n, user_api="blas"))
                _configured = n
    return settings()


def offload_pool() -> ThreadPoolExecutor:
    """The pool large pure kernels run in, sized by the policy; replaced when the policy's size changes."""
    global _pool, _pool_workers
    workers = settings().pool_workers
    pool = _pool
    if pool is not None and _pool_workers == workers:
        return pool
    with _lock:
        if _pool is None or _pool_workers != workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="asyncflow-kernel")
            _pool_workers = workers
            if old is not None:
                old.shutdown(wait=False)  # its queued kernels still run; new ones go to the new pool
        return _pool


def restore_defaults() -> None:
    """Undo every `configure`: BLAS libraries back to their counts before the first, the pool
    resized on its next use."""
    global _configured
    with _lock:
        while _limiters:
            _limiters.pop().restore_original_limits()
        _configured = None
