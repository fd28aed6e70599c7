"""`af.train.SummarySaverHook`: runs the summary op every N steps or seconds and writes it, as TF1.

The hook fetches the global step on every run and the summary op only on the runs where its timer
fires; a graph with no summary op costs no fetch after the first run. The step a summary is
written at is the global step read again after that run; on the other runs it is the value read
during the run plus one, as TF1's hook counts. The first run also writes `SessionLog(START)`.
The writer is `summary_writer`, or the one `af.summary.FileWriterCache` keeps for `output_dir`
(which writes the graph when it is made: TensorBoard's graph tab).
"""

from __future__ import annotations

from typing import Any

from asyncflow.train.hooks import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from asyncflow.train.hooks_more import SecondOrStepTimer
from asyncflow.train.training_util import get_global_step


class SummarySaverHook(SessionRunHook):
    """Saves summaries every `save_steps` steps or `save_secs` seconds (exactly one of them)."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir: str | None = None,
                 summary_writer: Any = None, scaffold: Any = None, summary_op: Any = None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            from asyncflow.summary.writer import FileWriterCache

            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step: int | None = None
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def _summary_ops(self) -> list[Any] | None:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        if self._next_step is not None and self._summary_ops() is None:
            self._request_summary = False
            return None  # a graph without summaries: after the first run, no fetch at all
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests: dict[str, Any] = {"global_step": self._global_step}
        ops = self._summary_ops() if self._request_summary else None
        if ops is not None:
            requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if not self._summary_writer or run_values.results is None:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            from asyncflow.summary import SessionLog

            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session: Any = None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()


__all__ = ["SummarySaverHook"]
