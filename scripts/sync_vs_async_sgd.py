"""Synchronous SGD (with and without backup workers) against asynchronous SGD, on a real cluster.

    python scripts/sync_vs_async_sgd.py [--ps 1] [--workers 3] [--backup 1] [--steps 400] [--batch 32]
                                        [--straggler-ms 0] [--compression none|float16|bfloat16]
                                        [--target http://host:port --cluster SPEC] [--plot sync_vs_async.png]
                                        [--logdir DIR]

With no arguments it starts a cluster on this machine (`asyncflow local`: one master, 1 PS, 3
workers), and trains the same MLP on scikit-learn's bundled digits three times, each on a fresh
cluster: asynchronously (every worker applies its own gradients as soon as they are ready),
synchronously with 2 of 3 gradients aggregated per step (one backup worker: the slowest
gradient of each step is dropped), and synchronously with all 3. Each worker is its own process
and its own client (between-graph replication with `replica_device_setter`); worker 0 is the
chief: it initialises the PS variables, runs the sync queue runner, and measures test accuracy.
It prints a table (steps/s, examples/s, time to 95% test accuracy, final accuracy, gradients
dropped) and writes a plot of loss and accuracy against wall time. `--straggler-ms N` makes the
last worker sleep a random 0..N ms before each step, which is what backup workers are for.
`--logdir DIR` has each mode's chief write TensorBoard summaries to `DIR/<mode>` (training loss,
test accuracy and examples/s against the global step, and the graph): `tensorboard --logdir DIR`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from train_digits import load_digits, progress  # noqa: E402 - the digits split and progress bar

TARGET_ACCURACY = 0.95
TRACE_STEP = 20  # with --trace, the chief traces its 21st step (past the first steps' warm-up)


@dataclass
class Mode:
    label: str
    sync: bool
    aggregate: int  # gradients per update (sync), or 1 (async)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the cluster --------------------------------------------------------------------------------------
class LocalCluster:
    """`asyncflow local` as a child process; stopped (and waited for) on exit.

    Its ports are picked free just before the tasks bind them, so on a busy machine another process
    can take one in between and a task fails to start: the cluster is then started again on new
    ports (up to `attempts` times)."""

    def __init__(self, ps: int, workers: int, attempts: int = 3):
        for attempt in range(attempts):
            try:
                self._start(ps, workers)
                return
            except RuntimeError as e:
                self.stop()
                if attempt == attempts - 1:
                    raise
                print(f"{e}; starting it again", file=sys.stderr)

    def _start(self, ps: int, workers: int) -> None:
        port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "asyncflow.cli", "local", "--ps", str(ps), "--workers", str(workers),
             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.target, self.cluster = "", None
        deadline = time.monotonic() + 60
        ready = 0
        lines: list[str] = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                tail = "".join(lines[-5:])
                raise RuntimeError(f"asyncflow local exited early (code {self.proc.wait(timeout=10)}):\n{tail}")
            lines.append(line)
            if line.startswith("target:"):
                self.target = line.split(":", 1)[1].strip()
            elif line.startswith("cluster:"):
                self.cluster = json.loads(line.split(":", 1)[1])
            elif "ready job=" in line:
                ready += 1
            # `target:` comes once the master answers, after every ready line.
            if self.target and ready == ps + workers + 1:  # from now on its output is only drained
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()
                return
        raise RuntimeError("the local cluster did not become ready within 60 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- one worker (its own process) ------------------------------------------------------------------------
def run_worker(args: argparse.Namespace) -> int:
    import asyncflow as tf

    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    n_workers = len(cluster.job_tasks("worker"))
    is_chief = args.task == 0
    x_train, y_train, x_test, y_test = load_digits(seed=0)
    tf.set_random_seed(1)
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{args.task}")):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        hidden = tf.nn.relu(_dense(x, 64, "hidden"))
        logits = _dense(hidden, 10, "out")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        opt = tf.train.AdamOptimizer(args.lr)
        hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
        release = dropped = None
        if args.aggregate and args.sync:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=args.aggregate,
                                                 total_num_replicas=n_workers)
            train = opt.minimize(loss, global_step=global_step)
            hooks.append(opt.make_session_run_hook(is_chief))
            dropped = opt.dropped_gradients
            release = opt.get_init_tokens_op(num_tokens=n_workers)  # lets blocked workers see the end
        else:
            train = opt.minimize(loss, global_step=global_step)
    config = tf.ConfigProto(compression=None if args.compression == "none" else args.compression)
    rng = np.random.default_rng(100 + args.task)
    straggle = random.Random(args.task)
    records: list[tuple[float, int, float]] = []
    evals: list[tuple[float, int, float]] = []
    next_eval = 0
    logdir = args.logdir if is_chief else ""  # the chief writes the mode's summaries; nothing is added without it
    if logdir:
        tf.summary.scalar("loss", loss)
    with tf.train.MonitoredTrainingSession(master=args.target, is_chief=is_chief, hooks=hooks, config=config,
                                           log_step_count_steps=0, save_checkpoint_secs=None,
                                           summary_dir=logdir or None, save_summaries_steps=args.eval_every) as sess:
        writer = tf.summary.FileWriterCache.get(logdir) if logdir else None  # the summary hook's writer
        start = time.perf_counter()
        while not sess.should_stop():
            if args.straggler_ms and args.task == n_workers - 1:
                time.sleep(straggle.uniform(0, args.straggler_ms) / 1000)
            idx = rng.integers(0, len(x_train), args.batch)
            traced = args.trace and is_chief and len(records) == TRACE_STEP  # one warm step, traced
            options, meta = (tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()) if traced \
                else (None, None)
            loss_value, _, step = sess.run([loss, train, global_step], {x: x_train[idx], labels: y_train[idx]},
                                           options=options, run_metadata=meta)
            if traced:
                write_trace(meta, args.trace)
            records.append((time.perf_counter() - start, int(step), float(loss_value)))
            if is_chief and step >= next_eval:
                acc = float(sess.run(accuracy, {x: x_test, labels: y_test}))
                evals.append((time.perf_counter() - start, int(step), acc))
                if writer is not None:
                    rate = int(step) * args.batch * max(args.aggregate, 1) / evals[-1][0]
                    writer.add_summary(tf.summary.Summary(value=[
                        tf.summary.Summary.Value(tag="test_accuracy", simple_value=acc),
                        tf.summary.Summary.Value(tag="examples_per_sec", simple_value=rate)]), int(step))
                print(f"progress {int(step)} {args.steps} {acc:.4f}", flush=True)
                next_eval = step + args.eval_every
        elapsed = time.perf_counter() - start
        final = float(sess.run(accuracy, {x: x_test, labels: y_test})) if is_chief else None
        n_dropped = int(sess.run(dropped)) if dropped is not None else 0
        if is_chief:
            evals.append((elapsed, int(sess.run(global_step)), final))
            if release is not None:
                sess.run(release)
    with open(args.out, "w") as f:
        json.dump({"task": args.task, "records": records, "evals": evals, "elapsed": elapsed, "final": final,
                   "dropped": n_dropped}, f)
    return 0


def write_trace(meta: Any, path: str) -> None:
    """A traced step's Chrome trace (chrome://tracing, ui.perfetto.dev; scripts/plot_trace.py draws it)."""
    from asyncflow.python.client import timeline

    with open(path, "w") as f:
        f.write(timeline.Timeline(meta.step_stats).generate_chrome_trace_format())


