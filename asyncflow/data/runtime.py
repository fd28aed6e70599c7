"""The async pipeline runtime behind `af.data`: programs, function runners and iterator resources.

A dataset becomes, when an iterator is made, a *program*: a tree of plain nodes (`{"op":
"MapDataset", "name": ..., "input": {...}, "fn": 0}`), the function graphs its `map`/`filter`/
`flat_map` functions were traced into, the Python callables of `from_generator` (in-process only),
and the indices of the outer tensors it captures, whose values come in as the inputs of the
`MakeIterator` op. A program comes either live (the graph objects the dataset built, in the
process that built it) or from the graph document (JSON: function graphs as graph documents), as
on a worker of a distributed run.

Running it: `Program.make(env)` instantiates the node tree into a chain of *stages*, async
iterators over `Block`s (rows of elements, one array per flat component with the rows along
dimension 0; see runtime_stages.py). `IteratorResource` is what lives in the session's (or the
worker's) resource container under the iterator's name: it holds the root stage and owns every
task the pipeline starts (prefetch producers, parallel interleave fetches); `initialize` and
`aclose` cancel and await them, so no task outlives the iterator, the session, or a container
reset. `get_next` awaits the next row, and raises OutOfRangeError at the end, every time it is
called again. A failing element (a map function's error) is raised in its place, and the next
call goes on with the rows after it, as TF's iterators do.

Functions: a traced function graph is compiled once into an executor `Plan` (`CompiledFunction`)
and run per block when it is *vectorisable* (every op elementwise, element-derived operands of
one op of one rank, other operands of no higher rank: then running it on n stacked rows is
running it n times), otherwise per element. A function holding Python code (py_func) runs in a
thread pool so that `num_parallel_calls` calls wait at once.

This module sits at the executor's level: it imports the graph model and `exec/`, never the
network layer or the public namespaces, so `ops/dataset_ops.py` may use it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.exec.executor import Step, compile_plan
from asyncflow.exec.frames import FrameStep
from asyncflow.exec.resources import ResourceContainer
from asyncflow.graph import Graph, Tensor
from asyncflow.ops import shape_fns
from asyncflow.shapes import TensorShape

AUTOTUNE = -1
THREADED_AUTOTUNE = 64  # calls in flight for a Python (py_func) function under AUTOTUNE
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def pool() -> ThreadPoolExecutor:
    """The threads that run Python-holding map functions and generators' waits."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="asyncflow-data")
        return _POOL


class Block:
    """`n` rows of elements: `cols[i]` holds component i of every row along dimension 0."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: list[np.ndarray], n: int):
        self.cols = cols
        self.n = n

    @staticmethod
    def of_element(values: Sequence[Any]) -> Block:
        return Block([np.asarray(v)[np.newaxis] for v in values], 1)

    def slice(self, start: int, stop: int) -> Block:
        if start == 0 and stop >= self.n:
            return self
        return Block([c[start:stop] for c in self.cols], min(stop, self.n) - start)

    def row(self, i: int) -> list[np.ndarray]:
        """Row i as read-only arrays (views; 0-d for scalars, strings included)."""
        out = []
        for c in self.cols:
            v = c[i:i + 1].reshape(c.shape[1:])
            v.flags.writeable = False
            out.append(v)
        return out


def where(op: str, name: str) -> str:
    return f"{op} '{name}'"


def check_element(values: Sequence[np.ndarray], types: Sequence[Any], shapes: Sequence[TensorShape],
                  what: str) -> None:
    """InvalidArgumentError naming `what` when an element's components do not match the declared shapes."""
    for i, (v, shape) in enumerate(zip(values, shapes)):
        if shape.ndims is None:
            continue
        dims = shape.as_list()
        if v.ndim != len(dims) or any(d is not None and d != n for d, n in zip(dims, v.shape)):
            raise errors.InvalidArgumentError(
                None, None, f"{what}: component {i} of an element has shape {list(v.shape)}, which does not match "
                            f"the dataset's output shape {dims}")


class ShapeCheck:
    """`check_element` against shapes compiled once into tuples, for the stages that check every row."""

    def __init__(self, types: Sequence[Any], shapes: Sequence[TensorShape], what: str):
        self.types, self.shapes, self.what = list(types), list(shapes), what
        self.dims = [None if s.ndims is None else tuple(s.as_list()) for s in shapes]
        self.exact = [d is not None and None not in d for d in self.dims]

    def __call__(self, values: Sequence[np.ndarray]) -> None:
        for v, dims, exact in zip(values, self.dims, self.exact):
            if dims is None:
                continue
            shape = v.shape
            if exact:
                if shape != dims:
                    break
            elif len(shape) != len(dims) or any(d is not None and d != n for d, n in zip(dims, shape)):
                break
        else:
            return
        check_element(values, self.types, self.shapes, self.what)  # raises, with the message


