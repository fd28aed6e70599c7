"""af.metrics' state and wiring as TF1's: variable and op names (the same program gave these names under
TF 2.21's compat.v1 metrics), LOCAL_VARIABLES and METRIC_VARIABLES (never GLOBAL or TRAINABLE),
local_variables_initializer resetting a stream, the FailedPreconditionError of an update before it,
metrics_collections / updates_collections, TF1's shape checks (ValueError at construction,
InvalidArgumentError at run time) and the squeezing of a trailing 1."""

import pytest

import asyncflow as af
from asyncflow.metrics._util import METRIC_VARIABLES


@pytest.fixture()
def graph():
    g = af.Graph()
    with g.as_default():
        yield g


def _names(ts):
    return [t.name for t in ts]


def test_names_and_collections_as_tf1(graph):
    lab, p = af.placeholder(af.float32, [None]), af.placeholder(af.float32, [None])
    li = af.placeholder(af.int64, [None])
    made = {
        "accuracy": af.metrics.accuracy(lab, p), "accuracy_1": af.metrics.accuracy(lab, p, p),
        "precision": af.metrics.precision(lab, p), "auc": af.metrics.auc(lab, p),
        "rmse": af.metrics.root_mean_squared_error(lab, p), "tp": af.metrics.true_positives(lab, p),
        "pat": af.metrics.precision_at_thresholds(lab, p, [0.5]), "mpca": af.metrics.mean_per_class_accuracy(li, li, 3),
        "miou": af.metrics.mean_iou(li, li, 3), "mt": af.metrics.mean_tensor(af.zeros([2, 3])),
        "mcd": af.metrics.mean_cosine_distance(af.zeros([2, 3]), af.zeros([2, 3]), 1),
        "named": af.metrics.mean(p, name="my_mean"),
    }
    # TF 2.21 names (its update ops of counts differ only because it makes resource variables).
    assert {k: _names(v) for k, v in made.items()} == {
        "accuracy": ["accuracy/value:0", "accuracy/update_op:0"],
        "accuracy_1": ["accuracy_1/value:0", "accuracy_1/update_op:0"],
        "precision": ["precision/value:0", "precision/update_op:0"],
        "auc": ["auc/value:0", "auc/update_op:0"],
        "rmse": ["Sqrt:0", "Sqrt_1:0"],
        "tp": ["true_positives/Identity:0", "true_positives/AssignAdd:0"],
        "pat": ["precision_at_thresholds/precision_value:0", "precision_at_thresholds/precision_update_op:0"],
        "mpca": ["mean_accuracy/mean_accuracy:0", "mean_accuracy/update_op:0"],
        "miou": ["mean_iou/Select_1:0", "mean_iou/AssignAdd:0"],
        "mt": ["mean/value:0", "mean/update_op:0"],
        "mcd": ["Sub:0", "Sub_1:0"],
        "named": ["my_mean/value:0", "my_mean/update_op:0"],
    }
    local = _names(af.local_variables())
    assert local == [
        "accuracy/total:0", "accuracy/count:0", "accuracy_1/total:0", "accuracy_1/count:0",
        "precision/true_positives/count:0", "precision/false_positives/count:0",
        "auc/true_positives:0", "auc/false_negatives:0", "auc/true_negatives:0", "auc/false_positives:0",
        "root_mean_squared_error/total:0", "root_mean_squared_error/count:0", "true_positives/count:0",
        "precision_at_thresholds/true_positives:0", "precision_at_thresholds/false_positives:0",
        "mean_accuracy/total:0", "mean_accuracy/count:0", "mean_iou/total_confusion_matrix:0",
        "mean/total_tensor:0", "mean/count_tensor:0", "mean_cosine_distance/total:0",
        "mean_cosine_distance/count:0", "my_mean/total:0", "my_mean/count:0"]
    assert METRIC_VARIABLES == "metric_variables"  # TF1's GraphKeys.METRIC_VARIABLES
    assert _names(af.get_collection(METRIC_VARIABLES)) == local
    assert af.global_variables() == [] and af.trainable_variables() == []
    by_name = {v.name: v for v in af.local_variables()}
    assert by_name["auc/true_positives:0"].shape.as_list() == [200]
    assert by_name["mean_iou/total_confusion_matrix:0"].dtype.base_dtype == af.float64


def test_reset_by_local_variables_initializer_and_uninitialised_update(graph):
    lab, p, w = (af.placeholder(af.float32, [None]) for _ in range(3))
    acc, acc_update = af.metrics.accuracy(lab, p, w)
    auc, auc_update = af.metrics.auc(lab, p)
    feed = {lab: [1, 0, 1, 1], p: [1, 0, 0, 1], w: [1, 1, 2, 0]}
    with af.Session() as s:
        with pytest.raises(af.errors.FailedPreconditionError, match="uninitialized value accuracy/(total|count)"):
            s.run(acc_update, feed)
        with pytest.raises(af.errors.FailedPreconditionError, match="auc/"):
            s.run(auc, feed)
        s.run(af.local_variables_initializer())
        assert s.run(acc_update, feed) == pytest.approx(0.5)  # (1 + 1 + 0 + 0) / (1 + 1 + 2)
        assert s.run(acc_update, {lab: [1], p: [1], w: [4]}) == pytest.approx(0.75)
        assert s.run(acc) == pytest.approx(0.75)  # reading the value does not update
        s.run(af.local_variables_initializer())
        assert s.run(acc) == 0.0 and s.run(auc) == 0.0
        assert s.run(acc_update, {lab: [1], p: [0], w: [1]}) == 0.0


