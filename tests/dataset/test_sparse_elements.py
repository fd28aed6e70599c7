"""SparseTensor components in af.data elements, as TF1's: classes, static shapes and types, batch / unbatch /
from_tensor_slices / from_tensors semantics, iterators (from_structure, string handles, re-initialisation),
functions that take and return SparseTensors, and the TFRecord -> parse (VarLenFeature) -> batch pipeline
feeding an embedding_lookup_sparse model. Values are checked against numpy; classes, shapes, names and the
model's losses were checked against TF 2.21 (tf.compat.v1, graph mode) with tfdiff."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.dataset.helpers import drain, elements

Dataset = af.data.Dataset


@pytest.fixture(autouse=True)
def fresh_graph():
    with af.Graph().as_default():  # names and variables as in a program of its own
        yield


X = np.array([[1, 0, 2], [0, 0, 3], [4, 0, 0], [0, 0, 0], [0, 5, 0]], np.float32)


def sparse_rows(dense: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """numpy reference: each row of `dense` as (indices, values, dense_shape), entries in row-major order."""
    out = []
    for row in dense:
        idx = np.argwhere(row != 0)
        out.append((idx, row[row != 0], np.array(row.shape)))
    return out


def batched(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy reference of TF's sparse batching: row number prepended, dense_shape [rows, max of each dim]."""
    idx = [np.concatenate([np.full((len(i), 1), b), np.reshape(i, (len(i), len(s)))], 1)
           for b, (i, _, s) in enumerate(rows)]
    return (np.concatenate(idx).astype(np.int64), np.concatenate([v for _, v, _ in rows]),
            np.concatenate([[len(rows)], np.max([s for _, _, s in rows], axis=0)]))


def check_sparse(got: af.SparseTensorValue, want: tuple) -> None:
    assert isinstance(got, af.SparseTensorValue)
    np.testing.assert_array_equal(got.indices, np.asarray(want[0]).reshape(-1, len(want[2])))
    np.testing.assert_array_equal(got.values, want[1])
    np.testing.assert_array_equal(got.dense_shape, want[2])
    assert got.indices.dtype == np.int64 and got.dense_shape.dtype == np.int64


def sparse_ds() -> af.data.Dataset:
    return Dataset.from_tensor_slices(X).map(lambda v: af.sparse.from_dense(v))


def test_map_to_sparse_classes_types_shapes_as_tf():
    ds = sparse_ds()
    assert ds.output_classes is af.SparseTensor
    assert ds.output_types == af.float32 and ds.output_shapes.as_list() == [3]
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([3]), af.float32)"  # TF: tf.float32
    assert af.data.get_output_classes(ds) is af.SparseTensor
    for got, want in zip(elements(ds), sparse_rows(X)):
        check_sparse(got, want)


def test_get_next_rebuilds_a_sparse_tensor_with_tf_static_shapes_and_names():
    n = sparse_ds().make_one_shot_iterator().get_next()
    assert isinstance(n, af.SparseTensor) and n.shape.as_list() == [3]
    assert n.indices.shape.as_list() == [None, 1] and n.values.shape.as_list() == [None]
    assert n.dense_shape.name == "shape:0"  # TF 2.21: a fully known dense shape is a constant named "shape"
    b = sparse_ds().batch(2).make_one_shot_iterator().get_next()
    assert b.shape.as_list() == [None, 3] and b.indices.shape.as_list() == [None, 2]
    assert b.dense_shape.name == "stack:0" and b.dense_shape.shape.as_list() == [2]  # known sizes stacked in
    assert af.sparse.to_dense(b).shape.as_list() == [None, 3]


def test_batch_prepends_the_row_and_takes_the_largest_shape():
    ds = sparse_ds().batch(2)
    assert ds.output_classes is af.SparseTensor and ds.output_shapes.as_list() == [None, 3]
    assert sparse_ds().batch(2, drop_remainder=True).output_shapes.as_list() == [2, 3]
    rows = sparse_rows(X)
    got = elements(ds)
    assert len(got) == 3
    for g, b in zip(got, (rows[0:2], rows[2:4], rows[4:5])):
        check_sparse(g, batched(b))
    # elements of different dense shapes: dense_shape is the largest in each dimension (TF 2.21)
    var = Dataset.range(1, 4).map(lambda k: af.SparseTensor([[0]], [k], af.reshape(k + 1, [1]))).batch(3)
    assert var.output_shapes.as_list() == [None, None]
    check_sparse(elements(var)[0], ([[0, 0], [1, 0], [2, 0]], [1, 2, 3], [3, 4]))


