"""Executor and kernels at model scale (issue 13): asyncflow beside tf.compat.v1, each with the issue's target.

Prints one JSON object to stdout. Rows (`results`), each measured for asyncflow and, when
`tensorflow` imports (run with /work/tfenv/bin/python), for TF1's compat.v1 runtime in the same
run, with the ratio asyncflow / TF1, the issue's target ratio and whether it is met:

  loop     per-iteration cost of a `while_loop` (counter + a [4] float32 vector update),
           10,000 iterations, default parallel_iterations: median whole-loop time / iterations.
           TF1 with grappler's loop, constant and arithmetic optimisations off
           (bench_control.tensorflow_session_factory).                          target <= 2x
  convnet  one AdamOptimizer(1e-4) step of mnist_deep's net (two 5x5 convs + relu + 2x2 max
           pools, dense 3136->1024 relu, dropout keep_prob fed 0.5, dense 1024->10, softmax
           cross-entropy), batch 50 of fixed random data: median ms per step.   target <= 1.5x
  lstm     a 40-step while_loop over an LSTM-like cell (batch 32, 64 units, x_t gathered on the
           loop counter, gates from one matmul of concat([x_t, h]) with a [128, 256] kernel),
           loss = sum(h_last^2), GradientDescentOptimizer(0.1).minimize: median ms per step.
                                                                                  target <= 1x
  chain    per-op cost of a 1000-add dependent chain, (chain step - null step) / 1000
           (bench_local's figure, with its TF config: rewrites off, L0).         target <= 1x
  memory   one step's peak memory for a fed 256 MiB float32 input through 24 elementwise ops
           (x*1.0001, x+0.5, tanh, ...; the last fetched), each system in its own fresh
           subprocess: peak RSS during the step (VmHWM, reset through /proc/self/clear_refs
           before the step; ru_maxrss where that is not possible) minus RSS just before it
           (session warmed up on a small feed, the 256 MiB feed array made). asyncflow's own
           figure from a FULL_TRACE step's RunMetadata (max `memory[].peak_bytes` over the
           node stats) is reported beside it, or null.                           target <= 1.2x
  queue    single-element enqueue + dequeue throughput, a producer and a consumer step each
           from its own plain thread (bench_queues.elements_per_second, batch 1);
           elements/s, higher is better.                                         target >= 1x

`flat_executor` holds the "no regression" figures of bench_local (null step, wide per-op,
matmul against numpy) from the same run. convnet, lstm, memory and queue use TF1's default
session config (what a TF1 user gets); the TF side of each row is noted in `settings`.
All asyncflow rows run before any TF row (TF's thread pools keep spinning for a while after a
step and would slow what follows). OPENBLAS_NUM_THREADS is set to 1 unless the caller set it.

    python benchmarks/bench_executor.py [--quick] [--no-tf] [--rows loop,convnet,...]
    PYTHONPATH=. /work/tfenv/bin/python benchmarks/bench_executor.py --quick
"""

from __future__ import annotations

import os

# Before numpy is imported: BLAS reads it once. The caller's own setting wins (and is recorded).
_BLAS_ENV_FROM_CALLER = os.environ.get("OPENBLAS_NUM_THREADS")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmarks, imported as modules
import bench_control  # noqa: E402
import bench_local  # noqa: E402
import bench_queues  # noqa: E402

ROWS = ("loop", "convnet", "lstm", "chain", "memory", "queue", "flat")  # flat: bench_local's figures
# row -> (comparison, target ratio asyncflow / TF1, unit); "ge" rows are throughputs (higher is better)
TARGETS: dict[str, tuple[str, float, str]] = {
    "loop": ("le", 2.0, "us per iteration"),
    "convnet": ("le", 1.5, "ms per step"),
    "lstm": ("le", 1.0, "ms per step"),
    "chain": ("le", 1.0, "us per op"),
    "memory": ("le", 1.2, "MiB above the pre-step RSS"),
    "queue": ("ge", 1.0, "elements per second"),
}
MEMORY_ELEMENTS = 64 * 1024 * 1024  # 256 MiB of float32
MEMORY_OPS = 24
MIB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    loop_iterations: int
    loop_repeats: int
    model_steps: int  # timed steps of convnet / lstm (median)
    model_warmup: int
    queue_steps: int
    queue_repeats: int


