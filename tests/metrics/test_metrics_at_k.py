"""af.metrics.recall_at_k / precision_at_k (and the *_at_top_k forms) streamed over three batches against a
numpy reference of TF1's per-row set counting, and against TF 2.21's values and names for the same program
(pinned below, checked with tfdiff)."""

import numpy as np
import pytest

import asyncflow as af
from tests.metrics import reference as ref

RNG = np.random.RandomState(1)
SCORES = [RNG.rand(5, 6).astype(np.float32) for _ in range(3)]
LABELS2 = [RNG.randint(-1, 7, (5, 3)).astype(np.int64) for _ in range(3)]  # -1 and 6 are never predicted
LABELS1 = [RNG.randint(0, 6, 5).astype(np.int64) for _ in range(3)]
WEIGHTS = [RNG.rand(5).astype(np.float32) for _ in range(3)]

TF_VALUES = {  # TF 2.21, tf.compat.v1.metrics, same streams
    "r1": 0.10526316, "p1": 0.26666667, "r1_1": 0.2, "p1_1w": 0.13332377, "r1_w": 0.10865886, "r1_c": 1,
    "p1_c": 0.14181691, "r3": 0.36842105, "p3": 0.31111111, "r3_1": 0.46666667, "p3_1w": 0.11735822,
    "r3_w": 0.34043364, "r3_c": 1, "p3_c": 0.077997786, "rtop": 0.23684211, "ptop": 0.3, "sp": 0.16666667,
}


def test_at_k_streams_match_numpy_tf_and_names():
    g = af.Graph()
    with g.as_default():
        s_ = af.placeholder(af.float32, [5, 6])
        l2, l1 = af.placeholder(af.int64, [5, 3]), af.placeholder(af.int64, [5])
        w = af.placeholder(af.float32, [5])
        m = af.metrics
        ms, refs = {}, {}
        for k in (1, 3):
            ms[f"r{k}"], refs[f"r{k}"] = m.recall_at_k(l2, s_, k), ("L2", k, "recall", None, False)
            ms[f"p{k}"], refs[f"p{k}"] = m.precision_at_k(l2, s_, k), ("L2", k, "precision", None, False)
            ms[f"r{k}_1"], refs[f"r{k}_1"] = m.recall_at_k(l1, s_, k), ("L1", k, "recall", None, False)
            ms[f"p{k}_1w"] = m.precision_at_k(l1, s_, k, weights=w)
            refs[f"p{k}_1w"] = ("L1", k, "precision", None, True)
            ms[f"r{k}_w"], refs[f"r{k}_w"] = m.recall_at_k(l2, s_, k, weights=w), ("L2", k, "recall", None, True)
            ms[f"r{k}_c"], refs[f"r{k}_c"] = m.recall_at_k(l2, s_, k, class_id=2), ("L2", k, "recall", 2, False)
            ms[f"p{k}_c"] = m.precision_at_k(l2, s_, k, class_id=2, weights=w)
            refs[f"p{k}_c"] = ("L2", k, "precision", 2, True)
        _, idx = af.nn.top_k(s_, 2)
        ms["rtop"], refs["rtop"] = m.recall_at_top_k(l2, idx), ("L2", 2, "recall", None, False)
        ms["ptop"], refs["ptop"] = m.precision_at_top_k(l2, idx, k=2), ("L2", 2, "precision", None, False)
        ms["sp"], refs["sp"] = m.sparse_precision_at_k(l1, s_, 2), ("L1", 2, "precision", None, False)
        # TF1's names: the value is the scope itself, the state two float64 scalars inside it.
        assert [t.name for t in ms["r3"]] == ["recall_at_3:0", "recall_at_3/update:0"]
        assert [t.name for t in ms["p1_c"]] == ["precision_at_1_class2:0", "precision_at_1_class2/update:0"]
        assert [t.name for t in ms["rtop"]] == ["recall_at_k:0", "recall_at_k/update:0"]
        names = [v.name for v in af.get_collection(af.GraphKeys.LOCAL_VARIABLES)]
        assert names[:4] == ["recall_at_1/true_positive_at_1:0", "recall_at_1/false_negative_at_1:0",
                             "precision_at_1/true_positive_at_1:0", "precision_at_1/false_positive_at_1:0"]
        assert "recall_at_k/false_negative_at_k:0" in names
        with af.Session() as sess:
            sess.run(af.local_variables_initializer())
            for i in range(3):
                ups = sess.run({k: u for k, (_, u) in ms.items()},
                               {s_: SCORES[i], l2: LABELS2[i], l1: LABELS1[i], w: WEIGHTS[i]})
                for key, (labels, k, kind, class_id, weighted) in refs.items():
                    lab = np.concatenate((LABELS2 if labels == "L2" else LABELS1)[:i + 1])
                    wts = np.concatenate(WEIGHTS[:i + 1]) if weighted else None
                    want = ref.at_k(lab, np.concatenate(SCORES[:i + 1]), k, kind, class_id, wts)
                    np.testing.assert_allclose(ups[key], want, rtol=1e-6, err_msg=key, equal_nan=True)
            final = sess.run({k: v for k, (v, _) in ms.items()})
    for key, want in TF_VALUES.items():
        np.testing.assert_allclose(final[key], want, rtol=1e-6, err_msg=key)


