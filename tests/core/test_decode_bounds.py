"""Decoding a tensor stream is bounded before anything is read (issue 12, defect 2).

A compressed Arrow IPC stream declares each buffer's uncompressed size only inside its body; the
codec must read those declarations (asyncflow/arrow_ipc.py) and refuse a stream whose declared sizes
break its own dtype and shape, the caller's expected dtype and shape, or the allowed maximum, before
pyarrow allocates. Allocation is measured three ways: tracemalloc (Python and numpy), pyarrow's own
allocator, and the process's resident memory.
"""

from __future__ import annotations

import random
import struct
import tracemalloc
import zlib

import numpy as np
import orjson
import pyarrow as pa
import pytest

import asyncflow as af
from asyncflow import arrow_ipc, tensor_codec
from asyncflow.net import wire
from asyncflow.ops import io_bundle
from asyncflow.serialization import decode_tensor, encode_tensor, graph_to_parts, parts_to_document

GIB = 1 << 30


def _stream(column: pa.Array, dtype: str, shape: list[int], compression: str | None = None, batches: int = 1,
            extra_columns: int = 0) -> bytes:
    """An asyncflow-style tensor stream written by pyarrow (optionally compressed, or malformed on purpose)."""
    meta = {b"asyncflow.dtype": dtype.encode(), b"asyncflow.shape": orjson.dumps(shape)}
    fields = [pa.field(f"c{i}", column.type, nullable=False) for i in range(1 + extra_columns)]
    schema = pa.schema(fields, metadata=meta)
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, schema, options=options) as writer:
        for _ in range(batches):
            writer.write_batch(pa.record_batch([column] * (1 + extra_columns), schema=schema))
    return sink.getvalue().to_pybytes()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """The issue's feed: about 33 KB of ZSTD declaring a float32 tensor of 1 GiB (zeros)."""
    zeros = np.zeros(GIB // 4, np.float32)  # calloc'd: the zero pages are never resident
    data = _stream(pa.Array.from_buffers(pa.float32(), zeros.size, [None, pa.py_buffer(zeros)]), "float32",
                   [zeros.size], "zstd")
    del zeros
    assert len(data) < 40_000
    return data


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class _Allocations:
    """Peak Python/numpy allocation (tracemalloc) and growth of pyarrow's pool and of RSS inside the block."""

    def __enter__(self) -> _Allocations:
        self.rss, self.arrow = _rss(), pa.total_allocated_bytes()
        tracemalloc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        self.arrow = pa.total_allocated_bytes() - self.arrow
        self.rss = _rss() - self.rss

    def assert_small(self, limit: int = 4 << 20) -> None:
        assert self.peak < limit and self.arrow < limit and self.rss < 32 << 20, (self.peak, self.arrow, self.rss)


def _with_length_prefix(data: bytes, buffer: int, declared: int) -> bytes:
    """`data` with the uncompressed-length prefix of compressed buffer `buffer` replaced by `declared`."""
    head = arrow_ipc.read_stream_header(pa.py_buffer(data))
    offset = head.body_start + head.buffers[buffer][0]
    return data[:offset] + struct.pack("<q", declared) + data[offset + 8:]


# -- the bomb -----------------------------------------------------------------------------------------------------
def test_zstd_bomb_is_refused_everywhere_before_any_allocation(bomb, monkeypatch):
    frame = b"".join(bytes(memoryview(c)) for c in wire.frame_chunks(wire.RunStep(1), [[bomb]]))
    with _Allocations() as a:
        with pytest.raises(ValueError, match=r"feed 'x': the Arrow stream's body is zstd-compressed "
                                             r"\(float32\[268435456\], 1073741824 bytes once inflated\); compressed"):
            decode_tensor(bomb, "feed 'x'")
        with pytest.raises(wire.WireError, match="zstd-compressed"):
            wire.read_tensor(bomb, "feed 'x'", np.float32, af.TensorShape([None]))
        with pytest.raises(wire.WireError, match=r"RunStep buffer 0: .*zstd-compressed, declaring 1073741824 bytes"):
            wire.parse_frame(frame, wire.RunStep)
        # Where compressed bodies are allowed (files), the allowed maximum holds...
        with pytest.raises(ValueError, match=r"x: the Arrow stream declares float32\[268435456\], 1073741824 bytes "
                                             r"once read, over the limit of 1048576 bytes"):
            decode_tensor(bomb, "x", allow_compressed=True, max_bytes=1 << 20)
        monkeypatch.setattr(tensor_codec, "MAX_INFLATED_BYTES", 1 << 20)
        with pytest.raises(ValueError, match="over the limit of 1048576 bytes"):
            decode_tensor(bomb, "x", allow_compressed=True)
        # ...and so does the shape the caller expects.
        with pytest.raises(ValueError, match=r"x: the Arrow buffer holds float32\[268435456\], expected float32\[3\]"):
            decode_tensor(bomb, "x", shape=[3], allow_compressed=True)
        with pytest.raises(wire.WireError, match=r"received shape \[268435456\], expected \(3,\)"):
            wire.read_tensor(bomb, "x", np.float32, af.TensorShape([3]))
    a.assert_small()


def test_a_length_prefix_larger_than_the_shape_needs_is_refused():
    small = _stream(pa.array(np.arange(1000, dtype=np.float32)), "float32", [1000], "zstd")
    assert decode_tensor(small, allow_compressed=True).sum() == np.arange(1000).sum()
    forged = _with_length_prefix(small, 1, 1 << 40)
    with _Allocations() as a:
        with pytest.raises(ValueError, match=r"w: Arrow buffer 1 declares 1099511627776 bytes, a float32\[1000\] "
                                             r"tensor needs 4000"):
            decode_tensor(forged, "w", allow_compressed=True)
        with pytest.raises(ValueError, match="corrupt Arrow buffer .*declares -7 bytes"):
            decode_tensor(_with_length_prefix(small, 1, -7), "w", allow_compressed=True)
        # The same size, but data that does not inflate to it: pyarrow's own check, after ours.
        with pytest.raises(ValueError, match="w: corrupt Arrow buffer"):
            decode_tensor(_with_length_prefix(small, 1, 4000 + 8), "w", allow_compressed=True)
    a.assert_small()


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_small_compressed_streams_decode_where_allowed(codec):
    for value in (np.arange(12, dtype=np.int64).reshape(3, 4), np.array([True, False, True]),
                  np.array([b"a", b"", b"xyz"], dtype=object)):
        name = af.as_dtype(value.dtype).name
        column = pa.array(value.reshape(-1).tolist(), type=tensor_codec._ARROW_TYPE[name])
        data = _stream(column, name, list(value.shape), codec)
        got = decode_tensor(data, allow_compressed=True, dtype=name, shape=list(value.shape))
        assert got.dtype == value.dtype and (got == value).all()
        with pytest.raises(ValueError, match=f"{codec.replace('lz4', 'lz4_frame')}-compressed"):
            decode_tensor(data)


# -- expected dtype and shape ---------------------------------------------------------------------------------
def test_expected_dtype_and_shape_are_checked_before_the_body_is_read():
    data = encode_tensor(np.zeros((4, 3), np.float32))
    assert decode_tensor(data, dtype=af.float32, shape=[None, 3]).shape == (4, 3)
    assert decode_tensor(data, dtype="float32", shape=[4, 3]).shape == (4, 3)
    with pytest.raises(ValueError, match=r"t: the Arrow buffer holds float32\[4, 3\], expected int32\[\?,3\]"):
        decode_tensor(data, "t", dtype="int32", shape=[None, 3])
    with pytest.raises(ValueError, match=r"expected float32\[4\]"):
        decode_tensor(data, "t", shape=[4])
    # A body that was never sent cannot be decoded, but a mismatch is found without it: only metadata is read.
    head = tensor_codec.read_tensor_header(data, "t")
    assert (head.dtype, head.shape, head.decoded_bytes, head.codec) == (af.float32, (4, 3), 48, "")


def test_streams_that_lie_about_their_shape_or_layout_are_refused():
    values = pa.array(np.arange(6, dtype=np.float32))
    cases = {
        "rows": (_stream(values, "float32", [7]), r"does not hold a float32 tensor of shape \[7\]"),
        "type": (_stream(values, "int32", [6]), "Arrow column of type float, .* int32 tensor"),
        "dtype": (_stream(values, "float128", [6]), "names no known dtype"),
        "shape": (_stream(values, "float32", [-6]), "no valid shape"),
        "rank": (_stream(pa.array(np.zeros(1, np.float32)), "float32", [1] * 300), "no valid shape"),
        "batches": (_stream(values, "float32", [6], batches=2), "more than one record batch"),
        "columns": (_stream(values, "float32", [6], extra_columns=1), "one field, got 2"),
        "dictionary": (_stream(pa.array(["a", "b"]).dictionary_encode(), "string", [2]), "dictionary"),
        "struct": (_stream(pa.array([{"a": 1}]), "int64", [1]), "unsupported Arrow type Struct"),
        "list": (_stream(pa.array([[1.0]], pa.list_(pa.float32())), "float32", [1]), "unsupported Arrow type List"),
        "nested": (_stream(pa.array([[[1.0, 2.0]]], pa.list_(pa.list_(pa.float32(), 2), 1)), "complex64", [1]),
                   "fixed-size list needs one child within 2 levels"),
        "nulls": (_stream(pa.array([1.0, None], pa.float32()), "float32", [2]), "does not hold"),
    }
    for name, (data, message) in cases.items():
        with pytest.raises(ValueError, match=message):
            decode_tensor(data, name)


def test_hostile_metadata_only_ever_raises_value_error():
    rng = random.Random(12)
    originals = [encode_tensor(np.arange(40, dtype=np.float64)), encode_tensor(np.array([b"ab", b"c"], dtype=object)),
                 encode_tensor(np.ones(3, np.complex64)),
                 _stream(pa.array(np.arange(100, dtype=np.int32)), "int32", [100], "zstd")]
    for data in originals:
        raw = bytes(data)
        for cut in range(0, len(raw), 7):
            with pytest.raises(ValueError):
                decode_tensor(raw[:cut], allow_compressed=True)
        for _ in range(150):
            mutated = bytearray(raw)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(min(len(raw), 400))
                mutated[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
            try:
                decode_tensor(bytes(mutated), allow_compressed=True, max_bytes=1 << 20)
            except ValueError:
                pass


# -- normal tensors, as before ---------------------------------------------------------------------------------
def test_large_tensors_still_decode_zero_copy():
    value = np.random.default_rng(0).standard_normal(1 << 22).astype(np.float32)  # 16 MiB
    data = bytes(encode_tensor(value))
    with _Allocations() as a:
        got = decode_tensor(data, dtype="float32", shape=[None])
    a.assert_small(1 << 20)
    start = np.frombuffer(data, np.uint8).ctypes.data
    assert start <= got.ctypes.data < start + len(data) and not got.flags.writeable
    assert np.array_equal(got, value)
    wired = b"".join(bytes(memoryview(c)) for c in wire.tensor_chunks(value))
    got = wire.read_tensor(wired, expect=np.float32, shape=af.TensorShape([None]))
    start = np.frombuffer(wired, np.uint8).ctypes.data
    assert start <= got.ctypes.data < start + len(wired)


@pytest.mark.parametrize("value", [
    np.float64(2.5), np.zeros((0, 3), np.int8), np.arange(24, dtype=np.uint16).reshape(2, 3, 4),
    np.array([True, False] * 9), np.array([1 + 2j, -3j], np.complex128), np.array([[b"x", b""]], dtype=object),
    np.array([], dtype=object), np.arange(5, dtype=np.int64)[::2],
], ids=lambda v: f"{v.dtype}{list(np.shape(v))}")
def test_every_dtype_round_trips(value):
    got = decode_tensor(encode_tensor(value), dtype=af.as_dtype(value.dtype), shape=list(np.shape(value)))
    assert got.dtype == value.dtype and got.shape == np.shape(value) and np.array_equal(got, value)


# -- checkpoints and graph constants ---------------------------------------------------------------------------
def _crafted_checkpoint(tmp_path, data: bytes, shape: list[int]) -> str:
    prefix = str(tmp_path / "model.ckpt")
    name = io_bundle.data_file_name("model.ckpt", 0, 1)
    (tmp_path / name).write_bytes(data)
    entry = {"name": "w", "dtype": "float32", "shape": shape, "file": 0, "offset": 0, "length": len(data),
             "crc32": zlib.crc32(data)}
    io_bundle.commit_index(prefix, [{"name": name, "length": len(data)}], [entry])
    return prefix


def test_a_checkpoint_entry_declaring_more_than_its_index_is_refused(tmp_path, bomb, monkeypatch):
    prefix = _crafted_checkpoint(tmp_path, bomb, [4])
    with _Allocations() as a:
        with pytest.raises(af.errors.DataLossError, match=r"tensor 'w' holds float32\[268435456\], the index says "
                                                          r"float32\[4\]"):
            af.train.load_variable(prefix, "w")
    a.assert_small()
    # An index that agrees with the stream still bounds what a compressed body may inflate to.
    prefix = _crafted_checkpoint(tmp_path, bomb, [GIB // 4])
    monkeypatch.setattr(tensor_codec, "MAX_INFLATED_BYTES", 1 << 20)
    with _Allocations() as a:
        with pytest.raises(af.errors.DataLossError, match="1073741824 bytes once read, over the limit of 1048576"):
            io_bundle.BundleReader(prefix).read_many(["w"])
    a.assert_small()


def test_a_small_compressed_checkpoint_entry_still_reads(tmp_path):
    data = _stream(pa.array(np.arange(4, dtype=np.float32)), "float32", [4], "lz4")
    prefix = _crafted_checkpoint(tmp_path, data, [4])
    assert af.train.load_variable(prefix, "w").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_graph_constant_is_checked_against_its_attr_and_never_inflated(bomb):
    with af.Graph().as_default() as g:
        af.constant(np.zeros(3, np.float32), name="c")
    header, buffers = graph_to_parts(g)
    with _Allocations() as a:
        with pytest.raises(ValueError, match=r"node 'c' \(Const\) attr 'value': the Arrow buffer holds "
                                             r"float32\[268435456\], the document says float32\[3\]"):
            af.import_graph_def(header, buffers=[bomb])
        node = next(n for n in header["node"] if n["name"] == "c")
        node["attr"]["value"]["tensor"]["shape"] = [GIB // 4]
        node["output"][0]["shape"] = [GIB // 4]
        with pytest.raises(ValueError, match="attr 'value': the Arrow stream's body is zstd-compressed"):
            af.import_graph_def(parts_to_document(header, [bomb]))
    a.assert_small()
