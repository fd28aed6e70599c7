"""Tensors as Arrow IPC streams: `encode_tensor`, and `decode_tensor`, which bounds what it decodes.

A tensor is one Arrow IPC stream: a schema of one non-null field whose metadata names the dtype
(`asyncflow.dtype`) and the shape (`asyncflow.shape`, JSON), then one record batch holding the values
in C order, little-endian. Types Arrow has natively keep them; the others travel as their exact bits:
bfloat16 as uint16, complex as fixed-size lists of two floats (real, imaginary), strings as binary.

Decoding never trusts the stream to say how much memory it takes. `read_tensor_header` reads the
metadata alone (`asyncflow.arrow_ipc`: no decompression, no allocation) and checks that the stream is
what its dtype and shape need: the field's Arrow type, a batch of exactly that many rows, no nulls,
the buffers a column of that type has, each no larger than that dtype and shape need (a compressed
buffer's declared uncompressed length counts). `decode_tensor` then checks the caller's limits before
pyarrow reads a byte of the body: the dtype and shape the caller expects (a placeholder's, an index's,
an attr's), `max_bytes`, and compression. asyncflow never writes compressed bodies (Arrow's LZ4/ZSTD
IPC compression), so they are refused unless the caller allows them (files only), and then inflate to
at most `max_bytes` or `MAX_INFLATED_BYTES`. Every refusal is a ValueError naming the tensor, what it
declares and the limit. What comes back is read-only and, for numeric dtypes over immutable memory,
a view of the input (zero-copy).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from asyncflow import dtypes
from asyncflow.arrow_ipc import StreamHeader, read_stream_header

BytesLike = bytes | bytearray | memoryview | pa.Buffer

MAX_INFLATED_BYTES = 1 << 30  # a compressed body (files only) inflates to at most this, unless the caller says
MAX_RANK = 254  # TF's limit on a tensor's rank

_ARROW_TYPE = {
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(), "bfloat16": pa.uint16(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "bool": pa.bool_(), "complex64": pa.list_(pa.float32(), 2), "complex128": pa.list_(pa.float64(), 2),
    "string": pa.binary(),
}
_BITS_DTYPE = {"bfloat16": np.dtype("<u2"), "complex64": np.dtype("<f4"), "complex128": np.dtype("<f8")}
_META_DTYPE, _META_SHAPE = b"asyncflow.dtype", b"asyncflow.shape"
_LARGE_BINARY = 2**31 - 1


def encode_tensor(value: np.ndarray | np.generic) -> pa.Buffer:
    """A numpy array (or scalar) as an Arrow IPC stream; exact bits for every asyncflow dtype."""
    arr = np.asarray(value)
    try:
        dtype = dtypes.as_dtype(arr.dtype)
    except TypeError:
        raise ValueError(f"cannot serialise an array of numpy dtype {arr.dtype}") from None
    flat = np.ascontiguousarray(arr).reshape(-1)
    n = flat.size
    if dtype.is_string:
        items = flat.tolist()
        bad = next((v for v in items if not isinstance(v, bytes)), None)
        if bad is not None:
            raise ValueError(f"string tensors hold bytes; got an element of type {type(bad).__name__}")
        big = sum(map(len, items)) > _LARGE_BINARY
        column = pa.array(items, type=pa.large_binary() if big else pa.binary())
    elif dtype.is_bool:
        bits = np.packbits(flat.astype(np.uint8), bitorder="little")
        column = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    else:
        raw = flat.view(_BITS_DTYPE.get(dtype.name, flat.dtype))
        if sys.byteorder != "little":
            raw = raw.astype(raw.dtype.newbyteorder("<"))
        typ = _ARROW_TYPE[dtype.name]
        if isinstance(typ, pa.FixedSizeListType):
            child = pa.Array.from_buffers(typ.value_type, 2 * n, [None, pa.py_buffer(raw)])
            column = pa.FixedSizeListArray.from_arrays(child, 2)
        else:
            column = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(raw)])
    meta = {_META_DTYPE: dtype.name.encode(), _META_SHAPE: orjson.dumps(list(arr.shape))}
    schema = pa.schema([pa.field("values", column.type, nullable=False)], metadata=meta)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(pa.record_batch([column], schema=schema))
    return sink.getvalue()


@dataclass(frozen=True)
class TensorHeader:
    """What a tensor stream declares, checked against itself; nothing of its body is read yet."""

    where: str
    dtype: dtypes.DType
    shape: tuple[int, ...]
    decoded_bytes: int  # the memory its values take once read (inflated, when the body is compressed)
    codec: str  # "" or the body's compression ("lz4_frame", "zstd")
    source: pa.Buffer
    stream: StreamHeader


def _pad64(n: int) -> int:
    return -(-n // 64) * 64


def _buffer_needs(name: str, n: int, arrow_type: pa.DataType) -> list[tuple[int, bool]]:
    """(bytes, optional) for each buffer of a column holding n values of dtype `name`: how many bytes it
    needs (-1: any number, a string column's data), and whether it may be left out (0 bytes)."""
    bitmap = (n + 7) // 8
    if name == "string":
        return [(bitmap, True), ((n + 1) * (8 if arrow_type == pa.large_binary() else 4), n == 0), (-1, True)]
    if name == "bool":
        return [(bitmap, True), (bitmap, n == 0)]
    if name in ("complex64", "complex128"):
        values = 2 * n * _BITS_DTYPE[name].itemsize
        return [(bitmap, True), ((2 * n + 7) // 8, True), (values, n == 0)]
    values = n * np.dtype(_BITS_DTYPE.get(name, dtypes.as_dtype(name).as_numpy_dtype)).itemsize
    return [(bitmap, True), (values, n == 0)]


def read_tensor_header(data: BytesLike, where: str = "tensor") -> TensorHeader:
    """The dtype, shape and size a stream declares, once its metadata proves self-consistent (see the
    module docstring); ValueError naming `where` otherwise. Reads no body and allocates nothing large."""
    source = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    head = read_stream_header(source, where)
    name = head.metadata.get(_META_DTYPE, b"").decode("utf-8", "replace")
    if name not in _ARROW_TYPE:
        raise ValueError(f"{where}: Arrow buffer names no known dtype (got {name!r})")
    shape = _parse_shape_meta(head.metadata.get(_META_SHAPE), where)
    n = math.prod(shape)
    want_type = _ARROW_TYPE[name]
    nested = isinstance(want_type, pa.FixedSizeListType)
    nodes = [(n, 0), (2 * n, 0)] if nested else [(n, 0)]
    types_ok = head.arrow_type == want_type or (name == "string" and head.arrow_type == pa.large_binary())
    if not types_ok or head.length != n or list(head.nodes) != nodes:
        raise ValueError(f"{where}: Arrow column of type {head.arrow_type}, length {head.length}, nodes "
                         f"{list(head.nodes)} does not hold a {name} tensor of shape {list(shape)}")
    needs = _buffer_needs(name, n, head.arrow_type)
    if len(head.buffers) != len(needs):
        raise ValueError(f"{where}: Arrow column of a {name} tensor has {len(needs)} buffers, the stream "
                         f"declares {len(head.buffers)}")
    for i, (size, (need, optional)) in enumerate(zip(head.decoded_sizes, needs)):
        # Writers may pad a buffer (to 8 or 64 bytes), never make it larger or shorter than its values.
        if need >= 0 and (size > _pad64(need) or (size < need and not (optional and size == 0))):
            raise ValueError(f"{where}: Arrow buffer {i} declares {size} bytes, a {name}{list(shape)} tensor needs "
                             f"{need}")
    dtype = dtypes.as_dtype(name)
    decoded = max(head.decoded_bytes, n * np.dtype(dtype.as_numpy_dtype).itemsize)  # strings: a pointer each
    return TensorHeader(where, dtype, shape, decoded, head.codec, source, head)


def _parse_shape_meta(raw: bytes | None, where: str) -> tuple[int, ...]:
    try:
        shape = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        shape = None
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"{where}: Arrow buffer has no valid shape (got {raw!r:.200})")
    return tuple(shape)


def _matches(shape: tuple[int, ...], want: Sequence[int | None] | None) -> bool:
    return want is None or (len(want) == len(shape) and all(w is None or w == d for w, d in zip(want, shape)))


def check_limits(head: TensorHeader, max_bytes: int | None = None, allow_compressed: bool = False) -> None:
    """Refuses (ValueError) a compressed body unless allowed, and a tensor that would take more than
    `max_bytes` (a compressed one: more than MAX_INFLATED_BYTES when no `max_bytes` is given)."""
    what = f"{head.dtype.name}{list(head.shape)}"
    if head.codec and not allow_compressed:
        raise ValueError(f"{head.where}: the Arrow stream's body is {head.codec}-compressed ({what}, "
                         f"{head.decoded_bytes} bytes once inflated); compressed Arrow bodies are not accepted here")
    limit = max_bytes if max_bytes is not None else MAX_INFLATED_BYTES if head.codec else None
    if limit is not None and head.decoded_bytes > limit:
        raise ValueError(f"{head.where}: the Arrow stream declares {what}, {head.decoded_bytes} bytes once read, "
                         f"over the limit of {limit} bytes")


_SCHEMAS: dict[tuple[pa.DataType, bool], pa.Schema] = {}


def decode_tensor(data: BytesLike | TensorHeader, where: str = "tensor", *, dtype: Any = None,
                  shape: Sequence[int | None] | None = None, max_bytes: int | None = None,
                  allow_compressed: bool = False) -> np.ndarray:
    """The numpy array an `encode_tensor` stream holds (read-only); ValueError if it is malformed, is not
    `dtype` (a DType or name) of `shape` (dims, None where any size will do), or breaks the limits
    (`check_limits`). `data` may be the stream or its `read_tensor_header`."""
    head = data if isinstance(data, TensorHeader) else read_tensor_header(data, where)
    where = head.where
    if (dtype is not None and dtypes.as_dtype(dtype) != head.dtype) or not _matches(head.shape, shape):
        want = dtypes.as_dtype(dtype).name if dtype is not None else head.dtype.name
        dims = "?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
        raise ValueError(f"{where}: the Arrow buffer holds {head.dtype.name}{list(head.shape)}, expected {want}{dims}")
    check_limits(head, max_bytes, allow_compressed)
    stream = head.stream
    key = (stream.arrow_type, stream.nullable)
    schema = _SCHEMAS.get(key)
    if schema is None:
        schema = _SCHEMAS.setdefault(key, pa.schema([pa.field("values", key[0], nullable=key[1])]))
    try:  # only now does pyarrow read the body (and inflate a compressed one, to the sizes checked above)
        batch = pa.ipc.read_record_batch(pa.ipc.read_message(stream.batch_message), schema)
        batch.validate(full=True)
    except (pa.ArrowException, OSError, ValueError, TypeError, RuntimeError, KeyError, IndexError) as e:
        raise ValueError(f"{where}: corrupt Arrow buffer ({type(e).__name__}: {e})") from None
    return _to_numpy(batch.column(0), head)


def _to_numpy(column: pa.Array, head: TensorHeader) -> np.ndarray:
    dtype, n = head.dtype, math.prod(head.shape)
    if len(column) != n or column.null_count:
        raise ValueError(f"{head.where}: Arrow column of length {len(column)} with {column.null_count} nulls does "
                         f"not hold a {dtype.name} tensor of shape {list(head.shape)}")
    if dtype.is_string:
        out = np.empty(n, dtype=object)
        out[:] = column.to_pylist()
    elif dtype.is_bool:
        out = column.to_numpy(zero_copy_only=False).astype(np.bool_, copy=False)
    else:
        values = column.flatten() if isinstance(column.type, pa.FixedSizeListType) else column
        bits = _BITS_DTYPE.get(dtype.name, np.dtype(dtype.as_numpy_dtype).newbyteorder("<"))
        buf = values.buffers()[1]
        count = len(values)
        out = np.frombuffer(buf, dtype=bits, count=count, offset=values.offset * bits.itemsize) if count \
            else np.empty(0, dtype=bits)
        # Zero-copy only over memory nobody can change later (bytes); a bytearray's may be reused.
        if head.source.is_mutable or sys.byteorder != "little" or not out.flags.aligned:
            out = out.astype(bits.newbyteorder("="))
        out = out.view(dtype.as_numpy_dtype)
    out = out.reshape(head.shape)
    out.setflags(write=False)
    return out


__all__ = ["encode_tensor", "decode_tensor", "read_tensor_header", "check_limits", "TensorHeader",
           "MAX_INFLATED_BYTES"]
