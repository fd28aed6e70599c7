"""The file sources of `af.data`: `TFRecordDataset`, `TextLineDataset`, `FixedLengthRecordDataset` (TF's
names and arguments) and, beyond TF, `ArrowDataset` over Arrow IPC and Parquet files.

Each source is an async generator of *chunks*: lists of column arrays holding many rows (records
of a file, or rows of an Arrow record batch), which the dataset wraps into the runtime's blocks.
Files are read with blocking calls in chunks of about `CHUNK_BYTES` (or `CHUNK_RECORDS` records),
each chunk in a thread of the pipeline's pool, so a prefetching pipeline reads files while the
event loop runs training steps.

`num_parallel_reads` > 1 reads that many files at once and interleaves their records one by one,
as TF's (deterministic) parallel interleave with `cycle_length=num_parallel_reads, block_length=1`:
slot i takes the next file when its file runs out, and the cycle goes on with the next slot.

TFRecord framing, checksums and compression live in asyncflow/ops/record_ops_tfrecord.py; Arrow
and Parquet decoding in asyncflow/ops/readers_arrow.py (the state behind `af.io.ArrowReader`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.data import runtime
from asyncflow.data.dataset import DatasetV1, SourceDataset
from asyncflow.data.runtime import Block
from asyncflow.ops.readers import open_error
from asyncflow.ops.readers_arrow import ArrowState
from asyncflow.ops.record_ops_tfrecord import compression_string, iter_records, open_records
from asyncflow.ops.registry import constant_value, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape

CHUNK_RECORDS = 1024
CHUNK_BYTES = 1 << 20


def string_column(values: Sequence[bytes]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


class RecordFile:
    """One open file of records, read `chunk()` by `chunk()` (a list of bytes; empty at the end).

    An error met after some records of a chunk is held back until the next `chunk()`, so the records
    before a corrupt one come out first, as TF gives them."""

    _error: BaseException | None = None

    def chunk(self) -> list[bytes]:
        if self._error is not None:
            raise self._error
        out: list[bytes] = []
        try:
            self._read(out)
        except errors.OpError as exc:
            if not out:
                raise
            self._error = exc
        return out

    def _read(self, out: list[bytes]) -> None:
        """Appends the next records (about CHUNK_BYTES of them) to `out`; none at the end."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class TFRecordFile(RecordFile):
    def __init__(self, path: str, compression_type: str, buffer_size: int | None):
        self._records = iter_records(path, compression_type, buffer_size)

    def _read(self, out: list[bytes]) -> None:
        size = 0
        for _, record in self._records:
            out.append(record)
            size += len(record)
            if len(out) >= CHUNK_RECORDS or size >= CHUNK_BYTES:
                break

    def close(self) -> None:
        self._records.close()


class TextLineFile(RecordFile):
    """Lines without their "\\n" or "\\r\\n" (a last line without a newline counts)."""

    def __init__(self, path: str, compression_type: str, buffer_size: int | None):
        self._stream = open_records(path, compression_type, buffer_size)

    def _read(self, out: list[bytes]) -> None:
        out.extend(line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
                   for line in self._stream.readlines(CHUNK_BYTES))

    def close(self) -> None:
        self._stream.close()


