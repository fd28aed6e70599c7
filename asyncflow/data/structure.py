"""Nested element structures of `af.data`: flattening, packing, and the per-component specs.

An element is a nesting of tuples, namedtuples and dicts (keys in sorted order, as TF's `nest`)
whose leaves are tensors. Lists are not structure: as in `tf.data`, a list is a value that becomes
one tensor (`from_tensor_slices([1, 2, 3])` has scalar elements), except that a `map` function
returning a list is read as a tuple, as TF1 does.

`ElementSpec` is what a dataset knows of its elements statically: the structure, and one dtype, one
static shape and one *kind* per leaf (flat, in `flatten` order). A leaf is a Tensor, a SparseTensor
(its shape the dense shape) or, in the elements of `window`, a dataset (kind: its `DatasetSpec`).
`output_types`, `output_shapes`, `output_classes` and `element_spec` are its packed views.

Pipelines carry *components*, plain dense tensors: a Tensor leaf is one, a SparseTensor leaf three
(indices int64 [N, rank], values [N], dense_shape int64 [rank]), and a window's dataset leaf is
its rows stacked, as `batch` would stack them (a dense [k, ...] tensor, or a batched sparse
triple). `component_types`/`component_shapes` are what iterator ops and the runtime see;
`sparse_starts` says where sparse triples begin among them; `pack_components` rebuilds the
user's structure (SparseTensors, window datasets) from component tensors, and
`flatten_components` takes one apart. This module sits on the graph model only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.shapes import TensorShape, as_shape
from asyncflow.sparse_tensor import SparseTensor, SparseTensorValue


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_nested(x: Any) -> bool:
    # a SparseTensorValue is a namedtuple, but one value (TF's nest treats it as a leaf too)
    return isinstance(x, (tuple, dict)) and not isinstance(x, SparseTensorValue)


def flatten(structure: Any) -> list[Any]:
    """The leaves of `structure` in TF's order (dict values by sorted key)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if is_nested(structure):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_as(structure: Any, flat: Sequence[Any]) -> Any:
    """`flat` (leaves in `flatten` order) packed into the shape of `structure`."""
    it = iter(flat)
    out = _pack(structure, it)
    if next(it, _END) is not _END:
        raise ValueError(f"pack_as: more values than the structure {structure!r} has leaves")
    return out


_END = object()


def _pack(structure: Any, it: Any) -> Any:
    if isinstance(structure, dict):
        values = {k: _pack(structure[k], it) for k in sorted(structure)}
        return type(structure)((k, values[k]) for k in structure) if type(structure) is not dict \
            else {k: values[k] for k in structure}
    if _is_namedtuple(structure) and is_nested(structure):
        return type(structure)(*(_pack(s, it) for s in structure))
    if is_nested(structure):
        return tuple(_pack(s, it) for s in structure)
    value = next(it, _END)
    if value is _END:
        raise ValueError("pack_as: fewer values than the structure has leaves")
    return value


def map_structure(fn: Callable[..., Any], structure: Any) -> Any:
    return pack_as(structure, [fn(x) for x in flatten(structure)])


def same_structure(a: Any, b: Any) -> bool:
    """Whether `a` and `b` nest the same way (leaf values are not compared)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and \
            all(same_structure(a[k], b[k]) for k in a)
    if is_nested(a) or is_nested(b):
        return is_nested(a) and is_nested(b) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b))
    return True


def structure_repr(structure: Any) -> str:
    return repr(map_structure(lambda _: "<leaf>", structure)) if is_nested(structure) else "<leaf>"


@dataclass(frozen=True)
class TensorSpec:
    """One component of an element: its dtype and static shape (`tf.TensorSpec`)."""

    shape: TensorShape
    dtype: dtypes.DType
    name: str | None = None

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"

    def is_compatible_with(self, other: Any) -> bool:
        return self.dtype == other.dtype and self.shape.is_compatible_with(other.shape)


@dataclass(frozen=True)
class SparseTensorSpec:
    """A SparseTensor leaf of an element: its values' dtype and its dense static shape (`tf.SparseTensorSpec`)."""

    shape: TensorShape
    dtype: dtypes.DType

    def __repr__(self) -> str:
        return f"SparseTensorSpec({self.shape!r}, {self.dtype!r})"

    @property
    def value_type(self) -> type:
        return SparseTensor

    def is_compatible_with(self, other: Any) -> bool:
        return isinstance(other, SparseTensorSpec) and self.dtype == other.dtype and \
            self.shape.is_compatible_with(other.shape)


