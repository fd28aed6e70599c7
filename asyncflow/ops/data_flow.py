"""Queue ops and classes, as TF1 declares them: FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue and
PriorityQueue, with enqueue, enqueue_many, dequeue, dequeue_many, dequeue_up_to, close, size and
is_closed; and `count_up_to` (TF's state op), the epoch counter of the input producers.

A queue op (`FIFOQueueV2`, ...) outputs a `resource` handle: the `Queue` object of
`data_flow_queues.py`, kept in the op's resource container (`container` attr, or `af.container`)
under its shared name, or its op name. Enqueue and dequeue kernels are coroutines that `await`
the queue; a step that waits on a queue runs on the session's event loop, and several steps
(from several threads via `run`, or concurrent `arun`s) share the queue. `lookup_resource` is how
every resource op of asyncflow (queues, accumulators, readers) finds its state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import get_seed, name_scope
from asyncflow.ops.data_flow_queues import FifoStore, PriorityStore, Queue, ShuffleStore
from asyncflow.ops.registry import ALL_TYPES, REQUIRED, BuildContext, TypeList, constant_value, convert_to_tensor, op
from asyncflow.shapes import Dimension, TensorShape, as_shape, unknown_shape

_MAXINT32 = 2**31 - 1


# -- resources in containers ----------------------------------------------------------------------------
def lookup_resource(k: Any, kind: str, make: Callable[[], Any], signature: Any = None) -> Any:
    """The resource of the op `k` (its container, its shared name or op name), made on first use.

    A resource found under the name but made with other attrs (two queues sharing a name with
    different capacities) is an InvalidArgumentError naming both."""
    container = k.resources.container(k.container)
    name = k.shared_name or k.name
    found = container.resource(kind, name, make)
    if signature is not None and found.signature != signature:
        raise errors.InvalidArgumentError(
            None, None, f"{k.op_type} '{k.name}': the shared {kind} '{name}' was made with {found.signature}, "
                        f"this op asks for {signature}")
    return found


def _scalar_handle(b: BuildContext) -> TensorShape:
    return TensorShape([])


def _shape_list(shapes: Any) -> list[TensorShape]:
    return [as_shape(s) for s in (shapes or [])]


# -- the queue ops -------------------------------------------------------------------------------------------
_QUEUE_ATTRS = {"shapes": [], "capacity": -1, "container": "", "shared_name": ""}
_COMPONENTS = {"component_types": TypeList(ALL_TYPES)}
_QUEUE_TRAITS = {"stateful": True, "differentiable": False}
_WAITING_QUEUE_TRAITS = {"is_async": True, "try_sync": True, **_QUEUE_TRAITS}  # see data_flow_queues.py


def _prepare_queue(k: Any) -> None:
    """Once per plan: what a queue op's resource must match when shared (its attrs)."""
    k.signature = (k.op_type, [d.name for d in k.component_types], [s.as_list() for s in _shape_list(k.shapes)],
                   k.capacity, getattr(k, "min_after_dequeue", 0))


def _new_queue(k: Any, kind: str, store: Any, component_types: list[dtypes.DType] | None = None,
               shapes: list[TensorShape] | None = None) -> Queue:
    signature = k.signature
    return lookup_resource(k, "queue", lambda: Queue(
        kind, k.shared_name or k.name, component_types or k.component_types,
        _shape_list(k.shapes) if shapes is None else shapes, k.capacity, store(),
        getattr(k, "min_after_dequeue", 0), signature), signature)


_QUEUE_OP = {**_QUEUE_TRAITS, "prepare": _prepare_queue}


@op("FIFOQueueV2", outputs="handle: resource", types=_COMPONENTS, attrs=_QUEUE_ATTRS, shape=_scalar_handle,
    **_QUEUE_OP)
def fifo_queue_v2(k):
    return _new_queue(k, "FIFOQueue", FifoStore)


@op("PaddingFIFOQueueV2", outputs="handle: resource", types=_COMPONENTS, attrs=_QUEUE_ATTRS,
    shape=_scalar_handle, **_QUEUE_OP)
