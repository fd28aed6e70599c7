"""MonitoredTrainingSession: initialise or restore, hooks, stop, checkpoints, recovery."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests import testing_ops


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _model(abort_key: str | None = None):
    """Least squares y = 3x - 1 by gradient descent; returns (train_op, loss, w)."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 1)).astype(np.float32)
    ys = 3 * xs - 1
    step = af.train.get_or_create_global_step()
    w = af.Variable([[0.0]], name="w")
    b = af.Variable([0.0], name="b")
    pred = af.matmul(af.constant(xs), w) + b
    if abort_key is not None:  # on the training path: the step needs its value
        pred = testing_ops.abort(pred, key=abort_key)
    loss = af.reduce_mean(af.square(pred - ys))
    train = af.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return train, loss, w, step


def test_chief_trains_until_the_stop_hook_and_checkpoints(tmp_path):
    train, loss, w, step = _model()
    log_hook = af.train.LoggingTensorHook({"loss": loss}, every_n_iter=10)
    with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=10,
                                           hooks=[af.train.StopAtStepHook(last_step=30), log_hook]) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train)
            runs += 1
    assert runs == 30
    assert len(log_hook.logged) == 3 and log_hook.logged[-1]["loss"] < log_hook.logged[0]["loss"]
    latest = af.train.latest_checkpoint(str(tmp_path))
    assert latest is not None and latest.endswith("model.ckpt-30")
    assert af.get_default_graph().finalized


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative-dir-from-another-cwd"])
def test_a_new_session_resumes_from_the_latest_checkpoint(tmp_path, monkeypatch, relative):
    """With a relative checkpoint_dir ("run1"), the state file records paths relative to it (as TF1), so a
    reader that joins it to the directory finds the checkpoint (it once looked in run1/run1/)."""
    if relative:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "nested").mkdir()
    directory = "run1" if relative else str(tmp_path)
    train, loss, w, step = _model()
    with af.train.MonitoredTrainingSession(checkpoint_dir=directory, save_checkpoint_steps=5,
                                           hooks=[af.train.StopAtStepHook(last_step=12)]) as sess:
        while not sess.should_stop():
            sess.run(train)
        w_at_12 = sess.run(w)
    if relative:  # another working directory, the same checkpoint directory named relative to it
        monkeypatch.chdir(tmp_path / "nested")
        directory = "../run1"
        assert af.train.latest_checkpoint(directory) == "../run1/model.ckpt-12"
    with af.train.MonitoredTrainingSession(checkpoint_dir=directory, save_checkpoint_steps=5,
                                           hooks=[af.train.StopAtStepHook(num_steps=3)]) as sess:
        assert sess.run(step) == 12
        np.testing.assert_array_equal(sess.run(w), w_at_12)
        while not sess.should_stop():
            sess.run(train)
        assert sess.run(step) == 15


def test_aborted_step_recreates_the_session_and_restores_the_last_checkpoint(tmp_path):
    train, loss, w, step = _model(abort_key="ps-restart")
    seen_steps = []

    class Record(af.train.SessionRunHook):
        def begin(self):
            self._step = af.train.get_global_step()

        def before_run(self, ctx):
            return af.train.SessionRunArgs(self._step)

        def after_run(self, ctx, values):
            seen_steps.append(int(values.results))

    hooks = [af.train.StopAtStepHook(last_step=20), Record()]
    with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=5,
                                           hooks=hooks, log_step_count_steps=0) as sess:
        aborted = False
        while not sess.should_stop():
            if seen_steps and seen_steps[-1] == 7 and not aborted:
                testing_ops.ABORTS_LEFT["ps-restart"] = 1  # the next step fails: the "PS" lost its state
                aborted = True
            sess.run(train)
    # Steps 0..7 ran, the failed step was retried on a session restored from model.ckpt-5 (the last
    # checkpoint), so step 5 comes again: at most the steps since that checkpoint are lost.
    assert seen_steps[:9] == list(range(8)) + [5]
    assert seen_steps[-1] == 19


def test_non_chief_polls_until_ready_or_times_out():
    _model()
    with pytest.raises(af.errors.DeadlineExceededError, match="not ready"):
        af.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.3, recovery_wait_secs=0.05)


def test_out_of_range_ends_the_loop_quietly_and_hooks_see_the_end():
    train, loss, w, step = _model()
    ended = []

    class End(af.train.SessionRunHook):
        def end(self, session):
            ended.append(int(session.run(step)))

    with af.train.MonitoredTrainingSession(hooks=[End()], log_step_count_steps=0) as sess:
        sess.run(train)
        raise af.errors.OutOfRangeError(None, None, "input exhausted")
    assert ended == [1]


def test_hook_and_caller_feeding_the_same_tensor_is_an_error():
    x = af.placeholder(af.float32, [], name="x")
    af.train.get_or_create_global_step()
    y = x * 2.0

    class Feeder(af.train.SessionRunHook):
        def before_run(self, ctx):
            return af.train.SessionRunArgs(None, feed_dict={x: 1.0})

    with af.train.MonitoredTrainingSession(hooks=[Feeder()], log_step_count_steps=0) as sess:
        assert sess.run(y) == 2.0
        with pytest.raises(RuntimeError, match="Same tensor is fed"):
            sess.run(y, {x: 3.0})
