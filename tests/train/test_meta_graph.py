"""export_meta_graph / import_meta_graph / write_graph: the classic TF1 round trip (build, train, save; reset;
import the .meta, restore, look tensors up by name, train on), collections restored as the same kinds of
objects (Variables usable by a new Saver, ops, tensors, numbers, strings), import scopes, clear_devices,
and JSON files written atomically."""

from __future__ import annotations

import os

import numpy as np
import orjson
import pytest

import asyncflow as af

X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
Y = np.array([[1.0], [-2.0], [0.25]], np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _build_and_train(path: str, steps: int = 3, export_to: str | None = None):
    x = af.placeholder(af.float32, [None, 2], name="x")
    y = af.placeholder(af.float32, [None, 1], name="y")
    with af.device("/cpu:0"):
        w = af.get_variable("w", initializer=af.constant([[0.1], [-0.2]]))
    b = af.Variable(0.5, name="b")
    step = af.train.get_or_create_global_step()
    pred = af.add(af.matmul(x, w), b, name="pred")
    loss = af.reduce_mean(af.square(pred - y), name="loss")
    af.add_to_collection(af.GraphKeys.LOSSES, loss)
    train = af.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
    af.add_to_collection("train_op", train)
    af.add_to_collection("my_numbers", 7)
    af.add_to_collection("my_numbers", 0.5)
    af.add_to_collection("my_strings", "hello")
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        for _ in range(steps):
            sess.run(train, {x: X, y: Y})
        saved = sess.run([w, b, step])
        saver.save(sess, path)
        if export_to:
            af.train.export_meta_graph(export_to, as_text=True, saver_def=saver.saver_def)
        # the run that is never interrupted, for comparison
        sess.run(train, {x: X, y: Y})
        uninterrupted = sess.run([w, b, loss], {x: X, y: Y})
    return saved, uninterrupted


def test_classic_round_trip_restores_values_collections_and_training(tmp_path):
    path = str(tmp_path / "model.ckpt")
    saved, uninterrupted = _build_and_train(path)
    assert os.path.exists(path + ".meta")
    af.reset_default_graph()
    saver = af.train.import_meta_graph(path + ".meta")
    graph = af.get_default_graph()
    x, y = graph.get_tensor_by_name("x:0"), graph.get_tensor_by_name("y:0")
    loss = graph.get_tensor_by_name("loss:0")
    train = af.get_collection("train_op")[0]
    assert isinstance(train, af.Operation)
    assert af.get_collection(af.GraphKeys.LOSSES) == [loss]
    variables = af.global_variables()
    assert [v.op.name for v in variables] == ["w", "b", "global_step", "w/Momentum", "b/Momentum"]
    assert all(isinstance(v, af.Variable) for v in variables)
    assert [v.op.name for v in af.trainable_variables()] == ["w", "b"]
    assert af.trainable_variables()[0] is variables[0]  # one object per variable, shared by its collections
    assert af.train.get_global_step().op.name == "global_step"
    with af.Session() as sess:
        saver.restore(sess, path)
        w, b = af.trainable_variables()
        got = sess.run([w, b, af.train.get_global_step()])
        for g, s in zip(got, saved):
            np.testing.assert_array_equal(g, s)
        sess.run(train, {x: X, y: Y})
        resumed = sess.run([w, b, loss], {x: X, y: Y})
        assert sess.run(af.train.get_global_step()) == 4
        # a new Saver over the imported Variables works too
        path2 = af.train.Saver(af.global_variables()).save(sess, str(tmp_path / "again"))
    for g, want in zip(resumed, uninterrupted):
        np.testing.assert_allclose(g, want, rtol=1e-6)
    af.reset_default_graph()
    af.train.import_meta_graph(path2 + ".meta").restore(af.Session(), path2)


def test_export_with_variable_defs_numbers_strings_and_scope(tmp_path):
    meta_path = str(tmp_path / "exported.meta")
    _build_and_train(str(tmp_path / "m"), export_to=meta_path)
    with open(meta_path, "rb") as f:
        meta = orjson.loads(f.read())
    assert meta["collection_def"]["my_numbers"] == [{"int64": 7}, {"float": 0.5}]
    assert meta["collection_def"]["my_strings"] == [{"bytes": "hello"}]
    w_def = meta["collection_def"]["trainable_variables"][0]["variable"]
    assert {k: w_def[k] for k in ("variable_name", "initializer_name", "snapshot_name", "trainable")} == {
        "variable_name": "w:0", "initializer_name": "w/Assign", "snapshot_name": "w/read:0", "trainable": True}
    with open(meta_path, "rb") as f:
        assert f.read(2) == b"{\n"  # as_text: indented JSON
    af.reset_default_graph()
    saver = af.train.import_meta_graph(meta_path, import_scope="imported", clear_devices=True)
    graph = af.get_default_graph()
    assert af.get_collection("my_numbers") == [7, 0.5] and af.get_collection("my_strings") == [b"hello"]
    assert [v.op.name for v in af.global_variables()][:2] == ["imported/w", "imported/b"]
    assert graph.get_operation_by_name("imported/w").device == ""
    assert af.get_collection("train_op")[0].name == "imported/Momentum"
    assert saver.saver_def.restore_op_name == "imported/save/restore_all"
    with af.Session() as sess:
        saver.restore(sess, str(tmp_path / "m"))
        np.testing.assert_allclose(sess.run("imported/b:0"), sess.run(af.trainable_variables()[1]))


def test_meta_graph_without_saver_def_gets_a_default_saver(tmp_path):
    v = af.Variable([1.0, 2.0], name="v")
    meta = af.train.export_meta_graph()
    assert meta["saver_def"] is None and meta["collection_def"]["variables"][0]["variable"]["variable_name"] == "v:0"
    with af.Session() as sess:
        sess.run(v.initializer)
        af.train.Saver().save(sess, str(tmp_path / "ckpt"), write_meta_graph=False)
    af.reset_default_graph()
    saver = af.train.import_meta_graph(meta)
    with af.Session() as sess:
        saver.restore(sess, str(tmp_path / "ckpt"))
        np.testing.assert_array_equal(sess.run("v:0"), [1.0, 2.0])
    af.reset_default_graph()
    af.constant(1.0, name="c")
    assert af.train.import_meta_graph(af.train.export_meta_graph()) is None


def test_write_graph_is_the_json_document_written_atomically(tmp_path):
    af.add(af.constant(1.0, name="a"), 2.0, name="sum")
    path = af.train.write_graph(af.get_default_graph(), str(tmp_path / "logs"), "graph.json")
    assert path == str(tmp_path / "logs" / "graph.json")
    assert os.listdir(tmp_path / "logs") == ["graph.json"]  # no temporary file left
    with open(path, "rb") as f:
        document = orjson.loads(f.read())
    assert [n["name"] for n in document["node"]] == ["a", "sum/y", "sum"]
    compact = af.train.write_graph(document, str(tmp_path), "g.json", as_text=False)
    with open(compact, "rb") as f:
        assert b"\n" not in f.read()
    af.reset_default_graph()
    af.import_graph_def(document, name="")
    with af.Session() as sess:
        assert sess.run("sum:0") == 3.0


def test_bad_files_and_arguments(tmp_path):
    with pytest.raises(OSError, match="does not exist"):
        af.train.import_meta_graph(str(tmp_path / "missing.meta"))
    bad = tmp_path / "bad.meta"
    bad.write_bytes(b'{"format": "something/1"}')
    with pytest.raises(ValueError, match="not a meta graph document"):
        af.train.import_meta_graph(str(bad))
    bad.write_bytes(b"\x80\x04pickle")
    with pytest.raises(ValueError, match="not a meta graph \\(JSON\\) file"):
        af.train.import_meta_graph(str(bad))
    with pytest.raises(NotImplementedError, match="export_scope"):
        af.train.export_meta_graph(export_scope="a")
    with pytest.raises(TypeError, match="Graph or a graph document"):
        af.train.write_graph("not a graph", str(tmp_path), "g")
