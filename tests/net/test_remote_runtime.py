"""The remote Session's structure: a `Session` with a target holds a `RemoteRuntime` and delegates to it.

The Session's run/arun/make_callable/close/list_devices are its class's methods for both kinds of
Session (nothing is assigned onto the instance); the runtime takes flat lists (fetched tensors,
target ops, fed tensors, their values). One in-process server (`af.train.Server`, a real aiohttp
server on a thread of this process) plays the cluster. And the floors: `asyncflow.net` imports
neither `asyncflow.train` nor `asyncflow.session`; `asyncflow.cluster` imports nothing of asyncflow.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import numpy as np
import pytest

import asyncflow as af
from asyncflow.cluster import ClusterSpec
from asyncflow.net.client import RemoteRuntime
from asyncflow.session import BaseSession

PACKAGE = Path(af.__file__).resolve().parent
DELEGATED = ("run", "arun", "make_callable", "close", "list_devices")


@pytest.fixture(scope="module")
def server(monkeypatch_module):
    monkeypatch_module.delenv("ASYNCFLOW_TOKEN", raising=False)
    s = af.train.Server.create_local_server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _graph():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        y = af.multiply(x, 2.0, name="y")
        total = af.reduce_sum(y, name="total")
        v = af.Variable(1.0, name="v")
        bump = v.assign_add(1.0)
        init = af.global_variables_initializer()
    return g, x, y, total, v, bump, init


def test_a_session_with_a_target_holds_a_runtime_and_keeps_its_methods(server):
    g, x, y, total, v, bump, init = _graph()
    sess = af.Session(server.target, graph=g)
    try:
        assert isinstance(sess._remote, RemoteRuntime) and sess._remote.graph is g
        assert not set(DELEGATED) & set(vars(sess)), "methods assigned onto the instance"
        for name in DELEGATED:
            assert getattr(type(sess), name) is getattr(BaseSession, name)
        sess.run(init)
        feed = np.array([1.0, 2.0, 3.0], np.float32)
        out = sess.run({"y": y, "pair": (total, bump)}, {x: feed})
        np.testing.assert_array_equal(out["y"], feed * 2)
        assert out["pair"] == (12.0, 2.0)
        assert asyncio.run(sess.arun([total, v], {"x:0": feed})) == [12.0, 2.0]
        double = sess.make_callable(y, [x])
        np.testing.assert_array_equal(double(feed), feed * 2)
        assert any("/device:CPU:0" in d for d in sess.list_devices())
        assert sess._task_status()["dead"] == []
    finally:
        sess.close()
    assert sess._remote.closed
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(total, {x: feed})
    with pytest.raises(RuntimeError, match="closed Session"):
        double(feed)
    sess.close()  # twice is fine


def test_the_runtime_takes_flat_lists(server):
    g, x, y, total, v, bump, init = _graph()
    runtime = RemoteRuntime(server.target, g, None)
    try:
        feed = np.ones(3, np.float32)
        runtime.run([], [init], [], [])
        values = runtime.run([y, total], [bump.op], [x], [feed])
        np.testing.assert_array_equal(values[0], feed * 2)
        assert float(values[1]) == 6.0
        step = runtime.make_callable([total], [], [x])
        assert float(step([feed * 3], None, None)[0]) == 18.0
        assert [float(t) for t in asyncio.run(runtime.arun([total], [], [x], [feed]))] == [6.0]
    finally:
        runtime.close()


def test_an_in_process_session_has_no_runtime():
    with af.Graph().as_default():
        c = af.constant(3.0)
        with af.Session() as sess:
            assert sess._remote is None and sess._task_status is None
            assert sess.list_devices() == ["/job:localhost/replica:0/task:0/device:CPU:0"]
            assert sess.run(c) == 3.0


def test_cluster_spec_lives_below_net_and_train():
    assert af.train.ClusterSpec is ClusterSpec and af.train.cluster.ClusterSpec is ClusterSpec
    assert ClusterSpec({"ps": ["h:1"]}).job_tasks("ps") == ["h:1"]


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function-level and TYPE_CHECKING imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_net_imports_neither_train_nor_session():
    for path in sorted((PACKAGE / "net").glob("*.py")):
        above = {n for n in _imports(path) if n.startswith(("asyncflow.train", "asyncflow.session"))}
        assert not above, f"{path.name} imports {sorted(above)}"
    assert not {n for n in _imports(PACKAGE / "cluster.py") if n.startswith("asyncflow")}
