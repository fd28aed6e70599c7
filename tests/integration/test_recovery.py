"""Recovery with real processes: `asyncflow local --restart`, and a PS killed mid-training.

A PS that is SIGKILLed loses its variables; `asyncflow local --restart` starts it again on the same
address (a new incarnation). The training client's next step fails with AbortedError or
UnavailableError, MonitoredTrainingSession creates a new session, the chief restores the latest
checkpoint onto the restarted PS, and training goes on to the last step.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from dataclasses import dataclass, field

import numpy as np
import pytest

import asyncflow as af
from tests.integration.conftest import healthy, port_closed, wait_until


@dataclass
class LocalRun:
    """An `asyncflow local` child and what it printed: the target, the spec, each child's pid."""

    proc: subprocess.Popen
    target: str = ""
    spec: dict = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)  # "job=ps task=0" -> the pid last started
    addresses: dict[str, str] = field(default_factory=dict)


def _read(procs, run: LocalRun) -> None:
    for line in procs.output(run.proc).splitlines():
        key, sep, value = line.partition(": ")
        if sep and key == "target":
            run.target = value.strip()
        elif sep and key == "cluster":
            run.spec = json.loads(value)
        elif line.startswith("started job="):
            words = dict(w.split("=", 1) for w in line.split()[1:])
            label = f"job={words['job']} task={words['task']}"
            run.pids[label], run.addresses[label] = int(words["pid"]), words["address"]


def start_local(procs, *args: str) -> LocalRun:
    run = LocalRun(procs.start("local", *args))
    expected = None

    def ready() -> bool:
        nonlocal expected
        if run.proc.poll() is not None:
            raise RuntimeError("asyncflow local exited:\n" + procs.output(run.proc))
        _read(procs, run)
        if not run.spec:
            return False
        expected = sum(len(a) for a in run.spec.values()) + 1
        # The target line comes last, once the master answers (a client may connect when it reads it).
        return len(run.addresses) == expected and bool(run.target) and all(healthy(a) for a in run.addresses.values())

    wait_until(ready, 60, "asyncflow local to start its cluster")
    return run


def _incarnation(address: str) -> int | None:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=1) as r:
            return json.loads(r.read()).get("incarnation")
    except OSError:
        return None


def _stop(run: LocalRun) -> None:
    run.proc.send_signal(signal.SIGTERM)
    assert run.proc.wait(timeout=30) == 0
    assert all(port_closed(a) for a in run.addresses.values()), "a child of asyncflow local outlived it"


def test_local_restart_brings_a_killed_ps_back_on_its_address(procs):
    run = start_local(procs, "--ps", "1", "--workers", "1", "--restart")
    ps = "job=ps task=0"
    address, old_pid = run.addresses[ps], run.pids[ps]
    old = _incarnation(address)
    assert old is not None
    os.kill(old_pid, signal.SIGKILL)

    def back() -> bool:
        _read(procs, run)
        new = _incarnation(address)
        return run.pids[ps] != old_pid and new is not None and new != old

    wait_until(back, 30, "the killed ps to be restarted")
    assert run.proc.poll() is None, "asyncflow local stopped instead of restarting the ps"
    restarts = [line for line in procs.output(run.proc).splitlines() if "restarted" in line]
    assert len(restarts) == 1 and f"restarted {ps} (it exited with -9) pid={run.pids[ps]}" in restarts[0], restarts
    # The cluster works again, with the restarted PS.
    with af.Graph().as_default() as g:
        with af.device("/job:ps/task:0"):
            v = af.Variable(3.0, name="v")
        with af.device("/job:worker/task:0"):
            y = v * 2.0

    def answers() -> bool:
        try:
            with af.Session(run.target, graph=g) as sess:
                sess.run(v.initializer)
                return sess.run(y) == np.float32(6.0)
        except (af.errors.UnavailableError, af.errors.AbortedError):
            return False  # the master has not seen the new incarnation yet

    wait_until(answers, 30, "a step on the restarted ps")
    _stop(run)


# -- a PS killed mid-training -----------------------------------------------------------------------------
LAST_STEP = 24
SAVE_EVERY = 5
PS_TASK = "/job:ps/replica:0/task:0"
KILL_AFTER = 13  # the last checkpoint before the kill is at step 10: steps 11..13 are lost