class FixedLengthFile(RecordFile):
    """Records of `record_bytes` between a header and a footer; a body that is not a whole number of
    records is an InvalidArgumentError with TF's text (at open for a plain file, at its end otherwise)."""

    def __init__(self, path: str, record_bytes: int, header_bytes: int, footer_bytes: int, compression_type: str,
                 buffer_size: int | None):
        self.path, self.record_bytes, self.header_bytes, self.footer_bytes = path, record_bytes, header_bytes, \
            footer_bytes
        self._stream = open_records(path, compression_type, buffer_size)
        if not compression_type:
            self._check_body(os.fstat(self._stream.fileno()).st_size - header_bytes - footer_bytes)
        self._stream.read(header_bytes)
        self._tail = b""  # bytes read but not given out: a part record, or what may be the footer

    def _check_body(self, body: int) -> None:
        if body < 0 or body % self.record_bytes:
            self._stream.close()
            raise errors.InvalidArgumentError(
                None, None, f"Excluding the header ({self.header_bytes} bytes) and footer ({self.footer_bytes} "
                            f"bytes), input file \"{self.path}\" has body length {max(body, 0)} bytes, which is not "
                            f"an exact multiple of the record length ({self.record_bytes} bytes).")

    def _read(self, out: list[bytes]) -> None:
        want = max(CHUNK_BYTES // self.record_bytes, 1) * self.record_bytes
        data = self._tail + self._stream.read(want + self.footer_bytes - len(self._tail))
        at_end = len(data) < want + self.footer_bytes
        usable = len(data) - self.footer_bytes
        if at_end:
            self._check_body(usable)
        n = max(usable, 0) // self.record_bytes
        self._tail = data[n * self.record_bytes:]
        r = self.record_bytes
        out.extend(data[i * r:(i + 1) * r] for i in range(n))

    def close(self) -> None:
        self._stream.close()


def _paths(filenames: Any, what: str) -> list[str]:
    """The file names in order (any shape, flattened as TF's `flat_filenames`)."""
    return [os.fsdecode(v) for v in np.asarray(filenames, dtype=object).reshape(-1).tolist()]


def _open(opener: Callable[[str], RecordFile], path: str) -> RecordFile:
    try:
        return opener(path)
    except OSError as exc:
        raise open_error(path, exc) from None


async def record_chunks(filenames: Any, opener: Callable[[str], RecordFile], num_parallel_reads: int | None,
                        what: str, pool: Any = None) -> AsyncIterator[list[bytes]]:
    """The records of the files, in TF's order, as lists of bytes (each list from one chunk read or,
    interleaving, up to CHUNK_RECORDS records taken round robin)."""
    loop = asyncio.get_running_loop()

    def run(fn: Callable[..., Any], *args: Any) -> Any:
        return loop.run_in_executor(pool, fn, *args)

    paths = deque(_paths(filenames, what))
    cycle = int(num_parallel_reads or 1)
    if cycle == -1:  # AUTOTUNE
        cycle = min(len(paths), os.cpu_count() or 1)
    if cycle <= 1:
        while paths:
            f = await run(_open, opener, paths.popleft())
            try:
                while chunk := await run(f.chunk):
                    yield chunk
            finally:
                f.close()
        return
    slots: list[tuple[RecordFile, deque[bytes]] | None] = [None] * cycle
    try:
        index = 0
        while True:
            out: list[bytes] = []
            while len(out) < CHUNK_RECORDS:
                if all(s is None for s in slots) and not paths:
                    break
                slot = slots[index]
                if slot is None:
                    if paths:
                        slots[index] = (await run(_open, opener, paths.popleft()), deque())
                        continue
                    index = (index + 1) % cycle
                    continue
                if not slot[1]:
                    await _refill(slots, run)
                if not slot[1]:  # this file has ended: its slot takes the next file on its turn
                    slot[0].close()
                    slots[index] = None
                    index = (index + 1) % cycle
                    continue
                out.append(slot[1].popleft())
                index = (index + 1) % cycle
            if out:
                yield out
            if len(out) < CHUNK_RECORDS:
                return
    finally:
        for s in slots:
            if s is not None:
                s[0].close()


async def _refill(slots: list[Any], run: Callable[..., Any]) -> None:
    """Reads a chunk for every open file whose buffer is empty, the files in parallel."""
    empty = [s for s in slots if s is not None and not s[1]]
    chunks = await asyncio.gather(*(run(s[0].chunk) for s in empty))
    for s, chunk in zip(empty, chunks):
        s[1].extend(chunk)


def tfrecord_opener(compression_type: Any, buffer_size: int | None, what: str) -> Callable[[str], RecordFile]:
    compression = compression_string(compression_type, what)
    return lambda path: TFRecordFile(path, compression, buffer_size)


def text_line_opener(compression_type: Any, buffer_size: int | None, what: str) -> Callable[[str], RecordFile]:
    compression = compression_string(compression_type, what)
    return lambda path: TextLineFile(path, compression, buffer_size)


def fixed_length_opener(record_bytes: int, header_bytes: int | None, footer_bytes: int | None,
                        compression_type: Any, buffer_size: int | None, what: str) -> Callable[[str], RecordFile]:
    compression = compression_string(compression_type, what)
    if int(record_bytes) <= 0:
        raise errors.InvalidArgumentError(None, None, f"{what}: record_bytes must be > 0, got {record_bytes}")
    return lambda path: FixedLengthFile(path, int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0),
                                        compression, buffer_size)


