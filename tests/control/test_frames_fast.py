"""The frame executor's compiled loops (exec/frame_compile.py) against its dynamic path.

Each program runs three ways: compiled loop frames, the dynamic scheduler (compilation off), and the
dynamic scheduler popping ready nodes in a seeded random order; all must agree. Plus what only the
compiled path has: the frames it compiles, errors named by op, time-slice yields on an event loop,
deadlines while a loop is paused, and a fast loop nested in a loop that waits.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec import frames
from tests import testing_ops


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _three_ways(build, feed=None, monkeypatch=None):
    """Results of the program `build()` returns: compiled, dynamic, dynamic with a shuffled ready queue."""
    out = []
    for compile_, seed in ((True, None), (False, None), (False, 7)):
        monkeypatch.setattr(frames, "COMPILE", compile_)
        with af.Graph().as_default():
            fetches, feed_of = build()
            config = af.ConfigProto(shuffle_seed=seed) if seed is not None else None
            with af.Session(config=config) as sess:
                sess.run(af.global_variables_initializer())
                out.append(sess.run(fetches, feed_of or {}))
                plan = list(sess._plans.values())[-1].plan
                assert bool(plan.frames.compiled) == compile_
    return out


def _flat(x):
    return [v for item in x for v in _flat(item)] if isinstance(x, (list, tuple)) else [x]


def _same(results):
    first = _flat(results[0])
    for other in results[1:]:
        other = _flat(other)
        assert len(other) == len(first)
        for a, b in zip(first, other):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-5)


def _random_loop(seed: int):
    """A loop with a few float loop variables updated by random elementwise ops, some through a cond on the
    counter, with an inner loop now and then; the iteration count comes from a placeholder."""
    rng = np.random.default_rng(seed)
    n_vars = int(rng.integers(1, 4))
    plan = [(int(rng.integers(0, 4)), int(rng.integers(0, n_vars)), float(rng.uniform(0.5, 1.5)))
            for _ in range(n_vars * 2)]
    inner = bool(rng.integers(0, 2))
    outside_value = rng.uniform(-1, 1, 3).astype(np.float32)
    iterations = int(rng.integers(0, 9))

    def build():
        n = af.placeholder(af.int32, [], name="n")
        outside = af.constant(outside_value)
        init = [af.constant(0)] + [af.constant(np.float32(j + 1) * np.ones(3, np.float32)) for j in range(n_vars)]

        def body(i, *vs):
            vs = list(vs)
            for kind, j, c in plan:
                if kind == 0:
                    vs[j] = vs[j] * c + outside
                elif kind == 1:
                    vs[j] = af.cond(af.equal(i % 2, 0), lambda j=j, c=c: vs[j] - c, lambda j=j: af.tanh(vs[j]))
                elif kind == 2:
                    vs[j] = vs[j] + vs[(j + 1) % n_vars] * 0.5
                else:
                    vs[j] = af.sin(vs[j]) + af.cast(i, af.float32)
            if inner:
                _, extra = af.while_loop(lambda k, a: k < i % 3, lambda k, a: (k + 1, a + 0.25),
                                         [af.constant(0), vs[0]])
                vs[0] = extra
            return [i + 1] + vs

        return af.while_loop(lambda i, *vs: i < n, body, init), {n: iterations}

    return build


@pytest.mark.parametrize("seed", range(8))
def test_random_loop_programs_agree_on_every_path(seed, monkeypatch):
    _same(_three_ways(_random_loop(seed), monkeypatch=monkeypatch))


def test_many_iterations_and_nested_loop_counts(monkeypatch):
    def build():
        n = af.placeholder(af.int32, [])

        def outer(i, total, inner_runs):
            # the inner loop runs i times in outer iteration i: sum over i < n of i iterations
            _, t = af.while_loop(lambda k, t: k < i, lambda k, t: (k + 1, t + 1), [af.constant(0), total])
            return i + 1, t, inner_runs + 1

        big = af.while_loop(lambda i, v: i < 5000, lambda i, v: (i + 1, v + 1.0),
                            [af.constant(0), af.zeros([4])], parallel_iterations=32)
        nested = af.while_loop(lambda i, t, r: i < n, outer, [af.constant(0), af.constant(0), af.constant(0)])
        return [big, nested], {n: 30}

    for (i, v), (_, t, r) in _three_ways(build, monkeypatch=monkeypatch):
        assert i == 5000 and v.tolist() == [5000.0] * 4
        assert t == sum(range(30)) and r == 30


def test_gradient_loop_with_stacks_agrees(monkeypatch):
    """A while_loop's gradient (stacks pushed forward, popped by the gradient loop) is compiled too."""
    def build():
        x = af.placeholder(af.float32, [4, 3])
        w = af.Variable(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3))

        def body(t, h):
            return t + 1, af.tanh(af.matmul(h, w) + af.gather(x, t))

        _, h = af.while_loop(lambda t, h: t < 4, body, [af.constant(0), af.zeros([1, 3])])
        loss = af.reduce_sum(af.square(h))
        return [loss] + af.gradients(loss, [w, x]), {x: np.arange(12, dtype=np.float32).reshape(4, 3) / 12}

    _same(_three_ways(build, monkeypatch=monkeypatch))


