"""Event files read back with TensorBoard's own readers (what its dashboards load)."""

from __future__ import annotations

import glob
import os

from tensorboard.backend.event_processing import event_accumulator, event_file_loader


def accumulator(logdir: str) -> event_accumulator.EventAccumulator:
    """TensorBoard's EventAccumulator over `logdir`, keeping every event (no sampling)."""
    keep_all = {k: 0 for k in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance=keep_all)
    acc.Reload()
    return acc


def event_files(logdir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def events(logdir: str) -> list:
    """Every Event proto of every event file in `logdir`, file by file, in order."""
    return [e for path in event_files(logdir) for e in event_file_loader.LegacyEventFileLoader(path).Load()]


def summary_steps(logdir: str, tag: str) -> list[int]:
    return [e.step for e in events(logdir) if e.HasField("summary") and any(v.tag == tag for v in e.summary.value)]
