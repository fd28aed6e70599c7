"""`af.metrics` built on counts at thresholds, as TF1's: auc (ROC or PR, TF1's four summation methods),
the *_at_thresholds counts, precision/recall at thresholds, sensitivity_at_specificity and
specificity_at_sensitivity.

The state is one float32 [num_thresholds] variable per count (`auc/true_positives:0`, ...), filled by
`_util.confusion_matrix_at_thresholds`: a prediction counts as positive at threshold t when it is > t.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.metrics._util import add_to, confusion_matrix_at_thresholds
from asyncflow.ops import array, math
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.math_extra import cumsum
from asyncflow.ops.math_more import div_no_nan
from asyncflow.variable_scope import variable_scope

__all__ = [
    "auc",
    "false_negatives_at_thresholds",
    "false_positives_at_thresholds",
    "precision_at_thresholds",
    "recall_at_thresholds",
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
    "true_negatives_at_thresholds",
    "true_positives_at_thresholds",
]

_KEPSILON = 1e-7  # TF1's endpoint thresholds sit this far outside [0, 1]
_SUMMATION_METHODS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def _even_thresholds(num_thresholds: int, top: float = 1.0 + _KEPSILON) -> list[float]:
    """num_thresholds - 2 evenly spaced thresholds inside (0, 1), with TF1's two endpoints added."""
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _KEPSILON] + inner + [top]


def _interpolate_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor, n: int) -> Tensor:
    """PR-AUC with TF1's careful interpolation (Davis & Goadrich): TP and TP + FP vary linearly between
    thresholds and the precision integral is taken in closed form per interval."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    prec_slope = div_no_nan(dtp, math.maximum(p[:n - 1] - p[1:], 0), name="prec_slope")
    intercept = tp[1:] - math.multiply(prec_slope, p[1:])
    safe_p_ratio = mr.where(math.logical_and(p[:n - 1] > 0, p[1:] > 0),
                            div_no_nan(p[:n - 1], math.maximum(p[1:], 0), name="recall_relative_ratio"),
                            array.ones_like(p[1:]))
    increments = div_no_nan(prec_slope * (dtp + intercept * math.log(safe_p_ratio)),
                            math.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment")
    return mr.reduce_sum(increments, name="interpolate_pr_auc")


def _area(tp: Tensor, fn: Tensor, tn: Tensor, fp: Tensor, n: int, curve: str, summation_method: str,
          name: str) -> Tensor:
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn, n)
    epsilon = 1.0e-6  # TF1's guard against 0 / 0 in the rates
    rec = math.divide(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math.divide(fp, fp + tn + epsilon), rec
    else:
        x, y = rec, math.divide(tp + epsilon, tp + fp + epsilon)
    dx = x[:n - 1] - x[1:]
    if summation_method in ("trapezoidal", "careful_interpolation"):
        height = (y[:n - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        height = math.minimum(y[:n - 1], y[1:])
    else:
        height = math.maximum(y[:n - 1], y[1:])
    return mr.reduce_sum(math.multiply(dx, height), name=name)


def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Any = None, updates_collections: Any = None, curve: str = "ROC",
        name: str | None = None, summation_method: str = "trapezoidal",
        thresholds: Sequence[float] | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.auc`: the area under the ROC or PR curve, from weighted counts at `num_thresholds`
    thresholds (or at `thresholds`, sorted, plus TF1's two endpoints); predictions must lie in [0, 1]."""
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if summation_method not in _SUMMATION_METHODS:
            raise ValueError(f"Invalid summation_method: {summation_method} summation_method should be "
                             "'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'.")
        if thresholds is not None:
            points = [0.0 - _KEPSILON] + sorted(thresholds) + [1.0 + _KEPSILON]
        else:
            points = _even_thresholds(num_thresholds)
        n = len(points)
        if curve == "PR" and summation_method == "trapezoidal":
            logging.getLogger("asyncflow").warning(
                'Trapezoidal rule is known to produce incorrect PR-AUCs; please switch to "careful_interpolation" '
                "instead.")
        values, updates = confusion_matrix_at_thresholds(labels, predictions, points, weights)
        value = _area(values["tp"], values["fn"], values["tn"], values["fp"], n, curve, summation_method, "value")
        add_to(metrics_collections, value)
        update_op = _area(updates["tp"], updates["fn"], updates["tn"], updates["fp"], n, curve, summation_method,
                          "update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def _count_at_thresholds(key: str, scope: str, labels: Any, predictions: Any, thresholds: Sequence[float],
                         weights: Any, metrics_collections: Any, updates_collections: Any,
                         name: str | None) -> tuple[Tensor, Tensor]:
    with variable_scope(name, scope, (predictions, labels, weights)):
        values, updates = confusion_matrix_at_thresholds(labels, predictions, thresholds, weights, includes=(key,))
        value = array.identity(values[key])
        add_to(metrics_collections, value)
        add_to(updates_collections, updates[key])
        return value, updates[key]


