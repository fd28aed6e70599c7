"""af.metrics streamed over three batches, with and without weights: each update's value and the final value
against numpy references computed on all the data at once (tests/metrics/reference.py), and against the
values TF 2.21's compat.v1 metrics gave for the same program (pinned below, checked with tfdiff)."""

import numpy as np
import pytest

import asyncflow as af
from tests.metrics import reference as ref

N_BATCHES = 3
RNG = np.random.RandomState(0)
P = [RNG.rand(6).astype(np.float32) for _ in range(N_BATCHES)]  # scores in [0, 1]
L = [(RNG.rand(6) > 0.5).astype(np.float32) for _ in range(N_BATCHES)]
W = [(RNG.rand(6) * (RNG.rand(6) > 0.2)).astype(np.float32) for _ in range(N_BATCHES)]  # some zero weights
LI = [RNG.randint(0, 4, 6).astype(np.int64) for _ in range(N_BATCHES)]  # class ids
PI = [RNG.randint(0, 4, 6).astype(np.int64) for _ in range(N_BATCHES)]
X = [RNG.randn(6, 3).astype(np.float32) for _ in range(N_BATCHES)]
Y = [RNG.randn(6, 3).astype(np.float32) for _ in range(N_BATCHES)]
X = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in X]
Y = [y / np.linalg.norm(y, axis=1, keepdims=True) for y in Y]
THRESHOLDS = [0.2, 0.5, 0.8]
SUMMATIONS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")

# Final values of the same streams under TF 2.21 (tf.compat.v1.metrics), checked with tfdiff.
TF_VALUES = {
    "accuracy": 0.72222221, "mean": 0.55460709, "precision": 0.75, "recall": 0.81818181, "mse": 0.22136654,
    "mae": 0.39129278, "rmse": 0.47049606, "tp": 9, "fp": 3, "tn": 4, "fn": 2, "mpca": 0.125,
    "miou": 0.06666667, "pb": 0.22222222,
    "mt": [0.51814842, 0.84418631, 0.54582071, 0.33848467, 0.41186607, 0.66913629],
    "mre": 0.40176737, "mcd": 1.0166,
    "auc_ROC_trapezoidal": 0.72077918, "auc_ROC_careful_interpolation": 0.72077918,
    "auc_ROC_minoring": 0.68831164, "auc_ROC_majoring": 0.75324667, "auc_PR_trapezoidal": 0.70587277,
    "auc_PR_careful_interpolation": 0.7127496, "auc_PR_minoring": 0.64670241, "auc_PR_majoring": 0.76504326,
    "auc200": 0.72727263, "auc_thr": 0.7337662,
    "tpt": [10.0, 9.0, 3.0], "fpt": [5.0, 3.0, 1.0], "tnt": [2.0, 4.0, 6.0], "fnt": [1.0, 2.0, 8.0],
    "pat": [0.66666669, 0.75, 0.75], "rat": [0.90909094, 0.81818181, 0.27272728],
    "sens": 0.81818181, "spec": 0.85714287,
    "accuracy_w": 0.80135667, "mean_w": 0.55826783, "precision_w": 0.81219703, "recall_w": 0.89125669,
    "mse_w": 0.21468465, "mae_w": 0.39641383, "rmse_w": 0.46334076, "tp_w": 3.5947633, "fp_w": 0.83121115,
    "tn_w": 1.5278482, "fn_w": 0.43860152, "mpca_w": 0.19440275, "miou_w": 0.094031595, "pb_w": 0.20203815,
    "mt_w": [0.51933634, 0.0, 0.53677875, 0.48168507, 0.60784978, 0.76678401],
    "mre_w": 0.36384383, "mcd_w": 0.87817055,
    "auc_ROC_trapezoidal_w": 0.69740361, "auc_ROC_careful_interpolation_w": 0.69740361,
    "auc_ROC_minoring_w": 0.67965627, "auc_ROC_majoring_w": 0.71515101, "auc_PR_trapezoidal_w": 0.63132823,
    "auc_PR_careful_interpolation_w": 0.67894828, "auc_PR_minoring_w": 0.49848598,
    "auc_PR_majoring_w": 0.76417041, "auc200_w": 0.69353312, "auc_thr_w": 0.74067813,
    "tpt_w": [4.0333648, 3.5947633, 0.36872518], "fpt_w": [1.5061474, 0.83121115, 0.57019675],
    "tnt_w": [0.85291195, 1.5278482, 1.7888625], "fnt_w": [0.0, 0.43860152, 3.6646395],
    "pat_w": [0.72810829, 0.81219703, 0.39271116], "rat_w": [1.0, 0.89125669, 0.091418751],
    "sens_w": 0.89125669, "spec_w": 0.75829482,
}