def test_unbatch_undoes_batch_and_keeps_dense_companions_in_step():
    ds = Dataset.from_tensor_slices((np.arange(5), af.sparse.from_dense(X))).batch(2).unbatch()
    assert ds.output_classes == (af.Tensor, af.SparseTensor)
    assert [s.as_list() for s in ds.output_shapes] == [[], [3]]
    got = elements(ds)
    assert [int(i) for i, _ in got] == [0, 1, 2, 3, 4]
    for (_, g), want in zip(got, sparse_rows(X)):
        check_sparse(g, want)
    check_sparse(elements(sparse_ds().batch(3).unbatch())[3], sparse_rows(X)[3])  # an empty row stays a row


def test_from_tensor_slices_of_a_sparse_tensor_and_value():
    st = af.SparseTensor([[0, 1], [2, 0], [2, 3], [4, 1]], [1.0, 2.0, 3.0, 4.0], [5, 4])
    ds = Dataset.from_tensor_slices(st)
    assert ds.output_classes is af.SparseTensor and ds.output_types == af.float32
    assert ds.output_shapes.as_list() == [4]
    want = [([[1]], [1.0], [4]), ([], [], [4]), ([[0], [3]], [2.0, 3.0], [4]), ([], [], [4]), ([[1]], [4.0], [4])]
    for g, w in zip(elements(ds), want, strict=True):
        check_sparse(g, w)
    sv = af.SparseTensorValue([[0, 1], [2, 0]], np.array([1, 2], np.int32), [3, 4])
    ds = Dataset.from_tensor_slices(sv)
    assert ds.output_classes is af.SparseTensor and ds.output_types == af.int32 and ds.output_shapes.as_list() == [4]
    assert [g.values.tolist() for g in elements(ds)] == [[1], [], [2]]
    mixed = Dataset.from_tensor_slices((X, af.sparse.from_dense(X)))
    assert mixed.output_classes == (af.Tensor, af.SparseTensor) and mixed.output_types == (af.float32, af.float32)


def test_from_tensors_of_a_sparse_tensor():
    st = af.SparseTensor([[0, 1], [2, 0]], [1.0, 2.0], [5, 4])
    ds = Dataset.from_tensors(st)
    assert ds.output_classes is af.SparseTensor and ds.output_shapes.as_list() == [5, 4]
    (got,) = elements(ds.repeat(1))
    check_sparse(got, ([[0, 1], [2, 0]], [1.0, 2.0], [5, 4]))


def test_functions_take_and_return_sparse_tensors():
    zipped = Dataset.zip((Dataset.range(5), sparse_ds()))
    ds = zipped.filter(lambda i, sp: af.size(sp.values) > 0).map(
        lambda i, sp: (i, sp.values * 2.0, af.sparse.reduce_sum(sp)))
    got = elements(ds)
    assert [int(g[0]) for g in got] == [0, 1, 2, 4]
    assert [g[1].tolist() for g in got] == [[2, 4], [6], [8], [10]]
    np.testing.assert_allclose([g[2] for g in got], X.sum(1)[[0, 1, 2, 4]])
    same = sparse_ds().map(lambda sp: af.SparseTensor(sp.indices, sp.values + 1.0, sp.dense_shape))
    assert same.output_shapes.as_list() == [3]  # TF 2.21: the input's dense shape is known inside the function
    back = sparse_ds().map(lambda sp: af.sparse.to_dense(sp))
    np.testing.assert_array_equal(np.stack(elements(back)), X)
    value = Dataset.range(2).map(lambda k: af.SparseTensorValue([[0]], [k], [2]))
    assert value.output_classes is af.SparseTensor
    check_sparse(elements(value)[1], ([[0]], [1], [2]))


def test_shuffle_cache_prefetch_carry_sparse_rows(tmp_path):
    ds = sparse_ds().cache(str(tmp_path / "c")).shuffle(5, seed=3).prefetch(2)
    for _ in range(2):  # the second pass reads the cache
        got = sorted(g.values.tolist() for g in elements(ds))
        assert got == sorted(r[1].tolist() for r in sparse_rows(X))


