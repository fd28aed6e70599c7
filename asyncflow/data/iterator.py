"""`af.data.Iterator` (TF1's `tf.compat.v1.data.Iterator`) and the iterator makers.

An Iterator is a handle tensor (`IteratorV2`, `OneShotIterator` or `IteratorFromStringHandleV2`),
its element spec, and for an initializable one its `initializer` (`MakeIterator`). `get_next()`
builds an `IteratorGetNext` whose outputs are packed into the element structure; running it past
the end raises OutOfRangeError, every time. An initializable iterator is re-initialised by
running its initializer again, with new feeds for the placeholders its dataset captures.
"""

from __future__ import annotations

from typing import Any

from asyncflow.data.dataset import DatasetV1, build_program, in_process_only, register_program
from asyncflow.data.structure import ElementSpec, HasElementSpec, same_structure
from asyncflow.graph import Operation, Tensor
from asyncflow.ops import dataset_ops
from asyncflow.ops.registry import convert_to_tensor


def _attrs(spec: ElementSpec) -> dict[str, Any]:
    # the ops carry components: a SparseTensor leaf is three tensors (structure.py)
    return {"output_types": list(spec.component_types), "output_shapes": list(spec.component_shapes)}


class Iterator(HasElementSpec):
    """An iterator over a dataset's elements (see the module docstring)."""

    def __init__(self, iterator_resource: Tensor, initializer: Operation | None, spec: ElementSpec):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._spec = spec
        self._get_next_calls = 0

    # -- makers ----------------------------------------------------------------------------------------------
    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None, shared_name: str | None = None,
                       output_classes: Any = None) -> Iterator:
        """An iterator not bound to a dataset: `make_initializer(dataset)` binds one (reinitializable)."""
        spec = ElementSpec.from_types_and_shapes(output_types, output_shapes, output_classes)
        handle = dataset_ops.iterator_v2(shared_name=shared_name or "", container="", name="Iterator", **_attrs(spec))
        return Iterator(handle, None, spec)

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> Iterator:
        """An iterator chosen at run time by a string handle fed into `string_handle` (a string scalar)."""
        spec = ElementSpec.from_types_and_shapes(output_types, output_shapes, output_classes)
        handle_in = convert_to_tensor(string_handle, "string")
        handle = dataset_ops.iterator_from_string_handle(handle_in, name="IteratorFromStringHandle", **_attrs(spec))
        return Iterator(handle, None, spec)

    # -- use -------------------------------------------------------------------------------------------------------
    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset: DatasetV1, name: str | None = None) -> Operation:
        """An op that (re)starts this iterator on `dataset`, whose elements must fit this iterator's."""
        spec = dataset._spec
        if not same_structure(self._spec.structure, spec.structure):
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with output types "
                            f"{dataset.output_types!r}.")
        if spec.types != self._spec.types:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with output types "
                            f"{dataset.output_types!r}.")
        if not self._spec.same_kinds(spec):
            raise TypeError(f"Expected output classes {self.output_classes!r} but got dataset with output classes "
                            f"{dataset.output_classes!r}.")
        if not all(a.is_compatible_with(b) for a, b in zip(self._spec.shapes, spec.shapes)):
            raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} but got dataset with "
                            f"output shapes {dataset.output_shapes!r}.")
        return _make_iterator_op(self._iterator_resource, dataset, name or "MakeIterator")

    def get_next(self, name: str | None = None) -> Any:
        """The next element (a structure of tensors); OutOfRangeError at the end, every time it runs."""
        self._get_next_calls += 1
        if self._spec.has_datasets:
            raise TypeError(f"get_next: the elements hold datasets ({self.output_classes!r}), which asyncflow does "
                            f"not take out of a pipeline; use them inside flat_map or interleave")
        flat = dataset_ops.iterator_get_next(self._iterator_resource, name=name or "IteratorGetNext",
                                             **_attrs(self._spec))
        flat = flat if isinstance(flat, list) else [flat]
        for t, s in zip(flat, self._spec.component_shapes):
            t.set_shape(s)
        return self._spec.pack_components(flat)

    def string_handle(self, name: str | None = None) -> Tensor:
        """A string scalar naming this iterator, to feed an iterator made `from_string_handle`."""
        return dataset_ops.iterator_to_string_handle(self._iterator_resource, name=name or "IteratorToStringHandle")

    def __repr__(self) -> str:
        return f"<af.data.Iterator {self._iterator_resource.op.name} types: {self.output_types}>"


def _make_iterator_op(handle: Tensor, dataset: DatasetV1, name: str) -> Operation:
    program = build_program(dataset)
    token, doc = register_program(program)
    kind = dataset_ops.MakeIteratorInProcess if in_process_only(program) else dataset_ops.MakeIterator
    return kind(handle, list(program["captures"]), dataset=doc, token=token, name=name)


def _placeholder_in(tensors: list[Tensor]) -> Operation | None:
    seen: set[Operation] = set()
    stack = [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            return op
        stack.extend(t.op for t in op.inputs)
    return None


def make_one_shot_iterator(dataset: DatasetV1) -> Iterator:
    """`tf.compat.v1.data.make_one_shot_iterator`: starts on first use; the dataset may not capture a placeholder."""
    if not isinstance(dataset, DatasetV1):
        raise TypeError(f"make_one_shot_iterator: expected a Dataset, got {type(dataset).__name__}")
    program = build_program(dataset)
    found = _placeholder_in(list(program["captures"]))
    if found is not None:
        raise ValueError(f"Cannot capture a placeholder (name:{found.name}, type:{found.type}) by value.")
    token, doc = register_program(program)
    kind = dataset_ops.OneShotIteratorInProcess if in_process_only(program) else dataset_ops.OneShotIterator
    handle = kind(list(program["captures"]), dataset=doc, token=token, name="OneShotIterator",
                  **_attrs(dataset._spec))
    return Iterator(handle, None, dataset._spec)


def make_initializable_iterator(dataset: DatasetV1, shared_name: str | None = None) -> Iterator:
    """`tf.compat.v1.data.make_initializable_iterator`: run `initializer` (again, with new feeds) to (re)start it."""
    if not isinstance(dataset, DatasetV1):
        raise TypeError(f"make_initializable_iterator: expected a Dataset, got {type(dataset).__name__}")
    spec = dataset._spec
    handle = dataset_ops.iterator_v2(shared_name=shared_name or "", container="", name="Iterator", **_attrs(spec))
    init = _make_iterator_op(handle, dataset, "MakeIterator")
    return Iterator(handle, init, spec)


def get_output_types(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_classes

