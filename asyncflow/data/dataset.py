"""`af.data.Dataset` (TF1's `tf.compat.v1.data.Dataset`): the graph-side description of a pipeline.

A Dataset is a node of a tree: its kind (`op`, TF's dataset op name: "MapDataset", ...), a name
unique in the graph, its input datasets, the outer tensors it captures (built as graph ops when
the dataset is made, as TF1 does: `batch_size`, `tensors/component_0`, ...), JSON parameters,
and for `map`/`filter`/`flat_map`/`interleave` a traced function (functions.py). Nothing runs
until an iterator is made: `program_of(dataset)` then collects the tree into a *program* (the
node tree, the function graphs, the callables, the captured tensors in one flat list), which the
iterator ops carry as a JSON attr and, in this process, as a live object (see
ops/dataset_ops.py); asyncflow/data/runtime.py runs it.

Sources are the classmethods below, and `SourceDataset`, the extension point for record sources
(TextLine, FixedLengthRecord, TFRecord, Arrow files): a subclass declares its element spec and
the tensors it reads (file names, ...), and gives an async generator of elements that the
runtime drives. Transformations are in dataset_transforms.py; iterators in iterator.py.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from asyncflow import dtypes
from asyncflow.data import runtime_stages
from asyncflow.data.functions import TracedFunction
from asyncflow.data.structure import ElementSpec, HasElementSpec, flatten, is_nested, pack_as
from asyncflow.graph import Tensor, get_default_graph, get_seed, name_scope
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.shapes import TensorShape
from asyncflow.sparse_tensor import SparseTensor, is_sparse

_tokens = itertools.count()


def _shape_json(s: TensorShape) -> list | None:
    return None if s.ndims is None else s.as_list()


class DatasetV1(HasElementSpec):
    """A dataset: `element_spec`, the TF1 transformations and iterator makers (module docstring)."""

    _op: str = "Dataset"

    def __init__(self, spec: ElementSpec, inputs: tuple[DatasetV1, ...] = (), tensors: tuple[Tensor, ...] = (),
                 params: dict | None = None, fn: TracedFunction | None = None, inner: dict | None = None,
                 op: str | None = None, callable_: Callable[..., Any] | None = None):
        self._spec = spec
        self._inputs = tuple(inputs)
        self._tensors = tuple(tensors)
        self._params = dict(params or {})
        self._fn = fn
        self._inner = inner
        self._callable = callable_
        if op is not None:
            self._op = op
        self._name = get_default_graph().unique_name(self._op)
        self._options: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}' types: {self.output_types}, shapes: {self.output_shapes}>"

    def __iter__(self) -> Any:
        raise RuntimeError("__iter__() is only supported inside of tf.function or when eager execution is enabled; "
                           "in a TF1 graph, make an iterator (make_one_shot_iterator / make_initializable_iterator)")

    # -- the program -----------------------------------------------------------------------------------------
    def _node(self, b: ProgramBuilder) -> dict:
        spec = self._spec  # the runtime sees components: a SparseTensor leaf is three (structure.py)
        node: dict[str, Any] = {"op": self._op, "name": self._name, "types": [t.name for t in spec.component_types],
                                "shapes": [_shape_json(s) for s in spec.component_shapes],
                                "sparse": list(spec.sparse_starts), **self._params}
        if len(self._inputs) == 1 and self._op != "ZipDataset" and self._op != "ConcatenateDataset":
            node["input"] = self._inputs[0]._node(b)
        elif self._inputs:
            node["inputs"] = [d._node(b) for d in self._inputs]
        node["captures"] = [b.capture(t) for t in self._tensors]
        if self._fn is not None:
            node["fn"] = b.function(self._fn)
        if self._inner is not None:
            node["inner"] = b.inner(self._inner)
        if self._callable is not None:
            node["callable"] = b.callable(self._callable)
        return node

    # -- sources ------------------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> DatasetV1:
        """Elements are the slices of `tensors` along dimension 0 (every component the same length; a
        SparseTensor is sliced along its first dense dimension, as TF's)."""
        with name_scope("tensors"):
            spec, flat = ElementSpec.of_values(_values_of(tensors))
        for i, (s, leaf) in enumerate(zip(spec.shapes, _leaf_names(flat, spec))):
            if s.ndims == 0:
                raise ValueError(f"from_tensor_slices: component {i} ({leaf}) is a scalar; slicing needs rank >= 1")
        first = next((s[0] for s in spec.shapes if s.ndims is not None), None)
        for s in spec.shapes:
            if s.ndims is not None and first is not None and not s[0].is_compatible_with(first):
                raise ValueError(f"Dimensions {first} and {s[0]} are not compatible: every component of "
                                 f"from_tensor_slices must have the same size in dimension 0")
        spec = spec.with_shapes([TensorShape(None) if s.ndims is None else TensorShape(s.as_list()[1:])
                                 for s in spec.shapes])
        return DatasetV1(spec, tensors=tuple(flat), op="TensorSliceDataset")

    @staticmethod
    def from_tensors(tensors: Any) -> DatasetV1:
        """A dataset of one element, `tensors`."""
        with name_scope("tensors"):
            spec, flat = ElementSpec.of_values(_values_of(tensors))
        return DatasetV1(spec, tensors=tuple(flat), op="TensorDataset")

    @staticmethod
    def range(*args: Any, output_type: Any = dtypes.int64) -> DatasetV1:
        """`range(stop)`, `range(start, stop[, step])`: int64 scalars, as Python's range."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        tensors = tuple(convert_to_tensor(v, dtypes.int64, name=n) for v, n in zip((start, stop, step),
                                                                                    ("start", "stop", "step")))
        spec = ElementSpec(0, [dtypes.as_dtype(output_type)], [TensorShape([])])
        ds = DatasetV1(spec, tensors=tensors, op="RangeDataset")
        return ds if dtypes.as_dtype(output_type) == dtypes.int64 else \
            ds.map(lambda x: _cast(x, output_type))

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any, output_shapes: Any = None,
                       args: Any = None) -> DatasetV1:
        """Elements from a Python generator of this process (never sent to a server, as py_func)."""
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        spec = ElementSpec.from_types_and_shapes(output_types, output_shapes)
        tensors = tuple(convert_to_tensor(a, name=f"args_{i}") for i, a in enumerate(args or ()))
        return DatasetV1(spec, tensors=tensors, op="GeneratorDataset", callable_=generator)

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None) -> DatasetV1:
        """The files matching `file_pattern` (a glob or a list of them), shuffled unless `shuffle=False`."""
        pattern = convert_to_tensor(file_pattern, dtypes.string, name="file_pattern")
        shuffle = True if shuffle is None else bool(shuffle)
        seed_a, seed_b = get_seed(seed)
        params = {"shuffle": shuffle, "seed": None if seed_a is None else [seed_a, seed_b]}
        return DatasetV1(ElementSpec(0, [dtypes.string], [TensorShape([])]), tensors=(pattern,), params=params,
                         op="MatchingFilesDataset")

    @staticmethod
    def zip(datasets: Any) -> DatasetV1:
        """Elements are the structure `datasets` has, of the datasets' elements; ends with the shortest."""
        leaves = flatten(datasets)
        if not leaves or not all(isinstance(d, DatasetV1) for d in leaves):
            raise TypeError(f"zip: the argument must be a (nested) structure of Datasets, got {datasets!r}")
        structure = pack_as(datasets, [d._spec.structure for d in leaves])
        types = [t for d in leaves for t in d._spec.types]
        shapes = [s for d in leaves for s in d._spec.shapes]
        kinds = [k for d in leaves for k in d._spec.kinds]
        return DatasetV1(ElementSpec(_zip_structure(structure), types, shapes, kinds), inputs=tuple(leaves),
                         op="ZipDataset")

    # -- transformations (dataset_transforms.py) ------------------------------------------------------------
    def map(self, map_func: Callable[..., Any], num_parallel_calls: int | None = None,
            deterministic: bool | None = None) -> DatasetV1:
        return _t.map_dataset(self, map_func, num_parallel_calls)

    def filter(self, predicate: Callable[..., Any]) -> DatasetV1:
        return _t.filter_dataset(self, predicate)

    def flat_map(self, map_func: Callable[..., Any]) -> DatasetV1:
        return _t.interleave_dataset(self, map_func, 1, 1, None, "FlatMapDataset")

    def interleave(self, map_func: Callable[..., Any], cycle_length: int = -1, block_length: int = 1,
                   num_parallel_calls: int | None = None, deterministic: bool | None = None) -> DatasetV1:
        op = "InterleaveDataset" if num_parallel_calls is None else "ParallelInterleaveDatasetV4"
        return _t.interleave_dataset(self, map_func, cycle_length, block_length, num_parallel_calls, op,
                                     deterministic)

    def batch(self, batch_size: Any, drop_remainder: bool = False) -> DatasetV1:
        return _t.batch_dataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size: Any, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False) -> DatasetV1:
        return _t.padded_batch_dataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self) -> DatasetV1:
        return _t.unbatch_dataset(self)

    def shuffle(self, buffer_size: Any, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None) -> DatasetV1:
        return _t.shuffle_dataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: Any = None) -> DatasetV1:
        return _t.count_dataset(self, "RepeatDataset", -1 if count is None else count, "count")

    def take(self, count: Any) -> DatasetV1:
        return _t.count_dataset(self, "TakeDataset", count, "count")

    def skip(self, count: Any) -> DatasetV1:
        return _t.count_dataset(self, "SkipDataset", count, "count")

    def prefetch(self, buffer_size: Any) -> DatasetV1:
        return _t.count_dataset(self, "PrefetchDataset", buffer_size, "buffer_size")

    def cache(self, filename: Any = "") -> DatasetV1:
        return _t.cache_dataset(self, filename)

    def concatenate(self, dataset: DatasetV1) -> DatasetV1:
        return _t.concatenate_dataset(self, dataset)

    def enumerate(self, start: Any = 0) -> DatasetV1:
        return DatasetV1.zip((DatasetV1.range(start, np.iinfo(np.int64).max), self))

    def window(self, size: Any, shift: Any = None, stride: Any = 1, drop_remainder: bool = False) -> Any:
        return _t.window_dataset(self, size, shift, stride, drop_remainder)

    def apply(self, transformation_func: Callable[[DatasetV1], DatasetV1]) -> DatasetV1:
        out = transformation_func(self)
        if not isinstance(out, DatasetV1):
            raise TypeError(f"`transformation_func` must return a Dataset. Got {out!r}.")
        return out

    def with_options(self, options: Any) -> DatasetV1:
        self._options = {"options": options}
        return self

    def options(self) -> Any:
        return self._options.get("options", Options())

    # -- iterators (iterator.py) --------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Any:
        return _iterator.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        return _iterator.make_initializable_iterator(self, shared_name)


