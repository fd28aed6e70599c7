"""The embedded Session: fetch structures, feeds, errors, threads, async use, callables."""

from __future__ import annotations

import asyncio
import collections
import threading

import numpy as np
import pytest

import asyncflow as af
from tests import testing_ops


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def test_fetch_structures():
    a = af.constant(1.0, name="a")
    b = af.constant([1, 2], name="b")
    noop = af.no_op()
    Pair = collections.namedtuple("Pair", "x y")
    with af.Session() as sess:
        out = sess.run({"a": a, "nested": [b, (a, "b:0")], "pair": Pair(a, b), "op": noop})
    assert out["a"] == 1.0 and type(out["a"]) is np.float32
    assert out["nested"][0].tolist() == [1, 2] and out["nested"][0].dtype == np.int32
    assert isinstance(out["nested"][1], tuple) and out["nested"][1][1].tolist() == [1, 2]
    assert isinstance(out["pair"], Pair) and out["pair"].x == 1.0
    assert out["op"] is None


def test_fetching_an_operation_returns_none_and_runs_it():
    v = af.Variable(0, name="v")
    inc = af.assign_add(v, 1)
    with af.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(inc.op) is None
        assert sess.run(v) == 1


def test_strings_come_back_as_bytes():
    s = af.constant(["ab", "c"])
    with af.Session() as sess:
        assert sess.run(s).tolist() == [b"ab", b"c"]
        assert sess.run(af.constant("x")) == b"x"


def test_feeds_by_tensor_and_by_name_and_dtype_conversion():
    x = af.placeholder(af.float32, [None, 2], name="x")
    y = af.multiply(x, 2.0)
    with af.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [[1, 2]]}), [[2.0, 4.0]])
        got = sess.run(y, {"x:0": np.array([[0.5, 1.5]], dtype=np.float64)})
        assert got.dtype == np.float32 and got.tolist() == [[1.0, 3.0]]


def test_bad_feeds_are_named():
    x = af.placeholder(af.float32, [None, 2], name="x")
    n = af.placeholder(af.int32, [], name="n")
    y = af.add(x, 1.0)
    with af.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0'"):
            sess.run(y, {x: [1.0, 2.0, 3.0]})
        with pytest.raises(ValueError, match="dtype float64 for Tensor 'n:0', which has dtype int32"):
            sess.run(n, {n: 1.5})
        with pytest.raises(ValueError, match="out of range"):
            sess.run(n, {n: np.int64(2**40)})
        with pytest.raises(af.errors.InvalidArgumentError, match="must feed a value for placeholder tensor 'x'"):
            sess.run(y)
        with pytest.raises(ValueError, match="Cannot interpret feed_dict key"):
            sess.run(y, {"nope:0": 1.0})
        with pytest.raises(TypeError, match="feed"):
            sess.run(y, {x: af.constant([[1.0, 2.0]])})


def test_bad_fetches_are_named():
    af.constant(1.0, name="c")
    with af.Session() as sess:
        with pytest.raises(ValueError, match="Fetch argument 'nope:0' cannot be interpreted as a Tensor"):
            sess.run("nope:0")
        with pytest.raises(TypeError, match="Fetch argument None"):
            sess.run([None])
        with pytest.raises(TypeError, match="invalid type"):
            sess.run(3.5)


def test_run_after_close_raises_runtime_error():
    c = af.constant(1.0)
    sess = af.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_fetched_values_are_private_copies():
    c = af.constant([1.0, 2.0])
    v = af.Variable([1.0, 2.0])
    with af.Session() as sess:
        sess.run(v.initializer)
        got_c, got_v = sess.run([c, v])
        got_c[0] = 100.0
        got_v[0] = 100.0
        assert sess.run(c).tolist() == [1.0, 2.0]
        assert sess.run(v).tolist() == [1.0, 2.0]


def test_fetching_a_fed_value_returns_a_copy():
    x = af.placeholder(af.float32, [2], name="x")
    y = af.identity(x)
    data = np.array([1.0, 2.0], np.float32)
    with af.Session() as sess:
        out_x, out_y = sess.run([x, y], {x: data})
    out_x[0] = 50.0
    out_y[1] = 60.0
    assert data.tolist() == [1.0, 2.0]


def test_two_sessions_never_share_variables():
    v = af.Variable(1.0)
    inc = af.assign_add(v, 1.0)
    with af.Session() as s1, af.Session() as s2:
        s1.run(v.initializer)
        s2.run(v.initializer)
        s1.run(inc)
        s1.run(inc)
        assert s1.run(v) == 3.0 and s2.run(v) == 1.0


def test_eval_and_default_sessions():
    x = af.placeholder(af.float32, [])
    y = af.add(x, 1.0)
    with pytest.raises(ValueError, match="No default session"):
        y.eval({x: 1.0})
    with af.Session() as sess:
        assert y.eval({x: 1.0}) == 2.0
        assert af.get_default_session() is sess
    sess = af.Session()
    with sess.as_default():
        assert y.eval(feed_dict={x: 2.0}) == 3.0
    assert y.eval(feed_dict={x: 3.0}, session=sess) == 4.0
    sess.close()
    inter = af.InteractiveSession()
    try:
        assert y.eval({x: 5.0}) == 6.0
    finally:
        inter.close()
    assert af.get_default_session() is None


