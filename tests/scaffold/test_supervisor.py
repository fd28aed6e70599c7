"""af.train.Supervisor: initialise or restore from logdir, checkpoint and summary threads, stop.

The values marked TF were checked against TF 2.21's tf.compat.v1.train.Supervisor on the same program."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import asyncflow as af


def build():
    g = af.Graph()
    with g.as_default():
        step = af.train.get_or_create_global_step()
        w = af.Variable(0.0, name="w")
        lv = af.Variable(7.0, name="lv", collections=[af.GraphKeys.LOCAL_VARIABLES])
        train = af.group(af.assign_add(w, 1.0), af.assign_add(step, 1))
    return g, w, train, step, lv


def test_train_checkpoint_restore_stop(tmp_path):
    d = str(tmp_path)
    g, w, train, step, lv = build()
    sv = af.train.Supervisor(graph=g, logdir=d, save_model_secs=1000, save_summaries_secs=0)
    assert g.finalized and sv.is_chief and sv.global_step.name == "global_step:0"  # TF
    assert sv.save_path == os.path.join(d, "model.ckpt") and sv.ready_op.dtype == af.string
    assert sv.init_op.type == "NoOp" and sv.ready_for_local_init_op is None and sv.coord is not None
    assert isinstance(sv.saver, af.train.Saver) and isinstance(sv.session_manager, af.train.SessionManager)
    with sv.managed_session() as sess:
        assert sess.run([w, step, lv]) == [0.0, 0, 7.0]  # TF
        for _ in range(3):
            if sv.should_stop():
                break
            sess.run(train)
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    assert sv.should_stop()
    # TF: the checkpoint thread saved at once (step 0); the final save is the program's; and graph.pbtxt.
    assert sorted(f for f in os.listdir(d) if f.endswith(".index")) == ["model.ckpt-0.index", "model.ckpt-3.index"]
    assert os.path.exists(os.path.join(d, "graph.pbtxt"))

    g, w, train, step, lv = build()
    sv = af.train.Supervisor(graph=g, logdir=d, save_model_secs=1000, save_summaries_secs=0)
    sess = sv.prepare_or_wait_for_session("")
    assert sess.run([w, step, lv]) == [3.0, 3, 7.0]  # restored from the latest checkpoint in logdir; TF
    sv.request_stop()
    assert sv.should_stop()
    sv.stop()
    sess.close()


def test_checkpoint_thread_saves_on_its_timer_and_stops_with_stop(tmp_path):
    d = str(tmp_path)
    g, w, train, step, lv = build()
    sv = af.train.Supervisor(graph=g, logdir=d, save_model_secs=0.1, save_summaries_secs=0)
    before = set(threading.enumerate())
    with sv.managed_session() as sess:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len([f for f in os.listdir(d) if f.endswith(".index")]) < 3:
            sess.run(train)
            time.sleep(0.02)
        services = [t for t in set(threading.enumerate()) - before if t.is_alive()]
        assert services, "no checkpoint thread running"
    assert len([f for f in os.listdir(d) if f.endswith(".index")]) >= 3
    assert not any(t.is_alive() for t in services)  # stop() joined every service thread
    assert af.train.latest_checkpoint(d) is not None


def test_exceptions_in_the_block(tmp_path):
    g, *_ = build()
    sv = af.train.Supervisor(graph=g, logdir=None)
    with sv.managed_session():
        raise af.errors.OutOfRangeError(None, None, "input done")  # a normal end (TF)
    with pytest.raises(ValueError, match="^boom$"):
        with sv.managed_session():
            raise ValueError("boom")


def test_an_error_in_a_looper_thread_reaches_the_block(tmp_path):
    g, *_ = build()
    sv = af.train.Supervisor(graph=g, logdir=None)
    calls = []

    def tick():
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("from the thread")

    with pytest.raises(RuntimeError, match="from the thread"):
        with sv.managed_session():
            sv.loop(0.01, tick)
            deadline = time.monotonic() + 10
            while not sv.should_stop() and time.monotonic() < deadline:
                time.sleep(0.01)
    assert len(calls) == 3


def test_init_fn_init_feed_dict_and_none_switches_parts_off(tmp_path):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        v = af.Variable(x, name="v")
        u = af.Variable(1.0, name="u")
    seen = []
    sv = af.train.Supervisor(graph=g, init_op=None, saver=None,
                             init_fn=lambda sess: (seen.append(sess), sess.run(u.initializer)),
                             ready_op=None, summary_op=None, global_step=None)
    with pytest.raises(af.errors.FailedPreconditionError):  # init_op=None: v is never initialised
        with sv.managed_session() as sess:
            sess.run(v)
    assert len(seen) == 1
    g2 = af.Graph()
    with g2.as_default():
        x = af.placeholder(af.float32, [], name="x")
        v = af.Variable(x, name="v")
    sv = af.train.Supervisor(graph=g2, init_feed_dict={x: 4.5}, logdir=str(tmp_path), save_model_secs=0,
                             save_summaries_secs=0)
    with sv.managed_session() as sess:
        assert sess.run(v) == np.float32(4.5)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".index")]  # save_model_secs=0: no checkpoint thread


def test_non_chief_needs_devices_on_its_variables_and_waits_for_the_chief():
    g, *_ = build()
    with pytest.raises(ValueError, match="When using replicas, all Variables must have their device set"):
        af.train.Supervisor(graph=g, is_chief=False)  # TF1 (TF 2.21's resource variables skip this check)
    server = af.train.Server.create_local_server()
    try:
        graphs = []
        for _ in range(2):
            gi = af.Graph()
            with gi.as_default(), af.device("/job:localhost/task:0"):
                step = af.train.get_or_create_global_step()
                w = af.Variable(5.0, name="w")
            graphs.append((gi, w, step))
        worker = af.train.Supervisor(graph=graphs[1][0], is_chief=False, recovery_wait_secs=0.05)
        assert worker.summary_writer is None and worker.save_path is None
        got = {}

        def run_worker():
            with worker.managed_session(server.target) as sess:
                got["w"] = sess.run(graphs[1][1])

        t = threading.Thread(target=run_worker)
        t.start()
        time.sleep(0.3)  # the worker polls: the model is not ready yet
        assert "w" not in got
        chief = af.train.Supervisor(graph=graphs[0][0], is_chief=True)
        with chief.managed_session(server.target):
            t.join(20)
        assert got == {"w": np.float32(5.0)}
    finally:
        server.stop()


def test_summary_threads_write_what_tensorboard_reads(tmp_path):
    writer_class = getattr(af.summary, "FileWriter", None)
    if writer_class is None or not hasattr(af.summary, "scalar"):
        pytest.skip("af.summary cannot write event files yet")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    g = af.Graph()
    with g.as_default():
        step = af.train.get_or_create_global_step()
        w = af.Variable(0.0, name="w")
        af.summary.scalar("weight", w)
        train = af.group(af.assign_add(w, 1.0), af.assign_add(step, 1))
    sv = af.train.Supervisor(graph=g, logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0)
    assert isinstance(sv.summary_writer, writer_class) and sv.summary_op is not None
    with sv.managed_session() as sess:
        for _ in range(6):
            sess.run(train)
            time.sleep(0.03)
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    tags = events.Tags()
    assert "weight" in tags["scalars"] and "global_step/sec" in tags["scalars"] and tags["graph"]
    values = [e.value for e in events.Scalars("weight")]
    assert values == sorted(values) and 0.0 <= values[0] <= values[-1] <= 6.0  # w as training moved it
    no_writer = af.train.Supervisor(graph=build()[0], logdir=None)
    assert no_writer.summary_writer is None
    with pytest.raises(RuntimeError, match="Writing a summary requires a summary writer."):
        no_writer.summary_computed(None, b"")


def test_basic_train_loop(tmp_path):
    g, w, train, step, lv = build()
    sv = af.train.Supervisor(graph=g, logdir=None)
    steps = []

    def train_step(sess, stop_at):
        steps.append(sess.run(train))
        if len(steps) == stop_at:
            sv.request_stop()

    af.train.basic_train_loop(sv, train_step, args=(4,))
    assert len(steps) == 4
