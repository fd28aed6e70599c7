"""A step waiting on a task that died fails with UnavailableError within the heartbeat timeout."""

from __future__ import annotations

import os
import signal
import threading

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
