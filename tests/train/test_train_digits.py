"""scripts/train_digits.py end to end: accuracy on the held-out digits, checkpoints, and `--resume`.

The script runs as a subprocess (as a user starts it), a few epochs each time: a 3-epoch run, a
`--resume` run to 6 epochs from its checkpoint, and an uninterrupted 6-epoch run that the resumed
one must reproduce exactly (the checkpoint carries the weights, Adam's slots and the global step).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_digits.py"


def run(*args: str, cwd: Path = SCRIPT.parents[1]) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]), proc.stdout


def test_trains_to_95_percent_and_resumes_from_the_saved_global_step(tmp_path):
    ckpt = "runs/ckpt"  # relative to the working directory, as the README's example (TF1 records it relative to it)
    first, _ = run("--epochs", "3", "--checkpoint-dir", ckpt, cwd=tmp_path)  # with the progress bar (on stderr)
    assert first["global_step"] > 0 and first["epochs"] == 3
    state = (tmp_path / "runs" / "ckpt" / "checkpoint").read_text()
    assert f'model_checkpoint_path: "model.ckpt-{first["global_step"]}"' in state

    resumed, out = run("--epochs", "6", "--checkpoint-dir", ckpt, "--resume", "--no-progress", cwd=tmp_path)
    assert f"at global step {first['global_step']}" in out
    assert "epoch   4" in out and "epoch   1" not in out
    assert resumed["global_step"] == 2 * first["global_step"]
    assert resumed["test_accuracy"] >= 0.95

    straight, _ = run("--epochs", "6", "--checkpoint-dir", str(tmp_path / "other"), "--no-progress")
    assert straight["train_loss"] == resumed["train_loss"]
    assert straight["global_step"] == resumed["global_step"]


def test_resume_without_a_checkpoint_starts_from_scratch(tmp_path):
    result, out = run("--epochs", "1", "--checkpoint-dir", str(tmp_path / "empty"), "--resume", "--no-progress")
    assert "no checkpoint in" in out and "epoch   1" in out and result["global_step"] > 0


def test_text_progress_bar_when_tqdm_is_missing(capsys):
    spec = importlib.util.spec_from_file_location("train_digits", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bar = module._TextBar(range(4), total=4, desc="epoch 1/1", disable=False)
    seen = []
    for i in bar:
        seen.append(i)
        bar.set_postfix_str(f"loss {i}")
    assert seen == [0, 1, 2, 3]
    err = capsys.readouterr().err
    assert "epoch 1/1 [" in err and "4/4 loss 3" in err
