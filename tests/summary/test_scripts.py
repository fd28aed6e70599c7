"""`scripts/train_digits.py --logdir DIR` writes what TensorBoard shows: the graph, every step's
batch loss and accuracy, each epoch's test accuracy and examples/s (read back with TensorBoard's
EventAccumulator); without `--logdir` nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.summary.reading import accumulator, event_files

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_digits.py"


def test_train_digits_logdir(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--epochs", "1", "--hidden", "16", "--no-progress",
                           "--checkpoint-dir", str(tmp_path / "ckpt"), "--logdir", str(tmp_path / "tb")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    steps = result["global_step"]
    acc = accumulator(tmp_path / "tb")
    assert sorted(acc.Tags()["scalars"]) == ["accuracy", "examples_per_sec", "loss", "test_accuracy"]
    assert [s.step for s in acc.Scalars("loss")] == list(range(1, steps + 1))
    assert all(0 <= s.value <= 1 for s in acc.Scalars("accuracy"))
    (test_acc,) = acc.Scalars("test_accuracy")
    assert test_acc.step == steps and abs(test_acc.value - result["test_accuracy"]) < 1e-4
    assert acc.Scalars("examples_per_sec")[0].value > 0
    names = {n.name for n in acc.Graph().node}
    assert {"x", "labels", "hidden/w", "logits/w", "loss", "accuracy"} <= names
    assert not event_files(tmp_path / "ckpt")  # checkpoints only there