# -- tasks the pipeline owns --------------------------------------------------------------------------
class TaskOwner:
    """The tasks of one pipeline instance: started here, cancelled and awaited by `cancel_all`."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task] = set()

    def spawn(self, coro: Any, name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def cancel(self) -> list[asyncio.Task]:
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        return tasks

    async def cancel_all(self) -> None:
        tasks = self.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


# -- functions ------------------------------------------------------------------------------------------
def _elementwise(op: Any) -> bool:
    d = op.op_def
    if d is None or d.stateful or d.is_async or d.control_flow:
        return False
    if op.type in ("Placeholder", "Const"):
        return True
    return d.shape_fn is shape_fns.broadcast or (d.shape_fn is shape_fns.same_as_input and len(op._inputs) == 1)


def vectorisable(nodes: Sequence[Any], inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> bool:
    """Whether running the function on n stacked rows equals running it on each row (module docstring)."""
    derived: set[Tensor] = set(inputs)
    for op in nodes:
        if not _elementwise(op):
            return False
        ins = [t for t in op._inputs]
        mine = [t for t in ins if t in derived]
        if not mine:
            continue
        ranks = {t.shape.ndims for t in mine}
        if None in ranks or len(ranks) > 1:
            return False
        rank = ranks.pop()
        for t in ins:
            if t not in derived and (t.shape.ndims is None or t.shape.ndims > rank):
                return False
        derived.update(op._outputs)
    return all(t in derived for t in outputs)


class CompiledFunction:
    """A traced function graph compiled once: feeds are its inputs then its captures."""

    def __init__(self, graph: Graph, inputs: list[Tensor], capture_inputs: list[Tensor], outputs: list[Tensor],
                 capture_index: list[int]):
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.capture_index = capture_index
        self.plan = compile_plan(outputs, [], list(inputs) + list(capture_inputs), ResourceContainer("function"))
        nodes = self.plan.nodes
        self.threaded = any(op.op_def.in_process_only for op in nodes)
        self.vectorised = not self.threaded and vectorisable(nodes, inputs, outputs)
        self.lock = threading.Lock()

    def bind(self, captures: Sequence[Any]) -> BoundFunction:
        return BoundFunction(self, [captures[i] for i in self.capture_index])


class BoundFunction:
    """A compiled function with its captured values: `call(values)` runs it once."""

    def __init__(self, fn: CompiledFunction, captured: list[Any]):
        self.fn = fn
        self.captured = captured
        self.vectorised = fn.vectorised
        self.threaded = fn.threaded

    def _step(self, values: Sequence[Any], lock: threading.Lock) -> Step:
        plan = self.fn.plan
        feeds = list(values) + self.captured
        if plan.frames is not None:
            return FrameStep(plan.frames, feeds, lock, 0, None)
        return Step(plan, feeds, lock, 0, None)

    def call(self, values: Sequence[Any]) -> list[Any]:
        """Runs the function synchronously (its own lock, so threaded calls run at once)."""
        lock = threading.Lock() if self.threaded else self.fn.lock
        step = self._step(values, lock)
        if self.fn.plan.has_async:
            raise errors.UnimplementedError(None, None, "a dataset function with ops that wait (queues, "
                                                        "iterators) is not supported")
        return [np.asarray(v) for v in step.run_sync()]

    def call_block(self, block: Block) -> list[np.ndarray]:
        """The function on every row of `block` at once (vectorised functions only)."""
        outs = self.call(block.cols)
        return [o if o.ndim and o.shape[0] == block.n else np.broadcast_to(o, (block.n,) + o.shape[1:])
                for o in outs]


# -- programs ---------------------------------------------------------------------------------------------
class Program:
    """A pipeline ready to instantiate: the node tree, compiled functions and callables (module docstring)."""

    def __init__(self, root: dict, functions: list[CompiledFunction], callables: list[Callable[..., Any]],
                 inner: list[Program]):
        self.root = root
        self.functions = functions
        self.callables = callables
        self.inner = inner

    @staticmethod
    def live(spec: dict) -> Program:
        """From the objects a dataset built in this process (`spec["functions"]` hold TracedFunctions)."""
        fns = [CompiledFunction(f.graph, f.inputs, f.capture_inputs, f.outputs, idx)
               for f, idx in spec["functions"]]
        inner = [Program.live(s) for s in spec.get("inner", [])]
        return Program(spec["root"], fns, list(spec.get("callables", [])), inner)

    @staticmethod
    def from_document(doc: dict) -> Program:
        """From the graph document's form: function graphs are graph documents, imported here."""
        from asyncflow.graph_import import import_graph_def

        fns = []
        for f in doc["functions"]:
            graph = Graph()
            with graph.as_default():
                import_graph_def(f["graph"], name="")

            def tensors(names: list[str], g: Graph = graph) -> list[Tensor]:
                return [g.get_tensor_by_name(n) for n in names]

            fns.append(CompiledFunction(graph, tensors(f["inputs"]), tensors(f["captures"]), tensors(f["outputs"]),
                                        list(f["capture_index"])))
        inner = [Program.from_document(s) for s in doc.get("inner", [])]
        if doc.get("callables"):
            raise errors.InvalidArgumentError(None, None, "this dataset calls Python functions of the process that "
                                                          "built it (from_generator, py_func); it cannot run here")
        return Program(doc["root"], fns, [], inner)

    def make(self, env: Env) -> Any:
        """The root stage of a fresh instance of the pipeline."""
        from asyncflow.data import runtime_transforms  # the stages: they import this module

        return runtime_transforms.build(self.root, env)()