FULL = Settings(loop_iterations=10_000, loop_repeats=5, model_steps=30, model_warmup=5, queue_steps=2000,
                queue_repeats=5)
QUICK = Settings(loop_iterations=10_000, loop_repeats=2, model_steps=5, model_warmup=2, queue_steps=300,
                 queue_repeats=2)


def median_and_best(times_ns: list[int], scale: float) -> tuple[float, float]:
    """(median, fastest) of `times_ns` divided by `scale`: the fastest is the figure least touched by the
    other work on a shared machine, reported beside the median."""
    return statistics.median(times_ns) / scale, min(times_ns) / scale


# -- the graphs, written once against a tf.compat.v1-like module (asyncflow or TensorFlow) -------------------
def loop_per_iteration_us(tf: Any, make_session: Any, s: Settings) -> tuple[float, float]:
    graph = tf.Graph()
    with graph.as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        out = tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v + 1.0),
                            [tf.constant(0), tf.zeros([4], tf.float32)])
        sess = make_session(graph)
        try:
            i, v = sess.run(out, {n: s.loop_iterations})
            if int(i) != s.loop_iterations or float(v[0]) != float(s.loop_iterations):
                raise AssertionError(f"loop ran to {i}, {v}; expected {s.loop_iterations}")
            times = bench_local.time_steps(lambda: sess.run(out, {n: s.loop_iterations}), s.loop_repeats, 0)
            return median_and_best(times, 1e3 * s.loop_iterations)
        finally:
            sess.close()


def convnet_graph(tf: Any) -> tuple[Any, dict[Any, Any]]:
    """mnist_deep.py's `deepnn` + Adam train step, as the classic tutorial writes it; (train op, feed)."""
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)

    def weight(shape: list[int]) -> Any:
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias(shape: list[int]) -> Any:
        return tf.Variable(tf.constant(0.1, shape=shape))

    def conv_pool(h: Any, shape: list[int]) -> Any:
        h = tf.nn.relu(tf.nn.conv2d(h, weight(shape), strides=[1, 1, 1, 1], padding="SAME") + bias(shape[-1:]))
        return tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    h = conv_pool(tf.reshape(x, [-1, 28, 28, 1]), [5, 5, 1, 32])
    h = conv_pool(h, [5, 5, 32, 64])
    h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 7 * 7 * 64]), weight([7 * 7 * 64, 1024])) + bias([1024]))
    h = tf.nn.dropout(h, keep_prob)
    logits = tf.matmul(h, weight([1024, 10])) + bias([10])
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    train = tf.train.AdamOptimizer(1e-4).minimize(loss)
    rng = np.random.default_rng(0)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 50)]
    return train, {x: rng.random((50, 784), dtype=np.float32), y_: labels, keep_prob: 0.5}


LSTM_STEPS, LSTM_BATCH, LSTM_UNITS = 40, 32, 64


def lstm_graph(tf: Any) -> tuple[Any, dict[Any, Any]]:
    inputs = tf.placeholder(tf.float32, [LSTM_STEPS, LSTM_BATCH, LSTM_UNITS])
    kernel = tf.Variable(tf.truncated_normal([2 * LSTM_UNITS, 4 * LSTM_UNITS], stddev=0.1))
    bias = tf.Variable(tf.zeros([4 * LSTM_UNITS]))

    def cell(t: Any, c: Any, h: Any) -> tuple[Any, Any, Any]:
        gates = tf.matmul(tf.concat([tf.gather(inputs, t), h], 1), kernel) + bias
        i, j, f, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(j)
        return t + 1, c, tf.sigmoid(o) * tf.tanh(c)

    zeros = tf.zeros([LSTM_BATCH, LSTM_UNITS])
    _, _, h = tf.while_loop(lambda t, c, h: t < LSTM_STEPS, cell, [tf.constant(0), zeros, zeros])
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(tf.square(h)))
    rng = np.random.default_rng(0)
    return train, {inputs: 0.1 * rng.standard_normal((LSTM_STEPS, LSTM_BATCH, LSTM_UNITS), dtype=np.float32)}