def test_loop_in_an_untaken_branch_is_compiled_and_dead(monkeypatch):
    def build():
        v = af.Variable(0)
        p = af.placeholder(af.bool, [])

        def looping():
            def body(i):
                with af.control_dependencies([af.assign_add(v, 1)]):
                    return i + 1
            return af.while_loop(lambda i: i < 4, body, [af.constant(0)])

        out = af.cond(p, looping, lambda: af.constant(-1))
        with af.control_dependencies([out]):
            read = af.identity(v.read_value())
        return [out, read], {p: False}

    for out, read in _three_ways(build, monkeypatch=monkeypatch):
        assert out == -1 and read == 0


def test_a_kernel_error_inside_a_compiled_loop_names_the_op():
    def body(i):
        return af.cond(af.equal(i, 3), lambda: testing_ops.fail(i, message="third", name="bad"),
                       lambda: af.identity(i)) + 1

    out = af.while_loop(lambda i: i < 6, body, [af.constant(0)])
    with af.Session() as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="third") as info:
            sess.run(out)
        assert "bad" in info.value.op.name
        assert list(sess._plans.values())[-1].plan.frames.compiled
        assert sess.run(af.while_loop(lambda i: i < 2, lambda i: i + 1, [af.constant(0)])) == 2


def test_traced_step_runs_the_loop_through_timed_kernels():
    out = af.while_loop(lambda i: i < 3, lambda i: i + 1, [af.constant(0)])
    meta = af.RunMetadata()
    with af.Session() as sess:
        assert sess.run(out, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=meta) == 3
    names = [n.node_name for d in meta.step_stats.dev_stats for n in d.node_stats]
    assert sum(name.endswith("while/add") for name in names) == 3  # one record per iteration


def _long_loop_with_a_queue(iterations):
    q = af.FIFOQueue(2, af.float32, shapes=[[]])
    out = af.while_loop(lambda i, v: i < iterations, lambda i, v: (i + 1, v + 1.0), [af.constant(0), af.constant(0.0)])
    return q, out, q.dequeue()  # the dequeue makes the step asynchronous: it runs on the event loop


def test_a_long_compiled_loop_yields_to_the_event_loop(monkeypatch):
    q, out, taken = _long_loop_with_a_queue(2000)
    monkeypatch.setattr(frames.FrameStep, "YIELD_EVERY_S", 0.0)
    resumed = []
    original = frames.FrameStep._resume_fast
    monkeypatch.setattr(frames.FrameStep, "_resume_fast", lambda self, *a: (resumed.append(1), original(self, *a)))
    with af.Session() as sess:
        sess.run(q.enqueue(5.0))

        async def main():
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            task = asyncio.ensure_future(ticker())
            got = await sess.arun([out, taken])
            task.cancel()
            return got, ticks

        (count, total), value = asyncio.run(main())[0]
    assert (count, total, value) == (2000, 2000.0, 5.0)
    assert len(resumed) >= 100  # paused between iterations, picked up again from the loop


