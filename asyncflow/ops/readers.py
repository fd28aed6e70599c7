"""Readers, as TF1: `TextLineReader`, `FixedLengthRecordReader`, `WholeFileReader`, `IdentityReader`,
with `read`/`read_up_to` pulling file names from a filename queue, `num_records_produced`,
`num_work_units_completed` and `reset`.

A reader is a resource (`TextLineReaderV2`, ...: a `resource` handle to a `Reader` in the op's
container), so it resumes where the previous step stopped: it keeps its current file (its
*work unit*) open between reads, and takes the next file name from the queue only when the
current file is exhausted; a closed and drained filename queue ends reading with the queue's
OutOfRangeError. Reads of one reader are serialised by an asyncio lock: a read waits for the
queue without blocking the loop, and two concurrent reads never interleave records.

Files are read with plain blocking calls in small pieces (a line, a record, or a whole file for
WholeFileReader) on the loop's thread; the records of the input pipelines this serves are small.
A file that cannot be opened fails the read (NotFoundError, PermissionDeniedError) and is
skipped (TF retries it on the next read).
"""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import zlib
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.ops.data_flow import lookup_resource
from asyncflow.ops.registry import REQUIRED, op
from asyncflow.shapes import TensorShape

_READER_ATTRS = {"container": "", "shared_name": ""}
_TRAITS = {"stateful": True, "differentiable": False}


