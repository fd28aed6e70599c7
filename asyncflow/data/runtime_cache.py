"""The file behind `Dataset.cache(filename)`: an Arrow IPC stream, never pickle.

`<filename>.arrow` is an Arrow IPC stream whose schema has one binary column per flat component
(`component_0`, ...; the schema metadata `asyncflow.cache` is `1`); each record batch is one block
of rows and holds, in each column, a single value: that component's rows as one tensor encoded by
`asyncflow.serialization.encode_tensor` (an Arrow IPC stream of the flattened values with the dtype
and shape in its metadata). The file is written once the first pass over the input has finished,
to a temporary name and renamed, so a partial pass leaves nothing; a later iterator (in this or
another process) whose cache file exists reads it instead of its input, as TF's file cache does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from asyncflow import errors
from asyncflow.data.runtime import Block
from asyncflow.serialization import decode_tensor, encode_tensor

SUFFIX = ".arrow"
_META = {b"asyncflow.cache": b"1"}


def path_of(filename: str) -> str:
    return filename + SUFFIX


def exists(filename: str) -> bool:
    return os.path.exists(path_of(filename))


def write(filename: str, blocks: Sequence[Block], types: Sequence[Any]) -> None:
    path = path_of(filename)
    schema = pa.schema([pa.field(f"component_{i}", pa.large_binary(), nullable=False) for i in range(len(types))],
                       metadata=_META)
    tmp = f"{path}.tmp{os.getpid()}"
    with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for b in blocks:
            arrays = [pa.array([encode_tensor(c).to_pybytes()], type=pa.large_binary()) for c in b.cols]
            writer.write_batch(pa.record_batch(arrays, schema=schema))
    os.replace(tmp, path)


def read(filename: str, types: Sequence[Any]) -> list[Block]:
    path = path_of(filename)
    try:
        with pa.memory_map(path) as source:
            reader = pa.ipc.open_stream(source)
            if (reader.schema.metadata or {}).get(b"asyncflow.cache") != b"1" or \
                    len(reader.schema) != len(types):
                raise errors.DataLossError(None, None, f"{path}: not a cache file of this dataset "
                                                       f"({len(reader.schema)} components, expected {len(types)})")
            blocks = []
            for batch in reader:
                cols = [decode_tensor(batch.column(i)[0].as_py(), f"{path} component {i}")
                        for i in range(batch.num_columns)]
                blocks.append(Block(cols, cols[0].shape[0] if cols else 0))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise errors.DataLossError(None, None, f"{path}: unreadable cache file ({e})") from None
    for b in blocks:
        for c, t in zip(b.cols, types):
            if c.dtype != t.as_numpy_dtype:
                raise errors.DataLossError(None, None, f"{path}: cached component of dtype {c.dtype}, the dataset "
                                                       f"has {t.name}")
    return blocks
