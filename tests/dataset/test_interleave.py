"""Parallel interleave (`interleave(..., num_parallel_calls=...)`): the sequential interleave's order, inner
iterators fetched ahead concurrently by tasks the pipeline owns, TF's argument errors.

Orders marked "TF 2.21" were checked against tf.compat.v1 with tfdiff (graph mode). Concurrency is
asserted structurally (a barrier that only as many simultaneous inner calls can pass, a count of the
calls in flight), never by timing; the speed-up is measured in benchmarks/bench_data.py.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

import asyncflow as af
from tests.dataset.helpers import drain, elements, ints

Dataset = af.data.Dataset
LENGTHS = [3, 1, 4, 0, 2, 5, 1, 2]  # inner dataset i has LENGTHS[i] rows: x + 10 * LENGTHS[i]

# TF 2.21, ParallelInterleaveDatasetV4 (the same orders as its sequential InterleaveDataset)
TF_ORDERS = {
    (2, 1, 2): [30, 10, 31, 32, 40, 41, 42, 20, 43, 21, 50, 10, 51, 52, 20, 53, 21, 54],
    (3, 2, 2): [30, 31, 10, 40, 41, 32, 42, 43, 20, 21, 50, 51, 52, 53, 10, 20, 21, 54],
    (4, 3, 4): [30, 31, 32, 10, 40, 41, 42, 20, 21, 43, 50, 51, 52, 10, 20, 21, 53, 54],
    (8, 1, 3): [30, 10, 40, 20, 50, 10, 20, 31, 41, 21, 51, 21, 32, 42, 52, 43, 53, 54],
}


def _lengths(**kw) -> Dataset:
    base = Dataset.from_tensor_slices(np.array(LENGTHS, np.int64))
    return base.interleave(lambda n: Dataset.range(n).map(lambda x: x + 10 * n), **kw)


@pytest.mark.parametrize("cycle, block, parallel", sorted(TF_ORDERS))
def test_order_is_tf_and_the_sequential_interleave(cycle, block, parallel):
    got = ints(elements(_lengths(cycle_length=cycle, block_length=block, num_parallel_calls=parallel)))
    assert got == TF_ORDERS[(cycle, block, parallel)]
    assert ints(elements(_lengths(cycle_length=cycle, block_length=block))) == got


def test_order_holds_when_inner_iterators_finish_out_of_order():
    delays = np.random.default_rng(0).uniform(0, 0.004, size=64)

    def slow(x, n):  # a later inner iterator is often ready before an earlier one
        time.sleep(delays[(int(x) * 7 + int(n)) % 64])
        return x + 10 * n

    for cycle, block, parallel in ((3, 1, 3), (4, 2, 2), (2, 3, 2), (5, 1, af.data.AUTOTUNE)):
        ds = Dataset.from_tensor_slices(np.array(LENGTHS, np.int64)).interleave(
            lambda n: Dataset.range(n).map(lambda x: af.py_func(slow, [x, n], af.int64)),
            cycle_length=cycle, block_length=block, num_parallel_calls=parallel)
        want = ints(elements(_lengths(cycle_length=cycle, block_length=block)))
        assert ints(elements(ds)) == want, (cycle, block, parallel)


def test_inner_iterators_are_fetched_concurrently_up_to_num_parallel_calls():
    parallel = 3
    meet = threading.Barrier(parallel, timeout=30)
    in_flight, peak, lock = [0], [0], threading.Lock()

    def call(x, i):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            if x == 0 and i < parallel:
                meet.wait()  # passes only when the first `parallel` inner iterators are in a call at once
            else:
                time.sleep(0.001)
        finally:
            with lock:
                in_flight[0] -= 1
        return x + 10 * i

    ds = Dataset.range(7).interleave(lambda i: Dataset.range(3).map(lambda x: af.py_func(call, [x, i], af.int64)),
                                     cycle_length=4, block_length=2, num_parallel_calls=parallel)
    want = ints(elements(Dataset.range(7).interleave(lambda i: Dataset.range(3).map(lambda x: x + 10 * i),
                                                     cycle_length=4, block_length=2)))
    assert ints(elements(ds)) == want
    assert not meet.broken
    assert peak[0] <= parallel  # the fetch semaphore: never more inner calls at once than num_parallel_calls


def test_generators_of_inner_datasets_run_concurrently():
    meet = threading.Barrier(2, timeout=30)

    def gen(i):
        if i < 2:
            meet.wait()  # both first generators must be running at once
        yield from range(int(i) * 10, int(i) * 10 + 3)

    ds = Dataset.range(3).interleave(lambda i: Dataset.from_generator(gen, af.int64, [], args=(i,)),
                                     cycle_length=2, num_parallel_calls=2)
    assert ints(elements(ds)) == [0, 10, 1, 11, 2, 12, 20, 21, 22]


def test_non_deterministic_mode_passes_over_a_slot_that_is_not_ready():
    release = threading.Event()

    def gen(i):
        if i == 0:
            release.wait(30)  # slot 0 is stuck until the consumer has taken slot 1's rows
        yield from range(int(i) * 10, int(i) * 10 + 2)

    ds = Dataset.range(2).interleave(lambda i: Dataset.from_generator(gen, af.int64, [], args=(i,)),
                                     cycle_length=2, num_parallel_calls=2, deterministic=False)
    n = ds.make_one_shot_iterator().get_next()
    with af.Session() as sess:
        first = [int(sess.run(n)), int(sess.run(n))]
        release.set()
        rest = [int(v) for v in drain(sess, n)]
    assert first == [10, 11] and rest == [0, 1]


def _outcomes(ds: Dataset, limit: int = 10) -> list:
    n = ds.make_one_shot_iterator().get_next()
    out: list = []
    with af.Session() as sess:
        for _ in range(limit):
            try:
                out.append(int(sess.run(n)))
            except af.errors.OutOfRangeError:
                return out + ["end"]
            except af.errors.OpError as exc:
                out.append(type(exc).__name__)
    return out


def test_an_error_is_one_element_in_its_place():  # TF 2.21: the iterator goes on after it
    def check(x):
        if x == 2 or x == 11:
            raise ValueError("bad record")
        return x

    def mapped(ds: Dataset, **kw) -> Dataset:
        return ds.map(lambda x: af.py_func(check, [x], af.int64), **kw)

    failed = [0, 1, "InvalidArgumentError", 3, 4, "end"]
    assert _outcomes(mapped(Dataset.range(5))) == failed
    assert _outcomes(mapped(Dataset.range(5)).prefetch(2)) == failed
    assert _outcomes(mapped(Dataset.range(5), num_parallel_calls=3)) == failed
    for parallel in (None, 2):
        ds = Dataset.range(3).interleave(lambda i: mapped(Dataset.range(2).map(lambda x: x + 10 * i)),
                                         cycle_length=2, num_parallel_calls=parallel)
        assert _outcomes(ds) == [0, 10, 1, "InvalidArgumentError", 20, 21, "end"]


def _interleave_tasks(loop) -> list:
    return [t for t in asyncio.all_tasks(loop) if t.get_name().startswith("interleave:") and not t.done()]


def test_fetch_tasks_are_cancelled_on_reinitialisation_and_close():
    def call(x):
        time.sleep(0.001)
        return x

    ds = Dataset.range(50).interleave(lambda i: Dataset.range(100).map(lambda x: af.py_func(call, [x], af.int64)),
                                      cycle_length=4, num_parallel_calls=4)
    it = ds.make_initializable_iterator()
    n = it.get_next()
    sess = af.Session()
    sess.run(it.initializer)
    assert [int(sess.run(n)) for _ in range(3)] == [0, 0, 0]
    assert _interleave_tasks(sess._loop)  # inner iterators (current and opened ahead) are being fetched
    sess.run(it.initializer)
    assert not _interleave_tasks(sess._loop)  # the old pipeline's fetches were cancelled and awaited
    assert int(sess.run(n)) == 0
    loop = sess._loop
    sess.close()
    assert not [t for t in asyncio.all_tasks(loop) if not t.done()]


def test_tfrecord_files_read_in_parallel(tmp_path):
    for f in range(5):
        with af.io.TFRecordWriter(str(tmp_path / f"part-{f}.tfrecord")) as w:
            for r in range(f + 2):
                w.write(f"{f}:{r}".encode())
    files = Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False)
    parallel = ints(elements(files.interleave(af.data.TFRecordDataset, cycle_length=3, num_parallel_calls=3)))
    sequential = ints(elements(files.interleave(af.data.TFRecordDataset, cycle_length=3)))
    assert parallel == sequential and sorted(parallel) == sorted(f"{f}:{r}".encode() for f in range(5)
                                                                  for r in range(f + 2))
    assert parallel[:4] == [b"0:0", b"1:0", b"2:0", b"0:1"]


def test_num_parallel_calls_errors_as_tf():  # TF 2.21's messages, at run time
    base = Dataset.range(3)
    with pytest.raises(af.errors.InvalidArgumentError, match="`num_parallel_calls` is 4 and `cycle_length` is 2"):
        elements(base.interleave(lambda i: Dataset.range(i), cycle_length=2, num_parallel_calls=4))
    with pytest.raises(af.errors.InvalidArgumentError, match="num_parallel_calls must be greater than zero"):
        elements(base.interleave(lambda i: Dataset.range(i), cycle_length=2, num_parallel_calls=0))
    auto = base.interleave(lambda i: Dataset.range(i), cycle_length=2, num_parallel_calls=af.data.AUTOTUNE)
    assert ints(elements(auto)) == [0, 0, 1]  # TF 2.21
