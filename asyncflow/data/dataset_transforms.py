"""The transformations of `af.data.Dataset`: graph-side checks, static element specs, captured tensors.

Each builds the new dataset node with TF1's argument conversions (`batch_size` an int64 tensor
named `batch_size`, `drop_remainder` a bool tensor, ...), TF1's static output shapes (a batch
dimension known only with `drop_remainder`, padded dimensions unknown where padding is -1, ...)
and TF1's construction-time errors; the runtime counterparts are in runtime_transforms.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.data.dataset import DatasetV1, build_program
from asyncflow.data.functions import trace
from asyncflow.data.structure import DatasetSpec, ElementSpec, _flatten_up_to, _leaf_spec
from asyncflow.graph import get_seed
from asyncflow.ops.registry import constant_value, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape

AUTOTUNE = -1


def _batched(s: TensorShape, n: int | None) -> TensorShape:
    return TensorShape(None) if s.ndims is None else TensorShape([n] + s.as_list())


def map_dataset(ds: DatasetV1, fn: Callable[..., Any], num_parallel_calls: Any) -> DatasetV1:
    traced = trace(fn, ds._spec, "map")
    op = "MapDataset" if num_parallel_calls is None else "ParallelMapDataset"
    params = {"num_parallel_calls": int(num_parallel_calls) if num_parallel_calls is not None else 1}
    return DatasetV1(traced.output_spec, inputs=(ds,), fn=traced, params=params, op=op)


def filter_dataset(ds: DatasetV1, predicate: Callable[..., Any]) -> DatasetV1:
    traced = trace(predicate, ds._spec, "filter")
    out = traced.outputs
    if len(out) != 1 or out[0].dtype.base_dtype != dtypes.bool or not out[0].shape.is_compatible_with([]):
        got = ", ".join(f"{t.dtype.base_dtype.name} {t.shape}" for t in out)
        raise ValueError(f"`predicate` return type must be convertible to a scalar boolean tensor. Was {got}.")
    return DatasetV1(ds._spec, inputs=(ds,), fn=traced, op="FilterDataset")


def interleave_dataset(ds: DatasetV1, fn: Callable[..., Any], cycle_length: Any, block_length: Any,
                       num_parallel_calls: Any, op: str, deterministic: bool | None = None) -> DatasetV1:
    inner: dict = {}

    def finish(result: Any) -> tuple[Any, list]:
        if not isinstance(result, DatasetV1):
            raise TypeError(f"`map_func` must return a `Dataset` object. Got {type(result)}.")
        inner.update(build_program(result))
        return None, list(inner["captures"])

    traced = trace(fn, ds._spec, "flat_map" if op == "FlatMapDataset" else "interleave", finish)
    cycle = _int_param(cycle_length, op, "cycle_length")
    autotuned = cycle == AUTOTUNE
    if autotuned:
        cycle = os.cpu_count() or 1
    block = _int_param(block_length, op, "block_length")
    if cycle <= 0 or block <= 0:
        raise ValueError(f"{op}: cycle_length and block_length must be positive, got {cycle_length} and "
                         f"{block_length}")
    params: dict[str, Any] = {"cycle_length": cycle, "block_length": block}
    if num_parallel_calls is not None:  # checked when the iterator is made, as TF's kernel does
        params.update(num_parallel_calls=_int_param(num_parallel_calls, op, "num_parallel_calls"),
                      cycle_autotune=autotuned, deterministic=deterministic is not False)
    return DatasetV1(traced.result._spec, inputs=(ds,), fn=traced, inner=inner, params=params, op=op)


def _int_param(value: Any, op: str, what: str) -> int:
    """An integer argument given as a Python value or a constant tensor (read once, when the dataset is built)."""
    if hasattr(value, "graph"):
        folded = constant_value(value)
        if folded is None:
            raise ValueError(f"{op}: {what} must be known when the dataset is built (a Python int or a constant)")
        value = folded
    return int(value)


def _static_int(t: Any) -> int | None:
    v = constant_value(t)
    return None if v is None else int(v)


def batch_dataset(ds: DatasetV1, batch_size: Any, drop_remainder: Any) -> DatasetV1:
    size = convert_to_tensor(batch_size, dtypes.int64, name="batch_size")
    drop = convert_to_tensor(drop_remainder, dtypes.bool, name="drop_remainder")
    static_drop = constant_value(drop)
    n = _static_int(size) if static_drop is not None and bool(static_drop) else None
    _no_datasets(ds, "batch")
    spec = ds._spec.with_shapes([_batched(s, n) for s in ds._spec.shapes])
    return DatasetV1(spec, inputs=(ds,), tensors=(size, drop), op="BatchDatasetV2")


def _no_datasets(ds: DatasetV1, what: str) -> None:
    if ds._spec.has_datasets:
        raise TypeError(f"{what}: the elements hold datasets ({ds.output_classes!r}); asyncflow runs a window's "
                        f"datasets only inside flat_map or interleave")


def padded_batch_dataset(ds: DatasetV1, batch_size: Any, padded_shapes: Any, padding_values: Any,
                         drop_remainder: Any) -> DatasetV1:
    spec = ds._spec
    _no_datasets(ds, "padded_batch")
    size = convert_to_tensor(batch_size, dtypes.int64, name="batch_size")
    if padded_shapes is None:
        flat_shapes = [s if s.ndims is not None else None for s in spec.shapes]
        if any(s is None for s in flat_shapes):
            raise ValueError("You must provide `padded_shapes` argument because component has unknown rank.")
    else:
        flat_shapes = _flat_like(spec, padded_shapes, "padded_shapes")
    shape_tensors, static = [], []
    for i, (p, elem) in enumerate(zip(flat_shapes, spec.shapes)):
        t = _padded_shape_tensor(p, i)
        value = constant_value(t)
        if value is None:
            static.append(TensorShape([None] * int(t.shape[0])) if t.shape.ndims == 1 and t.shape[0].value
                          is not None else TensorShape(None))
        else:
            static.append(TensorShape([None if d < 0 else int(d) for d in value.tolist()]))
        if not static[-1].is_compatible_with(elem) and not (elem.ndims == static[-1].ndims and all(
                d is None or e is None or e <= d for d, e in zip(static[-1].as_list(), elem.as_list()))):
            raise ValueError(f"The padded shape {static[-1]} is not compatible with the corresponding input component "
                             f"shape {elem}.")
        shape_tensors.append(t)
    if padding_values is None:
        flat_values = [b"" if t.is_string else 0 for t in spec.types]
    else:
        flat_values = _flat_like(spec, padding_values, "padding_values")
    value_tensors = []
    for i, (v, t) in enumerate(zip(flat_values, spec.types)):
        vt = convert_to_tensor(v, t, name=f"padding_value_{i}")
        if vt.shape.ndims not in (0, None):
            raise ValueError(f"padding_values: component {i} must be a scalar, got shape {vt.shape}")
        value_tensors.append(vt)
    drop = convert_to_tensor(drop_remainder, dtypes.bool, name="drop_remainder")
    static_drop = constant_value(drop)
    n = _static_int(size) if static_drop is not None and bool(static_drop) else None
    out = spec.with_shapes([_batched(s, n) for s in static])
    tensors = (size, drop, *shape_tensors, *value_tensors)
    k = len(shape_tensors)
    params = {"padded_shapes": list(range(2, 2 + k)), "padding_values": list(range(2 + k, 2 + 2 * k))}
    return _Padded(out, inputs=(ds,), tensors=tensors, params=params, op="PaddedBatchDatasetV2")


class _Padded(DatasetV1):
    """Its node refers to its captures by position: renumbered into the program's capture list."""

    def _node(self, b: Any) -> dict:
        node = super()._node(b)
        caps = node["captures"]
        node["padded_shapes"] = [caps[i] for i in self._params["padded_shapes"]]
        node["padding_values"] = [caps[i] for i in self._params["padding_values"]]
        return node


