"""Model-shaped training steps written the TF1 way, asyncflow beside TF1 in the same run.

Two rows, each one training step (forward, gradient, optimizer update) built by the same function
from the module it is given (`asyncflow` or `tensorflow.compat.v1`):

- `dynamic_rnn_lstm_step_ms`: `tf.nn.dynamic_rnn` over a `BasicLSTMCell(128)`, batch 32, 40 time
  steps, 128 input features, a softmax layer on every output, Adam.
- `layers_convnet_step_ms`: `tf.layers` conv-net with mnist_deep's shapes (28x28x1 input, conv 5x5x32,
  max-pool, conv 5x5x64, max-pool, dense 1024, dropout, dense 10), batch 50, Adam.

Prints one JSON object: median milliseconds per step after warm-up, for asyncflow and (when
`tensorflow` and `tf-keras` are importable; TF 2.21's compat.v1 layers and cells need
`TF_USE_LEGACY_KERAS=1`, which this script sets) for TF1 in graph mode, and their ratio.

    python benchmarks/bench_models.py [--steps 20] [--warmup 3] [--no-tf] [--only rnn|convnet]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def lstm_step(tf: Any) -> tuple[Any, dict[Any, np.ndarray]]:
    batch, steps, features, units, classes = 32, 40, 128, 128, 16
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [batch, steps, features], name="x")
    y = tf.placeholder(tf.int32, [batch, steps], name="y")
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    w = tf.get_variable("softmax_w", [units, classes])
    b = tf.get_variable("softmax_b", [classes], initializer=tf.zeros_initializer())
    logits = tf.matmul(tf.reshape(outputs, [-1, units]), w) + b
    loss = tf.losses.sparse_softmax_cross_entropy(tf.reshape(y, [-1]), logits)
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    feed = {x: rng.randn(batch, steps, features).astype(np.float32),
            y: rng.randint(0, classes, size=(batch, steps)).astype(np.int32)}
    return train, feed


def convnet_step(tf: Any) -> tuple[Any, dict[Any, np.ndarray]]:
    batch = 50
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder_with_default(False, [], name="training")
    h = tf.layers.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 64, 5, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.dense(tf.layers.flatten(h), 1024, activation=tf.nn.relu)
    h = tf.layers.dropout(h, rate=0.5, training=training)
    logits = tf.layers.dense(h, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    train = tf.train.AdamOptimizer(1e-4).minimize(loss)
    feed = {x: rng.rand(batch, 28, 28, 1).astype(np.float32), y: rng.randint(0, 10, size=batch),
            training: True}
    return train, feed


MODELS: dict[str, Callable[[Any], tuple[Any, dict[Any, np.ndarray]]]] = {
    "dynamic_rnn_lstm_step_ms": lstm_step, "layers_convnet_step_ms": convnet_step}


def step_ms(tf: Any, make_session: Callable[[Any], Any], build: Callable[[Any], Any], steps: int,
            warmup: int) -> float:
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        train, feed = build(tf)
        init = tf.global_variables_initializer()
        sess = make_session(graph)
        try:
            sess.run(init)
            for _ in range(warmup):
                sess.run(train, feed)
            times = []
            gc.disable()
            try:
                for _ in range(steps):
                    t0 = time.perf_counter_ns()
                    sess.run(train, feed)
                    times.append(time.perf_counter_ns() - t0)
            finally:
                gc.enable()
            return statistics.median(times) / 1e6
        finally:
            sess.close()


def tensorflow_module() -> tuple[Any, str] | None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_v2_behavior()
    return tf, tf.VERSION


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--only", choices=["rnn", "convnet"])
    args = parser.parse_args(argv)
    import asyncflow as af

    theirs_tf = None if args.no_tf else tensorflow_module()
    results: dict[str, Any] = {}
    for name, build in MODELS.items():
        if args.only and args.only not in name:
            continue
        mine = step_ms(af, lambda g: af.Session(graph=g), build, args.steps, args.warmup)
        theirs = None
        if theirs_tf is not None:
            tf = theirs_tf[0]
            theirs = step_ms(tf, lambda g, tf=tf: tf.Session(graph=g), build, args.steps, args.warmup)
        results[name] = {"asyncflow": mine, "tensorflow": theirs, "ratio": mine / theirs if theirs else None}
    report = {
        "benchmark": "bench_models",
        "environment": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                        "asyncflow": af.__version__, "tensorflow": theirs_tf[1] if theirs_tf else None},
        "settings": {"steps": args.steps, "warmup": args.warmup, "statistic": "median"},
        "results": results,
    }
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
