"""`Dataset.window(size, shift, stride, drop_remainder)`: a dataset of datasets, used (as TF1 programs do)
inside flat_map / interleave. Window contents, element specs and errors were checked against TF 2.21
(tf.compat.v1, graph mode) with tfdiff; the contents are also checked against a numpy reference of TF's
WindowDataset algorithm."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.dataset.helpers import drain, elements

Dataset = af.data.Dataset


def reference(n: int, size: int, shift: int | None, stride: int, drop: bool) -> list[list[int]]:
    """TF's WindowDataset on range(n): a buffer of (size-1)*stride+1 elements, every stride-th taken, then
    `shift` dropped (and read past when the buffer is shorter)."""
    shift = size if shift is None else shift
    target = (size - 1) * stride + 1
    data, pos, buf, out = list(range(n)), 0, [], []
    while True:
        take = min(target - len(buf), n - pos)
        buf += data[pos:pos + take]
        pos += take
        if not buf or (drop and len(buf) < target):
            return out
        out.append(buf[::stride])
        if shift >= len(buf):
            pos = min(n, pos + shift - len(buf))
            buf = []
        else:
            buf = buf[shift:]


# (n, size, shift, stride, drop_remainder) -> windows; checked against TF 2.21
CASES = {
    (7, 3, None, 1, False): [[0, 1, 2], [3, 4, 5], [6]],
    (7, 3, 2, 1, False): [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]],
    (7, 3, 2, 1, True): [[0, 1, 2], [2, 3, 4], [4, 5, 6]],
    (10, 3, 4, 2, False): [[0, 2, 4], [4, 6, 8], [8]],
    (10, 3, 1, 3, False): [[0, 3, 6], [1, 4, 7], [2, 5, 8], [3, 6, 9], [4, 7], [5, 8], [6, 9], [7], [8], [9]],
    (10, 2, 5, 1, False): [[0, 1], [5, 6]],
    (5, 10, None, 1, False): [[0, 1, 2, 3, 4]],
    (5, 10, None, 1, True): [],
    (9, 4, 2, 2, True): [[0, 2, 4, 6], [2, 4, 6, 8]],
    (0, 2, None, 1, False): [],
}


@pytest.mark.parametrize("case", list(CASES))
def test_window_flat_map_batch_as_tf(case):
    n, size, shift, stride, drop = case
    ds = Dataset.range(n).window(size, shift, stride, drop).flat_map(lambda w: w.batch(size))
    got = [v.tolist() for v in elements(ds)]
    assert got == CASES[case] == reference(*case)


def test_window_element_spec_is_a_dataset_spec():
    w = Dataset.range(7).window(3, shift=2)
    want = "DatasetSpec(TensorSpec(shape=(), dtype=af.int64, name=None), TensorShape([]))"  # TF: tf.int64
    assert repr(w.output_classes) == repr(w.output_types) == repr(w.output_shapes) == repr(w.element_spec) == want
    f = w.flat_map(lambda x: x.batch(3))
    assert f.output_types == af.int64 and f.output_shapes.as_list() == [None]
    d = Dataset.from_tensor_slices({"a": np.arange(5)}).window(2)
    assert sorted(d.output_classes) == ["a"] and isinstance(d.output_classes["a"], af.data.DatasetSpec)


def test_window_of_tuples_and_dicts():
    pairs = Dataset.from_tensor_slices((np.arange(10), np.arange(10) * 10.0)).window(4, 3, 2, drop_remainder=True)
    f = pairs.flat_map(lambda a, b: Dataset.zip((a, b)).batch(4))
    assert [s.as_list() for s in f.output_shapes] == [[None], [None]]
    got = [(a.tolist(), b.tolist()) for a, b in elements(f)]
    assert got == [([0, 2, 4, 6], [0, 20, 40, 60]), ([3, 5, 7, 9], [30, 50, 70, 90])]
    d = Dataset.from_tensor_slices({"a": np.arange(6), "b": np.arange(6) * 1.5}).window(3, 2)
    f = d.flat_map(lambda e: Dataset.zip(e).batch(3))
    got = [{k: v.tolist() for k, v in e.items()} for e in elements(f)]
    assert got == [{"a": [0, 1, 2], "b": [0, 1.5, 3]}, {"a": [2, 3, 4], "b": [3, 4.5, 6]}, {"a": [4, 5], "b": [6, 7.5]}]


def test_window_rows_of_vectors_interleave_take_skip():
    rows = Dataset.from_tensor_slices(np.arange(12).reshape(6, 2)).window(4, 3).flat_map(lambda w: w.batch(4))
    assert rows.output_shapes.as_list() == [None, 2]
    assert [v.tolist() for v in elements(rows)] == [[[0, 1], [2, 3], [4, 5], [6, 7]], [[6, 7], [8, 9], [10, 11]]]
    il = Dataset.range(8).window(4).interleave(lambda w: w.map(lambda v: v * 10), cycle_length=2)
    assert [int(v) for v in elements(il)] == [0, 40, 10, 50, 20, 60, 30, 70]
    tk = Dataset.range(10).window(3, 1).skip(2).take(3).flat_map(lambda w: w.batch(3).map(af.reduce_sum))
    assert [int(v) for v in elements(tk)] == [9, 12, 15]


def test_window_of_sparse_elements():
    x = np.array([[1, 0], [0, 2], [3, 4], [0, 0], [5, 0]], np.float32)
    w = Dataset.from_tensor_slices(x).map(lambda v: af.sparse.from_dense(v)).window(2, 2)
    assert repr(w.output_classes) == "DatasetSpec(SparseTensorSpec(TensorShape([2]), af.float32), TensorShape([]))"
    f = w.flat_map(lambda d: d.batch(2))
    assert f.output_classes is af.SparseTensor and f.output_shapes.as_list() == [None, 2]
    got = [[v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()] for v in elements(f)]
    assert got == [[[[0, 0], [1, 1]], [1, 2], [2, 2]], [[[0, 0], [0, 1]], [3, 4], [2, 2]], [[[0, 0]], [5], [1, 2]]]


def test_window_arguments_are_checked_at_run_time_as_tf():
    with af.Session() as sess:
        for args, what in (((0,), "size"), ((2, 0), "shift"), ((2, 1, -1), "stride")):
            n = Dataset.range(3).window(*args).flat_map(lambda w: w.batch(2)).make_one_shot_iterator().get_next()
            with pytest.raises(af.errors.InvalidArgumentError, match=f"Window {what} must be greater than zero"):
                sess.run(n)
    size = af.placeholder(af.int64, [])
    it = Dataset.range(5).window(size).flat_map(lambda w: w.batch(5)).make_initializable_iterator()
    n = it.get_next()
    with af.Session() as sess:
        sess.run(it.initializer, {size: 2})
        assert [v.tolist() for v in drain(sess, n)] == [[0, 1], [2, 3], [4]]
        sess.run(it.initializer, {size: 4})
        assert [v.tolist() for v in drain(sess, n)] == [[0, 1, 2, 3], [4]]


def test_window_datasets_only_inside_functions():
    w = Dataset.range(3).window(2)
    with pytest.raises(TypeError, match="flat_map or interleave"):
        w.make_one_shot_iterator().get_next()  # TF gives a variant dataset here; asyncflow refuses
    with pytest.raises(TypeError, match="flat_map or interleave"):
        w.batch(2)  # TF 2.21 builds it; asyncflow refuses (a batch of datasets)
    varying = Dataset.range(1, 4).map(lambda k: af.range(k)).window(3).flat_map(lambda w: w.padded_batch(3, [-1]))
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="differ in shape"):
        sess.run(varying.make_one_shot_iterator().get_next())  # TF allows it: asyncflow's windows are stacked