def _padded_shape_tensor(p: Any, i: int) -> Any:
    if isinstance(p, TensorShape) or p is None:
        dims = as_shape(p).as_list() if p is not None and as_shape(p).ndims is not None else None
        if dims is None:
            raise ValueError(f"padded_shapes: component {i} has unknown rank")
        p = [-1 if d is None else d for d in dims]
    elif isinstance(p, (list, tuple)):
        p = [-1 if d is None else (d.value if hasattr(d, "value") and d.value is not None else
                                   (-1 if hasattr(d, "value") else d)) for d in p]
    return convert_to_tensor(np.asarray(p, np.int64) if isinstance(p, list) else p, dtypes.int64,
                             name=f"padded_shape_{i}")


def _flat_like(spec: ElementSpec, value: Any, what: str) -> list[Any]:
    try:
        return _flatten_up_to(spec.structure, value)
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{what} {value!r} does not match the structure of the dataset's elements "
                         f"{spec.output_types}") from None


def unbatch_dataset(ds: DatasetV1) -> DatasetV1:
    _no_datasets(ds, "unbatch")
    shapes = []
    for s in ds._spec.shapes:
        if s.ndims == 0:
            raise ValueError("Cannot unbatch an input with scalar components.")
        shapes.append(TensorShape(None) if s.ndims is None else TensorShape(s.as_list()[1:]))
    return DatasetV1(ds._spec.with_shapes(shapes), inputs=(ds,), op="UnbatchDataset")