def test_metrics_and_updates_collections(graph):
    p = af.constant([0.2, 0.8])
    v, u = af.metrics.mean(p, metrics_collections=["m"], updates_collections=["u"])
    v2, u2 = af.metrics.auc([0, 1], p, metrics_collections=["m"], updates_collections=["u", "u2"])
    v3, u3 = af.metrics.mean_cosine_distance(af.ones([1, 2]), af.ones([1, 2]), 1, metrics_collections="m")
    v4, u4 = af.metrics.true_positives([1, 0], [1, 1], updates_collections=["u"])
    assert af.get_collection("m") == [v, v2, v3]
    assert af.get_collection("u") == [u, u2, u4] and af.get_collection("u2") == [u2]
    af.metrics.accuracy([1], [1])  # none given: nothing added
    assert len(af.get_collection("m")) == 3


def test_shape_errors_at_construction(graph):
    with pytest.raises(ValueError, match=r"Shapes \(5,\) and \(6,\) are incompatible"):
        af.metrics.accuracy(af.zeros([6]), af.zeros([5]))
    with pytest.raises(ValueError, match="weights can not be broadcast to values. Mismatch at dim 0"):
        af.metrics.mean(af.zeros([2, 3]), af.ones([4]))  # [4] gains a trailing 1: [4, 1] against [2, 3]
    with pytest.raises(ValueError, match="values.rank=2. weights.rank=4"):
        af.metrics.mean(af.zeros([2, 3]), af.ones([2, 3, 1, 1]))
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        af.metrics.mean_squared_error(af.zeros([2, 3]), af.zeros([2, 3]), af.ones([3, 3]))
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\)"):
        af.metrics.true_positives(af.zeros([2, 3]), af.zeros([2, 3]), af.ones([2, 3, 2, 2]))
    with pytest.raises(ValueError, match="Curve must be either ROC or PR"):
        af.metrics.auc(af.zeros([3]), af.zeros([3]), curve="XX")
    with pytest.raises(ValueError, match="Invalid summation_method: XX"):
        af.metrics.auc(af.zeros([3]), af.zeros([3]), summation_method="XX")
    with pytest.raises(ValueError, match="incompatible"):
        af.metrics.auc(af.zeros([3]), af.zeros([4]))
    with pytest.raises(ValueError, match="`specificity` must be in the range"):
        af.metrics.sensitivity_at_specificity(af.zeros([3]), af.zeros([3]), 1.5)
    with pytest.raises(ValueError, match="`sensitivity` must be in the range"):
        af.metrics.specificity_at_sensitivity(af.zeros([3]), af.zeros([3]), -0.5)
    for metric in (af.metrics.mean_per_class_accuracy, af.metrics.mean_iou):
        with pytest.raises(ValueError, match="incompatible"):
            metric(af.zeros([3], af.int64), af.zeros([4], af.int64), 3)
    with pytest.raises(ValueError, match="fully defined"):
        af.metrics.mean_tensor(af.placeholder(af.float32, [None, 2]))
    with pytest.raises(ValueError, match="Predictions rank should be"):
        af.metrics.recall_at_k(af.zeros([2, 1, 1], af.int64), af.zeros([2, 5]), 1)
    # Weights of the values' shape, a broadcastable one, and a column for a row-per-example are accepted.
    af.metrics.mean(af.zeros([2, 3]), af.ones([1, 3]))
    af.metrics.mean(af.zeros([2, 3]), af.ones([2]))


def test_shape_errors_at_run_time(graph):
    v, w = af.placeholder(af.float32, [None]), af.placeholder(af.float32, [None])
    _, mean_update = af.metrics.mean(v, w)
    lab, p = af.placeholder(af.float32, [None]), af.placeholder(af.float32, [None])
    _, auc_update = af.metrics.auc(lab, p)
    with af.Session() as s:
        s.run(af.local_variables_initializer())
        with pytest.raises(af.errors.InvalidArgumentError, match="weights can not be broadcast to values"):
            s.run(mean_update, {v: [1.0, 2.0, 3.0], w: [1.0, 2.0]})
        assert s.run(mean_update, {v: [1.0, 2.0, 3.0], w: [2.0]}) == pytest.approx(2.0)  # a [1] broadcasts
        with pytest.raises(af.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
            s.run(auc_update, {lab: [1.0, 0.0], p: [0.5, 1.5]})


def test_trailing_dimensions_of_one_are_squeezed(graph):
    lab = af.constant([[1.0], [0.0], [1.0]])  # [3, 1] against predictions [3]
    v, u = af.metrics.accuracy(lab, af.constant([1.0, 1.0, 1.0]), weights=af.constant([[1.0], [1.0], [2.0]]))
    unknown = af.placeholder(af.float32)  # unknown rank: squeezed at run time
    v2, u2 = af.metrics.mean_absolute_error(unknown, af.constant([1.0, 2.0]), weights=af.placeholder_with_default(
        af.constant([[1.0], [3.0]]), None))
    with af.Session() as s:
        s.run(af.local_variables_initializer())
        assert s.run(u) == pytest.approx(0.75)
        assert s.run(u2, {unknown: [[0.0], [0.0]]}) == pytest.approx((1 + 6) / 4)
