"""numpy references of TF1's metrics, computed on all the data at once (the streams in the tests feed the
same data batch by batch)."""

import numpy as np

KEPSILON = 1e-7


def weighted_mean(values, weights=None):
    values = np.asarray(values, np.float64)
    w = np.ones_like(values) if weights is None else np.broadcast_to(weights, values.shape)
    return (values * w).sum() / w.sum() if w.sum() else 0.0


def even_thresholds(n, top=1.0 + KEPSILON):
    return np.array([-KEPSILON] + [(i + 1) / (n - 1) for i in range(n - 2)] + [top], np.float32)


def counts_at_thresholds(labels, predictions, thresholds, weights=None):
    """tp, fn, tn, fp per threshold: a prediction is positive at t when it is > t."""
    p = np.asarray(predictions, np.float32).ravel()[None, :]
    lab = np.asarray(labels).astype(bool).ravel()[None, :]
    w = np.ones(p.shape[1]) if weights is None else np.broadcast_to(weights, np.shape(predictions)).ravel()
    pos = p > np.asarray(thresholds, np.float32)[:, None]
    return {"tp": ((lab & pos) * w).sum(1), "fn": ((lab & ~pos) * w).sum(1),
            "tn": ((~lab & ~pos) * w).sum(1), "fp": ((~lab & pos) * w).sum(1)}


def auc(labels, predictions, weights=None, num_thresholds=200, curve="ROC", summation_method="trapezoidal",
        thresholds=None):
    points = (np.array([-KEPSILON] + sorted(thresholds) + [1 + KEPSILON], np.float32) if thresholds is not None
              else even_thresholds(num_thresholds))
    c = counts_at_thresholds(labels, predictions, points, weights)
    tp, fn, tn, fp = c["tp"], c["fn"], c["tn"], c["fp"]
    if curve == "PR" and summation_method == "careful_interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = np.maximum(p[:-1] - p[1:], 0)
        slope = np.divide(dtp, dp, out=np.zeros_like(dtp), where=dp != 0)
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), p[:-1] / np.where(p[1:] > 0, p[1:], 1), 1.0)
        num = slope * (dtp + intercept * np.log(ratio))
        den = np.maximum(tp[1:] + fn[1:], 0)
        return np.divide(num, den, out=np.zeros_like(num), where=den != 0).sum()
    eps = 1e-6
    rec = (tp + eps) / (tp + fn + eps)
    x, y = (fp / (fp + tn + eps), rec) if curve == "ROC" else (rec, (tp + eps) / (tp + fp + eps))
    height = {"trapezoidal": (y[:-1] + y[1:]) / 2, "careful_interpolation": (y[:-1] + y[1:]) / 2,
              "minoring": np.minimum(y[:-1], y[1:]), "majoring": np.maximum(y[:-1], y[1:])}[summation_method]
    return ((x[:-1] - x[1:]) * height).sum()


def confusion(labels, predictions, num_classes, weights=None):
    cm = np.zeros((num_classes, num_classes))
    w = np.ones(len(labels)) if weights is None else weights
    np.add.at(cm, (labels, predictions), w)
    return cm


def mean_iou(labels, predictions, num_classes, weights=None):
    cm = confusion(labels, predictions, num_classes, weights)
    den = cm.sum(0) + cm.sum(1) - np.diag(cm)
    valid = den != 0
    return (np.diag(cm)[valid] / den[valid]).sum() / valid.sum() if valid.any() else 0.0


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None):
    cm = confusion(labels, predictions, num_classes, weights)
    per_class = np.divide(np.diag(cm), cm.sum(1), out=np.zeros(num_classes), where=cm.sum(1) != 0)
    return per_class.mean()


def sensitivity_at_specificity(labels, predictions, specificity, weights=None, num_thresholds=200):
    c = counts_at_thresholds(labels, predictions, even_thresholds(num_thresholds), weights)
    specs = c["tn"] / (c["tn"] + c["fp"] + KEPSILON)
    i = np.argmin(np.abs(specs - specificity))
    return c["tp"][i] / (c["tp"][i] + c["fn"][i] + KEPSILON)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None, num_thresholds=200):
    c = counts_at_thresholds(labels, predictions, even_thresholds(num_thresholds, 1 - KEPSILON), weights)
    sens = c["tp"] / (c["tp"] + c["fn"] + KEPSILON)
    dist = np.abs(sens - sensitivity)
    i = np.flatnonzero(dist == dist.min())[-1]  # TF1 takes the last of the nearest
    return c["tn"][i] / (c["tn"][i] + c["fp"][i] + KEPSILON)


def at_k(labels, scores, k, kind, class_id=None, weights=None):
    """recall or precision at k by TF1's per-row set semantics (every dense label value counts once)."""
    labels = np.asarray(labels)
    labels = labels[:, None] if labels.ndim == 1 else labels
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    tp = other = 0.0
    for row, (lab, pred) in enumerate(zip(labels, top)):
        lab, pred = set(lab.tolist()), set(pred.tolist())
        if class_id is not None:
            lab, pred = lab & {class_id}, pred & {class_id}
        w = 1.0 if weights is None else weights[row]
        tp += w * len(lab & pred)
        other += w * len(lab - pred if kind == "recall" else pred - lab)
    return tp / (tp + other) if tp + other else np.nan  # 0 / 0 is NaN in TF1


def average_precision(labels, scores, k, num_classes, weights=None):
    """TF1's mean average precision at k: per row, the sum of precision@j over the ranks j whose id is a
    label, over min(labels >= 0 counted with duplicates, k); labels >= num_classes never match."""
    labels = np.asarray(labels)
    labels = labels[:, None] if labels.ndim == 1 else labels
    labels = np.where(labels >= num_classes, -1, labels)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    w = np.ones(len(labels)) if weights is None else np.asarray(weights, np.float64)
    total = 0.0
    for row, (lab, pred) in enumerate(zip(labels, top)):
        relevant = np.isin(pred, lab)
        precision_at = np.cumsum(relevant) / np.arange(1, k + 1)
        total += w[row] * (precision_at * relevant).sum() / min((lab >= 0).sum(), k)
    return total / w.sum()
