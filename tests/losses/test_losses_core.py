"""af.losses against numpy references of TF1's formulas and reductions (the same program gave the same
values and names under TF 2.21's compat.v1 losses)."""

import numpy as np
import pytest

import asyncflow as af

RNG = np.random.RandomState(0)
P = RNG.rand(4, 3).astype(np.float32)
L = (RNG.rand(4, 3) > 0.5).astype(np.float32)
W = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)


def run(t):
    with af.Session() as sess:
        return sess.run(t)


def test_reductions_of_a_weighted_loss():
    per = np.abs(P - L) * W
    nonzero = np.count_nonzero(np.broadcast_to(W, P.shape))
    R = af.losses.Reduction
    got = run([af.losses.absolute_difference(L, P, weights=W, reduction=r)
               for r in (R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS)])
    want = [per.sum(), per.sum() / (np.ones_like(P) * W).sum(), per.sum() / P.size, per.sum() / nonzero]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    none = af.losses.absolute_difference(L, P, weights=W, reduction=R.NONE, loss_collection=None)
    np.testing.assert_allclose(run(none), per, rtol=1e-6)
    assert run(af.losses.mean_squared_error(L, P, weights=0.0)) == 0.0  # no non-zero weight: 0, not NaN
    with pytest.raises(ValueError, match="Invalid Reduction"):
        af.losses.mean_squared_error(L, P, reduction="avg")
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        af.losses.mean_squared_error(L, P, weights=np.ones((3, 4), np.float32))


def test_each_loss_and_names():
    af.reset_default_graph()
    mse = af.losses.mean_squared_error(L, P)
    assert mse.name == "mean_squared_error/value:0"
    np.testing.assert_allclose(run(mse), ((P - L) ** 2).mean(), rtol=1e-6)
    e = 3 * P - L
    huber = np.where(np.abs(e) <= 0.5, 0.5 * e ** 2, 0.5 * (np.abs(e) - 0.25))
    np.testing.assert_allclose(run(af.losses.huber_loss(L, 3 * P, delta=0.5)), huber.mean(), rtol=1e-5)
    log = -L * np.log(P + 1e-7) - (1 - L) * np.log(1 - P + 1e-7)
    np.testing.assert_allclose(run(af.losses.log_loss(L, P)), log.mean(), rtol=1e-5)
    hinge = np.maximum(1 - (2 * L - 1) * (P - 0.5), 0)
    np.testing.assert_allclose(run(af.losses.hinge_loss(L, P - 0.5)), hinge.mean(), rtol=1e-6)
    smooth = L * 0.8 + 0.1
    z = P - 0.5
    sig = np.maximum(z, 0) - z * smooth + np.log1p(np.exp(-np.abs(z)))
    np.testing.assert_allclose(run(af.losses.sigmoid_cross_entropy(L, z, label_smoothing=0.2)), sig.mean(),
                               rtol=1e-5)
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    smoothed = onehot * 0.9 + 0.1 / 3
    logsm = P - np.log(np.exp(P).sum(1, keepdims=True))
    soft = af.losses.softmax_cross_entropy(onehot, P, weights=W[:, 0], label_smoothing=0.1)
    assert soft.name == "softmax_cross_entropy_loss/value:0"
    per = -(smoothed * logsm).sum(1) * W[:, 0]
    np.testing.assert_allclose(run(soft), per.sum() / np.count_nonzero(W), rtol=1e-5)
    sparse = af.losses.sparse_softmax_cross_entropy([[0], [2], [1], [1]], P, weights=W)
    per = -logsm[np.arange(4), [0, 2, 1, 1]] * W[:, 0]
    np.testing.assert_allclose(run(sparse), per.sum() / np.count_nonzero(W), rtol=1e-5)
    unit_l = L / np.maximum(np.linalg.norm(L, axis=1, keepdims=True), 1e-3)
    unit_p = P / np.linalg.norm(P, axis=1, keepdims=True)
    cos = af.losses.cosine_distance(unit_l, unit_p, axis=1)
    np.testing.assert_allclose(run(cos), (1 - (unit_l * unit_p).sum(1)).mean(), rtol=1e-5)
    with pytest.raises(ValueError, match="axis"):
        af.losses.cosine_distance(L, P)


def test_mean_pairwise_squared_error():
    got = run(af.losses.mean_pairwise_squared_error(L, P, weights=W))
    d = P - L
    want = 0.0
    for i in range(4):
        n = 3 if W[i, 0] != 0 else 0
        if n > 1:
            pairs = [(d[i, a] - d[i, b]) ** 2 for a in range(3) for b in range(3)]
            want += W[i, 0] * np.sum(pairs) / (n * (n - 1))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_collections_and_totals():
    af.reset_default_graph()
    a = af.losses.mean_squared_error(L, P)
    b = af.losses.absolute_difference(L, P, loss_collection="other")
    assert af.losses.get_losses() == [a] and af.losses.get_losses(loss_collection="other") == [b]
    assert run(af.losses.get_regularization_loss()) == 0.0
    w = af.get_variable("w", [2], initializer=af.ones_initializer(),
                        regularizer=lambda v: 0.5 * af.reduce_sum(v * v))
    assert len(af.losses.get_regularization_losses()) == 1
    total = af.losses.get_total_loss()
    assert total.name == "total_loss:0"
    with af.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(total), ((P - L) ** 2).mean() + 1.0, rtol=1e-6)
        assert sess.run(af.losses.get_total_loss(add_regularization_losses=False, name="t2")) == sess.run(a)