def _dense(x: Any, units: int, name: str) -> Any:
    import asyncflow as tf

    fan_in = int(x.shape[1])
    with tf.name_scope(name):
        w = tf.Variable(tf.truncated_normal([fan_in, units], stddev=np.sqrt(2.0 / fan_in), seed=7), name="w")
        b = tf.Variable(tf.zeros([units]), name="b")
        return tf.matmul(x, w) + b


# -- the driver ---------------------------------------------------------------------------------------------
def run_mode(mode: Mode, args: argparse.Namespace, target: str, cluster: dict) -> dict:
    out_dir = tempfile.mkdtemp(prefix="sync_vs_async_")
    procs = []
    for task in range(len(cluster["worker"])):
        cmd = [sys.executable, os.path.abspath(__file__), "--role", "worker", "--task", str(task),
               "--target", f"http://{cluster['worker'][task]}", "--cluster", json.dumps(cluster),
               "--steps", str(args.steps), "--batch", str(args.batch), "--lr", str(args.lr),
               "--straggler-ms", str(args.straggler_ms), "--compression", args.compression,
               "--eval-every", str(args.eval_every), "--out", os.path.join(out_dir, f"w{task}.json")]
        if mode.sync:
            cmd += ["--sync", "--aggregate", str(mode.aggregate)]
            if task == 0 and args.trace:
                cmd += ["--trace", args.trace]
        if task == 0 and args.logdir:
            cmd += ["--logdir", os.path.join(args.logdir, _run_name(mode.label))]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE if task == 0 else subprocess.DEVNULL,
                                      text=True))
    bar = progress(iter(()), total=args.steps, desc=mode.label, disable=args.quiet)
    shown = 0
    for line in procs[0].stdout:
        if line.startswith("progress "):
            _, step, total, acc = line.split()
            shown = _advance(bar, shown, int(step), float(acc))
    for p in procs:
        if p.wait(timeout=600) != 0:
            raise RuntimeError(f"{mode.label}: a worker failed (exit code {p.returncode})")
    _close(bar)
    results = [json.load(open(os.path.join(out_dir, f"w{t}.json"))) for t in range(len(procs))]
    return summarise(mode, args, results)


def _run_name(label: str) -> str:
    """A mode's TensorBoard run directory: `sync 2+1 backup` -> `sync_2+1_backup`."""
    return "_".join(label.replace(",", "").split())


