"""Parameter-server training: the OSDI null-model microbenchmark, sync vs async SGD, and TF1's runtime.

Prints one JSON object to stdout (and writes it with --out). Three parts:

  null_model     the OSDI paper's null-model microbenchmark (Abadi et al. 2016, section 6.3): median
                 step time of synchronous replication with N workers (1, 2, 4, 8; 16 with --full)
                 and one ps task, where each worker's step fetches from the ps
                   scalar  a float32 scalar variable (worker i scales it)
                   dense   a dense float32 variable, all of it moved to each worker every step
                           (16 MiB by default, 100 MB with --full; one element is fetched by the client)
                   sparse  32 random rows gathered on the ps from a float32 embedding [rows, 64]
                           (64 MiB by default, 1 GiB with --full; only the rows cross the wire)
                 Method: one driver process holds N client sessions, session i targeting worker i's
                 own master endpoint (between-graph style, one client per worker); a step issues
                 the N workers' steps together with asyncio (`Session.arun`, `asyncio.gather`) and
                 ends when all N have finished: a barrier per step, as the paper's synchronous
                 replication. The paper's figures (16 ps tasks, a cluster of real machines) are
                 quoted beside ours.
  sync_vs_async  scripts/sync_vs_async_sgd.py run as a subprocess with --json, with and without a
                 simulated straggler (--straggler-ms): its rows (steps/s, examples/s, time to 95%
                 test accuracy, final accuracy, gradients dropped), plus the mean global-step time
                 (elapsed / global steps) for comparing sync+backup with sync under a straggler
  tf1            the same job on TF1's runtime when TensorFlow is importable (run under a python that
                 has both): `tf.distribute.Server` tasks as separate processes (1 ps; each worker
                 process hosts its server and runs its own client against it, TF1's usual
                 deployment), `tf.train.SyncReplicasOptimizer` / async Adam, the same MLP, digits
                 split, batch, steps and evaluation; compared with asyncflow's rows (ratios)

    python benchmarks/bench_ps.py [--quick | --full] [--no-tf] [--out FILE]
    /work/tfenv/bin/python benchmarks/bench_ps.py --out benchmarks/results/bench_ps_2core.json

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_distributed import (  # noqa: E402 - the shared cluster start-up and timing helpers
    _healthy,
    _port_open,
    free_port,
    processes,
    summary_ms,
    time_steps,
    wait_for,
)

SCRIPT = ROOT / "scripts" / "sync_vs_async_sgd.py"
EMBED_DIM = 64
SPARSE_ROWS = 32
PAPER = {
    "source": "Abadi et al., TensorFlow: A system for large-scale machine learning, OSDI 2016, section 6.3 "
              "(null model, synchronous replication, 16 ps tasks)",
    "scalar_1_worker_ms": 1.8,
    "sparse_ms": "5-20, regardless of embedding size",
}


# -- (a) the null-model microbenchmark ---------------------------------------------------------------------
def _start_asyncflow(workers: int):
    spec = {"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    text = json.dumps(spec)
    base = [sys.executable, "-m", "asyncflow.cli"]
    port = free_port()
    commands = [base + ["worker", "--cluster", text, "--job", job, "--task", str(i)]
                for job, addresses in spec.items() for i in range(len(addresses))]
    commands.append(base + ["master", "--cluster", text, "--port", str(port), "--wait-for-workers", "120"])
    return spec, f"127.0.0.1:{port}", processes(commands)


async def _together(steps: list[Any]) -> list[Any]:
    return await asyncio.gather(*steps)  # the step ends when every worker's step has: the barrier


def null_model(counts: list[int], dense_bytes: int, embed_bytes: int, reps: argparse.Namespace) -> dict[str, Any]:
    import asyncflow as af

    rows = embed_bytes // (4 * EMBED_DIM)
    spec, master, cluster = _start_asyncflow(max(counts))
    out: dict[str, Any] = {}
    with cluster:
        wait_for(lambda: _healthy(master), 180, "the asyncflow master")  # it waits for every task first
        g = af.Graph()
        with g.as_default():
            with af.device("/job:ps/task:0"):
                scalar = af.Variable(1.0, name="scalar")
                dense = af.Variable(af.ones([dense_bytes // 4]), name="dense")
                embedding = af.Variable(af.zeros([rows, EMBED_DIM]), name="embedding")
            fetch: dict[str, list[Any]] = {"scalar": [], "dense": [], "sparse": []}
            ids = []
            for i in range(max(counts)):
                with af.device(f"/job:worker/task:{i}"):
                    ids.append(af.placeholder(af.int64, [SPARSE_ROWS], name=f"ids_{i}"))
                    fetch["scalar"].append(af.multiply(scalar.value(), float(i + 1)))
                    fetch["dense"].append(af.reduce_max(af.slice(dense.value(), [0], [8])))
                with af.device("/job:ps/task:0"):  # the gather runs where the embedding lives
                    rows_i = af.gather(embedding, ids[i])
                with af.device(f"/job:worker/task:{i}"):
                    fetch["sparse"].append(af.reduce_sum(rows_i))
        sessions = [af.Session(f"http://{spec['worker'][i]}", graph=g) for i in range(max(counts))]
        loop = asyncio.new_event_loop()
        rng = np.random.default_rng(0)
        try:
            sessions[0].run([scalar.initializer, dense.initializer, embedding.initializer])
            for kind in ("scalar", "dense", "sparse"):
                out[kind] = {}
                for n in counts:
                    def step(kind: str = kind, n: int = n) -> None:
                        feeds = [{ids[i]: rng.integers(0, rows, SPARSE_ROWS)} if kind == "sparse" else None
                                 for i in range(n)]
                        loop.run_until_complete(_together(
                            [sessions[i].arun(fetch[kind][i], feeds[i]) for i in range(n)]))

                    runs, warm = (reps.dense, 2) if kind == "dense" else (reps.null, reps.warmup)
                    out[kind][str(n)] = summary_ms(time_steps(step, runs, warm))
                    print(f"null_model {kind} N={n}: {out[kind][str(n)]['median']:.2f} ms", file=sys.stderr)
        finally:
            for s in sessions:
                s.close()
            loop.close()
    return {"method": "one driver, N client sessions (session i -> worker i), N Session.arun steps gathered "
                      "per step with asyncio: a barrier per step",
            "ps_tasks": 1, "workers": counts, "dense_bytes": dense_bytes, "embedding_bytes": embed_bytes,
            "embedding_shape": [rows, EMBED_DIM], "sparse_rows": SPARSE_ROWS, "statistic": "median step ms",
            "step_ms": out, "paper": PAPER}


# -- (b) sync vs async, asyncflow ---------------------------------------------------------------------------
def sync_vs_async(job: argparse.Namespace, straggler_ms: float) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench_ps_") as tmp:
        path = os.path.join(tmp, "rows.json")
        cmd = [sys.executable, str(SCRIPT), "--json", path, "--plot", "", "--quiet", "--steps", str(job.steps),
               "--batch", str(job.batch), "--workers", str(job.workers), "--backup", str(job.backup),
               "--straggler-ms", str(straggler_ms)]
        subprocess.run(cmd, check=True, stdout=sys.stderr, timeout=1200)
        rows = json.load(open(path))
    for r in rows:
        r["mean_step_ms"] = round(1e3 * r["elapsed_s"] / max(r["global_steps"], 1), 3)
        r["straggler_ms"] = straggler_ms
    return rows


# -- (c) the same job on TF1's runtime -----------------------------------------------------------------------
def tf_worker(args: argparse.Namespace) -> None:
    """One TF1 worker process: its server plus its client (between-graph replication), as TF1 deploys it."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow.compat.v1 as tf
    from train_digits import load_digits

    tf.disable_eager_execution()
    tf.disable_v2_behavior()
    spec = json.loads(args.tf_cluster)
    task, n_workers = args.tf_task, len(spec["worker"])
    is_chief = task == 0
    cluster = tf.train.ClusterSpec(spec)
    config = tf.ConfigProto(device_count={"GPU": 0}, device_filters=["/job:ps", f"/job:worker/task:{task}"])
    server = tf.distribute.Server(cluster, job_name="worker", task_index=task, config=config)
    x_train, y_train, x_test, y_test = load_digits(seed=0)
    tf.set_random_seed(1)
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{task}")):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        labels = tf.placeholder(tf.int64, [None], name="labels")

        def dense(inp: Any, units: int, name: str) -> Any:
            fan_in = int(inp.shape[1])
            with tf.name_scope(name):
                w = tf.Variable(tf.truncated_normal([fan_in, units], stddev=np.sqrt(2.0 / fan_in), seed=7), name="w")
                b = tf.Variable(tf.zeros([units]), name="b")
                return tf.matmul(inp, w) + b

        logits = dense(tf.nn.relu(dense(x, 64, "hidden")), 10, "out")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        opt = tf.train.AdamOptimizer(args.tf_lr)
        hooks = [tf.train.StopAtStepHook(last_step=args.tf_steps)]
        release = None
        if args.tf_aggregate:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=args.tf_aggregate,
                                                 total_num_replicas=n_workers)
            train = opt.minimize(loss, global_step=global_step)
            hooks.append(opt.make_session_run_hook(is_chief))
            release = opt.get_init_tokens_op(num_tokens=n_workers)
        else:
            train = opt.minimize(loss, global_step=global_step)
    sync_dir = Path(args.tf_dir)
    if not is_chief:  # TF1's non-chief polls for readiness every 30 s: join once the chief has initialised
        wait_for(lambda: (sync_dir / "initialized").exists(), 300, "the TF chief")
    rng = np.random.default_rng(100 + task)
    straggle = random.Random(task)
    records, evals, next_eval = 0, [], 0
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks, config=config,
                                           save_checkpoint_secs=None, save_summaries_steps=None,
                                           save_summaries_secs=None, log_step_count_steps=None) as sess:
        if is_chief:
            (sync_dir / "initialized").touch()
        start = time.perf_counter()
        while not sess.should_stop():
            if args.tf_straggler_ms and task == n_workers - 1:
                time.sleep(straggle.uniform(0, args.tf_straggler_ms) / 1000)
            idx = rng.integers(0, len(x_train), args.tf_batch)
            _, step = sess.run([train, global_step], {x: x_train[idx], labels: y_train[idx]})
            records += 1
            if is_chief and step >= next_eval and not sess.should_stop():  # (the last one is after the loop)
                evals.append((time.perf_counter() - start, int(step),
                              float(sess.run(accuracy, {x: x_test, labels: y_test}))))
                next_eval = step + args.tf_eval_every
        elapsed = time.perf_counter() - start
        final = steps = None
        if is_chief:
            raw = sess._tf_sess()  # TF1's MonitoredSession refuses run() once a hook asked to stop
            final = float(raw.run(accuracy, {x: x_test, labels: y_test}))
            steps = int(raw.run(global_step))
            if release is not None:
                raw.run(release)  # lets workers blocked on the token queue see the end
        with open(sync_dir / f"w{task}.json", "w") as f:
            json.dump({"elapsed": elapsed, "evals": evals, "final": final, "steps": steps, "local_steps": records},
                      f)
        # Leave without closing: the chief's sync queue runner blocks on gradients that will never come, and
        # TF1's coordinator would wait its 120 s grace period for it; the server's threads never stop anyway.
        os._exit(0)


