"""What an Arrow IPC tensor stream declares, read from its metadata alone, before anything is decoded.

`asyncflow.serialization.decode_tensor` must know how much memory a stream will take before pyarrow
reads it: a compressed body says how large each buffer becomes only inside the body (Arrow's IPC
compression writes each buffer as a little-endian int64 uncompressed length, or -1 when the buffer
is stored as is, then the codec's frame), and pyarrow allocates that length as soon as it reads the
batch. So this module walks the stream's framing and the flatbuffer headers of its messages itself
(Message.fbs, Schema.fbs), touching only the metadata and the 8-byte prefix of each compressed buffer:

    stream   := message* [0xFFFFFFFF 0x00000000 | end]     (pre-1.0 writers omit the 0xFFFFFFFF)
    message  := 0xFFFFFFFF, int32 metadata length, flatbuffer Message, body of Message.bodyLength bytes

`read_stream_header` returns a `StreamHeader`: the one field's Arrow type (only the types a tensor
stream uses: integers, floats, bool, binary, large binary, and a fixed-size list of floats), its
schema metadata, the record batch's length, field nodes and buffers, the codec, and each buffer's
declared decoded size. The shape of the stream is checked on the way (one schema, one field, no
dictionaries, at most `MAX_NESTING` levels of children, one record batch, then the end), so a hostile
stream costs the parser time in proportion to its metadata and no allocation beyond small lists.
Anything malformed is a ValueError naming `where`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pyarrow as pa

CONTINUATION = 0xFFFFFFFF
MAX_NESTING = 2  # a fixed-size list of floats (complex tensors) is the deepest type a tensor stream has
MAX_METADATA_ENTRIES = 64
MAX_BUFFERS = 8  # a tensor column has at most three buffers; a few more leave room for nothing else

_HEADER_SCHEMA, _HEADER_DICTIONARY, _HEADER_RECORD_BATCH = 1, 2, 3
_CODECS = {0: "lz4_frame", 1: "zstd"}
_SUPPORTED_VERSIONS = (3, 4)  # MetadataVersion V4 and V5, what pyarrow reads
_INT_TYPES = {(8, True): pa.int8(), (16, True): pa.int16(), (32, True): pa.int32(), (64, True): pa.int64(),
              (8, False): pa.uint8(), (16, False): pa.uint16(), (32, False): pa.uint32(), (64, False): pa.uint64()}
_FLOAT_TYPES = {0: pa.float16(), 1: pa.float32(), 2: pa.float64()}
# Schema.fbs's Type union: the members a tensor stream may use (others are refused by name).
_TYPE_INT, _TYPE_FLOAT, _TYPE_BINARY, _TYPE_BOOL, _TYPE_FIXED_LIST, _TYPE_LARGE_BINARY = 2, 3, 4, 6, 16, 19
_SUPPORTED_TYPES = (_TYPE_INT, _TYPE_FLOAT, _TYPE_BINARY, _TYPE_BOOL, _TYPE_FIXED_LIST, _TYPE_LARGE_BINARY)
_TYPE_NAMES = {1: "Null", 5: "Utf8", 7: "Decimal", 8: "Date", 9: "Time", 10: "Timestamp", 11: "Interval",
               12: "List", 13: "Struct", 14: "Union", 15: "FixedSizeBinary", 17: "Map", 18: "Duration",
               20: "LargeUtf8", 21: "LargeList", 22: "RunEndEncoded", 23: "BinaryView", 24: "Utf8View",
               25: "ListView", 26: "LargeListView"}

_U8, _I16, _U16, _I32, _U32, _I64 = (struct.Struct(f) for f in ("<B", "<h", "<H", "<i", "<I", "<q"))
_NODE = struct.Struct("<qq")  # FieldNode {length, null_count} and Buffer {offset, length}: two int64s


class _Corrupt(Exception):
    """Raised inside the parser; `read_stream_header` turns it into a ValueError naming the stream."""


@dataclass(frozen=True)
class StreamHeader:
    """What a one-batch tensor stream declares (see the module docstring)."""

    arrow_type: pa.DataType
    nullable: bool
    metadata: dict[bytes, bytes]
    length: int  # the record batch's rows
    nodes: tuple[tuple[int, int], ...]  # (length, null count) per field node, depth first
    buffers: tuple[tuple[int, int], ...]  # (offset, length) in the body, as stored
    decoded_sizes: list[int]  # each buffer's size once read: the uncompressed length prefix when compressed
    codec: str  # "" (uncompressed), "lz4_frame" or "zstd"
    batch_message: pa.Buffer  # the record batch's whole encapsulated message, for pyarrow
    body_start: int  # where the record batch's body starts in the stream (the buffers' offsets count from it)

    @property
    def decoded_bytes(self) -> int:
        return sum(self.decoded_sizes)


class _Table:
    """A flatbuffer table inside `buf`, every read bounds-checked."""

    __slots__ = ("buf", "pos", "vtable", "vsize")

    def __init__(self, buf: memoryview, pos: int):
        self.buf, self.pos = buf, pos
        self.vtable = pos - _read(_I32, buf, pos)
        self.vsize = _read(_U16, buf, self.vtable)
        if self.vsize < 4 or self.vsize % 2:
            raise _Corrupt(f"bad flatbuffer vtable size {self.vsize}")

    def _field(self, slot: int) -> int:
        entry = 4 + 2 * slot
        if entry >= self.vsize:
            return 0
        off = _read(_U16, self.buf, self.vtable + entry)
        return self.pos + off if off else 0

    def scalar(self, slot: int, fmt: struct.Struct, default: int = 0) -> int:
        at = self._field(slot)
        return _read(fmt, self.buf, at) if at else default

    def _target(self, slot: int) -> int:
        at = self._field(slot)
        return at + _read(_U32, self.buf, at) if at else 0

    def table(self, slot: int) -> _Table | None:
        at = self._target(slot)
        return _Table(self.buf, at) if at else None

    def vector(self, slot: int, limit: int) -> tuple[int, int]:
        """(count, position of the first element) of a vector field; (0, 0) when absent."""
        at = self._target(slot)
        if not at:
            return 0, 0
        count = _read(_U32, self.buf, at)
        if count > limit:
            raise _Corrupt(f"a vector of {count} entries where at most {limit} are allowed")
        return count, at + 4

    def tables(self, slot: int, limit: int) -> list[_Table]:
        count, first = self.vector(slot, limit)
        return [_Table(self.buf, p + _read(_U32, self.buf, p)) for p in range(first, first + 4 * count, 4)]

    def structs(self, slot: int, limit: int) -> list[tuple[int, int]]:
        count, first = self.vector(slot, limit)
        if first + 16 * count > len(self.buf):
            raise _Corrupt("a vector runs past the end of the metadata")
        return [_NODE.unpack_from(self.buf, p) for p in range(first, first + 16 * count, 16)]

    def string(self, slot: int) -> bytes:
        at = self._target(slot)
        if not at:
            return b""
        n = _read(_U32, self.buf, at)
        if at + 4 + n > len(self.buf):
            raise _Corrupt("a string runs past the end of the metadata")
        return bytes(self.buf[at + 4:at + 4 + n])


def _read(fmt: struct.Struct, buf: memoryview, pos: int) -> int:
    # unpack_from counts a negative offset from the end: a hostile offset must not wrap around.
    if pos < 0 or pos + fmt.size > len(buf):
        raise _Corrupt(f"offset {pos} outside the {len(buf)}-byte metadata")
    return fmt.unpack_from(buf, pos)[0]


def _field_type(field: _Table, depth: int) -> pa.DataType:
    if field.table(4) is not None:
        raise _Corrupt("dictionary-encoded fields are not tensor streams")
    kind = field.scalar(2, _U8)
    if kind not in _SUPPORTED_TYPES:
        raise _Corrupt(f"unsupported Arrow type {_TYPE_NAMES.get(kind, kind)}")
    spec = field.table(3)
    children = field.tables(5, MAX_BUFFERS)
    if kind == _TYPE_FIXED_LIST:
        if depth >= MAX_NESTING or len(children) != 1 or spec is None:
            raise _Corrupt(f"a fixed-size list needs one child within {MAX_NESTING} levels")
        size = spec.scalar(0, _I32)
        if size <= 0:
            raise _Corrupt(f"bad fixed-size list size {size}")
        return pa.list_(_field_type(children[0], depth + 1), size)
    if children:
        raise _Corrupt("only a fixed-size list has children")
    if kind == _TYPE_INT and spec is not None:
        typ = _INT_TYPES.get((spec.scalar(0, _I32), bool(spec.scalar(1, _U8))))
    elif kind == _TYPE_FLOAT:
        typ = _FLOAT_TYPES.get(spec.scalar(0, _I16) if spec is not None else 0)
    else:
        typ = {_TYPE_BOOL: pa.bool_(), _TYPE_BINARY: pa.binary(), _TYPE_LARGE_BINARY: pa.large_binary()}.get(kind)
    if typ is None:
        raise _Corrupt(f"unsupported Arrow type {_TYPE_NAMES.get(kind, kind)}")
    return typ


def _messages(view: memoryview) -> list[tuple[int, int, _Table, int]]:
    """(start, body start, Message table, end) of each message up to the end-of-stream marker."""
    out = []
    pos, size = 0, len(view)
    while pos < size:
        start = pos
        length = _read(_I32, view, pos)
        pos += 4
        if length == -1:  # the continuation marker; the length follows
            length = _read(_I32, view, pos)
            pos += 4
        if length == 0:
            break
        if length < 0 or pos + length > size:
            raise _Corrupt(f"message metadata of {length} bytes at offset {pos} runs past the end ({size} bytes)")
        meta = view[pos:pos + length]
        message = _Table(meta, _read(_U32, meta, 0))
        version = message.scalar(0, _I16)
        if version not in _SUPPORTED_VERSIONS:
            raise _Corrupt(f"unsupported Arrow metadata version {version}")
        body = message.scalar(3, _I64)
        end = pos + length + body
        if body < 0 or end > size:
            raise _Corrupt(f"message body of {body} bytes runs past the end of the stream ({size} bytes)")
        out.append((start, pos + length, message, end))
        if len(out) > 2:
            raise _Corrupt("more than one record batch")
        pos = end
    return out


def _decoded_sizes(view: memoryview, body_start: int, buffers: tuple[tuple[int, int], ...], codec: str) -> list[int]:
    """Each buffer's size once read: as stored, or the uncompressed length a compressed one declares."""
    if not codec:
        return [length for _, length in buffers]
    sizes = []
    for offset, length in buffers:
        if length == 0:
            sizes.append(0)
            continue
        if length < 8:
            raise _Corrupt(f"compressed buffer of {length} bytes has no length prefix")
        declared = _read(_I64, view, body_start + offset)
        if declared < -1:
            raise _Corrupt(f"compressed buffer declares {declared} bytes")
        sizes.append(length - 8 if declared == -1 else declared)
    return sizes