def _build(m, p, lab, w, li, pi, x, y):
    pb = af.cast(p > 0.5, af.float32)
    ms = {}
    for tag, ww in (("", None), ("_w", w)):
        ms["accuracy" + tag] = m.accuracy(lab, pb, ww)
        ms["mean" + tag] = m.mean(p, ww)
        ms["precision" + tag] = m.precision(lab, pb, ww)
        ms["recall" + tag] = m.recall(lab, pb, ww)
        ms["mse" + tag] = m.mean_squared_error(lab, p, ww)
        ms["mae" + tag] = m.mean_absolute_error(lab, p, ww)
        ms["rmse" + tag] = m.root_mean_squared_error(lab, p, ww)
        ms["tp" + tag] = m.true_positives(lab, pb, ww)
        ms["fp" + tag] = m.false_positives(lab, pb, ww)
        ms["tn" + tag] = m.true_negatives(lab, pb, ww)
        ms["fn" + tag] = m.false_negatives(lab, pb, ww)
        ms["mpca" + tag] = m.mean_per_class_accuracy(li, pi, 4, ww)
        ms["miou" + tag] = m.mean_iou(li, pi, 4, ww)
        ms["pb" + tag] = m.percentage_below(p, 0.4, ww)
        ms["mt" + tag] = m.mean_tensor(p, ww)
        ms["mre" + tag] = m.mean_relative_error(lab, p, p + 0.5, ww)
        ms["mcd" + tag] = m.mean_cosine_distance(y, x, 1, None if ww is None else af.reshape(ww, [6, 1]))
        for curve in ("ROC", "PR"):
            for sm in SUMMATIONS:
                ms[f"auc_{curve}_{sm}{tag}"] = m.auc(lab, p, ww, num_thresholds=20, curve=curve, summation_method=sm)
        ms["auc200" + tag] = m.auc(lab, p, ww)
        ms["auc_thr" + tag] = m.auc(lab, p, ww, thresholds=[0.7, 0.3, 0.5])
        ms["tpt" + tag] = m.true_positives_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["fpt" + tag] = m.false_positives_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["tnt" + tag] = m.true_negatives_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["fnt" + tag] = m.false_negatives_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["pat" + tag] = m.precision_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["rat" + tag] = m.recall_at_thresholds(lab, p, THRESHOLDS, ww)
        ms["sens" + tag] = m.sensitivity_at_specificity(lab, p, 0.6, ww, num_thresholds=15)
        ms["spec" + tag] = m.specificity_at_sensitivity(lab, p, 0.6, ww, num_thresholds=15)
    return ms


@pytest.fixture(scope="module")
def streamed():
    """{metric: (value before any batch, [update_op's value after each batch], final value)}."""
    g = af.Graph()
    with g.as_default():
        p, lab, w = (af.placeholder(af.float32, [6]) for _ in range(3))
        li, pi = af.placeholder(af.int64, [6]), af.placeholder(af.int64, [6])
        x, y = af.placeholder(af.float32, [6, 3]), af.placeholder(af.float32, [6, 3])
        ms = _build(af.metrics, p, lab, w, li, pi, x, y)
        with af.Session() as s:
            s.run(af.local_variables_initializer())
            before = s.run({k: v for k, (v, _) in ms.items()})
            updates = [s.run({k: u for k, (_, u) in ms.items()},
                             {p: P[i], lab: L[i], w: W[i], li: LI[i], pi: PI[i], x: X[i], y: Y[i]})
                       for i in range(N_BATCHES)]
            final = s.run({k: v for k, (v, _) in ms.items()})
    return {k: (before[k], [u[k] for u in updates], final[k]) for k in ms}


