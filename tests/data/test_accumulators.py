"""Conditional accumulators: the mean (or sum) of applied gradients against numpy, the staleness rule
(dropped and counted), takes that block until enough gradients arrive, and TF1's errors and names."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.data.helpers import Background, wait_blocked

TIMEOUT = af.RunOptions(timeout_in_ms=5000)
GRADS = np.array([[1.0, 2.0], [3.0, 5.0], [-2.0, 0.5]], np.float32)


def _dense(reduction_type="MEAN", shape=(2,)):
    acc = af.ConditionalAccumulator(af.float32, shape=shape, reduction_type=reduction_type)
    grad = af.placeholder(af.float32, [2], name="grad")
    step = af.placeholder(af.int64, [], name="step")
    return acc, grad, step, acc.apply_grad(grad, local_step=step)


def test_names_types_and_shapes_follow_tf():
    with af.Graph().as_default():
        acc = af.ConditionalAccumulator(af.float32, shape=[2])
        assert acc.accumulator_ref.op.type == "ResourceConditionalAccumulator"
        assert acc.accumulator_ref.op.get_attr("reduction_type") == "MEAN" and acc.name == "conditional_accumulator"
        apply = acc.apply_grad([1.0, 2.0], local_step=0)
        assert (apply.type, apply.name) == ("ResourceAccumulatorApplyGradient", "ResourceAccumulatorApplyGradient")
        assert apply.inputs[1].dtype == af.int64
        take = acc.take_grad(2)
        assert take.op.type == "ResourceAccumulatorTakeGradient" and take.shape.as_list() == [2]
        assert acc.num_accumulated().op.name == "conditional_accumulator_NumAccumulated"
        assert acc.num_dropped().dtype == af.int64
        sparse = af.SparseConditionalAccumulator(af.float32, shape=[4, 2])
        assert sparse.accumulator_ref.dtype == af.string._as_ref
        assert sparse.take_grad(1)[0].op.type == "SparseAccumulatorTakeGradient"
        with pytest.raises(ValueError, match="incompatible"):
            acc.apply_grad([1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="float"):
            af.ConditionalAccumulator(af.int32)


@pytest.mark.parametrize("reduction", ["MEAN", "SUM"])
def test_take_gives_mean_or_sum_then_resets_and_advances_the_step(reduction):
    with af.Graph().as_default():
        acc, grad, step, apply = _dense(reduction)
        take, count = acc.take_grad(3), acc.num_accumulated()
        with af.Session() as sess:
            for g in GRADS:
                sess.run(apply, {grad: g, step: 0})
            assert sess.run(count) == 3
            got = sess.run(take, options=TIMEOUT)
            assert sess.run(count) == 0
            # The take advanced the global step to 1: a gradient computed at step 0 is now stale.
            sess.run(apply, {grad: GRADS[0], step: 0})
            assert sess.run([count, acc.num_dropped()]) == [0, 1]
    want = GRADS.mean(axis=0) if reduction == "MEAN" else GRADS.sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.dtype == np.float32


def test_stale_gradients_are_dropped_and_counted():
    with af.Graph().as_default():
        acc, grad, step, apply = _dense()
        take = acc.take_grad(2)
        with af.Session() as sess:
            sess.run(acc.set_global_step(5))
            for local_step, g in zip([4, 5, 3, 6], GRADS.tolist() + [[9.0, 9.0]]):
                sess.run(apply, {grad: g, step: local_step})
            assert sess.run([acc.num_accumulated(), acc.num_dropped()]) == [2, 2]
            got = sess.run(take, options=TIMEOUT)
    np.testing.assert_allclose(got, np.mean([GRADS[1], [9.0, 9.0]], axis=0))


def test_take_blocks_until_enough_gradients_arrive_from_another_thread():
    with af.Graph().as_default():
        acc, grad, step, apply = _dense()
        take = acc.take_grad(2)
        with af.Session() as sess:
            taker = Background(lambda: sess.run(take, options=TIMEOUT))
            wait_blocked(sess)
            sess.run(apply, {grad: GRADS[0], step: 0})
            assert sess.run(acc.num_accumulated()) == 1  # one is not enough: still waiting
            Background(lambda: sess.run(apply, {grad: GRADS[1], step: 0})).join()
            np.testing.assert_allclose(taker.join(), GRADS[:2].mean(axis=0))


def test_a_take_that_times_out_leaves_the_sum_in_place():
    with af.Graph().as_default():
        acc, grad, step, apply = _dense()
        with af.Session() as sess:
            sess.run(apply, {grad: GRADS[0], step: 0})
            with pytest.raises(af.errors.DeadlineExceededError):
                sess.run(acc.take_grad(2), options=af.RunOptions(timeout_in_ms=30))
            sess.run(apply, {grad: GRADS[1], step: 0})
            np.testing.assert_allclose(sess.run(acc.take_grad(2), options=TIMEOUT), GRADS[:2].mean(axis=0))


def test_dense_errors():
    with af.Graph().as_default():
        acc = af.ConditionalAccumulator(af.float32)  # shape learnt from the first gradient
        g = af.placeholder(af.float32)
        apply = acc.apply_grad(g, local_step=0)
        with af.Session() as sess:
            sess.run(apply, {g: [[1.0, 1.0]]})
            with pytest.raises(af.errors.InvalidArgumentError, match=r"Shape mismatch: expected \[1,2\], got \[2\]"):
                sess.run(apply, {g: [1.0, 1.0]})
            with pytest.raises(af.errors.InvalidArgumentError, match="num_required must be positive, but was 0"):
                sess.run(acc.take_grad(0))


def test_sparse_mean_is_per_row_against_numpy():
    grads = [([0, 2], [[1.0, 1.0], [2.0, 2.0]]), ([2, 3], [[3.0, 3.0], [4.0, 4.0]]), ([2], [[10.0, 0.0]])]
    with af.Graph().as_default():
        acc = af.SparseConditionalAccumulator(af.float32, shape=[4, 2])
        applies = [acc.apply_grad(i, v, grad_shape=[4, 2], local_step=0) for i, v in grads]
        stale = acc.apply_indexed_slices_grad(
            af.IndexedSlices(af.constant([[5.0, 5.0]]), af.constant([1], af.int64), af.constant([4, 2], af.int64)),
            local_step=0)
        taken = acc.take_indexed_slices_grad(3)
        with af.Session() as sess:
            for a in applies:
                sess.run(a)
            indices, values, shape = sess.run([taken.indices, taken.values, taken.dense_shape], options=TIMEOUT)
            sess.run(stale)  # step 0 < global step 1 now
            assert sess.run([acc.num_accumulated(), acc.num_dropped()]) == [0, 1]
    total, count = np.zeros((4, 2), np.float32), np.zeros(4)
    for i, v in grads:
        np.add.at(total, i, np.asarray(v, np.float32))
        count[np.unique(i)] += 1
    rows = np.flatnonzero(count)
    np.testing.assert_array_equal(indices, rows)
    np.testing.assert_allclose(values, total[rows] / count[rows][:, None])
    np.testing.assert_array_equal(shape, [4, 2])


def test_sparse_errors_and_unknown_shape():
    with af.Graph().as_default():
        acc = af.SparseConditionalAccumulator(af.float32, shape=[4, 2])
        free = af.SparseConditionalAccumulator(af.float32, reduction_type="SUM", name="free")
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match="index is 7 exceeded 4"):
                sess.run(acc.apply_grad([7], [[3.0, 3.0]], local_step=0))
            with pytest.raises(af.errors.InvalidArgumentError, match="expected values dim 1 to be 2, got 3"):
                sess.run(acc.apply_grad([1], [[3.0, 3.0, 3.0]], local_step=0))
            with pytest.raises(af.errors.InvalidArgumentError, match="Expected 2 non-empty input values, got 1"):
                sess.run(acc.apply_grad([1, 2], [[3.0, 3.0]], local_step=0))
            sess.run(free.apply_grad([0, 1], [[1.0], [2.0]], local_step=0))
            sess.run(free.apply_grad([1, 5], [[3.0], [4.0]], local_step=0))
            indices, values, shape = sess.run(free.take_grad(2), options=TIMEOUT)
    np.testing.assert_array_equal(indices, [0, 1, 5])
    np.testing.assert_allclose(values, [[1.0], [5.0], [4.0]])
    np.testing.assert_array_equal(shape, [-1, 1])
