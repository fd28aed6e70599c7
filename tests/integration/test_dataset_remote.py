"""An af.data pipeline on a worker of a real cluster: the program travels as JSON, elements come back;
a dataset holding Python callables is refused with a clear error, as py_func is."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af


def test_pipeline_on_a_worker_matches_the_in_process_session(cluster):
    def build():
        g = af.Graph()
        with g.as_default():
            x = af.placeholder(af.float32, [None, 2], name="x")
            with af.device("/job:worker/task:0"):
                offset = af.constant(1.0)
                ds = af.data.Dataset.from_tensor_slices(x).map(lambda r: r * 2.0 + offset)
                ds = ds.filter(lambda r: r[0] > 2.0).shuffle(4, seed=3).batch(2).prefetch(1)
                it = ds.make_initializable_iterator()
                n = it.get_next()
        return g, x, it, n

    results = []
    for target in ("", cluster.target):
        g, x, it, n = build()
        if not target:
            for op in g.get_operations():
                op._set_device(None)
        with af.Session(target, graph=g) as sess:
            got = []
            for rows in (np.arange(12, dtype=np.float32).reshape(6, 2), np.ones((3, 2), np.float32)):
                sess.run(it.initializer, {x: rows})
                while True:
                    try:
                        got.append(sess.run(n))
                    except af.errors.OutOfRangeError:
                        break
            results.append(got)
    local, remote = results
    assert len(local) == len(remote) == 5
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a, b)


def test_from_generator_is_refused_remotely(cluster):
    g = af.Graph()
    with g.as_default(), af.device("/job:worker/task:0"):
        n = af.data.Dataset.from_generator(lambda: iter([1, 2]), af.int64).make_one_shot_iterator().get_next()
    with af.Session(cluster.target, graph=g) as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="Python function of this process"):
            sess.run(n)
