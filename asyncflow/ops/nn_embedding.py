"""`af.nn.embedding_lookup`, and the partition/stitch ops that its sharded form is built from.

One params tensor (or Variable) is a GatherV2 colocated with it. A list of shards is TF1's
graph: ids are assigned to shards by the "mod" or "div" strategy, split with DynamicPartition,
gathered per shard, and put back in order with ParallelDynamicStitch. DynamicPartition,
DynamicStitch and ParallelDynamicStitch are TF's data-flow ops (`tf.dynamic_partition`,
`tf.dynamic_stitch`); they are declared here because embedding_lookup is their main user.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Operation, Tensor, colocate_with, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.registry import (
    ALL_TYPES,
    REQUIRED,
    BuildContext,
    constant,
    constant_value,
    convert_to_tensor,
    needed_op,
    op,
)
from asyncflow.shapes import TensorShape, unknown_shape

_op = needed_op  # ops of other modules, looked up when a composite is built


# -- DynamicPartition ---------------------------------------------------------------------------------
def _dynamic_partition_shape(b: BuildContext) -> list[TensorShape]:
    data, parts = b.shape(0), b.shape(1)
    n = b.attrs["num_partitions"]
    if n < 1:
        raise b.error(f"num_partitions must be at least 1, got {n}")
    if data.ndims is None or parts.ndims is None:
        return [unknown_shape() for _ in range(n)]
    if data.ndims < parts.ndims or not data[: parts.ndims].is_compatible_with(parts):
        raise b.error(f"partitions shape {parts} must be a prefix of data shape {data}")
    return [TensorShape([None]).concatenate(data[parts.ndims:]) for _ in range(n)]


@op("DynamicPartition", inputs="data: T, partitions: int32", outputs="outputs: num_partitions * T",
    types={"T": ALL_TYPES}, attrs={"num_partitions": REQUIRED}, shape=_dynamic_partition_shape)
def dynamic_partition_op(k, data, partitions):
    data, partitions = np.asarray(data), np.asarray(partitions)
    if data.shape[: partitions.ndim] != partitions.shape:
        raise ValueError(f"DynamicPartition '{k.name}': data.shape must start with partitions.shape, got data "
                         f"shape {list(data.shape)} and partitions shape {list(partitions.shape)}")
    flat = partitions.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= k.num_partitions))
    if bad.size:
        where = np.unravel_index(bad[0], partitions.shape) if partitions.ndim else ()
        index = ",".join(str(int(i)) for i in where)
        raise ValueError(f"DynamicPartition '{k.name}': partitions[{index}] = {int(flat[bad[0]])} is not in "
                         f"[0, {k.num_partitions})")
    rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
    return [rows[flat == p] for p in range(k.num_partitions)]


@dynamic_partition_op.gradient
def _dynamic_partition_grad(op: Operation, *grads: Any) -> list[Any]:
    """TF's rule: partition the positions 0..n-1 like the data, and stitch the gradients back to them."""
    data, partitions = op.inputs
    count = partitions.shape.num_elements()
    prefix = array.shape(partitions)
    positions = math.range(0, count if count is not None else math.reduce_prod(prefix))
    parts = dynamic_partition_op(array.reshape(positions, prefix), partitions,
                                 num_partitions=op.get_attr("num_partitions"))
    stitched = ParallelDynamicStitch(parts, [convert_to_tensor(g) for g in grads])
    return [array.reshape(stitched, array.shape(data)), None]


def dynamic_partition(data: Any, partitions: Any, num_partitions: int, name: str | None = None) -> list[Tensor]:
    """`af.dynamic_partition`: splits `data` into `num_partitions` tensors by the index in `partitions`."""
    return dynamic_partition_op(data, partitions, num_partitions=int(num_partitions), name=name)