def padding_fifo_queue_v2(k):
    return _new_queue(k, "PaddingFIFOQueue", FifoStore)


def _shuffle_store(k: Any) -> Callable[[], ShuffleStore]:
    def make() -> ShuffleStore:
        if k.seed == 0 and k.seed2 == 0:
            return ShuffleStore(np.random.Generator(np.random.Philox()))
        return ShuffleStore(np.random.Generator(np.random.Philox(key=(int(k.seed) << 64) | int(k.seed2))))

    return make


@op("RandomShuffleQueueV2", outputs="handle: resource", types=_COMPONENTS,
    attrs={**_QUEUE_ATTRS, "min_after_dequeue": 0, "seed": 0, "seed2": 0}, shape=_scalar_handle, **_QUEUE_OP)
def random_shuffle_queue_v2(k):
    return _new_queue(k, "RandomShuffleQueue", _shuffle_store(k))


@op("PriorityQueueV2", outputs="handle: resource", types=_COMPONENTS,
    attrs={**_QUEUE_ATTRS, "shapes": REQUIRED}, shape=_scalar_handle, **_QUEUE_OP)
def priority_queue_v2(k):
    # As TF: the attrs describe the value components; component 0, the priority, is an int64 scalar.
    shapes = _shape_list(k.shapes)
    return _new_queue(k, "PriorityQueue", PriorityStore, [dtypes.int64] + list(k.component_types),
                      [TensorShape([])] + shapes if shapes else [])


_QUEUE_OP_TYPES = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "PriorityQueueV2")


def _element_shapes(b: BuildContext, n: int) -> list[TensorShape]:
    """The element shapes a dequeue gives: known when the handle comes straight from a queue op."""
    source = b.inputs[0].op
    if source.type in _QUEUE_OP_TYPES:
        shapes = _shape_list(source.get_attr("shapes"))
        if source.type == "PriorityQueueV2" and shapes:
            shapes = [TensorShape([])] + shapes
        if len(shapes) == n:
            return shapes
    return [unknown_shape() for _ in range(n)]


def _dequeue_shape(b: BuildContext) -> list[TensorShape]:
    return _element_shapes(b, len(b.attrs["component_types"]))


def _dequeue_many_shape(b: BuildContext) -> list[TensorShape]:
    n = b.const(1)
    first = TensorShape([Dimension(int(n)) if n is not None and np.ndim(n) == 0 else None])
    return [first.concatenate(s) for s in _dequeue_shape(b)]


def _dequeue_up_to_shape(b: BuildContext) -> list[TensorShape]:
    return [TensorShape([None]).concatenate(s) for s in _dequeue_shape(b)]


def _count(k: Any, n: Any) -> int:
    n = np.asarray(n)
    if n.ndim != 0 or int(n) < 0:
        raise ValueError(f"{k.op_type} '{k.name}': 'n' must be a non-negative scalar, got {n.tolist()}")
    return int(n)


_ENQUEUE = {"inputs": "handle: resource, components: Tcomponents", "types": {"Tcomponents": TypeList(ALL_TYPES)},
            "attrs": {"timeout_ms": -1}, **_WAITING_QUEUE_TRAITS}


@op("QueueEnqueueV2", **_ENQUEUE)
async def queue_enqueue_v2(k, queue, *components):
    queue.check_types(k.Tcomponents)
    await queue.enqueue(queue.element_of(components))


@op("QueueEnqueueManyV2", **_ENQUEUE)
async def queue_enqueue_many_v2(k, queue, *components):
    queue.check_types(k.Tcomponents)
    await queue.enqueue(queue.elements_of_batch(components))


@op("QueueDequeueV2", inputs="handle: resource", outputs="components: component_types", types=_COMPONENTS,
    attrs={"timeout_ms": -1}, shape=_dequeue_shape, **_WAITING_QUEUE_TRAITS)