def true_positives_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                                 metrics_collections: Any = None, updates_collections: Any = None,
                                 name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.true_positives_at_thresholds`: per threshold, the weight of true labels predicted above it."""
    return _count_at_thresholds("tp", "true_positives", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def false_positives_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                                  metrics_collections: Any = None, updates_collections: Any = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.false_positives_at_thresholds`: per threshold, the weight of false labels predicted above it."""
    return _count_at_thresholds("fp", "false_positives", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def true_negatives_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                                 metrics_collections: Any = None, updates_collections: Any = None,
                                 name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.true_negatives_at_thresholds`: per threshold, the weight of false labels predicted at or
    below it."""
    return _count_at_thresholds("tn", "true_negatives", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def false_negatives_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                                  metrics_collections: Any = None, updates_collections: Any = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.false_negatives_at_thresholds`: per threshold, the weight of true labels predicted at or
    below it."""
    return _count_at_thresholds("fn", "false_negatives", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def _ratio_at_thresholds(kind: str, other: str, labels: Any, predictions: Any, thresholds: Sequence[float],
                         weights: Any, metrics_collections: Any, updates_collections: Any,
                         name: str | None) -> tuple[Tensor, Tensor]:
    """precision (tp / (tp + fp)) or recall (tp / (tp + fn)) per threshold, TF1's 1e-7 in the denominator."""
    with variable_scope(name, f"{kind}_at_thresholds", (predictions, labels, weights)):
        values, updates = confusion_matrix_at_thresholds(labels, predictions, thresholds, weights,
                                                         includes=("tp", other))

        def ratio(tp: Tensor, o: Tensor, suffix: str) -> Tensor:
            return math.divide(tp, 1e-7 + tp + o, name=f"{kind}_{suffix}")

        value = ratio(values["tp"], values[other], "value")
        add_to(metrics_collections, value)
        update_op = ratio(updates["tp"], updates[other], "update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def precision_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.precision_at_thresholds`: tp / (tp + fp + 1e-7) at each threshold."""
    return _ratio_at_thresholds("precision", "fp", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def recall_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
                         metrics_collections: Any = None, updates_collections: Any = None,
                         name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.recall_at_thresholds`: tp / (tp + fn + 1e-7) at each threshold."""
    return _ratio_at_thresholds("recall", "fn", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def _sensitivity(c: dict[str, Tensor], specificity: float, name: str) -> Tensor:
    """The recall at the threshold whose specificity is nearest `specificity` (its first one on a tie)."""
    specificities = math.divide(c["tn"], c["tn"] + c["fp"] + _KEPSILON)
    index = math.cast(mr.argmin(math.abs(specificities - specificity), 0), dtypes.int32)
    return math.divide(c["tp"][index], c["tp"][index] + c["fn"][index] + _KEPSILON, name)


def _specificity(c: dict[str, Tensor], sensitivity: float, name: str) -> Tensor:
    """The specificity at the threshold whose recall is nearest `sensitivity` (its last one on a tie,
    found as TF1 does: the argmax of the running count of nearest ones)."""
    sensitivities = math.divide(c["tp"], c["tp"] + c["fn"] + _KEPSILON)
    distance = math.abs(sensitivities - sensitivity)
    nearest = math.cast(math.equal(distance, mr.reduce_min(distance)), dtypes.int64)
    index = math.cast(mr.argmax(cumsum(nearest), 0), dtypes.int32)
    return math.divide(c["tn"][index], c["tn"][index] + c["fp"][index] + _KEPSILON, name)


def sensitivity_at_specificity(labels: Any, predictions: Any, specificity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.sensitivity_at_specificity`: the recall where the specificity is nearest `specificity`."""
    if specificity < 0 or specificity > 1:
        raise ValueError(f"`specificity` must be in the range [0, 1]. Currently, `specificity` got {specificity}.")
    with variable_scope(name, "sensitivity_at_specificity", (predictions, labels, weights)):
        values, updates = confusion_matrix_at_thresholds(labels, predictions, _even_thresholds(num_thresholds),
                                                         weights)
        value = _sensitivity(values, specificity, "value")
        add_to(metrics_collections, value)
        update_op = _sensitivity(updates, specificity, "update_op")
        add_to(updates_collections, update_op)
        return value, update_op


def specificity_at_sensitivity(labels: Any, predictions: Any, sensitivity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.specificity_at_sensitivity`: the specificity where the recall is nearest `sensitivity`."""
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError(f"`sensitivity` must be in the range [0, 1]. Currently, `sensitivity` is {sensitivity}.")
    with variable_scope(name, "specificity_at_sensitivity", (predictions, labels, weights)):
        # TF1's top endpoint here is 1 - 1e-7, not 1 + 1e-7 as in auc.
        points = _even_thresholds(num_thresholds, top=1.0 - _KEPSILON)
        values, updates = confusion_matrix_at_thresholds(labels, predictions, points, weights)
        value = _specificity(values, sensitivity, "value")
        add_to(metrics_collections, value)
        update_op = _specificity(updates, sensitivity, "update_op")
        add_to(updates_collections, update_op)
        return value, update_op
