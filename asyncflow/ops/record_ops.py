"""Parsing `tf.train.Example` records, as TF1: `parse_example`, `parse_single_example` and the feature
configurations `FixedLenFeature`, `VarLenFeature`, `FixedLenSequenceFeature`, `SparseFeature`.

One registered op does the work, `ParseExampleV2`, with TF's signature: a string scalar or vector
of serialized Examples, the sparse and dense keys as string-vector inputs, one default tensor per
dense key (empty: the feature is required; for a variable-length dense feature, the scalar that
pads), `dense_shapes` and `sparse_types` attrs. Its kernel lets protobuf decode each record once
(`asyncflow.example_proto.Example`), then walks each feature once over the batch: one map lookup
per example, the values gathered from protobuf's containers by C-level iteration into one numpy
conversion per feature per batch, the lengths checked as an array (a missing, empty or mistyped
feature takes the careful path, with TF's checks and defaults); one record (parse_single_example)
is plain Python per feature. The key lists are read once per node. The outputs:

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
import itertools
import operator
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
_NO_VALUES: tuple = ()


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


class _Key:
    """What parsing one feature key needs, worked out once per node and key list (see `_plan`)."""

    __slots__ = ("key", "dtype", "np_dtype", "kind", "values_of", "dims", "variable", "row", "row_size")

    def __init__(self, key: str, dtype: dtypes.DType, shape: Any = None):
        self.key = key
        self.dtype = dtype
        self.np_dtype = np.dtype(dtype.as_numpy_dtype)
        self.kind = _LIST_KIND[dtype]
        self.values_of = operator.attrgetter(f"{self.kind}.value")  # a Feature's list of this type (or empty)
        if shape is not None:
            self.dims = as_shape(shape).as_list()
            self.variable = bool(self.dims) and self.dims[0] is None
            self.row = self.dims[1:] if self.variable else self.dims
            self.row_size = int(np.prod(self.row, dtype=np.int64))


def _prepare(k: Any) -> None:
    k.plans = {}
    k.last_plan = None


def _plan(k: Any, sparse_keys: Any, dense_keys: Any) -> tuple[list[_Key], list[_Key]]:
    """The `_Key`s of this node for these key tensors (usually constants: built on the first step, then reused)."""
    last = k.__dict__.get("last_plan")
    if last is not None and last[0] is sparse_keys and last[1] is dense_keys:
        return last[2]  # the same constant arrays as on the last step
    raw = (tuple(np.reshape(sparse_keys, -1).tolist()), tuple(np.reshape(dense_keys, -1).tolist()))
    plans = k.__dict__.setdefault("plans", {})
    plan = plans.get(raw)
    if plan is None:
        if len(plans) >= 8:
            plans.clear()
        sparse = [_Key(key, dtype) for key, dtype in zip(_keys(raw[0]), k.sparse_types)]
        dense = [_Key(key, dtype, shape) for key, dtype, shape in zip(_keys(raw[1]), k.Tdense, k.dense_shapes)]
        plan = plans[raw] = (sparse, dense)
    k.last_plan = (sparse_keys, dense_keys, plan)  # holding the arrays keeps their identities unique
    return plan


def _decode(k: Any, records: list[Any]) -> list[Any]:
    """Each record's feature map, decoded once by protobuf."""
    from google.protobuf.message import DecodeError  # protobuf is optional: needed only when parsing

    parse = Example.FromString
    try:
        return [parse(r).features.feature for r in records]
    except (DecodeError, TypeError):
        pass
    out = []
    for r in records:  # again, one by one, to name the record that failed
        try:
            out.append(parse(r if isinstance(r, bytes) else bytes(r)).features.feature)
        except (DecodeError, TypeError):
            raw = r if isinstance(r, bytes) else str(r).encode()
            shown = raw[:64].decode("latin-1").encode("unicode_escape").decode()
            raise errors.InvalidArgumentError(
                None, None, f"ParseExampleV2 '{k.name}': Could not parse example input, value: '{shown}'") from None
    return out


def _gather(maps: list[Any], key: _Key) -> tuple[list[Any], list[Any], np.ndarray]:
    """Each example's Feature for `key` (None: missing), its list of `key`'s type (empty when missing or of
    another type) and the lists' lengths: one dict lookup and one attribute walk per example, no values."""
    name, values_of = key.key, key.values_of
    feats = [m.get(name) for m in maps]
    lists = [_NO_VALUES if f is None else values_of(f) for f in feats]
    return feats, lists, np.fromiter(map(len, lists), np.int64, len(lists))


