"""af.train.ExponentialMovingAverage against numpy (shadow -= (1 - decay) * (shadow - value), decay capped by
num_updates, zero-debiased tensor shadows) and against names and values pinned with TF 2.21 (tf.compat.v1)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _build():
    """The program pinned with TF 2.21: two EMAs over variables and a tensor, one zero-debiased."""
    gs = af.Variable(0, dtype=af.int64, name="step", trainable=False)
    with af.variable_scope("layer"):
        w = af.get_variable("w", initializer=af.constant([1.0, 2.0, 3.0]))
        b = af.Variable(5.0, name="b")
    x = af.placeholder(af.float32, [3], name="x")
    t = af.reduce_sum(x * w, name="loss")
    ema = af.train.ExponentialMovingAverage(0.9, num_updates=gs)
    upd = ema.apply([w, b, t])
    ema2 = af.train.ExponentialMovingAverage(0.8, zero_debias=True, name="debiased")
    upd2 = ema2.apply([t, w])
    return gs, w, b, x, t, ema, upd, ema2, upd2


# Checked against TF 2.21: the variables, collections and names the program above creates.
TF_NAMES = ("layer/b,layer/b/ExponentialMovingAverage,layer/w,layer/w/ExponentialMovingAverage,layer/w/debiased,"
            "loss/ExponentialMovingAverage,loss/debiased,loss/debiased/biased,loss/debiased/local_step,step")
TF_RESTORE = ("layer/b/ExponentialMovingAverage=layer/b,layer/w/ExponentialMovingAverage=layer/w,"
              "layer/w/debiased=layer/w/debiased,loss/ExponentialMovingAverage=loss/ExponentialMovingAverage,"
              "loss/debiased=loss/debiased,loss/debiased/biased=loss/debiased/biased,"
              "loss/debiased/local_step=loss/debiased/local_step,step=step")
# Per step: avg(w) (3), avg(b), avg(loss), debiased avg(loss), ema2's avg(w) (3), from TF 2.21.
TF_VALUES = np.array([
    [1.0, 2.0, 3.0, 5.0, -0.9, -1.0, 1.0, 2.0, 3.0],
    [1.4090909, 1.7954545, 3.8181818, 5.0, 2.4954548, 1.3611113, 1.1, 1.95, 3.2],
    [1.8522727, 1.5738636, 4.7045455, 5.0, 7.7488637, 4.696721, 1.28, 1.86, 3.56],
    [2.3006992, 1.3496504, 5.6013985, 5.0, 14.672728, 9.118564, 1.5239999, 1.738, 4.048]], np.float32)


def _feed(i):
    return np.array([1.0 + i, -1.0, 0.5 * i], np.float32)


def _numpy_values():
    """The same four steps in float64: w moves by [0.5, -0.25, 1] after each step, the step counts up."""
    w = np.array([1.0, 2.0, 3.0])
    avg_w, avg_b, avg_t, biased, avg2_w = w.copy(), 5.0, 0.0, 0.0, w.copy()
    rows = []
    for i in range(4):
        t = float(np.dot(_feed(i), w))
        decay = min(0.9, (1.0 + i) / (10.0 + i))
        avg_w -= (1 - decay) * (avg_w - w)
        avg_b -= (1 - decay) * (avg_b - 5.0)
        avg_t -= (1 - decay) * (avg_t - t)
        biased -= 0.2 * (biased - t)
        debiased = biased / (1 - 0.8 ** (i + 1))
        avg2_w -= 0.2 * (avg2_w - w)
        rows.append([*avg_w, avg_b, avg_t, debiased, *avg2_w])
        w = w + [0.5, -0.25, 1.0]
    return np.array(rows)


def test_names_collections_and_restore_map_as_tf():
    gs, w, b, x, t, ema, upd, ema2, upd2 = _build()
    assert ",".join(sorted(v.op.name for v in af.global_variables())) == TF_NAMES
    assert [v.op.name for v in af.moving_average_variables()] == ["layer/w", "layer/b", "layer/w"]
    assert (ema.average_name(w), ema.average_name(gs), ema2.average_name(w)) == (
        "layer/w/ExponentialMovingAverage", "step/ExponentialMovingAverage", "layer/w/debiased")
    assert (upd.name, upd2.name) == ("ExponentialMovingAverage", "debiased")
    restore = ema.variables_to_restore()
    assert ",".join(f"{k}={v.op.name}" for k, v in sorted(restore.items())) == TF_RESTORE
    shadow = ema.average(w)
    assert not shadow.trainable and shadow not in af.trainable_variables()
    assert shadow.op.colocation_groups() == w.op.colocation_groups()
    assert ema.average(gs) is None and ema.name == "ExponentialMovingAverage"


def test_values_match_numpy_and_tensorflow():
    gs, w, b, x, t, ema, upd, ema2, upd2 = _build()
    inc = af.assign_add(gs, 1)
    move = af.assign_add(w, [0.5, -0.25, 1.0])
    shadows = [ema.average(w), ema.average(b), ema.average(t), ema2.average(t), ema2.average(w)]
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        got = []
        for i in range(4):
            sess.run([upd, upd2], {x: _feed(i)})
            sess.run(inc)
            sess.run(move)
            values = sess.run(shadows)
            got.append(np.concatenate([values[0], values[1:4], values[4]]))
    got = np.array(got)
    np.testing.assert_allclose(got, _numpy_values(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, TF_VALUES, rtol=1e-6)


def test_shadow_starts_at_the_initial_value_in_the_same_initializer_run():
    af.set_random_seed(3)
    w = af.Variable(af.random_normal([4]), name="w")  # random: the shadow must see the same draw
    ema = af.train.ExponentialMovingAverage(0.5)
    ema.apply([w])
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(ema.average(w)), sess.run(w))


def test_restore_averages_into_the_variables(tmp_path):
    w = af.Variable([1.0, 2.0], name="w")
    ema = af.train.ExponentialMovingAverage(0.5)
    with af.control_dependencies([af.assign(w, [3.0, 6.0])]):
        update = ema.apply([w])
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        sess.run(update)  # shadow: 1 - 0.5 * (1 - 3) = 2, 2 - 0.5 * (2 - 6) = 4
        path = saver.save(sess, str(tmp_path / "model"))
    af.reset_default_graph()
    w = af.Variable([0.0, 0.0], name="w")
    restore_map = af.train.ExponentialMovingAverage(0.5).variables_to_restore()
    assert restore_map == {"w/ExponentialMovingAverage": w}
    with af.Session() as sess:
        af.train.Saver(restore_map).restore(sess, path)
        np.testing.assert_allclose(sess.run(w), [2.0, 4.0])


def test_errors():
    with pytest.raises(TypeError, match="The variables must be half, float, or double: v:0"):
        af.train.ExponentialMovingAverage(0.9).apply([af.Variable(1, name="v")])
