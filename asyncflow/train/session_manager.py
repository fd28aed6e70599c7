"""`af.train.SessionManager` and the session creators of `MonitoredSession`, as TF1.

A SessionManager makes sessions whose model is ready, from three ops: `ready_op` (the names of
the variables not yet initialised: empty when ready), `ready_for_local_init_op` (the same for the
global variables, which must be ready before `local_init_op` may run) and `local_init_op` (local
variables and tables, run by every session).

- `prepare_session` (the chief): restore the latest checkpoint of `checkpoint_dir` (or the given
  file), else run `init_op` and `init_fn`; then run `local_init_op`; RuntimeError when the model
  is still not ready.
- `recover_session`: only the restore; `(session, restored)`.
- `wait_for_session` (the other workers): poll, every `recovery_wait_secs`, until the chief has
  made the model ready; DeadlineExceededError after `max_wait_secs`.

`ChiefSessionCreator` / `WorkerSessionCreator` finalize a `Scaffold` and call `prepare_session` /
`wait_for_session` with its ops; `MonitoredSession(session_creator=...)` takes either.
"""

from __future__ import annotations

import abc
import logging
import time
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.graph import get_default_graph
from asyncflow.session import Session
from asyncflow.train.monitored_session import Scaffold

log = logging.getLogger("asyncflow.train")


def _name(op: Any) -> Any:
    return getattr(op, "name", op)


def _ready(op: Any, sess: Session) -> tuple[bool, str | None]:
    """(ready, why not): `op` lists uninitialised variables; an empty list (or no op) is ready."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e).lower():
            raise
        return False, str(e)
    value = np.asarray(value) if value is not None else None
    if value is None or value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1))
    return False, "Variables not initialized: " + names


class SessionManager:
    """`af.train.SessionManager(local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
    recovery_wait_secs=30, local_init_run_options=None, local_init_feed_dict=None)`."""

    def __init__(self, local_init_op: Any = None, ready_op: Any = None, ready_for_local_init_op: Any = None,
                 graph: Any = None, recovery_wait_secs: float = 30, local_init_run_options: Any = None,
                 local_init_feed_dict: Any = None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(f"If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        self._target: str | None = None

    def _restore_checkpoint(self, master: str, saver: Any, checkpoint_dir: str | None,
                            checkpoint_filename_with_path: str | None, wait_for_checkpoint: bool,
                            max_wait_secs: float, config: Any) -> tuple[Session, bool]:
        from asyncflow.train.checkpoint_management import get_checkpoint_state

        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        self._target = master
        sess = Session(master, graph=self._graph, config=config)
        try:
            if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
                return sess, False
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            waited = 0.0
            state = get_checkpoint_state(checkpoint_dir)
            while state is None or not state.model_checkpoint_path:
                if not wait_for_checkpoint or waited >= max_wait_secs:
                    return sess, False
                log.info("Waiting for checkpoint to be available.")
                time.sleep(self._recovery_wait_secs)
                waited += self._recovery_wait_secs
                state = get_checkpoint_state(checkpoint_dir)
            saver.restore(sess, state.model_checkpoint_path)
            saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
            log.info("restored %s", state.model_checkpoint_path)
            return sess, True
        except BaseException:
            sess.close()
            raise

    def _try_run_local_init_op(self, sess: Session) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ready, why = _ready(self._ready_for_local_init_op, sess)
        if not ready:
            return False, why
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict, options=self._local_init_run_options)
        return True, None

    def prepare_session(self, master: str, init_op: Any = None, saver: Any = None, checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None, wait_for_checkpoint: bool = False,
                        max_wait_secs: float = 7200, config: Any = None, init_feed_dict: Any = None,
                        init_fn: Any = None) -> Session:
        """A session with the model restored from the latest checkpoint, or initialised (the chief's)."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, why = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                                   f"{_name(init_op)}, init fn: {init_fn}, error: {why}")
            ok, why = _ready(self._ready_op, sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready.  Init op: {_name(init_op)}, init fn: "
                                   f"{init_fn}, local_init_op: {_name(self._local_init_op)}, error: {why}")
        except BaseException:
            sess.close()
            raise
        return sess

    def recover_session(self, master: str, saver: Any = None, checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None, wait_for_checkpoint: bool = False,
                        max_wait_secs: float = 7200, config: Any = None) -> tuple[Session, bool]:
        """(session, True) when a checkpoint was restored and made the model ready, else (session, False)."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        ok, why = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        where = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            log.info("Restoring model from %s did not make model ready for local init: %s", where, why)
            return sess, False
        ok, why = _ready(self._ready_op, sess)
        if not ok:
            log.info("Restoring model from %s did not make model ready: %s", where, why)
            return sess, False
        log.info("Restored model from %s", where)
        return sess, True

    def wait_for_session(self, master: str, config: Any = None, max_wait_secs: float = float("inf")) -> Session:
        """A session once another process (the chief) has made the model ready."""
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("inf")
        start = time.monotonic()
        while True:
            sess = Session(master, graph=self._graph, config=config)
            why_ready = None
            ok, why_local = self._try_run_local_init_op(sess)
            if ok:
                ok, why_ready = _ready(self._ready_op, sess)
                if ok:
                    return sess
            try:
                sess.close()
            except Exception:  # noqa: BLE001 - a session we give up on; its close error changes nothing
                pass
            remaining = max_wait_secs - (time.monotonic() - start)
            if remaining - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(None, None,
                                                   f"Session was not ready after waiting {int(max_wait_secs)} secs.")
            log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s", why_local, why_ready)
            time.sleep(self._recovery_wait_secs)


class SessionCreator(abc.ABC):
    """What `MonitoredSession` calls to get a session (and again to recover one)."""

    recovery_wait_secs = 0.1  # how long MonitoredSession waits between attempts after a lost task

    @abc.abstractmethod
    def create_session(self) -> Any:
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class _ScaffoldCreator(SessionCreator):
    def __init__(self, scaffold: Scaffold | None, master: str, config: Any):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._session_manager: SessionManager | None = None

    def _get_session_manager(self) -> SessionManager:
        if self._session_manager is None:
            s = self._scaffold
            self._session_manager = SessionManager(
                local_init_op=s.local_init_op, local_init_feed_dict=s.local_init_feed_dict, ready_op=s.ready_op,
                ready_for_local_init_op=s.ready_for_local_init_op, graph=get_default_graph(),
                recovery_wait_secs=self.recovery_wait_secs)
        return self._session_manager


class ChiefSessionCreator(_ScaffoldCreator):
    """Restores the latest checkpoint of `checkpoint_dir` (or `checkpoint_filename_with_path`), else initialises."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> Session:
        self._scaffold.finalize()
        s = self._scaffold
        return self._get_session_manager().prepare_session(
            self._master, saver=s.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path, config=self._config,
            init_op=s.init_op, init_feed_dict=s.init_feed_dict, init_fn=s.init_fn)


class WorkerSessionCreator(_ScaffoldCreator):
    """Waits (up to `max_wait_secs`) until the chief has initialised or restored the model."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Session:
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(self._master, config=self._config,
                                                            max_wait_secs=self._max_wait_secs)


__all__ = ["SessionManager", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator"]