def test_session_on_another_graph_refuses_foreign_tensors():
    other = af.Graph()
    with other.as_default():
        t = af.constant(1.0)
    with af.Session() as sess:
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(t)


def test_make_callable():
    x = af.placeholder(af.float32, [], name="x")
    y = af.multiply(x, 3.0)
    with af.Session() as sess:
        f = sess.make_callable([y, x], feed_list=[x])
        assert f(2.0) == [6.0, 2.0]
        assert f(np.float32(1.0))[0] == 3.0
        with pytest.raises(TypeError, match="takes 1 feed values"):
            f()


def test_group_and_tuple():
    v = af.Variable(0)
    w = af.Variable(0)
    step = af.group(af.assign_add(v, 1), af.assign_add(w, 2), name="step")
    assert step.type == "NoOp" and step.name == "step"
    a, b = af.tuple([af.constant(1), af.constant(2)])
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        sess.run(step)
        assert sess.run([v, w]) == [1, 2]
        assert sess.run([a, b]) == [1, 2]


def test_concurrent_runs_from_threads_are_correct():
    x = af.placeholder(af.int64, [])
    y = af.multiply(af.add(x, 1), 2)
    results: dict[int, list[int]] = {}
    with af.Session() as sess:
        def worker(k: int) -> None:
            results[k] = [int(sess.run(y, {x: k * 1000 + i})) for i in range(200)]

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k in range(4):
        assert results[k] == [(k * 1000 + i + 1) * 2 for i in range(200)]


def test_steps_from_two_threads_run_concurrently():
    """A step blocked on another thread's step completes once that one runs: no global step lock."""
    c = af.constant(1.0)
    blocked = testing_ops.wait(c, key="cross-thread")
    release = testing_ops.signal(c, key="cross-thread")
    out: list[float] = []
    with af.Session() as sess:
        t = threading.Thread(target=lambda: out.append(sess.run(blocked, options=af.RunOptions(timeout_in_ms=10000))))
        t.start()
        while not sess._inflight:
            threading.Event().wait(0.005)
        assert sess.run(release) == 1.0
        t.join(timeout=10)
    assert out == [1.0]


async def test_arun_and_run_inside_a_running_loop():
    x = af.placeholder(af.float32, [])
    y = af.add(x, 1.0)
    with af.Session() as sess:
        assert await sess.arun(y, {x: 1.0}) == 2.0
        assert sess.run(y, {x: 2.0}) == 3.0  # plain run from inside the loop: no deadlock
        results = await asyncio.gather(*(sess.arun(y, {x: float(i)}) for i in range(5)))
        assert results == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_config_as_a_dict_or_a_config_proto():
    c = af.constant(2.0)
    with af.Session(config={"operation_timeout_in_ms": 1000, "compression": "float16"}) as sess:
        assert sess.run(c) == 2.0
        assert sess._config.operation_timeout_in_ms == 1000 and sess._config.compression == "float16"
    with af.Session(config=af.ConfigProto(log_device_placement=True, inter_op_parallelism_threads=2)) as sess:
        assert sess.run(c) == 2.0


def test_indexed_slices_are_fetched_and_fed_as_indexed_slices_values():
    """As TF1: fetching an IndexedSlices gives IndexedSlicesValue(values, indices, dense_shape), and one
    can be fed with an IndexedSlicesValue or a (values, indices[, dense_shape]) tuple."""
    g = af.Graph()
    with g.as_default():
        w = af.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
        ids = af.placeholder(af.int32, [None])
        loss = af.reduce_sum(af.gather(w, ids) ** 2)
        grad, = af.gradients(loss, [w])
        assert isinstance(grad, af.IndexedSlices)
        rows = af.reduce_sum(grad.values, axis=1)
        no_shape = af.IndexedSlices(grad.values, grad.indices)
    with af.Session(graph=g) as sess:
        sess.run(w.initializer)
        got = sess.run(grad, {ids: [1, 3]})
        assert isinstance(got, af.IndexedSlicesValue)
        np.testing.assert_array_equal(got.values, 2 * np.arange(12, dtype=np.float32).reshape(4, 3)[[1, 3]])
        np.testing.assert_array_equal(got.indices, [1, 3])
        np.testing.assert_array_equal(got.dense_shape, [4, 3])
        assert got.indices.dtype == np.int32 and got.dense_shape.dtype == np.int32  # as TF1
        nested = sess.run({"g": [grad, no_shape], "loss": loss}, {ids: [0]})
        assert nested["loss"] == np.float32(5.0) and nested["g"][1].dense_shape is None
        np.testing.assert_array_equal(nested["g"][0].values, [[0.0, 2.0, 4.0]])
        fed = af.IndexedSlicesValue(np.ones((2, 3), np.float32), np.array([0, 1], np.int32), np.array([4, 3], np.int32))
        np.testing.assert_array_equal(sess.run(rows, {grad: fed}), [3.0, 3.0])
        np.testing.assert_array_equal(sess.run(rows, {grad: (np.full((1, 3), 2.0, np.float32), [2])}), [6.0])
        with pytest.raises(TypeError, match="IndexedSlices feed"):
            sess.run(rows, {grad: np.ones((2, 3), np.float32)})
