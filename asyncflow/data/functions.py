"""Tracing `map`/`filter`/`flat_map`/`interleave` functions into function graphs, once, as TF1 does.

`trace(fn, spec, what)` builds a `FunctionGraph` (an `af.Graph` of its own), makes one
placeholder per component of the element (`args_0`, ...; a SparseTensor leaf is three, rebuilt
into a SparseTensor, and a window's leaf becomes a dataset over its stacked rows: see
structure.py), calls `fn` on them (a tuple element is unpacked into positional arguments; a dict
or namedtuple is passed whole, as TF's StructuredFunctionWrapper), and records the outputs'
components (a SparseTensor returned is its three tensors) and their leaf spec. Outer tensors the function reads are
*captured*: the function graph gets a placeholder for each (a constant is copied in instead, so
shape inference still sees its value), and the pipeline feeds the outer tensor's value when the
iterator is made; a variable is read then too (its value at initialisation). The registry asks
the default graph whether it `captures_outer` before refusing inputs from two graphs, and this
graph's `create_op` swaps foreign inputs for their captures.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asyncflow import dtypes
from asyncflow.data.structure import ElementSpec, flatten, pack_as
from asyncflow.graph import Graph, Operation, Tensor, get_default_graph
from asyncflow.ops.array import identity, placeholder
from asyncflow.ops.registry import constant, constant_value, convert_to_tensor
from asyncflow.sparse_tensor import SparseTensor, SparseTensorValue, is_sparse

_ids = itertools.count()


class FunctionGraph(Graph):
    """The graph a dataset function is traced into; it captures tensors of the graphs around it."""

    captures_outer = True

    def __init__(self, outer: Graph, name: str):
        super().__init__()
        self.outer = outer
        self.name = name
        self.seed = outer.seed
        self.captured: dict[Tensor, Tensor] = {}  # outer tensor -> its stand-in here
        self.capture_order: list[tuple[Tensor, Tensor]] = []  # (outer value to feed, placeholder)

    def capture(self, t: Tensor) -> Tensor:
        if t.graph is self:
            return t
        found = self.captured.get(t)
        if found is not None:
            return found
        source = t
        if t.graph is not self.outer and getattr(self.outer, "captures_outer", False):
            source = self.outer.capture(t)  # a function traced inside a function: capture through it
        elif t.graph is not self.outer:
            raise ValueError(f"{self.name}: the function uses {t.name}, a tensor of an unrelated graph")
        value = constant_value(source) if source.op.type == "Const" else None
        with self.as_default(), self.name_scope(None), self.control_dependencies(None):
            if value is not None:
                inner = constant(value, dtype=source.dtype.base_dtype, name="captured_const")
            else:
                if source.dtype.is_ref_dtype:  # a variable: its value when the iterator is made
                    with source.graph.as_default(), source.graph.name_scope(None):
                        source = identity(source, name=f"{self.name}/captured_read")
                inner = placeholder(source.dtype.base_dtype, source.shape, name="captured")
                self.capture_order.append((source, inner))
        self.captured[t] = inner
        return inner

    def create_op(self, op_type: str, inputs: Any, attrs: dict[str, Any], output_types: Any, output_shapes: Any,
                  name: str, op_def: Any = None, control_inputs: Any = ()) -> Operation:
        inputs = [t if t.graph is self else self.capture(t) for t in inputs]
        control_inputs = [c for c in control_inputs if c.graph is self]
        return super().create_op(op_type, inputs, attrs, output_types, output_shapes, name, op_def, control_inputs)


@dataclass
class TracedFunction:
    """A function graph: its element placeholders, captures (outer tensor, placeholder) and flat outputs."""

    graph: FunctionGraph
    inputs: list[Tensor]
    outputs: list[Tensor]
    structure: Any = None
    result: Any = None  # what the function returned (a Dataset, for flat_map/interleave)
    captured: list[Tensor] = field(default_factory=list)
    capture_inputs: list[Tensor] = field(default_factory=list)
    spec: ElementSpec | None = None  # the leaves the function returned (SparseTensors as such)

    @property
    def output_spec(self) -> ElementSpec:
        if self.spec is not None:
            return self.spec
        return ElementSpec(self.structure, [t.dtype.base_dtype for t in self.outputs], [t.shape for t in self.outputs])

    @property
    def in_process_only(self) -> bool:
        return any(op.op_def is not None and op.op_def.in_process_only for op in self.graph.get_operations())

    def to_document(self, capture_index: list[int]) -> dict:
        from asyncflow.serialization import graph_to_document

        return {"graph": graph_to_document(self.graph), "inputs": [t.name for t in self.inputs],
                "captures": [t.name for t in self.capture_inputs], "outputs": [t.name for t in self.outputs],
                "capture_index": capture_index}


def _should_unpack(element: Any) -> bool:
    return type(element) is tuple


def trace(fn: Callable[..., Any], spec: ElementSpec, what: str,
          finish: Callable[[Any], tuple[Any, list[Tensor]]] | None = None) -> TracedFunction:
    """Traces `fn` on an element of `spec`; `finish(result)` gives (structure, flat outputs) when the
    result is not a structure of tensors (flat_map's dataset), else the result is normalised here."""
    if not callable(fn):
        raise TypeError(f"{what}: the function must be callable, got {type(fn).__name__}")
    graph = FunctionGraph(get_default_graph(), f"{what}_fn_{next(_ids)}")
    with graph.as_default():
        args = [placeholder(t, s, name=f"args_{i}")
                for i, (t, s) in enumerate(zip(spec.component_types, spec.component_shapes))]
        element = spec.pack_components(args, _window_dataset)
        result = fn(*element) if _should_unpack(element) else fn(element)
        out_spec = None
        if finish is not None:
            structure, outputs = finish(result)
        else:
            structure, outputs, out_spec = normalise_result(result, what)
    captured = [outer for outer, _ in graph.capture_order]
    inner = [p for _, p in graph.capture_order]
    return TracedFunction(graph, args, outputs, structure, result, captured, inner, out_spec)


def _window_dataset(rows: Any) -> Any:
    """A window's leaf inside a function: the dataset of its stacked rows."""
    from asyncflow.data.dataset import DatasetV1  # the dataset module imports this one

    return DatasetV1.from_tensor_slices(rows)


def normalise_result(result: Any, what: str) -> tuple[Any, list[Tensor], ElementSpec]:
    """The structure, component tensors and leaf spec of what a map function returned (lists read as
    tuples, as TF1; a SparseTensor or SparseTensorValue is a leaf of three components)."""
    if result is None:
        raise ValueError(f"{what}: the function returned None; it must return a tensor or a structure of tensors")

    def tuples(x: Any) -> Any:
        if isinstance(x, SparseTensorValue):
            return x
        if isinstance(x, list):
            return tuple(tuples(v) for v in x)
        if isinstance(x, dict):
            return type(x)((k, tuples(v)) for k, v in x.items()) if type(x) is not dict else \
                {k: tuples(v) for k, v in x.items()}
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(tuples(v) for v in x))
        if isinstance(x, tuple):
            return tuple(tuples(v) for v in x)
        return x

    structure = tuples(result)
    leaves = []
    for leaf in flatten(structure):
        if is_sparse(leaf):
            sp = SparseTensor.from_value(leaf) if not isinstance(leaf, SparseTensor) else leaf
            parts = [_inner(t) for t in (sp.indices, sp.values, sp.dense_shape)]
            st = SparseTensor(*parts)
            st.set_shape(sp.shape)
            leaves.append(st)
            continue
        try:
            t = convert_to_tensor(leaf)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what}: the function returned {leaf!r}, which is not convertible to a tensor ({e})") \
                from None
        leaves.append(_inner(t))
    spec, flat = ElementSpec.of_values(pack_as(structure, leaves))
    if any(t.dtype.base_dtype == dtypes.resource for t in flat):
        raise TypeError(f"{what}: the function returned a resource handle, which a dataset cannot hold")
    return structure, flat, ElementSpec(structure, spec.types, spec.shapes, spec.kinds)


def _inner(t: Tensor) -> Tensor:
    """`t` as a tensor of the function graph being traced (an outer one captured; a ref read)."""
    graph = get_default_graph()
    if t.graph is not graph and isinstance(graph, FunctionGraph):
        t = graph.capture(t)  # an outer tensor returned as it is
    if t.dtype.is_ref_dtype:
        t = identity(t)
    return t
