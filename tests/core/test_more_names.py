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


def test_assert_variables_initialized_fails_until_every_variable_is():
    assert af.assert_variables_initialized() is None
    a = af.Variable(1.0, name="a")
    b = af.Variable(np.zeros([2, 3]), name="b")
    check = af.assert_variables_initialized()
    one = af.assert_variables_initialized([b])
    assert (check.op.type, one.op.type) == ("Pack", "Rank")
    with af.Session() as sess:
        sess.run(a.initializer)
        with pytest.raises(af.errors.FailedPreconditionError, match="uninitialized value b"):
            sess.run(check)
        sess.run(b.initializer)
        assert sess.run(check).tolist() == [0, 2] and sess.run(one) == 2


def test_option_enums_as_tf1():
    assert [m.value for m in af.UnconnectedGradients] == ["none", "zero"]
    assert (af.AggregationMethod.ADD_N, af.AggregationMethod.DEFAULT, af.AggregationMethod.EXPERIMENTAL_TREE,
            af.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N) == (0, 0, 1, 2)
    assert [(m.name, m.value) for m in af.VariableSynchronization] == [("AUTO", 0), ("NONE", 1), ("ON_WRITE", 2),
                                                                      ("ON_READ", 3)]
    assert [m.name for m in af.VariableAggregation] == ["NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"]
    assert af.VariableAggregation.ONLY_FIRST_TOWER is af.VariableAggregation.ONLY_FIRST_REPLICA
    x = af.placeholder(af.float32, [2])
    unused = af.placeholder(af.float32, [3])
    g = af.gradients(af.reduce_sum(x * 2.0), [x, unused], unconnected_gradients=af.UnconnectedGradients.ZERO,
                     aggregation_method=af.AggregationMethod.EXPERIMENTAL_TREE)
    v = af.get_variable("v", [2], synchronization=af.VariableSynchronization.ON_READ,
                        aggregation=af.VariableAggregation.MEAN)
    w = af.Variable(1.0, synchronization=af.VariableSynchronization.AUTO, aggregation=af.VariableAggregation.SUM)
    assert af.gradients(af.reduce_sum(x), unused, unconnected_gradients=af.UnconnectedGradients.NONE) == [None]
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        assert sess.run(g[1], {x: [1, 2]}).tolist() == [0, 0, 0]
        assert sess.run(v).shape == (2,) and sess.run(w) == 1.0


def test_namespaces_manip_bitwise_and_dtypes():
    assert af.manip.roll is af.roll and af.manip.scatter_nd is af.scatter_nd and not af.manip.NOT_YET
    assert sorted(af.bitwise.__all__) == ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
                                          "right_shift"]
    assert (af.dtypes.cast, af.dtypes.saturate_cast, af.dtypes.complex, af.dtypes.as_string) == \
        (af.cast, af.saturate_cast, af.complex, af.as_string)
    assert af.sparse.mask is af.sparse_mask and af.sparse.reset_shape is af.sparse_reset_shape
    assert af.sparse.maximum is af.sparse_maximum and af.sparse.eye is not None and af.sparse.expand_dims is not None
    with af.Session() as sess:
        assert sess.run(af.dtypes.saturate_cast([300.0], af.uint8)).tolist() == [255]
