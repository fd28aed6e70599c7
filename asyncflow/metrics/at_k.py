"""`af.metrics` over the top k predicted classes, as TF1's: recall_at_k, precision_at_k and their
`*_at_top_k` forms taking the class ids already chosen, and average_precision_at_k.

TF1 counts with set operations per example (the last dimension): a true positive is a predicted id that is
among the labels, a false negative a distinct label id that was not predicted, a false positive a predicted
id that is not a label. Labels here are a dense int64 tensor, [D1, ... DN, num_labels] or [D1, ... DN];
every value counts as a label (TF1's dense sets ignore nothing), duplicates once. The state is two float64
scalars, `recall_at_5/true_positive_at_5:0` and the like, and the value is tp / (tp + fn) (or + fp), NaN
before any example as in TF1.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import cond
from asyncflow.graph import Tensor, control_dependencies, name_scope
from asyncflow.metrics._util import add_to, assert_broadcastable, broadcast_weights, metric_variable
from asyncflow.ops import array, math
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.math_extra import cumsum
from asyncflow.ops.math_more import div_no_nan
from asyncflow.ops.nn_extra import top_k
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.ops.state import assign_add
from asyncflow.sparse_tensor import is_sparse

__all__ = [
    "average_precision_at_k",
    "precision_at_k",
    "precision_at_top_k",
    "recall_at_k",
    "recall_at_top_k",
    "sparse_average_precision_at_k",
    "sparse_precision_at_k",
]


def _at_k_name(name: str, k: int | None = None, class_id: int | None = None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


def _dense_labels(labels: Any, metric: str) -> Tensor:
    if is_sparse(labels):
        raise TypeError(f"{metric}: labels as a SparseTensor are not supported yet; pass dense int64 labels "
                        "[D1, ... DN, num_labels] or [D1, ... DN]")
    return convert_to_tensor(labels, name="labels")


def _maybe_expand_labels(labels: Any, predictions: Tensor) -> Tensor:
    """Labels [D1, ... DN] against predictions [D1, ... DN, k] gain a trailing dimension of 1."""
    with name_scope(None, "expand_labels", (labels, predictions)) as scope:
        labels = convert_to_tensor(labels, name="labels")
        l_rank, p_rank = labels.shape.ndims, predictions.shape.ndims
        if l_rank is not None and p_rank is not None:
            if p_rank == l_rank:
                return labels
            if p_rank == l_rank + 1:
                return expand_dims(labels, -1, name=scope)
            raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape {predictions.shape}. "
                             "Predictions rank should be the same rank as labels rank or labels rank plus one .")
        lb = labels
        return cond(math.equal(array.rank(predictions), array.rank(lb) + 1),
                    lambda: expand_dims(lb, -1, name=scope), lambda: lb)


def _matches(labels: Tensor, predictions_idx: Tensor) -> Tensor:
    """[..., k, num_labels]: whether the j-th predicted id equals the i-th label."""
    return math.equal(expand_dims(predictions_idx, -1), expand_dims(labels, -2))


def _per_example_counts(labels: Tensor, predictions_idx: Tensor, class_id: int | None) -> dict[str, Tensor]:
    """Per example (all but the last dimension): tp, fn and fp as float64, by TF1's set semantics."""
    if labels.dtype.base_dtype != predictions_idx.dtype.base_dtype:
        raise TypeError(f"Types don't match, {predictions_idx.dtype} vs {labels.dtype}.")
    if class_id is not None:
        in_pred = mr.reduce_any(math.equal(predictions_idx, class_id), -1)
        in_labels = mr.reduce_any(math.equal(labels, class_id), -1)
        hits = {"tp": math.logical_and(in_pred, in_labels),
                "fn": math.logical_and(in_labels, math.logical_not(in_pred)),
                "fp": math.logical_and(in_pred, math.logical_not(in_labels))}
        return {key: math.cast(v, dtypes.float64) for key, v in hits.items()}
    # [..., k, labels]: which predicted id equals which label.
    match = _matches(labels, predictions_idx)
    pred_is_label = mr.reduce_any(match, -1)  # top-k ids are distinct: each counts once
    label_is_pred = mr.reduce_any(match, -2)
    # A label value counts once: only its first occurrence in the row.
    same = math.equal(expand_dims(labels, -1), expand_dims(labels, -2))
    positions = mr.range(array.shape(labels)[-1])
    earlier = math.less(expand_dims(positions, 0), expand_dims(positions, 1))  # [i, j]: j comes before i
    is_first = math.logical_not(mr.reduce_any(math.logical_and(same, earlier), -1))
    count = mr.reduce_sum
    return {"tp": count(math.cast(pred_is_label, dtypes.float64), -1),
            "fn": count(math.cast(math.logical_and(is_first, math.logical_not(label_is_pred)), dtypes.float64), -1),
            "fp": count(math.cast(math.logical_not(pred_is_label), dtypes.float64), -1)}