@dataclass(frozen=True, eq=False)
class DatasetSpec:
    """A dataset leaf (an element of `window`): the spec of its elements (`tf.data.DatasetSpec`)."""

    element_spec: Any  # TensorSpec | SparseTensorSpec
    dataset_shape: TensorShape = TensorShape([])

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r}, {self.dataset_shape!r})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DatasetSpec) and type(self.element_spec) is type(other.element_spec) and \
            self.element_spec.dtype == other.element_spec.dtype and \
            _shape_key(self.element_spec.shape) == _shape_key(other.element_spec.shape)

    __hash__ = object.__hash__

    @property
    def value_type(self) -> type:
        from asyncflow.data.dataset import DatasetV1  # the dataset module sits above this one

        return DatasetV1


def _shape_key(s: TensorShape) -> tuple | None:
    return None if s.ndims is None else tuple(s.as_list())


def _leaf_spec(dtype: dtypes.DType, shape: TensorShape, kind: Any) -> Any:
    if kind is SparseTensor:
        return SparseTensorSpec(shape, dtype)
    return kind if isinstance(kind, DatasetSpec) else TensorSpec(shape, dtype)


def _batched_shape(shape: TensorShape, n: int | None = None) -> TensorShape:
    return TensorShape(None) if shape.ndims is None else TensorShape([n] + shape.as_list())


def leaf_components(dtype: dtypes.DType, shape: TensorShape, kind: Any) -> list[tuple[dtypes.DType, TensorShape]]:
    """The (dtype, static shape) of each component that carries one leaf (module docstring)."""
    if kind is SparseTensor:
        rank = shape.ndims
        return [(dtypes.int64, TensorShape([None, rank])), (dtype, TensorShape([None])),
                (dtypes.int64, TensorShape([rank]))]
    if isinstance(kind, DatasetSpec):  # a window: its rows stacked, as batch stacks them
        inner = kind.element_spec
        return leaf_components(inner.dtype, _batched_shape(inner.shape),
                               SparseTensor if isinstance(inner, SparseTensorSpec) else Tensor)
    return [(dtype, shape)]


def _kind_of_class(c: Any) -> Any:
    if c is SparseTensor or c is SparseTensorValue or isinstance(c, SparseTensorSpec) or \
            (isinstance(c, type) and issubclass(c, SparseTensor)):
        return SparseTensor
    return c if isinstance(c, DatasetSpec) else Tensor


def _restore_dense_shape(dense_shape: Tensor, shape: TensorShape) -> Tensor:
    """The dense_shape of a rebuilt SparseTensor with the spec's known sizes as constants, as TF does, so
    shape inference downstream (sparse_tensor_to_dense, ...) sees them."""
    from asyncflow.ops.array import stack  # ops sit above the graph model this module needs
    from asyncflow.ops.array_manip import unstack
    from asyncflow.ops.registry import constant

    if shape.ndims is None or all(d is None for d in shape.as_list()):
        return dense_shape
    if shape.is_fully_defined():
        return constant(np.array(shape.as_list(), np.int64), dtype=dtypes.int64, name="shape")
    pieces = unstack(dense_shape, num=shape.ndims)
    return stack([p if d is None else constant(np.int64(d), dtype=dtypes.int64) for p, d in
                  zip(pieces, shape.as_list())])


