"""SparseTensor, SparseTensorValue and sparse_placeholder: properties, static shapes, feeding (a
SparseTensorValue or an (indices, values, dense_shape) tuple) and fetching (a SparseTensorValue, also
inside structures and from eval). Placeholder names were checked against TF 2.21's compat.v1."""

import numpy as np
import pytest

import asyncflow as af

IDX = np.array([[0, 1], [1, 2]], np.int64)
VAL = np.array([1.0, 2.0], np.float32)


def test_properties_and_static_shape():
    with af.Graph().as_default() as g:
        st = af.SparseTensor(IDX, VAL, [2, 3])
        assert st.indices.dtype == af.int64 and st.dense_shape.dtype == af.int64
        assert st.dtype == af.float32 and st.graph is g and st.op is st.values.op
        assert st.shape.as_list() == [2, 3] and st.get_shape().as_list() == [2, 3]
        assert st.indices.name == "SparseTensor/indices:0"
        fed = af.SparseTensor(af.placeholder(af.int64, [None, 2]), af.placeholder(af.float32, [None]),
                              af.placeholder(af.int64, [2]))
        assert fed.shape.as_list() == [None, None]
        fed.set_shape([None, 4])
        assert fed.shape.as_list() == [None, 4]
        with pytest.raises(ValueError, match="not compatible"):
            fed.set_shape([3, 5])
        assert af.SparseTensor.from_value(af.SparseTensorValue(IDX, VAL, [2, 3])).shape.as_list() == [2, 3]
        with pytest.raises(TypeError, match="neither a SparseTensor nor SparseTensorValue"):
            af.SparseTensor.from_value((IDX, VAL, [2, 3]))
        assert af.convert_to_tensor_or_sparse_tensor(st) is st
        with pytest.raises(ValueError, match="indices must have rank 2"):
            af.SparseTensor([0, 1], [1.0, 2.0], [2])
        with pytest.raises(ValueError, match="indices has 2 columns but dense_shape has 3 elements"):
            af.SparseTensor(IDX, VAL, [2, 3, 4])


def test_fetch_gives_sparse_tensor_values_in_structures_and_eval():
    with af.Graph().as_default():
        st = af.SparseTensor(IDX, VAL, [2, 3])
        doubled = st.with_values(st.values * 2)
        with af.Session() as s:
            v = s.run(st)
            both = s.run({"a": st, "b": [doubled, st.values]})
            with s.as_default():
                evaluated = st.eval()
    assert isinstance(v, af.SparseTensorValue)
    np.testing.assert_array_equal(v.indices, IDX)
    np.testing.assert_array_equal(v.values, VAL)
    np.testing.assert_array_equal(v.dense_shape, [2, 3])
    assert isinstance(both["b"][0], af.SparseTensorValue)
    np.testing.assert_array_equal(both["b"][0].values, VAL * 2)
    np.testing.assert_array_equal(evaluated.indices, IDX)


def test_sparse_placeholder_names_shapes_and_feeds():
    with af.Graph().as_default():
        named = af.sparse_placeholder(af.float32, [None, 3], name="sp")
        assert [named.indices.name, named.values.name, named.dense_shape.name] == \
            ["sp/indices:0", "sp/values:0", "sp/shape:0"]
        assert named.shape.as_list() == [None, 3] and named.indices.shape.as_list() == [None, 2]
        free = af.sparse_placeholder(af.float32)
        assert [free.indices.name, free.values.name, free.dense_shape.name] == \
            ["Placeholder_2:0", "Placeholder_1:0", "Placeholder:0"]
        assert free.shape.ndims is None
        total = af.sparse_reduce_sum(named, 1)
        dense = af.sparse_tensor_to_dense(free)
        with af.Session() as s:
            as_tuple = s.run(total, {named: ([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])})
            as_value = s.run(dense, {free: af.SparseTensorValue(IDX, VAL, np.array([2, 4]))})
            echoed = s.run(named, {named: af.SparseTensorValue(IDX, VAL, [2, 3])})
            with pytest.raises(TypeError, match=r"SparseTensor feed \(sp/values:0\) takes a SparseTensorValue"):
                s.run(total, {named: VAL})
            with pytest.raises(ValueError, match="Cannot feed value of dtype float32 for Tensor .sp/indices:0."):
                s.run(total, {named: (VAL, VAL, [2, 3])})
    np.testing.assert_array_equal(as_tuple, [1.0, 2.0])
    np.testing.assert_array_equal(as_value, [[0, 1, 0, 0], [0, 0, 2, 0]])
    assert isinstance(echoed, af.SparseTensorValue)
    np.testing.assert_array_equal(echoed.indices, IDX)


def test_dense_shape_of_a_sparse_placeholder_defaults_to_its_shape():
    with af.Graph().as_default():
        p = af.sparse_placeholder(af.float32, [2, 3])
        with af.Session() as s:
            got = s.run(af.sparse_tensor_to_dense(p), {p.indices: IDX, p.values: VAL})
    np.testing.assert_array_equal(got, [[0, 1, 0], [0, 0, 2]])


def test_sparse_times_and_over_dense_keep_the_indices_as_tf1():
    """`sp * dense` and `sp / dense` (SparseDenseCwiseMul/Div, the dense side broadcast to the sparse shape); names
    and values as TF 2.21 gave for the same program (`mul`, `truediv`)."""
    with af.Graph().as_default():
        sp = af.SparseTensor([[0, 1], [1, 2]], [2.0, 4.0], [2, 3])
        dense = af.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 8.0]])
        product, quotient = sp * dense, sp / 2.0
        assert isinstance(product, af.SparseTensor) and product.indices is sp.indices
        assert product.values.name == "mul:0" and quotient.values.name == "truediv:0"
        with af.Session() as sess:
            got_product, got_quotient = sess.run([product, quotient])
        np.testing.assert_array_equal(got_product.values, np.array([4.0, 32.0], np.float32))
        np.testing.assert_array_equal(got_quotient.values, np.array([1.0, 2.0], np.float32))
        np.testing.assert_array_equal(got_product.dense_shape, [2, 3])