class Env:
    """What one instance of a program sees: its captured values, its program, the owner of its tasks, and
    whether its Python (py_func maps, generators) runs in the thread pool (`threaded`: the inner pipelines
    of a parallel interleave, whose waits must overlap; see runtime_interleave.py)."""

    def __init__(self, program: Program, captures: Sequence[Any], owner: TaskOwner, threaded: bool = False):
        self.program = program
        self.captures = list(captures)
        self.owner = owner
        self.threaded = threaded
        self._bound: dict[int, BoundFunction] = {}

    def function(self, index: int) -> BoundFunction:
        fn = self._bound.get(index)
        if fn is None:
            fn = self._bound[index] = self.program.functions[index].bind(self.captures)
        return fn

    def capture(self, index: int) -> Any:
        return self.captures[index]


# -- the iterator resource ------------------------------------------------------------------------------------
class IteratorResource:
    """One iterator in a resource container: the root stage of its current pipeline and its tasks."""

    def __init__(self, name: str, types: Sequence[Any], shapes: Sequence[TensorShape]):
        self.name = name
        self.types = list(types)
        self.shapes = list(shapes)
        self.stage: Any = None
        self.owner = TaskOwner()
        self.exhausted = False
        self._lock = asyncio.Lock()
        self._block: Block | None = None
        self._pos = 0

    def check_types(self, types: Sequence[Any], where_: str) -> None:
        if [t.base_dtype for t in types] != [t.base_dtype for t in self.types]:
            raise errors.InvalidArgumentError(
                None, None, f"{where_}: the iterator '{self.name}' produces {[t.name for t in self.types]}, but the "
                            f"op expects {[t.name for t in types]}")

    async def initialize(self, program: Program, captures: Sequence[Any]) -> None:
        async with self._lock:
            await self._close_pipeline()
            self.owner = TaskOwner()
            self.stage = program.make(Env(program, captures, self.owner))
            self.exhausted = False

    async def get_next(self) -> list[np.ndarray]:
        async with self._lock:
            if self.stage is None:
                raise errors.FailedPreconditionError(
                    None, None, "GetNext() failed because the iterator has not been initialized. Ensure that you "
                                "have run the initializer operation for this iterator before getting the next "
                                "element.")
            block = self._block
            while block is None or self._pos >= block.n:
                if self.exhausted:
                    raise errors.OutOfRangeError(None, None, "End of sequence")
                block = await self.stage.next()
                if block is None:
                    self.exhausted = True
                    self._block = None
                    await self._close_pipeline(keep_stage=True)
                    raise errors.OutOfRangeError(None, None, "End of sequence")
                self._block, self._pos = block, 0
            row = block.row(self._pos)
            self._pos += 1
            return row

    async def _close_pipeline(self, keep_stage: bool = False) -> None:
        stage = self.stage
        self._block = None
        if stage is not None:
            await stage.aclose()
        await self.owner.cancel_all()
        if not keep_stage:
            self.stage = None

    async def aclose(self) -> None:
        """Cancels and awaits the pipeline's tasks (session close, container reset, re-initialisation)."""
        await self._close_pipeline()

    def abort(self, reason: str) -> None:
        """The container was reset: the pipeline's tasks are cancelled (they finish on the loop)."""
        self.owner.cancel()
        self.stage = None
        self._block = None
