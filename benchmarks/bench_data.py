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

And two input-only rows (no model):

- `tfrecord_parse_single` / `tfrecord_parse_batch`: a TFRecord file of `--records` `tf.train.Example`s
  (`ids`: 0-9 int64s read as a `VarLenFeature`, `y`: a float read as a scalar `FixedLenFeature`),
  read whole per run: `TFRecordDataset -> map(parse_single_example) -> batch(128)`, and
  `TFRecordDataset -> batch(128) -> map(parse_example)`: examples/s.
- `interleave_sequential` / `interleave_parallel`: `list_files` of 8 such files (100 records each)
  `.interleave(lambda f: TFRecordDataset(f).map(slow_read), cycle_length=4)`, where `slow_read` is a
  `py_func` sleeping 1 ms per record (a slow store), without and with `num_parallel_calls=4`: seconds
  for the whole input, and `interleave_speedup`, sequential over parallel (4 would be perfect overlap).

Prints one JSON object with asyncflow's and, when `tensorflow` is importable, TF1's figures
(`tf.compat.v1` graph mode, TF's AUTOTUNE), and the ratios.

    PYTHONPATH=. python benchmarks/bench_data.py [--hidden 256] [--steps 200] [--repeats 3] [--records 20000]
        [--no-tf]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
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


def write_records(directory: str, records: int) -> dict[str, Any]:
    """The TFRecord files of the input-only rows (module docstring), written with asyncflow's writer."""
    import asyncflow as af

    rng = np.random.default_rng(0)

    def example(i: int) -> bytes:
        t = af.train
        return t.Example(features=t.Features(feature={
            "ids": t.Feature(int64_list=t.Int64List(value=rng.integers(0, 1000, int(rng.integers(0, 10))).tolist())),
            "y": t.Feature(float_list=t.FloatList(value=[float(i % 2)])),
        })).SerializeToString()

    big = os.path.join(directory, "examples.tfrecord")
    with af.io.TFRecordWriter(big) as w:
        for i in range(records):
            w.write(example(i))
    for f in range(8):
        with af.io.TFRecordWriter(os.path.join(directory, f"shard-{f}.tfrecord")) as w:
            for i in range(100):
                w.write(example(i))
    return {"examples": big, "shards": os.path.join(directory, "shard-*.tfrecord"), "records": records}


def _features(tf: Any) -> dict[str, Any]:
    return {"ids": tf.io.VarLenFeature(tf.int64), "y": tf.io.FixedLenFeature([], tf.float32)}


def _slow_read(record: Any) -> Any:
    time.sleep(0.001)
    return record


def _drain_seconds(tf: Any, session: Any, build: Any, expected: int, repeats: int) -> float:
    """Median seconds to read a whole pipeline (a fresh one-shot iterator per run)."""
    times = []
    for _ in range(repeats + 1):  # the first run warms up (function tracing, plan compiling, file cache)
        graph = tf.Graph()
        with graph.as_default():
            n = tf.data.make_one_shot_iterator(build()).get_next()
            sess = session(graph)
            try:
                count, t0 = 0, time.perf_counter()
                while True:
                    try:
                        out = sess.run(n)
                    except tf.errors.OutOfRangeError:
                        break
                    count += len(out["y"]) if isinstance(out, dict) else 1
                times.append(time.perf_counter() - t0)
            finally:
                sess.close()
        if count != expected:
            raise AssertionError(f"read {count} elements, expected {expected}")
    return statistics.median(times[1:])


def input_times(tf: Any, session: Any, files: dict[str, Any], repeats: int, batch: int) -> dict[str, float]:
    """Seconds for each input-only row (module docstring)."""
    features = _features(tf)

    def parse_single() -> Any:
        ds = tf.data.TFRecordDataset(files["examples"])
        return ds.map(lambda r: tf.io.parse_single_example(r, features)).batch(batch)

    def parse_batch() -> Any:
        ds = tf.data.TFRecordDataset(files["examples"])
        return ds.batch(batch).map(lambda r: tf.io.parse_example(r, features))

    def interleave(parallel: int | None) -> Any:
        def read(f: Any) -> Any:
            return tf.data.TFRecordDataset(f).map(lambda r: tf.py_func(_slow_read, [r], tf.string))
        shards = tf.data.Dataset.list_files(files["shards"], shuffle=False)
        return shards.interleave(read, cycle_length=4, num_parallel_calls=parallel)

    n, repeats = files["records"], max(repeats, 5)  # short runs: the median of more
    return {"tfrecord_parse_single": _drain_seconds(tf, session, parse_single, n, repeats),
            "tfrecord_parse_batch": _drain_seconds(tf, session, parse_batch, n, repeats),
            "interleave_sequential": _drain_seconds(tf, session, lambda: interleave(None), 800, repeats),
            "interleave_parallel": _drain_seconds(tf, session, lambda: interleave(4), 800, repeats)}


def measure(tf: Any, session: Any, args: Any, files: dict[str, Any]) -> dict[str, float]:
    out = {}
    for mode in ("pipeline", "no_pipeline", "slow_map"):
        steps = args.steps if mode != "slow_map" else max(args.steps // 4, 20)
        out[mode] = step_time(tf, session, mode, args.hidden, steps, args.repeats, args.batch)
    out.update(input_times(tf, session, files, args.repeats, args.batch))
    return out


def tensorflow() -> tuple[Any, Any, str] | None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_v2_behavior()
    return tf, (lambda graph: tf.Session(graph=graph)), tf.VERSION


def _figures(t: dict[str, float], batch: int, records: int) -> dict[str, float]:
    return {"pipeline_examples_per_s": batch / t["pipeline"], "pipeline_step_ms": 1e3 * t["pipeline"],
            "no_pipeline_step_ms": 1e3 * t["no_pipeline"], "slow_map_step_ms": 1e3 * t["slow_map"],
            "slow_map_over_no_pipeline": t["slow_map"] / t["no_pipeline"],
            "tfrecord_parse_single_examples_per_s": records / t["tfrecord_parse_single"],
            "tfrecord_parse_batch_examples_per_s": records / t["tfrecord_parse_batch"],
            "interleave_sequential_s": t["interleave_sequential"], "interleave_parallel_s": t["interleave_parallel"],
            "interleave_speedup": t["interleave_sequential"] / t["interleave_parallel"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--no-tf", action="store_true")
    args = parser.parse_args(argv)
    import asyncflow as af
    from asyncflow.ops.record_ops_tfrecord import CRC32C_IMPLEMENTATION

    with tempfile.TemporaryDirectory(prefix="bench_data_") as directory:
        files = write_records(directory, args.records)
        # asyncflow first, then TF: TF's thread pools stay busy for a while and would slow what follows.
        mine = _figures(measure(af, lambda g: af.Session(graph=g), args, files), args.batch, args.records)
        reference = None if args.no_tf else tensorflow()
        theirs = _figures(measure(reference[0], reference[1], args, files), args.batch, args.records) \
            if reference else None
    results: dict[str, Any] = {}
    for key, value in mine.items():
        other = theirs[key] if theirs else None
        results[key] = {"asyncflow": value, "tensorflow": other, "ratio": value / other if other else None}
    report = {
        "benchmark": "bench_data",
        "environment": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                        "asyncflow": af.__version__, "tensorflow": reference[2] if reference else None,
                        "crc32c": CRC32C_IMPLEMENTATION},  # TFRecord reads check every record's CRC-32C
        "settings": {"hidden": args.hidden, "batch": args.batch, "steps": args.steps, "repeats": args.repeats,
                     "slow_map_ms_per_element": 1.0, "records": args.records, "interleave_files": 8,
                     "interleave_ms_per_record": 1.0, "statistic": "median"},
        "results": results,
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