class HasElementSpec:
    """TF1's element properties (`output_types`, `output_shapes`, `output_classes`, `element_spec`) of a
    dataset or an iterator: both hold their ElementSpec as `self._spec`."""

    _spec: ElementSpec

    element_spec = property(lambda self: self._spec.element_spec)
    output_types = property(lambda self: self._spec.output_types)
    output_shapes = property(lambda self: self._spec.output_shapes)
    output_classes = property(lambda self: self._spec.output_classes)


class ElementSpec:
    """What a dataset's elements look like: a structure, and a dtype, static shape and kind per leaf."""

    def __init__(self, structure: Any, types: Sequence[dtypes.DType], shapes: Sequence[TensorShape],
                 kinds: Sequence[Any] | None = None):
        self.structure = structure
        self.types = [dtypes.as_dtype(t).base_dtype for t in types]
        self.shapes = [as_shape(s) for s in shapes]
        self.kinds = list(kinds) if kinds is not None else [Tensor] * len(self.types)
        if len(self.types) != len(flatten(structure)) or len(self.shapes) != len(self.types) or \
                len(self.kinds) != len(self.types):
            raise ValueError(f"ElementSpec: {len(self.types)} types and {len(self.shapes)} shapes for a structure "
                             f"of {len(flatten(structure))} components")
        self.component_types: list[dtypes.DType] = []
        self.component_shapes: list[TensorShape] = []
        self.sparse_starts: list[int] = []
        self.leaf_sizes: list[int] = []
        for t, s, k in zip(self.types, self.shapes, self.kinds):
            parts = leaf_components(t, s, k)
            if len(parts) == 3:
                self.sparse_starts.append(len(self.component_types))
            self.leaf_sizes.append(len(parts))
            self.component_types += [p[0] for p in parts]
            self.component_shapes += [p[1] for p in parts]

    @staticmethod
    def of_tensors(structure: Any) -> ElementSpec:
        """The spec of a structure of tensors and SparseTensors."""
        return ElementSpec.of_values(structure)[0]

    @staticmethod
    def of_values(structure: Any) -> tuple[ElementSpec, list[Tensor]]:
        """The spec of a structure of tensors and SparseTensors, and its component tensors."""
        types, shapes, kinds, comps = [], [], [], []
        for leaf in flatten(structure):
            if isinstance(leaf, SparseTensor):
                types.append(leaf.dtype.base_dtype)
                shapes.append(leaf.shape)
                kinds.append(SparseTensor)
                comps += [leaf.indices, leaf.values, leaf.dense_shape]
            else:
                types.append(leaf.dtype.base_dtype)
                shapes.append(leaf.shape)
                kinds.append(Tensor)
                comps.append(leaf)
        return ElementSpec(map_structure(lambda _: 0, structure) if is_nested(structure) else 0, types, shapes,
                           kinds), comps

    @staticmethod
    def from_types_and_shapes(types: Any, shapes: Any = None, classes: Any = None) -> ElementSpec:
        """A spec from TF1's `output_types`, `output_shapes` and `output_classes` (shapes default to unknown,
        classes to Tensor; a shape or class structure may stop at a leaf of the types' structure, as TF's
        `nest.map_structure_up_to`)."""
        flat_types = flatten(types)
        if shapes is None:
            flat_shapes = [TensorShape(None)] * len(flat_types)
        else:
            flat_shapes = [as_shape(s) for s in _flatten_up_to(types, shapes)]
        kinds = None if classes is None else [_kind_of_class(c) for c in _flatten_up_to(types, classes)]
        return ElementSpec(types, [dtypes.as_dtype(t) for t in flat_types], flat_shapes, kinds)

    def __len__(self) -> int:
        return len(self.types)

    def _view(self, fn: Callable[[dtypes.DType, TensorShape, Any], Any]) -> Any:
        return pack_as(self.structure, [k if isinstance(k, DatasetSpec) else fn(t, s, k)
                                        for t, s, k in zip(self.types, self.shapes, self.kinds)])

    @property
    def output_types(self) -> Any:
        return self._view(lambda t, s, k: t)

    @property
    def output_shapes(self) -> Any:
        return self._view(lambda t, s, k: s)

    @property
    def output_classes(self) -> Any:
        return self._view(lambda t, s, k: k)

    @property
    def element_spec(self) -> Any:
        return self._view(_leaf_spec)

    @property
    def has_datasets(self) -> bool:
        return any(isinstance(k, DatasetSpec) for k in self.kinds)

    def with_shapes(self, shapes: Sequence[TensorShape]) -> ElementSpec:
        return ElementSpec(self.structure, self.types, shapes, self.kinds)

    def pack_components(self, flat: Sequence[Any], dataset_of: Callable[[Any], Any] | None = None) -> Any:
        """The user's structure from component tensors: SparseTensors rebuilt (with the spec's static dense
        shape), and a window's leaves made datasets by `dataset_of(stacked rows)`."""
        if len(flat) != len(self.component_types):
            raise ValueError(f"pack_components: {len(flat)} components for a spec of {len(self.component_types)}")
        leaves, c = [], 0
        for s, k, n in zip(self.shapes, self.kinds, self.leaf_sizes):
            parts = list(flat[c:c + n])
            c += n
            value = parts[0]
            if n == 3:
                shape = _batched_shape(k.element_spec.shape) if isinstance(k, DatasetSpec) else s
                value = SparseTensor(parts[0], parts[1], _restore_dense_shape(parts[2], shape))
                value.set_shape(shape)
            if isinstance(k, DatasetSpec):
                if dataset_of is None:
                    raise TypeError(f"an element holding datasets ({k!r}) cannot be taken out of a pipeline as "
                                    f"tensors in asyncflow; use the windows inside flat_map or interleave")
                value = dataset_of(value)
            leaves.append(value)
        return pack_as(self.structure, leaves)

    def is_compatible_with(self, other: ElementSpec) -> bool:
        return same_structure(self.structure, other.structure) and self.types == other.types and \
            self.kinds == other.kinds and all(a.is_compatible_with(b) for a, b in zip(self.shapes, other.shapes))

    def same_kinds(self, other: ElementSpec) -> bool:
        """Same structure, dtypes and kinds (shapes aside)."""
        return same_structure(self.structure, other.structure) and self.types == other.types and \
            [type(k) if isinstance(k, DatasetSpec) else k for k in self.kinds] == \
            [type(k) if isinstance(k, DatasetSpec) else k for k in other.kinds]

    def most_specific_compatible(self, other: ElementSpec) -> ElementSpec:
        """The spec both satisfy (concatenate): shapes generalised dimension by dimension."""
        kinds = [k if not isinstance(k, DatasetSpec) else DatasetSpec(
            _leaf_spec(k.element_spec.dtype, _generalise(k.element_spec.shape, o.element_spec.shape),
                       SparseTensor if isinstance(k.element_spec, SparseTensorSpec) else Tensor))
            for k, o in zip(self.kinds, other.kinds)]
        return ElementSpec(self.structure, self.types, [_generalise(a, b) for a, b in zip(self.shapes, other.shapes)],
                           kinds)

    def __repr__(self) -> str:
        return f"ElementSpec(types={self.output_types!r}, shapes={self.output_shapes!r})"


def _flatten_up_to(structure: Any, values: Any) -> list[Any]:
    if isinstance(structure, dict):
        if not isinstance(values, dict):
            raise ValueError(f"output_shapes {values!r} do not match the structure of output_types {structure!r}")
        return [v for k in sorted(structure) for v in _flatten_up_to(structure[k], values[k])]
    if isinstance(structure, tuple):
        if not isinstance(values, (tuple, list)) or len(values) != len(structure):
            raise ValueError(f"output_shapes {values!r} do not match the structure of output_types {structure!r}")
        return [v for s, x in zip(structure, values) for v in _flatten_up_to(s, x)]
    return [values]


def _generalise(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])
