"""What every `af.metrics` builder shares, as TF1's metrics_impl has it: the metric state variable, the
squeezing of a trailing 1 between labels, predictions and weights, TF1's limited weight broadcasting, the
streaming confusion matrices (per class, and per threshold) and the collection bookkeeping.

A metric's state is a zero-initialised, non-trainable variable in LOCAL_VARIABLES and METRIC_VARIABLES, so
`af.local_variables_initializer()` resets it and running an update op before that is TF1's
FailedPreconditionError naming the variable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import cond
from asyncflow.graph import GraphKeys, Tensor, add_to_collections, control_dependencies, name_scope
from asyncflow.ops import array, math
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array_dims import expand_dims, squeeze
from asyncflow.ops.check_ops import assert_greater_equal, assert_less_equal
from asyncflow.ops.control import no_op
from asyncflow.ops.logging_ops import Assert
from asyncflow.ops.math_extra import confusion_matrix
from asyncflow.ops.registry import constant, convert_to_tensor
from asyncflow.ops.state import assign_add
from asyncflow.variables import Variable

# TF1's GraphKeys.METRIC_VARIABLES; the graph model may not name it yet, the string is TF1's.
METRIC_VARIABLES: str = getattr(GraphKeys, "METRIC_VARIABLES", "metric_variables")


def metric_variable(shape: Any, dtype: Any, validate_shape: bool = True, name: str | None = None) -> Variable:
    """A zero-initialised, non-trainable variable in LOCAL_VARIABLES and METRIC_VARIABLES."""
    return Variable(lambda: array.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, METRIC_VARIABLES], validate_shape=validate_shape,
                    name=name)


def add_to(collections: Iterable[str] | str | None, value: Any) -> None:
    """Adds `value` to `collections` (a name or a list of names), as TF1's metrics do when given any."""
    if collections:
        add_to_collections(collections, value)


def _trailing_dim_may_be_1(t: Tensor) -> bool:
    return t.shape.ndims is None or t.shape.ndims == 0 or t.shape.dims[-1].is_compatible_with(1)


def remove_squeezable_dimensions(labels: Any, predictions: Any, expected_rank_diff: int = 0,
                                 name: str | None = None) -> tuple[Tensor, Tensor]:
    """TF1's `confusion_matrix.remove_squeezable_dimensions`: drops the trailing 1 of whichever of labels
    and predictions has one more dimension than expected (by static rank, or at run time when unknown)."""
    with name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        p_rank, l_rank = predictions.shape.ndims, labels.shape.ndims
        if p_rank is not None and l_rank is not None:
            diff = p_rank - l_rank
            if diff == expected_rank_diff + 1 and predictions.shape.dims[-1].is_compatible_with(1):
                predictions = squeeze(predictions, [-1])
            elif diff == expected_rank_diff - 1 and labels.shape.dims[-1].is_compatible_with(1):
                labels = squeeze(labels, [-1])
            return labels, predictions
        rank_diff = array.rank(predictions) - array.rank(labels)
        if _trailing_dim_may_be_1(predictions):
            p = predictions
            predictions = cond(math.equal(expected_rank_diff + 1, rank_diff), lambda: squeeze(p, [-1]), lambda: p)
        if _trailing_dim_may_be_1(labels):
            lb = labels
            labels = cond(math.equal(expected_rank_diff - 1, rank_diff), lambda: squeeze(lb, [-1]), lambda: lb)
        return labels, predictions