async def arrow_chunks(filenames: Any, columns: Sequence[str], types: Sequence[Any], shapes: Sequence[TensorShape],
                       batch_size: int | None, file_format: str, what: str,
                       pool: Any = None) -> AsyncIterator[list[np.ndarray]]:
    """The rows of the Arrow IPC / Parquet files: one list of column arrays per record batch (at most
    `batch_size` rows), decoded by af.io.ArrowReader's state."""
    loop = asyncio.get_running_loop()
    state = ArrowState(what, None, list(columns), list(types), list(shapes), int(batch_size or 0), file_format)
    for path in _paths(filenames, what):
        try:
            await loop.run_in_executor(pool, state._start, path)
        except OSError as exc:
            raise open_error(path, exc) from None
        except ValueError as exc:
            raise errors.InvalidArgumentError(None, None, str(exc)) from None
        try:
            while True:
                record = await loop.run_in_executor(pool, state._next)
                if record is None:
                    break
                try:
                    yield state.tensors(record[1])
                except ValueError as exc:
                    raise errors.InvalidArgumentError(None, None, str(exc)) from None
        finally:
            state._stop()


# -- the datasets ---------------------------------------------------------------------------------------------
def _filenames(cls: type, filenames: Any) -> Any:
    """`filenames` as a string tensor (TF's check and message)."""
    if isinstance(filenames, os.PathLike):
        filenames = os.fspath(filenames)
    elif isinstance(filenames, (list, tuple)):
        filenames = [os.fspath(f) if isinstance(f, os.PathLike) else f for f in filenames]
    tensor = convert_to_tensor(filenames, preferred_dtype=dtypes.string)
    if tensor.dtype.base_dtype != dtypes.string:
        raise TypeError(f"The `filenames` argument must contain `tf.string` elements. Got `{tensor.dtype!r}` "
                        f"elements.")
    return tensor


def _static(value: Any, what: str, kind: type) -> Any:
    """A parameter given as a Python value or a constant tensor (the sources read it once, at build)."""
    if value is None:
        return None
    if hasattr(value, "graph"):
        folded = constant_value(value)
        if folded is None:
            raise ValueError(f"{what} must be known when the dataset is built (a Python value or a constant)")
        value = folded.item() if isinstance(folded, np.ndarray) else folded
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode()
    return kind(value)


def _per_file(cls: Any, filenames: Any, num_parallel_reads: Any, make: Callable[[Any], Any]) -> Any:
    """For a dataset of file names: one source per name, flattened (interleaved with parallel reads), as TF."""
    types, shapes = filenames.output_types, filenames.output_shapes
    if types != dtypes.string:
        raise TypeError(f"The `filenames` argument must contain `tf.string` elements. Got a dataset of `{types!r}` "
                        f"elements.")
    if not as_shape(shapes).is_compatible_with(TensorShape([])):
        raise TypeError(f"The `filenames` argument must contain `tf.string` elements of shape [] (i.e. scalars). "
                        f"Got a dataset of element shape {shapes!r}.")
    if num_parallel_reads is None:
        return filenames.flat_map(make)
    return filenames.interleave(make, cycle_length=num_parallel_reads, block_length=1,
                                num_parallel_calls=num_parallel_reads)


