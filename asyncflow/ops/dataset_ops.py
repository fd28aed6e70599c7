"""The ops of `af.data` iterators: the kernels that make, initialise and read input pipelines.

An iterator is a resource (`IteratorResource` of asyncflow/data/runtime.py) in the op's resource
container under its shared name (or op name), like a queue; `IteratorV2` and `OneShotIterator`
output it as a `resource` handle. `MakeIterator` instantiates a pipeline in it: its `dataset`
attr is the program as JSON (function graphs as graph documents, so a worker of a distributed run
rebuilds it with no pickle) and its inputs are the tensors the dataset captures (the slices of
`from_tensor_slices`, `batch`'s size, the values a `map` function reads from outside), fed anew
at every initialisation. In the process that built the dataset, its `token` attr finds the live
program in the graph's table instead (`Graph._dataset_programs`), which is how `from_generator`
and py_func-holding maps reach their Python callables; those datasets make the `...InProcess`
variants, which `OpDef.in_process_only` keeps from ever being sent to a server.

`IteratorGetNext` awaits the next element (the step suspends only when the pipeline has to wait:
a prefetch buffer still filling, a py_func map in threads) and raises OutOfRangeError ("End of
sequence") at the end, every time. `IteratorToStringHandle`/`IteratorFromStringHandleV2` turn a
handle into a string naming its container and name, and back, on the same task.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.data.runtime import IteratorResource, Program, check_element
from asyncflow.ops.data_flow import lookup_resource
from asyncflow.ops.registry import ALL_TYPES, BuildContext, TypeList, op
from asyncflow.shapes import TensorShape, as_shape

_TRAITS = {"stateful": True, "differentiable": False}
_SPEC = {"output_types": TypeList(ALL_TYPES)}
_HANDLE_PREFIX = "asyncflow.iterator"


def _scalar(b: BuildContext) -> TensorShape:
    return TensorShape([])


def _element_shapes(b: BuildContext) -> list[TensorShape]:
    return [as_shape(s) for s in b.attrs["output_shapes"]]


def _prepare_iterator(k: Any) -> None:
    k.element_shapes = [as_shape(s) for s in k.output_shapes]


def _iterator(k: Any) -> IteratorResource:
    found = lookup_resource(k, "iterator", lambda: IteratorResource(
        k.shared_name or k.name, k.output_types, k.element_shapes))
    found.check_types(k.output_types, f"{k.op_type} '{k.name}'")
    found.handle_string = f"{_HANDLE_PREFIX}:{k.container}:{k.shared_name or k.name}"
    return found


def _prepare_program(k: Any) -> None:
    """Once per plan: the live program (this process built the dataset) or the one the attr describes."""
    live = getattr(k.op.graph, "_dataset_programs", {}).get(k.token)
    k.program = Program.live(live) if live is not None else None
    if k.program is None:
        try:
            doc = json.loads(k.dataset)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': malformed dataset attr ({e})") \
                from None
        k.program = Program.from_document(doc)


_ITERATOR_ATTRS = {"shared_name": "", "container": "", "output_shapes": []}


@op("IteratorV2", outputs="handle: resource", types=_SPEC, attrs=_ITERATOR_ATTRS, shape=_scalar,
    prepare=_prepare_iterator, **_TRAITS)
def iterator_v2(k):
    return _iterator(k)


_MAKE = dict(inputs="iterator: resource, captures: Tcaptures", types={"Tcaptures": TypeList(ALL_TYPES)},
             attrs={"dataset": "", "token": ""}, prepare=_prepare_program, is_async=True, **_TRAITS)


async def _make_iterator(k, iterator, *captures):
    await iterator.initialize(k.program, captures)


MakeIterator = op("MakeIterator", **_MAKE)(_make_iterator)
MakeIteratorInProcess = op("MakeIteratorInProcess", in_process_only=True, **_MAKE)(_make_iterator)


def _prepare_one_shot(k: Any) -> None:
    _prepare_iterator(k)
    _prepare_program(k)


_ONE_SHOT = dict(inputs="captures: Tcaptures", outputs="handle: resource",
                 types={"Tcaptures": TypeList(ALL_TYPES), **_SPEC},
                 attrs={"dataset": "", "token": "", **_ITERATOR_ATTRS}, shape=_scalar, prepare=_prepare_one_shot,
                 is_async=True, **_TRAITS)


async def _one_shot_iterator(k, *captures):
    it = _iterator(k)
    if not getattr(it, "started", False):
        it.started = True  # made once: a one-shot iterator is never re-initialised
        await it.initialize(k.program, captures)
    return it


OneShotIterator = op("OneShotIterator", **_ONE_SHOT)(_one_shot_iterator)
OneShotIteratorInProcess = op("OneShotIteratorInProcess", in_process_only=True, **_ONE_SHOT)(_one_shot_iterator)


def _prepare_get_next(k: Any) -> None:
    k.shapes = [as_shape(s) for s in k.output_shapes]


@op("IteratorGetNext", inputs="iterator: resource", outputs="components: output_types", types=_SPEC,
    attrs={"output_shapes": []}, shape=_element_shapes, prepare=_prepare_get_next, is_async=True, **_TRAITS)
async def iterator_get_next(k, iterator):
    values = await iterator.get_next()
    if iterator.shapes != k.shapes:
        check_element(values, k.output_types, k.shapes, f"{k.op_type} '{k.name}'")
    return values


@op("IteratorToStringHandle", inputs="resource_handle: resource", outputs="string_handle: string", shape=_scalar,
    **_TRAITS)
def iterator_to_string_handle(k, iterator):
    return np.array(iterator.handle_string.encode(), dtype=object)


@op("IteratorFromStringHandleV2", inputs="string_handle: string", outputs="resource_handle: resource", types=_SPEC,
    attrs={"output_shapes": []}, shape=_scalar, **_TRAITS)
def iterator_from_string_handle(k, handle):
    text = handle.item() if isinstance(handle, np.ndarray) else handle
    text = text.decode() if isinstance(text, bytes) else str(text)
    prefix, _, rest = text.partition(":")
    container, _, name = rest.partition(":")
    if prefix != _HANDLE_PREFIX or not name:
        raise errors.InvalidArgumentError(None, None, f"{k.op_type} '{k.name}': {text!r} is not an iterator's "
                                                      f"string handle")

    def missing() -> Any:
        raise errors.NotFoundError(None, None, f"{k.op_type} '{k.name}': no iterator '{name}' in container "
                                               f"'{container}' of this task (resource may have been reset)")

    found = k.resources.container(container).resource("iterator", name, missing)
    found.check_types(k.output_types, f"{k.op_type} '{k.name}'")
    return found


__all__: list[str] = []