def squeeze_or_expand(predictions: Any, labels: Any, weights: Any) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """TF1's metrics `_remove_squeezable_dimensions`: labels and predictions lose a trailing 1 the other
    lacks (their shapes must then be compatible); weights lose or gain a trailing 1 to match predictions'
    rank; scalar weights stay scalar."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w_rank, p_rank = weights.shape.ndims, predictions.shape.ndims
    if w_rank == 0:
        return predictions, labels, weights
    if p_rank is not None and w_rank is not None:
        if w_rank - p_rank == 1:
            weights = squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = expand_dims(weights, [-1])
        return predictions, labels, weights
    w = weights
    rank_diff = array.rank(w) - array.rank(predictions)

    def maybe_squeeze() -> Tensor:
        return squeeze(w, [-1]) if _trailing_dim_may_be_1(w) else w

    def maybe_expand() -> Tensor:
        return cond(math.equal(rank_diff, -1), lambda: expand_dims(w, [-1]), lambda: w)

    weights = cond(math.equal(array.rank(w), 0), lambda: w,
                   lambda: cond(math.equal(rank_diff, 1), maybe_squeeze, maybe_expand))
    return predictions, labels, weights


_BROADCAST_ERROR = "weights can not be broadcast to values."


def assert_broadcastable(weights: Tensor, values: Tensor) -> Any:
    """TF1's `weights_broadcast_ops.assert_broadcastable`: weights are a scalar, or have the values' rank
    with each dimension 1 or equal to the values'. A ValueError when the static shapes decide it, else an
    Assert op (InvalidArgumentError at run time)."""
    with name_scope(None, "assert_broadcastable", (weights, values)) as scope:
        w_shape, v_shape = weights.shape, values.shape
        if w_shape.ndims is not None and v_shape.ndims is not None:
            if w_shape.ndims == 0:
                return no_op(name="static_scalar_check_success")
            if w_shape.ndims != v_shape.ndims:
                raise ValueError(f"{_BROADCAST_ERROR} values.rank={v_shape.ndims}. weights.rank={w_shape.ndims}. "
                                 f"values.shape={v_shape}. weights.shape={w_shape}. "
                                 f"Received weights={weights}, values={values}")
            if w_shape.is_fully_defined() and v_shape.is_fully_defined():
                for i, (w, v) in enumerate(zip(w_shape.as_list(), v_shape.as_list())):
                    if w not in (1, v):
                        raise ValueError(f"{_BROADCAST_ERROR} Mismatch at dim {i}. values.shape={v_shape.as_list()}, "
                                         f"weights.shape={w_shape.as_list()}. Received weights={weights}, "
                                         f"values={values}")
                return no_op(name="static_dims_check_success")
        w_dims, v_dims = array.shape(weights, name="weights/shape"), array.shape(values, name="values/shape")
        w_rank, v_rank = array.rank(weights), array.rank(values)
        is_scalar = math.equal(0, w_rank, name="is_scalar")

        def valid_dims() -> Tensor:
            # Same rank: compare the shapes dimension by dimension (they have the same length here).
            return mr.reduce_all(math.logical_or(math.equal(w_dims, 1), math.equal(w_dims, v_dims)))

        def valid_nonscalar() -> Tensor:
            same_rank = math.equal(v_rank, w_rank, name="is_same_rank")
            return cond(same_rank, valid_dims, lambda: same_rank)

        is_valid = cond(is_scalar, lambda: is_scalar, valid_nonscalar, name="is_valid_shape")
        data = [_BROADCAST_ERROR, "weights.shape=", weights.name, w_dims, "values.shape=", values.name, v_dims,
                "is_scalar=", is_scalar]
        return Assert(is_valid, data, name=scope)


def broadcast_weights(weights: Any, values: Tensor) -> Tensor:
    """TF1's `weights_broadcast_ops.broadcast_weights`: weights (checked by `assert_broadcastable`) times
    ones shaped like values, or the weights themselves when both static shapes already agree."""
    with name_scope(None, "broadcast_weights", (weights, values)) as scope:
        values = convert_to_tensor(values, name="values")
        weights = convert_to_tensor(weights, dtype=values.dtype.base_dtype, name="weights")
        if (weights.shape.is_fully_defined() and values.shape.is_fully_defined()
                and weights.shape.is_compatible_with(values.shape)):
            return weights
        with control_dependencies([assert_broadcastable(weights, values)]):
            return math.multiply(weights, array.ones_like(values), name=scope)


def streaming_confusion_matrix(labels: Any, predictions: Any, num_classes: int,
                               weights: Tensor | None = None) -> tuple[Variable, Tensor]:
    """A float64 [num_classes, num_classes] `total_confusion_matrix` variable and the op adding this
    batch's (flattened, weighted) confusion matrix to it."""
    total_cm = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
    predictions = math.cast(predictions, dtypes.int64)
    labels = math.cast(labels, dtypes.int64)
    if predictions.shape.ndims is None or predictions.shape.ndims > 1:
        predictions = array.reshape(predictions, [-1])
    if labels.shape.ndims is None or labels.shape.ndims > 1:
        labels = array.reshape(labels, [-1])
    if weights is not None and (weights.shape.ndims is None or weights.shape.ndims > 1):
        weights = array.reshape(weights, [-1])
    current = confusion_matrix(labels, predictions, math.cast(num_classes, dtypes.int64), weights=weights,
                               dtype=dtypes.float64)
    return total_cm, assign_add(total_cm, current)


_COUNTS = ("tp", "fn", "tn", "fp")
_COUNT_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


def confusion_matrix_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float],
                                   weights: Any = None, includes: Sequence[str] | None = None
                                   ) -> tuple[dict[str, Variable], dict[str, Tensor]]:
    """TF1's `_confusion_matrix_at_thresholds`: for each threshold t, the weight of predictions above t
    (positive) or not (negative) by label, in [len(thresholds)] float32 variables named
    true_positives / false_negatives / true_negatives / false_positives (those in `includes`).
    Predictions outside [0, 1] fail an assertion at run time."""
    if includes is None:
        includes = _COUNTS
    for key in includes:
        if key not in _COUNTS:
            raise ValueError(f"Invalid key: {key}")
    predictions = convert_to_tensor(predictions, name="predictions")
    message = "predictions must be in [0, 1]"
    with control_dependencies([
            assert_greater_equal(predictions, math.cast(0.0, predictions.dtype), message=message),
            assert_less_equal(predictions, math.cast(1.0, predictions.dtype), message=message)]):
        predictions, labels, weights = squeeze_or_expand(math.cast(predictions, dtypes.float32),
                                                         math.cast(labels, dtypes.bool), weights)
    # [thresholds, 1] against [1, predictions]: one row of decisions per threshold.
    thresholds_col = array.reshape(constant(list(thresholds), dtype=dtypes.float32), [-1, 1])
    pred_is_pos = math.greater(array.reshape(predictions, [1, -1]), thresholds_col)
    pred_is_neg = math.logical_not(pred_is_pos)
    label_is_pos = array.reshape(labels, [1, -1])
    label_is_neg = math.logical_not(label_is_pos)
    if weights is not None:
        weights = broadcast_weights(math.cast(weights, dtypes.float32), predictions)
        weights = array.reshape(weights, [1, -1])
    cases = {"tp": (label_is_pos, pred_is_pos), "fn": (label_is_pos, pred_is_neg),
             "tn": (label_is_neg, pred_is_neg), "fp": (label_is_neg, pred_is_pos)}
    values: dict[str, Variable] = {}
    update_ops: dict[str, Tensor] = {}
    for key in _COUNTS:  # TF1's creation order, whatever the order of `includes`
        if key not in includes:
            continue
        var = metric_variable([len(thresholds)], dtypes.float32, name=_COUNT_NAMES[key])
        hits = math.cast(math.logical_and(*cases[key]), dtypes.float32)
        if weights is not None:
            hits = hits * weights
        update_ops[key] = assign_add(var, mr.reduce_sum(hits, 1))
        values[key] = var
    return values, update_ops
