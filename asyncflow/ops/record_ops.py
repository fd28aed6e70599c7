"""Parsing `tf.train.Example` records, as TF1: `parse_example`, `parse_single_example` and the feature
configurations `FixedLenFeature`, `VarLenFeature`, `FixedLenSequenceFeature`, `SparseFeature`.

One registered op does the work, `ParseExampleV2`, with TF's signature: a string scalar or vector
of serialized Examples, the sparse and dense keys as string-vector inputs, one default tensor per
dense key (empty: the feature is required; for a variable-length dense feature, the scalar that
pads), `dense_shapes` and `sparse_types` attrs. Its kernel lets protobuf decode each record
(`asyncflow.example_proto.Example`) and assembles the outputs with numpy:

- a sparse key gives `indices` int64 [N, rank+1] (batch index and position), `values` [N] and
  `dense_shape` [rank+1] = (batch size,) + (longest list,); the Python side wraps them in a
  `SparseTensor`;
- a dense key gives [batch] + shape, each example's list reshaped to `shape` (its length must be
  the shape's size; with an unknown first dimension, a multiple of the row size, the shorter
  examples padded with the default to the longest).

As TF, the parse functions sort the features by key, build the defaults under the `ParseExample`
scope (`Const`, `key_<name>` + `Reshape`, `padding_<name>`), and a wrong list type, a missing
required feature, a wrong length or an unparsable record is an InvalidArgumentError with TF's text.
`parse_single_example` is `parse_example` on a scalar (TF 2's way), under `ParseSingleExample`.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.example_proto import Example
from asyncflow.graph import name_scope
from asyncflow.ops import array
from asyncflow.ops.registry import INDEX, BuildContext, TypeList, constant, convert_to_tensor, op
from asyncflow.ops.sparse_ops import sparse_merge, sparse_reorder
from asyncflow.shapes import TensorShape, as_shape
from asyncflow.sparse_tensor import SparseTensor

_PARSE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)
_LIST_KIND = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}
_KIND_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
_TF_NAME = {dtypes.float32: "float", dtypes.int64: "int64", dtypes.string: "string"}


# -- the feature configurations (TF's namedtuples) -------------------------------------------------------------
class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """`af.io.VarLenFeature(dtype)`: a list of any length, parsed into a SparseTensor."""


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """`af.io.FixedLenFeature(shape, dtype, default_value=None)`: a list of exactly `shape`'s size,
    parsed into a dense tensor of `shape`; without a default the feature is required."""

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple("FixedLenSequenceFeature",
                                                     ["shape", "dtype", "allow_missing", "default_value"])):
    """`af.io.FixedLenSequenceFeature(shape, dtype, allow_missing=False, default_value=None)`: a list
    of rows of `shape`, parsed into [None] + shape (examples padded with `default_value`)."""

    def __new__(cls, shape: Any, dtype: Any, allow_missing: bool = False, default_value: Any = None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(collections.namedtuple("SparseFeature",
                                           ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """`af.io.SparseFeature(index_key, value_key, dtype, size, already_sorted=False)`: a SparseTensor
    whose indices come from the int64 feature(s) `index_key` and values from `value_key`."""

    def __new__(cls, index_key: Any, value_key: str, dtype: Any, size: Any, already_sorted: bool = False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


# -- the op ---------------------------------------------------------------------------------------------------
def _parse_shape(b: BuildContext) -> list[TensorShape]:
    serialized = b.shape(0)
    if serialized.ndims is not None and serialized.ndims > 1:
        raise b.error(f"Shape must be at most rank 1 but is rank {serialized.ndims} for input 'serialized'")
    rank = None if serialized.ndims is None else serialized.ndims + 1
    n_sparse = b.attrs["num_sparse"]
    shapes = [TensorShape([None, rank])] * n_sparse + [TensorShape([None])] * n_sparse + \
        [TensorShape([rank])] * n_sparse
    for shape in b.attrs["dense_shapes"]:
        shapes.append(serialized.concatenate(as_shape(shape)))
    ragged = len(b.attrs["ragged_value_types"]) + len(b.attrs["ragged_split_types"])
    return shapes + [TensorShape([None])] * ragged


def _text(k: Any, name: str | None, key: str, index: int | None, detail: str) -> errors.InvalidArgumentError:
    where = f"Key: {key}." if name is None else f"Name: {name}, Key: {key}, Index: {index}."
    return errors.InvalidArgumentError(None, None, f"ParseExampleV2 '{k.name}': {where}  {detail}")


def _feature_values(k: Any, feature: Any, dtype: dtypes.DType, key: str, name: str | None, index: int,
                    dense: bool) -> np.ndarray:
    """The list a Feature holds, as a numpy array of `dtype` (a Feature with no list: empty)."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.empty(0, dtype.as_numpy_dtype)
    if kind != _LIST_KIND[dtype]:
        got, want = _KIND_NAME[kind], _TF_NAME[dtype]
        detail = f"Data type: {got} but expected type: {want}" if dense else \
            f"Expected type: {want}, Actual type: {got}"
        raise _text(k, name, key, index, f"Data types don't match. {detail}")
    values = getattr(feature, kind).value
    if dtype == dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.array(values, dtype=dtype.as_numpy_dtype)


