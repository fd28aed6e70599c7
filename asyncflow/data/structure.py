"""Nested element structures of `af.data`: flattening, packing, and the per-component specs.

An element is a nesting of tuples, namedtuples and dicts (keys in sorted order, as TF's `nest`)
whose leaves are tensors. Lists are not structure: as in `tf.data`, a list is a value that becomes
one tensor (`from_tensor_slices([1, 2, 3])` has scalar elements), except that a `map` function
returning a list is read as a tuple, as TF1 does.

`ElementSpec` is what a dataset knows of its elements statically: the structure, and one dtype and
one static shape per leaf (flat, in `flatten` order). `output_types`, `output_shapes` and
`output_classes` are its three packed views. This module sits on the graph model only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.shapes import TensorShape, as_shape


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_nested(x: Any) -> bool:
    return isinstance(x, (tuple, dict))


def flatten(structure: Any) -> list[Any]:
    """The leaves of `structure` in TF's order (dict values by sorted key)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, tuple):
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
    if _is_namedtuple(structure):
        return type(structure)(*(_pack(s, it) for s in structure))
    if isinstance(structure, tuple):
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
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
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


class ElementSpec:
    """What a dataset's elements look like: a structure, and a dtype and static shape per leaf."""

    def __init__(self, structure: Any, types: Sequence[dtypes.DType], shapes: Sequence[TensorShape]):
        self.structure = structure
        self.types = [dtypes.as_dtype(t).base_dtype for t in types]
        self.shapes = [as_shape(s) for s in shapes]
        if len(self.types) != len(flatten(structure)) or len(self.shapes) != len(self.types):
            raise ValueError(f"ElementSpec: {len(self.types)} types and {len(self.shapes)} shapes for a structure "
                             f"of {len(flatten(structure))} components")

    @staticmethod
    def of_tensors(structure: Any) -> ElementSpec:
        """The spec of a structure of tensors."""
        leaves = flatten(structure)
        return ElementSpec(structure, [t.dtype.base_dtype for t in leaves], [t.shape for t in leaves])

    @staticmethod
    def from_types_and_shapes(types: Any, shapes: Any = None) -> ElementSpec:
        """A spec from TF1's `output_types` and `output_shapes` (shapes default to unknown; a shape
        structure may stop at a leaf of the types' structure, as TF's `nest.map_structure_up_to`)."""
        flat_types = flatten(types)
        if shapes is None:
            flat_shapes = [TensorShape(None)] * len(flat_types)
        else:
            flat_shapes = [as_shape(s) for s in _flatten_up_to(types, shapes)]
        return ElementSpec(types, [dtypes.as_dtype(t) for t in flat_types], flat_shapes)

    def __len__(self) -> int:
        return len(self.types)

    @property
    def output_types(self) -> Any:
        return pack_as(self.structure, self.types)

    @property
    def output_shapes(self) -> Any:
        return pack_as(self.structure, self.shapes)

    @property
    def output_classes(self) -> Any:
        return pack_as(self.structure, [Tensor] * len(self.types))

    @property
    def element_spec(self) -> Any:
        return pack_as(self.structure, [TensorSpec(s, t) for s, t in zip(self.shapes, self.types)])

    def is_compatible_with(self, other: ElementSpec) -> bool:
        return same_structure(self.structure, other.structure) and self.types == other.types and \
            all(a.is_compatible_with(b) for a, b in zip(self.shapes, other.shapes))

    def most_specific_compatible(self, other: ElementSpec) -> ElementSpec:
        """The spec both satisfy (concatenate): shapes generalised dimension by dimension."""
        return ElementSpec(self.structure, self.types, [_generalise(a, b) for a, b in zip(self.shapes, other.shapes)])

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