class Options:
    """`tf.data.Options`: accepted; asyncflow's runtime chooses its own threading and optimisations."""

    def __init__(self) -> None:
        self.experimental_deterministic = None
        self.experimental_optimization = None
        self.experimental_threading = None

    def merge(self, options: Any) -> Options:
        return self


# -- record sources ----------------------------------------------------------------------------------------
class SourceDataset(DatasetV1):
    """The base of datasets that read elements from outside the graph (files, records): the extension point.

    A subclass (TextLineDataset, FixedLengthRecordDataset, TFRecordDataset, ArrowDataset, ...):
      - calls `super().__init__(element_spec, inputs={"filenames": ..., ...}, params={...})` where
        `element_spec` is an `ElementSpec` (or `(structure of dtypes, structure of shapes)`),
        `inputs` maps names to tensor-like values (converted here; fed when the iterator is made,
        so placeholders work with initializable iterators), and `params` is JSON-able data;
      - implements `async def elements(cls, inputs, params)` as a **classmethod** async generator:
        `inputs` maps the same names to numpy values, and it yields elements (a value per component
        in the spec's structure) or, for speed, `runtime.Block`s of rows. Blocking I/O belongs in
        `await asyncio.to_thread(...)`. Errors raised are the iterator's (`DataLossError` for a
        corrupt file, naming it and the offset). The runtime checks each element against the spec.
    The runtime finds the class by `source_kind` (the class name unless set), registered when the
    subclass is defined, so a worker that imports asyncflow can run it from the graph document.
    """

    source_kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("source_kind") or cls.__name__
        cls.source_kind = kind
        runtime_stages.SOURCES[kind] = cls

    def __init__(self, element_spec: Any, inputs: Mapping[str, Any] | None = None, params: dict | None = None):
        if not isinstance(element_spec, ElementSpec):
            types, shapes = element_spec
            element_spec = ElementSpec.from_types_and_shapes(types, shapes)
        names = sorted(inputs or {})
        tensors = tuple(convert_to_tensor(inputs[n], name=n) for n in names)
        self._input_names = names
        json.dumps(params or {})  # parameters travel in the graph document: JSON only
        super().__init__(element_spec, tensors=tensors, params={"kind": type(self).source_kind,
                                                                "params": dict(params or {})},
                         op=type(self).__name__)

    def _node(self, b: ProgramBuilder) -> dict:
        node = super()._node(b)
        node["inputs"] = dict(zip(self._input_names, node.pop("captures")))
        node["op"] = "SourceDataset"
        return node

    @classmethod
    async def elements(cls, inputs: dict[str, np.ndarray], params: dict) -> AsyncIterator[Any]:
        raise NotImplementedError(f"{cls.__name__}.elements")
        yield  # pragma: no cover - makes this an async generator