# -- DynamicStitch / ParallelDynamicStitch ------------------------------------------------------------------
def _stitch_shape(b: BuildContext) -> TensorShape:
    indices, data = b.shapes(0), b.shapes(1)
    element = unknown_shape()
    for idx, d in zip(indices, data):
        if idx.ndims is None or d.ndims is None:
            continue
        if d.ndims < idx.ndims or not d[: idx.ndims].is_compatible_with(idx):
            raise b.error(f"data shape {d} must start with the shape of its indices {idx}")
        try:
            element = element.merge_with(d[idx.ndims:])
        except ValueError:
            raise b.error(f"all data must have the same element shape, got {element} and {d[idx.ndims:]}") from None
    values = [constant_value(t) for t in b.inputs[0]]
    first = None
    if all(v is not None for v in values):
        first = max((int(np.max(v)) for v in values if np.size(v)), default=-1) + 1
    return TensorShape([first]).concatenate(element)


def _stitch(k, *args):
    n = len(args) // 2
    indices, data = [np.asarray(i) for i in args[:n]], [np.asarray(d) for d in args[n:]]
    element = None
    for i, (idx, d) in enumerate(zip(indices, data)):
        if d.shape[: idx.ndim] != idx.shape:
            raise ValueError(f"{k.op_type} '{k.name}': data[{i}].shape = {list(d.shape)} does not start with "
                             f"indices[{i}].shape = {list(idx.shape)}")
        rest = d.shape[idx.ndim:]
        if element is not None and rest != element:
            raise ValueError(f"{k.op_type} '{k.name}': data[{i}] has element shape {list(rest)}, expected "
                             f"{list(element)}")
        element = rest
        if idx.size and idx.min() < 0:
            raise ValueError(f"{k.op_type} '{k.name}': indices[{i}] has a negative index {int(idx.min())}")
    first = max((int(idx.max()) for idx in indices if idx.size), default=-1) + 1
    shape = (first,) + tuple(element or ())
    dtype = k.out_dtypes[0]
    merged = np.full(shape, b"", dtype=object) if dtype is np.object_ else np.zeros(shape, dtype=dtype)
    for idx, d in zip(indices, data):  # later entries win on duplicate indices, as TF's DynamicStitch
        flat = idx.reshape(-1)
        rows = d.reshape((idx.size,) + tuple(element or ()))
        # numpy leaves the winner among repeated fancy indices unspecified: keep each index's last entry
        _, last_from_end = np.unique(flat[::-1], return_index=True)
        keep = flat.size - 1 - last_from_end
        merged[flat[keep]] = rows[keep]
    return merged


DynamicStitch = op("DynamicStitch", inputs="indices: N * int32, data: N * T", outputs="merged: T",
                   types={"T": ALL_TYPES}, shape=_stitch_shape)(_stitch)
ParallelDynamicStitch = op("ParallelDynamicStitch", inputs="indices: N * int32, data: N * T",
                           outputs="merged: T", types={"T": ALL_TYPES}, shape=_stitch_shape)(_stitch)


@ParallelDynamicStitch.gradient
def _parallel_dynamic_stitch_grad(op: Operation, grad: Any) -> list[Any]:
    """TF's rule: each data input gets the gradient gathered at its indices (duplicates are undefined here)."""
    n = len(op.inputs) // 2
    grad = convert_to_tensor(grad)
    return [None] * n + [array.gather(grad, idx) for idx in op.inputs[:n]]