_STATE_NAMES = {"tp": ("true_positives", "true_positive"), "fn": ("false_negatives", "false_negative"),
                "fp": ("false_positives", "false_positive")}


def _streaming_count(key: str, counts: dict[str, Tensor], k: int | None, class_id: int | None,
                     weights: Any) -> tuple[Any, Tensor]:
    """One float64 scalar variable adding up the batch's (weighted) count `key`."""
    op_scope, var_stem = _STATE_NAMES[key]
    with name_scope(None, _at_k_name(var_stem, k, class_id=class_id)) as scope:
        with name_scope(None, op_scope):
            per_example = counts[key]
            if weights is not None:
                weights = convert_to_tensor(weights, name="weights")
                with control_dependencies([assert_broadcastable(weights, per_example)]):
                    per_example = math.multiply(per_example, math.cast(weights, dtypes.float64))
        batch_total = math.cast(mr.reduce_sum(per_example), dtypes.float64)
        var = metric_variable([], dtypes.float64, name=scope)
        return var, assign_add(var, batch_total, name="update")


def _at_top_k(kind: str, other: str, labels: Any, predictions_idx: Any, k: int | None, class_id: int | None,
              weights: Any, metrics_collections: Any, updates_collections: Any,
              name: str | None) -> tuple[Tensor, Tensor]:
    with name_scope(name, _at_k_name(kind, k, class_id=class_id), (predictions_idx, labels, weights)) as scope:
        predictions_idx = convert_to_tensor(predictions_idx, name="predictions_idx")
        labels = _maybe_expand_labels(_dense_labels(labels, f"{kind}_at_k"), predictions_idx)
        top_k_idx = math.cast(predictions_idx, dtypes.int64)
        counts = _per_example_counts(labels, top_k_idx, class_id)
        tp, tp_update = _streaming_count("tp", counts, k, class_id, weights)
        o, o_update = _streaming_count(other, counts, k, class_id, weights)
        value = math.divide(tp, math.add(tp, o), name=scope)
        add_to(metrics_collections, value)
        update = math.divide(tp_update, math.add(tp_update, o_update), name="update")
        add_to(updates_collections, update)
        return value, update


def recall_at_top_k(labels: Any, predictions_idx: Any, k: int | None = None, class_id: int | None = None,
                    weights: Any = None, metrics_collections: Any = None, updates_collections: Any = None,
                    name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.recall_at_top_k`: tp / (tp + fn) over the ids in `predictions_idx` [D1, ... DN, k]."""
    return _at_top_k("recall", "fn", labels, predictions_idx, k, class_id, weights, metrics_collections,
                     updates_collections, name)


def precision_at_top_k(labels: Any, predictions_idx: Any, k: int | None = None, class_id: int | None = None,
                       weights: Any = None, metrics_collections: Any = None, updates_collections: Any = None,
                       name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.precision_at_top_k`: tp / (tp + fp) over the ids in `predictions_idx` [D1, ... DN, k]."""
    return _at_top_k("precision", "fp", labels, predictions_idx, k, class_id, weights, metrics_collections,
                     updates_collections, name)


def recall_at_k(labels: Any, predictions: Any, k: int, class_id: int | None = None, weights: Any = None,
                metrics_collections: Any = None, updates_collections: Any = None,
                name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.recall_at_k`: the recall of the k highest-scoring classes of `predictions` [..., classes]."""
    with name_scope(name, _at_k_name("recall", k, class_id=class_id), (predictions, labels, weights)) as scope:
        _, top_k_idx = top_k(predictions, k)
        return recall_at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections, updates_collections,
                               scope)


