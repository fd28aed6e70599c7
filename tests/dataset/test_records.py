"""TFRecord files: the bytes TF 2.21 writes (uncompressed, GZIP, ZLIB), CRC-32C with and without the C
library, round trips, every corruption as a DataLossError naming the file and the offset, and
`af.TFRecordReader` (TFRecordReaderV2) on a filename queue."""

from __future__ import annotations

import os
import zlib

import pytest

import asyncflow as af
from asyncflow.ops import record_ops_tfrecord as tfrecord

RECORDS = [b"", b"hello", b"x" * 300]

# What tf.compat.v1.python_io.TFRecordWriter (TF 2.21) writes for RECORDS, checked byte for byte.
TF_BYTES = {
    "": "000000000000000029039807d8ea82a20500000000000000eab2043e68656c6c6fbb1f1c192c01000000000000f2fe5b9d"
        + "78" * 300 + "cd829421",
    "GZIP": "1f8b0800000000000003636080004de619ec375e352d6285f25f6d62b1cb48cdc9c9df2d2f23a9c30811fcf42f7a6ec528201a"
            "9c6d9aa208001664577661010000",
    "ZLIB": "789c636080004de619ec375e352d6285f25f6d62b1cb48cdc9c9df2d2f23a9c30811fcf42f7a6ec528201a9c6d9aa20800e46a"
            "9a71",
}
# TFRecordWriter(p, TFRecordOptions(compression_type="GZIP", compression_level=9)) writing b"abc" * 50 (TF 2.21).
TF_GZIP_LEVEL9 = "1f8b08000000000002039bc600013e9c65be8949c9831099b14edf0600f1765539a6000000"


def _write(path, records, options=None):
    with af.python_io.TFRecordWriter(str(path), options) as writer:
        for r in records:
            writer.write(r)
    return path.read_bytes()


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_files_are_byte_for_byte_what_tf_writes(tmp_path, compression):
    data = _write(tmp_path / "r", RECORDS, compression or None)
    assert data.hex() == TF_BYTES[compression]
    assert list(af.python_io.tf_record_iterator(str(tmp_path / "r"), compression or None)) == RECORDS


def test_options_object_sets_zlib_parameters_as_tf(tmp_path):
    options = af.io.TFRecordOptions(compression_type="GZIP", compression_level=9)
    assert _write(tmp_path / "r", [b"abc" * 50], options).hex() == TF_GZIP_LEVEL9
    assert list(af.io.tf_record_iterator(str(tmp_path / "r"), options)) == [b"abc" * 50]


def test_crc32c_library_and_table_agree():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert tfrecord.crc32c_table(b"123456789") == 0xE3069283
    assert tfrecord.crc32c_table(b"") == tfrecord.crc32c(b"") == 0
    data = os.urandom(1000)
    for n in (1, 7, 8, 9, 17, 64, 1000):
        assert tfrecord.crc32c_table(data[:n]) == tfrecord.crc32c(data[:n]), n
    # the masked checksum of an 8-byte length 0, as TF stores it (from TF_BYTES)
    assert tfrecord.masked_crc32c(bytes(8)).to_bytes(4, "little").hex() == "29039807"


def test_compression_type_names_and_values():
    types, options = af.python_io.TFRecordCompressionType, af.python_io.TFRecordOptions
    assert (types.NONE, types.ZLIB, types.GZIP) == (0, 1, 2)
    assert [options.get_compression_type_string(x) for x in (None, "", types.GZIP, types.ZLIB, "ZLIB",
                                                             options("GZIP"))] == ["", "", "GZIP", "ZLIB", "ZLIB",
                                                                                   "GZIP"]
    with pytest.raises(ValueError, match='Not a valid compression_type: "BZIP2"'):
        options("BZIP2")
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        af.python_io.TFRecordWriter("unused", "LZ4")


@pytest.mark.parametrize("options", [None, "GZIP", "ZLIB", af.python_io.TFRecordCompressionType.GZIP,
                                     af.python_io.TFRecordOptions("ZLIB", compression_level=1)])
def test_round_trip_with_each_kind_of_options(tmp_path, options):
    records = [b"a", "text is utf-8: \u00e9", os.urandom(70000), b""]
    _write(tmp_path / "r", records, options)
    expect = [r.encode() if isinstance(r, str) else r for r in records]
    assert list(af.python_io.tf_record_iterator(str(tmp_path / "r"), options)) == expect


def test_writer_flush_close_and_errors(tmp_path):
    path = str(tmp_path / "r")
    writer = af.io.TFRecordWriter(path)
    writer.write(b"first")
    writer.flush()  # what was written is in the file before close
    assert list(af.io.tf_record_iterator(path)) == [b"first"]
    writer.close()
    writer.close()  # again: nothing
    with pytest.raises(af.errors.FailedPreconditionError, match="closed"):
        writer.write(b"late")
    with pytest.raises(af.errors.NotFoundError, match="no_such_dir"):
        af.io.TFRecordWriter(str(tmp_path / "no_such_dir" / "r"))
    with pytest.raises(af.errors.NotFoundError, match="missing"):
        af.io.tf_record_iterator(str(tmp_path / "missing"))