def test_iterator_from_structure_with_sparse_classes_and_reinit():
    it = af.data.Iterator.from_structure(af.float32, af.TensorShape([None, 3]), output_classes=af.SparseTensor)
    assert it.output_classes is af.SparseTensor
    init_a = it.make_initializer(sparse_ds().batch(2))
    init_b = it.make_initializer(sparse_ds().skip(1).batch(3))
    n = it.get_next()
    assert isinstance(n, af.SparseTensor) and n.shape.as_list() == [None, 3]
    dense = af.sparse.to_dense(n)
    rows = sparse_rows(X)
    with af.Session() as sess:
        sess.run(init_a)
        for g, b in zip(drain(sess, n), (rows[0:2], rows[2:4], rows[4:5]), strict=True):
            check_sparse(g, batched(b))
        sess.run(init_b)
        np.testing.assert_array_equal(np.concatenate(drain(sess, dense)), X[1:])
    dense_it = af.data.Iterator.from_structure(af.float32, af.TensorShape([None]))
    with pytest.raises(TypeError, match="output classes"):
        dense_it.make_initializer(sparse_ds())  # TF 2.21: TypeError as well


def test_string_handles_switch_between_sparse_iterators():
    ds = sparse_ds()
    h = af.placeholder(af.string, [])
    it1, it2 = ds.make_one_shot_iterator(), ds.skip(3).make_one_shot_iterator()
    hit = af.data.Iterator.from_string_handle(h, ds.output_types, ds.output_shapes, ds.output_classes)
    n = hit.get_next()
    assert isinstance(n, af.SparseTensor)
    rows = sparse_rows(X)
    with af.Session() as sess:
        h1, h2 = sess.run([it1.string_handle(), it2.string_handle()])
        check_sparse(sess.run(n, {h: h1}), rows[0])
        check_sparse(sess.run(n, {h: h2}), rows[3])
        check_sparse(sess.run(n, {h: h1}), rows[1])


def test_initializable_iterator_reinitialised_with_new_sparse_feeds():
    pi, pv, ps = af.placeholder(af.int64, [None, 2]), af.placeholder(af.float32, [None]), af.placeholder(af.int64, [2])
    ds = Dataset.from_tensor_slices(af.SparseTensor(pi, pv, ps)).batch(2)
    assert ds.output_shapes.as_list() == [None, None]
    it = ds.make_initializable_iterator()
    n = it.get_next()
    with af.Session() as sess:
        sess.run(it.initializer, {pi: [[0, 0], [1, 2], [2, 1]], pv: [1, 2, 3], ps: [3, 4]})
        got = drain(sess, n)
        check_sparse(got[0], ([[0, 0], [1, 2]], [1, 2], [2, 4]))
        check_sparse(got[1], ([[0, 1]], [3], [1, 4]))
        sess.run(it.initializer, {pi: [[1, 1]], pv: [7], ps: [2, 2]})
        got = drain(sess, n)
        check_sparse(got[0], ([[1, 1]], [7], [2, 2]))


def test_padded_batch_batches_sparse_components_like_batch():
    # TF 2.21 refuses sparse components in padded_batch (TypeError); asyncflow batches them as batch does,
    # a padded shape giving the least dense shape
    ds = Dataset.zip((sparse_ds(), Dataset.range(5).map(lambda k: af.fill(af.reshape(k, [1]), k))))
    pb = ds.padded_batch(2, padded_shapes=([5], [-1]))
    assert pb.output_classes == (af.SparseTensor, af.Tensor)
    assert [s.as_list() for s in pb.output_shapes] == [[None, 5], [None, None]]
    got = elements(pb)
    check_sparse(got[0][0], ([[0, 0], [0, 2], [1, 2]], [1.0, 2.0, 3.0], [2, 5]))
    assert got[0][1].tolist() == [[0], [1]] and got[1][1].tolist() == [[2, 2, 0], [3, 3, 3]]
    with pytest.raises(ValueError, match="not compatible"):
        sparse_ds().padded_batch(2, padded_shapes=[2])
    var = Dataset.range(1, 4).map(lambda k: af.SparseTensor([[0]], [k], af.reshape(k + 1, [1])))
    too_small = var.padded_batch(3, padded_shapes=[2]).make_one_shot_iterator().get_next()
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="smaller size"):
        sess.run(too_small)


def test_bad_sparse_input_errors():
    with pytest.raises(ValueError, match="scalar"):
        Dataset.from_tensor_slices(af.SparseTensor(af.zeros([0, 0], af.int64), af.zeros([0]),
                                                   af.zeros([0], af.int64)))
    ranks = Dataset.range(2).map(lambda k: af.SparseTensor(af.zeros([0, k + 1], af.int64), af.zeros([0]),
                                                             af.ones(af.reshape(k + 1, [1]), af.int64)))
    n = ranks.batch(2).make_one_shot_iterator().get_next()
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="different ranks"):
        sess.run(n)
    bad = Dataset.from_tensors((np.arange(3), af.SparseTensor([[0, 0]], [1], [2, 2]))).unbatch()
    with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="same size in dimension 0"):
        sess.run(bad.make_one_shot_iterator().get_next())


