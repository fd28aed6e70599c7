"""The executor: equal to the reference path, eager on sync plans, tasks only for kernels that wait."""

from __future__ import annotations

import asyncio
import random
import threading

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec import executor
from asyncflow.exec.executor import Step, compile_plan, needed_ops, run_reference
from asyncflow.exec.resources import ResourceContainer
from tests import testing_ops


def _random_dag(seed: int, n: int = 200):
    """A random DAG of adds/subs/muls over 3 inputs, and the numpy values of every node."""
    rng = random.Random(seed)
    graph = af.Graph()
    with graph.as_default():
        inputs = [af.constant(np.full([4], float(i + 1))) for i in range(3)]
        tensors = list(inputs)
        values = [np.full([4], float(i + 1)) for i in range(3)]
        ops = [(af.add, np.add), (af.subtract, np.subtract), (af.multiply, lambda a, b: a * b * 0.5)]
        for _ in range(n):
            i, j = rng.randrange(len(tensors)), rng.randrange(len(tensors))
            build, ref = ops[rng.randrange(3)]
            if build is af.multiply:
                tensors.append(af.multiply(af.multiply(tensors[i], tensors[j]), 0.5))
            else:
                tensors.append(build(tensors[i], tensors[j]))
            values.append(ref(values[i], values[j]))
    return graph, tensors, values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_dag_matches_reference_and_numpy(seed):
    graph, tensors, values = _random_dag(seed)
    fetches = tensors[-20:]
    plan = compile_plan(fetches, [], [], ResourceContainer())
    lock = threading.Lock()
    fifo = Step(plan, [], lock).run_sync()
    shuffled = Step(plan, [], lock, shuffle_seed=seed + 100).run_sync()
    reference = asyncio.run(run_reference(plan, []))
    for got_fifo, got_shuffled, ref, want in zip(fifo, shuffled, reference, values[-20:]):
        np.testing.assert_array_equal(got_fifo, ref)
        np.testing.assert_array_equal(got_shuffled, ref)
        np.testing.assert_allclose(ref, want)


def test_partial_execution_prunes_to_what_fetches_need():
    graph = af.Graph()
    with graph.as_default():
        a = af.placeholder(af.float32, [], name="a")
        b = af.add(a, 1.0, name="b")
        c = af.add(b, 1.0, name="c")
        unrelated = af.multiply(a, 3.0, name="unrelated")
        d = af.add(c, 1.0, name="d")
    names = {op.name for op in needed_ops([d], [], [b])}
    assert names == {"c", "c/y", "d", "d/y"}
    assert unrelated.op not in needed_ops([d], [], [b])
    with af.Session(graph=graph) as sess:
        # Feeding an intermediate tensor: the placeholder above it need not be fed.
        assert sess.run(d, {b: 10.0}) == np.float32(12.0)
        assert sess.run(b, {b: 5.0}) == np.float32(5.0)


def test_plan_is_compiled_once_per_signature():
    graph = af.Graph()
    with graph.as_default():
        a = af.placeholder(af.float32, [])
        b = af.add(a, 1.0)
    with af.Session(graph=graph) as sess:
        for v in range(3):
            assert sess.run(b, {a: v}) == v + 1
        assert len(sess._plans) == 1
        sess.run(a, {a: 1.0})
        assert len(sess._plans) == 2
        with graph.as_default():
            af.add(b, 2.0)  # a new graph version gets new plans
        sess.run(b, {a: 1.0})
        assert len(sess._plans) == 3


def test_sync_plan_never_touches_an_event_loop():
    graph = af.Graph()
    with graph.as_default():
        x = af.add(af.constant(1.0), 2.0)
    with af.Session(graph=graph) as sess:
        assert sess.run(x) == 3.0
        assert sess._loop is None, "a step with no async kernel must not start the loop thread"


def test_waiting_kernel_overlaps_with_the_rest_of_the_step():
    """_TestWait suspends until _TestSignal (later in FIFO order, on another branch) has run."""
    graph = af.Graph()
    with graph.as_default():
        x = af.constant(np.arange(3.0))
        waited = testing_ops.wait(x, key="k1")
        signalled = testing_ops.signal(af.add(x, 1.0), key="k1")
        out = af.add(waited, signalled)
    with af.Session(graph=graph) as sess:
        result = sess.run(out, options=af.RunOptions(timeout_in_ms=5000))
    np.testing.assert_array_equal(result, np.arange(3.0) * 2 + 1)


def test_a_pure_kernel_with_large_inputs_runs_off_the_loop():
    """On an event loop, a pure kernel whose inputs reach OFFLOAD_BYTES runs in a worker thread: the loop
    goes on meanwhile (here it releases the kernel, which blocks its thread until then); smaller inputs,
    or inputs whose static shape says they are small, run inline."""
    graph = af.Graph()
    with graph.as_default():
        big = af.placeholder(af.float32, [None])
        small = af.placeholder(af.float32, [4])
        released = testing_ops.block(big, key="offload")
        doubled = af.reduce_sum(big * 2.0)
        inline = testing_ops.block(small, key="inline")
    plan = compile_plan([released, doubled], [], [big], ResourceContainer("t"))
    assert [plan.offload[i] for i, op in enumerate(plan.nodes) if op.type == "_TestBlock"] == [True]
    assert not compile_plan([inline], [], [small], ResourceContainer("t")).offload[0]
    n = executor.OFFLOAD_BYTES // 4
    values = np.arange(n, dtype=np.float32) % 7

    async def main():
        testing_ops.RELEASE["offload"] = threading.Event()
        asyncio.get_running_loop().call_later(0.05, testing_ops.RELEASE["offload"].set)
        return await Step(plan, [values], threading.Lock()).run_async(timeout=30)

    got_released, got_doubled = asyncio.run(main())
    assert got_released  # the loop ran while the kernel blocked its thread
    assert got_doubled == np.float32((values * 2.0).sum(dtype=np.float32))


