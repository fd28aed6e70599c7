"""`af.metrics`, as `tf.compat.v1.metrics`: the streaming means and counts.

Each metric returns `(value, update_op)`: `update_op` folds one batch into the metric's state variables
(see `_util.metric_variable`) and evaluates to the metric after that batch; `value` reads the state
without changing it. Both are computed as TF1 computes them (a mean is total / count, 0 while count is 0),
with TF1's scope and variable names (`accuracy/total:0`, `precision/true_positives/count:0`) and dtypes.
`value` goes to `metrics_collections`, `update_op` to `updates_collections`. The curve metrics (auc,
the *_at_thresholds family) are in `curve.py`, the top-k ones in `at_k.py`.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor, control_dependencies
from asyncflow.metrics._util import (
    add_to,
    broadcast_weights,
    metric_variable,
    remove_squeezable_dimensions,
    squeeze_or_expand,
    streaming_confusion_matrix,
)
from asyncflow.ops import array, math
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.linalg_ops import diag_part
from asyncflow.ops.math_more import div_no_nan
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.ops.state import assign_add, scatter_add
from asyncflow.variable_scope import variable_scope

__all__ = [
    "accuracy",
    "false_negatives",
    "false_positives",
    "mean",
    "mean_absolute_error",
    "mean_cosine_distance",
    "mean_iou",
    "mean_per_class_accuracy",
    "mean_relative_error",
    "mean_squared_error",
    "mean_tensor",
    "percentage_below",
    "precision",
    "recall",
    "root_mean_squared_error",
    "true_negatives",
    "true_positives",
]

Collections = Any  # a collection name, a list of them, or None


def _streaming_mean(values: Any, weights: Any, metrics_collections: Collections, updates_collections: Collections,
                    name: str | None, *, per_element: bool) -> tuple[Tensor, Tensor]:
    """mean (scalar state `total`/`count`) and mean_tensor (state shaped like values)."""
    with variable_scope(name, "mean", (values, weights)):
        values = math.cast(values, dtypes.float32)
        if per_element:
            if not values.shape.is_fully_defined():
                raise ValueError(f"mean_tensor: values must have a fully defined shape, got {values.shape}")
            total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
            count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
            num_values = array.ones_like(values)
        else:
            total = metric_variable([], dtypes.float32, name="total")
            count = metric_variable([], dtypes.float32, name="count")
            num_values = None if weights is not None else math.cast(array.size(values), dtypes.float32)
        if weights is not None:
            values, _, weights = squeeze_or_expand(values, None, weights)
            weights = broadcast_weights(math.cast(weights, dtypes.float32), values)
            values = math.multiply(values, weights)
            num_values = math.multiply(num_values, weights) if per_element else mr.reduce_sum(weights)
        update_total = assign_add(total, values if per_element else mr.reduce_sum(values))
        # TF1 orders the count update after `values`, so that the weights' shape assertion runs first.
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = div_no_nan(total, math.maximum(count, 0), name="value")
        add_to(metrics_collections, value)
        update_op = div_no_nan(update_total, math.maximum(update_count, 0), name="update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def mean(values: Any, weights: Any = None, metrics_collections: Collections = None,
         updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean`: the weighted mean of all values seen, sum(w * v) / sum(w) (0 before any weight)."""
    return _streaming_mean(values, weights, metrics_collections, updates_collections, name, per_element=False)


