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

from asyncflow import errors
from asyncflow.ops.readers import open_error
from asyncflow.ops.readers_arrow import ArrowState
from asyncflow.ops.record_ops_tfrecord import compression_string, iter_records, open_records
from asyncflow.shapes import TensorShape

CHUNK_RECORDS = 1024
CHUNK_BYTES = 1 << 20


def string_column(values: Sequence[bytes]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


class RecordFile:
    """One open file of records, read `chunk()` by `chunk()` (a list of bytes; empty at the end)."""

    def chunk(self) -> list[bytes]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class TFRecordFile(RecordFile):
    def __init__(self, path: str, compression_type: str, buffer_size: int | None):
        self._records = iter_records(path, compression_type, buffer_size)

    def chunk(self) -> list[bytes]:
        out: list[bytes] = []
        size = 0
        for _, record in self._records:
            out.append(record)
            size += len(record)
            if len(out) >= CHUNK_RECORDS or size >= CHUNK_BYTES:
                break
        return out

    def close(self) -> None:
        self._records.close()


class TextLineFile(RecordFile):
    """Lines without their "\\n" or "\\r\\n" (a last line without a newline counts)."""

    def __init__(self, path: str, compression_type: str, buffer_size: int | None):
        self._stream = open_records(path, compression_type, buffer_size)

    def chunk(self) -> list[bytes]:
        lines = self._stream.readlines(CHUNK_BYTES)
        return [line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
                for line in lines]

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

    def chunk(self) -> list[bytes]:
        want = max(CHUNK_BYTES // self.record_bytes, 1) * self.record_bytes
        data = self._tail + self._stream.read(want + self.footer_bytes - len(self._tail))
        at_end = len(data) < want + self.footer_bytes
        usable = len(data) - self.footer_bytes
        if at_end:
            self._check_body(usable)
        n = max(usable, 0) // self.record_bytes
        self._tail = data[n * self.record_bytes:]
        r = self.record_bytes
        return [data[i * r:(i + 1) * r] for i in range(n)]

    def close(self) -> None:
        self._stream.close()


def _paths(filenames: Any, what: str) -> list[str]:
    values = np.asarray(filenames, dtype=object)
    if values.ndim > 1:
        raise errors.InvalidArgumentError(None, None, f"{what}: `filenames` must be a scalar or a vector, got shape "
                                                      f"{list(values.shape)}")
    return [os.fsdecode(v) for v in values.reshape(-1).tolist()]


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


__all__: list[str] = []
