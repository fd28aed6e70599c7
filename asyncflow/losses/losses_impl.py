"""`af.losses`, as `tf.compat.v1.losses`: the weighted losses, their reductions and the LOSSES collection.

Each loss computes per-element losses, multiplies them by `weights` (a scalar, or a tensor that
broadcasts to the losses, checked statically as TF1 does) and reduces them with `reduction`; TF1's
default, SUM_BY_NONZERO_WEIGHTS, divides the weighted sum by the number of elements with a non-zero
weight (0 when there are none). The result is added to `loss_collection` (LOSSES). Scope and op
names follow TF1 (`softmax_cross_entropy_loss/value`).
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.graph import GraphKeys, Tensor, add_to_collection, get_collection, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.math_more import div_no_nan
from asyncflow.ops.math_reduce import range as range_op
from asyncflow.ops.math_reduce import reduce_sum, where
from asyncflow.ops.nn_losses import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from asyncflow.ops.nn_ops import relu
from asyncflow.ops.registry import constant, convert_to_tensor


class Reduction:
    """`tf.losses.Reduction`: how a loss's weighted elements become the loss."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _check_broadcastable(weights: Tensor, values: Tensor) -> None:
    """TF1's static `assert_broadcastable`: weights scalar, or of the values' rank with each dim 1 or equal."""
    w, v = weights.shape, values.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    bad = w.ndims != v.ndims or any(a is not None and b is not None and a not in (1, b)
                                    for a, b in zip(w.as_list(), v.as_list()))
    if bad:
        raise ValueError(f"weights can not be broadcast to values. values.rank={v.ndims}. weights.rank={w.ndims}. "
                         f"values.shape={v}. weights.shape={w}.")


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope(None, "num_elements", [losses]) as scope:
        return math.cast(array.size(losses, name=scope), losses.dtype.base_dtype)


def _num_present(losses: Tensor, weights: Any, per_batch: bool = False) -> Tensor:
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with name_scope(None, "num_present", [losses, weights]) as scope:
        weights = math.cast(weights, dtypes.float32)
        present = where(math.equal(weights, 0.0), array.zeros_like(weights), array.ones_like(weights))
        present = present * array.ones_like(losses)
        if per_batch:
            return reduce_sum(present, axis=range_op(1, array.rank(present)), keepdims=True, name=scope)
        return reduce_sum(present, name=scope)


def _safe_mean(total: Tensor, num_present: Tensor) -> Tensor:
    return div_no_nan(reduce_sum(total), num_present, name="value")


def add_loss(loss: Any, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """`tf.losses.add_loss`: adds `loss` to `loss_collection`."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.compute_weighted_loss`: losses * weights, reduced by `reduction` (see the module docstring)."""
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype.base_dtype
        weights_t = convert_to_tensor(weights)
        _check_broadcastable(weights_t, losses)
        losses = math.cast(losses, dtypes.float32)
        weights_f = math.cast(weights_t, dtypes.float32)
        weighted = math.multiply(losses, weights_f)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(loss, reduce_sum(array.ones_like(losses) * weights_f))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, weights if isinstance(weights, float) else weights_f))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, _num_elements(losses))
        if input_dtype != dtypes.float32:
            loss = math.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _pair(labels: Any, predictions: Any, what: str = "predictions") -> tuple[Tensor, Tensor]:
    predictions = math.cast(convert_to_tensor(predictions, name=what), dtypes.float32)
    labels = math.cast(convert_to_tensor(labels, name="labels"), dtypes.float32)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
    return labels, predictions