def test_a_deadline_while_a_compiled_loop_is_paused(monkeypatch):
    q, out, taken = _long_loop_with_a_queue(10_000_000)
    monkeypatch.setattr(frames.FrameStep, "YIELD_EVERY_S", 0.001)
    with af.Session() as sess:
        sess.run(q.enqueue(1.0))
        with pytest.raises(af.errors.DeadlineExceededError):
            sess.run([out, taken], options=af.RunOptions(timeout_in_ms=100))
        small = af.while_loop(lambda i: i < 3, lambda i: i + 1, [af.constant(0)])
        assert sess.run(small) == 3


def test_a_compiled_loop_inside_a_loop_that_waits(monkeypatch):
    """The outer loop dequeues (dynamic, several iterations in flight); its inner loop has no waiting kernel
    and is compiled; the other branch of the step fills the queue."""
    def build():
        q = af.FIFOQueue(10, af.float32, shapes=[[]])

        def body(i, s):
            x = q.dequeue()
            _, y = af.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y * 2.0), [af.constant(0), x])
            return i + 1, s + y

        out = af.while_loop(lambda i, s: i < 3, body, [af.constant(0), af.constant(0.0)])
        sent = af.placeholder(af.float32, [3])
        return [out, q.enqueue_many([sent])], {sent: [1.0, 2.0, 4.0]}

    for compile_ in (True, False):
        monkeypatch.setattr(frames, "COMPILE", compile_)
        with af.Graph().as_default():
            fetches, feed = build()
            with af.Session() as sess:
                (count, total), _ = sess.run(fetches, feed, options=af.RunOptions(timeout_in_ms=10000))
                compiled = list(sess._plans.values())[-1].plan.frames.compiled
        assert (count, total) == (3, 8.0 * 7.0)
        assert len(compiled) == (1 if compile_ else 0)  # the inner loop only


def test_parallel_iterations_overlap_while_one_waits_with_compilation_on():
    def body(i, acc):
        waited = testing_ops.wait(i, key="fast-overlap")
        sent = af.cond(af.equal(i, 2), lambda: testing_ops.signal(i, key="fast-overlap"), lambda: af.identity(i))
        return i + 1, acc + waited + 0 * sent

    out = af.while_loop(lambda i, acc: i < 3, body, [af.constant(0), af.constant(0)], parallel_iterations=4)
    with af.Session() as sess:
        assert sess.run(out, options=af.RunOptions(timeout_in_ms=10000)) == [3, 3]
        assert not list(sess._plans.values())[-1].plan.frames.compiled  # a waiting kernel: dynamic


def test_an_undeclared_await_in_a_compiled_loop_is_reported_with_its_op():
    out = af.while_loop(lambda i: i < 2, lambda i: testing_ops.undeclared_await(i, name="sneaky") + 1,
                        [af.constant(0)])
    with af.Session() as sess:
        with pytest.raises(af.errors.InternalError, match="is_async") as info:
            sess.run(out)
    assert "sneaky" in info.value.op.name


def test_line_maps_of_compiled_loops_go_with_their_plans():
    import gc

    from asyncflow.exec import frame_compile

    gc.collect()
    before = len(frame_compile.LINES)
    with af.Graph().as_default():
        out = af.while_loop(lambda i: i < 2, lambda i: i + 1, [af.constant(0)])
        with af.Session() as sess:
            assert sess.run(out) == 2
            assert len(frame_compile.LINES) == before + 1
    del sess, out
    gc.collect()
    assert len(frame_compile.LINES) == before
