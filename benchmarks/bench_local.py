"""Local step overheads: asyncflow's in-process Session against tf.compat.v1 and numpy.

Prints one JSON object to stdout. Figures (medians over repeated steps, after warm-up, with the
garbage collector off while timing):

  null_step_us        one float32 scalar placeholder plus one add of a constant: feed, run, fetch
  null_step_callable_us   the same through `Session.make_callable` (the precompiled path)
  chain_per_op_us     (step of a 1000-add dependent chain - null step) / 1000
  wide_per_op_us      (step of 1000 independent adds run through one NoOp target - null step) / 1000
  wide_add_n_per_op_us    the same 1000 adds fetched through one add_n
  matmul_1024_ms      a fed 1024x1024 float32 matmul, fetched; numpy's own `a @ b` timed in
                      alternation with it (numpy_beside_*), and the ratio to it

Each figure has "asyncflow", "tensorflow" (null when TensorFlow is not importable or --no-tf) and
"ratio" (asyncflow / tensorflow). TensorFlow runs in graph mode with graph optimisations off
(grappler's constant folding, arithmetic and dependency optimisation off, OptimizerOptions.L0),
so nothing is folded or pruned away and both systems run the same nodes.

    python benchmarks/bench_local.py [--quick] [--no-tf]
    PYTHONPATH=/work/main /work/tfenv/bin/python benchmarks/bench_local.py --quick
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

N_OPS = 1000
MATMUL_N = 1024


@dataclass(frozen=True)
class Repeats:
    """How many timed steps each figure takes the median of (after `warmup` untimed ones)."""

    null: int
    graph: int
    matmul: int
    warmup: int


FULL = Repeats(null=2000, graph=200, matmul=30, warmup=50)
QUICK = Repeats(null=300, graph=30, matmul=8, warmup=10)


def time_steps(fn: Callable[[], Any], runs: int, warmup: int) -> list[int]:
    """Nanoseconds of each of `runs` calls of `fn`, after `warmup` calls; gc is off while timing."""
    for _ in range(warmup):
        fn()
    times = []
    gc.collect()
    gc.disable()
    try:
        clock = time.perf_counter_ns
        for _ in range(runs):
            t0 = clock()
            fn()
            times.append(clock() - t0)
    finally:
        gc.enable()
    return times


def median_us(times: list[int]) -> float:
    return statistics.median(times) / 1e3


# -- the graphs, written once against a tf.compat.v1-like module (asyncflow or TensorFlow) -------------------
def null_graph(tf: Any) -> tuple[Any, Any]:
    x = tf.placeholder(tf.float32, [], name="x")
    return x, tf.add(x, tf.constant(1.0))


def chain_graph(tf: Any) -> tuple[Any, Any]:
    x = tf.placeholder(tf.float32, [], name="x")
    one = tf.constant(1.0, name="one")  # one shared constant: the chain is exactly N_OPS adds
    y = x
    for _ in range(N_OPS):
        y = tf.add(y, one)
    return x, y


def wide_adds(tf: Any) -> tuple[Any, list[Any]]:
    x = tf.placeholder(tf.float32, [], name="x")
    one = tf.constant(1.0, name="one")
    return x, [tf.add(x, one) for _ in range(N_OPS)]


def wide_group_graph(tf: Any) -> tuple[Any, Any]:
    x, adds = wide_adds(tf)
    return x, tf.group(*adds)


def wide_add_n_graph(tf: Any) -> tuple[Any, Any]:
    x, adds = wide_adds(tf)
    return x, tf.add_n(adds)


def matmul_graph(tf: Any) -> tuple[tuple[Any, Any], Any]:
    a = tf.placeholder(tf.float32, [MATMUL_N, MATMUL_N], name="a")
    b = tf.placeholder(tf.float32, [MATMUL_N, MATMUL_N], name="b")
    return (a, b), tf.matmul(a, b)


def measure(tf: Any, make_session: Callable[[Any], Any], reps: Repeats) -> dict[str, Any]:
    """Every figure for one system; a figure whose ops the system lacks is None (with the reason)."""
    scalar = np.float32(1.0)
    out: dict[str, Any] = {}
    missing: dict[str, str] = {}

    def step_us(build: Callable[[Any], Any], runs: int, callable_path: bool = False) -> float | None:
        graph = tf.Graph()
        with graph.as_default():
            try:
                x, fetch = build(tf)
            except AttributeError as e:  # an op this version does not have yet
                missing[build.__name__] = str(e)
                return None
            sess = make_session(graph)
            try:
                if callable_path:
                    call = sess.make_callable(fetch, [x])
                    fn = lambda: call(scalar)
                else:
                    feed = {x: scalar}
                    fn = lambda: sess.run(fetch, feed)
                return median_us(time_steps(fn, runs, reps.warmup))
            finally:
                sess.close()

    null = step_us(null_graph, reps.null)
    out["null_step_us"] = null
    out["null_step_callable_us"] = step_us(null_graph, reps.null, callable_path=True)
    for key, build in (("chain", chain_graph), ("wide", wide_group_graph), ("wide_add_n", wide_add_n_graph)):
        step = step_us(build, reps.graph)
        out[f"{key}_step_us"] = step
        out[f"{key}_per_op_us"] = None if step is None or null is None else (step - null) / N_OPS
    out["matmul_1024_ms"] = matmul_ms(tf, make_session, reps, missing)
    out["numpy_matmul_1024_ms"] = missing.pop("_numpy_matmul_ms", None)
    if missing:
        out["missing"] = missing
    return out


def matmul_ms(tf: Any, make_session: Callable[[Any], Any], reps: Repeats, missing: dict[str, str]) -> float | None:
    rng = np.random.default_rng(0)
    a_val = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    b_val = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    graph = tf.Graph()
    with graph.as_default():
        try:
            (a, b), c = matmul_graph(tf)
        except AttributeError as e:
            missing["matmul_graph"] = str(e)
            return None
        sess = make_session(graph)
        try:
            feed = {a: a_val, b: b_val}
            got = sess.run(c, feed)
            np.testing.assert_allclose(got, a_val @ b_val, rtol=1e-3, atol=1e-2)  # measuring the right thing
            # Alternate the session's step with numpy's own product, so both see the same machine state
            # (BLAS threads, clock speed, the other process's load): the ratio is what matters.
            system, numpy_own = [], []
            for _ in range(reps.matmul):
                system.extend(time_steps(lambda: sess.run(c, feed), 1, 1))
                numpy_own.extend(time_steps(lambda: a_val @ b_val, 1, 1))
            out = median_us(system) / 1e3
            missing["_numpy_matmul_ms"] = median_us(numpy_own) / 1e3
            return out
        finally:
            sess.close()


# -- the two systems ------------------------------------------------------------------------------------
def asyncflow_figures(reps: Repeats) -> tuple[dict[str, Any], str]:
    import asyncflow as af

    # Graph optimisations off, as TF's are below: every node of the chain and the wide graph runs (with them
    # on, common-subexpression elimination makes the 1000 identical adds one).
    off = af.RewriterConfig.OFF
    config = af.ConfigProto(graph_options=af.GraphOptions(
        optimizer_options=af.OptimizerOptions(opt_level=af.OptimizerOptions.L0),
        rewrite_options=af.RewriterConfig(disable_meta_optimizer=True, constant_folding=off,
                                          arithmetic_optimization=off, dependency_optimization=off)))
    return measure(af, lambda graph: af.Session(graph=graph, config=config), reps), af.__version__


TF_REWRITES_OFF = ("constant_folding", "arithmetic_optimization", "dependency_optimization")


def tensorflow_figures(reps: Repeats) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """TensorFlow's figures, or (None, None, why) when it cannot be imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow.compat.v1 as tf
        from tensorflow.core.protobuf import rewriter_config_pb2
    except ImportError as e:
        return None, None, f"tensorflow is not importable: {e}"
    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)
    off = rewriter_config_pb2.RewriterConfig.OFF
    config = tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0, do_constant_folding=False),
        rewrite_options=rewriter_config_pb2.RewriterConfig(**{name: off for name in TF_REWRITES_OFF}),
    ))
    return measure(tf, lambda graph: tf.Session(graph=graph, config=config), reps), tf.VERSION, None


