"""The TFRecord file format: framing, checksums, compression, and the Python writer and reader.

A TFRecord file is a sequence of records, each framed as TF's record_writer.cc writes it:

    uint64 length (little-endian) | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

where `masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)` for `c = crc32c(b)`
(the Castagnoli CRC). A GZIP or ZLIB file is that same byte stream compressed as a whole, with
TF's zlib settings (level Z_DEFAULT_COMPRESSION, mem_level 9, window 15 bits, +16 for the gzip
wrapper), so the files written here are byte for byte those TF writes.

CRC-32C comes from `google_crc32c` (Google's maintained C implementation) when it is installed,
otherwise from a table-driven implementation here (slicing by 8, tables built with numpy).

Reading checks both checksums; a mismatch or a record cut short is a `DataLossError` naming the
file and the offset in the (uncompressed) stream, with TF's wording ("corrupted record at 16",
"truncated record at 16"). As TF, a file that ends inside a record's 12-byte header is read as
ending there.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from asyncflow import errors
from asyncflow.ops.readers import ReaderBase, ReaderState, open_error, prepare_reader, reader_resource
from asyncflow.ops.registry import op
from asyncflow.shapes import TensorShape

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")
_DEFAULT_BUFFER = 256 << 10  # TF's default zlib input/output buffer and reader buffer size


# -- CRC-32C ---------------------------------------------------------------------------------------------------
def _crc32c_tables() -> list[list[int]]:
    """Slicing-by-8 tables for the reflected Castagnoli polynomial 0x82F63B78."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1).astype(np.uint32)
    tables = [table]
    for _ in range(7):
        prev = tables[-1]
        tables.append((prev >> 8) ^ table[prev & 0xFF])
    return [t.tolist() for t in tables]


_TABLES: list[list[int]] | None = None