class _RecordSource(SourceDataset):
    """A source of string records (one scalar per element) read from files by a `RecordFile` opener; its
    arguments are TFRecordDataset's and TextLineDataset's."""

    source_kind = "_RecordSource"

    def __new__(cls, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                num_parallel_reads: Any = None, name: str | None = None) -> Any:
        if isinstance(filenames, DatasetV1):
            return _per_file(cls, filenames, num_parallel_reads,
                             lambda f: cls(f, compression_type, buffer_size, None, name))
        return super().__new__(cls)

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None):
        params = {"compression_type": _static(compression_type, "compression_type", str) or "",
                  "buffer_size": _static(buffer_size, "buffer_size", int),
                  "num_parallel_reads": _static(num_parallel_reads, "num_parallel_reads", int)}
        if params["buffer_size"] is not None and params["buffer_size"] < 0:
            params["buffer_size"] = None  # TF's -1: its default
        self.opener(params)  # checks the compression now, at graph construction
        super().__init__((dtypes.string, TensorShape([])), inputs={"filenames": _filenames(type(self), filenames)},
                         params=params)

    @classmethod
    def opener(cls, params: dict) -> Callable[[str], RecordFile]:
        raise NotImplementedError

    @classmethod
    async def elements(cls, inputs: dict[str, np.ndarray], params: dict) -> AsyncIterator[Any]:
        opener = cls.opener(params)
        async for chunk in record_chunks(inputs["filenames"], opener, params.get("num_parallel_reads"),
                                         cls.__name__, runtime.pool()):
            yield Block([string_column(chunk)], len(chunk))


class TFRecordDataset(_RecordSource):
    """`af.data.TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
    name=None)`: the records of TFRecord files (string scalars), each checksum checked: a corrupt file
    fails `get_next` with DataLossError naming it and the offset. `filenames` is a string tensor (any
    shape, read in order) or a dataset of names; `compression_type` "", "ZLIB" or "GZIP";
    `num_parallel_reads` files are read at once, their records interleaved as TF does."""

    @classmethod
    def opener(cls, params: dict) -> Callable[[str], RecordFile]:
        return tfrecord_opener(params["compression_type"], params["buffer_size"], cls.__name__)


class TextLineDataset(_RecordSource):
    """`af.data.TextLineDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
    name=None)`: the lines of text files (string scalars, without "\\n" or "\\r\\n")."""

    @classmethod
    def opener(cls, params: dict) -> Callable[[str], RecordFile]:
        return text_line_opener(params["compression_type"], params["buffer_size"], cls.__name__)


class FixedLengthRecordDataset(_RecordSource):
    """`af.data.FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None, footer_bytes=None,
    buffer_size=None, compression_type=None, num_parallel_reads=None, name=None)`: records of
    `record_bytes` bytes between a header and a footer; a body that is not a whole number of records is
    an InvalidArgumentError naming the file, as TF."""

    def __new__(cls, filenames: Any, record_bytes: Any, header_bytes: Any = None, footer_bytes: Any = None,
                buffer_size: Any = None, compression_type: Any = None, num_parallel_reads: Any = None,
                name: str | None = None) -> Any:
        if isinstance(filenames, DatasetV1):
            return _per_file(cls, filenames, num_parallel_reads, lambda f: cls(
                f, record_bytes, header_bytes, footer_bytes, buffer_size, compression_type, None, name))
        return SourceDataset.__new__(cls)  # past _RecordSource's arguments

    def __init__(self, filenames: Any, record_bytes: Any, header_bytes: Any = None, footer_bytes: Any = None,
                 buffer_size: Any = None, compression_type: Any = None, num_parallel_reads: Any = None,
                 name: str | None = None):
        params = {"record_bytes": _static(record_bytes, "record_bytes", int),
                  "header_bytes": _static(header_bytes, "header_bytes", int) or 0,
                  "footer_bytes": _static(footer_bytes, "footer_bytes", int) or 0,
                  "buffer_size": _static(buffer_size, "buffer_size", int),
                  "compression_type": _static(compression_type, "compression_type", str) or "",
                  "num_parallel_reads": _static(num_parallel_reads, "num_parallel_reads", int)}
        self.opener(params)  # checks record_bytes and the compression now, at graph construction
        SourceDataset.__init__(self, (dtypes.string, TensorShape([])),
                               inputs={"filenames": _filenames(type(self), filenames)}, params=params)

    @classmethod
    def opener(cls, params: dict) -> Callable[[str], RecordFile]:
        return fixed_length_opener(params["record_bytes"], params["header_bytes"], params["footer_bytes"],
                                   params["compression_type"], params["buffer_size"], cls.__name__)