def ratios(af_figs: dict[str, Any], tf_figs: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for key, value in af_figs.items():
        if key == "missing":
            continue
        theirs = tf_figs.get(key) if tf_figs else None
        ratio = value / theirs if value is not None and theirs else None
        out[key] = {"asyncflow": value, "tensorflow": theirs, "ratio": ratio}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run, noisier figures)")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even when it is importable")
    args = parser.parse_args(argv)
    reps = QUICK if args.quick else FULL

    af_figs, af_version = asyncflow_figures(reps)
    if args.no_tf:
        tf_figs, tf_version, tf_note = None, None, "skipped (--no-tf)"
    else:
        tf_figs, tf_version, tf_note = tensorflow_figures(reps)
    af_numpy = af_figs.pop("numpy_matmul_1024_ms")
    tf_numpy = tf_figs.pop("numpy_matmul_1024_ms") if tf_figs else None
    results = ratios(af_figs, tf_figs)
    mm = results["matmul_1024_ms"]
    mm["numpy_beside_asyncflow"] = af_numpy
    mm["numpy_beside_tensorflow"] = tf_numpy
    mm["asyncflow_over_numpy"] = mm["asyncflow"] / af_numpy if mm["asyncflow"] and af_numpy else None
    mm["tensorflow_over_numpy"] = mm["tensorflow"] / tf_numpy if mm["tensorflow"] and tf_numpy else None
    report = {
        "benchmark": "bench_local",
        "quick": args.quick,
        "environment": {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "numpy": np.__version__,
            "asyncflow": af_version,
            "tensorflow": tf_version,
            "tensorflow_note": tf_note,
            "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(),
            "machine": platform.machine(),
        },
        "settings": {
            "ops_per_graph": N_OPS, "matmul_n": MATMUL_N, "repeats": reps.__dict__,
            "statistic": "median", "timer": "time.perf_counter_ns", "gc": "disabled while timing",
            "tensorflow_config": {"graph_mode": True, "opt_level": "L0", "rewrites_off": list(TF_REWRITES_OFF)},
        },
        "results": results,
    }
    missing = {k: v for k, v in (("asyncflow", af_figs.get("missing")),
                                 ("tensorflow", (tf_figs or {}).get("missing"))) if v}
    if missing:
        report["missing_ops"] = missing
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return report


if __name__ == "__main__":
    main()