def model_step_ms(tf: Any, make_session: Any, build: Callable[[Any], Any], s: Settings) -> tuple[float, float]:
    graph = tf.Graph()
    with graph.as_default():
        train, feed = build(tf)
        init = tf.global_variables_initializer()
        sess = make_session(graph)
        try:
            sess.run(init)
            return median_and_best(bench_local.time_steps(lambda: sess.run(train, feed), s.model_steps,
                                                          s.model_warmup), 1e6)
        finally:
            sess.close()


def queue_elements_per_s(tf: Any, make_session: Any, s: Settings) -> float:
    return bench_queues.elements_per_second(tf, make_session, 1, 16, 1024, s.queue_steps, s.queue_repeats)


# -- memory: one fresh process per system -------------------------------------------------------------------
def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(system: str) -> dict[str, Any]:
    """Runs in its own process: peak RSS of one step over the 256 MiB feed, minus the RSS before it."""
    if system == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        make_session = lambda g: tf.Session(graph=g)
    else:
        import asyncflow as tf

        make_session = lambda g: tf.Session(graph=g)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = x
        for i in range(MEMORY_OPS):
            y = (lambda v: v * 1.0001, lambda v: v + 0.5, tf.tanh)[i % 3](y)
        sess = make_session(graph)
        sess.run(y, {x: np.ones(1024, np.float32)})  # plans, thread pools, grappler: not the step's memory
        feed = np.full(MEMORY_ELEMENTS, 0.5, np.float32)
        gc.collect()
        hwm_reset = _reset_peak()
        before_kib = _status_kib("VmRSS")
        maxrss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = sess.run(y, {x: feed})
        peak_kib = _status_kib("VmHWM") if hwm_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if out.shape != feed.shape or not np.isfinite(out[:10]).all():
            raise AssertionError("the memory step computed the wrong thing")
        del out
        report: dict[str, Any] = {
            "peak_above_before_mib": (peak_kib - before_kib) / 1024 if peak_kib and before_kib else None,
            "rss_before_mib": before_kib / 1024 if before_kib else None,
            "peak_rss_mib": peak_kib / 1024 if peak_kib else None,
            "method": "VmHWM after clear_refs" if hwm_reset else "ru_maxrss",
            "ru_maxrss_before_mib": maxrss_before_kib / 1024,
        }
        if system == "asyncflow":
            report["run_metadata_peak_mib"] = _traced_peak_mib(tf, sess, y, {x: feed})
        sess.close()
    return report


def _traced_peak_mib(af: Any, sess: Any, y: Any, feed: dict[Any, Any]) -> float | None:
    """The step's peak bytes as asyncflow's FULL_TRACE RunMetadata reports them (None if it carries none)."""
    meta = af.RunMetadata()
    sess.run(y, feed, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=meta)
    peaks = [getattr(m, "peak_bytes", 0) for d in meta.step_stats.dev_stats for n in d.node_stats
             for m in getattr(n, "memory", ())]
    return max(peaks) / MIB if peaks and max(peaks) > 0 else None


