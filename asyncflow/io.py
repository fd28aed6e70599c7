"""`af.io`: the `tf.compat.v1.io` names asyncflow has (`decode_csv`, `decode_raw`, the queue classes), and,
beyond TF, `ArrowReader`: record batches of Arrow IPC and Parquet files as tensors.

    files = af.train.string_input_producer(["a.arrow", "b.parquet"], num_epochs=1, shuffle=False)
    reader = af.io.ArrowReader(["image", "label"], [af.float32, af.int64], shapes=[[28, 28], []],
                               batch_size=256)
    batch = reader.read(files)          # {"image": float32 [n, 28, 28], "label": int64 [n]}, n <= 256

Each `read` gives the next record batch of the current file (a file's own batches, or slices of
`batch_size` rows), taking the next file name from the queue when a file is done; a closed,
drained filename queue ends reading with OutOfRangeError, as TF's readers. The reader is a
resource in the session's container: it resumes where the last step stopped, and
`num_records_produced()` (rows), `num_work_units_completed()` (files) and `reset()` work as for
TF's readers. Files: the Arrow IPC file format (`.arrow`/`.feather` v2, memory-mapped, so
primitive columns are zero-copy views of the file), the IPC stream format, and Parquet (decoded
by row group). `format="auto"` tells them apart by their magic bytes.

Columns: numeric and bool columns become arrays of the requested dtype (a cast when it differs,
e.g. an Arrow float64 column read as float32); string and binary columns become string tensors;
a fixed-size list column (or a list column whose rows all have one length) adds a dimension, and
`shapes` may reshape each row (a 784-element list as [28, 28]). Nulls are an InvalidArgumentError.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes as _dtypes
from asyncflow.gfile import io_gfile as gfile
from asyncflow.ops.data_flow import PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue
from asyncflow.ops.parsing import decode_csv, decode_raw
from asyncflow.ops.readers import ReaderBase, queue_ref_of
from asyncflow.ops.readers_arrow import arrow_reader, arrow_reader_read
from asyncflow.ops.record_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from asyncflow.ops.record_ops_tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from asyncflow.shapes import as_shape


class ArrowReader(ReaderBase):
    """`af.io.ArrowReader(columns, dtypes, shapes=None, batch_size=None, format="auto", shared_name=None,
    name=None)`: reads the named `columns` of Arrow IPC / Parquet files, one record batch per `read`.

    `dtypes` gives each column's tensor dtype; `shapes` each row's shape (None: as the file has
    it, one extra dimension per fixed-size list level); `batch_size` caps the rows per read."""

    def __init__(self, columns: Any, dtypes: Any, shapes: Any = None, batch_size: int | None = None,
                 format: str = "auto", shared_name: str | None = None, name: str | None = None):  # noqa: A002
        columns = [columns] if isinstance(columns, str) else list(columns)
        types = [_dtypes.as_dtype(d) for d in (dtypes if isinstance(dtypes, (list, tuple)) else [dtypes])]
        if len(types) != len(columns):
            raise ValueError(f"ArrowReader: {len(columns)} columns but {len(types)} dtypes")
        shape_list = [] if shapes is None else [as_shape(s) for s in shapes]
        if shape_list and len(shape_list) != len(columns):
            raise ValueError(f"ArrowReader: {len(columns)} columns but {len(shape_list)} shapes")
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"ArrowReader: batch_size must be positive, got {batch_size}")
        self._columns = columns
        self._types = types
        ref = arrow_reader(columns=columns, component_types=types, shapes=shape_list, batch_size=int(batch_size or 0),
                           format=format, shared_name=shared_name or "", name=name or "ArrowReader")
        super().__init__(ref)

    columns = property(lambda self: list(self._columns))

    def read(self, queue: Any, name: str | None = None) -> dict[str, Any]:
        """The next record batch: {column name: tensor [rows, *row shape]}."""
        tensors = arrow_reader_read(self._reader_ref, queue_ref_of(queue), component_types=self._types, name=name)
        return dict(zip(self._columns, tensors))

    def read_up_to(self, queue: Any, num_records: Any, name: str | None = None) -> Any:
        raise NotImplementedError("ArrowReader reads whole record batches: use read(), and batch_size to cap them")


__all__ = ["ArrowReader", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue", "decode_csv",
           "decode_raw", "gfile",
           # TFRecord files and Example parsing (asyncflow/ops/record_ops*.py)
           "FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "TFRecordCompressionType", "TFRecordOptions",
           "TFRecordWriter", "VarLenFeature", "parse_example", "parse_single_example", "tf_record_iterator"]
