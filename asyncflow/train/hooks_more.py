"""More of TF1's session-run hooks and training helpers (the stock ones live in hooks.py):

- `CheckpointSaverListener`: told before and after each save of a `CheckpointSaverHook`.
- `FinalOpsHook` (ops run once at `end`), `FeedFnHook` (feeds from a function per step),
  `GlobalStepWaiterHook` (a worker waits until the global step reaches N before training).
- `ProfilerHook`: every N steps or seconds, traces one step (`RunOptions(trace_level=FULL_TRACE)`)
  and writes `timeline-<step>.json`, a Chrome trace from `asyncflow.python.client.timeline`, into
  `output_dir` (and the RunMetadata to its event file when af.summary can write one).
- `basic_train_loop`, `checkpoints_iterator`.

The summary writer is optional everywhere: when af.summary (or TensorBoard's protos) cannot write
an event file, hooks still do their main job and write no summary.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from asyncflow import errors
from asyncflow.train.hooks import (
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    _global_step_tensor,
    _summary_writer_for,
)

log = logging.getLogger("asyncflow.train")


class CheckpointSaverListener:
    """Base class for what `CheckpointSaverHook(listeners=[...])` tells around each save; every method
    is a no-op. `after_save` may return True to ask the training loop to stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> Any:
        pass

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` once when the session ends; their values are in `final_ops_values`."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: Any = None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values: Any = None

    @property
    def final_ops_values(self) -> Any:
        return self._final_ops_values

    def end(self, session: Any) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration):
            log.warning("An OutOfRangeError or StopIteration exception is raised by the code in FinalOpsHook: the "
                        "final ops read from an exhausted input source; they should read variables only.")
            raise


class FeedFnHook(SessionRunHook):
    """Feeds `feed_fn()` (a dict) into every step."""

    def __init__(self, feed_fn: Callable[[], dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Holds the first step until the global step reaches `wait_until_step` (workers starting late, as
    TF1's estimator staggering)."""

    _POLL_SECS = 0.5

    def __init__(self, wait_until_step: int):
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._step = _global_step_tensor()

    def before_run(self, run_context: SessionRunContext) -> None:
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        log.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged = 0
        while True:
            current = int(run_context.session.run(self._step))
            if current >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current - last_logged > 1000:
                log.info("Waiting for global step %d before starting training. Current step is %d.",
                         self._wait_until_step, current)
                last_logged = current
            time.sleep(self._POLL_SECS)


def _chrome_trace(step_stats: Any, show_dataflow: bool, show_memory: bool) -> str | None:
    from asyncflow.python.client import timeline

    make = getattr(timeline, "Timeline", None)
    if make is None:
        return None
    return make(step_stats).generate_chrome_trace_format(show_dataflow=show_dataflow, show_memory=show_memory)


class ProfilerHook(SessionRunHook):
    """Every `save_steps` steps (or `save_secs` seconds) traces one step and writes
    `output_dir/timeline-<global step>.json`, a Chrome trace (chrome://tracing, Perfetto)."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir: str = "",
                 show_dataflow: bool = True, show_memory: bool = False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._output_dir = output_dir
        self._show_dataflow, self._show_memory = show_dataflow, show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._file_writer: Any = None
        self.saved: list[str] = []  # the trace files written, for programs that want them

    def begin(self) -> None:
        self._next_step: int | None = None
        self._step = _global_step_tensor()
        self._file_writer = _summary_writer_for(self._output_dir)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        from asyncflow.session import RunOptions

        self._request = self._next_step is not None and self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request else None
        return SessionRunArgs({"global_step": self._step}, options=options)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale)
        step = stale + 1
        if self._request:
            step = int(run_context.session.run(self._step))
            self._timer.update_last_triggered_step(step)
            self._save(step, run_values.run_metadata)
        self._next_step = step + 1

    def _save(self, step: int, run_metadata: Any) -> None:
        path = self._output_file.format(step)
        trace = _chrome_trace(run_metadata.step_stats, self._show_dataflow, self._show_memory)
        if trace is None:
            log.warning("asyncflow.python.client.timeline has no Timeline: no trace written for step %d", step)
            return
        log.info("Saving timeline for %d into '%s'.", step, path)
        if self._output_dir:
            os.makedirs(self._output_dir, exist_ok=True)
        with open(path, "w") as f:
            f.write(trace)
        self.saved.append(path)
        if self._file_writer is not None and hasattr(self._file_writer, "add_run_metadata"):
            self._file_writer.add_run_metadata(run_metadata, f"step_{step}")


def basic_train_loop(supervisor: Any, train_step_fn: Callable[..., Any], args: Any = None, kwargs: Any = None,
                     master: str = "") -> None:
    """Calls `train_step_fn(session, *args, **kwargs)` in a `supervisor.managed_session(master)` until it
    says stop (TF1's `tf.train.basic_train_loop`)."""
    with supervisor.managed_session(master) as sess:
        while not supervisor.should_stop():
            train_step_fn(sess, *(args or ()), **(kwargs or {}))


def checkpoints_iterator(checkpoint_dir: str, min_interval_secs: float = 0, timeout: float | None = None,
                         timeout_fn: Callable[[], bool] | None = None) -> Iterator[str]:
    """Yields each new checkpoint of `checkpoint_dir` as it appears, at most one per `min_interval_secs`;
    ends when no new one appears within `timeout` seconds (and `timeout_fn()`, if given, says so)."""
    from asyncflow.train.checkpoint_management import latest_checkpoint

    last = None
    while True:
        path = _wait_for_new_checkpoint(checkpoint_dir, last, timeout, latest_checkpoint)
        if path is None:
            if timeout_fn is None or timeout_fn():
                log.info("Timed-out waiting for a checkpoint.")
                return
            continue  # timeout_fn says keep waiting
        start = time.time()
        last = path
        yield path
        remaining = start + min_interval_secs - time.time()
        if remaining > 0:
            time.sleep(remaining)


def _wait_for_new_checkpoint(checkpoint_dir: str, last: str | None, timeout: float | None,
                             latest: Callable[[str], str | None], seconds_to_sleep: float = 1.0) -> str | None:
    log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = latest(checkpoint_dir)
        if path is not None and path != last:
            log.info("Found new checkpoint at %s", path)
            return path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


__all__ = ["CheckpointSaverListener", "FinalOpsHook", "FeedFnHook", "GlobalStepWaiterHook",
           "ProfilerHook", "basic_train_loop", "checkpoints_iterator"]
