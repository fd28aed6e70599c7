"""Control flow split over tasks of a real cluster: a loop's or a cond's result feeds control flow placed on
another task (issue 13, 6a). Each loop and each cond stays whole on its own task; only the live values
leaving them (an Exit's, a cond Merge's) cross. Results are checked against numpy and against the
in-process Session, and the placement against the devices the program asked for."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.placement import place

T0 = "/job:worker/task:0"
T1 = "/job:worker/task:1"
_SPLIT = [True]  # False: the same program with no devices, for the in-process Session


def _on(device: str):
    return af.device(device if _SPLIT[0] else None)
DEVICES = ["/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
           "/job:worker/replica:0/task:1/device:CPU:0"]


def _loop_then_cond():
    """TF1's program from the issue: r = 10, r > 5, so 2 * r."""
    with _on(T0):
        r = af.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
    with _on(T1):
        out = af.cond(r > 5, lambda: r * 2, lambda: r - 1)
    return {"out": out}, {}, {"out": 20}


def _loop_then_loop():
    """A loop on task 0 (x doubled n times) whose Exit feeds a loop on task 1 (subtract 1 while above 3)."""
    x = af.placeholder(af.float64, [3], name="x")
    n = af.placeholder(af.int32, [], name="n")
    with _on(T0):
        _, y = af.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 2.0), [0, x])
    with _on(T1):
        z = af.while_loop(lambda v: af.reduce_max(v) > 3.0, lambda v: v - 1.0, [y])
    xv = np.array([0.5, -1.0, 0.25])
    y_ref = xv * 2.0 ** 3
    z_ref = y_ref.copy()
    while z_ref.max() > 3.0:
        z_ref = z_ref - 1.0
    return {"y": y, "z": z}, {x: xv, n: 3}, {"y": y_ref, "z": z_ref}


def _cond_then_loop():
    """A cond on task 0 picks a start value; a loop on task 1 counts it up to 10 in steps of 3."""
    p = af.placeholder(af.bool, [], name="p")
    with _on(T0):
        start = af.cond(p, lambda: af.constant(1), lambda: af.constant(2))
    with _on(T1):
        k, steps = af.while_loop(lambda k, s: k < 10, lambda k, s: (k + 3, s + 1), [start, 0])
    return {"k": k, "steps": steps}, {p: True}, {"k": 10, "steps": 3}


def _nested_then_cond():
    """A loop with a cond and a loop in its body on task 0; its result feeds a cond on task 1."""
    x = af.placeholder(af.float64, [2], name="x")
    with _on(T0):
        def body(i, v):
            inner = af.while_loop(lambda j, w: j < i, lambda j, w: (j + 1, w + 1.0), [0, v])[1]
            return i + 1, af.cond(af.equal(i % 2, 0), lambda: inner * 2.0, lambda: inner - 1.0)

        _, v = af.while_loop(lambda i, v: i < 4, body, [0, x])
    with _on(T1):
        out = af.cond(af.reduce_sum(v) > 0.0, lambda: af.reduce_sum(v * v), lambda: af.reduce_sum(v))
    xv = np.array([1.0, -0.5])
    ref = xv.copy()
    for i in range(4):
        ref = ref + i
        ref = ref * 2.0 if i % 2 == 0 else ref - 1.0
    want = (ref * ref).sum() if ref.sum() > 0 else ref.sum()
    return {"v": v, "out": out}, {x: xv}, {"v": ref, "out": want}


def _nested_gradient_then_cond():
    """The gradient of a loop holding a cond and a loop (task 0) read by a cond on task 1: the backward
    loops go with the forward loop whose stacks they pop."""
    x = af.placeholder(af.float64, [2], name="x")
    with _on(T0):
        def body(i, v):
            inner = af.while_loop(lambda j, w: j < i, lambda j, w: (j + 1, w * x), [0, v])[1]
            return i + 1, af.cond(af.reduce_sum(inner) > 0.0, lambda: inner * 2.0, lambda: inner + x)

        _, v = af.while_loop(lambda i, v: i < 3, body, [0, x])
        (g,) = af.gradients(af.reduce_sum(v), x)
    with _on(T1):
        out = af.cond(af.reduce_sum(g) > 0.0, lambda: g * 10.0, lambda: g)
    xv = np.array([0.7, 0.4])

    def f(z):
        v = z.copy()
        for i in range(3):
            v = v * z ** i
            v = v * 2.0 if v.sum() > 0 else v + z
        return v.sum()

    eps = 1e-6
    num = np.array([(f(xv + e) - f(xv - e)) / (2 * eps) for e in np.eye(2) * eps])
    return {"g": g, "out": out}, {x: xv}, {"g": num, "out": num * 10.0 if num.sum() > 0 else num}


PROGRAMS = {"loop_then_cond": _loop_then_cond, "loop_then_loop": _loop_then_loop,
            "cond_then_loop": _cond_then_loop, "nested_then_cond": _nested_then_cond,
            "nested_gradient_then_cond": _nested_gradient_then_cond}


def _task(device: str) -> int:
    return int(device.split("/task:")[1].split("/")[0])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_region_stays_on_the_task_it_asked_for(name):
    g = af.Graph()
    with g.as_default():
        PROGRAMS[name]()
    placed = place(g.get_operations(), DEVICES, default_device=DEVICES[1])
    for op in g.get_operations():
        if op.device:
            assert _task(placed[op.name]) == _task(op.device), (op.name, op.device, placed[op.name])
    assert {_task(d) for d in placed.values()} == {0, 1}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_control_flow_across_tasks_on_a_real_cluster(cluster, name):
    results = []
    for target in ("", cluster.target):
        g = af.Graph()
        _SPLIT[0] = bool(target)
        try:
            with g.as_default():
                fetches, feeds, want = PROGRAMS[name]()
        finally:
            _SPLIT[0] = True
        with af.Session(target, graph=g) as sess:
            results.append(sess.run(fetches, feeds))
    local, remote = results
    for key, value in want.items():
        np.testing.assert_allclose(remote[key], value, rtol=1e-6 if name.startswith("nested_gradient") else 1e-12)
        np.testing.assert_array_equal(remote[key], local[key])
