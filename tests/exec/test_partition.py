"""Partitioning: per-device subgraphs run by several executors over an in-process rendezvous.

Every partitioned run is compared with the unpartitioned (single-device) Session on the same graph.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.executor import Step, compile_plan
from asyncflow.exec.partition import partition
from asyncflow.exec.placement import place
from asyncflow.exec.rendezvous import LocalRendezvous
from asyncflow.exec.resources import ResourceContainer
from asyncflow.ops.comm import parse_key, rendezvous_key
from asyncflow.serialization import graph_to_parts, import_graph_def

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
DEVICES = [PS, W0, W1]


class InProcessCluster:
    """One resource container per device; a step runs every partition's executor in one loop."""

    def __init__(self, devices=DEVICES, shuffle_seed=None, round_trip=False):
        self.resources = {d: ResourceContainer(d) for d in devices}
        self.devices = list(devices)
        self.shuffle_seed = shuffle_seed
        self.round_trip = round_trip  # send each partition through its JSON document first
        self.last = None

    def run(self, graph, fetches, feed_dict=None, placement=None, **kw):
        feed_dict = feed_dict or {}
        fetch_list = fetches if isinstance(fetches, list) else [fetches]
        tensors = [f for f in fetch_list if isinstance(f, af.Tensor)]
        targets = [f for f in fetch_list if isinstance(f, af.Operation)]
        feeds = list(feed_dict)
        placement = placement or place(graph.get_operations(), self.devices, default_device=W0)
        pg = self.last = partition(tensors, targets, feeds, placement, **kw)
        values = asyncio.run(self._run(pg, [np.asarray(feed_dict[t]) for t in feeds], feeds))
        by_tensor = dict(zip(tensors, values))
        out = [by_tensor.get(f) for f in fetch_list]
        return out if isinstance(fetches, list) else out[0]

    async def _run(self, pg, feed_values, feeds):
        rendezvous, lock = LocalRendezvous(), threading.Lock()
        by_name = {t.name: v for t, v in zip(feeds, feed_values)}
        runs = []
        for p in pg.partitions:
            fetches, targets, feed_ts = p.fetches, p.targets, p.feeds
            if self.round_trip:
                fetches, targets, feed_ts = _round_trip(p)
            plan = compile_plan(fetches, targets, feed_ts, self.resources[p.device])
            step = Step(plan, [by_name[n] for n in p.feed_names], lock, 7, self.shuffle_seed, rendezvous=rendezvous)
            runs.append(self._drive(step, rendezvous))
        results = await asyncio.gather(*runs, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:  # the root cause, never a derived cancellation
            raise next((e for e in errors if not isinstance(e, af.errors.CancelledError)), errors[0])
        assert rendezvous.pending_keys == []  # every send was received
        parts = {p.device: r for p, r in zip(pg.partitions, results)}
        return [feed_values[i] if src == "feed" else parts[src][i] for src, i in pg.fetch_sources]

    @staticmethod
    async def _drive(step, rendezvous):
        try:
            return await step.run_async(timeout=10)
        except af.errors.OpError as e:
            rendezvous.abort(e)
            raise


def _round_trip(p):
    header, buffers = graph_to_parts(p.graph)
    g = af.Graph()
    with g.as_default():
        import_graph_def(header, buffers=buffers, name="")
    return ([g.get_tensor_by_name(t.name) for t in p.fetches], [g.get_operation_by_name(o.name) for o in p.targets],
            [g.get_tensor_by_name(t.name) for t in p.feeds])


@contextlib.contextmanager
def _devices_cleared(graph):
    """The graph's ops without their devices, for a reference run in the one-device embedded session
    (which refuses `/job:ps` as TF1's DirectSession does)."""
    saved = {op: op.device for op in graph.get_operations()}
    for op in saved:
        op._set_device(None)
    try:
        yield
    finally:
        for op, dev in saved.items():
            op._set_device(dev)


def _random_graph(seed):
    """A random DAG over a placeholder and two variables, ops pinned to random devices."""
    rng = random.Random(seed)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        with af.device("/job:ps/task:0"):
            v = af.Variable(np.array([1.0, -2.0, 0.5], np.float32), name="v")
        with af.device("/job:worker/task:1"):
            u = af.Variable(np.array([0.25, 3.0, -1.0], np.float32), name="u")
        pool = [x, v.value(), u.value()]
        for _i in range(40):
            with af.device(rng.choice(["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1", None])):
                a, b = rng.choice(pool), rng.choice(pool)
                kind = rng.randrange(3)
                y = af.add(a, b) if kind == 0 else af.multiply(a, 0.5) - b if kind == 1 else af.tanh(a) * b
                pool.append(y)
        init = af.global_variables_initializer()
    return g, x, init, pool


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_partitioned_graphs_equal_the_single_device_session(seed):
    g, x, init, pool = _random_graph(seed)
    feed = {x: np.array([0.5, 1.5, -1.0], np.float32)}
    fetches = pool[-6:]
    with _devices_cleared(g), af.Session(graph=g) as sess:  # the same graph on one device
        sess.run(init)
        want = sess.run(fetches, feed)
    cluster = InProcessCluster(shuffle_seed=seed if seed % 2 else None, round_trip=seed >= 2)
    cluster.run(g, [init])
    got = cluster.run(g, fetches, feed)
    assert len(cluster.last.partitions) >= 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_one_send_recv_pair_per_tensor_and_destination():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            a = af.constant(np.arange(4, dtype=np.float32), name="a")
            b = af.square(a, name="b")
        with af.device("/job:worker/task:0"):
            c1, c2, c3 = af.negative(b, name="c1"), af.add(b, 1.0, name="c2"), af.multiply(b, b, name="c3")
        with af.device("/job:worker/task:1"):
            d = af.add_n([b, b, af.exp(b)], name="d")
    cluster = InProcessCluster()
    got = cluster.run(g, [c1, c2, c3, d])
    parts = cluster.last.by_device()
    assert len(parts[PS].sends) == 2  # b to worker 0 and b to worker 1, not one per consumer
    assert len(parts[W0].recvs) == 1 and len(parts[W1].recvs) == 1
    sent = {op.get_attr("recv_device") for op in parts[PS].sends}
    assert sent == {W0, W1}
    bv = np.arange(4, dtype=np.float32) ** 2
    np.testing.assert_array_equal(got[0], -bv)
    np.testing.assert_array_equal(got[3], bv + bv + np.exp(bv))


def test_control_edges_across_devices_carry_a_token_and_order_the_ops():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            v = af.Variable(1.0, name="v")
            bump = af.assign_add(v, 10.0, name="bump")
        with af.device("/job:worker/task:0"):
            with af.control_dependencies([bump]):
                after = af.add(af.constant(5.0, name="five"), 1.0, name="after")
        init = af.global_variables_initializer()
    cluster = InProcessCluster()
    cluster.run(g, [init])
    assert cluster.run(g, after) == np.float32(6.0)  # fetching `after` ran `bump` on the other device
    parts = cluster.last.by_device()
    tokens = [op for op in parts[PS].sends if op.get_attr("tensor_name") == "^bump"]
    assert len(tokens) == 1 and tokens[0].get_attr("T") == af.bool
    recv = parts[W0].recvs[0]
    assert recv in parts[W0].graph.get_operation_by_name("after").control_inputs
    assert cluster.run(g, v.value()) == np.float32(11.0)


def test_feeds_go_only_to_partitions_that_consume_them():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        with af.device("/job:worker/task:1"):
            y = af.add(x, 1.0, name="y")
        with af.device("/job:ps/task:0"):
            z = af.constant(3.0, name="z") * 2.0
    cluster = InProcessCluster()
    got = cluster.run(g, [y, z, x], {x: np.array([1.0, 2.0], np.float32)})
    parts = cluster.last.by_device()
    assert parts[W1].feed_names == ["x:0"] and parts[PS].feed_names == []
    assert cluster.last.fetch_sources[2] == ("feed", 0)  # a fed tensor is fetched without any partition
    np.testing.assert_array_equal(got[0], [2.0, 3.0])
    assert got[1] == np.float32(6.0)
    assert not any(op.type == "_Recv" for p in cluster.last.partitions for op in p.graph.get_operations())


def test_keys_and_compression_attrs():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:ps/task:0"):
            f = af.identity(af.constant(np.ones(4, np.float32)), name="f")  # (a Const would be copied)
            i = af.identity(af.constant(np.ones(4, np.int32)), name="i")
        with af.device("/job:worker/task:0"):
            out = [af.negative(f, name="nf"), af.negative(i, name="ni")]
    placement = place(g.get_operations(), DEVICES)
    cluster = InProcessCluster()
    got = cluster.run(g, out, placement=placement, incarnations={"/job:ps/replica:0/task:0": 0xABC},
                      compression="bfloat16")
    recvs = {op.get_attr("tensor_name"): op for op in cluster.last.by_device()[W0].recvs}
    assert recvs["f:0"].get_attr("compression") == "bfloat16"  # float32 across processes
    assert recvs["i:0"].get_attr("compression") == ""  # other dtypes untouched
    key = rendezvous_key(PS, 0xABC, W0, "f:0")
    assert key == f"{PS};0000000000000abc;{W0};f:0;0:0"
    assert parse_key(key) == (PS, 0xABC, W0, "f:0", "0:0")
    np.testing.assert_array_equal(got[0], -np.ones(4, np.float32))  # in-process: no compression happens
    same = partition(out, [], [], placement, compression="float16", same_process=lambda a, b: True)
    assert all(op.get_attr("compression") == "" for p in same.partitions for op in p.recvs)
    with pytest.raises(ValueError, match="malformed rendezvous key"):
        parse_key("a;b")


def test_first_error_aborts_the_other_partitions_with_the_root_cause():
    g = af.Graph()
    with g.as_default():
        shape = af.placeholder(af.int32, [2], name="shape")
        with af.device("/job:ps/task:0"):
            bad = af.reshape(af.constant([1.0, 2.0, 3.0]), shape, name="bad")
        with af.device("/job:worker/task:0"):
            waits = af.add(bad, 1.0, name="waits")
            other = af.constant(1.0, name="other") + 1.0
    cluster = InProcessCluster()
    with pytest.raises(af.errors.InvalidArgumentError, match="'bad'"):
        cluster.run(g, [waits, other], {shape: np.array([2, 2], np.int32)})


def test_received_values_are_checked_against_the_plan():
    from asyncflow.exec.rendezvous import check_received

    class Spec:
        name = "r"
        out_dtypes = [np.float32]
        expected_shape = af.TensorShape([None, 2])
        compression = ""

    check_received(np.zeros([3, 2], np.float32), Spec())
    with pytest.raises(af.errors.InvalidArgumentError, match="received a int32 tensor"):
        check_received(np.zeros([3, 2], np.int32), Spec())
    with pytest.raises(af.errors.InvalidArgumentError, match=r"received shape \[3, 3\]"):
        check_received(np.zeros([3, 3], np.float32), Spec())


def test_small_constants_are_copied_to_their_consumers_and_others_are_sent():
    g = af.Graph()
    with g.as_default():
        with af.device("/job:worker/task:0"):
            small = af.constant(np.arange(4, dtype=np.float32), name="small")
            big = af.constant(np.arange(2048, dtype=np.float32), name="big")  # 8 KiB: over the copy limit
            with af.control_dependencies([af.no_op(name="first")]):
                ordered = af.constant(np.float32(2.0), name="ordered")  # a control input: must run after it
        with af.device("/job:ps/task:0"):
            out = [af.reduce_sum(small * 3.0), af.reduce_sum(big), ordered * 1.0]
    cluster = InProcessCluster()
    got = cluster.run(g, out)
    ps = cluster.last.by_device()[PS]
    assert sorted(op.get_attr("tensor_name") for op in ps.recvs) == ["big:0", "ordered:0"]
    assert [op.name for op in ps.graph.get_operations() if op.type == "Const" and op.name.startswith("small")] \
        == ["small/_copy"]
    np.testing.assert_allclose(got[0], 18.0)
    np.testing.assert_allclose(got[1], np.arange(2048, dtype=np.float32).sum())
    assert got[2] == np.float32(2.0)


def test_an_optimizer_step_sends_only_variables_and_gradients():
    """The optimizer's hyperparameters (worker Consts) are copied and its `update` NoOp runs on the
    ps with the apply ops, so no control token crosses: per step the ps sends each variable once and
    receives each gradient once."""
    g = af.Graph()
    with g.as_default():
        with af.device(af.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
            step = af.train.get_or_create_global_step()
            w = af.Variable(np.ones((3, 2), np.float32), name="w")
            b = af.Variable(np.zeros(2, np.float32), name="b")
            x = af.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
            loss = af.reduce_sum(af.square(af.matmul(x, w) + b))
            train = af.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
        init = af.global_variables_initializer()
    cluster = InProcessCluster()
    cluster.run(g, [init])
    cluster.run(g, [loss, train])
    parts = cluster.last.by_device()
    assert sorted(op.get_attr("tensor_name") for op in parts[W0].recvs) == ["b/read:0", "w/read:0"]
    assert len(parts[PS].recvs) == 2
    assert all(op.get_attr("tensor_name").startswith("gradients/") for op in parts[PS].recvs)
    after = cluster.run(g, [w.value(), b.value(), step.value()])
    with _devices_cleared(g):  # the unpartitioned step agrees
        ref = af.Session(graph=g)
        ref.run(init)
        ref.run(train)
        ref_values = ref.run([w, b, step])
    for got, want in zip(after, ref_values):
        np.testing.assert_array_equal(got, want)
    assert after[2] == 1


def test_a_control_dependency_on_a_fed_placeholder_is_satisfied_by_the_feed():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        with af.device("/job:worker/task:1"), af.control_dependencies([x]):
            y = af.constant(2.0, name="two") * 3.0
    got = InProcessCluster().run(g, [y], {x: np.array([1.0, 2.0], np.float32)})
    assert got[0] == np.float32(6.0)