_TF_PS = """
import os, sys, json
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
spec = json.loads(sys.argv[1])
tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=0,
                     config=tf.ConfigProto(device_count={"GPU": 0})).join()
"""


def tf_job(job: argparse.Namespace, label: str, aggregate: int, straggler_ms: float) -> dict[str, Any]:
    spec = {"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}" for _ in range(job.workers)]}
    text = json.dumps(spec)
    with tempfile.TemporaryDirectory(prefix="bench_ps_tf_") as tmp, processes([[sys.executable, "-c", _TF_PS, text]]):
        wait_for(lambda: _port_open(spec["ps"][0]), 180, "the TF ps task")
        workers = [subprocess.Popen([sys.executable, __file__, "--tf-worker", "--tf-cluster", text, "--tf-task", str(t),
                                     "--tf-dir", tmp, "--tf-steps", str(job.steps), "--tf-batch", str(job.batch),
                                     "--tf-aggregate", str(aggregate), "--tf-straggler-ms", str(straggler_ms)])
                   for t in range(job.workers)]
        try:
            for w in workers:
                if w.wait(timeout=900) != 0:
                    raise RuntimeError(f"TF1 {label}: a worker failed (exit code {w.returncode})")
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
        results = [json.load(open(os.path.join(tmp, f"w{t}.json"))) for t in range(job.workers)]
    chief = results[0]
    elapsed = max(r["elapsed"] for r in results)
    steps = chief["steps"]
    examples = steps * job.batch * (aggregate or 1)
    reached = next((t for t, _, acc in chief["evals"] if acc >= 0.95), None)
    return {"mode": label, "steps_per_s": steps / elapsed, "examples_per_s": examples / elapsed,
            "time_to_95_s": reached, "final_accuracy": chief["final"], "elapsed_s": elapsed, "global_steps": steps,
            "mean_step_ms": round(1e3 * elapsed / max(steps, 1), 3), "straggler_ms": straggler_ms}