def mean_tensor(values: Any, weights: Any = None, metrics_collections: Collections = None,
                updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_tensor`: the element-wise weighted mean of the values tensors seen."""
    return _streaming_mean(values, weights, metrics_collections, updates_collections, name, per_element=True)


def accuracy(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
             updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.accuracy`: the weighted frequency of predictions == labels."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    predictions.shape.assert_is_compatible_with(labels.shape)
    if labels.dtype != predictions.dtype:
        predictions = math.cast(predictions, labels.dtype)
    is_correct = math.cast(math.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                        updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_absolute_error`: the weighted mean of |predictions - labels|."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    return mean(math.abs(predictions - labels), weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


def mean_squared_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                       updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_squared_error`: the weighted mean of (labels - predictions) ** 2."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    return mean(math.squared_difference(labels, predictions), weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Collections = None, updates_collections: Collections = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.root_mean_squared_error`: sqrt of the streaming mean squared error."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None, name or "root_mean_squared_error")
    rmse = math.sqrt(mse)
    add_to(metrics_collections, rmse)
    update_op = math.sqrt(update_mse)
    add_to(updates_collections, update_op)
    return rmse, update_op


def mean_relative_error(labels: Any, predictions: Any, normalizer: Any, weights: Any = None,
                        metrics_collections: Collections = None, updates_collections: Collections = None,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_relative_error`: the weighted mean of |labels - predictions| / normalizer (0 where
    the normalizer is 0)."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative = mr.where(math.equal(normalizer, 0.0), array.zeros_like(labels),
                        math.divide(math.abs(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections, name or "mean_relative_error")


def mean_cosine_distance(labels: Any, predictions: Any, dim: int, weights: Any = None,
                         metrics_collections: Collections = None, updates_collections: Collections = None,
                         name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_cosine_distance`: 1 - the weighted mean of sum(labels * predictions, dim) (the
    inputs are expected unit-normalised along `dim`; weights have size 1 along it)."""
    predictions, labels, weights = squeeze_or_expand(predictions, labels, weights)
    radial = mr.reduce_sum(math.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    mean_distance = math.subtract(1.0, mean_distance)
    update_op = math.subtract(1.0, update_op)
    add_to(metrics_collections, mean_distance)
    add_to(updates_collections, update_op)
    return mean_distance, update_op


def percentage_below(values: Any, threshold: Any, weights: Any = None, metrics_collections: Collections = None,
                     updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.percentage_below`: the weighted fraction of values < threshold."""
    is_below = math.cast(math.less(values, threshold), dtypes.float32)
    return mean(is_below, weights, metrics_collections, updates_collections, name or "percentage_below_threshold")


# -- counts -------------------------------------------------------------------------------------------------
def _count_condition(values: Tensor, weights: Tensor | None, metrics_collections: Collections,
                     updates_collections: Collections) -> tuple[Tensor, Tensor]:
    """A float32 `count` variable adding up the (weighted) trues of a bool tensor."""
    if values.dtype.base_dtype != dtypes.bool:
        raise TypeError(f"{values.name} must be of type bool; got {values.dtype}")
    count = metric_variable([], dtypes.float32, name="count")
    values = math.cast(values, dtypes.float32)
    if weights is not None:
        w_rank, v_rank = weights.shape.ndims, values.shape.ndims
        if w_rank is not None and v_rank is not None and w_rank not in (0, v_rank):
            raise ValueError(f"Tensor {weights.name} must have rank in {(0, v_rank)}.  Received rank {w_rank}, "
                             f"shape {weights.shape}")
        # TF1 multiplies these weights with ordinary broadcasting, without assert_broadcastable.
        values = math.multiply(values, math.cast(weights, dtypes.float32))
    value = array.identity(count)
    add_to(metrics_collections, value)
    update_op = assign_add(count, mr.reduce_sum(values))
    add_to(updates_collections, update_op)
    return value, update_op


def _count(kind: str, label: bool, prediction: bool, labels: Any, predictions: Any, weights: Any,
           metrics_collections: Collections, updates_collections: Collections,
           name: str | None) -> tuple[Tensor, Tensor]:
    with variable_scope(name, kind, (predictions, labels, weights)):
        predictions, labels, weights = squeeze_or_expand(math.cast(predictions, dtypes.bool),
                                                         math.cast(labels, dtypes.bool), weights)
        hit = math.logical_and(math.equal(labels, label), math.equal(predictions, prediction))
        return _count_condition(hit, weights, metrics_collections, updates_collections)


def true_positives(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                   updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.true_positives`: the weighted count of labels and predictions both true (cast to bool)."""
    return _count("true_positives", True, True, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def false_positives(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                    updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.false_positives`: the weighted count of false labels predicted true."""
    return _count("false_positives", False, True, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def true_negatives(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                   updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.true_negatives`: the weighted count of labels and predictions both false."""
    return _count("true_negatives", False, False, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def false_negatives(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                    updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.false_negatives`: the weighted count of true labels predicted false."""
    return _count("false_negatives", True, False, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def _ratio_of_counts(kind: str, other: Any, labels: Any, predictions: Any, weights: Any,
                     metrics_collections: Collections, updates_collections: Collections,
                     name: str | None) -> tuple[Tensor, Tensor]:
    """precision (tp / (tp + fp)) and recall (tp / (tp + fn)), 0 while the denominator is 0."""
    with variable_scope(name, kind, (predictions, labels, weights)):
        predictions, labels, weights = squeeze_or_expand(math.cast(predictions, dtypes.bool),
                                                         math.cast(labels, dtypes.bool), weights)
        tp, tp_update = true_positives(labels, predictions, weights)
        other_v, other_update = other(labels, predictions, weights)

        def ratio(t: Tensor, o: Tensor, op_name: str) -> Tensor:
            return mr.where(math.greater(t + o, 0), math.divide(t, t + o), 0, op_name)

        value = ratio(tp, other_v, "value")
        add_to(metrics_collections, value)
        update_op = ratio(tp_update, other_update, "update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def precision(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
              updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.precision`: true_positives / (true_positives + false_positives), 0 when both are 0."""
    return _ratio_of_counts("precision", false_positives, labels, predictions, weights, metrics_collections,
                            updates_collections, name)


def recall(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
           updates_collections: Collections = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.recall`: true_positives / (true_positives + false_negatives), 0 when both are 0."""
    return _ratio_of_counts("recall", false_negatives, labels, predictions, weights, metrics_collections,
                            updates_collections, name)


# -- per class ----------------------------------------------------------------------------------------------
def _flat(t: Tensor) -> Tensor:
    return array.reshape(t, [-1]) if t.shape.ndims is None or t.shape.ndims > 1 else t


def mean_per_class_accuracy(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
                            metrics_collections: Collections = None, updates_collections: Collections = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_per_class_accuracy`: the mean over classes of each class's weighted accuracy.
    As TF1, `update_op` evaluates to the [num_classes] per-class accuracies, `value` to their mean."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = _flat(math.cast(labels, dtypes.int64))
        predictions = _flat(convert_to_tensor(predictions, name="predictions"))
        predictions.shape.assert_is_compatible_with(labels.shape)
        # TF1's names: `total` counts each class's examples, `count` the correct ones.
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array.ones(array.reshape(array.size(labels), [1]), dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = math.cast(predictions, labels.dtype)
        is_correct = math.cast(math.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = math.cast(_flat(convert_to_tensor(weights, name="weights")), dtypes.float32)
            is_correct = is_correct * weights
            ones = ones * weights
        update_total = scatter_add(total, labels, ones)
        update_count = scatter_add(count, labels, is_correct)
        per_class = div_no_nan(count, math.maximum(total, 0))
        value = mr.reduce_mean(per_class, name="mean_accuracy")
        add_to(metrics_collections, value)
        update_op = div_no_nan(update_count, math.maximum(update_total, 0), name="update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def mean_iou(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
             metrics_collections: Collections = None, updates_collections: Collections = None,
             name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_iou`: the mean over classes present of TP / (TP + FP + FN), from a streaming
    float64 confusion matrix; `update_op` evaluates to that matrix, as TF1's does."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        labels = convert_to_tensor(labels, name="labels")
        predictions = convert_to_tensor(predictions, name="predictions")
        predictions.shape.assert_is_compatible_with(labels.shape)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
        total_cm, update_op = streaming_confusion_matrix(labels, predictions, num_classes, weights)
        sum_over_row = math.cast(mr.reduce_sum(total_cm, 0), dtypes.float32)
        sum_over_col = math.cast(mr.reduce_sum(total_cm, 1), dtypes.float32)
        cm_diag = math.cast(diag_part(total_cm), dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid = mr.reduce_sum(math.cast(math.not_equal(denominator, 0), dtypes.float32))
        denominator = mr.where(math.greater(denominator, 0), denominator, array.ones_like(denominator))
        iou = math.divide(cm_diag, denominator)
        value = mr.where(math.greater(num_valid, 0), mr.reduce_sum(iou, name="mean_iou") / num_valid, 0)
        add_to(metrics_collections, value)
        add_to(updates_collections, update_op)
        return value, update_op

