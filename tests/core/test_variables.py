"""Variables: TF1 naming, initialisation, updates against numpy, errors that leave state intact."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def test_variable_ops_are_named_as_tf1():
    with af.name_scope("layer"):
        w = af.Variable(af.zeros([2, 3]), name="w")
    af.Variable(1.0, name="b")
    names = [op.name for op in af.get_default_graph().get_operations()]
    assert names == ["layer/zeros", "layer/w", "layer/w/Assign", "layer/w/read",
                     "b/initial_value", "b", "b/Assign", "b/read"]
    assert w.name == "layer/w:0" and w.op.type == "VariableV2"
    assert w.dtype == af.float32._as_ref and w.dtype.base_dtype is af.float32
    assert w.shape.as_list() == [2, 3] and w.get_shape().as_list() == [2, 3]
    assert w.initializer.name == "layer/w/Assign" and w.value().name == "layer/w/read:0"
    assert w.op.get_attr("shape").as_list() == [2, 3]


def test_callable_initial_value_is_built_under_initializer_scope():
    v = af.Variable(lambda: af.ones([2]), name="v")
    assert v.initial_value.op.name.startswith("v/Initializer/")


def test_uninitialized_read_names_the_variable():
    v = af.Variable([1.0, 2.0], name="weights")
    y = af.multiply(v, 2.0)
    with af.Session() as sess:
        with pytest.raises(af.errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(y)
        sess.run(af.global_variables_initializer())
        assert sess.run(y).tolist() == [2.0, 4.0]


def test_assign_updates_match_numpy():
    v = af.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="v")
    delta = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    with af.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(af.assign_add(v, delta)).tolist() == (np.arange(6).reshape(3, 2) + delta).tolist()
        assert sess.run(v.assign_sub(delta)).tolist() == np.arange(6).reshape(3, 2).tolist()
        assert sess.run(v.assign(np.ones((3, 2)))).tolist() == np.ones((3, 2)).tolist()
        expect = np.ones((3, 2), np.float32)
        np.add.at(expect, [0, 0, 2], [[1, 1], [2, 2], [3, 3]])
        got = sess.run(af.scatter_add(v, [0, 0, 2], [[1, 1], [2, 2], [3, 3]]))
        np.testing.assert_array_equal(got, expect)
        np.subtract.at(expect, [1], [[5, 5]])
        np.testing.assert_array_equal(sess.run(af.scatter_sub(v, [1], [[5, 5]])), expect)
        expect[[2, 0]] = [[7, 8], [9, 10]]
        np.testing.assert_array_equal(sess.run(af.scatter_update(v, [2, 0], [[7, 8], [9, 10]])), expect)


def test_scatter_never_changes_a_value_fetched_earlier():
    v = af.Variable(np.zeros([4], np.float32))
    upd = af.scatter_add(v, [1], [5.0])
    with af.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        sess.run(upd)
        sess.run(upd)
        assert before.tolist() == [0, 0, 0, 0]
        assert sess.run(v).tolist() == [0, 10, 0, 0]


def test_bad_updates_fail_and_leave_the_variable_as_it_was():
    v = af.Variable(np.zeros([3, 2], np.float32), name="v")
    x = af.placeholder(af.float32, None, name="x")
    idx = af.placeholder(af.int32, None, name="idx")
    with af.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(af.errors.InvalidArgumentError, match=r"indices.*= 7 is not in \[0, 3\)"):
            sess.run(af.scatter_add(v, idx, [[1.0, 1.0], [1.0, 1.0]]), {idx: [0, 7]})
        with pytest.raises(af.errors.InvalidArgumentError, match="AssignAdd"):
            sess.run(af.assign_add(v, x), {x: np.ones([2, 2])})
        assert sess.run(v).tolist() == np.zeros([3, 2]).tolist()
    with pytest.raises(ValueError, match="Shapes must be equal"):
        af.assign(v, np.ones([2, 2], np.float32))


def test_variables_initializer_and_is_initialized():
    a = af.Variable(1.0, name="a")
    b = af.Variable(2.0, name="b")
    with af.Session() as sess:
        sess.run(af.variables_initializer([a]))
        assert sess.run(af.is_variable_initialized(a)) and not sess.run(af.is_variable_initialized(b))
        assert sess.run(af.report_uninitialized_variables()).tolist() == [b"b"]
        sess.run(af.global_variables_initializer())
        assert sess.run(af.report_uninitialized_variables()).tolist() == []


def test_variables_in_arithmetic_and_indexing():
    w = af.Variable([[1.0, 2.0], [3.0, 4.0]])
    x = af.constant([[1.0, 0.0]])
    with af.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(w * 2).tolist() == [[2, 4], [6, 8]]
        assert sess.run(x @ w).tolist() == [[1, 2]]
        assert sess.run(w[1]).tolist() == [3, 4]
        assert sess.run(-w)[0, 0] == -1.0


def test_variable_load_and_eval():
    v = af.Variable([0.0, 0.0])
    with af.Session() as sess:
        v.load([3.0, 4.0], sess)
        assert v.eval(sess).tolist() == [3.0, 4.0]


def test_variable_from_a_variable_def_wraps_existing_ops_as_tf1():
    with af.Graph().as_default() as graph:
        with af.name_scope("imported"):
            w = af.Variable([1.0, 2.0], name="w", trainable=False)
        spec = {"variable_name": "w:0", "initializer_name": "w/Assign", "snapshot_name": "w/read:0",
                "initial_value_name": "w/initial_value:0", "trainable": False}
        n_ops = len(graph.get_operations())
        again = af.Variable(variable_def=spec, import_scope="imported")
        assert len(graph.get_operations()) == n_ops  # no new op
        assert again.name == w.name == "imported/w:0" and again.initializer is w.initializer
        assert again.value() is w.value() and again.initial_value is w.initial_value and not again.trainable
        with af.Session() as sess:
            sess.run(again.initializer)
            assert sess.run(again).tolist() == [1.0, 2.0]
        with pytest.raises(ValueError, match="not a variable's output"):
            af.Variable(variable_def={**spec, "variable_name": "w/read:0"}, import_scope="imported")
        with pytest.raises(ValueError, match="mutually exclusive"):
            af.Variable(1.0, variable_def=spec)