def _required(labels: Any, predictions: Any, what: str) -> None:
    if labels is None:
        raise ValueError("labels must not be None.")
    if predictions is None:
        raise ValueError(f"{what} must not be None.")


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                        loss_collection: str | None = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.absolute_difference`: |predictions - labels|, weighted and reduced."""
    _required(labels, predictions, "predictions")
    with name_scope(scope, "absolute_difference", [predictions, labels, weights]) as s:
        labels, predictions = _pair(labels, predictions)
        return compute_weighted_loss(math.abs(predictions - labels), weights, s, loss_collection, reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                       loss_collection: str | None = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.mean_squared_error`: (predictions - labels) ** 2, weighted and reduced."""
    _required(labels, predictions, "predictions")
    with name_scope(scope, "mean_squared_error", [predictions, labels, weights]) as s:
        labels, predictions = _pair(labels, predictions)
        return compute_weighted_loss(math.squared_difference(predictions, labels), weights, s, loss_collection,
                                     reduction)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0, scope: str | None = None,
               loss_collection: str | None = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.huber_loss`: 0.5 * e ** 2 for |e| <= delta, delta * (|e| - 0.5 * delta) beyond."""
    _required(labels, predictions, "predictions")
    with name_scope(scope, "huber_loss", [predictions, labels, weights]) as s:
        labels, predictions = _pair(labels, predictions)
        abs_error = math.abs(predictions - labels)
        quadratic = math.minimum(abs_error, delta)
        linear = abs_error - quadratic
        losses = 0.5 * quadratic * quadratic + delta * linear
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7, scope: str | None = None,
             loss_collection: str | None = GraphKeys.LOSSES,
             reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.log_loss`: -y log(p + eps) - (1 - y) log(1 - p + eps)."""
    _required(labels, predictions, "predictions")
    with name_scope(scope, "log_loss", [predictions, labels, weights]) as s:
        labels, predictions = _pair(labels, predictions)
        losses = -labels * math.log(predictions + epsilon) - (1 - labels) * math.log(1 - predictions + epsilon)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: str | None = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.hinge_loss`: relu(1 - (2y - 1) * logits), labels in {0, 1}."""
    _required(labels, logits, "logits")
    with name_scope(scope, "hinge_loss", [logits, labels, weights]) as s:
        labels, logits = _pair(labels, logits, "logits")
        ones = array.ones_like(labels)
        signed = 2 * labels - ones
        return compute_weighted_loss(relu(ones - signed * logits), weights, s, loss_collection, reduction)


def cosine_distance(labels: Any, predictions: Any, axis: int | None = None, weights: Any = 1.0,
                    scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES,
                    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS, dim: int | None = None) -> Tensor:
    """`tf.losses.cosine_distance`: 1 - sum(labels * predictions, axis) (inputs already unit-normalised)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'.")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _required(labels, predictions, "predictions")
    with name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as s:
        labels, predictions = _pair(labels, predictions)
        losses = 1 - reduce_sum(predictions * labels, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def mean_pairwise_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                                loss_collection: str | None = GraphKeys.LOSSES) -> Tensor:
    """`tf.losses.mean_pairwise_squared_error`: per example, the mean over pairs of elements of the squared
    difference of their differences, weighted and summed."""
    _required(labels, predictions, "predictions")
    with name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        labels, predictions = _pair(labels, predictions)
        weights = math.cast(convert_to_tensor(weights), dtypes.float32)
        diffs = predictions - labels
        axis = range_op(1, array.rank(diffs))
        sum_squares = reduce_sum(math.square(diffs), axis=axis, keepdims=True)
        present = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * div_no_nan(sum_squares, math.maximum(present - 1, 0.0), name="value")
        sum_diff = reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = 2.0 * div_no_nan(math.square(sum_diff), math.maximum(present * (present - 1), 0.0), name="value")
        loss = reduce_sum((term1 - term2) * weights)
        mean_loss = where(reduce_sum(present) > 0, loss, array.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.sigmoid_cross_entropy`: labels smoothed towards 1/2 by `label_smoothing`."""
    _required(multi_class_labels, logits, "logits")
    with name_scope(scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]) as s:
        logits = convert_to_tensor(logits, name="logits")
        labels = math.cast(multi_class_labels, logits.dtype.base_dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {logits.shape} and {labels.shape} are incompatible")
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.softmax_cross_entropy`: labels smoothed to (1 - s) * y + s / num_classes."""
    _required(onehot_labels, logits, "logits")
    with name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as s:
        logits = convert_to_tensor(logits, name="logits")
        labels = math.cast(onehot_labels, logits.dtype.base_dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {logits.shape} and {labels.shape} are incompatible")
        if label_smoothing > 0:
            num_classes = math.cast(array.shape(labels)[-1], logits.dtype.base_dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        labels = array.stop_gradient(labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def _squeeze_last(x: Tensor, like: Tensor) -> Tensor:
    """TF1's `_remove_squeezable_dimensions`: labels [batch, 1] against logits [batch, classes] lose the 1."""
    if x.shape.ndims is not None and like.shape.ndims is not None and x.shape.ndims == like.shape.ndims \
            and x.shape.as_list()[-1] == 1:
        return array.squeeze(x, [-1])
    return x


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
                                 loss_collection: str | None = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.sparse_softmax_cross_entropy`: class indices against logits, weighted and reduced."""
    _required(labels, logits, "logits")
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as s:
        logits = convert_to_tensor(logits, name="logits")
        labels = _squeeze_last(convert_to_tensor(labels, name="labels"), logits)
        weights_t = convert_to_tensor(weights)
        if weights_t.shape.ndims is not None and weights_t.shape.ndims > 0:
            weights = _squeeze_last(weights_t, logits)
        losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Any]:
    """`tf.losses.get_losses`: the losses in `loss_collection` (within `scope`)."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    """`tf.losses.get_regularization_losses`: the REGULARIZATION_LOSSES (within `scope`)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None, name: str = "total_regularization_loss") -> Tensor:
    """`tf.losses.get_regularization_loss`: their sum, or 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """`tf.losses.get_total_loss`: the LOSSES plus (by default) the regularization losses, summed."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("No losses found.")
    return math.add_n(losses, name=name)


__all__ = [
    "Reduction", "compute_weighted_loss", "absolute_difference", "mean_squared_error", "huber_loss", "log_loss",
    "hinge_loss", "cosine_distance", "mean_pairwise_squared_error", "sigmoid_cross_entropy",
    "softmax_cross_entropy", "sparse_softmax_cross_entropy", "add_loss", "get_losses", "get_regularization_losses",
    "get_regularization_loss", "get_total_loss",
]
