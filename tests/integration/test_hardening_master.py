"""Issue 12, defects 7 and 8, against real processes: a stopped master and a restarted one.

- A master SIGSTOPed while a step is in flight: the client's heartbeat on it (GET /healthz on a
  separate connection) gets no answer, and the step fails with UnavailableError naming the master
  within the heartbeat timeout, though the caller set no operation timeout. A long step on a master
  that answers is left alone. After SIGCONT the same session runs steps again.
- A master SIGKILLed between steps and restarted on its address (`asyncflow local --restart`): a
  plain Session's next step fails once with AbortedError (the master's incarnation changed, its
  session is gone), then the session recreates its master session and goes on; the variables were
  on the ps all along. A MonitoredTrainingSession trains on to its last step, with a counter on the
  ps proving every update was applied exactly once (the PS-restart tests of test_recovery.py count
  the same way).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import urllib.request

import numpy as np
import pytest

import asyncflow as af
from tests.integration.conftest import Processes, wait_until
from tests.integration.test_recovery import LocalRun, _read, _stop, start_local

INTERVAL_MS, TIMEOUT_MS = 200, 1500
MARGIN_S = 1.5  # a ping's own timeout (0.5 s), scheduling on a loaded machine
CONFIG = {"heartbeat_interval_in_ms": INTERVAL_MS, "heartbeat_timeout_in_ms": TIMEOUT_MS}
MASTER = "job=master task=0"


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """One `asyncflow local --restart` cluster (a ps, a worker, the master) for the module's tests, which stop
    and kill its master; each test that reuses variable names clears the containers first."""
    procs = Processes(tmp_path_factory.mktemp("local"))
    try:
        run = start_local(procs, "--ps", "1", "--workers", "1", "--restart")
        yield procs, run
        _stop(run)
    finally:
        procs.kill_all()


def master_incarnation(address: str) -> int | None:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=1) as r:
            return json.loads(r.read()).get("master_incarnation")
    except OSError:
        return None


def _queue_graph(name: str):
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            q = af.FIFOQueue(4, af.float32, shapes=[[]], name=name)
            v = af.Variable(5.0, name="v")
        with af.device("/job:worker/task:0"):
            y = v * 2.0
        dequeue = q.dequeue()
    return g, v, y, dequeue


# -- defect 8: a stopped master ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_stopped_master_fails_the_step_within_the_heartbeat_timeout(local, mode):
    procs, run = local
    _read(procs, run)
    g, v, y, dequeue = _queue_graph(f"stopped_{mode}")
    pid = run.pids[MASTER]
    stopped_at: list[float] = []

    def stop_later() -> None:  # the step has been waiting longer than the timeout on a live master by then
        time.sleep(TIMEOUT_MS / 1000.0 + 1.0)
        stopped_at.append(time.monotonic())
        os.kill(pid, signal.SIGSTOP)

    with af.Session(run.target, graph=g, config=CONFIG) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == np.float32(10.0)
        stopper = threading.Thread(target=stop_later)
        stopper.start()
        try:
            with pytest.raises(af.errors.UnavailableError, match=f"master at {run.target} is unavailable") as e:
                if mode == "run":
                    sess.run(dequeue)  # blocks on the empty queue: only the master's silence ends it
                else:
                    asyncio.run(sess.arun(dequeue))
            failed_at = time.monotonic()
        finally:
            stopper.join()
            os.kill(pid, signal.SIGCONT)
        assert e.value.master == run.target
        assert stopped_at and failed_at - stopped_at[0] < TIMEOUT_MS / 1000.0 + MARGIN_S, failed_at - stopped_at[0]
        # The master answers again: the same session runs steps (the abandoned dequeue stays queued on the ps).
        assert sess.run(y) == np.float32(10.0)


# -- defect 7: a restarted master ------------------------------------------------------------------------
def _kill_master(procs, run: LocalRun, wait: bool) -> int:
    """SIGKILLs the master of `asyncflow local --restart`; with `wait`, returns once the restarted one answers."""
    _read(procs, run)
    old = master_incarnation(run.addresses[MASTER])
    assert old is not None
    os.kill(run.pids[MASTER], signal.SIGKILL)
    if wait:
        wait_until(lambda: master_incarnation(run.addresses[MASTER]) not in (None, old), 30,
                   "the master to be restarted")
    return old


def test_a_plain_session_is_aborted_once_by_a_restarted_master_then_goes_on(local):
    procs, run = local
    with af.Graph().as_default() as g:
        with af.device("/job:ps/task:0"):
            v = af.Variable(0.0, name="v")
        with af.device("/job:worker/task:0"):
            bump = af.assign_add(v, 1.0)
    with af.Session(run.target, graph=g, config=CONFIG) as sess:
        sess.run(v.initializer)
        assert [sess.run(bump) for _ in range(3)] == [1.0, 2.0, 3.0]
        old = _kill_master(procs, run, wait=True)
        with pytest.raises(af.errors.AbortedError, match="restarted") as e:
            sess.run(bump)
        assert e.value.master == run.target and e.value.incarnations[0] == old
        # The session made a new master session (graph sent again); the variable lived on the ps: nothing lost,
        # and the aborted step did not run.
        assert sess.run(v) == 3.0
        assert [sess.run(bump) for _ in range(2)] == [4.0, 5.0]
        call = sess.make_callable(bump)
        assert call() == 6.0
        assert "restarted job=master task=0" in procs.output(run.proc)
        # The same from async code.
        _kill_master(procs, run, wait=True)

        async def steps() -> list:
            with pytest.raises(af.errors.AbortedError, match="restarted"):
                await sess.arun(bump)
            return [await sess.arun(bump), await sess.arun(bump)]

        assert asyncio.run(steps()) == [7.0, 8.0]
        assert call() == 9.0


def test_a_session_the_master_collected_is_recreated_and_the_step_runs(local):
    procs, run = local
    with af.Graph().as_default() as g:
        with af.device("/job:ps/task:0"):
            v = af.Variable(0.0, name="collected_v")
        with af.device("/job:worker/task:0"):
            bump = af.assign_add(v, 1.0)
    with af.Session(run.target, graph=g, config=CONFIG) as sess:
        sess.run(v.initializer)
        assert sess.run(bump) == 1.0
        remote = sess._remote
        old = remote.handle
        # What the master does to a session idle past its lease (--session-idle-timeout): it forgets the handle.
        urllib.request.urlopen(urllib.request.Request(f"{run.target}/v1/master/sessions/{old}/close", data=b"",
                                                      method="POST"), timeout=5).close()
        assert sess.run(bump) == 2.0  # no error: nothing ran under the old handle, so the step simply runs
        assert remote.handle not in (None, old)
        urllib.request.urlopen(urllib.request.Request(f"{run.target}/v1/master/sessions/{remote.handle}/close",
                                                      data=b"", method="POST"), timeout=5).close()
        assert asyncio.run(sess.arun(bump)) == 3.0


LAST_STEP = 16
KILL_AFTER = 7


class _KillMaster(af.train.SessionRunHook):
    """SIGKILLs the master once, after the step that takes the global step to KILL_AFTER."""

    def __init__(self, procs, run: LocalRun, step, wait: bool):
        self.procs, self.run, self.step, self.wait = procs, run, step, wait
        self.killed = False

    def before_run(self, run_context):
        return af.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        if not self.killed and int(run_values.results) + 1 >= KILL_AFTER:
            self.killed = True
            _kill_master(self.procs, self.run, self.wait)


@pytest.mark.parametrize("wait", [False, True], ids=["next-step-at-once", "next-step-after-restart"])
def test_monitored_training_goes_on_past_a_master_restart_with_every_update_once(local, tmp_path, wait):
    procs, run = local
    af.Session.reset(run.target)  # the other cases' global step and weights
    cluster = af.train.ClusterSpec(run.spec)
    rng = np.random.default_rng(0)
    x_data = rng.normal(size=(8, 3)).astype(np.float32)
    y_data = rng.normal(size=(8, 1)).astype(np.float32)
    with af.Graph().as_default():
        with af.device(af.train.replica_device_setter(cluster=cluster)):
            step = af.train.get_or_create_global_step()
            w = af.Variable(af.zeros([3, 1]), name="w")
            updates = af.Variable(0, name="updates")  # one more per training step that ran
            loss = af.reduce_mean(af.square(af.matmul(af.constant(x_data), w) - y_data))
            train = af.group(af.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step),
                             af.assign_add(updates, 1))
        kill = _KillMaster(procs, run, step, wait)
        hooks = [af.train.StopAtStepHook(last_step=LAST_STEP), kill]
        steps_run = []  # the global step each run started from
        # With a checkpoint every 5 steps, a restore would take the counters back: it must not happen.
        with af.train.MonitoredTrainingSession(master=run.target, is_chief=True, checkpoint_dir=str(tmp_path),
                                               hooks=hooks, save_checkpoint_steps=5, log_step_count_steps=0,
                                               config=CONFIG) as sess:
            while not sess.should_stop():
                steps_run.append(int(sess.run([train, step])[1]))
            final_step, final_updates = (int(x) for x in sess.run([step, updates]))
    assert kill.killed
    assert "restarted job=master task=0" in procs.output(run.proc)
    assert steps_run == list(range(LAST_STEP)), steps_run  # no step lost, none run twice
    assert final_step == LAST_STEP and final_updates == LAST_STEP
