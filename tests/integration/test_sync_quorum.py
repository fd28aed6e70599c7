"""A step waiting on a task that died fails with UnavailableError within the heartbeat timeout, and a
synchronous job with fewer live replicas than it aggregates fails its steps instead of training on."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import asyncflow as af
from tests.integration.conftest import LocalCluster


def test_step_waiting_for_a_dead_task_fails_with_unavailable_not_a_hang(procs):
    """Worker 0's step dequeues from a PS queue that only worker 1's client fills; worker 1 dies. The step
    cannot know it waits for worker 1, so the master fails any step still running a heartbeat timeout
    after a task went down, naming that task (a synchronous job with too few replicas is the same case)."""
    beats = ("--heartbeat-interval", "0.2", "--heartbeat-timeout", "1")
    cluster = LocalCluster(procs, ps=1, workers=2, worker_args=beats, master_args=beats)
    graph = af.Graph()
    with graph.as_default():
        with af.device("/job:ps/task:0"):
            q = af.FIFOQueue(10, af.float32, shapes=[[]], shared_name="from_worker_1")
        with af.device("/job:worker/task:0"):
            took = q.dequeue() * 2.0
    sess = af.Session(f"http://{cluster.address('worker', 0)}", graph=graph)
    outcome: list[BaseException] = []

    def wait_for_worker_1() -> None:
        try:
            sess.run(took, options=af.RunOptions(timeout_in_ms=60000))
        except BaseException as e:  # noqa: BLE001 - inspected below
            outcome.append(e)

    try:
        runner = threading.Thread(target=wait_for_worker_1)
        runner.start()
        os.kill(cluster.tasks[("worker", 1)].pid, signal.SIGKILL)
        runner.join(timeout=90)
        assert not runner.is_alive(), "the step hung"
        assert outcome and isinstance(outcome[0], af.errors.UnavailableError), outcome
        assert "task:1" in str(outcome[0])
        # The cluster goes on for what does not need the dead task.
        with af.device("/job:ps/task:0"), graph.as_default():
            size = q.size()
        assert sess.run(size) == 0
    finally:
        sess.close()


def test_the_sync_hook_fails_the_step_when_fewer_replicas_than_it_aggregates_are_alive(procs):
    """2 of 3 replicas aggregated: with one worker task dead the step goes on; with two dead the sync hook
    fails it with UnavailableError naming them, within the heartbeat timeout (plus the hook's wait), where
    TF1 would let the survivor train on with its own repeated gradients."""
    beats = ("--heartbeat-interval", "0.2", "--heartbeat-timeout", "1")
    cluster = LocalCluster(procs, ps=1, workers=3, worker_args=beats, master_args=beats)
    graph = af.Graph()
    with graph.as_default():
        spec = af.train.ClusterSpec(cluster.spec)
        with af.device(af.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
            step = af.train.get_or_create_global_step()
            w = af.Variable(af.ones([3]), name="w")
            opt = af.train.SyncReplicasOptimizer(af.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2,
                                                 total_num_replicas=3)
            opt.minimize(af.reduce_sum(af.square(w)), global_step=step)
            hook = opt.make_session_run_hook(is_chief=True)
            hook.begin()
    with af.Session(f"http://{cluster.address('worker', 0)}", graph=graph) as sess:
        context = af.train.SessionRunContext(af.train.SessionRunArgs(None), sess)

        def check_after_heartbeat_timeout() -> None:
            time.sleep(1.5)  # the master's heartbeat timeout, and the hook's QUORUM_CHECK_S
            hook.before_run(context)

        check_after_heartbeat_timeout()  # all three alive
        os.kill(cluster.tasks[("worker", 2)].pid, signal.SIGKILL)
        check_after_heartbeat_timeout()  # two alive: enough
        os.kill(cluster.tasks[("worker", 1)].pid, signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(af.errors.UnavailableError, match=r"aggregates 2 replicas' gradients per step but only 1 "
                                                             r"worker task\(s\) are alive") as info:
            while time.monotonic() - killed < 30:
                hook.before_run(context)
                time.sleep(0.05)
        assert "task:1" in str(info.value) and "task:2" in str(info.value)
        assert time.monotonic() - killed < 10
