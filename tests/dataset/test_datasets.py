"""Dataset sources and transformations: values, order and static specs as TF1's tf.data.

Values marked "TF 2.21" were checked against tf.compat.v1 with tfdiff (graph mode).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import asyncflow as af
from tests.dataset.helpers import drain, elements, ints

Dataset = af.data.Dataset


def test_from_tensor_slices_tuple_types_and_shapes():
    ds = Dataset.from_tensor_slices(([[1, 2], [3, 4], [5, 6]], [1.0, 2.0, 3.0]))
    assert ds.output_types == (af.int32, af.float32)
    assert [s.as_list() for s in ds.output_shapes] == [[2], []]
    assert ds.output_classes == (af.Tensor, af.Tensor)
    got = elements(ds)
    assert [a.tolist() for a, _ in got] == [[1, 2], [3, 4], [5, 6]] and [float(b) for _, b in got] == [1, 2, 3]


def test_batch_static_shape_known_only_with_drop_remainder():  # TF 2.21: (2, 2), (2,)
    ds = Dataset.from_tensor_slices(([[1, 2], [3, 4], [5, 6]], [1.0, 2.0, 3.0]))
    assert [s.as_list() for s in ds.batch(2, drop_remainder=True).output_shapes] == [[2, 2], [2]]
    assert [s.as_list() for s in ds.batch(2).output_shapes] == [[None, 2], [None]]
    assert [len(a) for a, _ in elements(ds.batch(2))] == [2, 1]
    assert [len(a) for a, _ in elements(ds.batch(2, drop_remainder=True))] == [2]


def test_dict_and_namedtuple_elements_through_map_and_filter():
    pair = collections.namedtuple("pair", "a b")
    ds = Dataset.from_tensor_slices({"k": np.arange(5), "j": np.arange(5.0)})
    ds = ds.filter(lambda d: af.equal(d["k"] % 2, 0)).map(lambda d: pair(d["k"], d["j"] * 2))
    assert ds.output_types == pair(af.int64, af.float64)
    got = elements(ds)
    assert [int(p.a) for p in got] == [0, 2, 4] and [float(p.b) for p in got] == [0, 4, 8]
    assert isinstance(got[0], pair)


def test_range_from_tensors_zip_concatenate_enumerate():
    assert ints(elements(Dataset.range(2, 9, 3))) == [2, 5, 8]
    assert ints(elements(Dataset.range(5, 0, -2))) == [5, 3, 1]
    assert Dataset.range(3).output_types == af.int64
    assert [v.tolist() for v in elements(Dataset.from_tensors([1, 2]))] == [[1, 2]]
    z = Dataset.zip((Dataset.range(3), Dataset.range(10, 20)))
    assert [(int(a), int(b)) for a, b in elements(z)] == [(0, 10), (1, 11), (2, 12)]
    c = Dataset.range(2).concatenate(Dataset.range(5, 7))
    assert ints(elements(c)) == [0, 1, 5, 6]
    e = Dataset.range(5).enumerate(3).skip(1).take(2).repeat(2)  # TF 2.21
    assert [(int(a), int(b)) for a, b in elements(e)] == [(4, 1), (5, 2), (4, 1), (5, 2)]


def test_flat_map_and_interleave_order():
    fm = Dataset.range(5).flat_map(lambda i: Dataset.range(i)).filter(lambda x: af.equal(x % 2, 0))
    assert ints(elements(fm)) == [0, 0, 0, 2, 0, 2]  # TF 2.21
    il = Dataset.range(1, 4).interleave(lambda i: Dataset.from_tensors(i).repeat(i), cycle_length=2, block_length=2)
    assert ints(elements(il)) == [1, 2, 2, 3, 3, 3]  # TF 2.21
    il1 = Dataset.range(1, 4).interleave(lambda i: Dataset.from_tensors(i).repeat(i), cycle_length=2,
                                         block_length=1, num_parallel_calls=2)
    assert ints(elements(il1)) == [1, 2, 2, 3, 3, 3]  # TF 2.21


def test_padded_batch_and_unbatch():
    ds = Dataset.range(6).map(lambda x: af.fill([x], x)).padded_batch(4, padded_shapes=[None])
    assert ds.output_shapes.as_list() == [None, None]
    first = elements(ds)[0]
    assert first.tolist() == [[0, 0, 0], [1, 0, 0], [2, 2, 0], [3, 3, 3]]  # TF 2.21
    fixed = Dataset.range(3).map(lambda x: af.fill([x], x))
    fixed = fixed.padded_batch(3, [4], padding_values=af.constant(-1, af.int64))
    assert elements(fixed)[0].tolist() == [[-1, -1, -1, -1], [1, -1, -1, -1], [2, 2, -1, -1]]
    un = Dataset.range(8).batch(3).unbatch()
    assert un.output_shapes.as_list() == [] and ints(elements(un)) == list(range(8))  # TF 2.21


def test_take_skip_repeat_cache_prefetch():
    ds = Dataset.range(5).batch(2).unbatch().concatenate(Dataset.range(2)).skip(1).take(5).repeat(2).cache()
    assert ints(elements(ds)) == [1, 2, 3, 4, 0] * 2
    assert ints(elements(Dataset.range(4).repeat(3).take(-1).skip(10))) == [2, 3]
    assert ints(elements(Dataset.range(30).prefetch(4).map(lambda x: x * 2).prefetch(1))) == list(range(0, 60, 2))
    assert elements(Dataset.range(0).repeat()) == []  # an empty dataset repeated forever ends, as TF's


def test_shuffle_is_a_permutation_deterministic_with_a_seed_and_reshuffles_per_epoch():
    ds = Dataset.range(100).shuffle(10, seed=7)
    a, b = ints(elements(ds)), ints(elements(ds))
    assert sorted(a) == list(range(100)) and a == b and a != list(range(100))
    assert all(a.index(v) >= v - 9 for v in a)  # a buffer of 10: nothing leaves before 9 later rows came in
    epochs = ints(elements(Dataset.range(20).shuffle(20, seed=3).repeat(2)))
    assert sorted(epochs[:20]) == sorted(epochs[20:]) == list(range(20)) and epochs[:20] != epochs[20:]
    same = ints(elements(Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False).repeat(2)))
    assert same[:20] == same[20:]
    af.set_random_seed(5)
    graph_seeded = Dataset.range(20).shuffle(5)
    assert ints(elements(graph_seeded)) == ints(elements(graph_seeded))


def test_shuffle_is_uniform_enough():
    # 2000 shuffles of 4 with a full buffer: each value lands in each position about 1/4 of the time.
    ds = Dataset.range(4).shuffle(4, seed=1).repeat(2000).batch(4)
    counts = np.zeros((4, 4))
    for row in elements(ds):
        counts[row, np.arange(4)] += 1
    assert np.all(np.abs(counts / 2000 - 0.25) < 0.05), counts


def test_shuffle_of_elements_of_varying_shapes():
    ds = Dataset.range(12).map(lambda x: af.fill([x % 3], x)).shuffle(5, seed=2)
    got = elements(ds)
    assert sorted(len(v) for v in got) == sorted(i % 3 for i in range(12))
    assert sorted(int(v[0]) for v in got if len(v)) == [i for i in range(12) if i % 3]


def test_map_captures_outer_tensors_constants_and_variables():
    scale = af.constant(3.0)
    v = af.Variable(2.0)
    ds = Dataset.from_tensor_slices(np.array([1.0, 2.0], np.float32)).map(lambda x: x * scale + v)
    it = ds.make_initializable_iterator()
    n = it.get_next()
    with af.Session() as sess:
        sess.run(v.initializer)
        sess.run(it.initializer)
        assert [float(x) for x in drain(sess, n)] == [5.0, 8.0]
        sess.run(v.assign(10.0))
        sess.run(it.initializer)  # a variable is read when the iterator is made
        assert [float(x) for x in drain(sess, n)] == [13.0, 16.0]


def test_from_generator_with_args_and_shapes():
    def gen(n):
        for i in range(int(n)):
            yield i, [i] * i

    ds = Dataset.from_generator(gen, (af.int64, af.float32), ([], [None]), args=(4,))
    assert [s.as_list() for s in ds.output_shapes] == [[], [None]]
    got = elements(ds.padded_batch(2, ([], [None])))
    assert got[1][1].tolist() == [[2, 2, 0], [3, 3, 3]]


def test_map_with_py_func_and_parallel_calls_keeps_order():
    def slow_double(x):
        return x * 2

    ds = Dataset.range(50).map(lambda x: af.py_func(slow_double, [x], af.int64), num_parallel_calls=8)
    assert ints(elements(ds)) == list(range(0, 100, 2))
    auto = Dataset.range(10).map(lambda x: af.py_func(slow_double, [x], af.int64),
                                 num_parallel_calls=af.data.experimental.AUTOTUNE)
    assert ints(elements(auto)) == list(range(0, 20, 2))
    assert af.data.AUTOTUNE == af.data.experimental.AUTOTUNE == -1


def test_list_files_apply_with_options(tmp_path):
    for name in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / name).write_text(name)
    ds = Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    assert [p.decode().rsplit("/", 1)[1] for p in elements(ds)] == ["a.txt", "b.txt"]
    shuffled = elements(Dataset.list_files(str(tmp_path / "*"), seed=1))
    assert sorted(shuffled) == sorted(p.encode() for p in map(str, tmp_path.glob("*")))
    applied = Dataset.range(4).apply(lambda d: d.map(lambda x: x + 1)).with_options(af.data.Options())
    assert ints(elements(applied)) == [1, 2, 3, 4]
    with pytest.raises(TypeError, match="must return a Dataset"):
        Dataset.range(2).apply(lambda d: 3)


def test_file_cache_is_written_once_and_read_back(tmp_path):
    calls = []

    def record(x):
        calls.append(int(x))
        return x

    path = str(tmp_path / "cache")
    ds = Dataset.range(5).map(lambda x: af.py_func(record, [x], af.int64)).cache(path)
    assert ints(elements(ds)) == list(range(5))
    import pyarrow as pa

    with pa.ipc.open_stream(pa.memory_map(path + ".arrow")) as reader:  # the documented Arrow IPC format
        assert reader.schema.names == ["component_0"]
    again = ints(elements(ds))
    assert again == list(range(5)) and calls == list(range(5))  # the second pass reads the file