async def queue_dequeue_v2(k, queue):
    queue.check_types(k.component_types)
    return queue.one(await queue.dequeue(1, False))


async def _dequeue_batch(k: Any, queue: Queue, n: Any, allow_small: bool) -> list[np.ndarray]:
    queue.check_types(k.component_types)
    count = _count(k, n)
    queue.require_shapes(k.name)  # before anything leaves the queue
    return queue.batch(await queue.dequeue(count, allow_small))


@op("QueueDequeueManyV2", inputs="handle: resource, n: int32", outputs="components: component_types",
    types=_COMPONENTS, attrs={"timeout_ms": -1}, shape=_dequeue_many_shape, **_WAITING_QUEUE_TRAITS)
async def queue_dequeue_many_v2(k, queue, n):
    return await _dequeue_batch(k, queue, n, False)


@op("QueueDequeueUpToV2", inputs="handle: resource, n: int32", outputs="components: component_types",
    types=_COMPONENTS, attrs={"timeout_ms": -1}, shape=_dequeue_up_to_shape, **_WAITING_QUEUE_TRAITS)
async def queue_dequeue_up_to_v2(k, queue, n):
    return await _dequeue_batch(k, queue, n, True)


@op("QueueCloseV2", inputs="handle: resource", attrs={"cancel_pending_enqueues": False},
    **_WAITING_QUEUE_TRAITS)
def queue_close_v2(k, queue):
    queue.close(k.cancel_pending_enqueues)  # wakes waiters, from any thread (data_flow_queues._settle)


@op("QueueSizeV2", inputs="handle: resource", outputs="size: int32", shape=_scalar_handle, **_QUEUE_TRAITS)
def queue_size_v2(k, queue):
    return np.int32(len(queue.store))


@op("QueueIsClosedV2", inputs="handle: resource", outputs="is_closed: bool", shape=_scalar_handle,
    **_QUEUE_TRAITS)
def queue_is_closed_v2(k, queue):
    return np.bool_(queue.closed)


# -- the Python classes ------------------------------------------------------------------------------------
def _as_type_list(types: Any) -> list[dtypes.DType]:
    if types is None:
        raise TypeError("A queue needs its component dtypes.")
    return [dtypes.as_dtype(t) for t in (types if isinstance(types, (list, tuple)) else [types])]