def test_error_aborts_step_cancels_waiting_kernels_and_names_the_op():
    testing_ops.CANCELLED.clear()
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [])  # fed: nothing here is folded at plan time
        waiting = testing_ops.wait(x, key="never", name="blocked")
        failing = testing_ops.fail(af.add(x, 1.0), message="kernel exploded", name="bad")
        out = af.add(waiting, failing)
    with af.Session(graph=graph) as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="kernel exploded") as info:
            sess.run(out, {x: 1.0}, options=af.RunOptions(timeout_in_ms=5000))
        assert info.value.op.name == "bad"
        assert "bad" in str(info.value)
        assert testing_ops.CANCELLED == ["blocked"]
        # The session stays usable after a failed step.
        assert sess.run(af.add(x, 1.0, name="after"), {x: 1.0}) == 2.0


def test_timeout_gives_deadline_exceeded_and_session_goes_on():
    graph = af.Graph()
    with graph.as_default():
        x = af.constant(1.0)
        blocked = testing_ops.wait(x, key="never")
    with af.Session(graph=graph) as sess:
        with pytest.raises(af.errors.DeadlineExceededError, match="Timed out"):
            sess.run(blocked, options=af.RunOptions(timeout_in_ms=50))
        assert sess.run(x) == 1.0


def test_closing_the_session_cancels_a_blocked_step_in_another_thread():
    graph = af.Graph()
    with graph.as_default():
        blocked = testing_ops.wait(af.constant(1.0), key="never")
    sess = af.Session(graph=graph)
    errors: list[BaseException] = []
    started = threading.Event()

    def runner():
        started.set()
        try:
            sess.run(blocked)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            errors.append(e)

    thread = threading.Thread(target=runner)
    thread.start()
    started.wait()
    while not sess._inflight:
        threading.Event().wait(0.005)
    sess.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], af.errors.CancelledError), errors
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(blocked)


def test_undeclared_await_is_reported_not_hung():
    graph = af.Graph()
    with graph.as_default():
        y = testing_ops.undeclared_await(af.constant(1.0), name="sneaky")
    with af.Session(graph=graph) as sess:
        with pytest.raises(af.errors.InternalError, match="sneaky.*is_async"):
            sess.run(y)


def test_first_error_wins_over_derived_cancellations():
    graph = af.Graph()
    with graph.as_default():
        x = af.constant(1.0)
        blocked = [testing_ops.wait(x, key="never", name=f"w{i}") for i in range(3)]
        bad = testing_ops.fail(x, message="root cause", name="root")
        out = af.add_n(blocked + [bad]) if hasattr(af, "add_n") else af.add(blocked[0], bad)
    with af.Session(graph=graph) as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="root cause"):
            sess.run(out, options=af.RunOptions(timeout_in_ms=5000))


def test_trace_records_every_node():
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [])  # fed, so the optimiser folds nothing
        y = af.add(af.add(x, 1.0), 1.0)
    meta = af.RunMetadata()
    with af.Session(graph=graph) as sess:
        sess.run(y, {x: 1.0}, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=meta)
    (dev,) = meta.step_stats.dev_stats
    names = [s.node_name for s in dev.node_stats]
    # Constants are preset, not run (as TF's executor forwards a constant's tensor); a fed placeholder never runs.
    assert sorted(names) == sorted(op.name for op in graph.get_operations() if op.type not in ("Const", "Placeholder"))
    assert all(s.all_end_rel_micros >= 0 for s in dev.node_stats)


async def test_arun_from_a_running_loop_with_waiting_kernels():
    graph = af.Graph()
    with graph.as_default():
        x = af.constant(2.0)
        out = af.add(testing_ops.wait(x, key="a"), testing_ops.signal(x, key="a"))
    with af.Session(graph=graph) as sess:
        assert await sess.arun(out) == 4.0
        # `run` inside a running loop does not deadlock: the step runs on the session's loop thread.
        assert sess.run(out) == 4.0


def test_a_control_dependency_on_a_fed_tensor_is_satisfied_by_the_feed():
    """As TF: feeding a placeholder stands in for it on control edges too (metrics build
    `control_dependencies([values])` on what is often a placeholder); flat and frame executors alike."""
    p = af.placeholder(af.float32, [2], name="p")
    with af.control_dependencies([p]):
        doubled = p * 2.0
    with af.control_dependencies([p.op]):
        three = af.constant(3.0)
    with af.control_dependencies([p]):
        looped = af.while_loop(lambda i: i < 3, lambda i: i + 1, [af.constant(0)])
    with af.Session() as sess:
        got = sess.run([doubled, three, looped], {p: [1.0, 2.0]})
        np.testing.assert_array_equal(got[0], [2.0, 4.0])
        assert got[1] == 3.0 and got[2] == 3
        with pytest.raises(af.errors.InvalidArgumentError, match="must feed a value for placeholder"):
            sess.run(three)  # unfed, the control edge still needs the placeholder