def _advance(bar: Any, shown: int, step: int, acc: float) -> int:
    if hasattr(bar, "update"):
        bar.update(max(0, step - shown))
        bar.set_postfix_str(f"test acc {acc:.3f}")
    return max(shown, step)


def _close(bar: Any) -> None:
    if hasattr(bar, "close"):
        bar.close()


def summarise(mode: Mode, args: argparse.Namespace, results: list[dict]) -> dict:
    chief = results[0]
    elapsed = max(r["elapsed"] for r in results)
    steps = chief["evals"][-1][1]  # the global step the chief read after the loop
    examples = steps * args.batch * mode.aggregate
    reached = next((t for t, _, acc in chief["evals"] if acc >= TARGET_ACCURACY), None)
    losses = sorted((t, loss) for r in results for t, _, loss in r["records"])
    return {
        "mode": mode.label, "steps_per_s": steps / elapsed, "examples_per_s": examples / elapsed,
        "time_to_95_s": reached, "final_accuracy": chief["final"], "gradients_dropped": chief["dropped"],
        "elapsed_s": elapsed, "global_steps": steps,
        "curve": {"loss": losses, "accuracy": [(t, acc) for t, _, acc in chief["evals"]]},
    }


def print_table(rows: list[dict]) -> None:
    head = f"{'mode':<28}{'steps/s':>9}{'examples/s':>12}{'time to 95%':>13}{'final acc':>11}{'dropped':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        to95 = f"{r['time_to_95_s']:.2f} s" if r["time_to_95_s"] is not None else "not reached"
        print(f"{r['mode']:<28}{r['steps_per_s']:>9.1f}{r['examples_per_s']:>12.0f}{to95:>13}"
              f"{r['final_accuracy']:>11.4f}{r['gradients_dropped']:>9d}")


def plot(rows: list[dict], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[examples]')", file=sys.stderr)
        return False
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    for r in rows:
        t, loss = zip(*r["curve"]["loss"]) if r["curve"]["loss"] else ((), ())
        window = max(1, len(loss) // 40)
        smooth = np.convolve(loss, np.ones(window) / window, mode="valid") if loss else []
        ax_loss.plot(t[window - 1:], smooth, label=r["mode"])
        ta, acc = zip(*r["curve"]["accuracy"]) if r["curve"]["accuracy"] else ((), ())
        ax_acc.plot(ta, acc, marker=".", label=r["mode"])
    ax_loss.set(xlabel="wall time (s)", ylabel="training loss (moving mean)", yscale="log")
    ax_acc.set(xlabel="wall time (s)", ylabel="test accuracy", ylim=(0.5, 1.0))
    ax_acc.axhline(TARGET_ACCURACY, color="grey", linestyle=":", linewidth=1)
    for ax in (ax_loss, ax_acc):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ps", type=int, default=1)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--backup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--straggler-ms", type=float, default=0.0)
    parser.add_argument("--compression", choices=["none", "float16", "bfloat16"], default="none")
    parser.add_argument("--target", default="", help="an existing cluster's master (with --cluster)")
    parser.add_argument("--cluster", default="", help="the existing cluster's spec (JSON), with --target")
    parser.add_argument("--plot", default="sync_vs_async.png")
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--json", default="", help="also write the table's rows to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--trace", default="", help="write a Chrome trace of one synchronous step to this file")
    parser.add_argument("--logdir", default="", help="TensorBoard summaries, one run per mode under this directory")
    parser.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--sync", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--aggregate", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "worker":
        return run_worker(args)
    if args.backup < 0 or args.backup >= args.workers:
        parser.error("--backup must be at least 0 and less than --workers")
    modes = [Mode("async", False, 1),
             Mode(f"sync {args.workers - args.backup}+{args.backup} backup", True, args.workers - args.backup),
             Mode(f"sync {args.workers}, no backup", True, args.workers)]
    if args.backup == 0:
        modes.pop(1)
    rows = []
    started = time.perf_counter()
    for mode in modes:
        if args.target:
            if not args.cluster:
                parser.error("--target needs --cluster (the spec the cluster was started with)")
            import asyncflow as tf

            tf.Session.reset(args.target)  # a fresh start for each mode: the PS variables and queues go
            rows.append(run_mode(mode, args, args.target, json.loads(args.cluster)))
        else:
            with LocalCluster(args.ps, args.workers) as cluster:  # a fresh cluster per mode
                rows.append(run_mode(mode, args, cluster.target, cluster.cluster))
        if mode.sync and args.trace:  # the first synchronous mode's chief wrote it
            print(f"trace: {args.trace} (python scripts/plot_trace.py {args.trace} draws it)")
            args.trace = ""
    print()
    print_table(rows)
    print(f"\n{len(modes)} runs of {args.steps} global steps in {time.perf_counter() - started:.1f} s "
          f"({args.workers} workers, {args.ps} PS, batch {args.batch}, straggler {args.straggler_ms:g} ms)")
    if args.plot and plot(rows, args.plot):
        print(f"plot: {args.plot}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "curve"} for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