def _decode(k: Any, record: Any) -> Any:
    from google.protobuf.message import DecodeError  # protobuf is optional: needed only when parsing

    try:
        return Example.FromString(bytes(record)).features.feature
    except (DecodeError, TypeError):
        shown = bytes(record)[:64].decode("latin-1").encode("unicode_escape").decode()
        raise errors.InvalidArgumentError(
            None, None, f"ParseExampleV2 '{k.name}': Could not parse example input, value: '{shown}'") from None


def _dense(k: Any, found: list[np.ndarray | None], key: str, dtype: dtypes.DType, shape: TensorShape,
           default: np.ndarray, names: list[str] | None) -> np.ndarray:
    """One dense output, [batch] + shape, from each example's list (None: missing)."""
    dims = shape.as_list()
    variable = bool(dims) and dims[0] is None
    row = dims[1:] if variable else dims
    row_size = int(np.prod(row, dtype=np.int64))
    rows: list[np.ndarray] = []
    for i, values in enumerate(found):
        name = None if names is None else names[i]
        if values is None:
            if variable:
                rows.append(np.empty([0] + row, dtype.as_numpy_dtype))
                continue
            if default.size == 0:
                prefix = "" if names is None else f"Name: {name}, "
                raise errors.InvalidArgumentError(None, None, f"ParseExampleV2 '{k.name}': {prefix}Feature: {key} "
                                                              f"(data type: {_TF_NAME[dtype]}) is required but could "
                                                              f"not be found.")
            rows.append(np.asarray(default, dtype.as_numpy_dtype).reshape(dims))
            continue
        if variable:
            if row_size and values.size % row_size:
                raise errors.InvalidArgumentError(None, None, f"ParseExampleV2 '{k.name}': Error while parsing "
                                                              f"feature with key {key}: number of elements should be "
                                                              f"divisible by {row_size}, found {values.size} instead")
            rows.append(values.reshape([values.size // row_size if row_size else 0] + row))
        elif values.size != row_size:
            raise _text(k, name, key, i, f"Number of {_TF_NAME[dtype]} values != expected.  Values size: "
                                         f"{values.size} but output shape: {dims}")
        else:
            rows.append(values.reshape(dims))
    if variable:
        longest = max((r.shape[0] for r in rows), default=0)
        out = np.empty([len(rows), longest] + row, dtype.as_numpy_dtype)
        out[...] = np.asarray(default, dtype.as_numpy_dtype).reshape(())
        for i, r in enumerate(rows):
            out[i, :r.shape[0]] = r
        return out
    out = np.empty([len(rows)] + dims, dtype.as_numpy_dtype)
    for i, r in enumerate(rows):
        out[i] = r
    return out


def _sparse(found: list[np.ndarray | None], dtype: dtypes.DType, batched: bool) -> list[np.ndarray]:
    """indices, values and dense_shape of one sparse output."""
    lists = [np.empty(0, dtype.as_numpy_dtype) if v is None else v for v in found]
    lengths = [len(v) for v in lists]
    longest = max(lengths, default=0)
    positions = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths]) if lists else np.empty(0, np.int64)
    values = np.concatenate(lists) if lists else np.empty(0, dtype.as_numpy_dtype)
    if dtype == dtypes.string:
        values = values.astype(object)
    if not batched:
        return [positions.reshape(-1, 1), values, np.array([longest], np.int64)]
    batch = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    return [np.stack([batch, positions], axis=1).reshape(-1, 2), values, np.array([len(lists), longest], np.int64)]


def _keys(values: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.reshape(values, -1).tolist()]


@op("ParseExampleV2",
    inputs="serialized: string, names: string, sparse_keys: string, dense_keys: string, ragged_keys: string, "
           "dense_defaults: Tdense",
    outputs="sparse_indices: num_sparse * int64, sparse_values: sparse_types, sparse_shapes: num_sparse * int64, "
            "dense_values: Tdense, ragged_values: ragged_value_types, ragged_row_splits: ragged_split_types",
    types={"Tdense": TypeList(_PARSE_TYPES), "sparse_types": TypeList(_PARSE_TYPES),
           "ragged_value_types": TypeList(_PARSE_TYPES), "ragged_split_types": TypeList(INDEX)},
    attrs={"num_sparse": 0, "dense_shapes": []}, shape=_parse_shape, differentiable=False)
async def parse_example_v2(k, serialized, names, sparse_keys, dense_keys, ragged_keys, *dense_defaults):
    if np.size(ragged_keys):
        raise errors.UnimplementedError(None, None, f"ParseExampleV2 '{k.name}': ragged features are not supported")
    batched = np.ndim(serialized) == 1
    records = list(np.reshape(serialized, -1))
    example_names = _keys(names) if np.size(names) else None
    if batched:
        example_names = example_names or ["<unknown>"] * len(records)
    sparse, dense = _keys(sparse_keys), _keys(dense_keys)
    parsed = [_decode(k, r) for r in records]
    outputs: list[list[np.ndarray]] = [[], [], []]
    for key, dtype in zip(sparse, k.sparse_types):
        found = [None if key not in f else _feature_values(k, f[key], dtype, key, example_names and example_names[i],
                                                          i, dense=False) for i, f in enumerate(parsed)]
        for slot, value in zip(outputs, _sparse(found, dtype, batched)):
            slot.append(value)
    dense_out = []
    for key, dtype, shape, default in zip(dense, k.Tdense, k.dense_shapes, dense_defaults):
        found = [None if key not in f else _feature_values(k, f[key], dtype, key, example_names and example_names[i],
                                                          i, dense=True) for i, f in enumerate(parsed)]
        value = _dense(k, found, key, dtype, as_shape(shape), np.asarray(default), example_names if batched else None)
        dense_out.append(value if batched else value[0])
    return outputs[0] + outputs[1] + outputs[2] + dense_out


# -- the Python functions --------------------------------------------------------------------------------------
class _ParseParams:
    """The op's attrs and inputs for a dict of features (TF's _ParseOpParams), keys sorted."""

    def __init__(self, features: dict[str, Any]):
        self.sparse_keys: list[str] = []
        self.sparse_types: list[dtypes.DType] = []
        self.dense_keys: list[str] = []
        self.dense_types: list[dtypes.DType] = []
        self.dense_shapes: list[TensorShape] = []
        self.dense_defaults: dict[str, Any] = {}
        for key in sorted(features or {}):
            self._add(key, features[key])
        both = set(self.dense_keys) & set(self.sparse_keys)
        if both:
            raise ValueError(f"Dense and sparse keys must not intersect; dense_keys: {self.dense_keys}, "
                             f"sparse_keys: {self.sparse_keys}, intersection: {both}")

    def _add(self, key: str, feature: Any) -> None:
        if not isinstance(feature, (VarLenFeature, SparseFeature, FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported {type(feature).__name__} {feature} for key '{key}'")
        if not feature.dtype:
            raise ValueError(f"Missing type for feature {key}. Received feature={feature}")
        if isinstance(feature, VarLenFeature):
            self._add_sparse(key, feature.dtype)
        elif isinstance(feature, SparseFeature):
            if not feature.index_key:
                raise ValueError(f"Missing index_key for SparseFeature {feature}.")
            if not feature.value_key:
                raise ValueError(f"Missing value_key for SparseFeature {feature}.")
            index_keys = [feature.index_key] if isinstance(feature.index_key, str) else feature.index_key
            for index_key in sorted(index_keys):
                self._add_sparse(index_key, dtypes.int64)
            self._add_sparse(feature.value_key, feature.dtype)
        else:
            if feature.shape is None:
                raise ValueError(f"Missing shape for feature {key}. Received feature={feature}.")
            shape = as_shape(feature.shape)
            if isinstance(feature, FixedLenFeature):
                if shape.ndims and shape.dims[0].value is None:
                    raise ValueError(f"First dimension of shape for feature {key} unknown. Consider using "
                                     f"FixedLenSequenceFeature. Received feature={feature}.")
                if not shape.is_fully_defined():
                    raise ValueError(f"All dimensions of shape for feature {key} need to be known but received "
                                     f"{feature.shape!s}.")
            self.dense_keys.append(key)
            self.dense_shapes.append(shape)
            self.dense_types.append(dtypes.as_dtype(feature.dtype))
            if feature.default_value is not None:
                self.dense_defaults[key] = feature.default_value

    def _add_sparse(self, key: str, dtype: Any) -> None:
        dtype = dtypes.as_dtype(dtype)
        if key in self.sparse_keys:
            original = self.sparse_types[self.sparse_keys.index(key)]
            if original != dtype:
                raise ValueError(f"Conflicting type {original} vs {dtype} for feature {key}.")
            return
        self.sparse_keys.append(key)
        self.sparse_types.append(dtype)

    def defaults(self) -> list[Any]:
        """One default tensor per dense key, named as TF names them."""
        out = []
        for key, shape, dtype in zip(self.dense_keys, self.dense_shapes, self.dense_types):
            value = self.dense_defaults.get(key)
            safe = re.sub(r"[^A-Za-z0-9_.\-/]", "_", key)
            if shape.ndims and shape.dims[0].value is None:  # the scalar that pads
                if value is None:
                    out.append(convert_to_tensor("" if dtype == dtypes.string else 0, dtype=dtype))
                else:
                    out.append(array.reshape(convert_to_tensor(value, dtype=dtype, name=f"padding_{safe}"), []))
            elif value is None:
                out.append(constant([], dtype=dtype))
            elif hasattr(value, "graph"):
                out.append(value)
            else:
                out.append(array.reshape(convert_to_tensor(value, dtype=dtype, name=f"key_{safe}"), shape.as_list()))
        return out


def _check_types(params: _ParseParams) -> None:
    allowed = ", ".join(d.name for d in _PARSE_TYPES)
    for what, types in (("dense_defaults", params.dense_types), ("sparse_types", params.sparse_types)):
        bad = next((t for t in types if t not in _PARSE_TYPES), None)
        if bad is not None:
            raise TypeError(f"Value passed to parameter '{what}' has DataType {bad.name} not in list of allowed "
                            f"values: {allowed}")


def _with_sequence_dims(features: dict[str, Any]) -> dict[str, Any]:
    out = dict(features or {})
    for key, feature in out.items():
        if isinstance(feature, FixedLenSequenceFeature):
            if not feature.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
            out[key] = FixedLenSequenceFeature([None] + list(as_shape(feature.shape).as_list()), feature.dtype,
                                               feature.allow_missing, feature.default_value)
    return out


def _sparse_feature(feature: SparseFeature, parsed: dict[str, Any]) -> SparseTensor:
    values = parsed[feature.value_key]
    if isinstance(feature.index_key, str):
        return sparse_merge(parsed[feature.index_key], values, vocab_size=feature.size,
                            already_sorted=feature.already_sorted)
    ids = [parsed[key] for key in feature.index_key]  # one column per index key, as TF's sparse_merge
    with name_scope(None, "SparseMerge", [i.indices for i in ids]):
        columns = [ids[0].indices[:, :-1]] + [array.expand_dims(i.values, 1) for i in ids]
        sizes = convert_to_tensor(list(feature.size), dtype=dtypes.int64)
        merged = SparseTensor(array.concat(columns, 1), values.values,
                              array.concat([ids[0].dense_shape[:-1], sizes], 0))
        return merged if feature.already_sorted else sparse_reorder(merged)


def parse_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                  example_names: Any = None) -> dict[str, Any]:
    """`af.io.parse_example(serialized, features, name=None, example_names=None)`: a batch (string
    vector) of serialized Examples into {key: dense Tensor [batch, ...] or SparseTensor}."""
    features = _with_sequence_dims(features)
    params = _ParseParams(features)
    if not (params.dense_keys or params.sparse_keys):
        raise ValueError("Must provide at least one feature key.")
    _check_types(params)
    with name_scope(name, "ParseExample", [serialized, example_names]):
        serialized = convert_to_tensor(serialized, name="serialized", dtype=dtypes.string)
        defaults = params.defaults()
        outs = parse_example_v2(serialized, [] if example_names is None else example_names,
                                list(params.sparse_keys), list(params.dense_keys), [], defaults,
                                num_sparse=len(params.sparse_keys), sparse_types=params.sparse_types,
                                ragged_value_types=[], ragged_split_types=[], dense_shapes=params.dense_shapes,
                                name=name)
    n = len(params.sparse_keys)
    parsed: dict[str, Any] = {key: SparseTensor(outs[i], outs[n + i], outs[2 * n + i])
                              for i, key in enumerate(params.sparse_keys)}
    parsed.update(zip(params.dense_keys, outs[3 * n:3 * n + len(params.dense_keys)]))
    for key in sorted(features):
        if isinstance(features[key], SparseFeature):
            parsed[key] = _sparse_feature(features[key], parsed)
    return {key: parsed[key] for key in parsed if key in features}


def parse_single_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                         example_names: Any = None) -> dict[str, Any]:
    """`af.io.parse_single_example(serialized, features, name=None, example_names=None)`: one
    serialized Example (a string scalar) into {key: dense Tensor of the feature's shape or SparseTensor}."""
    if features is None:
        raise ValueError("Invalid argument: features cannot be None.")
    if not features:
        raise ValueError("Invalid argument: features cannot be empty.")
    with name_scope(name, "ParseSingleExample", [serialized, example_names]):
        serialized = convert_to_tensor(serialized, name="serialized", dtype=dtypes.string)
        if serialized.shape.ndims not in (None, 0):
            raise ValueError("Input serialized must be a scalar")
        return parse_example(serialized, features, name, example_names)


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "VarLenFeature", "parse_example",
           "parse_single_example"]
