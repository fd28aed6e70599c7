"""Checkpoint ops, as TF declares them: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename, and
StringJoin (a string op the sharded Saver needs to name its temporary shards; it belongs with the
string ops once asyncflow has a string family).

These are the whitepaper's Save and Restore nodes: `af.train.Saver` connects a SaveV2 to the
variables it saves and a RestoreV2 to Assigns into them, so a save runs where the variables
live (in a distributed run, each parameter server's SaveV2 writes its own shard, and
MergeV2Checkpoints joins the shards' indexes). The file format and its atomic writing live in
`asyncflow/ops/io_bundle.py`.

The kernels do blocking file I/O on the scheduler's thread. That is acceptable for now: a save or
a restore is rare and its step waits for it anyway; moving the I/O to a thread
(`asyncio.to_thread`, with the ops declared `is_async=True`) frees the loop for network traffic
when the distributed runtime needs it. `shape_and_slices` must be empty strings (whole tensors):
partitioned variables' slices are not supported yet.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.ops.io_bundle import BundleReader, merge_bundles, write_bundle
from asyncflow.ops.registry import ALL_TYPES, BuildContext, TypeList, op
from asyncflow.shapes import TensorShape, unknown_shape


# -- shape functions -------------------------------------------------------------------------------
def _check_rank(b: BuildContext, i: int, rank: int, arg: str) -> None:
    if b.shape(i).ndims is not None and b.shape(i).ndims != rank:
        kind = "a scalar" if rank == 0 else f"of rank {rank}"
        raise b.error(f"'{arg}' must be {kind}, got shape {b.shape(i)}")


def _check_names_shape(b: BuildContext, n: int) -> None:
    for i, arg in ((1, "tensor_names"), (2, "shape_and_slices")):
        _check_rank(b, i, 1, arg)
        dims = b.shape(i).as_list() if b.shape(i).ndims is not None else [None]
        if dims[0] is not None and dims[0] != n:
            raise b.error(f"'{arg}' has {dims[0]} elements, but there are {n} tensors")


def _save_shape(b: BuildContext) -> list[TensorShape]:
    _check_rank(b, 0, 0, "prefix")
    _check_names_shape(b, len(b.attrs["dtypes"]))
    return []


def _restore_shape(b: BuildContext) -> list[TensorShape]:
    _check_rank(b, 0, 0, "prefix")
    _check_names_shape(b, len(b.attrs["dtypes"]))
    return [unknown_shape() for _ in b.attrs["dtypes"]]  # known only once the file is read, as in TF


# -- kernel helpers --------------------------------------------------------------------------------
def _path(k: Any, value: Any, arg: str) -> str:
    arr = np.asarray(value, dtype=object)
    if arr.ndim != 0:
        raise ValueError(f"{k.op_type} '{k.name}': '{arg}' must be a scalar, got shape {list(arr.shape)}")
    v = arr.item()
    return os.fsdecode(v) if isinstance(v, bytes) else str(v)


def _names(k: Any, value: Any, n: int) -> list[str]:
    arr = np.asarray(value, dtype=object)
    if arr.shape != (n,):
        raise ValueError(f"{k.op_type} '{k.name}': 'tensor_names' must be a vector of {n} names (one per "
                         f"tensor), got shape {list(arr.shape)}")
    try:
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr]
    except UnicodeDecodeError:
        raise ValueError(f"{k.op_type} '{k.name}': tensor names must be UTF-8") from None


def _check_whole_tensors(k: Any, value: Any, n: int) -> None:
    arr = np.asarray(value, dtype=object)
    if arr.shape != (n,):
        raise ValueError(f"{k.op_type} '{k.name}': 'shape_and_slices' must be a vector of {n} strings, got "
                         f"shape {list(arr.shape)}")
    sliced = [v for v in arr if v not in (b"", "")]
    if sliced:
        raise errors.UnimplementedError(None, None, f"{k.op_type} '{k.name}': saving or restoring slices "
                                                    f"({sliced[0]!r}) is not supported; pass empty strings")


def _string_scalar(s: str) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = s.encode()
    return out


def _shape_text(shape: Any) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


# -- the ops ------------------------------------------------------------------------------------------
@op("SaveV2", inputs="prefix: string, tensor_names: string, shape_and_slices: string, tensors: dtypes",
    types={"dtypes": TypeList(ALL_TYPES)}, shape=_save_shape, stateful=True, differentiable=False)
def save_v2(k, prefix, tensor_names, shape_and_slices, *tensors):
    names = _names(k, tensor_names, len(tensors))
    _check_whole_tensors(k, shape_and_slices, len(tensors))
    write_bundle(_path(k, prefix, "prefix"), names, tensors)


@op("RestoreV2", inputs="prefix: string, tensor_names: string, shape_and_slices: string",
    outputs="tensors: dtypes", types={"dtypes": TypeList(ALL_TYPES)}, shape=_restore_shape, stateful=True,
    differentiable=False)
def restore_v2(k, prefix, tensor_names, shape_and_slices):
    """Reads and checks every requested tensor before giving any out, so the Assigns a restore feeds
    run only when all of them can. `_expected_shapes` (an asyncflow attr the Saver sets: the
    variables' static shapes, None entries unchecked) moves the Assigns' shape check here too."""
    n = len(k.dtypes)
    names = _names(k, tensor_names, n)
    _check_whole_tensors(k, shape_and_slices, n)
    reader = BundleReader(_path(k, prefix, "prefix"))
    expected = getattr(k, "_expected_shapes", None) or [None] * n
    for name, dtype, shape in zip(names, k.dtypes, expected):
        entry = reader.entries.get(name)
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        if entry.dtype != dtype:
            raise errors.InvalidArgumentError(None, None, f"tensor_name = {name}; expected dtype {dtype.name} does "
                                                          f"not equal original dtype {entry.dtype.name}")
        if shape is not None and not shape.is_compatible_with(entry.shape):
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; Assign requires shapes of both tensors to match. lhs shape= "
                            f"{_shape_text(shape.as_list())} rhs shape= {_shape_text(entry.shape)}")
    arrays = reader.read_many(names)
    return arrays  # a one-element list output is unwrapped by the executor


@op("MergeV2Checkpoints", inputs="checkpoint_prefixes: string, destination_prefix: string",
    attrs={"delete_old_dirs": True, "allow_missing_files": False}, stateful=True, differentiable=False)
def merge_v2_checkpoints(k, checkpoint_prefixes, destination_prefix):
    prefixes = [os.fsdecode(v) for v in np.asarray(checkpoint_prefixes, dtype=object).reshape(-1)]
    merge_bundles(prefixes, _path(k, destination_prefix, "destination_prefix"), k.delete_old_dirs,
                  k.allow_missing_files)


@op("ShardedFilename", inputs="basename: string, shard: int32, num_shards: int32", outputs="filename: string",
    shape=lambda b: TensorShape([]), differentiable=False)
def sharded_filename(k, basename, shard, num_shards):
    return _string_scalar(f"{_path(k, basename, 'basename')}-{int(shard):05d}-of-{int(num_shards):05d}")


def _string_join_shape(b: BuildContext) -> TensorShape:
    out = TensorShape(None)
    for s in b.shapes(0):
        if s.ndims == 0:
            continue
        try:
            out = out.merge_with(s)
        except ValueError:
            raise b.error(f"inputs must be scalars or of one shape, got {s} and {out}") from None
    return TensorShape([]) if all(s.ndims == 0 for s in b.shapes(0)) else out


@op("StringJoin", inputs="inputs: N * string", outputs="output: string", attrs={"separator": ""},
    shape=_string_join_shape, differentiable=False)
def string_join_op(k, *inputs):
    arrays = [np.asarray(x, dtype=object) for x in inputs]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise ValueError(f"StringJoin '{k.name}': inputs must be scalars or of one shape, got "
                         f"{sorted(list(s) for s in shapes)}")
    shape = shapes.pop() if shapes else ()
    sep = k.separator.encode() if isinstance(k.separator, str) else k.separator
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
    for j in range(out.size):
        out[j] = sep.join(c[j] for c in columns)
    return out.reshape(shape)


def string_join(inputs: list[Any], separator: str = "", name: str | None = None) -> Any:
    """`tf.strings.join`: elementwise concatenation of string tensors (scalars broadcast)."""
    return string_join_op(list(inputs), separator=separator, name=name)


__all__: list[str] = []