def test_at_k_before_any_example_is_nan_and_labels_must_be_int64():
    g = af.Graph()
    with g.as_default():
        v, _ = af.metrics.recall_at_k(af.constant([1, 2], af.int64), af.zeros([2, 4]), 1)
        with af.Session() as sess:
            sess.run(af.local_variables_initializer())
            assert np.isnan(sess.run(v))  # 0 / 0, as TF1
        try:
            af.metrics.recall_at_k(af.constant([1, 2]), af.zeros([2, 4]), 1)
        except TypeError as e:
            assert "Types don't match" in str(e)
        else:
            raise AssertionError("int32 labels were accepted; TF1 refuses them")
        sparse = af.SparseTensor([[0, 0], [1, 0]], af.constant([1, 2], af.int64), [2, 2])
        with pytest.raises(TypeError, match="SparseTensor are not supported yet"):  # TF1 takes them: not yet here
            af.metrics.precision_at_k(sparse, af.zeros([2, 4]), 1)


def test_average_precision_at_k_streams_names_and_tf_values():
    r = np.random.RandomState(2)
    scores = [r.rand(5, 6).astype(np.float32) for _ in range(3)]
    labels2 = [r.randint(0, 7, (5, 3)).astype(np.int64) for _ in range(3)]  # 6 is out of range: never matches
    labels1 = [r.randint(0, 6, 5).astype(np.int64) for _ in range(3)]
    weights = [r.rand(5).astype(np.float32) for _ in range(3)]
    tf_values = {"a1": 0.33333333, "a1_1": 0.13333333, "a1_w": 0.41323089, "a3": 0.27962963, "a3_1": 0.34444444,
                 "a3_w": 0.30671735, "s": 0.23333333}  # TF 2.21, same streams
    g = af.Graph()
    with g.as_default():
        s_ = af.placeholder(af.float32, [5, 6])
        l2, l1 = af.placeholder(af.int64, [5, 3]), af.placeholder(af.int64, [5])
        w = af.placeholder(af.float32, [5])
        ms, refs = {}, {}
        for k in (1, 3):
            ms[f"a{k}"], refs[f"a{k}"] = af.metrics.average_precision_at_k(l2, s_, k), (labels2, k, False)
            ms[f"a{k}_1"], refs[f"a{k}_1"] = af.metrics.average_precision_at_k(l1, s_, k), (labels1, k, False)
            ms[f"a{k}_w"] = af.metrics.average_precision_at_k(l2, s_, k, weights=w)
            refs[f"a{k}_w"] = (labels2, k, True)
        ms["s"], refs["s"] = af.metrics.sparse_average_precision_at_k(l1, s_, 2), (labels1, 2, False)
        # TF1's names, 'max_1' included: its scope comes after the `Max` op, and names are unique ignoring case.
        assert [t.name for t in ms["a3"]] == ["average_precision_at_3/mean:0", "average_precision_at_3:0"]
        assert [v.name for v in af.local_variables()][:2] == ["average_precision_at_1/max_1:0",
                                                              "average_precision_at_1/total:0"]
        with pytest.raises(ValueError, match="Invalid k=0"):
            af.metrics.average_precision_at_k(l1, s_, 0)
        with af.Session() as sess:
            sess.run(af.local_variables_initializer())
            assert sess.run(ms["a1"][0]) == 0.0  # total / max with max 0: 0, as TF1's _safe_scalar_div
            for i in range(3):
                ups = sess.run({k: u for k, (_, u) in ms.items()},
                               {s_: scores[i], l2: labels2[i], l1: labels1[i], w: weights[i]})
                for key, (labels, k, weighted) in refs.items():
                    want = ref.average_precision(np.concatenate(labels[:i + 1]), np.concatenate(scores[:i + 1]), k,
                                                 6, np.concatenate(weights[:i + 1]) if weighted else None)
                    np.testing.assert_allclose(ups[key], want, rtol=1e-6, err_msg=key)
            final = sess.run({k: v for k, (v, _) in ms.items()})
    for key, want in tf_values.items():
        np.testing.assert_allclose(final[key], want, rtol=1e-6, err_msg=key)