@DynamicStitch.gradient
def _dynamic_stitch_grad(op: Operation, grad: Any) -> list[Any]:
    """Each data input gets the gradient gathered at its indices, and zero where a later entry overwrote it.

    TF's `_DynamicStitchGrads` also hands the overwritten entries the gradient of the slot they lost,
    which finite differences refute (they do not affect the output); the mask is built only when the
    indices are not known at build time to be free of duplicates.
    """
    n = len(op.inputs) // 2
    indices, data = op.inputs[:n], op.inputs[n:]
    grad = convert_to_tensor(grad)
    known = [constant_value(idx) for idx in indices]
    if all(v is not None for v in known):
        flat = np.concatenate([np.reshape(v, -1) for v in known])
        if np.unique(flat).size == flat.size:
            return [None] * n + [array.gather(grad, idx) for idx in indices]
    # Number every data entry across the inputs in order; a slot keeps the highest number written to it.
    ids, start = [], constant(0, dtype=dtypes.int32)
    for idx in indices:
        stop = start + array.size(idx)
        ids.append(array.reshape(math.range(start, stop), array.shape(idx)))
        start = stop
    winners = DynamicStitch(list(indices), ids)
    values = []
    for idx, entry_ids, d in zip(indices, ids, data):
        flat_idx = array.reshape(idx, np.array([-1], np.int32))
        kept = math.equal(array.gather(winners, flat_idx), array.reshape(entry_ids, np.array([-1], np.int32)))
        rows = array.gather(grad, flat_idx)
        values.append(array.reshape(_op("Select")(kept, rows, array.zeros_like(rows)), array.shape(d)))
    return [None] * n + values


def dynamic_stitch(indices: Any, data: Any, name: str | None = None) -> Tensor:
    """`af.dynamic_stitch`: merged[indices[m][i]] = data[m][i]."""
    return DynamicStitch(list(indices), list(data), name=name)


# -- embedding_lookup ------------------------------------------------------------------------------------------
def _clip(params: Tensor, ids: Tensor, max_norm: Any) -> Tensor:
    """TF's `_clip`: each embedding (the dimensions after the ids') scaled to an L2 norm of at most max_norm."""
    if max_norm is None:
        return params
    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    if ids_rank is None or params_rank is None:
        raise NotImplementedError("embedding_lookup with max_norm needs ids and params of known rank")
    axes = list(range(ids_rank, params_rank))
    with name_scope(None, "clip_by_norm", [params, max_norm]) as scope:
        values = convert_to_tensor(params, name="t")
        l2sum = math.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = _op("Select")(pred, l2sum, array.ones_like(l2sum))
        l2norm = _op("Select")(pred, _op("Sqrt")(l2sum_safe), l2sum)
        intermediate = values * max_norm
        return array.identity(intermediate / math.maximum(l2norm, max_norm), name=scope)