def test_sparse_pipeline_runs_from_the_graph_document():
    # a worker of a distributed run rebuilds the program from its JSON: the same elements
    n = sparse_ds().batch(2).make_one_shot_iterator().get_next()
    af.get_default_graph()._dataset_programs.clear()
    rows = sparse_rows(X)
    with af.Session() as sess:
        check_sparse(sess.run(n), batched(rows[0:2]))


# -- TFRecord files of Examples with VarLenFeature, batched, feeding a model -----------------------------------
def write_records(path: str, ids: list[list[int]], labels: list[float]) -> None:
    with af.io.TFRecordWriter(path) as w:
        for i, y in zip(ids, labels):
            ex = af.train.Example(features=af.train.Features(feature={
                "ids": af.train.Feature(int64_list=af.train.Int64List(value=i)),
                "y": af.train.Feature(float_list=af.train.FloatList(value=[y]))}))
            w.write(ex.SerializeToString())


FEATURES = {"ids": af.VarLenFeature(af.int64), "y": af.FixedLenFeature([], af.float32)}
IDS = [[3, 1], [], [7, 8, 9], [2], [5, 5]]


@pytest.mark.parametrize("parse_after_batch", [False, True])
def test_tfrecord_varlen_batch_pipeline(tmp_path, parse_after_batch):
    path = str(tmp_path / "a.tfrecord")
    write_records(path, IDS, [0.0, 1.0, 2.0, 3.0, 4.0])
    records = af.data.TFRecordDataset([path])
    if parse_after_batch:
        ds = records.batch(3).map(lambda r: af.io.parse_example(r, FEATURES))
    else:
        parsed = records.map(lambda r: af.parse_single_example(r, FEATURES))
        assert parsed.output_classes == {"ids": af.SparseTensor, "y": af.Tensor}
        assert parsed.output_shapes["ids"].as_list() == [None] and parsed.output_shapes["y"].as_list() == []
        ds = parsed.batch(3)
    assert ds.output_classes == {"ids": af.SparseTensor, "y": af.Tensor}
    assert ds.output_shapes["ids"].as_list() == [None, None] and ds.output_shapes["y"].as_list() == [None]
    n = ds.prefetch(1).make_one_shot_iterator().get_next()
    assert isinstance(n["ids"], af.SparseTensor)
    with af.Session() as sess:
        got = drain(sess, n)
    assert [g["y"].tolist() for g in got] == [[0, 1, 2], [3, 4]]
    rows = [(np.arange(len(i)).reshape(-1, 1), np.array(i, np.int64), np.array([len(i)])) for i in IDS]
    check_sparse(got[0]["ids"], batched(rows[:3]))
    check_sparse(got[1]["ids"], batched(rows[3:]))


def test_embedding_lookup_sparse_model_trains_from_a_tfrecord_pipeline(tmp_path):
    rng = np.random.RandomState(0)
    ids = [rng.randint(0, 6, size=rng.randint(0, 4)).tolist() for _ in range(12)]
    path = str(tmp_path / "train.tfrecord")
    write_records(path, ids, [float(len(i) % 2) for i in ids])
    ds = af.data.TFRecordDataset(path).map(lambda r: af.parse_single_example(r, FEATURES)).batch(4).repeat(2)
    el = ds.make_one_shot_iterator().get_next()
    emb = af.get_variable("emb", initializer=np.linspace(-1, 1, 18).reshape(6, 3).astype(np.float32))
    w = af.get_variable("w", initializer=np.full([3, 1], 0.1, np.float32))
    h = af.nn.embedding_lookup_sparse(emb, el["ids"], None, combiner="mean")
    assert h.shape.as_list() == [None, 3]
    logits = af.squeeze(af.matmul(h, w), 1)
    labels = el["y"][:af.shape(logits)[0]]  # rows after the last non-empty one are not looked up (as TF)
    loss = af.reduce_mean(af.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = af.train.GradientDescentOptimizer(0.5).minimize(loss)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        losses = [sess.run([loss, train])[0] for _ in range(6)]
        with pytest.raises(af.errors.OutOfRangeError):
            sess.run(train)
        emb_value = sess.run(emb)
    # checked against TF 2.21 (the same records and program under tf.compat.v1)
    np.testing.assert_allclose(losses, [0.6998719, 0.6565232, 0.6139096, 0.70228875, 0.61212146, 0.556841],
                               rtol=1e-5)
    np.testing.assert_allclose(emb_value[0], [-0.9839406, -0.8611527, -0.73836476], rtol=1e-5)
    np.testing.assert_allclose(emb_value[5], [0.7999957, 0.92993826, 1.0598806], rtol=1e-5)