@dataclass(frozen=True)
class _Layout:
    """Everything the metadata says, up to the record batch's body (what the parse cache keeps)."""

    arrow_type: pa.DataType
    nullable: bool
    metadata: dict[bytes, bytes]
    length: int
    nodes: tuple[tuple[int, int], ...]
    buffers: tuple[tuple[int, int], ...]
    codec: str
    batch_start: int
    body_start: int
    body_length: int


def _parse(view: memoryview) -> _Layout:
    messages = _messages(view)
    if len(messages) != 2:
        raise _Corrupt(f"a tensor stream holds a schema and one record batch, got {len(messages)} messages")
    (_, _, schema_msg, _), (start, body_start, batch_msg, end) = messages
    if schema_msg.scalar(1, _U8) != _HEADER_SCHEMA or batch_msg.scalar(1, _U8) != _HEADER_RECORD_BATCH:
        kinds = [m.scalar(1, _U8) for _, _, m, _ in messages]
        what = "dictionary batches" if _HEADER_DICTIONARY in kinds else f"message kinds {kinds}"
        raise _Corrupt(f"a tensor stream holds a schema then one record batch, got {what}")
    schema = schema_msg.table(2)
    if schema is None or schema.scalar(0, _I16) != 0:
        raise _Corrupt("the schema is missing or not little-endian")
    fields = schema.tables(1, MAX_BUFFERS)
    if len(fields) != 1:
        raise _Corrupt(f"a tensor stream has one field, got {len(fields)}")
    metadata = {kv.string(0): kv.string(1) for kv in schema.tables(2, MAX_METADATA_ENTRIES)}
    batch = batch_msg.table(2)
    if batch is None:
        raise _Corrupt("the record batch message has no header")
    if batch.vector(4, 0)[0]:
        raise _Corrupt("variadic buffers are not tensor streams")
    compression = batch.table(3)
    codec = ""
    if compression is not None:
        codec = _CODECS.get(compression.scalar(0, _U8), "")
        if not codec or compression.scalar(1, _U8) != 0:
            raise _Corrupt(f"unknown body compression {compression.scalar(0, _U8)}/{compression.scalar(1, _U8)}")
    buffers = batch.structs(2, MAX_BUFFERS)
    for offset, length in buffers:
        if offset < 0 or length < 0 or body_start + offset + length > end:
            raise _Corrupt(f"buffer at {offset} of {length} bytes lies outside the {end - body_start}-byte body")
    return _Layout(_field_type(fields[0], 1), bool(fields[0].scalar(1, _U8)), metadata, batch.scalar(0, _I64),
                   tuple(batch.structs(1, MAX_BUFFERS)), tuple(buffers), codec, start, body_start, end - body_start)