def tf1_runs(job: argparse.Namespace, straggler_ms: float, with_backup: bool) -> list[dict[str, Any]]:
    modes = [("async", 0)]
    if with_backup and job.backup:
        modes.append((f"sync {job.workers - job.backup}+{job.backup} backup", job.workers - job.backup))
    modes.append((f"sync {job.workers}, no backup", job.workers))
    rows = []
    for label, aggregate in modes:
        rows.append(tf_job(job, label, aggregate, straggler_ms))
        print(f"tf1 {label} straggler={straggler_ms:g}: {rows[-1]['examples_per_s']:.0f} examples/s",
              file=sys.stderr)
    return rows


# -- the driver ---------------------------------------------------------------------------------------------
def _compare(af_rows: list[dict], tf_rows: list[dict]) -> list[dict[str, Any]]:
    by_mode = {r["mode"]: r for r in af_rows}
    out = []
    for t in tf_rows:
        a = by_mode.get(t["mode"])
        if a is None:
            continue
        out.append({"mode": t["mode"], "straggler_ms": t["straggler_ms"],
                    "examples_per_s": {"asyncflow": round(a["examples_per_s"], 1),
                                       "tensorflow": round(t["examples_per_s"], 1),
                                       "ratio": round(a["examples_per_s"] / t["examples_per_s"], 3)},
                    "time_to_95_s": {"asyncflow": a["time_to_95_s"], "tensorflow": t["time_to_95_s"]}})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a smoke run: fewer repeats, shorter training")
    size.add_argument("--full", action="store_true", help="the paper's sizes: 16 workers, 100 MB dense, 1 GiB sparse")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even when it is importable")
    parser.add_argument("--straggler-ms", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--out", default="", help="also write the JSON here")
    parser.add_argument("--tf-worker", action="store_true", help=argparse.SUPPRESS)
    for flag, typ, default in (("--tf-cluster", str, ""), ("--tf-task", int, 0), ("--tf-dir", str, ""),
                               ("--tf-steps", int, 400), ("--tf-batch", int, 32), ("--tf-aggregate", int, 0),
                               ("--tf-straggler-ms", float, 0.0), ("--tf-lr", float, 0.01),
                               ("--tf-eval-every", int, 20)):
        parser.add_argument(flag, type=typ, default=default, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_worker:
        tf_worker(args)
        return
    counts = [1, 2, 4, 8, 16] if args.full else [1, 2, 4, 8]
    dense_bytes = 100_000_000 if args.full else 16 << 20
    embed_bytes = 1 << 30 if args.full else 64 << 20
    reps = argparse.Namespace(null=40, dense=5, warmup=5) if args.quick else \
        argparse.Namespace(null=200, dense=15, warmup=20)
    job = argparse.Namespace(workers=3, backup=1, batch=32, steps=100 if args.quick else 400)
    import asyncflow

    try:
        if args.no_tf:
            raise ImportError("--no-tf")
        import tensorflow as tf_module

        tf_version, tf_note = tf_module.__version__, None
    except ImportError as e:
        tf_version, tf_note = None, f"TensorFlow not measured: {e}"
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "bench_ps", "quick": args.quick, "full": args.full,
        "environment": {"python": platform.python_version(), "asyncflow": asyncflow.__version__,
                        "tensorflow": tf_version, "tensorflow_note": tf_note, "cpu_count": os.cpu_count(),
                        "platform": platform.platform()},
        "settings": {"repeats": vars(reps), "job": vars(job), "straggler_ms": args.straggler_ms,
                     "model": "digits MLP 64-64(relu)-10, Adam lr 0.01, 1 ps, worker 0 is chief and evaluates "
                              "test accuracy every 20 global steps"},
    }
    result["null_model"] = null_model(counts, dense_bytes, embed_bytes, reps)
    result["sync_vs_async"] = [r for ms in args.straggler_ms for r in sync_vs_async(job, ms)]
    if tf_version:
        # TF1 with backup only in the straggler runs, where it matters (time is short on 2 cores)
        tf_rows = [r for ms in args.straggler_ms for r in tf1_runs(job, ms, with_backup=ms > 0)]
        result["tf1"] = {"rows": tf_rows, "vs_asyncflow": [c for ms in args.straggler_ms for c in _compare(
            [r for r in result["sync_vs_async"] if r["straggler_ms"] == ms],
            [r for r in tf_rows if r["straggler_ms"] == ms])]}
    else:
        result["tf1"] = None
    result["targets"] = _targets(result)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


def _targets(result: dict[str, Any]) -> dict[str, Any]:
    """Whether the issue's targets hold in this run."""
    out: dict[str, Any] = {}
    if result["tf1"]:
        ratios = [c["examples_per_s"]["ratio"] for c in result["tf1"]["vs_asyncflow"]]
        out["asyncflow_ahead_of_tf1_examples_per_s"] = {"holds": all(r > 1 for r in ratios), "ratios": ratios}
    for ms in sorted({r["straggler_ms"] for r in result["sync_vs_async"] if r["straggler_ms"] > 0}):
        backup = next((r for r in result["sync_vs_async"] if r["straggler_ms"] == ms and "backup" in r["mode"]
                       and "no backup" not in r["mode"]), None)
        plain = next((r for r in result["sync_vs_async"] if r["straggler_ms"] == ms and "no backup" in r["mode"]),
                     None)
        if backup and plain:
            out[f"backup_cuts_step_time_straggler_{ms:g}ms"] = {
                "holds": backup["mean_step_ms"] < plain["mean_step_ms"],
                "sync_backup_mean_step_ms": backup["mean_step_ms"],
                "sync_no_backup_mean_step_ms": plain["mean_step_ms"],
                "ratio": round(backup["mean_step_ms"] / plain["mean_step_ms"], 3)}
    return out


if __name__ == "__main__":
    main()
