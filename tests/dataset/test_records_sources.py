"""The file sources behind af.data's TFRecordDataset, TextLineDataset, FixedLengthRecordDataset and
ArrowDataset, at the level of their async chunk generators: records, order (TF 2.21's parallel
interleave), compression, TF's errors; Arrow IPC and Parquet rows."""

from __future__ import annotations

import asyncio
import gzip
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asyncflow as af
from asyncflow.data import readers
from asyncflow.shapes import TensorShape

FILES = {"A": [b"a1", b"a2", b"a3"], "B": [b"b1"], "C": [b"c1", b"c2"], "D": [b"d1", b"d2", b"d3", b"d4"]}
# tf.data.TFRecordDataset(["A", "B", "C", "D"], num_parallel_reads=n) in TF 2.21
TF_ORDER = {
    1: [b"a1", b"a2", b"a3", b"b1", b"c1", b"c2", b"d1", b"d2", b"d3", b"d4"],
    2: [b"a1", b"b1", b"a2", b"a3", b"c1", b"c2", b"d1", b"d2", b"d3", b"d4"],
    3: [b"a1", b"b1", b"c1", b"a2", b"c2", b"a3", b"d1", b"d2", b"d3", b"d4"],
}


def _collect(agen):
    async def run():
        out = []
        async for chunk in agen:
            out.extend(chunk)
        return out
    return asyncio.run(run())


def _records(files, opener, n=None):
    return _collect(readers.record_chunks(files, opener, n, "TFRecordDataset 'test'"))


@pytest.fixture
def record_files(tmp_path):
    for name, records in FILES.items():
        for compression in ("", "GZIP"):
            with af.python_io.TFRecordWriter(str(tmp_path / (name + compression)), compression) as w:
                for r in records:
                    w.write(r)
    return tmp_path


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tfrecord_order_with_parallel_reads_as_tf(record_files, n):
    paths = [str(record_files / name) for name in "ABCD"]
    assert _records(paths, readers.tfrecord_opener(None, None, "t"), n) == TF_ORDER[n]
    gz = [p + "GZIP" for p in paths]
    assert _records(gz, readers.tfrecord_opener("GZIP", 64, "t"), n) == TF_ORDER[n]


def test_tfrecord_scalar_filename_chunks_and_errors(record_files, monkeypatch):
    assert _records(str(record_files / "A"), readers.tfrecord_opener("", None, "t")) == FILES["A"]
    monkeypatch.setattr(readers, "CHUNK_RECORDS", 2)
    chunks = _collect_chunks(readers.record_chunks(str(record_files / "D"), readers.tfrecord_opener("", None, "t"),
                                                   None, "t"))
    assert chunks == [[b"d1", b"d2"], [b"d3", b"d4"]]
    with pytest.raises(af.errors.NotFoundError, match="missing"):
        _records([str(record_files / "missing")], readers.tfrecord_opener("", None, "t"))
    with pytest.raises(ValueError, match="Unsupported compression_type: BZ2"):
        readers.tfrecord_opener("BZ2", None, "TFRecordDataset 'x'")
    # any shape of names is read in order, flattened (TF's flat_filenames)
    assert _records([[str(record_files / "B")], [str(record_files / "C")]], readers.tfrecord_opener("", None, "t")) \
        == [b"b1", b"c1", b"c2"]
    raw = bytearray((record_files / "A").read_bytes())
    raw[-1] ^= 1
    (record_files / "bad").write_bytes(bytes(raw))
    with pytest.raises(af.errors.DataLossError, match=r"bad: corrupted record at 48"):
        _records([str(record_files / "bad")], readers.tfrecord_opener("", None, "t"), 2)


def _collect_chunks(agen):
    async def run():
        return [chunk async for chunk in agen]
    return asyncio.run(run())


