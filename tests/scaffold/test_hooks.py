"""The session-run hooks, run in SingularMonitoredSession / MonitoredSession.

Logged messages and their order were checked against TF 2.21 on the same program (LoggingTensorHook's
"tag = value, ..." with sorted dict tags, the formatter, CheckpointSaverListener's calls and its stop,
FinalOpsHook's value, NanTensorHook's error)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time

import numpy as np
import pytest

import asyncflow as af


@pytest.fixture
def messages():
    logger = logging.getLogger("asyncflow.train")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Keep(level=logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield seen
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_hooks_together_as_tf1(tmp_path, messages):
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        x = af.placeholder(af.float32, [], name="x")
        loss = af.identity(x * 2.0, name="loss")
        inc = af.assign_add(step, 1)
        calls = []

        class Listener(af.train.CheckpointSaverListener):
            def begin(self):
                calls.append("begin")

            def before_save(self, session, n):
                calls.append(f"before {n}")

            def after_save(self, session, n):
                calls.append(f"after {n}")
                return n >= 4  # asks to stop

            def end(self, session, n):
                calls.append(f"end {n}")

        every2 = af.train.LoggingTensorHook({"step": step, "loss": loss}, every_n_iter=2)
        at_end = af.train.LoggingTensorHook(["global_step"], at_end=True)
        formatted = af.train.LoggingTensorHook({"l": loss}, every_n_iter=3, formatter=lambda v: f"F {v['l']:.1f}")
        final = af.train.FinalOpsHook(step * 10)
        hooks = [every2, at_end, formatted, af.train.FeedFnHook(lambda: {x: 1.5}), final,
                 af.train.NanTensorHook(loss, fail_on_nan_loss=False),
                 af.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Listener()])]
        runs = 0
        with af.train.SingularMonitoredSession(hooks=hooks) as sess:
            while not sess.should_stop() and runs < 10:
                sess.run(inc)
                runs += 1
    assert runs == 4 and final.final_ops_values == 40  # TF
    assert calls == ["begin", "before 0", "after 0", "before 2", "after 2", "before 4", "after 4", "end 4"]  # TF
    logged = [m.split(" (")[0] for m in messages if "=" in m or m.startswith("F ")]
    assert logged == ["loss = 3.0, step = 0", "F 3.0", "loss = 3.0, step = 2", "F 3.0", "global_step = 4"]
    assert any(m.startswith("loss = 3.0, step = 2 (") and m.endswith(" sec)") for m in messages)
    assert any(m.startswith("A CheckpointSaverListener requested that training be stopped.") for m in messages)
    assert every2.logged[1] == {"loss": np.float32(3.0), "step": 2}


def test_logging_tensor_hook_arguments_and_every_n_secs(messages):
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        inc = af.assign_add(step, 1)
        for kwargs in [{}, {"every_n_iter": 1, "every_n_secs": 1}]:
            with pytest.raises(ValueError, match="^either at_end and/or exactly one of every_n_iter and every_n_secs "
                                                 "must be provided.$"):
                af.train.LoggingTensorHook([step], **kwargs)
        with pytest.raises(ValueError, match="^invalid every_n_iter=0.$"):
            af.train.LoggingTensorHook([step], every_n_iter=0)
        timed = af.train.LoggingTensorHook([step], every_n_secs=3600)
        with af.train.SingularMonitoredSession(hooks=[timed]) as sess:
            for _ in range(5):
                sess.run(inc)
    assert timed.logged == [{"global_step:0": 0}]  # the first run only, within the hour


def test_nan_tensor_hook_raises():
    with af.Graph().as_default():
        af.train.get_or_create_global_step()
        loss = af.constant(float("nan"))
        with pytest.raises(af.train.NanLossDuringTrainingError, match="^NaN loss during training.$"):
            with af.train.SingularMonitoredSession(hooks=[af.train.NanTensorHook(loss)]) as sess:
                sess.run(loss)


def test_step_counter_hook(messages):
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        inc = af.assign_add(step, 1)
        with pytest.raises(ValueError, match="exactly one of every_n_steps and every_n_secs"):
            af.train.StepCounterHook(every_n_steps=None)
        counter = af.train.StepCounterHook(every_n_steps=2)
        with af.train.SingularMonitoredSession(hooks=[counter]) as sess:
            for _ in range(7):
                sess.run(inc)
        assert len(counter.steps_per_sec) == 3 and all(r > 0 for r in counter.steps_per_sec)
        assert sum(m.startswith("global_step/sec: ") for m in messages) == 3
        stuck = af.train.StepCounterHook(every_n_steps=100)
        with af.train.SingularMonitoredSession(hooks=[stuck]) as sess:
            for _ in range(8):
                sess.run(step)
        assert sum("has not been increased" in m for m in messages) == 5  # TF1 warns the first 5 times


def test_global_step_waiter_hook():
    server = af.train.Server.create_local_server()
    try:
        with af.Graph().as_default() as graph:
            with af.device("/job:localhost/task:0"):
                step = af.train.get_or_create_global_step()
            inc = af.assign_add(step, 1)
            waiter = af.train.GlobalStepWaiterHook(wait_until_step=3)
            waiter._POLL_SECS = 0.02
            chief = af.train.MonitoredTrainingSession(master=server.target, log_step_count_steps=0)
            done = {}

            def worker():
                with graph.as_default():  # the default graph is per thread
                    run_worker()

            def run_worker():
                sess = af.train.MonitoredTrainingSession(master=server.target, is_chief=False, hooks=[waiter],
                                                         log_step_count_steps=0)
                done["before"] = sess.run(step)  # held until the chief moved the step to 3
                sess.close()

            t = threading.Thread(target=worker)
            t.start()
            time.sleep(0.2)
            assert "before" not in done
            for _ in range(3):
                chief.run(inc)
            t.join(20)
            chief.close()
        assert done["before"] >= 3
    finally:
        server.stop()


def test_profiler_hook_writes_timeline_files(tmp_path):
    from asyncflow.python.client import timeline

    if not hasattr(timeline, "Timeline"):
        pytest.skip("asyncflow.python.client.timeline has no Timeline yet")
    with af.Graph().as_default():
        step = af.train.get_or_create_global_step()
        inc = af.assign_add(step, 1)
        y = af.reduce_sum(af.ones([3, 3]) * 2.0)
        hook = af.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))
        with af.train.SingularMonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run([inc, y])
    names = sorted(f for f in os.listdir(tmp_path) if f.startswith("timeline-"))
    assert names == ["timeline-2.json", "timeline-4.json"], names  # traced runs: steps 1->2 and 3->4
    trace = json.loads((tmp_path / "timeline-2.json").read_text())
    assert trace["traceEvents"] and any(e.get("ph") == "X" for e in trace["traceEvents"])


def test_checkpoints_iterator(tmp_path):
    with af.Graph().as_default():
        v = af.Variable(1.0, name="v")
        saver = af.train.Saver()
        with af.Session() as sess:
            sess.run(v.initializer)
            first = saver.save(sess, str(tmp_path / "m"), global_step=1)
            found = []
            for path in af.train.checkpoints_iterator(str(tmp_path), timeout=0.5):
                found.append(path)
                if len(found) == 1:
                    second = saver.save(sess, str(tmp_path / "m"), global_step=2)
    assert found == [first, second]
    assert list(af.train.checkpoints_iterator(str(tmp_path / "none"), timeout=0)) == []