def precision_at_k(labels: Any, predictions: Any, k: int, class_id: int | None = None, weights: Any = None,
                   metrics_collections: Any = None, updates_collections: Any = None,
                   name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.precision_at_k`: the precision of the k highest-scoring classes of `predictions`."""
    with name_scope(name, _at_k_name("precision", k, class_id=class_id), (predictions, labels, weights)) as scope:
        _, top_k_idx = top_k(predictions, k)
        return precision_at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections,
                                  updates_collections, scope)


def sparse_precision_at_k(labels: Any, predictions: Any, k: int, class_id: int | None = None, weights: Any = None,
                          metrics_collections: Any = None, updates_collections: Any = None,
                          name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.sparse_precision_at_k`: TF1's deprecated name of `precision_at_k`."""
    return precision_at_k(labels, predictions, k, class_id, weights, metrics_collections, updates_collections, name)


def _average_precision(labels: Tensor, predictions_idx: Tensor) -> Tensor:
    """Per example, TF1's average precision of the ranked ids: the sum of precision@j over the ranks j whose
    id is a label, over min(number of labels >= 0, k)."""
    with name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        predictions_idx = math.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        if predictions_idx.shape.ndims == 0:
            raise ValueError("The rank of `predictions_idx` must be at least 1.")
        k = predictions_idx.shape.as_list()[-1] if predictions_idx.shape.ndims is not None else None
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, it is None.")
        labels = _maybe_expand_labels(labels, predictions_idx)
        if labels.dtype.base_dtype != dtypes.int64:
            raise TypeError(f"Types don't match, {predictions_idx.dtype} vs {labels.dtype}.")
        relevant = math.cast(mr.reduce_any(_matches(labels, predictions_idx), -1), dtypes.float64)
        tp_per_k = cumsum(relevant, axis=-1, name="tp_per_k")
        retrieved_per_k = cumsum(array.ones_like(relevant), axis=-1, name="retrieved_per_k")
        precision_sum = mr.reduce_sum(math.divide(tp_per_k, retrieved_per_k) * relevant, axis=(-1,),
                                      name="precision_sum")
        # TF1 counts a dense row's labels >= 0, duplicates included, at most k.
        num_labels = mr.reduce_sum(math.cast(math.greater_equal(labels, 0), dtypes.int64), axis=-1)
        num_relevant = math.cast(math.minimum(num_labels, k, name="num_relevant"), dtypes.float64)
        return math.divide(precision_sum, num_relevant, name=scope)


def _clean_out_of_range(labels: Tensor, num_classes: Tensor) -> Tensor:
    """Labels >= num_classes become -1 (no predicted id), under TF1's cond on their maximum (whose `Max` op
    also shapes the names that follow: scope names are unique regardless of case)."""
    def clean() -> Tensor:
        return mr.where_v2(math.greater_equal(labels, num_classes), -1 * array.ones_like(labels), labels)

    return cond(math.greater_equal(mr.reduce_max(labels), num_classes), clean, lambda: labels)


def average_precision_at_k(labels: Any, predictions: Any, k: int, weights: Any = None,
                           metrics_collections: Any = None, updates_collections: Any = None,
                           name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.average_precision_at_k`: the (weighted) mean over examples of the average precision of
    the k highest-scoring classes; labels >= the number of classes never match (TF1 makes them -1)."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with name_scope(name, _at_k_name("average_precision", k), (predictions, labels, weights)) as scope:
        predictions = convert_to_tensor(predictions, name="predictions")
        _, predictions_idx = top_k(predictions, k)
        labels = _dense_labels(labels, "average_precision_at_k")
        num_classes = math.cast(array.shape(predictions)[-1], dtypes.int64)
        labels = _clean_out_of_range(labels, num_classes)
        average_precision = _average_precision(labels, predictions_idx)
        if weights is not None:
            weights = broadcast_weights(math.cast(weights, dtypes.float64), average_precision)
            average_precision = math.multiply(average_precision, weights)
        with name_scope(None, "max", (average_precision,)) as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            if weights is None:
                batch_max = math.cast(array.size(average_precision, name="batch_max"), dtypes.float64)
            else:
                batch_max = mr.reduce_sum(weights, name="batch_max")
            max_update = assign_add(max_var, batch_max, name="update")
        with name_scope(None, "total", (average_precision,)) as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            total_update = assign_add(total_var, mr.reduce_sum(average_precision, name="batch_total"), name="update")
        value = div_no_nan(total_var, max_var, name="mean")
        add_to(metrics_collections, value)
        update = div_no_nan(total_update, max_update, name=scope)
        add_to(updates_collections, update)
        return value, update


def sparse_average_precision_at_k(labels: Any, predictions: Any, k: int, weights: Any = None,
                                  metrics_collections: Any = None, updates_collections: Any = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.sparse_average_precision_at_k`: TF1's deprecated name of `average_precision_at_k`."""
    return average_precision_at_k(labels, predictions, k, weights, metrics_collections, updates_collections, name)
