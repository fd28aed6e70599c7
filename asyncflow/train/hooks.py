"""Session-run hooks, as tf.train: `SessionRunHook` and the stock ones the training loop uses.

A hook sees the life of a MonitoredSession: `begin()` (graph still open), `after_create_session`,
then around every `run`: `before_run(run_context) -> SessionRunArgs | None` (extra fetches and
feeds), `after_run(run_context, run_values)`; and `end(session)`. `run_context.request_stop()`
ends the loop.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from typing import Any

import numpy as np

from asyncflow.graph import get_default_graph

log = logging.getLogger("asyncflow.train")


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a `run`: fetches (any structure), feeds and RunOptions."""

    def __new__(cls, fetches: Any, feed_dict: Any = None, options: Any = None) -> SessionRunArgs:
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """What a hook gets back: the values of its own fetches."""


class SessionRunContext:
    """The `run` call a hook is looking at: its args, the session, and a way to stop the loop."""

    def __init__(self, original_args: SessionRunArgs, session: Any):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    original_args = property(lambda self: self._original_args)
    session = property(lambda self: self._session)
    stop_requested = property(lambda self: self._stop_requested)

    def request_stop(self) -> None:
        self._stop_requested = True


class SessionRunHook:
    """Base class: every method is a no-op."""

    def begin(self) -> None:
        pass

    def after_create_session(self, session: Any, coord: Any) -> None:
        pass

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Any) -> None:
        pass


def _global_step_tensor() -> Any:
    from asyncflow.train.training_util import get_global_step

    step = get_global_step()
    if step is None:
        raise RuntimeError("Global step should be created to use this hook (af.train.get_or_create_global_step()).")
    return step


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one of them), as TF's."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Records a trigger at `step`; (seconds, steps) since the last one, or (None, None) at the first."""
        now = time.time()
        elapsed = (None, None) if self._last_triggered_time is None else (
            now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


def _summary_writer_for(output_dir: str | None) -> Any:
    """af.summary.FileWriterCache's writer for `output_dir`, or None when af.summary cannot write one."""
    if not output_dir:
        return None
    try:
        from asyncflow import summary

        cache = getattr(summary, "FileWriterCache", None)
        return cache.get(output_dir) if cache is not None else None
    except Exception as e:  # noqa: BLE001 - e.g. tensorboard not installed: the hook works without events
        log.warning("no summary writer for %s (%s: %s); summaries are not written", output_dir, type(e).__name__, e)
        return None


def _scalar_summary(tag: str, value: float) -> Any:
    try:
        from tensorboard.compat.proto.summary_pb2 import Summary
    except ImportError:
        return None
    return Summary(value=[Summary.Value(tag=tag, simple_value=value)])


def _write(writer: Any, method: str, *args: Any) -> None:
    """Calls a summary writer method when the writer has it: summaries are a side job, never fatal."""
    fn = getattr(writer, method, None) if writer is not None else None
    if fn is None or any(a is None for a in args[:1]):
        return
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - a failed event write must not stop training
        log.warning("summary writer %s failed: %s: %s", method, type(e).__name__, e)


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or `num_steps` past where it began)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("num_steps must be non-negative")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._step = _global_step_tensor()

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._step)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results) + 1  # the step this run has just taken, if it took one
        if step >= self._last_step:
            # The value was read before the run, and other workers move it too: read it again (TF1).
            if int(run_context.session.run(self._step)) >= self._last_step:
                run_context.request_stop()


class _Timer:
    """Triggers every `every_secs` seconds or every `every_steps` steps."""

    def __init__(self, every_secs: float | None, every_steps: int | None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_secs and every_steps must be given")
        self._secs, self._steps = every_secs, every_steps
        self._last_time: float | None = None
        self._last_step: int | None = None

    def should_trigger(self, step: int) -> bool:
        if self._last_time is None:
            return True
        if self._steps is not None:
            return step >= self._last_step + self._steps
        return time.monotonic() >= self._last_time + self._secs

    def update(self, step: int) -> None:
        self._last_time, self._last_step = time.monotonic(), step


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint after the session is created, every `save_secs`/`save_steps`, and at the end."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None, save_steps: int | None = None,
                 saver: Any = None, checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: Any = None):
        self._dir = checkpoint_dir
        self._timer = _Timer(save_secs, save_steps)
        self._saver = saver
        self._scaffold = scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._listeners = list(listeners or [])

    def begin(self) -> None:
        self._step = _global_step_tensor()
        for listener in self._listeners:
            listener.begin()

    def _get_saver(self) -> Any:
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None and self._scaffold.saver is not None:
            return self._scaffold.saver
        from asyncflow.train.saver import Saver

        savers = get_default_graph().get_collection("savers")
        if not savers:
            raise RuntimeError("No items in collection 'savers'; pass a saver or a scaffold to CheckpointSaverHook")
        return savers[0] if isinstance(savers[0], Saver) else savers[0]

    def after_create_session(self, session: Any, coord: Any) -> None:
        os.makedirs(self._dir, exist_ok=True)
        step = int(session.run(self._step))
        self._save(session, step)
        self._timer.update(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results) + 1
        if self._timer.should_trigger(step):
            self._timer.update(step)
            # The step value read before the run may be stale with other writers: read it again.
            if self._save(run_context.session, int(run_context.session.run(self._step))):
                run_context.request_stop()  # a listener's after_save asked for it (TF1)

    def end(self, session: Any) -> None:
        step = int(session.run(self._step))
        if step != self._timer._last_step:
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session: Any, step: int) -> bool:
        """Saves; True when a listener's after_save asks to stop training."""
        for listener in self._listeners:
            listener.before_save(session, step)
        prefix = self._get_saver().save(session, self._path, global_step=step)
        log.info("saved checkpoint %s", prefix)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                log.info("A CheckpointSaverListener requested that training be stopped. listener: %s", listener)
                stop = True
        return stop