def test_text_lines_as_tf(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"l1\nl2\r\n\nl4")
    (tmp_path / "u.txt").write_bytes(b"u1\n")
    opener = readers.text_line_opener(None, None, "TextLineDataset 't'")
    assert _records(str(tmp_path / "t.txt"), opener) == [b"l1", b"l2", b"", b"l4"]  # TF 2.21
    assert _records([str(tmp_path / "t.txt")] * 2, opener, 2) == [b"l1", b"l1", b"l2", b"l2", b"", b"", b"l4", b"l4"]
    assert _records([str(tmp_path / "u.txt"), str(tmp_path / "t.txt")], opener) == [b"u1", b"l1", b"l2", b"", b"l4"]
    (tmp_path / "t.gz").write_bytes(gzip.compress(b"x\ny\n"))
    assert _records(str(tmp_path / "t.gz"), readers.text_line_opener("GZIP", None, "t")) == [b"x", b"y"]


def test_fixed_length_records_as_tf(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"HH" + b"abcdefghij" + b"FFF")
    path = str(tmp_path / "f.bin")
    assert _records(path, readers.fixed_length_opener(5, 2, 3, None, None, "t")) == [b"abcde", b"fghij"]
    assert _records(path, readers.fixed_length_opener(5, 2, 3, None, 1, "t")) == [b"abcde", b"fghij"]
    message = (r'Excluding the header \(2 bytes\) and footer \(3 bytes\), input file ".*f.bin" has body length 10 '
               r"bytes, which is not an exact multiple of the record length \(3 bytes\).")
    with pytest.raises(af.errors.InvalidArgumentError, match=message):
        _records(path, readers.fixed_length_opener(3, 2, 3, None, None, "t"))
    (tmp_path / "f.z").write_bytes(zlib.compress(b"HH" + b"abcdefghij" + b"FFF"))
    assert _records(str(tmp_path / "f.z"), readers.fixed_length_opener(5, 2, 3, "ZLIB", None, "t")) == \
        [b"abcde", b"fghij"]
    with pytest.raises(af.errors.InvalidArgumentError, match="not an exact multiple"):
        _records(str(tmp_path / "f.z"), readers.fixed_length_opener(4, 2, 3, "ZLIB", None, "t"))
    with pytest.raises(af.errors.InvalidArgumentError, match="record_bytes must be > 0"):
        readers.fixed_length_opener(0, 0, 0, None, None, "t")


def _arrow_table():
    return pa.table({"x": pa.array(np.arange(10, dtype=np.float64)),
                     "v": pa.array([[i, i + 1] for i in range(10)], type=pa.list_(pa.int64(), 2)),
                     "s": pa.array([f"r{i}" for i in range(10)])})


def test_arrow_and_parquet_rows(tmp_path):
    table = _arrow_table()
    with pa.OSFile(str(tmp_path / "t.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=4)
    pq.write_table(table, str(tmp_path / "t.parquet"), row_group_size=6)
    specs = (["x", "v", "s"], [af.float32, af.int64, af.string], [TensorShape([]), TensorShape([2]), TensorShape([])])
    for name in ("t.arrow", "t.parquet"):
        chunks = _collect_chunks(readers.arrow_chunks(str(tmp_path / name), *specs, 3, "auto", "ArrowDataset 't'"))
        assert all(len(c[0]) <= 3 for c in chunks)
        x = np.concatenate([c[0] for c in chunks])
        v = np.concatenate([c[1] for c in chunks])
        s = np.concatenate([c[2] for c in chunks])
        assert x.dtype == np.float32 and x.tolist() == list(range(10))
        assert v.dtype == np.int64 and v.shape == (10, 2) and v[3].tolist() == [3, 4]
        assert s.tolist() == [f"r{i}".encode() for i in range(10)]
    with pytest.raises(af.errors.InvalidArgumentError, match="has no column 'nope'"):
        _collect_chunks(readers.arrow_chunks(str(tmp_path / "t.arrow"), ["nope"], [af.float32], [TensorShape([])],
                                             None, "auto", "t"))
    with pytest.raises(af.errors.NotFoundError):
        _collect_chunks(readers.arrow_chunks(str(tmp_path / "none.arrow"), ["x"], [af.float32], [TensorShape([])],
                                             None, "auto", "t"))
