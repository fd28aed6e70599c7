"""`af.train.Supervisor`, as TF1's: a session that is initialised or restored, with background services.

The chief (`is_chief=True`) restores the latest checkpoint of `logdir` or runs `init_op` and
`init_fn`; other tasks wait (polling every `recovery_wait_secs`) until the chief has made the
model ready. Both then run `local_init_op` and start the graph's queue runners. With a `logdir`,
the chief also starts the standard services, each a `LooperThread` on the supervisor's
Coordinator, as TF1:

- the checkpoint thread saves `logdir/model.ckpt-<step>` at once and every `save_model_secs`;
- the summary thread runs `summary_op` every `save_summaries_secs` and writes it to
  `summary_writer` (an `af.summary.FileWriter(logdir)`, or None when af.summary cannot write event
  files), and a step-counter thread writes `global_step/sec`.

`stop()` (or leaving `managed_session`) asks every thread to stop and joins them within
`stop_grace_secs`; it saves nothing (TF1: call `sv.saver.save` for a final checkpoint). An
exception in the `managed_session` block or in a service thread is re-raised when the block ends,
after the threads stopped and the session closed; OutOfRangeError is a normal end. Defaults follow
TF1 (`USE_DEFAULT` fills an op in from its graph collection, or makes one and adds it there);
`None` switches a part off. The graph is finalised.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import GraphKeys, get_default_graph
from asyncflow.ops.control import group
from asyncflow.train.coordinator import Coordinator, LooperThread
from asyncflow.train.hooks import _scalar_summary, _write
from asyncflow.train.session_manager import SessionManager

log = logging.getLogger("asyncflow.train")

_SUMMARY_OP = GraphKeys.SUMMARY_OP


def _first_in_collection(graph: Any, key: str) -> Any:
    found = graph.get_collection(key)
    if len(found) > 1:
        log.info("Found %d %s operations. Returning the first one.", len(found), key)
    return found[0] if found else None


def _session_log(status: str, checkpoint_path: str = "") -> Any:
    """TensorBoard's SessionLog proto (START/STOP/CHECKPOINT), or None without tensorboard."""
    try:
        from tensorboard.compat.proto.event_pb2 import SessionLog
    except ImportError:
        return None
    return SessionLog(status=getattr(SessionLog, status), checkpoint_path=checkpoint_path)