class LoggingTensorHook(SessionRunHook):
    """Logs `tensors` (a list of tensors or names, or a dict tag -> tensor, logged in sorted tag order)
    every `every_n_iter` runs or `every_n_secs` seconds, and/or once at the end (`at_end`), as TF1:
    "loss = 0.25, step = 100 (0.412 sec)" at INFO on the `asyncflow.train` logger, or `formatter(values)`."""

    def __init__(self, tensors: Any, every_n_iter: int | None = None, every_n_secs: float | None = None,
                 at_end: bool = False, formatter: Any = None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tags = sorted(tensors.keys())
            self._tensors = dict(tensors)
        else:
            self._tags = [t if isinstance(t, str) else t.name for t in tensors]
            self._tensors = {tag: t for tag, t in zip(self._tags, tensors)}
        self._timer = None if only_at_end else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._at_end = at_end
        self._formatter = formatter
        self.logged: list[dict[str, Any]] = []  # what was logged, for programs that want it as data

    def begin(self) -> None:
        if self._timer is not None:
            self._timer.reset()
        self._iter = 0
        graph = get_default_graph()
        # A name means that tensor ("loss" is "loss:0"), looked up once in the graph being run (TF1).
        self._current = {tag: graph.as_graph_element(t if ":" in t else t + ":0") if isinstance(t, str) else t
                         for tag, t in self._tensors.items()}

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._should = self._timer is not None and self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._current) if self._should else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should:
            self._log(run_values.results)
        self._iter += 1

    def end(self, session: Any) -> None:
        if self._at_end:
            self._log(session.run(self._current))

    def _log(self, values: dict[str, Any]) -> None:
        elapsed = self._timer.update_last_triggered_step(self._iter)[0] if self._timer is not None else None
        self.logged.append(values)
        if self._formatter is not None:
            log.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            text = ", ".join(f"{tag} = {values[tag]}" for tag in self._tags)
        if elapsed is not None:
            log.info("%s (%.3f sec)", text, elapsed)
        else:
            log.info("%s", text)


class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or, with `fail_on_nan_loss=False`, stops the loop) on a NaN loss."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True):
        self._loss = loss_tensor
        self._fail = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results):
            if self._fail:
                log.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            log.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class StepCounterHook(SessionRunHook):
    """Measures global steps per second every N steps (or seconds): kept in `.steps_per_sec`, logged as
    "global_step/sec: 123.4", and written as that scalar summary when given `output_dir` or
    `summary_writer` (and af.summary can write event files)."""

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None, output_dir: Any = None,
                 summary_writer: Any = None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._output_dir = output_dir
        self._summary_writer = summary_writer
        self._last_global_step: int | None = None
        self._warned = 0
        self.steps_per_sec: list[float] = []

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer_for(self._output_dir)
        self._step = _global_step_tensor()
        self._tag = f"{self._step.op.name}/sec"

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._step))  # other workers move it too: read it again (TF1)
            if self._timer.should_trigger_for_step(step):
                elapsed_secs, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_secs is not None:
                    self._record(elapsed_steps / max(elapsed_secs, 1e-9), step)
        if stale == self._last_global_step and self._warned < 5:  # TF1 logs it the first 5 times
            self._warned += 1
            log.warning("It seems that global step (tf.train.get_global_step) has not been increased. Current "
                        "value (could be stable): %s vs previous value: %s. You could increase the global step by "
                        "passing tf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize.",
                        stale, self._last_global_step)
        self._last_global_step = stale

    def _record(self, rate: float, step: int) -> None:
        self.steps_per_sec.append(rate)
        log.info("%s: %g", self._tag, rate)
        if self._summary_writer is not None:
            _write(self._summary_writer, "add_summary", _scalar_summary(self._tag, rate), step)


__all__ = [
    "SecondOrStepTimer", "SessionRunHook", "SessionRunArgs", "SessionRunValues", "SessionRunContext", "StopAtStepHook",
    "CheckpointSaverHook", "LoggingTensorHook", "NanTensorHook", "NanLossDuringTrainingError", "StepCounterHook",
]