def string_scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def string_vector(values: list[bytes]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def open_error(path: str, exc: OSError) -> errors.OpError:
    """TF's error class for a file that cannot be read."""
    detail = f"{path}; {exc.strerror or exc}"
    if isinstance(exc, FileNotFoundError):
        return errors.NotFoundError(None, None, detail)
    if isinstance(exc, PermissionError):
        return errors.PermissionDeniedError(None, None, detail)
    if isinstance(exc, IsADirectoryError):
        return errors.FailedPreconditionError(None, None, detail)
    return errors.UnknownError(None, None, detail)


class ReaderState:
    """A reader resource: its current work unit (a file name), counters, and how to read records.

    Subclasses implement `_start(path)` (open the work unit), `_next()` (the next (key, value) or
    None at its end) and `_stop()` (release it)."""

    kind = "ReaderBase"

    def __init__(self, name: str, signature: Any):
        self.name = name
        self.signature = signature
        self.work: bytes | None = None
        self.records_produced = 0
        self.work_units_completed = 0
        self._lock = asyncio.Lock()

    # -- what subclasses define ---------------------------------------------------------------------
    def _start(self, path: str) -> None:
        raise NotImplementedError

    def _next(self) -> tuple[bytes, Any] | None:
        raise NotImplementedError

    def _stop(self) -> None:
        pass

    # -- the work units --------------------------------------------------------------------------------
    async def _take_work(self, queue: Any, op_name: str) -> None:
        if queue.component_types != [dtypes.string] or (queue.dims is not None and queue.dims[0] != ()):
            raise ValueError(f"{op_name}: a reader's queue must hold string scalars (file names), "
                             f"{queue.kind} '{queue.name}' holds {[d.name for d in queue.component_types]}")
        value = queue.one(await queue.dequeue(1, False))[0]
        work = value.item() if isinstance(value, np.ndarray) else value
        path = os.fsdecode(work)
        try:
            self._start(path)
        except OSError as exc:
            raise open_error(path, exc) from None
        self.work = work if isinstance(work, bytes) else os.fsencode(work)

    def _finish_work(self) -> None:
        self._stop()
        self.work = None
        self.work_units_completed += 1

    async def read(self, queue: Any, op_name: str) -> tuple[bytes, Any]:
        """The next record, taking file names from `queue` as files run out."""
        async with self._lock:
            while True:
                if self.work is None:
                    await self._take_work(queue, op_name)
                record = self._next()
                if record is not None:
                    self.records_produced += 1
                    return record
                self._finish_work()

    async def read_up_to(self, queue: Any, n: int, op_name: str) -> list[tuple[bytes, Any]]:
        """Up to `n` records, all from one work unit (as TF: a read_up_to never spans files)."""
        async with self._lock:
            while True:
                if self.work is None:
                    await self._take_work(queue, op_name)
                records = []
                while len(records) < n:
                    record = self._next()
                    if record is None:
                        break
                    records.append(record)
                if records:
                    self.records_produced += len(records)
                    return records
                self._finish_work()

    def reset(self) -> None:
        if self.work is not None:
            self._stop()
        self.work = None
        self.records_produced = 0
        self.work_units_completed = 0

    def abort(self, reason: str) -> None:
        if self.work is not None:
            self._stop()
            self.work = None


class TextLineState(ReaderState):
    kind = "TextLineReader"

    def __init__(self, name: str, signature: Any, skip_header_lines: int):
        super().__init__(name, signature)
        self.skip_header_lines = skip_header_lines
        self._file: Any = None
        self._line = 0

    def _start(self, path: str) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - kept open across reads, closed by _stop
        self._line = 0
        self._path = os.fsencode(path)
        for _ in range(self.skip_header_lines):
            if not self._file.readline():
                break
            self._line += 1

    def _next(self) -> tuple[bytes, Any] | None:
        line = self._file.readline()
        if not line:
            return None
        self._line += 1
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        return self._path + b":" + str(self._line).encode(), line

    def _stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class FixedLengthRecordState(ReaderState):
    kind = "FixedLengthRecordReader"

    def __init__(self, name: str, signature: Any, record_bytes: int, header_bytes: int, footer_bytes: int,
                 hop_bytes: int, encoding: str):
        super().__init__(name, signature)
        if record_bytes <= 0:
            raise ValueError(f"FixedLengthRecordReader '{name}': record_bytes must be > 0, got {record_bytes}")
        if encoding not in ("", "ZLIB", "GZIP"):
            raise ValueError(f"FixedLengthRecordReader '{name}': encoding must be '', 'ZLIB' or 'GZIP', got "
                             f"{encoding!r}")
        self.record_bytes, self.header_bytes, self.footer_bytes = record_bytes, header_bytes, footer_bytes
        self.hop_bytes = hop_bytes or record_bytes
        self.encoding = encoding
        self._file: Any = None

    def _start(self, path: str) -> None:
        if self.encoding == "GZIP":
            with gzip.open(path, "rb") as f:
                self._file = io.BytesIO(f.read())
        elif self.encoding == "ZLIB":
            with open(path, "rb") as f:
                self._file = io.BytesIO(zlib.decompress(f.read()))
        else:
            self._file = open(path, "rb")  # noqa: SIM115 - kept open across reads, closed by _stop
        self._file.seek(0, io.SEEK_END)
        self._end = self._file.tell() - self.footer_bytes
        self._pos = self.header_bytes
        self._index = 0
        self._path = os.fsencode(path)

    def _next(self) -> tuple[bytes, Any] | None:
        if self._pos + self.record_bytes > self._end:
            return None
        self._file.seek(self._pos)
        value = self._file.read(self.record_bytes)
        key = self._path + b":" + str(self._index).encode()
        self._pos += self.hop_bytes
        self._index += 1
        return key, value

    def _stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class WholeFileState(ReaderState):
    kind = "WholeFileReader"

    def _start(self, path: str) -> None:
        with open(path, "rb") as f:
            self._contents: bytes | None = f.read()
        self._path = path

    def _next(self) -> tuple[bytes, Any] | None:
        contents, self._contents = self._contents, None
        return None if contents is None else (os.fsencode(self._path), contents)


class IdentityState(ReaderState):
    kind = "IdentityReader"

    def _start(self, path: str) -> None:
        self._pending: bytes | None = os.fsencode(path)

    def _next(self) -> tuple[bytes, Any] | None:
        work, self._pending = self._pending, None
        return None if work is None else (work, work)


# -- ops --------------------------------------------------------------------------------------------------------
def _scalar(b: Any) -> TensorShape:
    return TensorShape([])


def prepare_reader(k: Any) -> None:
    """Once per plan: what a reader op's resource must match when shared (its attrs)."""
    k.signature = (k.op_type,) + tuple(sorted((a, repr(v)) for a, v in k.op._attrs.items()
                                              if a not in ("container", "shared_name") and not a.startswith("_")))


def reader_resource(k: Any, make: Any) -> ReaderState:
    return lookup_resource(k, "reader", lambda: make(k.shared_name or k.name, k.signature), k.signature)


_READER_OP = {**_TRAITS, "prepare": prepare_reader}


@op("TextLineReaderV2", outputs="reader_handle: resource", attrs={"skip_header_lines": 0, **_READER_ATTRS},
    shape=_scalar, **_READER_OP)
def text_line_reader_v2(k):
    return reader_resource(k, lambda name, sig: TextLineState(name, sig, int(k.skip_header_lines)))


@op("FixedLengthRecordReaderV2", outputs="reader_handle: resource",
    attrs={"header_bytes": 0, "record_bytes": REQUIRED, "footer_bytes": 0, "hop_bytes": 0, **_READER_ATTRS,
           "encoding": ""}, shape=_scalar, **_READER_OP)
def fixed_length_record_reader_v2(k):
    return reader_resource(k, lambda name, sig: FixedLengthRecordState(
        name, sig, int(k.record_bytes), int(k.header_bytes), int(k.footer_bytes), int(k.hop_bytes), k.encoding))


@op("WholeFileReaderV2", outputs="reader_handle: resource", attrs=_READER_ATTRS, shape=_scalar, **_READER_OP)
def whole_file_reader_v2(k):
    return reader_resource(k, WholeFileState)


@op("IdentityReaderV2", outputs="reader_handle: resource", attrs=_READER_ATTRS, shape=_scalar, **_READER_OP)
def identity_reader_v2(k):
    return reader_resource(k, IdentityState)


@op("ReaderReadV2", inputs="reader_handle: resource, queue_handle: resource", outputs="key: string, value: string",
    shape=lambda b: [TensorShape([]), TensorShape([])], is_async=True, **_TRAITS)
async def reader_read_v2(k, reader, queue):
    key, value = await reader.read(queue, f"{k.op_type} '{k.name}'")
    return [string_scalar(key), string_scalar(value)]


@op("ReaderReadUpToV2", inputs="reader_handle: resource, queue_handle: resource, num_records: int64",
    outputs="keys: string, values: string", shape=lambda b: [TensorShape([None]), TensorShape([None])],
    is_async=True, **_TRAITS)
async def reader_read_up_to_v2(k, reader, queue, num_records):
    n = int(num_records)
    if n <= 0:
        raise ValueError(f"{k.op_type} '{k.name}': num_records must be > 0, got {n}")
    records = await reader.read_up_to(queue, n, f"{k.op_type} '{k.name}'")
    return [string_vector([r[0] for r in records]), string_vector([r[1] for r in records])]


@op("ReaderNumRecordsProducedV2", inputs="reader_handle: resource", outputs="records_produced: int64",
    shape=_scalar, **_TRAITS)
def reader_num_records_produced_v2(k, reader):
    return np.int64(reader.records_produced)


@op("ReaderNumWorkUnitsCompletedV2", inputs="reader_handle: resource", outputs="units_completed: int64",
    shape=_scalar, **_TRAITS)
def reader_num_work_units_completed_v2(k, reader):
    return np.int64(reader.work_units_completed)


@op("ReaderResetV2", inputs="reader_handle: resource", is_async=True, **_TRAITS)
def reader_reset_v2(k, reader):
    reader.reset()  # on the loop, with the reads (hence is_async)


# -- the Python classes --------------------------------------------------------------------------------------
def queue_ref_of(queue: Any) -> Any:
    return queue.queue_ref if hasattr(queue, "queue_ref") else queue


class ReaderBase:
    """`af.ReaderBase`: reads records from the files a filename queue names, one work unit at a time."""

    def __init__(self, reader_ref: Any, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = property(lambda self: self._supports_serialize)

    def read(self, queue: Any, name: str | None = None) -> tuple[Any, Any]:
        """The next (key, value) record; takes a file name from `queue` when the current file is done."""
        key, value = reader_read_v2(self._reader_ref, queue_ref_of(queue), name=name)
        return key, value

    def read_up_to(self, queue: Any, num_records: Any, name: str | None = None) -> tuple[Any, Any]:
        """Up to `num_records` (keys, values) from the current file (vectors)."""
        keys, values = reader_read_up_to_v2(self._reader_ref, queue_ref_of(queue), num_records, name=name)
        return keys, values

    def num_records_produced(self, name: str | None = None) -> Any:
        return reader_num_records_produced_v2(self._reader_ref, name=name)

    def num_work_units_completed(self, name: str | None = None) -> Any:
        return reader_num_work_units_completed_v2(self._reader_ref, name=name)

    def reset(self, name: str | None = None) -> Any:
        """Back to the state of a new reader: no current file, counters at zero."""
        return reader_reset_v2(self._reader_ref, name=name)


class TextLineReader(ReaderBase):
    """`af.TextLineReader(skip_header_lines=None, name=None)`: one record per line; key
    `b"<file>:<line number>"` (1-based, header lines counted), value the line without its newline."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None):
        super().__init__(text_line_reader_v2(skip_header_lines=int(skip_header_lines or 0), name=name))


class FixedLengthRecordReader(ReaderBase):
    """`af.FixedLengthRecordReader(record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
    name=None, encoding=None)`: records of `record_bytes` every `hop_bytes` (default `record_bytes`)
    between a header and a footer; key `b"<file>:<record index>"` (0-based)."""

    def __init__(self, record_bytes: int, header_bytes: int | None = None, footer_bytes: int | None = None,
                 hop_bytes: int | None = None, name: str | None = None, encoding: str | None = None):
        super().__init__(fixed_length_record_reader_v2(
            record_bytes=int(record_bytes), header_bytes=int(header_bytes or 0), footer_bytes=int(footer_bytes or 0),
            hop_bytes=int(hop_bytes or 0), encoding=encoding or "", name=name))


class WholeFileReader(ReaderBase):
    """`af.WholeFileReader(name=None)`: one record per file; key the file name, value its contents."""

    def __init__(self, name: str | None = None):
        super().__init__(whole_file_reader_v2(name=name))


class IdentityReader(ReaderBase):
    """`af.IdentityReader(name=None)`: one record per work unit, key and value both the work string."""

    def __init__(self, name: str | None = None):
        super().__init__(identity_reader_v2(name=name))


__all__ = ["ReaderBase", "TextLineReader", "FixedLengthRecordReader", "WholeFileReader", "IdentityReader"]
