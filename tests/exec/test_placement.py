"""Placement: explicit constraints, colocation (variables, refs, colocate_with), errors, the cost model."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.placement import CostModel, place

PS0 = "/job:ps/replica:0/task:0/device:CPU:0"
PS1 = "/job:ps/replica:0/task:1/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
DEVICES = [PS0, PS1, W0, W1]


def _place(graph, **kw):
    return place(graph.get_operations(), DEVICES, default_device=kw.pop("default_device", W0), **kw)


def test_explicit_and_nested_partial_specs_are_merged():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker"):
            with af.device("/task:1"):
                a = af.constant(1.0, name="a")
                b = af.add(a, 1.0, name="b")
            with af.device("/job:ps/task:1/device:CPU:0"):
                af.multiply(b, 2.0, name="c")
    got = _place(g)
    assert got["b"] == W1 and got["c"] == PS1
    assert got["a"] == W1  # a generator goes with its consumer


def test_variable_ops_stay_with_the_variable_under_a_device_function():
    g = af.Graph()

    def setter(op):
        return "/job:ps/task:1" if op.type == "VariableV2" else "/job:worker/task:0"

    with g.as_default():
        with af.device(setter):
            w = af.Variable(np.ones(3, np.float32), name="w")
            af.multiply(w, 2.0, name="y")
            up = af.assign_add(w, np.ones(3, np.float32), name="up")
    got = _place(g)
    for name in ("w", "w/Assign", "w/read", "up"):
        assert got[name] == PS1, name
    assert got["y"] == W0
    # colocate_with sets the device scopes aside, as TF: the initializer carries the variable's device.
    assert w.op.device == w.initializer.device == "/job:ps/task:1"
    del up


def test_ref_input_colocates_with_the_variable():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            w = af.Variable(1.0, name="w")
        inc = af.assign_add(w, 1.0, name="inc")  # no device: follows the variable through its ref input
        with af.device("/job:worker/task:0"):
            # TF builds updaters inside colocate_with(variable): the variable's device wins.
            inc2 = af.assign_add(w, 1.0, name="inc2")
    got = _place(g)
    assert got["inc"] == got["inc2"] == PS0
    del inc, inc2


def test_conflicting_colocation_names_both_ops_and_devices():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            w = af.Variable(1.0, name="w")
        with af.colocate_with(w.op), af.device("/job:worker/task:0"):
            af.identity(w, name="near")
    with pytest.raises(af.errors.InvalidArgumentError, match=r"Cannot colocate nodes 'w' .*'/job:ps/task:0'.*'near'"
                                                            r".*'/job:worker/task:0'"):
        _place(g)


def test_colocate_with_keeps_ops_together():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker/task:1"):
            a = af.constant([1.0, 2.0], name="a")
            b = af.square(a, name="b")
        with af.device("/job:ps/task:0"):
            with af.colocate_with(b):
                c = af.negative(b, name="c")
    got = _place(g)
    assert got["c"] == got["b"] == W1
    del c


def test_unsatisfiable_constraint_names_the_op_and_the_devices():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:chief/task:0"):
            af.constant(1.0, name="lonely")
    with pytest.raises(af.errors.InvalidArgumentError,
                       match=r"operation 'lonely'.*'/job:chief/task:0'.*available devices: /job:ps"):
        _place(g)


def test_soft_placement_drops_only_the_device_type():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker/task:1/device:GPU:0"):
            af.add(af.constant(1.0), 1.0, name="x")
    with pytest.raises(af.errors.InvalidArgumentError, match="GPU"):
        _place(g)
    assert _place(g, allow_soft_placement=True)["x"] == W1


def test_small_unconstrained_graph_stays_on_the_default_device():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [4], name="x")
        ys = [af.multiply(x, float(i), name=f"y{i}") for i in range(8)]
        af.add_n(ys, name="total")
    got = _place(g, default_device=W1)
    assert set(got.values()) == {W1}


def test_greedy_cost_model_spreads_heavy_independent_work():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker"):  # either worker task
            outs = []
            for i in range(2):
                a = af.random_normal([2048, 2048], seed=i, name=f"a{i}")
                outs.append(af.matmul(a, a, name=f"mm{i}"))
    got = _place(g)
    assert {got["mm0"], got["mm1"]} == {W0, W1}
    assert got["a0"] == got["mm0"] and got["a1"] == got["mm1"]


def test_cross_device_bytes_keep_consumers_near_big_inputs():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:1"):
            big = af.Variable(np.zeros([1024, 1024], np.float32), name="big")
        af.reduce_sum(big, name="total")
    # Moving 4 MiB would cost more than the sum: the reduction runs next to the variable.
    assert _place(g)["total"] == PS1
    # With a free network the default device wins the tie.
    free = CostModel(transfer_latency_s=0.0, bytes_per_second=float("inf"))
    assert _place(g, model=free)["total"] == W0


def test_measured_timings_refine_estimates():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker"):
            a = af.constant(np.ones([8], np.float32), name="a")
            p = af.square(a, name="p")
            q = af.negative(a, name="q")
    assert _place(g)["p"] == _place(g)["q"] == W0  # tiny ops stay together
    slow = {"p": 1.0, "q": 1.0}  # an earlier step measured them at a second each
    got = _place(g, measured=slow)
    assert {got["p"], got["q"]} == {W0, W1}
    del p, q


def test_pinned_stateful_ops_do_not_move():
    g = af.Graph()
    with g.as_default():
        w = af.Variable(1.0, name="w")
    assert _place(g)["w"] == W0
    got = _place(g, pinned={"w": PS1})
    assert got["w"] == got["w/Assign"] == got["w/read"] == PS1
    del w


def test_queue_users_follow_the_queue_and_control_flow_stays_on_one_device():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:1"):
            q = af.FIFOQueue(4, af.float32, shapes=[[]], name="q")
            w = af.Variable(np.ones([256, 256], np.float32), name="w")
        with af.device("/job:worker/task:0"):
            enq = q.enqueue(1.0)  # a resource input: runs where the queue lives
        x = af.placeholder(af.float32, [256, 256], name="x")
        # The body reads a 256 KiB variable on ps 1: its Enter alone would go there (no bytes to move),
        # but a loop's values carry frames, so the whole loop stays together.
        _, r = af.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, af.matmul(a, w)), [af.constant(0), x])
    got = _place(g)
    assert got[enq.name] == PS1
    loop = {op.name for op in g.get_operations() if op.name.startswith("while/")}
    assert len(loop) > 5 and len({got[n] for n in loop}) == 1
    del r


def test_a_noop_runs_where_its_control_edges_are():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:1"):
            v = af.Variable(0.0, name="v")
            a, b = v.assign_add(1.0, name="a").op, v.assign_add(2.0, name="b").op
        with af.device("/job:worker/task:1"):
            joined = af.group(a, b, name="joined")  # asked for the worker; all its edges are on ps 1
            with af.control_dependencies([joined]):
                after = v.assign(5.0, name="after").op
            lone = af.no_op(name="lone")  # no control edges: stays where it asked
        with af.device("/job:ps/task:0"):
            u = af.Variable(0.0, name="u")
        with af.device("/job:worker/task:1"):
            w = af.Variable(0.0, name="w")
            tie = af.group(u.assign(1.0).op, w.assign(1.0).op, name="tie")  # one edge each side: stays
    placed = _place(g)
    assert placed[joined.name] == PS1 and placed[after.name] == PS1
    assert placed[lone.name] == W1 and placed[tie.name] == W1