def _values(lists: list[Any], total: int, key: _Key) -> np.ndarray:
    """All the lists' values, in order, as one array: one conversion per feature per batch."""
    flat = itertools.chain.from_iterable(lists)
    if key.np_dtype.kind == "O":
        out = np.empty(total, dtype=object)
        if total:
            out[:] = list(flat)
        return out
    return np.fromiter(flat, key.np_dtype, total)


def _check_kinds(k: Any, key: _Key, feats: list[Any], empty: np.ndarray, names: list[str] | None,
                 dense: bool) -> None:
    """A Feature whose list of `key`'s type is empty may hold a list of another type: TF's error for the first."""
    for i in empty.tolist():
        f = feats[i]
        kind = None if f is None else f.WhichOneof("kind")
        if kind is not None and kind != key.kind:
            got, want = _KIND_NAME[kind], _TF_NAME[key.dtype]
            detail = f"Data type: {got} but expected type: {want}" if dense else \
                f"Expected type: {want}, Actual type: {got}"
            raise _text(k, names and names[i], key.key, i, f"Data types don't match. {detail}")


def _sparse(k: Any, maps: list[Any], key: _Key, names: list[str] | None, batched: bool) -> list[np.ndarray]:
    """indices, values and dense_shape of one sparse output."""
    feats, lists, lens = _gather(maps, key)
    n = len(lists)
    if not lens.all():
        _check_kinds(k, key, feats, np.flatnonzero(lens == 0), names, dense=False)
    total = int(lens.sum())
    values = _values(lists, total, key)
    longest = int(lens.max()) if n else 0
    if not batched:
        return [np.arange(total, dtype=np.int64).reshape(-1, 1), values, np.array([longest], np.int64)]
    starts = np.cumsum(lens) - lens
    positions = np.arange(total, dtype=np.int64) - np.repeat(starts, lens)
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    return [np.stack([rows, positions], axis=1), values, np.array([n, longest], np.int64)]


def _dense(k: Any, maps: list[Any], key: _Key, default: np.ndarray, names: list[str] | None,
           required_names: list[str] | None) -> np.ndarray:
    """One dense output, [batch] + shape (module docstring); `required_names` are the names a missing
    required feature's error gives (batched input only)."""
    feats, lists, lens = _gather(maps, key)
    if key.variable:
        return _dense_variable(k, key, default, feats, lists, lens, names)
    n, row_size = len(lists), key.row_size
    ok = lens == row_size
    if row_size == 0 or not ok.all():  # missing, or of another type or length: TF's checks, in TF's order
        bad = np.arange(n) if row_size == 0 else np.flatnonzero(~ok)
        _check_kinds(k, key, feats, bad, names, dense=True)
        for i in bad.tolist():
            if feats[i] is None:
                if default.size == 0:
                    prefix = "" if required_names is None else f"Name: {required_names[i]}, "
                    raise errors.InvalidArgumentError(None, None, f"ParseExampleV2 '{k.name}': {prefix}Feature: "
                                                                  f"{key.key} (data type: {_TF_NAME[key.dtype]}) is "
                                                                  f"required but could not be found.")
                ok[i] = False
            elif lens[i] != row_size:
                raise _text(k, names and names[i], key.key, i, f"Number of {_TF_NAME[key.dtype]} values != "
                                                                f"expected.  Values size: {lens[i]} but output "
                                                                f"shape: {key.dims}")
            else:
                ok[i] = True
    values = _values(lists, row_size * int(ok.sum()), key)
    if ok.all():
        return values.reshape([n] + key.dims)
    out = np.empty([n] + key.dims, key.np_dtype)
    out[ok] = values.reshape([-1] + key.dims)
    out[~ok] = np.asarray(default, key.np_dtype).reshape(key.dims)  # the missing ones take the default
    return out


