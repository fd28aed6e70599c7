"""Input pipelines feeding a training loop: tf.data on asyncflow against TF1's tf.data, same run.

The model is a small MLP on scikit-learn's digits (64 inputs, `--hidden` ReLU units, 10 classes,
softmax cross-entropy, SGD). Three ways of feeding it, each timed over `--steps` training steps
after a warm-up, median of `--repeats` runs:

- `pipeline`: `from_tensor_slices((x, y)) -> map(normalise) -> shuffle(2048) -> repeat -> batch(128)
  -> prefetch(AUTOTUNE)`, one-shot iterator, the step takes `get_next()`: examples/s.
- `no_pipeline`: the same step on one constant batch (no input work at all): the step's own time.
- `slow_map`: the pipeline with a 1 ms-per-element `py_func` in the map (a sleep: input latency,
  as reading from a slow store), `num_parallel_calls=AUTOTUNE` and `prefetch`, which must hide it:
  step time against `no_pipeline`'s (target: within 10%).

Prints one JSON object with asyncflow's and, when `tensorflow` is importable, TF1's figures
(`tf.compat.v1` graph mode, TF's AUTOTUNE), and the ratios.

    PYTHONPATH=. python benchmarks/bench_data.py [--hidden 256] [--steps 200] [--repeats 3] [--no-tf]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

import numpy as np


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target.astype(np.int64)


def _model(tf: Any, x: Any, y: Any, hidden: int) -> Any:
    rng = np.random.default_rng(0)
    w1 = tf.Variable(rng.normal(0, 0.1, (64, hidden)).astype(np.float32))
    b1 = tf.Variable(np.zeros(hidden, np.float32))
    w2 = tf.Variable(rng.normal(0, 0.1, (hidden, 10)).astype(np.float32))
    b2 = tf.Variable(np.zeros(10, np.float32))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return tf.train.GradientDescentOptimizer(0.05).minimize(loss), loss


def _slow(v: np.ndarray) -> np.ndarray:
    time.sleep(0.001)
    return v


def step_time(tf: Any, session: Any, mode: str, hidden: int, steps: int, repeats: int, batch: int) -> float:
    """Median seconds per training step fed the `mode` way (module docstring)."""
    x_all, y_all = digits()
    mean, std = x_all.mean(0), x_all.std(0) + 1e-6
    autotune = tf.data.experimental.AUTOTUNE
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        if mode == "no_pipeline":
            x, y = tf.constant((x_all[:batch] - mean) / std), tf.constant(y_all[:batch])
        else:
            ds = tf.data.Dataset.from_tensor_slices((x_all, y_all))
            if mode == "slow_map":
                def normalise(a: Any, b: Any) -> Any:
                    a = tf.py_func(_slow, [a], tf.float32)
                    a.set_shape([64])
                    return (a - mean) / std, b
                ds = ds.map(normalise, num_parallel_calls=autotune)
            else:
                ds = ds.map(lambda a, b: ((a - mean) / std, b))
            ds = ds.shuffle(2048, seed=1).repeat().batch(batch).prefetch(autotune)
            x, y = tf.data.make_one_shot_iterator(ds).get_next()
        train, loss = _model(tf, x, y, hidden)
        sess = session(graph)
        try:
            sess.run(tf.global_variables_initializer())
            for _ in range(10):
                sess.run(train)
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(steps):
                    sess.run(train)
                times.append((time.perf_counter() - t0) / steps)
            if not np.isfinite(sess.run(loss)):
                raise AssertionError("training diverged")
        finally:
            sess.close()
    return statistics.median(times)


def measure(tf: Any, session: Any, args: Any) -> dict[str, float]:
    out = {}
    for mode in ("pipeline", "no_pipeline", "slow_map"):
        steps = args.steps if mode != "slow_map" else max(args.steps // 4, 20)
        out[mode] = step_time(tf, session, mode, args.hidden, steps, args.repeats, args.batch)
    return out


def tensorflow() -> tuple[Any, Any, str] | None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_v2_behavior()
    return tf, (lambda graph: tf.Session(graph=graph)), tf.VERSION


def _figures(t: dict[str, float], batch: int) -> dict[str, float]:
    return {"pipeline_examples_per_s": batch / t["pipeline"], "pipeline_step_ms": 1e3 * t["pipeline"],
            "no_pipeline_step_ms": 1e3 * t["no_pipeline"], "slow_map_step_ms": 1e3 * t["slow_map"],
            "slow_map_over_no_pipeline": t["slow_map"] / t["no_pipeline"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-tf", action="store_true")
    args = parser.parse_args(argv)
    import asyncflow as af

    # asyncflow first, then TF: TF's thread pools stay busy for a while and would slow what follows.
    mine = _figures(measure(af, lambda g: af.Session(graph=g), args), args.batch)
    reference = None if args.no_tf else tensorflow()
    theirs = _figures(measure(reference[0], reference[1], args), args.batch) if reference else None
    results: dict[str, Any] = {}
    for key, value in mine.items():
        other = theirs[key] if theirs else None
        results[key] = {"asyncflow": value, "tensorflow": other, "ratio": value / other if other else None}
    report = {
        "benchmark": "bench_data",
        "environment": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                        "asyncflow": af.__version__, "tensorflow": reference[2] if reference else None},
        "settings": {"hidden": args.hidden, "batch": args.batch, "steps": args.steps, "repeats": args.repeats,
                     "slow_map_ms_per_element": 1.0, "statistic": "median"},
        "results": results,
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
