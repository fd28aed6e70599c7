"""Ref-variable updates added late (scatter_mul/div/max/min, scatter_nd_update/add/sub) against numpy, with
TF1's op names, defaults and errors that leave the variable as it was."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def test_scatter_mul_div_max_min_match_numpy():
    init = np.float32([[1, 2], [3, 4], [5, 6]])
    v = af.Variable(init, name="v")
    vi = af.Variable(np.int32([7, -7, 9]), name="vi")
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        expect = init.copy()
        np.multiply.at(expect, [0, 0], np.float32([[2, 2], [3, 3]]))
        np.testing.assert_array_equal(sess.run(af.scatter_mul(v, [0, 0], [[2, 2], [3, 3]])), expect)
        np.divide.at(expect, [2], np.float32([[2, 4]]))
        np.testing.assert_array_equal(sess.run(af.scatter_div(v, [2], [[2, 4]])), expect)
        np.maximum.at(expect, [1, 1], np.float32([[0, 9], [8, 1]]))
        np.testing.assert_array_equal(sess.run(af.scatter_max(v, [1, 1], [[0, 9], [8, 1]])), expect)
        np.minimum.at(expect, [0], np.float32([[1, 100]]))
        np.testing.assert_array_equal(sess.run(af.scatter_min(v, [0], [[1, 100]])), expect)
        # Integer division truncates toward zero, as TF's kernel.
        assert sess.run(af.scatter_div(vi, [0, 1, 2], [2, 2, -2])).tolist() == [3, -3, -4]


def test_scatter_nd_updates_match_numpy():
    v = af.Variable(np.zeros([3, 2], np.float32), name="v")
    with af.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(af.scatter_nd_update(v, [[1]], [[5.0, 6.0]])).tolist() == [[0, 0], [5, 6], [0, 0]]
        assert sess.run(af.scatter_nd_add(v, [[1, 0], [1, 0], [2, 1]], [1.0, 2.0, 3.0])).tolist() == \
            [[0, 0], [8, 6], [0, 3]]
        assert sess.run(af.scatter_nd_sub(v, [[2]], [[1.0, 1.0]])).tolist() == [[0, 0], [8, 6], [-1, 2]]


def test_names_attrs_and_shapes_as_tf1():
    v = af.Variable(np.zeros([3, 2], np.float32), name="v")
    ops = [af.scatter_mul(v, [0], [[1.0, 1.0]]), af.scatter_div(v, [0], [[1.0, 1.0]]),
           af.scatter_max(v, [0], [[1.0, 1.0]]), af.scatter_min(v, [0], [[1.0, 1.0]]),
           af.scatter_nd_update(v, [[0]], [[1.0, 1.0]]), af.scatter_nd_add(v, [[0, 1]], [1.0]),
           af.scatter_nd_sub(v, [[0, 1]], [1.0])]
    assert [t.op.name for t in ops] == ["ScatterMul", "ScatterDiv", "ScatterMax", "ScatterMin", "ScatterNdUpdate",
                                        "ScatterNdAdd", "ScatterNdSub"]
    assert [t.op.get_attr("use_locking") for t in ops] == [False, False, False, False, True, False, False]
    assert all(t.shape.as_list() == [3, 2] and t.dtype == af.float32._as_ref for t in ops)


def test_bad_indices_fail_and_leave_the_variable_as_it_was():
    v = af.Variable(np.ones([3, 2], np.float32), name="v")
    idx = af.placeholder(af.int32, None, name="idx")
    with pytest.raises(ValueError, match="ScatterNdUpdate.*must match"):
        af.scatter_nd_update(v, [[0]], [[1.0, 2.0, 3.0]])
    with af.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(af.errors.InvalidArgumentError, match=r"ScatterNdAdd.*indices\[1\] = \[4\]"):
            sess.run(af.scatter_nd_add(v, idx, [[1.0, 1.0], [1.0, 1.0]]), {idx: [[0], [4]]})
        with pytest.raises(af.errors.InvalidArgumentError, match=r"ScatterMul.*= 3 is not in \[0, 3\)"):
            sess.run(af.scatter_mul(v, idx, [[2.0, 2.0]]), {idx: [3]})
        assert sess.run(v).tolist() == np.ones([3, 2]).tolist()