# Every step sends a tensor of the same dtype and shape with the same metadata bytes, so the parse of
# the bytes before the record batch's body is kept (small prefixes only: a hostile one is not cached).
_LAYOUTS: dict[bytes, _Layout] = {}
_CACHE_ENTRIES, _CACHE_KEY_BYTES = 512, 4096
_EOS = (b"", b"\0\0\0\0", b"\xff\xff\xff\xff\0\0\0\0")


def _prefix_end(view: memoryview) -> int:
    """Where the batch's body starts when the schema message has no body (as writers do), else -1."""
    pos = 0
    for _ in range(2):
        length = _I32.unpack_from(view, pos)[0]
        if length == -1:
            length = _I32.unpack_from(view, pos + 4)[0]
            pos += 4
        if length <= 0:
            return -1
        pos += 4 + length
    return pos


def _layout(view: memoryview) -> _Layout:
    try:
        prefix = _prefix_end(view)
    except struct.error:
        prefix = -1
    key = bytes(view[:prefix]) if 0 < prefix <= _CACHE_KEY_BYTES else None
    hit = _LAYOUTS.get(key) if key is not None else None
    if hit is not None:
        end = hit.body_start + hit.body_length
        tail = bytes(view[end:end + 8])
        if end <= len(view) and (tail in _EOS or tail[:4] == _EOS[1]):  # what `_messages` accepts after the batch
            return hit
    layout = _parse(view)
    if key is not None and layout.body_start == prefix:
        if len(_LAYOUTS) >= _CACHE_ENTRIES:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        _LAYOUTS[key] = layout
    return layout


def read_stream_header(source: pa.Buffer, where: str = "tensor") -> StreamHeader:
    """The declarations of the one-batch stream in `source`; ValueError when it is not one."""
    view = memoryview(source).cast("B") if source.size else memoryview(b"")
    try:
        lay = _layout(view)
        sizes = _decoded_sizes(view, lay.body_start, lay.buffers, lay.codec)
    except (_Corrupt, struct.error) as e:
        raise ValueError(f"{where}: corrupt Arrow buffer ({e})") from None
    end = lay.body_start + lay.body_length
    return StreamHeader(lay.arrow_type, lay.nullable, lay.metadata, lay.length, lay.nodes, lay.buffers, sizes,
                        lay.codec, source.slice(lay.batch_start, end - lay.batch_start), lay.body_start)


__all__ = ["StreamHeader", "read_stream_header", "MAX_NESTING", "MAX_BUFFERS"]