class ArrowDataset(SourceDataset):
    """`af.data.ArrowDataset(filenames, columns, output_types, output_shapes=None, batch_size=None,
    format="auto")` (beyond TF): the rows of Arrow IPC (file or stream) and Parquet files, each row a
    dict {column: tensor}. `output_types` gives each column's dtype (a cast when the file's differs),
    `output_shapes` each row's shape (default: unknown; a fixed-size list column adds a dimension).
    Files are decoded by record batch (or Parquet row group), at most `batch_size` rows at a time,
    and their primitive columns reach the pipeline without a per-row copy."""

    def __init__(self, filenames: Any, columns: Any, output_types: Any, output_shapes: Any = None,
                 batch_size: int | None = None, format: str = "auto"):  # noqa: A002
        columns = [columns] if isinstance(columns, str) else list(columns)
        types = output_types if isinstance(output_types, (list, tuple, dict)) else [output_types] * len(columns)
        types = [types[c] for c in columns] if isinstance(types, dict) else list(types)
        if len(types) != len(columns):
            raise ValueError(f"ArrowDataset: {len(columns)} columns but {len(types)} output_types")
        if output_shapes is None:
            shapes = [TensorShape(None)] * len(columns)
        else:
            shapes = [as_shape(output_shapes[c]) for c in columns] if isinstance(output_shapes, dict) \
                else [as_shape(s) for s in output_shapes]
        if len(shapes) != len(columns):
            raise ValueError(f"ArrowDataset: {len(columns)} columns but {len(shapes)} output_shapes")
        if format not in ("auto", "ipc", "stream", "parquet"):
            raise ValueError(f"ArrowDataset: format must be auto, ipc, stream or parquet, got {format!r}")
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"ArrowDataset: batch_size must be positive, got {batch_size}")
        types = [dtypes.as_dtype(t) for t in types]
        params = {"columns": columns, "types": [t.name for t in types],
                  "shapes": [s.as_list() if s.ndims is not None else None for s in shapes],
                  "batch_size": batch_size, "format": format}
        super().__init__(({c: t for c, t in zip(columns, types)}, {c: s for c, s in zip(columns, shapes)}),
                         inputs={"filenames": _filenames(type(self), filenames)}, params=params)

    @classmethod
    async def elements(cls, inputs: dict[str, np.ndarray], params: dict) -> AsyncIterator[Any]:
        columns = params["columns"]
        order = sorted(range(len(columns)), key=lambda i: columns[i])  # a dict's components go in key order
        shapes = [TensorShape(s) for s in params["shapes"]]
        types = [dtypes.as_dtype(t) for t in params["types"]]
        async for cols in arrow_chunks(inputs["filenames"], columns, types, shapes, params["batch_size"],
                                       params["format"], "ArrowDataset", runtime.pool()):
            yield Block([cols[i] for i in order], len(cols[0]))


__all__ = ["ArrowDataset", "FixedLengthRecordDataset", "TFRecordDataset", "TextLineDataset"]
