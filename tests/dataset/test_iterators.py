"""Iterators as TF1's: initializable (re-initialised with new feeds), from_structure, string handles,
OutOfRangeError every time, bad input, MonitoredTrainingSession, and tasks that end with the session."""

from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

import asyncflow as af
from tests.dataset.helpers import drain

Dataset = af.data.Dataset


def test_initializable_iterator_reinitialised_with_new_feeds():
    x = af.placeholder(af.float32, [None, 2])
    scale = af.placeholder(af.float32, [])
    it = Dataset.from_tensor_slices(x).map(lambda r: r * scale).batch(2).make_initializable_iterator()
    n = it.get_next()
    assert n.op.type == "IteratorGetNext" and it.initializer.type == "MakeIterator"
    with af.Session() as sess:
        sess.run(it.initializer, {x: np.ones((3, 2)), scale: 2.0})
        assert [v.tolist() for v in drain(sess, n)] == [[[2, 2], [2, 2]], [[2, 2]]]
        sess.run(it.initializer, {x: np.ones((1, 2)), scale: 3.0})
        assert [v.tolist() for v in drain(sess, n)] == [[[3, 3]]]
        sess.run(it.initializer, {x: np.ones((5, 2)), scale: 1.0})
        assert sess.run(n).shape == (2, 2)  # re-initialised mid-way: starts again
        sess.run(it.initializer, {x: np.zeros((2, 2)), scale: 1.0})
        assert sess.run(n).tolist() == [[0, 0], [0, 0]]


def test_get_next_raises_out_of_range_every_time_after_the_end():
    n = Dataset.range(2).make_one_shot_iterator().get_next()
    with af.Session() as sess:
        assert [int(sess.run(n)) for _ in range(2)] == [0, 1]
        for _ in range(3):
            with pytest.raises(af.errors.OutOfRangeError, match="End of sequence"):
                sess.run(n)


def test_uninitialised_iterator_is_a_failed_precondition():
    it = Dataset.range(2).make_initializable_iterator()
    with af.Session() as sess, pytest.raises(af.errors.FailedPreconditionError, match="not been initialized"):
        sess.run(it.get_next())


def test_reinitializable_iterator_from_structure():
    a, b = Dataset.range(3), Dataset.range(10, 12)
    it = af.data.Iterator.from_structure(a.output_types, a.output_shapes)
    n = it.get_next()
    init_a, init_b = it.make_initializer(a), it.make_initializer(b)
    with af.Session() as sess:
        sess.run(init_a)
        assert [int(v) for v in drain(sess, n)] == [0, 1, 2]
        sess.run(init_b)
        assert [int(v) for v in drain(sess, n)] == [10, 11]
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(Dataset.from_tensors(1.0))
    with pytest.raises(TypeError, match="Expected output shapes compatible"):
        it.make_initializer(Dataset.from_tensors(np.arange(2, dtype=np.int64)))


def test_string_handles_switch_between_iterators():
    a, b = Dataset.range(3), Dataset.range(10, 12).repeat()
    handle = af.placeholder(af.string, [])
    it = af.data.Iterator.from_string_handle(handle, a.output_types, a.output_shapes)
    n = it.get_next()
    ita, itb = a.make_one_shot_iterator(), b.make_initializable_iterator()
    with af.Session() as sess:
        ha, hb = sess.run([ita.string_handle(), itb.string_handle()])
        assert isinstance(ha, bytes) and ha != hb
        sess.run(itb.initializer)
        got = [int(sess.run(n, {handle: h})) for h in (ha, hb, ha, hb, hb)]
        assert got == [0, 10, 1, 11, 10]
        with pytest.raises(af.errors.InvalidArgumentError, match="not an iterator's string handle"):
            sess.run(n, {handle: b"nonsense"})


def test_make_one_shot_iterator_refuses_a_captured_placeholder():
    x = af.placeholder(af.float32, [None])
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        af.data.make_one_shot_iterator(Dataset.from_tensor_slices(x))


def test_element_not_matching_output_shapes_is_invalid_argument_naming_the_dataset():
    def gen():
        yield [1, 2]
        yield [1, 2, 3]

    n = Dataset.from_generator(gen, af.int64, [2]).make_one_shot_iterator().get_next()
    with af.Session() as sess:
        assert sess.run(n).tolist() == [1, 2]
        with pytest.raises(af.errors.InvalidArgumentError, match=r"GeneratorDataset.*shape \[3\].*\[2\]"):
            sess.run(n)
    bad = Dataset.range(3).map(lambda x: af.py_func(lambda v: np.zeros(int(v)), [x], af.float64))
    bad = bad.map(lambda v: af.reshape(v, [-1]))
    n = bad.batch(3).make_one_shot_iterator().get_next()
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError,
                                             match=r"BatchDatasetV2.*Cannot batch tensors with different shapes"):
        sess.run(n)


def test_graph_construction_errors():
    with pytest.raises(ValueError, match="scalar boolean"):
        Dataset.range(3).filter(lambda x: x)
    with pytest.raises(TypeError, match="must return a `Dataset`"):
        Dataset.range(3).flat_map(lambda x: x)
    with pytest.raises(TypeError, match="different types"):
        Dataset.range(3).concatenate(Dataset.from_tensors(1.0))
    with pytest.raises(ValueError, match="Cannot unbatch an input with scalar components"):
        Dataset.range(3).unbatch()
    with pytest.raises(ValueError, match="scalar"):
        Dataset.from_tensor_slices(3)


def test_monitored_training_session_ends_cleanly_at_the_end_of_the_input():
    with af.Graph().as_default():
        _train_until_the_input_ends()


def _train_until_the_input_ends():
    x, y = Dataset.from_tensor_slices((np.arange(10.0, dtype=np.float32), np.arange(10.0, dtype=np.float32))) \
        .batch(4).make_one_shot_iterator().get_next()
    w = af.Variable(0.0)
    step = af.train.get_or_create_global_step()
    loss = af.reduce_mean(af.square(w * x - y))
    train = af.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    steps = 0
    with af.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            sess.run(train)
            steps += 1
    assert steps == 3


def test_session_close_cancels_prefetch_tasks():
    ds = Dataset.range(1000).map(lambda x: af.py_func(lambda v: v, [x], af.int64), num_parallel_calls=4)
    n = ds.prefetch(8).make_one_shot_iterator().get_next()
    sess = af.Session()
    assert int(sess.run(n)) == 0
    loop = sess._loop
    sess.close()
    assert loop.is_closed()
    gc.collect()
    assert not [t for t in asyncio.all_tasks(loop) if not t.done()]


def test_reset_drops_the_iterator():
    it = Dataset.range(5).make_initializable_iterator()
    n = it.get_next()
    with af.Session() as sess:
        sess.run(it.initializer)
        assert int(sess.run(n)) == 0
        af.Session.reset("")
        with pytest.raises(af.errors.FailedPreconditionError):
            sess.run(n)


async def test_arun_awaits_elements():
    n = Dataset.range(3).prefetch(2).make_one_shot_iterator().get_next()
    with af.Session() as sess:
        assert [int(await sess.arun(n)) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(af.errors.OutOfRangeError):
            await sess.arun(n)
