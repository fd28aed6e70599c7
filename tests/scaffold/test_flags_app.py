"""af.app.run and af.flags, in real processes (absl's FLAGS is one per process).

Expected values and messages were checked against TF 2.21's tf.compat.v1.app / tf.compat.v1.flags
running the same program: `tf.app.run` leaves unknown flags to main's argv, reading FLAGS before
any parse parses sys.argv and rejects an unknown flag with absl's UnrecognizedFlagError.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import asyncflow as af

PROGRAM = Path(__file__).with_name("flags_program.py")
ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = {"data_dir": "/tmp/data", "steps": 10, "lr": 0.1, "sync": False, "verbose": True, "hosts": ["a", "b"],
            "mode": "train", "tag": [], "ids": [1], "old": "o"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=60,
                          cwd=str(ROOT))


def test_app_run_parses_every_kind_of_flag_and_calls_main_with_the_rest():
    p = run("--steps=5", "--lr", "0.5", "--sync", "--noverbose", "--hosts=x,y,z", "--mode=eval", "--tag", "a",
            "--tag", "b", "--ids", "3", "--ids=4", "--old=q", "pos1")
    assert p.returncode == 3, p.stderr  # main's return value is the exit status
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["argv"] == ["pos1"]
    assert out["flags"] == {"data_dir": "/tmp/data", "steps": 5, "lr": 0.5, "sync": True, "verbose": False,
                            "hosts": ["x", "y", "z"], "mode": "eval", "tag": ["a", "b"], "ids": [3, 4], "old": "q"}


def test_app_run_leaves_unknown_flags_to_main():
    p = run("--unknown=3", "--steps", "2", "pos")
    assert p.returncode == 3, p.stderr
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["argv"] == ["--unknown=3", "pos"]
    assert out["flags"] == {**DEFAULTS, "steps": 2}


def test_reading_flags_before_a_parse_parses_sys_argv_and_reports_unknown_flags_as_absl():
    p = run("direct", "--steps", "7")
    assert p.returncode == 0 and json.loads(p.stdout.splitlines()[-1]) == {"steps": 7}
    p = run("direct", "--unknown=1")
    assert p.returncode == 1
    assert "absl.flags._exceptions.UnrecognizedFlagError: Unknown command line flag 'unknown'" in p.stderr


@pytest.mark.parametrize("arg, message", [
    ("--steps=abc", "IllegalFlagValueError: flag --steps=abc: invalid literal for int() with base 10: 'abc'"),
    ("--mode=bad", "IllegalFlagValueError: flag --mode=bad: value should be one of <train|eval>"),
])
def test_a_bad_value_stops_the_program(arg, message):
    p = run(arg)
    assert p.returncode == 1 and message in p.stderr


def test_helpfull_lists_the_programs_flags_and_required_flags_are_checked():
    p = run("--helpfull")
    assert p.returncode == 1  # absl's help flags exit with 1
    assert "flags_program.py:" in p.stdout and "--data_dir: where the data is" in p.stdout
    assert "(default: '/tmp/data')" in p.stdout and "--[no]sync: sync" in p.stdout
    p = run("required")
    assert p.returncode == 1 and "Flag --needed must have a value other than None." in p.stderr
    p = run("required", "--needed=x")
    assert p.returncode == 3


def test_flags_namespace_is_absls():
    from absl import flags as absl_flags

    assert af.app.flags is af.flags
    assert af.flags.FLAGS["logtostderr"] is absl_flags.FLAGS["logtostderr"]  # one FlagValues, as TF1's
    for name in ["DEFINE_string", "DEFINE_integer", "DEFINE_float", "DEFINE_boolean", "DEFINE_bool", "DEFINE_list",
                 "DEFINE_enum", "DEFINE_multi_string", "DEFINE_multi_integer", "mark_flag_as_required",
                 "FlagValues", "UnrecognizedFlagError", "IllegalFlagValueError"]:
        assert hasattr(af.flags, name), name
    assert af.flags.DEFINE_multi_string is absl_flags.DEFINE_multi_string

