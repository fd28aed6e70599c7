"""A step waiting on a task that died fails with UnavailableError within the heartbeat timeout, and a
synchronous job with fewer live replicas than it aggregates stops instead of training on alone."""

from __future__ import annotations

import os
import signal
import threading
import time

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


def _sync_replica(spec: dict, task: int) -> tuple[af.Graph, dict]:
    """Replica `task` of a sync job that aggregates 2 gradients per step out of 2 replicas."""
    g = af.Graph()
    with g.as_default():
        cluster = af.train.ClusterSpec(spec)
        with af.device(af.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{task}")):
            step = af.train.get_or_create_global_step()
            w = af.Variable(af.ones([3]), name="w")
            opt = af.train.SyncReplicasOptimizer(af.train.GradientDescentOptimizer(0.01), replicas_to_aggregate=2,
                                                 total_num_replicas=2)
            train = opt.minimize(af.reduce_sum(af.square(w)), global_step=step)
            ops = {"step": step, "train": train, "local_init": opt.local_step_init_op,
                   "sync": opt.get_chief_queue_runner().enqueue_ops[0], "init": af.global_variables_initializer(),
                   "chief_init": opt.chief_init_op, "tokens": opt.get_init_tokens_op(),
                   "dropped": opt.dropped_gradients}
    return g, ops


def test_too_few_sync_replicas_fail_with_unavailable_instead_of_training_alone(procs):
    """2 of 2 gradients per step, and replica 1's task is dead. In TF1 replica 0 trains on alone: its second
    gradient for a step (computed after it takes the other replica's token) fills the other slot. Here a
    replica counts once per step, so replica 0's repeats are dropped, its step waits for a token that never
    comes, and it fails with UnavailableError naming task 1; the global step never moves."""
    beats = ("--heartbeat-interval", "0.2", "--heartbeat-timeout", "1")
    cluster = LocalCluster(procs, ps=1, workers=2, worker_args=beats, master_args=beats)
    graph, a = _sync_replica(cluster.spec, 0)
    sess = af.Session(f"http://{cluster.address('worker', 0)}", graph=graph)
    outcome: dict[str, BaseException] = {}
    runs = {"train": 0, "sync": 0}

    def loop(name: str) -> None:
        try:
            while True:
                sess.run(a[name], options=af.RunOptions(timeout_in_ms=60000))
                runs[name] += 1
        except BaseException as e:  # noqa: BLE001 - inspected below
            outcome[name] = e

    try:
        for op in ("init", "chief_init", "local_init", "tokens"):  # two tokens: one per replica
            sess.run(a[op])
        os.kill(cluster.tasks[("worker", 1)].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        threads = [threading.Thread(target=loop, args=(name,), daemon=True) for name in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), f"replica 0 kept training alone ({runs})"
        assert time.monotonic() - killed_at < 30
        for name in runs:
            assert isinstance(outcome[name], af.errors.UnavailableError), outcome
            assert "task:1" in str(outcome[name])
        assert sess.run(a["step"]) == 0 and runs == {"train": 2, "sync": 0}  # both tokens used, nothing applied
        assert sess.run(a["dropped"]) == 2  # replica 0's repeats for step 0: after each token, and the blocked run
    finally:
        sess.close()
