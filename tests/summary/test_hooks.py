"""SummarySaverHook and MonitoredTrainingSession's summaries: written at TF1's steps (pinned with
TF 2.21: a GradientDescent minimize with global_step, summaries every N steps, 10 runs), the graph
written beside them, and nothing added to the graph or the steps when summaries are off."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.summary.reading import accumulator, events, summary_steps


def _model():
    gs = af.train.get_or_create_global_step()
    w = af.Variable(1.0, name="w")
    loss = af.square(w)
    train = af.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return loss, train


# TF 2.21: the steps a MonitoredTrainingSession(save_summaries_steps=N) writes in 10 runs.
TF_STEPS = {1: list(range(1, 11)), 2: [1, 3, 5, 7, 9], 3: [1, 4, 7, 10], 4: [1, 5, 9]}


@pytest.mark.parametrize("every", [1, 3, 4])
def test_monitored_training_session_writes_summaries_at_tf1s_steps(tmp_path, every):
    with af.Graph().as_default():
        loss, train = _model()
        af.summary.scalar("loss", loss)
        with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=every,
                                               save_checkpoint_secs=None, log_step_count_steps=None) as sess:
            for _ in range(10):
                sess.run(train)
    acc = accumulator(tmp_path)
    steps = TF_STEPS[every]
    assert [s.step for s in acc.Scalars("loss")] == steps
    # the loss each summary saw: the one of the run that took the global step to that value (w = 0.8^(k-1))
    np.testing.assert_allclose([s.value for s in acc.Scalars("loss")], [0.64 ** (k - 1) for k in steps], rtol=1e-5)
    assert acc.Tags()["graph"]
    kinds = [e.WhichOneof("what") for e in events(tmp_path)]
    assert kinds[:3] == ["file_version", "graph_def", "meta_graph_def"] and "session_log" in kinds


def test_summary_dir_apart_from_checkpoint_dir_and_secs(tmp_path):
    with af.Graph().as_default():
        loss, train = _model()
        af.summary.scalar("loss", loss)
        with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "ckpt"), summary_dir=str(tmp_path / "tb"),
                                               save_summaries_secs=3600, save_checkpoint_secs=None,
                                               log_step_count_steps=None) as sess:
            for _ in range(5):
                sess.run(train)
    assert summary_steps(tmp_path / "tb", "loss") == [1]  # the first run only: an hour has not passed
    assert not (tmp_path / "ckpt").exists() or not list((tmp_path / "ckpt").glob("events.*"))


def test_summary_saver_hook_with_its_own_op_and_writer(tmp_path):
    with af.Graph().as_default():
        loss, train = _model()
        op = af.summary.scalar("loss", loss, collections=[])
        writer = af.summary.FileWriter(str(tmp_path))
        hook = af.train.SummarySaverHook(save_steps=4, summary_writer=writer, summary_op=op)
        with af.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(10):
                sess.run(train)
        writer.close()
    evs = events(tmp_path)
    assert [e.step for e in evs if e.HasField("summary")] == TF_STEPS[4]
    assert [(e.step, e.session_log.status) for e in evs if e.HasField("session_log")] == [(1, 1)]  # START
    assert not [e for e in evs if e.HasField("graph_def")]  # a writer given by the caller writes no graph itself


def test_summary_saver_hook_arguments():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op must be provided."):
        af.train.SummarySaverHook(save_steps=1)
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op must be provided."):
        af.train.SummarySaverHook(save_steps=1, scaffold=af.train.Scaffold(), summary_op=af.constant(""))
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided."):
        af.train.SummarySaverHook(summary_op=af.constant(""))
    with af.Graph().as_default():
        hook = af.train.SummarySaverHook(save_steps=1, summary_op=af.constant(""))
        with pytest.raises(RuntimeError, match="Global step should be created to use SummarySaverHook."):
            hook.begin()


def _hook_names(sess) -> list[str]:
    return [type(h).__name__ for h in sess._hooks]


def test_summaries_off_add_nothing(tmp_path):
    with af.Graph().as_default() as g:
        _, train = _model()
        with af.train.MonitoredTrainingSession(log_step_count_steps=None) as sess:  # no directory: no hook
            assert "SummarySaverHook" not in _hook_names(sess)
            sess.run(train)
        with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=None,
                                               save_checkpoint_secs=None, log_step_count_steps=None) as sess:
            assert "SummarySaverHook" not in _hook_names(sess)
        assert not [op for op in g.get_operations() if op.type.endswith("Summary")]


def test_a_graph_without_summaries_costs_no_fetch_after_the_first_step(tmp_path):
    with af.Graph().as_default() as g:
        _, train = _model()
        with af.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=1,
                                               save_checkpoint_secs=None, log_step_count_steps=None) as sess:
            hook = next(h for h in sess._hooks if type(h).__name__ == "SummarySaverHook")
            sess.run(train)
            context = af.train.SessionRunContext(af.train.SessionRunArgs(train), sess)
            assert hook.before_run(context) is None
            for _ in range(3):
                sess.run(train)
        assert not [op for op in g.get_operations() if op.type.endswith("Summary")]
    kinds = [e.WhichOneof("what") for e in events(tmp_path)]
    assert "summary" not in kinds and "graph_def" in kinds and "session_log" in kinds
