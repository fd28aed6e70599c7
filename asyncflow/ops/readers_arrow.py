"""The ops behind `af.io.ArrowReader` (beyond TF): `ArrowReader`, a reader resource over Arrow IPC
and Parquet files, and `ArrowReaderRead`, which gives its next record batch as one tensor per column.

The reader takes file names from a filename queue as TF's readers do (`readers.ReaderState`):
it keeps the current file open between steps and moves to the next file when one runs out.
A batch is a file's own record batch (an IPC file's, or a Parquet row group's), or slices of
`batch_size` rows when that attr is set. Columns become numpy arrays without copying where Arrow
allows it: IPC files are memory-mapped, and a primitive column without nulls is viewed, not
copied (a fixed-size list column, or a list column whose rows all have one length, becomes an
extra dimension the same way). A dtype other than the column's is a cast (a copy); strings and
binaries become numpy object arrays of bytes; nulls are an error naming the file and column.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.ops.readers import ReaderState, prepare_reader, reader_resource
from asyncflow.ops.registry import ALL_TYPES, BuildContext, TypeList, op
from asyncflow.shapes import TensorShape, as_shape

_PARQUET_MAGIC = b"PAR1"
_IPC_FILE_MAGIC = b"ARROW1"


def _format_of(path: str, declared: str) -> str:
    if declared in ("ipc", "parquet", "stream"):
        return declared
    with open(path, "rb") as f:
        head = f.read(6)
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    return "ipc" if head == _IPC_FILE_MAGIC else "stream"


class ArrowState(ReaderState):
    """An Arrow reader's state: the current file's batch iterator and the rows produced so far."""

    kind = "ArrowReader"

    def __init__(self, name: str, signature: Any, columns: list[str], component_types: list[dtypes.DType],
                 shapes: list[TensorShape], batch_size: int, file_format: str):
        super().__init__(name, signature)
        if file_format not in ("auto", "ipc", "stream", "parquet"):
            raise ValueError(f"ArrowReader '{name}': format must be auto, ipc, stream or parquet, got "
                             f"{file_format!r}")
        self.columns = list(columns)
        self.np_types = [np.dtype(d.as_numpy_dtype) for d in component_types]
        self.row_shapes = [tuple(s.as_list()) if s.ndims is not None else None for s in shapes] or \
            [None] * len(self.columns)
        self.batch_size = batch_size
        self.format = file_format
        self._batches: Iterator[Any] | None = None

    def _start(self, path: str) -> None:
        import pyarrow as pa

        self._path = path
        kind = _format_of(path, self.format)
        if kind == "parquet":
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(path)
            self._check_columns(parquet.schema_arrow.names)
            self._batches = parquet.iter_batches(batch_size=self.batch_size or 65536, columns=self.columns)
            return
        source = pa.memory_map(path, "r")  # the columns stay views of the mapped file
        reader = pa.ipc.open_file(source) if kind == "ipc" else pa.ipc.open_stream(source)
        self._check_columns(reader.schema.names)
        if kind == "ipc":
            self._batches = self._sliced(reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            self._batches = self._sliced(iter(reader))

    def _check_columns(self, names: list[str]) -> None:
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise ValueError(f"ArrowReader '{self.name}': {self._path} has no column {missing[0]!r} (it has "
                             f"{names})")

    def _sliced(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            if not self.batch_size or batch.num_rows <= self.batch_size:
                yield batch
                continue
            for start in range(0, batch.num_rows, self.batch_size):
                yield batch.slice(start, self.batch_size)  # zero-copy

    def _next(self) -> tuple[bytes, Any] | None:
        for batch in self._batches:
            if batch.num_rows:
                return os.fsencode(self._path), batch
        return None

    def _stop(self) -> None:
        self._batches = None

    def tensors(self, batch: Any) -> list[np.ndarray]:
        return [self._column(batch.column(batch.schema.get_field_index(name)), name, np_type, shape)
                for name, np_type, shape in zip(self.columns, self.np_types, self.row_shapes)]

    def _column(self, col: Any, name: str, np_type: np.dtype, row_shape: tuple | None) -> np.ndarray:
        import pyarrow as pa

        where = f"ArrowReader '{self.name}': column {name!r} of {self._path}"
        if col.null_count:
            raise ValueError(f"{where} has {col.null_count} nulls; a tensor cannot hold them")
        n = len(col)
        dims: list[int] = []
        arr = col
        while pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type) or \
                pa.types.is_large_list(arr.type):
            if pa.types.is_fixed_size_list(arr.type):
                size = arr.type.list_size
            else:
                lengths = arr.value_lengths().to_numpy(zero_copy_only=False)
                size = int(lengths[0]) if len(lengths) else 0
                if len(lengths) and (lengths != size).any():
                    raise ValueError(f"{where} has rows of different lengths; a tensor needs one shape")
            dims.append(size)
            arr = arr.flatten()
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            arr = arr.cast(pa.large_binary())
        values = arr.to_numpy(zero_copy_only=False)
        if values.dtype.kind == "O" or np_type.kind == "O":
            if (values.dtype.kind == "O") != (np_type.kind == "O"):
                raise ValueError(f"{where} holds {arr.type}, which cannot become {np_type}")
        elif values.dtype != np_type:
            if not np.can_cast(values.dtype, np_type, "same_kind"):
                raise ValueError(f"{where} holds {arr.type}, which cannot become {np_type}")
            values = values.astype(np_type)
        values = values.reshape((n,) + tuple(dims))
        if row_shape is not None and values.shape[1:] != row_shape:
            if None in row_shape or int(np.prod(row_shape)) != int(np.prod(values.shape[1:])):
                raise ValueError(f"{where} has rows of shape {list(values.shape[1:])}, expected {list(row_shape)}")
            values = values.reshape((n,) + row_shape)
        return values

    async def read_batch(self, queue: Any, op_name: str) -> list[np.ndarray]:
        async with self._lock:
            while True:
                if self.work is None:
                    await self._take_work(queue, op_name)
                record = self._next()
                if record is not None:
                    self.records_produced += record[1].num_rows
                    return self.tensors(record[1])
                self._finish_work()


@op("ArrowReader", outputs="reader_handle: resource", types={"component_types": TypeList(ALL_TYPES)},
    attrs={"columns": [], "shapes": [], "batch_size": 0, "format": "auto", "container": "", "shared_name": ""},
    shape=lambda b: TensorShape([]), stateful=True, differentiable=False, prepare=prepare_reader)
def arrow_reader(k):
    return reader_resource(k, lambda name, sig: ArrowState(name, sig, list(k.columns), list(k.component_types),
                                                   [as_shape(s) for s in k.shapes], int(k.batch_size), k.format))


def _read_shape(b: BuildContext) -> list[TensorShape]:
    source = b.inputs[0].op
    n = len(b.attrs["component_types"])
    if source.type == "ArrowReader" and len(source.get_attr("shapes")) == n:
        return [TensorShape([None]).concatenate(as_shape(s)) for s in source.get_attr("shapes")]
    return [TensorShape(None) for _ in range(n)]


@op("ArrowReaderRead", inputs="reader_handle: resource, queue_handle: resource",
    outputs="components: component_types", types={"component_types": TypeList(ALL_TYPES)}, shape=_read_shape,
    is_async=True, stateful=True, differentiable=False)
async def arrow_reader_read(k, reader, queue):
    return await reader.read_batch(queue, f"{k.op_type} '{k.name}'")