# -- programs -------------------------------------------------------------------------------------------
class ProgramBuilder:
    """Collects one program: captured outer tensors (deduplicated), functions, callables, inner programs."""

    def __init__(self) -> None:
        self.captures: list[Tensor] = []
        self._index: dict[Tensor, int] = {}
        self.functions: list[tuple[TracedFunction, list[int]]] = []
        self.callables: list[Callable[..., Any]] = []
        self.inners: list[dict] = []

    def capture(self, t: Tensor) -> int:
        i = self._index.get(t)
        if i is None:
            i = self._index[t] = len(self.captures)
            self.captures.append(t)
        return i

    def function(self, fn: TracedFunction) -> int:
        self.functions.append((fn, [self.capture(t) for t in fn.captured]))
        return len(self.functions) - 1

    def callable(self, fn: Callable[..., Any]) -> int:
        self.callables.append(fn)
        return len(self.callables) - 1

    def inner(self, spec: dict) -> int:
        self.inners.append(spec)
        return len(self.inners) - 1


def build_program(dataset: DatasetV1) -> dict:
    """The live program of `dataset`: {"root", "functions", "callables", "inner", "captures"}."""
    b = ProgramBuilder()
    root = dataset._node(b)
    return {"root": root, "functions": b.functions, "callables": b.callables, "inner": b.inners,
            "captures": b.captures}


