"""af.data's file sources through iterators: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset
(elements, specs and errors as TF 2.21 gives them), a TFRecord -> parse_single_example -> batch
pipeline, and ArrowDataset over Arrow IPC and Parquet files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asyncflow as af
from asyncflow.data.readers import ArrowDataset, FixedLengthRecordDataset, TextLineDataset, TFRecordDataset


def _drain(ds, limit=200, feeds=None):
    it = af.data.make_one_shot_iterator(ds)
    nxt = it.get_next()
    out = []
    with af.Session() as sess:
        for _ in range(limit):
            try:
                out.append(sess.run(nxt, feeds))
            except af.errors.OutOfRangeError:
                with pytest.raises(af.errors.OutOfRangeError):  # every time after the end
                    sess.run(nxt, feeds)
                return out
    raise AssertionError("the dataset did not end")


@pytest.fixture
def files(tmp_path):
    for name, records in {"A": [b"a1", b"a2", b"a3"], "B": [b"b1"], "C": [b"c1", b"c2"]}.items():
        for compression in ("", "GZIP"):
            with af.python_io.TFRecordWriter(str(tmp_path / (name + compression)), compression) as w:
                for r in records:
                    w.write(r)
    (tmp_path / "t.txt").write_bytes(b"l1\nl2\r\n\nl4")
    (tmp_path / "f.bin").write_bytes(b"HH" + b"abcdefghij" + b"FFF")
    return tmp_path


def test_tfrecord_dataset_elements_spec_and_options(files):
    a, b, c = (str(files / n) for n in "ABC")
    with af.Graph().as_default():
        ds = TFRecordDataset([a, b])
        assert (ds.output_types, ds.output_shapes) == (af.string, af.TensorShape([]))
        assert _drain(ds) == [b"a1", b"a2", b"a3", b"b1"]
        assert _drain(TFRecordDataset(a + "GZIP", compression_type="GZIP", buffer_size=10)) == [b"a1", b"a2", b"a3"]
        # TF 2.21's order for num_parallel_reads=2
        assert _drain(TFRecordDataset([a, b, c], num_parallel_reads=2)) == [b"a1", b"b1", b"a2", b"a3", b"c1", b"c2"]
        names = af.data.Dataset.from_tensor_slices([a, c])
        assert _drain(TFRecordDataset(names)) == [b"a1", b"a2", b"a3", b"c1", b"c2"]
        assert _drain(TFRecordDataset(names, num_parallel_reads=2)) == [b"a1", b"c1", b"a2", b"c2", b"a3"]


def test_initializable_iterator_takes_new_file_names(files):
    with af.Graph().as_default():
        names = af.placeholder(af.string, [None])
        it = af.data.make_initializable_iterator(TFRecordDataset(names))
        nxt = it.get_next()
        with af.Session() as sess:
            sess.run(it.initializer, {names: [str(files / "B")]})
            assert sess.run(nxt) == b"b1"
            sess.run(it.initializer, {names: [str(files / "C")]})
            assert [sess.run(nxt), sess.run(nxt)] == [b"c1", b"c2"]


def test_corrupt_and_missing_files_fail_get_next(files):
    raw = bytearray((files / "A").read_bytes())
    raw[18 + 12] ^= 1  # the second record's data
    (files / "bad").write_bytes(bytes(raw))
    with af.Graph().as_default():
        nxt = af.data.make_one_shot_iterator(TFRecordDataset(str(files / "bad"))).get_next()
        with af.Session() as sess:
            assert sess.run(nxt) == b"a1"
            with pytest.raises(af.errors.DataLossError, match=r"bad: corrupted record at 30"):
                sess.run(nxt)
        nxt = af.data.make_one_shot_iterator(TFRecordDataset(str(files / "missing"))).get_next()
        with af.Session() as sess, pytest.raises(af.errors.NotFoundError, match="missing"):
            sess.run(nxt)


def test_construction_errors():
    with af.Graph().as_default():
        with pytest.raises(TypeError, match="The `filenames` argument must contain `tf.string` elements"):
            TFRecordDataset([1, 2])
        with pytest.raises(TypeError, match="must contain `tf.string` elements"):
            TFRecordDataset(af.data.Dataset.range(3))
        with pytest.raises(ValueError, match="Unsupported compression_type: BZ2"):
            TFRecordDataset("x", compression_type="BZ2")
        with pytest.raises(af.errors.InvalidArgumentError, match="record_bytes must be > 0"):
            FixedLengthRecordDataset("x", 0)


def test_text_line_and_fixed_length_datasets_as_tf(files):
    with af.Graph().as_default():
        ds = TextLineDataset(str(files / "t.txt"))
        assert (ds.output_types, ds.output_shapes) == (af.string, af.TensorShape([]))
        assert _drain(ds) == [b"l1", b"l2", b"", b"l4"]
        assert _drain(TextLineDataset([str(files / "t.txt")] * 2, num_parallel_reads=2)) == \
            [b"l1", b"l1", b"l2", b"l2", b"", b"", b"l4", b"l4"]
        fixed = str(files / "f.bin")
        assert _drain(FixedLengthRecordDataset(fixed, 5, header_bytes=2, footer_bytes=3)) == [b"abcde", b"fghij"]
        nxt = af.data.make_one_shot_iterator(FixedLengthRecordDataset(fixed, 3, 2, 3)).get_next()
        with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match=(
                r'Excluding the header \(2 bytes\) and footer \(3 bytes\), input file ".*f.bin" has body length 10 '
                r"bytes, which is not an exact multiple of the record length \(3 bytes\).")):
            sess.run(nxt)


def test_tfrecord_parse_batch_pipeline(tmp_path):
    t = af.train
    with af.python_io.TFRecordWriter(str(tmp_path / "ex"), "ZLIB") as w:
        for i in range(10):
            w.write(t.Example(features=t.Features(feature={
                "x": t.Feature(float_list=t.FloatList(value=[i, i + 0.5])),
                "y": t.Feature(int64_list=t.Int64List(value=[i]))})).SerializeToString())
    features = {"x": af.FixedLenFeature([2], af.float32), "y": af.FixedLenFeature([], af.int64)}
    with af.Graph().as_default():
        ds = TFRecordDataset(str(tmp_path / "ex"), "ZLIB").map(lambda r: af.parse_single_example(r, features))
        ds = ds.batch(4)
        assert ds.output_types == {"x": af.float32, "y": af.int64}
        assert ds.output_shapes == {"x": af.TensorShape([None, 2]), "y": af.TensorShape([None])}
        got = _drain(ds)
        batched = TFRecordDataset(str(tmp_path / "ex"), "ZLIB").batch(5).map(lambda r: af.parse_example(r, features))
        again = _drain(batched)
    assert [len(b["y"]) for b in got] == [4, 4, 2]
    assert np.concatenate([b["y"] for b in got]).tolist() == list(range(10))
    assert got[2]["x"].dtype == np.float32 and got[2]["x"].tolist() == [[8.0, 8.5], [9.0, 9.5]]
    assert [b["x"].shape for b in again] == [(5, 2), (5, 2)]


def test_arrow_dataset_over_ipc_and_parquet(tmp_path):
    table = pa.table({"img": pa.array([[float(i)] * 4 for i in range(10)], type=pa.list_(pa.float32(), 4)),
                      "label": pa.array(np.arange(10)), "name": pa.array([f"n{i}" for i in range(10)])})
    pq.write_table(table, str(tmp_path / "t.parquet"), row_group_size=4)
    with pa.OSFile(str(tmp_path / "t.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=3)
    with af.Graph().as_default():
        ds = ArrowDataset([str(tmp_path / "t.parquet"), str(tmp_path / "t.arrow")], ["img", "label", "name"],
                          [af.float32, af.int32, af.string], [[2, 2], [], []], batch_size=3)
        assert ds.output_types == {"img": af.float32, "label": af.int32, "name": af.string}
        assert ds.output_shapes == {"img": af.TensorShape([2, 2]), "label": af.TensorShape([]),
                                    "name": af.TensorShape([])}
        rows = _drain(ds)
        batches = _drain(ArrowDataset(str(tmp_path / "t.arrow"), "label", af.int64, [[]]).batch(4))
    assert len(rows) == 20 and rows[13]["label"] == 3 and rows[13]["name"] == b"n3"
    assert rows[13]["img"].dtype == np.float32 and rows[13]["img"].tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert [b["label"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with af.Graph().as_default(), pytest.raises(ValueError, match="2 columns but 1 output_types"):
        ArrowDataset("x", ["a", "b"], [af.float32])