def shuffle_dataset(ds: DatasetV1, buffer_size: Any, seed: Any, reshuffle: Any) -> DatasetV1:
    size = convert_to_tensor(buffer_size, dtypes.int64, name="buffer_size")
    seed_a, seed_b = get_seed(seed)
    params = {"seed": seed_a, "seed2": seed_b,
              "reshuffle_each_iteration": True if reshuffle is None else bool(reshuffle)}
    return DatasetV1(ds._spec, inputs=(ds,), tensors=(size,), params=params, op="ShuffleDataset")


def count_dataset(ds: DatasetV1, op: str, count: Any, name: str) -> DatasetV1:
    t = convert_to_tensor(count, dtypes.int64, name=name)
    return DatasetV1(ds._spec, inputs=(ds,), tensors=(t,), op=op)


def cache_dataset(ds: DatasetV1, filename: Any) -> DatasetV1:
    t = convert_to_tensor(filename, dtypes.string, name="filename")
    return DatasetV1(ds._spec, inputs=(ds,), tensors=(t,), op="CacheDataset")


def concatenate_dataset(a: DatasetV1, b: DatasetV1) -> DatasetV1:
    if not isinstance(b, DatasetV1):
        raise TypeError(f"concatenate: expected a Dataset, got {type(b).__name__}")
    if not a._spec.same_kinds(b._spec):
        raise TypeError(f"Two datasets to concatenate have different types {a.output_types} and {b.output_types}")
    return DatasetV1(a._spec.most_specific_compatible(b._spec), inputs=(a, b), op="ConcatenateDataset")


def window_dataset(ds: DatasetV1, size: Any, shift: Any, stride: Any, drop_remainder: Any) -> DatasetV1:
    """Elements are windows: each leaf a dataset of `size` (fewer at the end) consecutive leaves, `stride`
    apart, windows starting `shift` (default `size`) elements apart. Sizes are checked at run time, as TF's."""
    _no_datasets(ds, "window")
    size_t = convert_to_tensor(size, dtypes.int64, name="size")
    shift_t = size_t if shift is None else convert_to_tensor(shift, dtypes.int64, name="shift")
    stride_t = convert_to_tensor(stride, dtypes.int64, name="stride")
    drop = convert_to_tensor(drop_remainder, dtypes.bool, name="drop_remainder")
    spec = ds._spec
    kinds = [DatasetSpec(_leaf_spec(t, s, k)) for t, s, k in zip(spec.types, spec.shapes, spec.kinds)]
    out = ElementSpec(spec.structure, spec.types, spec.shapes, kinds)
    return DatasetV1(out, inputs=(ds,), tensors=(size_t, shift_t, stride_t, drop), op="WindowDataset")