def program_document(program: dict) -> dict:
    """The JSON form of a live program (function graphs as graph documents; callables only counted)."""
    return {"root": program["root"],
            "functions": [fn.to_document(idx) for fn, idx in program["functions"]],
            "inner": [program_document(p) for p in program["inner"]],
            "callables": len(program["callables"])}


def in_process_only(program: dict) -> bool:
    return bool(program["callables"]) or any(fn.in_process_only for fn, _ in program["functions"]) or \
        any(in_process_only(p) for p in program["inner"])


def register_program(program: dict) -> tuple[str, str]:
    """(token, JSON) for an iterator op: the live program goes into the graph's table under the token."""
    graph = get_default_graph()
    table = getattr(graph, "_dataset_programs", None)
    if table is None:
        table = graph._dataset_programs = {}
    token = f"dataset_{next(_tokens)}"
    table[token] = program
    return token, json.dumps(program_document(program))


# -- helpers ------------------------------------------------------------------------------------------------
def _values_of(value: Any) -> Any:
    """An element structure with its leaves as tensors or SparseTensors (lists and arrays are values, not
    structure; a SparseTensorValue becomes a SparseTensor)."""
    flat = flatten(value) if is_nested(value) else [value]
    leaves = [SparseTensor.from_value(v) if is_sparse(v) and not isinstance(v, SparseTensor)
              else v if isinstance(v, SparseTensor) else convert_to_tensor(v, name=f"component_{i}")
              for i, v in enumerate(flat)]
    return pack_as(value, leaves) if is_nested(value) else leaves[0]


def _leaf_names(flat: list[Tensor], spec: ElementSpec) -> list[str]:
    """The name of each leaf's first component (for error messages)."""
    out, c = [], 0
    for n in spec.leaf_sizes:
        out.append(flat[c].name)
        c += n
    return out


def _zip_structure(structure: Any) -> Any:
    return structure


def _cast(x: Any, dtype: Any) -> Any:
    from asyncflow.ops.math import cast

    return cast(x, dtype)


from asyncflow.data import dataset_transforms as _t  # noqa: E402 - the transformations use DatasetV1
from asyncflow.data import iterator as _iterator  # noqa: E402

Dataset = DatasetV1
DatasetV2 = DatasetV1