def _master_incarnation(run: LocalRun, task: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{run.target}/metrics", timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f'asyncflow_master_task_incarnation{{task="{task}"}} '):
            return int(line.split()[-1])
    return None


class _KillPs(af.train.SessionRunHook):
    """SIGKILLs the PS once, after the step that takes the global step to KILL_AFTER; with `wait`, returns only
    once the master has seen the restarted PS (so the next step meets its new incarnation, not a dead peer)."""

    def __init__(self, run: LocalRun, step, variables, wait: bool):
        self.run, self.step, self.variables, self.wait = run, step, variables, wait
        self.killed_at: int | None = None
        self.values_at_kill: dict[str, np.ndarray] = {}

    def before_run(self, run_context):
        return af.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        if self.killed_at is None and int(run_values.results) + 1 >= KILL_AFTER:
            self.killed_at = int(run_context.session.run(self.step))
            self.values_at_kill = dict(zip([v.op.name for v in self.variables],
                                           run_context.session.run(self.variables)))
            old = _master_incarnation(self.run, PS_TASK)
            os.kill(self.run.pids["job=ps task=0"], signal.SIGKILL)
            if self.wait:
                wait_until(lambda: _master_incarnation(self.run, PS_TASK) not in (None, old), 30,
                           "the master to see the restarted ps")


class _AfterRestore(af.train.SessionRunHook):
    """Right after each session is created: the latest checkpoint and the variables as the session sees them."""

    def __init__(self, checkpoint_dir: str, step, variables):
        self.dir, self.step, self.variables = checkpoint_dir, step, variables
        self.seen: list[tuple[str | None, int, dict[str, np.ndarray]]] = []

    def after_create_session(self, session, coord):
        values = session.run(self.variables)
        self.seen.append((af.train.latest_checkpoint(self.dir), int(session.run(self.step)),
                          dict(zip([v.op.name for v in self.variables], values))))


@pytest.mark.parametrize("wait", [False, True], ids=["next-step-at-once", "next-step-after-master-sees-restart"])
def test_a_killed_ps_resumes_from_the_last_checkpoint_bit_for_bit(procs, tmp_path, wait):
    run = start_local(procs, "--ps", "1", "--workers", "1", "--restart")
    ckpt_dir = str(tmp_path / "ckpt")
    cluster = af.train.ClusterSpec(run.spec)
    rng = np.random.default_rng(0)
    x_data = rng.normal(size=(16, 5)).astype(np.float32)
    y_data = rng.normal(size=(16, 3)).astype(np.float32)
    with af.Graph().as_default():
        with af.device(af.train.replica_device_setter(cluster=cluster)):
            step = af.train.get_or_create_global_step()
            w = af.Variable(af.random_normal([5, 3], seed=3), name="w")
            b = af.Variable(af.zeros([3]), name="b")
            loss = af.reduce_mean(af.square(af.matmul(af.constant(x_data), w) + b - y_data))
            train = af.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
        variables = af.global_variables()  # w, b, the momentum slots and the global step
        kill = _KillPs(run, step, variables, wait)
        probe = _AfterRestore(ckpt_dir, step, variables)
        hooks = [af.train.StopAtStepHook(last_step=LAST_STEP), kill, probe]
        steps_run = []  # the global step each run started from
        with af.train.MonitoredTrainingSession(master=run.target, is_chief=True, checkpoint_dir=ckpt_dir,
                                               hooks=hooks, save_checkpoint_steps=SAVE_EVERY,
                                               log_step_count_steps=0) as sess:
            while not sess.should_stop():
                steps_run.append(int(sess.run([train, step])[1]))
            final_step = int(sess.run(step))
    assert kill.killed_at == KILL_AFTER
    assert "restarted job=ps task=0" in procs.output(run.proc)
    first, restored = probe.seen[0], probe.seen[1:]
    assert first[0] is None and first[1] == 0  # the first session initialised
    assert restored, "no session was created after the PS died"
    names = sorted(first[2])
    assert "global_step" in names and any("Momentum" in n for n in names), names
    for ckpt, gs, values in restored:
        assert ckpt is not None and ckpt.endswith(f"-{gs}")
        assert KILL_AFTER - SAVE_EVERY < gs <= KILL_AFTER  # at most the steps since that checkpoint are lost
        for name in names:
            saved = af.train.load_variable(ckpt, name)
            assert values[name].dtype == saved.dtype and values[name].shape == saved.shape, name
            assert values[name].tobytes() == saved.tobytes(), f"{name} after the restore differs from {ckpt}"
    # The restore really came from the checkpoint: the PS held newer values when it died.
    assert not np.array_equal(kill.values_at_kill["w"], restored[0][2]["w"])
    # It went on from the checkpoint's step (the lost steps ran again) to the last step.
    killed = steps_run.index(KILL_AFTER - 1)
    assert steps_run[:killed + 1] == list(range(KILL_AFTER))
    resumed = restored[-1][1]
    assert steps_run[killed + 1:][-(LAST_STEP - resumed):] == list(range(resumed, LAST_STEP)), steps_run
    assert final_step == LAST_STEP
    _stop(run)