def _reference(key, n):
    """The numpy value of metric `key` over the first n batches."""
    weighted = key.endswith("_w")
    base = key[:-2] if weighted else key
    p, lab, li, pi = (np.concatenate(a[:n]) for a in (P, L, LI, PI))
    w = np.concatenate(W[:n]) if weighted else None
    x, y = np.concatenate(X[:n]), np.concatenate(Y[:n])
    pb = (p > 0.5).astype(np.float32)
    ww = np.ones_like(p) if w is None else w
    tp, fp = (ww * ((lab == 1) & (pb == 1))).sum(), (ww * ((lab == 0) & (pb == 1))).sum()
    tn, fn = (ww * ((lab == 0) & (pb == 0))).sum(), (ww * ((lab == 1) & (pb == 0))).sum()
    if base.startswith(("auc_ROC", "auc_PR")):
        _, curve, sm = base.split("_", 2)
        return ref.auc(lab, p, w, num_thresholds=20, curve=curve, summation_method=sm)
    if base in ("tpt", "fpt", "tnt", "fnt", "pat", "rat"):
        c = ref.counts_at_thresholds(lab, p, THRESHOLDS, w)
        if base == "pat":
            return c["tp"] / (1e-7 + c["tp"] + c["fp"])
        if base == "rat":
            return c["tp"] / (1e-7 + c["tp"] + c["fn"])
        return c[base[:2]]
    if base == "mt":
        ws = [np.ones(6) if w is None else W[i] for i in range(n)]
        total, count = sum(wi * P[i] for i, wi in enumerate(ws)), sum(ws)
        return np.divide(total, count, out=np.zeros(6), where=count != 0)
    return {
        "accuracy": lambda: ref.weighted_mean(pb == lab, w),
        "mean": lambda: ref.weighted_mean(p, w),
        "precision": lambda: tp / (tp + fp) if tp + fp else 0.0,
        "recall": lambda: tp / (tp + fn) if tp + fn else 0.0,
        "mse": lambda: ref.weighted_mean((lab - p) ** 2, w),
        "mae": lambda: ref.weighted_mean(np.abs(lab - p), w),
        "rmse": lambda: np.sqrt(ref.weighted_mean((lab - p) ** 2, w)),
        "tp": lambda: tp, "fp": lambda: fp, "tn": lambda: tn, "fn": lambda: fn,
        "mpca": lambda: ref.mean_per_class_accuracy(li, pi, 4, w),
        "miou": lambda: ref.mean_iou(li, pi, 4, w),
        "pb": lambda: ref.weighted_mean(p < 0.4, w),
        "mre": lambda: ref.weighted_mean(np.abs(lab - p) / (p + 0.5), w),
        "mcd": lambda: 1 - ref.weighted_mean((x * y).sum(1), w),
        "auc200": lambda: ref.auc(lab, p, w),
        "auc_thr": lambda: ref.auc(lab, p, w, thresholds=[0.7, 0.3, 0.5]),
        "sens": lambda: ref.sensitivity_at_specificity(lab, p, 0.6, w, num_thresholds=15),
        "spec": lambda: ref.specificity_at_sensitivity(lab, p, 0.6, w, num_thresholds=15),
    }[base]()


@pytest.mark.parametrize("key", sorted(TF_VALUES))
def test_streamed_metric_matches_numpy_and_tf(streamed, key):
    before, updates, final = streamed[key]
    rtol = 1e-4 if key.startswith(("auc", "sens", "spec")) else 1e-5  # float32 sums over 20-200 thresholds
    np.testing.assert_allclose(final, _reference(key, N_BATCHES), rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(final, TF_VALUES[key], rtol=1e-5, atol=1e-6)
    base = key[:-2] if key.endswith("_w") else key
    if base not in ("mpca", "miou"):  # as in TF1 these two update ops return their state (tested below)
        for n, got in enumerate(updates, 1):  # the update op evaluates to the metric after its batch
            np.testing.assert_allclose(got, _reference(key, n), rtol=rtol, atol=1e-6)
    if base in ("mean", "accuracy", "precision", "recall", "mse", "mae", "tp", "pb", "mt", "auc200"):
        np.testing.assert_array_equal(before, np.zeros_like(before))  # no data yet: 0, not NaN


def test_update_ops_of_per_class_metrics_return_their_state(streamed):
    li, pi = np.concatenate(LI), np.concatenate(PI)
    for tag, w in (("", None), ("_w", np.concatenate(W))):
        cm = ref.confusion(li, pi, 4, w)
        np.testing.assert_allclose(streamed["miou" + tag][1][-1], cm, rtol=1e-6)  # float64 total matrix
        per_class = np.divide(np.diag(cm), cm.sum(1), out=np.zeros(4), where=cm.sum(1) != 0)
        np.testing.assert_allclose(streamed["mpca" + tag][1][-1], per_class, rtol=1e-5)


def test_dtypes_and_static_shapes():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.float32, [None])
        li = af.placeholder(af.int64, [None])
        v, u = af.metrics.mean_iou(li, li, 3)
        assert (v.dtype, v.shape.as_list(), u.dtype.base_dtype, u.shape.as_list()) == (af.float32, [], af.float64,
                                                                                         [3, 3])
        v, u = af.metrics.mean_per_class_accuracy(li, li, 3)
        assert (v.shape.as_list(), u.shape.as_list()) == ([], [3])
        v, u = af.metrics.precision_at_thresholds(p, p, [0.1, 0.9])
        assert (v.dtype, v.shape.as_list(), u.shape.as_list()) == (af.float32, [2], [2])
        v, u = af.metrics.recall_at_k(li, af.zeros([4, 5]), 2)
        assert (v.dtype, u.dtype) == (af.float64, af.float64)
        v, u = af.metrics.mean_tensor(af.zeros([2, 3], af.int32))
        assert (v.dtype, v.shape.as_list()) == (af.float32, [2, 3])
