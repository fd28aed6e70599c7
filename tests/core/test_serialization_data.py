"""Input pipelines as graph documents: every iterator, parsing and record-reader op type round-trips through
JSON and runs in the imported graph as in the original (a worker runs pipelines it received this way); the
in-process variants (a `from_generator` pipeline) import but refuse to run, as py_func graphs do."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow import serialization as ser

# Op types this file round-trips; tests/core/test_serialization.py's coverage test counts them as covered.
ROUND_TRIPPED = {"IteratorV2", "MakeIterator", "IteratorGetNext", "IteratorToStringHandle",
                 "IteratorFromStringHandleV2", "OneShotIterator", "ParseExampleV2", "TFRecordReaderV2",
                 "MakeIteratorInProcess", "OneShotIteratorInProcess"}


def _imported(graph: af.Graph) -> af.Graph:
    doc = ser.from_json(ser.to_json(graph.as_graph_def()))
    out = af.Graph()
    with out.as_default():
        af.import_graph_def(doc, name="")
    assert out.as_graph_def() == doc
    return out


def _example(i: int) -> bytes:
    feature = {"x": af.train.Feature(float_list=af.train.FloatList(value=[float(i), 2.0 * i])),
               "ids": af.train.Feature(int64_list=af.train.Int64List(value=list(range(i % 3))))}
    return af.train.Example(features=af.train.Features(feature=feature)).SerializeToString()


def _pipeline(graph: af.Graph, path: str) -> tuple[list[str], list[str]]:
    """(setup op names, fetch names): a TFRecord pipeline parsed per batch through an initializable iterator,
    a one-shot iterator over a range, a string handle, and a TFRecordReader over a filename queue."""
    with graph.as_default():
        spec = {"x": af.io.FixedLenFeature([2], af.float32), "ids": af.io.VarLenFeature(af.int64)}
        records = af.data.TFRecordDataset([path]).batch(3).map(lambda s: af.io.parse_example(s, spec))
        it = records.make_initializable_iterator()
        batch = it.get_next()
        one_shot = af.data.Dataset.range(5).map(lambda v: v * 10).make_one_shot_iterator()
        handle = one_shot.string_handle()
        feedable = af.data.Iterator.from_string_handle(handle, af.int64, [])
        files = af.FIFOQueue(4, af.string, shapes=[])
        fill = [files.enqueue([path]).name, files.enqueue([path]).name]
        _, value = af.TFRecordReader().read(files)
        parsed = af.io.parse_single_example(value, {"x": af.io.FixedLenFeature([2], af.float32)})["x"]
        fetches = [batch["x"], batch["ids"].values, batch["ids"].indices, feedable.get_next(), value, parsed]
        setup = [it.initializer.name, *fill]
        return setup, [t.name for t in fetches]


def test_pipelines_round_trip_and_run_alike(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with af.io.TFRecordWriter(path) as writer:
        for i in range(6):
            writer.write(_example(i))
    original = af.Graph()
    setup, names = _pipeline(original, path)
    results = []
    for graph in (original, _imported(original)):
        with af.Session(graph=graph) as sess:
            for op in setup:
                sess.run(op)
            results.append([sess.run(names) for _ in range(2)])
    for got, want in zip(results[1], results[0]):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    first = results[0][0]
    np.testing.assert_array_equal(first[0], [[0.0, 0.0], [1.0, 2.0], [2.0, 4.0]])
    assert first[3] == 0 and results[0][1][3] == 10 and first[4] == _example(0)
    np.testing.assert_array_equal(results[0][1][5], [1.0, 2.0])
    seen = {op.type for op in original.get_operations()}
    assert ROUND_TRIPPED - {"MakeIteratorInProcess", "OneShotIteratorInProcess"} <= seen


def test_in_process_pipelines_import_but_refuse_to_run():
    graph = af.Graph()
    with graph.as_default():
        gen = af.data.Dataset.from_generator(lambda: iter([1, 2]), af.int64)
        one_shot = gen.make_one_shot_iterator().get_next()
        it = gen.make_initializable_iterator()
        nxt = it.get_next()
    types = {op.type for op in graph.get_operations()}
    assert {"MakeIteratorInProcess", "OneShotIteratorInProcess"} <= types
    imported = _imported(graph)
    refused = "calls Python functions of the process that built it"
    with af.Session(graph=imported) as sess, pytest.raises(af.errors.InvalidArgumentError, match=refused):
        sess.run(one_shot.name)
    with af.Session(graph=imported) as sess, pytest.raises(af.errors.InvalidArgumentError, match=refused):
        sess.run(it.initializer.name)
        sess.run(nxt.name)