def memory_figures(systems: list[str]) -> dict[str, dict[str, Any] | None]:
    """Each system's memory_child in a fresh interpreter (this one), importing this checkout's asyncflow."""
    repo = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p))
    out: dict[str, dict[str, Any] | None] = {}
    for system in systems:
        proc = subprocess.run([sys.executable, __file__, "--memory-child", system], env=env, capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            out[system] = {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
        else:
            out[system] = json.loads(proc.stdout)
    return out


# -- the two systems -------------------------------------------------------------------------------------
def figures(tf: Any, sessions: dict[str, Any], rows: list[str], s: Settings,
            local_figures: Callable[[], Any]) -> dict[str, Any]:
    """Every selected row but memory for one system; a row it cannot build is None, with the reason."""
    out: dict[str, Any] = {"errors": {}}
    plans: dict[str, Callable[[], Any]] = {
        "loop": lambda: loop_per_iteration_us(tf, sessions["loop"], s),
        "convnet": lambda: model_step_ms(tf, sessions["default"], convnet_graph, s),
        "lstm": lambda: model_step_ms(tf, sessions["default"], lstm_graph, s),
        "queue": lambda: queue_elements_per_s(tf, sessions["default"], s),
        "flat": local_figures,
    }
    wanted = [r for r in rows if r in plans and r != "flat"]
    if "flat" in rows or "chain" in rows:  # the chain row is one of bench_local's figures
        wanted.append("flat")
    for row in wanted:
        try:
            got = plans[row]()
            if isinstance(got, tuple):  # (median, fastest)
                out[row], out[f"{row}_best"] = got
            else:
                out[row] = got
        except Exception as e:  # noqa: BLE001 - a missing op or a failing kernel is a figure we report, not a crash
            out[row] = None
            out["errors"][row] = f"{type(e).__name__}: {str(e)[:300]}"
    return out


def asyncflow_side(rows: list[str], s: Settings, local_reps: Any) -> tuple[dict[str, Any], str]:
    import asyncflow as af

    make = lambda g: af.Session(graph=g)
    local = lambda: bench_local.asyncflow_figures(local_reps)[0]
    return figures(af, {"loop": make, "default": make}, rows, s, local), af.__version__


def tensorflow_side(rows: list[str], s: Settings, local_reps: Any) -> tuple[dict[str, Any] | None, str | None]:
    factory = bench_control.tensorflow_session_factory()  # disables v2 behaviour; grappler's loop opts off
    if factory is None:
        return None, None
    tf, loop_session, version = factory
    tf.logging.set_verbosity(tf.logging.ERROR)
    default = lambda g: tf.Session(graph=g)
    local = lambda: bench_local.tensorflow_figures(local_reps)[0]
    return figures(tf, {"loop": loop_session, "default": default}, rows, s, local), version


def row_result(row: str, mine: float | None, theirs: float | None) -> dict[str, Any]:
    comparison, target, unit = TARGETS[row]
    ratio = mine / theirs if mine is not None and theirs else None
    met = None if ratio is None else (ratio <= target if comparison == "le" else ratio >= target)
    return {"asyncflow": mine, "tensorflow": theirs, "ratio": ratio, "unit": unit,
            "target": f"{'<=' if comparison == 'le' else '>='} {target}x", "met": met}


def flat_section(af_flat: dict[str, Any] | None, tf_flat: dict[str, Any] | None) -> dict[str, Any] | None:
    """bench_local's no-regression figures, shaped as bench_local reports them."""
    if af_flat is None:
        return None
    af_flat, tf_flat = dict(af_flat), dict(tf_flat) if tf_flat else None
    af_numpy = af_flat.pop("numpy_matmul_1024_ms", None)
    tf_numpy = tf_flat.pop("numpy_matmul_1024_ms", None) if tf_flat else None
    out = bench_local.ratios(af_flat, tf_flat)
    mm = out.get("matmul_1024_ms")
    if mm is not None:
        mm["numpy_beside_asyncflow"] = af_numpy
        mm["numpy_beside_tensorflow"] = tf_numpy
        mm["asyncflow_over_numpy"] = mm["asyncflow"] / af_numpy if mm["asyncflow"] and af_numpy else None
        mm["tensorflow_over_numpy"] = mm["tensorflow"] / tf_numpy if mm["tensorflow"] and tf_numpy else None
    return out


def git_state() -> dict[str, Any]:
    """The commit this run measured and the files changed beside it (other work in the tree)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "asyncflow")
    return {"commit": git("rev-parse", "HEAD"), "subject": git("log", "-1", "--format=%s"),
            "modified_asyncflow_files": dirty.splitlines() if dirty else []}


def blas_state() -> Any:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not importable"
    return [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "version")} for p in threadpool_info()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run, noisier figures)")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even when it is importable")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    parser.add_argument("--memory-child", choices=("asyncflow", "tensorflow"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        report = memory_child(args.memory_child)
        print(json.dumps(report))
        return report
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"--rows: unknown rows {unknown}; expected some of {list(ROWS)}")
    s = QUICK if args.quick else FULL
    local_reps = bench_local.QUICK if args.quick else bench_local.FULL
    started = time.time()
    load_at_start = os.getloadavg()  # a shared machine: the figures are only as steady as its load
    git = git_state()

    tf_wanted = not args.no_tf
    memory = memory_figures(["asyncflow", "tensorflow"] if tf_wanted else ["asyncflow"]) if "memory" in rows else {}
    af_figs, af_version = asyncflow_side(rows, s, local_reps)
    blas_during_asyncflow = blas_state()
    tf_figs, tf_version = tensorflow_side(rows, s, local_reps) if tf_wanted else (None, None)
    tf_note = "skipped (--no-tf)" if args.no_tf else (None if tf_figs is not None else "tensorflow is not importable")
    if tf_figs is None and memory.get("tensorflow", {}) and "error" in memory["tensorflow"]:
        memory["tensorflow"] = None

    af_flat, tf_flat = af_figs.get("flat"), (tf_figs or {}).get("flat")
    results: dict[str, Any] = {}
    for row in (r for r in rows if r != "flat"):
        if row == "memory":
            mine, theirs = memory.get("asyncflow"), memory.get("tensorflow")
            key = "peak_above_before_mib"
            res = row_result(row, (mine or {}).get(key), (theirs or {}).get(key))
            res["asyncflow_run_metadata_peak_mib"] = (mine or {}).get("run_metadata_peak_mib")
            res["detail"] = memory
        elif row == "chain":
            res = row_result(row, (af_flat or {}).get("chain_per_op_us"), (tf_flat or {}).get("chain_per_op_us"))
        else:
            res = row_result(row, af_figs.get(row), (tf_figs or {}).get(row))
            if f"{row}_best" in af_figs:
                mine, theirs = af_figs[f"{row}_best"], (tf_figs or {}).get(f"{row}_best")
                res["fastest"] = {"asyncflow": mine, "tensorflow": theirs, "ratio": mine / theirs if theirs else None}
        results[row] = res
    report = {
        "benchmark": "bench_executor",
        "quick": args.quick,
        "git": git,
        "environment": {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "numpy": np.__version__,
            "asyncflow": af_version,
            "tensorflow": tf_version,
            "tensorflow_note": tf_note,
            "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(),
            "machine": platform.machine(),
            "thread_env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                          "MKL_NUM_THREADS")},
            "openblas_num_threads_set_by": "caller" if _BLAS_ENV_FROM_CALLER is not None else "bench_executor (1)",
            "blas_threadpools": blas_during_asyncflow,
            "load_average_1_5_15min": {"start": load_at_start, "end": os.getloadavg()},
        },
        "settings": {
            **asdict(s), "rows": rows, "bench_local_repeats": local_reps.__dict__,
            "memory": {"elements": MEMORY_ELEMENTS, "dtype": "float32", "ops": MEMORY_OPS},
            "statistic": "median (loop, convnet, lstm also the fastest run: `fastest`)",
            "timer": "time.perf_counter_ns", "gc": "disabled while timing",
            "tensorflow_config": {
                "loop": "graph mode, OptimizerOptions L0, grappler loop/constant/arithmetic optimisation off",
                "chain and flat_executor": "bench_local: L0, constant_folding/arithmetic/dependency off",
                "convnet, lstm, memory, queue": "default tf.Session config",
            },
        },
        "results": results,
        "flat_executor": flat_section(af_flat, tf_flat),
        "errors": {k: v for k, v in (("asyncflow", af_figs["errors"]), ("tensorflow", (tf_figs or {}).get("errors")))
                   if v},
        "wall_s": round(time.time() - started, 1),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return report


if __name__ == "__main__":
    main()