def _as_shape_list(shapes: Any, unknown_dim_allowed: bool = False) -> list[TensorShape] | None:
    """TF's rule: None, one shape, or a list of shapes; fully defined unless `unknown_dim_allowed`."""
    if unknown_dim_allowed and (not isinstance(shapes, (list, tuple)) or not shapes
                                or any(s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError(f"Shapes must be a TensorShape or a list or tuple of TensorShapes, got {type(shapes)} "
                        f"instead.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    out = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in out):
        raise ValueError(f"All shapes must be fully defined: {out}")
    if any(s.ndims is None for s in out):
        raise ValueError(f"All shapes must have a defined rank: {out}")
    return out


def _as_name_list(names: Any, types: list[dtypes.DType]) -> list[str] | None:
    if names is None:
        return None
    names = list(names) if isinstance(names, (list, tuple)) else [names]
    if len(names) != len(types):
        raise ValueError(f"List of names must have the same length as the list of dtypes, received "
                         f"len(names)={len(names)},len(dtypes)={len(types)}")
    return names


class QueueBase:
    """`af.QueueBase`: the methods every queue shares; wraps the queue op's resource handle."""

    def __init__(self, dtypes: list[dtypes.DType], shapes: list[TensorShape] | None, names: list[str] | None,
                 queue_ref: Any):
        self._dtypes = list(dtypes)
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError(f"Queue shapes must have the same length as dtypes, received len(shapes)="
                                 f"{len(shapes)}, len(dtypes)={len(self._dtypes)}")
            self._shapes = [as_shape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in self._dtypes]
        if names is not None and len(names) != len(self._dtypes):
            raise ValueError(f"Queue names must have the same length as dtypes,received len(names)={len(names)},"
                             f"len {len(self._dtypes)}")
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._queue_ref.op.name)
    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    def _check_enqueue_dtypes(self, vals: Any) -> list[Any]:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                                 f"{sorted(vals.keys())},Queue: {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue '{self.name}' has {len(self._dtypes)} components, the value to enqueue has "
                             f"{len(vals)}")
        return [convert_to_tensor(v, dtype=dt, name=f"component_{i}") for i, (v, dt) in enumerate(zip(vals,
                                                                                                      self._dtypes))]

    @staticmethod
    def _scope_vals(vals: Any) -> list[Any]:
        if isinstance(vals, (list, tuple)):
            return list(vals)
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def enqueue(self, vals: Any, name: str | None = None) -> Any:
        """Enqueues one element (a tensor, a list of tensors, or a dict by component name); blocks when full."""
        with name_scope(name, f"{self._name}_enqueue", self._scope_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            for t, shape in zip(tensors, self._shapes):
                t.shape.assert_is_compatible_with(shape)
            return queue_enqueue_v2(self._queue_ref, tensors, name=scope)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Any:
        """Enqueues the rows (dimension 0) of each component as elements."""
        with name_scope(name, f"{self._name}_EnqueueMany", self._scope_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            batch = Dimension(tensors[0].shape.with_rank_at_least(1)[0].value)
            for t, shape in zip(tensors, self._shapes):
                batch = batch.merge_with(t.shape.with_rank_at_least(1)[0])
                t.shape[1:].assert_is_compatible_with(shape)
            return queue_enqueue_many_v2(self._queue_ref, tensors, name=scope)

    def _dequeue_return_value(self, tensors: list[Any]) -> Any:
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    def dequeue(self, name: str | None = None) -> Any:
        """Dequeues one element; blocks while the queue is empty; OutOfRangeError once closed and drained."""
        ret = queue_dequeue_v2(self._queue_ref, component_types=self._dtypes,
                               name=name if name is not None else f"{self._name}_Dequeue")
        for t, shape in zip(ret, self._shapes):
            t.set_shape(shape)
        return self._dequeue_return_value(ret)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """Dequeues `n` elements stacked along a new dimension 0; OutOfRangeError if closed with fewer."""
        ret = queue_dequeue_many_v2(self._queue_ref, n, component_types=self._dtypes,
                                    name=name if name is not None else f"{self._name}_DequeueMany")
        value = constant_value(ret[0].op.inputs[1])
        batch = TensorShape([int(value) if value is not None and np.ndim(value) == 0 else None])
        for t, shape in zip(ret, self._shapes):
            t.set_shape(batch.concatenate(shape))
        return self._dequeue_return_value(ret)

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """As `dequeue_many`, but a closed queue with fewer than `n` (and more than 0) gives what it has."""
        ret = queue_dequeue_up_to_v2(self._queue_ref, n, component_types=self._dtypes,
                                     name=name if name is not None else f"{self._name}_DequeueUpTo")
        for t, shape in zip(ret, self._shapes):
            t.set_shape(TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Any:
        """No more enqueues; dequeues drain what is left, then fail. `cancel_pending_enqueues`
        also fails the enqueues still blocked (CancelledError)."""
        return queue_close_v2(self._queue_ref, cancel_pending_enqueues=cancel_pending_enqueues,
                              name=name if name is not None else f"{self._name}_Close")

    def is_closed(self, name: str | None = None) -> Any:
        return queue_is_closed_v2(self._queue_ref, name=name if name is not None else f"{self._name}_Is_Closed")

    def size(self, name: str | None = None) -> Any:
        return queue_size_v2(self._queue_ref, name=name if name is not None else f"{self._name}_Size")


class FIFOQueue(QueueBase):
    """`af.FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue")`."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "fifo_queue"):
        types = _as_type_list(dtypes)
        shape_list = _as_shape_list(shapes)
        names = _as_name_list(names, types)
        ref = fifo_queue_v2(component_types=types, shapes=shape_list or [], capacity=capacity,
                            shared_name=shared_name or "", name=name)
        super().__init__(types, shape_list, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose shapes may have unknown dimensions; `dequeue_many` pads them with zeros."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any, names: Any = None, shared_name: str | None = None,
                 name: str = "padding_fifo_queue"):
        types = _as_type_list(dtypes)
        shape_list = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, types)
        if len(types) != len(shape_list):
            raise ValueError(f"Shapes must be provided for all components, but received {len(types)} dtypes and "
                             f"{len(shape_list)} shapes.")
        ref = padding_fifo_queue_v2(component_types=types, shapes=shape_list, capacity=capacity,
                                    shared_name=shared_name or "", name=name)
        super().__init__(types, shape_list, names, ref)


class RandomShuffleQueue(QueueBase):
    """Dequeues elements in a random order, keeping at least `min_after_dequeue` until closed."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 seed: int | None = None, shared_name: str | None = None, name: str = "random_shuffle_queue"):
        types = _as_type_list(dtypes)
        shape_list = _as_shape_list(shapes)
        names = _as_name_list(names, types)
        seed1, seed2 = _queue_seeds(seed, shared_name)
        ref = random_shuffle_queue_v2(component_types=types, shapes=shape_list or [], capacity=capacity,
                                      min_after_dequeue=min_after_dequeue, seed=seed1, seed2=seed2,
                                      shared_name=shared_name or "", name=name)
        super().__init__(types, shape_list, names, ref)


def _queue_seeds(seed: int | None, shared_name: str | None) -> tuple[int, int]:
    """TF1's seeds for a RandomShuffleQueue: get_seed, and a shared queue's seed2 from its name."""
    seed1, seed2 = get_seed(seed)
    if seed1 is None and seed2 is None:
        return 0, 0
    seed1, seed2 = int(seed1) % _MAXINT32, int(seed2) % _MAXINT32
    if (seed1, seed2) == (0, 0):
        seed2 = _MAXINT32
    if seed is None and shared_name is not None:
        seed2 = int(hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()[:8], 16) & 0x7FFFFFFF
    return seed1, seed2


class PriorityQueue(QueueBase):
    """Dequeues the element of lowest priority first. Each element's component 0 is its int64
    priority (a scalar; a vector for enqueue_many), followed by components of `types`."""

    def __init__(self, capacity: int, types: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "priority_queue"):
        type_list = _as_type_list(types)
        shape_list = _as_shape_list(shapes)
        ref = priority_queue_v2(component_types=type_list, shapes=shape_list or [], capacity=capacity,
                                shared_name=shared_name or "", name=name)
        super().__init__([dtypes.int64] + type_list, [TensorShape([])] + shape_list if shape_list else None,
                         names, ref)


# -- count_up_to ----------------------------------------------------------------------------------------------
# TF keeps CountUpTo with the state ops; it lives here beside its one user, the epoch limit of
# the input producers (`af.train.limit_epochs`).
@op("CountUpTo", inputs="ref: Ref(T)", outputs="output: T", types={"T": (dtypes.int32, dtypes.int64)},
    attrs={"limit": REQUIRED}, shape=lambda b: b.shape(0), stateful=True, differentiable=False)
def count_up_to_op(k, ref):
    before = ref.read()
    if before.shape != ():
        raise ValueError(f"CountUpTo '{k.name}': the variable must be a scalar, got shape {list(before.shape)}")
    if before >= k.limit:
        raise errors.OutOfRangeError(None, None, f"Reached limit of {k.limit}")
    ref.assign(np.asarray(before + 1, dtype=before.dtype), fresh=True)
    return before


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Any:
    """`af.count_up_to`: increments the int variable `ref` and gives its old value; OutOfRangeError
    once it has reached `limit`."""
    target = ref._ref() if hasattr(ref, "_ref") else ref
    return count_up_to_op(target, limit=int(limit), name=name)


__all__ = [
    "QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue", "count_up_to",
]