def _corrupt(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return str(path)


def test_every_corruption_is_a_data_loss_error_naming_file_and_offset(tmp_path):
    raw = bytearray(bytes.fromhex(TF_BYTES[""]))  # records at offsets 0, 16 and 37
    cases = []
    bad = bytearray(raw)
    bad[16 + 3] ^= 1  # the second record's length
    cases.append(("length", bad, r"corrupted record at 16 \(the length's checksum"))
    bad = bytearray(raw)
    bad[16 + 9] ^= 1  # its length checksum
    cases.append(("length_crc", bad, r"corrupted record at 16 \(the length's checksum"))
    bad = bytearray(raw)
    bad[16 + 12] ^= 1  # its data ("hello"): TF names the data's offset, 16 + 12
    cases.append(("data", bad, r"corrupted record at 28 \(the data's checksum"))
    bad = bytearray(raw)
    bad[16 + 12 + 5 + 1] ^= 1  # its data checksum
    cases.append(("data_crc", bad, r"corrupted record at 28"))
    cases.append(("cut_data", raw[:16 + 12 + 3], r"truncated record at 16"))
    cases.append(("cut_crc", raw[:16 + 12 + 5 + 2], r"truncated record at 16"))
    for name, data, message in cases:
        path = _corrupt(tmp_path, name, data)
        records = af.python_io.tf_record_iterator(path)
        assert next(records) == b""  # the first record is fine
        with pytest.raises(af.errors.DataLossError, match=message) as info:
            next(records)
        assert path in str(info.value), name
    # as TF: a file that ends inside a record's header ends there
    assert list(af.python_io.tf_record_iterator(_corrupt(tmp_path, "cut_header", raw[:16 + 5]))) == [b""]


def test_corruption_in_compressed_files(tmp_path):
    framed = bytearray(b"".join(tfrecord.frame(r) for r in RECORDS))
    framed[16 + 12] ^= 1
    path = tmp_path / "inner.gz"
    z = zlib.compressobj(6, zlib.DEFLATED, 31, 9)
    path.write_bytes(z.compress(bytes(framed)) + z.flush())
    with pytest.raises(af.errors.DataLossError, match=r"inner.gz: corrupted record at 28"):
        list(af.python_io.tf_record_iterator(str(path), "GZIP"))  # offsets count uncompressed bytes
    stream = bytes.fromhex(TF_BYTES["GZIP"])
    broken = _corrupt(tmp_path, "broken.gz", stream[:12] + bytes(b ^ 0x55 for b in stream[12:20]) + stream[20:])
    with pytest.raises(af.errors.DataLossError, match="broken.gz"):
        list(af.python_io.tf_record_iterator(broken, "GZIP"))
    cut = _corrupt(tmp_path, "cut.gz", stream[:-12])
    with pytest.raises(af.errors.DataLossError, match="cut.gz"):
        list(af.python_io.tf_record_iterator(cut, "GZIP"))


def test_concatenated_gzip_members_read_as_one_stream(tmp_path):
    members = b""
    for r in RECORDS:
        z = zlib.compressobj(6, zlib.DEFLATED, 31, 9)
        members += z.compress(tfrecord.frame(r)) + z.flush()
    assert list(af.io.tf_record_iterator(_corrupt(tmp_path, "m.gz", members), "GZIP")) == RECORDS


def _read_all(sess, fetch, limit=50):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(fetch))
        except af.errors.OutOfRangeError:
            return out
    raise AssertionError("reader did not run out")


def test_tf_record_reader_keys_and_values_as_tf(tmp_path):
    _write(tmp_path / "r", [b"a", b"bb", b"ccc"])
    _write(tmp_path / "r.gz", [b"d"], "GZIP")
    with af.Graph().as_default():
        q = af.FIFOQueue(10, af.string, shapes=[[]])
        fill, close = q.enqueue_many([[str(tmp_path / "r")] * 2]), q.close()
        reader = af.TFRecordReader()
        assert reader.reader_ref.op.type == "TFRecordReaderV2"
        key, value = reader.read(q)
        with af.Session() as sess:
            sess.run(fill)
            sess.run(close)
            got = _read_all(sess, [key, value])
            assert sess.run(reader.num_work_units_completed()) == 2
    path = str(tmp_path / "r").encode()
    # TF 2.21's TFRecordReader gives the keys b"r:0", b"r:17", b"r:35" for these records
    assert got == [[path + b":0", b"a"], [path + b":17", b"bb"], [path + b":35", b"ccc"]] * 2
    with af.Graph().as_default():
        q = af.FIFOQueue(10, af.string, shapes=[[]])
        fill, close = q.enqueue([str(tmp_path / "r.gz")]), q.close()
        reader = af.TFRecordReader(options=af.python_io.TFRecordOptions("GZIP"))
        assert reader.reader_ref.op.get_attr("compression_type") == "GZIP"
        keys, values = reader.read_up_to(q, 5)
        with af.Session() as sess:
            sess.run(fill)
            sess.run(close)
            assert sess.run(values).tolist() == [b"d"]


def test_tf_record_reader_reports_corruption(tmp_path):
    raw = bytearray(bytes.fromhex(TF_BYTES[""]))
    raw[16 + 12] ^= 1
    path = _corrupt(tmp_path, "bad", raw)
    with af.Graph().as_default():
        q = af.FIFOQueue(10, af.string, shapes=[[]])
        fill = q.enqueue([path])
        _, value = af.TFRecordReader().read(q)
        with af.Session() as sess:
            sess.run(fill)
            assert sess.run(value) == b""
            with pytest.raises(af.errors.DataLossError, match=r"bad: corrupted record at 28"):
                sess.run(value)


def test_names_are_bound_as_tf1():
    assert af.python_io.TFRecordWriter is af.io.TFRecordWriter
    assert af.python_io.tf_record_iterator is af.io.tf_record_iterator
    assert af.python_io.TFRecordOptions is af.io.TFRecordOptions
    assert af.python_io.TFRecordCompressionType is af.io.TFRecordCompressionType
    assert af.TFRecordReader.__name__ == "TFRecordReader"