class Supervisor:
    """`af.train.Supervisor(graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT, is_chief=True,
    init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
    saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120, save_model_secs=600,
    recovery_wait_secs=30, stop_grace_secs=120, checkpoint_basename="model.ckpt", session_manager=None,
    summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None)`."""

    USE_DEFAULT = 0

    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT, ready_for_local_init_op: Any = USE_DEFAULT,
                 is_chief: bool = True, init_op: Any = USE_DEFAULT, init_feed_dict: Any = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None, summary_op: Any = USE_DEFAULT,
                 saver: Any = USE_DEFAULT, global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30, stop_grace_secs: float = 120,
                 checkpoint_basename: str = "model.ckpt", session_manager: SessionManager | None = None,
                 summary_writer: Any = USE_DEFAULT, init_fn: Any = None, local_init_run_options: Any = None):
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._init_ready_op(graph, ready_op, ready_for_local_init_op)
            self._init_init_op(graph, init_op, init_feed_dict)
            self._init_local_init_op(graph, local_init_op)
            self._init_saver(graph, saver)
            self._init_summary_op(graph, summary_op)
            self._init_global_step(graph, global_step)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._logdir: str | None = None
        self._save_summaries_secs: float | None = None
        self._save_model_secs: float | None = None
        self._save_path: str | None = None
        self._summary_writer: Any = None
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = self._default_summary_writer(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs, local_init_run_options=local_init_run_options)
        self._verify_setup()
        graph.finalize()

    # -- defaults, as TF1: the graph's collection first, else a new op added to it -----------------------------
    def _init_ready_op(self, graph: Any, ready_op: Any, ready_for_local_init_op: Any) -> None:
        from asyncflow.variables import report_uninitialized_variables

        if ready_op is Supervisor.USE_DEFAULT:
            ready_op = _first_in_collection(graph, GraphKeys.READY_OP)
            if ready_op is None:
                ready_op = report_uninitialized_variables()
                graph.add_to_collection(GraphKeys.READY_OP, ready_op)
        self._ready_op = ready_op
        if ready_for_local_init_op is Supervisor.USE_DEFAULT:
            ready_for_local_init_op = _first_in_collection(graph, GraphKeys.READY_FOR_LOCAL_INIT_OP)
        self._ready_for_local_init_op = ready_for_local_init_op

    def _init_init_op(self, graph: Any, init_op: Any, init_feed_dict: Any) -> None:
        from asyncflow.variables import global_variables_initializer

        if init_op is Supervisor.USE_DEFAULT:
            init_op = _first_in_collection(graph, GraphKeys.INIT_OP)
            if init_op is None:
                init_op = global_variables_initializer()
                graph.add_to_collection(GraphKeys.INIT_OP, init_op)
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict

    def _init_local_init_op(self, graph: Any, local_init_op: Any) -> None:
        from asyncflow.variables import local_variables_initializer

        if local_init_op is Supervisor.USE_DEFAULT:
            local_init_op = _first_in_collection(graph, GraphKeys.LOCAL_INIT_OP)
            if local_init_op is None:
                local_init_op = group(local_variables_initializer(),
                                      *graph.get_collection(GraphKeys.TABLE_INITIALIZERS))
                graph.add_to_collection(GraphKeys.LOCAL_INIT_OP, local_init_op)
        self._local_init_op = local_init_op

    def _init_saver(self, graph: Any, saver: Any) -> None:
        from asyncflow.train.saver import Saver
        from asyncflow.variables import global_variables

        if saver is Supervisor.USE_DEFAULT:
            saver = _first_in_collection(graph, GraphKeys.SAVERS)
            if saver is None and global_variables():
                saver = Saver()
                graph.add_to_collection(GraphKeys.SAVERS, saver)
        self._saver = saver

    def _init_summary_op(self, graph: Any, summary_op: Any) -> None:
        if summary_op is Supervisor.USE_DEFAULT:
            summary_op = _first_in_collection(graph, _SUMMARY_OP)
            if summary_op is None:
                from asyncflow import summary

                merge_all = getattr(summary, "merge_all", None)
                summary_op = merge_all() if merge_all is not None else None
                if summary_op is not None:
                    graph.add_to_collection(_SUMMARY_OP, summary_op)
        self._summary_op = summary_op

    def _init_global_step(self, graph: Any, global_step: Any) -> None:
        if global_step is Supervisor.USE_DEFAULT:
            global_step = _first_in_collection(graph, GraphKeys.GLOBAL_STEP)
            if global_step is None:
                global_step = self._default_global_step_tensor(graph)
                if global_step is not None:
                    graph.add_to_collection(GraphKeys.GLOBAL_STEP, global_step)
        self._global_step = global_step

    @staticmethod
    def _default_global_step_tensor(graph: Any) -> Any:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
        if step.dtype.base_dtype in (dtypes.int32, dtypes.int64):
            return step
        log.warning("Found 'global_step' is not an int type: %s", step.dtype)
        return None

    @staticmethod
    def _default_summary_writer(logdir: str) -> Any:
        """af.summary.FileWriter(logdir), or None when af.summary has none or cannot write (no tensorboard)."""
        from asyncflow import summary

        writer_class = getattr(summary, "FileWriter", None)
        if writer_class is None:
            return None
        try:
            return writer_class(logdir)
        except Exception as e:  # noqa: BLE001 - training goes on without event files
            log.warning("Supervisor writes no summaries to %s: %s: %s", logdir, type(e).__name__, e)
            return None

    def _verify_setup(self) -> None:
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in ("Variable", "VariableV2") and not op.device:
                raise ValueError(f"When using replicas, all Variables must have their device set: {op}")

    # -- properties -------------------------------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # -- sessions ---------------------------------------------------------------------------------------------
    def _write_graph(self) -> None:
        from asyncflow.train.meta_graph_export import write_graph

        if self._logdir:
            write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer is not None and not self._graph_added_to_summary:
            _write(self._summary_writer, "add_graph", self._graph)
            self._graph_added_to_summary = True

    def _global_step_value(self, sess: Any) -> int:
        return int(sess.run(self._global_step))

    def start_standard_services(self, sess: Any) -> list[LooperThread] | None:
        """Starts the checkpoint, summary and step-counter threads (chief only; needs a logdir)."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief supervisors "
                               "can write events.")
        if not self._logdir:
            log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer is not None:
            _write(self._summary_writer, "add_session_log", _session_log("START"), self._global_step_value(sess))
        threads: list[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def prepare_or_wait_for_session(self, master: str = "", config: Any = None, wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200, start_standard_services: bool = True) -> Any:
        """A session with the model ready: restored or initialised (chief), or waited for (the others);
        then the standard services (chief) and the queue runners."""
        self._coord.clear_stop()
        if self._summary_writer is not None:
            _write(self._summary_writer, "reopen")
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess: Any, queue_runners: Any = None) -> list[Any]:
        """Starts threads for the queue runners (the graph's QUEUE_RUNNERS by default) on the coordinator."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads: list[Any] = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs: float | None, target: Any, args: Any = None,
             kwargs: Any = None) -> LooperThread:
        """Starts a thread calling `target(*args, **kwargs)` every `timer_interval_secs` (or back to back)
        until a stop; `stop()` joins it."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args=args, kwargs=kwargs)

    def stop(self, threads: Any = None, close_summary_writer: bool = True, ignore_live_threads: bool = False) -> None:
        """Stops the services and the coordinator's threads (not the session); re-raises a reported exception."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer is not None:
                _write(self._summary_writer, "add_session_log", _session_log("STOP"))
                _write(self._summary_writer, "close")
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: int | None = None) -> None:
        """Writes a computed summary (at the current global step unless given)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = self._global_step_value(sess)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: Any = None, start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Any]:
        """`with sv.managed_session(target) as sess:` the prepared session; on leaving: stop the threads,
        close the session, re-raise what the block or a thread raised (OutOfRangeError ends quietly)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - reported through the coordinator, re-raised by stop()
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # noqa: BLE001 - as TF1: a close error must not mask the block's
                        pass

    # TF1's CamelCase aliases
    PrepareSession = prepare_or_wait_for_session  # noqa: N815
    StartQueueRunners = start_queue_runners  # noqa: N815
    StartStandardServices = start_standard_services  # noqa: N815
    Stop = stop  # noqa: N815
    RequestStop = request_stop  # noqa: N815
    Loop = loop  # noqa: N815
    ShouldStop = should_stop  # noqa: N815
    StopOnException = stop_on_exception  # noqa: N815
    WaitForStop = wait_for_stop  # noqa: N815
    SummaryComputed = summary_computed  # noqa: N815


class _SummaryThread(LooperThread):
    """Runs the summary op every save_summaries_secs and writes its value."""

    def __init__(self, sv: Supervisor, sess: Any):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer is not None:
            log.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes `<global step op>/sec` every save_summaries_secs."""

    def __init__(self, sv: Supervisor, sess: Any):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self._last_time, self._last_step = 0.0, 0
        self.rates: list[float] = []

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = int(self._sess.run(self._sv.global_step))

    def run_loop(self) -> None:
        step = int(self._sess.run(self._sv.global_step))
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0 else float("inf")
        self._last_time, self._last_step = now, step
        self.rates.append(rate)
        _write(self._sv.summary_writer, "add_summary", _scalar_summary(self._tag, rate), step)
        log.info("%s: %g", self._tag, rate)


class _CheckpointThread(LooperThread):
    """Saves a checkpoint at once and then every save_model_secs."""

    def __init__(self, sv: Supervisor, sess: Any):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer is not None and self._sv.global_step is not None:
            _write(self._sv.summary_writer, "add_session_log", _session_log("CHECKPOINT", self._sv.save_path),
                   int(self._sess.run(self._sv.global_step)))


__all__ = ["Supervisor"]
