"""A two-layer perceptron on scikit-learn's bundled handwritten digits (8x8 images, no download),
trained with af.train.AdamOptimizer, checkpointed with af.train.Saver after every epoch.

    python scripts/train_digits.py [--epochs 20] [--batch 32] [--lr 0.005] [--hidden 64]
                                   [--checkpoint-dir checkpoints/train_digits] [--resume] [--logdir DIR]

`--epochs` is the total to reach: with `--resume` the run restores the latest checkpoint in
`--checkpoint-dir` (weights, Adam's slots, the global step) and trains the remaining epochs, in
the same batch order an uninterrupted run would have used. With `--logdir DIR` it writes TensorBoard
event files there (the graph; every step's batch `loss` and `accuracy`; each epoch's `test_accuracy`
and `examples_per_sec`): `tensorboard --logdir DIR`. The last line printed is a JSON
summary (test accuracy, global step, seconds). The program is plain TF1: it runs unchanged with
`import tensorflow.compat.v1 as tf`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator

import numpy as np

import asyncflow as tf


def load_digits(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """80% train / 20% held-out test, shuffled with `seed`; pixels scaled to [0, 1]."""
    try:
        from sklearn.datasets import load_digits as sk_load
    except ImportError:
        sys.exit("scikit-learn is needed for the digits data: pip install -e '.[examples]'")
    data = sk_load()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


class _TextBar:
    """A minimal stand-in for tqdm when it is not installed: one line, redrawn in place."""

    def __init__(self, iterable: Iterable, total: int, desc: str, disable: bool) -> None:
        self._items, self._total, self._desc, self._disable = iterable, total, desc, disable
        self._postfix = ""

    def __iter__(self) -> Iterator:
        for i, item in enumerate(self._items, 1):
            yield item
            if not self._disable:
                done = 30 * i // self._total
                print(f"\r{self._desc} [{'#' * done}{'.' * (30 - done)}] {i}/{self._total} {self._postfix}",
                      end="", file=sys.stderr, flush=True)
        if not self._disable:
            print(file=sys.stderr)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self._postfix = text


def progress(iterable: Iterable, total: int, desc: str, disable: bool) -> _TextBar:
    try:
        from tqdm import tqdm
    except ImportError:
        return _TextBar(iterable, total, desc, disable)
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=False, file=sys.stderr)


def dense(x: tf.Tensor, units: int, name: str, seed: int) -> tf.Tensor:
    fan_in = int(x.shape[1])
    with tf.name_scope(name):
        w = tf.Variable(tf.truncated_normal([fan_in, units], stddev=np.sqrt(2.0 / fan_in), seed=seed), name="w")
        b = tf.Variable(tf.zeros([units]), name="b")
        return tf.matmul(x, w) + b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=20, help="total epochs to reach (default 20)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir", default=os.path.join("checkpoints", "train_digits"))
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--logdir", help="write TensorBoard summaries (loss, accuracy, examples/s) and the graph here")
    args = parser.parse_args(argv)
    x_train, y_train, x_test, y_test = load_digits(args.seed)
    steps_per_epoch = -(-len(x_train) // args.batch)

    tf.set_random_seed(args.seed)
    x = tf.placeholder(tf.float32, [None, x_train.shape[1]], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    hidden = tf.nn.relu(dense(x, args.hidden, "hidden", seed=1))
    logits = dense(hidden, 10, "logits", seed=2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(args.lr).minimize(loss, global_step=global_step)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=1), labels), tf.float32))
    saver = tf.train.Saver(max_to_keep=3)
    prefix = os.path.join(args.checkpoint_dir, "model.ckpt")
    summaries = None  # without --logdir the graph and the steps are exactly as before
    if args.logdir:
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("accuracy", accuracy)
        summaries = tf.summary.merge_all()

    start = time.perf_counter()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        latest = tf.train.latest_checkpoint(args.checkpoint_dir) if args.resume else None
        if latest:
            saver.restore(sess, latest)
            # Older checkpoints of the previous run count towards max_to_keep (TF1's idiom).
            saver.recover_last_checkpoints(tf.train.get_checkpoint_state(args.checkpoint_dir).all_model_checkpoint_paths)
            print(f"resumed from {latest} at global step {int(sess.run(global_step))}")
        elif args.resume:
            print(f"no checkpoint in {args.checkpoint_dir}; starting from scratch")
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        step = int(sess.run(global_step))
        first_epoch = step // steps_per_epoch + 1
        writer = tf.summary.FileWriter(args.logdir, sess.graph) if args.logdir else None
        for epoch in range(first_epoch, args.epochs + 1):
            # The order depends on the epoch only, so a resumed run sees the batches an uninterrupted one would.
            order = np.random.default_rng([args.seed, epoch]).permutation(len(x_train))
            bar = progress(range(0, len(order), args.batch), steps_per_epoch, f"epoch {epoch}/{args.epochs}",
                           args.no_progress)
            epoch_start = time.perf_counter()
            for i in bar:
                idx = order[i:i + args.batch]
                feed = {x: x_train[idx], labels: y_train[idx]}
                if writer is None:
                    _, batch_loss = sess.run([train, loss], feed)
                else:
                    _, batch_loss, summary = sess.run([train, loss, summaries], feed)
                    writer.add_summary(summary, step + 1)  # the global step this run has taken
                step += 1
                bar.set_postfix_str(f"loss {batch_loss:.4f}", refresh=False)
            examples_per_sec = len(order) / (time.perf_counter() - epoch_start)
            saved = saver.save(sess, prefix, global_step=global_step)
            test_acc = sess.run(accuracy, {x: x_test, labels: y_test})
            if writer is not None:
                value = tf.summary.Summary.Value
                writer.add_summary(tf.summary.Summary(value=[
                    value(tag="test_accuracy", simple_value=float(test_acc)),
                    value(tag="examples_per_sec", simple_value=examples_per_sec)]), step)
            print(f"epoch {epoch:3d}  train loss {sess.run(loss, {x: x_train, labels: y_train}):.4f}  "
                  f"test accuracy {test_acc:.4f}  saved {saved}")
        final_acc = float(sess.run(accuracy, {x: x_test, labels: y_test}))
        final_loss = float(sess.run(loss, {x: x_train, labels: y_train}))
        step = int(sess.run(global_step))
        if writer is not None:
            writer.close()
    seconds = time.perf_counter() - start
    print(json.dumps({"test_accuracy": round(final_acc, 4), "train_loss": final_loss, "global_step": step,
                      "epochs": args.epochs, "seconds": round(seconds, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
