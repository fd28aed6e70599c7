"""af.train.SessionManager, Scaffold and the session creators (messages checked against TF 2.21)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import asyncflow as af


def test_prepare_recover_wait(tmp_path):
    with af.Graph().as_default():
        v = af.Variable(3.0, name="v")
        sm = af.train.SessionManager(ready_op=af.report_uninitialized_variables())
        with pytest.raises(RuntimeError, match="^Model is not initialized and no init_op or init_fn or local_init_op "
                                               "was given$"):
            sm.prepare_session("")
        with pytest.raises(RuntimeError, match="Init operations did not make model ready.*error: Variables not "
                                               "initialized: v$"):
            sm.prepare_session("", init_op=af.no_op())
        sess = sm.prepare_session("", init_op=af.global_variables_initializer())
        assert sess.run(v) == np.float32(3.0)
        sess.run(v.assign(4.0))
        saver = af.train.Saver()
        path = saver.save(sess, os.path.join(tmp_path, "m"), global_step=1)
        restored, ok = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
        assert ok and restored.run(v) == np.float32(4.0)
        assert saver.last_checkpoints == [path]
        _, ok = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path / "nothing"))
        assert not ok
        from_file = sm.prepare_session("", saver=saver, checkpoint_filename_with_path=path)
        assert from_file.run(v) == np.float32(4.0)
        with pytest.raises(ValueError, match="Can not provide both checkpoint_dir and checkpoint_filename_with_path"):
            sm.prepare_session("", saver=saver, checkpoint_dir=str(tmp_path), checkpoint_filename_with_path=path)
        init_fn_calls = []
        sess = sm.prepare_session("", init_fn=lambda s: (init_fn_calls.append(s), s.run(v.initializer)))
        assert init_fn_calls == [sess] and sess.run(v) == np.float32(3.0)
        waiting = af.train.SessionManager(ready_op=af.report_uninitialized_variables(), recovery_wait_secs=0.05)
        with pytest.raises(af.errors.DeadlineExceededError, match="^Session was not ready after waiting 0 secs.$"):
            waiting.wait_for_session("", max_wait_secs=0.2)
        with pytest.raises(ValueError, match="If you pass a ready_for_local_init_op you must also pass a "
                                             "local_init_op"):
            af.train.SessionManager(ready_for_local_init_op=af.report_uninitialized_variables())


def test_local_init_op_waits_for_the_global_variables():
    with af.Graph().as_default():
        g = af.Variable(2.0, name="g")
        loc = af.Variable(0.0, name="loc", collections=[af.GraphKeys.LOCAL_VARIABLES])
        copy = loc.assign(g * 10.0)
        sm = af.train.SessionManager(local_init_op=copy, ready_op=af.report_uninitialized_variables(),
                                     ready_for_local_init_op=af.report_uninitialized_variables(
                                         af.global_variables()))
        with pytest.raises(RuntimeError, match="did not make model ready for local_init"):
            sm.prepare_session("", init_op=af.no_op())
        sess = sm.prepare_session("", init_op=g.initializer)
        assert sess.run(loc) == np.float32(20.0)


def test_scaffold_defaults_copy_and_init_fn():
    with af.Graph().as_default() as graph:
        af.train.get_or_create_global_step()
        v = af.Variable(1.0, name="v")
        seen = []
        scaffold = af.train.Scaffold(init_fn=lambda sc, sess: seen.append((sc, sess)))
        copy = af.train.Scaffold(copy_from_scaffold=scaffold, init_feed_dict={})
        scaffold.finalize()
        assert graph.finalized
        assert scaffold.init_op is graph.get_collection(af.GraphKeys.INIT_OP)[0]
        assert scaffold.ready_op is graph.get_collection(af.GraphKeys.READY_OP)[0]
        assert scaffold.local_init_op is graph.get_collection(af.GraphKeys.LOCAL_INIT_OP)[0]
        assert isinstance(scaffold.saver, af.train.Saver) and scaffold.local_init_feed_dict is None
        copy.finalize()  # takes the same collection items
        assert copy.init_op is scaffold.init_op and copy.init_feed_dict == {}
        with af.train.MonitoredSession(af.train.ChiefSessionCreator(scaffold=copy)) as sess:
            assert sess.run(v) == np.float32(1.0)
        assert len(seen) == 1 and seen[0][0] is copy  # init_fn(scaffold, session), as TF1
    with pytest.raises(TypeError, match="copy_from_scaffold is not a Scaffold instance."):
        af.train.Scaffold(copy_from_scaffold=object())
    with af.Graph().as_default() as graph:
        graph.add_to_collection(af.GraphKeys.INIT_OP, af.no_op())
        graph.add_to_collection(af.GraphKeys.INIT_OP, af.no_op())
        with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
            af.train.Scaffold.get_or_default("init_op", af.GraphKeys.INIT_OP, af.no_op)
        assert af.train.Scaffold.default_local_init_op().type == "NoOp"


def test_chief_and_worker_session_creators(tmp_path):
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        inc = af.assign_add(step, 1)
        hook = af.train.CheckpointSaverHook(str(tmp_path), save_steps=100)
        with af.train.MonitoredSession(af.train.ChiefSessionCreator(checkpoint_dir=str(tmp_path)), [hook]) as sess:
            for _ in range(3):
                sess.run(inc)
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        creator = af.train.ChiefSessionCreator(checkpoint_dir=str(tmp_path))
        assert isinstance(creator, af.train.SessionCreator)
        with af.train.MonitoredSession(session_creator=creator) as sess:
            assert sess.run(step) == 3  # restored
    with af.Graph().as_default():
        af.Variable(1.0, name="w")
        creator = af.train.WorkerSessionCreator(max_wait_secs=0.3)
        with pytest.raises(af.errors.DeadlineExceededError):  # nobody initialises this in-process model
            creator.create_session()
    with pytest.raises(TypeError):
        af.train.SessionCreator()