def _dense_variable(k: Any, key: _Key, default: np.ndarray, feats: list[Any], lists: list[Any], lens: np.ndarray,
                    names: list[str] | None) -> np.ndarray:
    """A dense output with an unknown first dimension: each example's rows, padded with `default` to the longest."""
    if not lens.all():
        _check_kinds(k, key, feats, np.flatnonzero(lens == 0), names, dense=True)
    row_size = key.row_size
    if row_size:
        uneven = np.flatnonzero(lens % row_size)
        if uneven.size:
            raise errors.InvalidArgumentError(None, None, f"ParseExampleV2 '{k.name}': Error while parsing feature "
                                                          f"with key {key.key}: number of elements should be "
                                                          f"divisible by {row_size}, found {lens[uneven[0]]} "
                                                          f"instead")
        counts = lens // row_size
    else:
        counts = np.zeros_like(lens)
    longest = int(counts.max()) if counts.size else 0
    out = np.empty([len(lists), longest] + key.row, key.np_dtype)
    out[...] = np.asarray(default, key.np_dtype).reshape(())
    values = _values(lists, int(lens.sum()) if row_size else 0, key)
    if values.size:
        out[np.arange(longest) < counts[:, None]] = values.reshape([-1] + key.row)
    return out


def _keys(values: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.reshape(values, -1).tolist()]


@op("ParseExampleV2",
    inputs="serialized: string, names: string, sparse_keys: string, dense_keys: string, ragged_keys: string, "
           "dense_defaults: Tdense",
    outputs="sparse_indices: num_sparse * int64, sparse_values: sparse_types, sparse_shapes: num_sparse * int64, "
            "dense_values: Tdense, ragged_values: ragged_value_types, ragged_row_splits: ragged_split_types",
    types={"Tdense": TypeList(_PARSE_TYPES), "sparse_types": TypeList(_PARSE_TYPES),
           "ragged_value_types": TypeList(_PARSE_TYPES), "ragged_split_types": TypeList(INDEX)},
    attrs={"num_sparse": 0, "dense_shapes": []}, shape=_parse_shape, differentiable=False, prepare=_prepare)
def parse_example_v2(k, serialized, names, sparse_keys, dense_keys, ragged_keys, *dense_defaults):
    # Each record is decoded once; then each feature is walked once over the batch, its values gathered
    # from protobuf's containers by C-level iteration and converted to numpy in one call (see _gather).
    serialized, names, ragged_keys = np.asarray(serialized), np.asarray(names), np.asarray(ragged_keys)
    if ragged_keys.size:
        raise errors.UnimplementedError(None, None, f"ParseExampleV2 '{k.name}': ragged features are not supported")
    batched = serialized.ndim == 1
    records = serialized.reshape(-1).tolist()
    example_names = _keys(names) if names.size else None
    if batched:
        example_names = example_names or ["<unknown>"] * len(records)
    sparse, dense = _plan(k, sparse_keys, dense_keys)
    maps = _decode(k, records)
    if not batched:
        return _single(k, maps, sparse, dense, dense_defaults, example_names)
    outputs: list[list[np.ndarray]] = [[], [], []]
    for key in sparse:
        for slot, value in zip(outputs, _sparse(k, maps, key, example_names, batched)):
            slot.append(value)
    dense_out = []
    for key, default in zip(dense, dense_defaults):
        value = _dense(k, maps, key, np.asarray(default), example_names, example_names if batched else None)
        dense_out.append(value)
    return outputs[0] + outputs[1] + outputs[2] + dense_out


def _single(k: Any, maps: list[Any], sparse: list[_Key], dense: list[_Key], defaults: tuple,
            names: list[str] | None) -> list[np.ndarray]:
    """parse_single_example's case, one record: plain Python on each feature's list, no batch arithmetic; a
    feature that is missing, empty or of another length goes the batch way (its checks, defaults, errors)."""
    (m,) = maps
    indices, values, shapes = [], [], []
    for key in sparse:
        f = m.get(key.key)
        listed = key.values_of(f) if f is not None else _NO_VALUES
        n = len(listed)
        if not n:
            index, value, shape = _sparse(k, maps, key, names, False)
            indices.append(index)
            values.append(value)
            shapes.append(shape)
            continue
        indices.append(np.arange(n, dtype=np.int64).reshape(n, 1))
        values.append(_values([listed], n, key))
        shapes.append(np.array([n], np.int64))
    dense_out = []
    for key, default in zip(dense, defaults):
        f = m.get(key.key)
        listed = key.values_of(f) if f is not None else _NO_VALUES
        if key.variable or not key.row_size or len(listed) != key.row_size:
            dense_out.append(_dense(k, maps, key, np.asarray(default), names, None)[0])
        elif not key.dims:  # the common scalar feature
            dense_out.append(np.array(listed[0], dtype=key.np_dtype))
        else:
            dense_out.append(_values([listed], key.row_size, key).reshape(key.dims))
    return indices + values + shapes + dense_out


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