def _assign_shards(flat_ids: Tensor, params: list[Tensor], strategy: str) -> tuple[Tensor, Tensor]:
    """(shard of each id, its row within that shard) under TF's "mod" or "div" strategy."""
    n = len(params)
    if strategy == "mod":
        return flat_ids % n, flat_ids // n
    if strategy != "div":
        raise ValueError(f"Unrecognized partition strategy: {strategy}. Must be one of either `mod` or `div`.")
    rows = [p.shape[0].value if p.shape.ndims else None for p in params]
    if all(r is not None for r in rows):
        num_total: Any = constant(sum(rows), dtype=flat_ids.dtype.base_dtype)
    else:
        sizes = [r if r is not None else array.shape(p)[0] for r, p in zip(rows, params)]
        num_total = math.reduce_sum(math.cast(array.stack(sizes), flat_ids.dtype.base_dtype))
    per_shard = num_total // n
    extras = num_total % n
    assignments = math.maximum(flat_ids // (per_shard + 1), (flat_ids - extras) // per_shard)
    new_ids = _op("Select")(assignments < extras, flat_ids % (per_shard + 1), (flat_ids - extras) % per_shard)
    return assignments, new_ids


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm: Any = None) -> Tensor:
    """`af.nn.embedding_lookup`: the rows of `params` at `ids`; `params` may be a list of shards."""
    if params is None:
        raise ValueError("params must be specified")
    from asyncflow.partitioned_variables import PartitionedVariable

    if isinstance(params, PartitionedVariable):  # its shards, as TF1 (row split = the "div" strategy's)
        params = list(params)
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    if not isinstance(params, (list, tuple)):
        params = [params]
    params = list(params)
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        n = len(params)
        params = [convert_to_tensor(p, name=f"params_{i}") for i, p in enumerate(params)]
        ids = convert_to_tensor(ids, name="ids")
        if n == 1:
            with colocate_with(params[0]):
                result = _clip(array.gather(params[0], ids, name=scope), ids, max_norm)
            # The result must not inherit the params' colocation (TF1 does the same).
            return array.identity(result)
        flat_ids = array.reshape(ids, np.array([-1], np.int32))
        original_indices = _op("Range")(0, array.size(flat_ids), 1, name="range")
        assignments, new_ids = _assign_shards(flat_ids, params, partition_strategy)
        assignments = math.cast(assignments, dtypes.int32)
        gather_ids = dynamic_partition(new_ids, assignments, n)
        pindices = dynamic_partition(original_indices, assignments, n)
        partitioned = []
        for p in range(n):
            with colocate_with(params[p]):
                partitioned.append(array.gather(params[p], gather_ids[p]))
        ret = ParallelDynamicStitch(pindices, partitioned, name=scope)
        element = params[0].shape[1:]
        for p in params[1:]:
            element = element.merge_with(p.shape[1:])
        ids_d = constant(np.array(ids.shape.as_list(), np.int32), name="Shape") if ids.shape.is_fully_defined() \
            else array.shape(ids)
        if element.is_fully_defined():
            element_d: Any = element.as_list()
        else:
            with colocate_with(params[0]):
                element_d = array.shape(params[0])[1:]
        target = array.concat([ids_d, element_d], 0)
        ret = array.reshape(ret, target)
        ret.set_shape(ids.shape.concatenate(element))
        return _clip(ret, ids, max_norm)