def crc32c_table(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data` (continuing `crc`), without the C library: 8 bytes per step."""
    global _TABLES
    if _TABLES is None:
        _TABLES = _crc32c_tables()
    t0, t1, t2, t3, t4, t5, t6, t7 = _TABLES
    crc ^= 0xFFFFFFFF
    mv = memoryview(data).cast("B")
    n8 = len(mv) // 8 * 8
    for (word,) in struct.iter_unpack("<Q", mv[:n8]):
        lo = (word & 0xFFFFFFFF) ^ crc
        hi = word >> 32
        crc = (t7[lo & 0xFF] ^ t6[(lo >> 8) & 0xFF] ^ t5[(lo >> 16) & 0xFF] ^ t4[lo >> 24]
               ^ t3[hi & 0xFF] ^ t2[(hi >> 8) & 0xFF] ^ t1[(hi >> 16) & 0xFF] ^ t0[hi >> 24])
    for b in mv[n8:]:
        crc = t0[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:  # the maintained C implementation, when installed
    import google_crc32c as _google_crc32c

    def crc32c(data: bytes) -> int:
        """CRC-32C (Castagnoli) of `data`."""
        return _google_crc32c.value(bytes(data)) if not isinstance(data, bytes) else _google_crc32c.value(data)

    CRC32C_IMPLEMENTATION = f"google_crc32c ({_google_crc32c.implementation})"
except ImportError:  # pragma: no cover - depends on the environment
    def crc32c(data: bytes) -> int:
        """CRC-32C (Castagnoli) of `data`."""
        return crc32c_table(data)

    CRC32C_IMPLEMENTATION = "table"


def masked_crc32c(data: bytes) -> int:
    """TF's masked CRC-32C, as stored in TFRecord files."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record as it lies in an uncompressed TFRecord file."""
    length = _LENGTH.pack(len(record))
    return b"".join((length, _FOOTER.pack(masked_crc32c(length)), record, _FOOTER.pack(masked_crc32c(record))))


# -- options ---------------------------------------------------------------------------------------------------
class TFRecordCompressionType:
    """`af.python_io.TFRecordCompressionType`: NONE, ZLIB, GZIP."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """`af.io.TFRecordOptions(compression_type=None, flush_mode=None, input_buffer_size=None,
    output_buffer_size=None, window_bits=None, compression_level=None, compression_method=None, mem_level=None,
    compression_strategy=None)`: how a TFRecord file is compressed. `None` leaves TF's zlib default."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB", TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type: Any = None, flush_mode: int | None = None,
                 input_buffer_size: int | None = None, output_buffer_size: int | None = None,
                 window_bits: int | None = None, compression_level: int | None = None,
                 compression_method: int | None = None, mem_level: int | None = None,
                 compression_strategy: int | None = None):
        self.get_compression_type_string(compression_type)
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """`""`, `"ZLIB"` or `"GZIP"` for a TFRecordOptions, a TFRecordCompressionType value or a string."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, (int, str)) and not isinstance(options, bool):
            if options in cls.compression_type_map:
                return cls.compression_type_map[options]
            if options in cls.compression_type_map.values():
                return options
        raise ValueError(f'Not a valid compression_type: "{options}"')


def compression_string(compression_type: Any, where: str) -> str:
    """A dataset or reader's `compression_type` ("", "ZLIB", "GZIP" or None) checked and normalised."""
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if compression_type is None or compression_type in ("", "ZLIB", "GZIP"):
        return compression_type or ""
    raise ValueError(f"{where}: Unsupported compression_type: {compression_type}. Expected \"\", \"ZLIB\" or "
                     f"\"GZIP\".")


def _window_bits(compression: str, window_bits: int | None) -> int:
    if window_bits is not None:
        return window_bits
    return zlib.MAX_WBITS + 16 if compression == "GZIP" else zlib.MAX_WBITS


# -- writing ---------------------------------------------------------------------------------------------------
class TFRecordWriter:
    """`af.io.TFRecordWriter(path, options=None)` (also `af.python_io`): writes records to a TFRecord file.

    `options` is a compression type string ("", "ZLIB", "GZIP"), a `TFRecordCompressionType` value
    or a `TFRecordOptions`. Use it as a context manager, or call `close()`."""

    def __init__(self, path: Any, options: Any = None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(compression_type=options)
        self._path = os.fsdecode(path)
        self._compression = TFRecordOptions.get_compression_type_string(options)
        try:
            self._file: BinaryIO | None = open(self._path, "wb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise open_error(self._path, exc) from None
        self._flush_mode = options.flush_mode
        self._zip: Any = None
        if self._compression:
            level = zlib.Z_DEFAULT_COMPRESSION if options.compression_level is None else options.compression_level
            self._zip = zlib.compressobj(
                level, zlib.DEFLATED if options.compression_method is None else options.compression_method,
                _window_bits(self._compression, options.window_bits),
                9 if options.mem_level is None else options.mem_level,  # TF's mem_level default
                zlib.Z_DEFAULT_STRATEGY if options.compression_strategy is None else options.compression_strategy)

    def _out(self) -> BinaryIO:
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, f"TFRecordWriter for {self._path} is closed.")
        return self._file

    def write(self, record: Any) -> None:
        """Appends one record (bytes; a str is written as UTF-8)."""
        out = self._out()
        data = record.encode() if isinstance(record, str) else bytes(record)
        framed = frame(data)
        out.write(self._zip.compress(framed) if self._zip is not None else framed)

    def flush(self) -> None:
        """Pushes what was written to the file (a compressed stream also flushes zlib when the options
        gave a `flush_mode`, as TF; by default, as TF, compressed bytes still buffered in zlib stay there)."""
        out = self._out()
        if self._zip is not None and self._flush_mode not in (None, zlib.Z_NO_FLUSH):
            out.write(self._zip.flush(self._flush_mode))
        out.flush()

    def close(self) -> None:
        """Finishes the compressed stream and closes the file (again: nothing)."""
        if self._file is None:
            return
        if self._zip is not None:
            self._file.write(self._zip.flush(zlib.Z_FINISH))
            self._zip = None
        self._file.close()
        self._file = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- reading ---------------------------------------------------------------------------------------------------
class _Inflating(io.RawIOBase):
    """A read-only stream of the decompressed bytes of a ZLIB or GZIP file (gzip members concatenated)."""

    def __init__(self, raw: BinaryIO, window_bits: int, path: str, chunk: int):
        self._raw, self._wbits, self._path, self._chunk = raw, window_bits, path, chunk
        self._inflate = zlib.decompressobj(window_bits)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            if self._inflate.eof:
                rest = self._inflate.unused_data
                if not rest:
                    rest = self._raw.read(self._chunk)
                    if not rest:
                        return 0
                self._inflate = zlib.decompressobj(self._wbits)  # a next gzip member
            else:
                rest = self._inflate.unconsumed_tail or self._raw.read(self._chunk)
                if not rest:
                    raise errors.DataLossError(None, None, f"{self._path}: the compressed stream ends early")
            try:
                self._pending = self._inflate.decompress(rest, self._chunk)
            except zlib.error as exc:
                raise errors.DataLossError(None, None, f"{self._path}: corrupted compressed stream ({exc})") from None
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_records(path: str, compression_type: str = "", buffer_size: int | None = None) -> BinaryIO:
    """The uncompressed byte stream of a TFRecord file (NotFoundError & co. when it cannot be opened)."""
    size = max(buffer_size or _DEFAULT_BUFFER, 4096)  # TF's buffer_size is a hint; tiny buffers only cost time
    try:
        raw = open(path, "rb", buffering=size)  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise open_error(path, exc) from None
    if not compression_type:
        return raw
    return io.BufferedReader(_Inflating(raw, _window_bits(compression_type, None), path, size), size)


def read_record(stream: BinaryIO, offset: int, path: str) -> bytes | None:
    """The record at `offset` of `stream` (positioned there), or None at a clean end of the file."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None  # as TF: a header cut short is the end of the file
    length, length_crc = _HEADER.unpack(header)
    if masked_crc32c(header[:8]) != length_crc:
        raise errors.DataLossError(None, None, f"{path}: corrupted record at {offset} (the length's checksum "
                                               f"does not match)")
    body = stream.read(length + 4) if length < (1 << 40) else b""
    if len(body) < length + 4:
        raise errors.DataLossError(None, None, f"{path}: truncated record at {offset} (its header announces {length} "
                                               f"bytes and a checksum, the file has {len(body)} left)")
    data = body[:length]
    if masked_crc32c(data) != _FOOTER.unpack_from(body, length)[0]:
        raise errors.DataLossError(None, None, f"{path}: corrupted record at {offset + _HEADER.size} (the data's "
                                               f"checksum does not match)")
    return data


def iter_records(path: Any, compression_type: str = "", buffer_size: int | None = None,
                 start: int = 0) -> Iterator[tuple[int, bytes]]:
    """(offset, record) for each record of a TFRecord file, checking every checksum."""
    path = os.fsdecode(path)
    with open_records(path, compression_type, buffer_size) as stream:
        if start:
            stream.read(start)
        offset = start
        while True:
            record = read_record(stream, offset, path)
            if record is None:
                return
            yield offset, record
            offset += _HEADER.size + len(record) + _FOOTER.size


def tf_record_iterator(path: Any, options: Any = None) -> Iterator[bytes]:
    """`af.python_io.tf_record_iterator(path, options=None)`: the records of a TFRecord file, in order.

    A corrupt record raises `af.errors.DataLossError` naming the file and offset; a missing file
    raises `NotFoundError` at once (not at the first `next`), as TF's iterator."""
    compression = TFRecordOptions.get_compression_type_string(options)
    path = os.fsdecode(path)
    if not os.path.exists(path):
        raise open_error(path, FileNotFoundError(2, "No such file or directory"))
    return (record for _, record in iter_records(path, compression))


# -- af.TFRecordReader -----------------------------------------------------------------------------------------
class TFRecordState(ReaderState):
    """A TFRecord reader resource: the current file's record iterator; keys are `b"<file>:<offset>"`."""

    kind = "TFRecordReader"

    def __init__(self, name: str, signature: Any, compression_type: str):
        super().__init__(name, signature)
        self.compression_type = compression_string(compression_type, f"TFRecordReader '{name}'")
        self._records: Iterator[tuple[int, bytes]] | None = None

    def _start(self, path: str) -> None:
        self._path = os.fsencode(path)
        self._records = iter_records(path, self.compression_type)

    def _next(self) -> tuple[bytes, Any] | None:
        for offset, record in self._records:
            return self._path + b":" + str(offset).encode(), record
        return None

    def _stop(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None


@op("TFRecordReaderV2", outputs="reader_handle: resource",
    attrs={"container": "", "shared_name": "", "compression_type": ""}, shape=lambda b: TensorShape([]),
    stateful=True, differentiable=False, prepare=prepare_reader)
def tf_record_reader_v2(k):
    return reader_resource(k, lambda name, sig: TFRecordState(name, sig, k.compression_type))


class TFRecordReader(ReaderBase):
    """`af.TFRecordReader(name=None, options=None)`: one record per TFRecord record; key
    `b"<file>:<offset>"`. `options` gives the compression as for TFRecordWriter."""

    def __init__(self, name: str | None = None, options: Any = None):
        compression = TFRecordOptions.get_compression_type_string(options)
        super().__init__(tf_record_reader_v2(compression_type=compression, name=name))


__all__ = ["TFRecordReader"]
