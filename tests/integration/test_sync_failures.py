"""Synchronous SGD under failures, with real processes: a replica SIGKILLed mid-training, and stale gradients.

The replicas are tests/integration/sync_worker.py processes (3 replicas, 2 gradients aggregated per
step: one backup). Their updates are logged on the PS per global step, with each gradient naming
the replica run that computed it, so the test can check every step was applied exactly once, from
two gradients, and that no gradient was applied twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import asyncflow as af
from tests.integration import sync_worker
from tests.integration.conftest import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
STEPS = 30
DIE_AT = 8  # replica 2 SIGKILLs itself once the global step reaches this
GATE_AT = 14  # the others wait here until it has (it may start late on a loaded machine)


def start_replica(procs, cluster: LocalCluster, task: int, *extra: str) -> subprocess.Popen:
    """A replica process, registered with the fixture so that it is killed whatever happens."""
    log = open(procs.log_dir / f"replica{task}.log", "wb")  # noqa: SIM115 - closed by the fixture
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCFLOW_CONFIG", "ASYNCFLOW_TOKEN")}
    proc = subprocess.Popen([sys.executable, "-m", "tests.integration.sync_worker", "--cluster", cluster.spec_json,
                             "--task", str(task), "--steps", str(STEPS), *extra], stdout=log,
                            stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
    proc.log_path, proc._log_file = log.name, log  # type: ignore[attr-defined]
    procs.children.append(proc)
    return proc


def _runs(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in line.split()[1:]) for line in text.splitlines() if line.startswith("run ")]


def test_a_replica_killed_mid_training_loses_no_step_and_applies_none_twice(procs):
    cluster = LocalCluster(procs, ps=1, workers=3)
    gate = ("--gate-file", str(procs.log_dir / "replica2-died"))
    survivor = (*gate, "--gate-at", str(GATE_AT))
    replicas = [start_replica(procs, cluster, 0, *survivor), start_replica(procs, cluster, 1, *survivor),
                start_replica(procs, cluster, 2, *gate, "--die-at", str(DIE_AT))]
    codes = [p.wait(timeout=90) for p in replicas]
    outputs = [procs.output(p) for p in replicas]
    assert codes == [0, 0, -9], "\n\n".join(outputs)
    assert "done" in outputs[0] and "done" in outputs[1]
    dying = [line for line in outputs[2].splitlines() if line.startswith("dying ")]
    assert len(dying) == 1
    died_on_run, died_slot, died_at = (int(x) for x in dying[0].split()[1:])
    assert len(_runs(outputs[2])) == died_on_run and DIE_AT <= died_at < STEPS  # killed mid-training

    # Read the PS's logs through the cluster's master.
    with af.Graph().as_default():
        m = sync_worker.build(af.train.ClusterSpec(cluster.spec), 0, STEPS)
        with af.Session(cluster.target) as sess:
            final, applied, grad_log, w = sess.run([m["step"], m["applied"], m["grad_log"], m["w"]])
    final = int(final)
    assert final >= STEPS
    assert grad_log.shape == (sync_worker.log_size(STEPS), m["width"])
    # Every global step 0..final-1 was applied exactly once; none after.
    np.testing.assert_array_equal(applied[:final], np.ones(final, np.int32))
    assert not applied[final:].any() and not grad_log[final:].any()
    # Each applied update is the mean of two replica runs' gradients, and no run's gradient was applied twice.
    per_step = [np.flatnonzero(row) for row in grad_log[:final]]
    for s, slots in enumerate(per_step):
        assert len(slots) == 2 and (grad_log[s, slots] == np.float32(0.5)).all(), (s, slots, grad_log[s, slots])
    used = np.concatenate(per_step)
    assert len(set(used.tolist())) == len(used), "a replica's gradient was applied in two steps"
    # The weights hold exactly the logged updates (lr 1: w = -sum of the applied means), bit for bit.
    assert (w == -grad_log[:final].sum(axis=0)).all()
    # The gradients applied are runs the replicas really made (the killed one: at most its in-flight run).
    per_replica = sync_worker.runs_per_replica(STEPS)
    made = {0: len(_runs(outputs[0])), 1: len(_runs(outputs[1])), 2: died_on_run + 1}
    for slot in used.tolist():
        task, i = divmod(slot, per_replica)
        assert i < made[task], (slot, task, i, made)
    # The survivors carried the steps after the kill.
    after_kill = [s for s, slots in enumerate(per_step) if all(x // per_replica != 2 for x in slots)]
    assert after_kill and after_kill[-1] == final - 1 and final - 1 > died_at
    assert died_slot == sync_worker.run_slot(2, died_on_run, STEPS)


# -- stale gradients --------------------------------------------------------------------------------------
FORCED_STALE = 4


def _replica(cluster: LocalCluster, task: int) -> tuple[af.Graph, dict]:
    """Replica `task` of a sync job with 1 gradient per step and one backup, as between-graph replication."""
    g = af.Graph()
    with g.as_default():
        spec = af.train.ClusterSpec(cluster.spec)
        with af.device(af.train.replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{task}")):
            step = af.train.get_or_create_global_step()
            w = af.Variable(af.ones([3]), name="w")
            loss = af.reduce_sum(af.square(w))
            opt = af.train.SyncReplicasOptimizer(af.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1,
                                                 total_num_replicas=2)
            train = opt.minimize(loss, global_step=step)
            ops = {"step": step, "train": train, "dropped": opt.dropped_gradients,
                   "local_init": opt.local_step_init_op, "sync": opt.get_chief_queue_runner().enqueue_ops[0],
                   "init": af.global_variables_initializer(), "local_vars_init": af.local_variables_initializer(),
                   "chief_init": opt.chief_init_op, "tokens": opt.get_init_tokens_op()}
    return g, ops


def test_dropped_gradients_count_exactly_the_stale_gradients_forced(procs):
    """Replica 1 is a straggler: it computes against global step s, replica 0's gradient makes step s+1 and
    replica 0 starts its next step, and only then does replica 1's gradient arrive: stale, dropped. Forced
    FORCED_STALE times; the fresh gradients (replica 0's, and replica 1's once it catches up) are not dropped.
    The steps are driven one op at a time (the chief's sync op too) so the interleaving is exactly this one."""
    cluster = LocalCluster(procs, ps=1, workers=2)
    (ga, a), (gb, b) = _replica(cluster, 0), _replica(cluster, 1)
    with af.Session(f"http://{cluster.address('worker', 0)}", graph=ga) as sa, \
            af.Session(f"http://{cluster.address('worker', 1)}", graph=gb) as sb:
        sa.run(a["init"])
        sa.run(a["chief_init"])
        sa.run(a["tokens"])
        sb.run(b["local_init"])  # replica 1 starts computing against global step 0
        for k in range(FORCED_STALE):
            sa.run(a["local_init"])  # replica 0 starts a step against global step k
            sa.run(a["train"])  # its gradient goes in (fresh), it takes a token
            sa.run(a["sync"])  # the chief applies it: global step k + 1
            sa.run(a["local_init"])  # replica 0 starts its next step
            assert sa.run(a["dropped"]) == k
            sb.run(b["train"])  # replica 1's gradient, computed against a step <= k, arrives
            assert sa.run(a["dropped"]) == k + 1, f"replica 1's stale gradient {k + 1} was not dropped"
        assert sa.run(a["step"]) == FORCED_STALE
        sb.run(b["local_init"])  # replica 1 catches up: its next gradient is fresh and makes the next step
        sb.run(b["train"])
        sa.run(a["sync"])
        assert sa.run(a["step"]) == FORCED_STALE + 1
        assert sb.run(b["dropped"]) == FORCED_STALE