# -- embedding_lookup_sparse / safe_embedding_lookup_sparse ------------------------------------------------------
def _shards(params: Any) -> list[Any]:
    from asyncflow.partitioned_variables import PartitionedVariable

    if isinstance(params, PartitionedVariable):
        return list(params)
    return list(params) if isinstance(params, (list, tuple)) else [params]


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any, partition_strategy: str = "mod",
                            name: str | None = None, combiner: str | None = None, max_norm: Any = None) -> Tensor:
    """`af.nn.embedding_lookup_sparse`: per row of `sp_ids` (a rank-2 SparseTensor, rows in order), the
    sum/mean/sqrtn of the embeddings of its ids, weighted by `sp_weights` when given.

    TF1's graph: the unique ids are looked up once (`embedding_lookup`, so the gradient to `params`
    is an IndexedSlices) and combined with SparseSegmentSum/Mean/SqrtN, or, with weights, scaled and
    combined with SegmentSum (a weighted mean divides by the weights' sum, 0 where it is 0, as TF 2's
    compat.v1)."""
    from asyncflow.ops.sparse_math import SEGMENT_OPS
    from asyncflow.sparse_tensor import SparseTensor

    combiner = "mean" if combiner is None else combiner
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = _shards(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    ignore_weights = sp_weights is None
    if not ignore_weights:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"sp_weights must be either None or SparseTensor,got {type(sp_weights)}")
        for what in ("values", "indices", "dense_shape"):
            a, b = getattr(sp_ids, what).shape, getattr(sp_weights, what).shape
            if not a.is_compatible_with(b):
                raise ValueError(f"embedding_lookup_sparse: sp_ids.{what} has shape {a} but sp_weights.{what} "
                                 f"has shape {b}")
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids.indices, sp_ids.values]) as scope:
        segment_ids = sp_ids.indices[:, 0]
        if segment_ids.dtype != dtypes.int32:
            segment_ids = math.cast(segment_ids, dtypes.int32)
        ids, idx = _op("Unique")(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy, max_norm=max_norm)
        if ignore_weights:
            kind = {"sum": "Sum", "mean": "Mean", "sqrtn": "SqrtN"}[combiner]
            return SEGMENT_OPS[(kind, False)](embeddings, idx, segment_ids, name=scope)
        weights = sp_weights.values
        if weights.dtype != embeddings.dtype:
            weights = math.cast(weights, embeddings.dtype)
        embeddings = array.gather(embeddings, idx)
        ones = array.ones(array.expand_dims(array.rank(embeddings) - 1, 0), dtype=dtypes.int32)
        static = weights.shape
        weights = array.reshape(weights, array.concat([array.shape(weights), ones], 0))
        if embeddings.shape.ndims is not None:
            weights.set_shape(static.concatenate([1] * (embeddings.shape.ndims - 1)))
        embeddings = embeddings * weights
        segment_sum = _op("SegmentSum")
        if combiner == "sum":
            return segment_sum(embeddings, segment_ids, name=scope)
        embeddings = segment_sum(embeddings, segment_ids)
        if combiner == "mean":
            return _op("DivNoNan")(embeddings, segment_sum(weights, segment_ids), name=scope)
        total = math.sqrt(segment_sum(math.pow(weights, 2), segment_ids))
        return _op("DivNoNan")(embeddings, total, name=scope)


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any, sparse_weights: Any = None,
                                 combiner: str = "mean", default_id: Any = None, name: str | None = None,
                                 partition_strategy: str = "div", max_norm: Any = None) -> Tensor:
    """`af.nn.safe_embedding_lookup_sparse`: `embedding_lookup_sparse` over ids of any rank >= 2 that drops
    invalid ids (< 0) and, unless combiner is "sum", non-positive weights; an empty row gets the embedding
    of `default_id`, or zeros."""
    from asyncflow.ops.sparse_ops import sparse_fill_empty_rows, sparse_reshape, sparse_retain
    from asyncflow.sparse_tensor import SparseTensor

    weights = _shards(embedding_weights)
    if not weights:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    weights = [w if hasattr(w, "_read_for_op") and dtype in (None, w.dtype.base_dtype)
               else convert_to_tensor(w, dtype=dtype) for w in weights]
    with name_scope(name, "embedding_lookup", weights + [sparse_ids.indices]) as scope:
        original_shape = sparse_ids.dense_shape
        rank_dim = original_shape.shape[0].value if original_shape.shape.ndims else None
        rank = array.size(original_shape) if rank_dim is None else rank_dim
        sparse_ids = sparse_reshape(sparse_ids, [
            math.reduce_prod(array.slice(original_shape, [0], array.reshape(rank - 1, [1]))),
            array.gather(original_shape, rank - 1)])
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        valid = math.greater_equal(sparse_ids.values, 0)
        sparse_ids = sparse_retain(sparse_ids, valid)
        if sparse_weights is not None:
            sparse_weights = sparse_retain(sparse_weights, valid)
            if combiner != "sum":
                positive = math.greater(sparse_weights.values, 0)
                sparse_ids = sparse_retain(sparse_ids, positive)
                sparse_weights = sparse_retain(sparse_weights, positive)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(weights, sparse_ids, sparse_weights, combiner=combiner,
                                         partition_strategy=partition_strategy,
                                         name=None if default_id is None else scope, max_norm=max_norm)
        if default_id is None:
            empty = array.tile(array.reshape(is_row_empty, [-1, 1]), array.stack([1, array.shape(result)[1]]))
            result = _op("Select")(empty, array.zeros_like(result), result, name=scope)
        final = array.reshape(result, array.concat([
            array.slice(math.cast(original_shape, dtypes.int32), [0], array.reshape(rank - 1, [1])),
            array.slice(array.shape(result), [1], [-1])], 0))
        final.set_shape(unknown_shape(None if rank_dim is None else rank_dim - 1).concatenate(result.shape[1:]))
        return final


__all__ = ["embedding_lookup", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
