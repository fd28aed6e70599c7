"""Graph optimisations (exec/optimize.py): each pass shrinks the plan and leaves every result bit for bit as
the same graph gives with the optimisations off; stateful and random ops, control inputs, feeds and targets
are never optimised through; each pass turns off with TF1's switch (asyncflow/graph_options.py).

TF1 behaviour pinned with TF 2.21's compat.v1 runtime (partition graphs of a session run): constants are
folded, equal Sin/Mul/Const nodes merged, Identity/StopGradient/one-input AddN/Neg(Neg)/Transpose pairs/Cast
to the same dtype/Tile by ones/Pad by zeros/full Slice removed, float `x + 0` kept (so -0.0 stays -0.0 +
0 = 0.0 there too), a fetched Identity kept, and two random ops with the same seeds give equal values.
"""

from __future__ import annotations

import random
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.executor import Step, compile_plan
from asyncflow.exec.optimize import optimize
from asyncflow.exec.resources import ResourceContainer
from asyncflow.graph_options import ALL_PASSES, NO_PASSES, Passes, enabled_passes
from asyncflow.ops.registry import OPS

L0 = af.OptimizerOptions.L0
OFF = af.RewriterConfig.OFF
NONE = af.GraphOptions(optimizer_options=af.OptimizerOptions(opt_level=L0),
                       rewrite_options=af.RewriterConfig(disable_meta_optimizer=True))


def _plan(fetches, feeds=(), targets=(), options=None):
    return compile_plan(list(fetches), list(targets), list(feeds), ResourceContainer("opt"), graph_options=options)


def _run(plan, values=()):
    return Step(plan, list(values), threading.Lock()).run_sync()


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        assert got.tobytes() == want.tobytes()  # bit for bit: -0.0, NaN


def _compare(fetches, feeds=None, options=None, targets=()):
    """The plan with `options` (None: defaults) and the one with every pass off: both give the same bits.
    Returns (optimised plan, plain plan, the optimiser's counts)."""
    feeds = feeds or {}
    on = _plan(fetches, feeds, targets, options)
    off = _plan(fetches, feeds, targets, NONE)
    for got, want in zip(_run(on, feeds.values()), _run(off, feeds.values())):
        _same(got, want)
    counts = optimize(off.nodes, list(fetches), list(targets), list(feeds), options).counts
    return on, off, counts


# -- common subexpression elimination -------------------------------------------------------------
def test_cse_computes_equal_ops_once():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        a = af.sin(x) * 2.0
        b = af.sin(x) * 2.0  # its own Sin, Mul and Const `mul_1/y`
        out = a + b
    on, off, counts = _compare([out], {x: np.float32([1, -2, 3])})
    assert len(off.nodes) == 7 and len(on.nodes) == 4  # Sin_1, mul_1 and mul_1/y are gone (x is fed)
    assert counts["common_subexpression"] == 3
    assert sorted(op.type for op in on.nodes) == ["AddV2", "Const", "Mul", "Sin"]


def test_cse_commutative_ops_match_either_order_of_two_inputs_only():
    g = af.Graph()
    with g.as_default():
        x, y, z = (af.placeholder(af.float32, [2]) for _ in range(3))
        ab, ba = af.add(x, y), af.add(y, x)
        d1, d2 = af.subtract(x, y), af.subtract(y, x)  # not commutative
        n1, n2 = af.add_n([x, y, z]), af.add_n([z, y, x])  # a sum of three rounds by its order
        out = af.stack([ab + ba, d1 + d2, n1 + n2])
    feeds = {x: np.float32([1e8, 1]), y: np.float32([1, 2]), z: np.float32([-1e8, 3])}
    on, off, counts = _compare([out], feeds)
    assert counts["common_subexpression"] == 1
    assert len(off.nodes) - len(on.nodes) == 1


def test_cse_compares_attrs_exactly():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 3])
        s1 = af.reduce_sum(x, axis=0, keepdims=True)
        s2 = af.reduce_sum(x, axis=0, keepdims=False)
        z1, z2 = af.constant(0.0), af.constant(-0.0)  # equal as floats, not as bits
        n1, n2 = af.constant(np.nan), af.constant(np.nan)  # equal bits
        c1, c2 = af.cast(x, af.float64), af.cast(x, af.int32)
        i1, i2 = af.constant(2), af.constant(2.0)
        fetches = [s1, s2, z1 * x, z2 * x, n1 * x, n2 * x, c1, c2, i1 * 3, i2 * x]
    on, off, counts = _compare(fetches, {x: np.float32([[1, -0.0, 3], [4, 5, 6]])})
    rw = optimize(off.nodes, fetches, [], [x])
    assert rw.tensors[n2] is n1 and counts["common_subexpression"] == 2  # and Sum_1's axis constant
    assert not {s2, z2, c2, i2} & set(rw.tensors)


def test_cse_merges_equal_control_inputs_and_keeps_different_ones():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2])
        first, second = af.exp(x, name="first"), af.log(x, name="second")
        with af.control_dependencies([first]):
            a1, a2 = af.sin(x, name="a1"), af.sin(x, name="a2")
        with af.control_dependencies([second]):
            b = af.sin(x, name="b")
        out = a1 + a2 + b
    on, _, counts = _compare([out], {x: np.float32([1, 2])})
    names = {op.name for op in on.nodes}
    assert {"b", "first", "second"} <= names and len(names & {"a1", "a2"}) == 1
    assert counts["common_subexpression"] == 1


def test_cse_never_merges_stateful_or_random_ops_nor_placeholders():
    g = af.Graph()
    with g.as_default():
        af.set_random_seed(3)
        r1 = af.random_uniform([4], seed=5)
        r2 = af.random_uniform([4], seed=5)  # same seeds: equal values (as TF1), still two ops
        p1, p2 = af.placeholder(af.float32, [2]), af.placeholder(af.float32, [2])
        v = af.Variable([1.0, 2.0])
        inc1, inc2 = af.assign_add(v, [1.0, 1.0]), af.assign_add(v, [1.0, 1.0])
        fetches = [r1, r2, p1 * 1.5, p2 * 1.5]
    plan = _plan(fetches, [p1, p2])
    assert sum(op.type == "RandomUniform" for op in plan.nodes) == 2
    got = _run(plan, [np.float32([1, 2]), np.float32([3, 4])])
    _same(got[0], got[1])
    _same(got[3], np.float32([4.5, 6]))
    with af.Session(graph=g) as sess:
        sess.run(v.initializer)
        assert sess.run([inc1, inc2])[1].tolist() == [3.0, 4.0]  # both increments ran


def test_cse_leaves_fed_outputs_and_targets_alone():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2])
        a, b = af.sin(x, name="a"), af.sin(x, name="b")
        scaled = b * 1.5
    plan = _plan([scaled], [x, a])  # a is fed: b must not read the feed
    assert "b" in {op.name for op in plan.nodes}
    _same(_run(plan, [np.float32([0, 1]), np.float32([7, 7])])[0], np.sin(np.float32([0, 1])) * np.float32(1.5))
    plan = _plan([a], [x], targets=[b.op])
    assert {"a", "b"} <= {op.name for op in plan.nodes}


def test_two_fetches_are_never_one_array():
    """TF hands out one array per fetched tensor, even where its optimiser merged their nodes."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        a, b = af.sin(x), af.sin(x)
        c = af.cos(x)
        d = af.identity(c)
    with af.Session(graph=g) as sess:
        ra, rb, rc, rd = sess.run([a, b, c, d * 1.0], {x: [1.0, 2.0, 3.0]})
    assert not np.shares_memory(ra, rb) and not np.shares_memory(rc, rd)


def test_fetched_ops_are_preserved_and_equal_ops_may_read_them():
    """As grappler's nodes_to_preserve: a fetched op runs (a trace shows it), its inputs optimised."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2])
        a = af.sin(af.identity(x), name="a")
        b = af.sin(x, name="b")
        c = af.cos(b, name="c")
        k = af.multiply(af.constant(3.0), 3.0, name="k")
    on, off, counts = _compare([a, c, k], {x: np.float32([1, 2])})
    assert sorted(op.name for op in on.nodes) == ["Const", "a", "c", "k"]  # b reads a; k's operands are one Const
    assert counts == {"identity": 1, "arithmetic": 0, "common_subexpression": 2, "constant_folding": 0}


# -- constant folding -----------------------------------------------------------------------------
def test_fold_evaluates_constant_subgraphs_once_with_exact_dtypes():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        scale = af.constant([1.0, 2.0, 3.0]) * 3.0 + 1.0  # float32
        n = af.reduce_prod(af.constant([2, 3], dtype=af.int64))  # int64 0-d
        half = af.cast(af.constant(1, af.int32), af.float16) / 2  # float16
        words = af.strings.join([af.constant(["a", "b"]), af.constant(["c", "d"])])
        fetches = [x * scale] + [af.identity(t) for t in (n, half, words)]  # a fetched op runs (and is traced)
    on, off, counts = _compare(fetches, {x: np.float32([1, 2, 3])})
    assert counts["constant_folding"] == 6
    assert sorted(op.type for op in on.nodes) == ["Identity"] * 3 + ["Mul"]  # their inputs are preset
    assert len(off.nodes) == 19
    folded = optimize(off.nodes, fetches, [], [x]).folded
    assert folded[n] == 6 and type(folded[n]) is np.int64 and folded[half].dtype == np.float16
    value = folded[scale]
    assert value.dtype == np.float32 and not value.flags.writeable


def test_fold_never_passes_a_control_input_nor_folds_stateful_ops():
    g = af.Graph()
    with g.as_default():
        v = af.Variable(1.0)
        with af.control_dependencies([af.assign_add(v, 1.0)]):
            guarded = af.constant(2.0) * 3.0
        noise = af.random_uniform([2], seed=1) * af.constant(1.0)
    plan = _plan([guarded, noise])
    names = {op.type for op in plan.nodes}
    assert {"AssignAdd", "Mul", "RandomUniform"} <= names
    rw = optimize(plan.nodes, [guarded, noise], [], [])
    assert guarded not in rw.folded and not any(t.op.type == "RandomUniform" for t in rw.folded)


def test_fold_is_bounded_in_size():
    g = af.Graph()
    with g.as_default():
        small = af.fill([4], 2.0) * 2.0
        big = af.fill([2048, 1300], 1.0) * 2.0  # 10.2 MiB: more than TF's 10 MiB
        limit = af.GraphOptions(optimizer_options=af.OptimizerOptions(max_folded_constant_in_bytes=8))
        fetches = [af.identity(small), af.identity(big)]
    rw = optimize(_plan(fetches, options=NONE).nodes, fetches, [], [])
    assert small in rw.folded and big not in rw.folded and big.op.inputs[0] not in rw.folded
    rw = optimize(_plan(fetches[:1], options=NONE).nodes, fetches[:1], [], [], limit)
    assert small not in rw.folded and rw.counts["constant_folding"] == 0


def test_a_kernel_error_while_folding_raises_at_run_time_as_usual():
    g = af.Graph()
    with g.as_default():
        bad = af.check_numerics(af.constant([1.0, np.nan]) * 2.0, "found a NaN")
    messages = []
    for options in (None, NONE):
        with af.Session(graph=g, config=af.ConfigProto(graph_options=options)) as sess:
            with pytest.raises(af.errors.InvalidArgumentError) as info:
                sess.run(bad)
            messages.append(str(info.value))
    assert messages[0] == messages[1] and "found a NaN" in messages[0]


def test_a_fed_constant_is_not_a_constant():
    g = af.Graph()
    with g.as_default():
        c = af.constant(2.0)
        y = c * 3.0
    plan = _plan([y], [c])
    assert y not in optimize(plan.nodes, [y], [], [c]).folded
    assert _run(plan, [np.float32(5)]) == [15.0]


# -- identity chains ------------------------------------------------------------------------------
def test_identity_chains_are_read_through():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2])
        y = af.stop_gradient(af.identity(af.identity(x))) + OPS["AddN"]([af.sin(x)])  # af.add_n([t]) is t
        a, b = af.identity_n([x, af.cos(x)])
        both = a + b
    on, off, counts = _compare([y, both], {x: np.float32([1, 2])})
    assert counts["identity"] == 5
    assert len(off.nodes) - len(on.nodes) == 5
    assert not {"Identity", "IdentityN", "StopGradient", "AddN"} & {op.type for op in on.nodes}


def test_identity_kept_with_control_input_ref_input_or_when_fetched():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2])
        v = af.Variable([1.0, 2.0])
        step = af.assign_add(v, [1.0, 1.0])
        with af.control_dependencies([step]):
            after = af.identity(x, name="after")
        outer = af.identity(v, name="outer")  # Identity(Variable/read), which is Identity(the variable's ref)
        read = outer.op.inputs[0]
        copy = af.identity(x, name="copy")
        fetches = [af.sin(after), outer * 1.5, af.sin(copy), copy]
    rw = optimize(_plan(fetches, [x], options=NONE).nodes, fetches, [], [x])
    assert read.op.inputs[0].dtype.is_ref_dtype and read not in rw.tensors
    assert rw.tensors[outer] is read and after not in rw.tensors
    assert copy not in rw.tensors  # fetched: it runs, as TF keeps a fetched Identity
    rw = optimize(_plan(fetches[2:3], [x], options=NONE).nodes, fetches[2:3], [], [x])
    assert rw.tensors[copy] is x


def test_a_control_edge_on_a_removed_op_waits_for_what_replaced_it():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        passthrough = af.identity(af.sin(x, name="sin"))  # the edge moves to sin
        folded = af.constant(3.0) * 2.0  # the edge is satisfied at the start
        dup_a, dup_b = af.cos(x, name="cos_a"), af.cos(x, name="cos_b")  # the edge moves to cos_a
        with af.control_dependencies([passthrough, folded.op, dup_b]):
            out = af.exp(x, name="out")
    plan = _plan([out, dup_a], [x])
    index = {op.name: i for i, op in enumerate(plan.nodes)}
    assert set(index) == {"sin", "cos_a", "out"}
    assert index["out"] in plan.consumers[index["sin"]] and index["out"] in plan.consumers[index["cos_a"]]
    assert plan.pending0[index["out"]] == 2  # sin and cos_a (x is fed)


# -- arithmetic simplification ---------------------------------------------------------------------
def _simplification_graph():
    x = af.placeholder(af.float32, [2, 3], name="x")
    k = af.placeholder(af.int32, [3], name="k")
    u = af.placeholder(af.float32, [None], name="u")
    m = af.placeholder(af.float32, [1, 3], name="m")
    gone = {
        "mul_one": x * 1.0, "one_mul": af.ones([3]) * x, "div_one": x / 1.0, "int_add_zero": k + 0,
        "zero_add_int": 0 + k, "sub_zero": x - 0.0, "int_floordiv": k // 1, "neg_neg": af.negative(-x),
        "transposes": af.transpose(af.transpose(x)), "reshape_same": af.reshape(x, [2, -1]),
        "cast_same": OPS["Cast"](x, DstT=af.float32),  # af.cast to x's own dtype builds nothing
        "tile_ones": af.tile(x, [1, 1]),
        "pad_zero": af.pad(x, [[0, 0], [0, 0]]), "slice_full": af.slice(x, [0, 0], [-1, 3]),
        "squeeze_none": af.squeeze(x), "add_n_one": OPS["AddN"]([x]), "reverse_unit": af.reverse(m, [0]),
        "transpose_unit": af.transpose(m, [0, 1]), "split_one": af.split(x, 1, axis=1)[0],
        "and_true": af.logical_and(af.cast(k, af.bool), True),
    }
    kept = {
        "float_add_zero": x + 0.0,  # -0.0 + 0.0 is 0.0 (TF keeps it too)
        "sub_neg_zero": x - (-0.0),
        "widening": x * af.ones([4, 2, 3]),  # the result is bigger than x
        "unknown_dim": u * af.ones([3]),  # u may be of length 1
        "complex": af.complex(x, x) * af.constant(1 + 0j, af.complex64),
        "int_div_float": af.cast(k, af.float32) // 1.0,  # floor(x/1) is not x for floats
        "reshape_other": af.reshape(x, [3, 2]),
        "squeeze_unit": af.squeeze(m),
    }
    feeds = {x: np.float32([[-0.0, np.nan, np.inf], [1.5, -2, 3]]), k: np.int32([0, -4, 7]),
             u: np.float32([2.0]), m: np.float32([[1, -0.0, np.nan]])}
    return gone, kept, feeds


def test_arithmetic_simplifications_forward_the_input_bit_for_bit():
    g = af.Graph()
    with g.as_default():
        gone, kept, feeds = _simplification_graph()
        fetches = [af.identity(t) for t in list(gone.values()) + list(kept.values())]
    on, off, counts = _compare(fetches, feeds)
    rw = optimize(off.nodes, fetches, [], list(feeds))
    for name, t in gone.items():
        assert t in rw.tensors, name
        assert t.op not in on.nodes, name
    for name, t in kept.items():
        assert t not in rw.tensors, name
    assert counts["arithmetic"] == len(gone) - 1  # a one-input AddN counts as an identity
    assert len(off.nodes) > len(on.nodes)


# -- switches -------------------------------------------------------------------------------------
def _options(level=None, cse=None, fold=None, **rewrite):
    opt = af.OptimizerOptions()
    if level is not None:
        opt.opt_level = level
    if cse is not None:
        opt.do_common_subexpression_elimination = cse
    if fold is not None:
        opt.do_constant_folding = fold
    return af.GraphOptions(optimizer_options=opt, rewrite_options=af.RewriterConfig(**rewrite))


@pytest.mark.parametrize("options, want", [
    (None, ALL_PASSES),
    (af.GraphOptions(), ALL_PASSES),
    (NONE, NO_PASSES),
    # the classic optimizer's switches alone: grappler still does CSE and folding (as TF1)
    (_options(level=L0), ALL_PASSES),
    (_options(cse=False, fold=False), ALL_PASSES),  # L1 overrides do_...=False
    # grappler off alone: the classic optimizer still does CSE and folding
    (_options(disable_meta_optimizer=True), Passes(True, True, False, False, False)),
    (_options(level=L0, disable_meta_optimizer=True, cse=True), Passes(True, False, False, False, False)),
    (_options(level=L0, disable_meta_optimizer=True, fold=True), Passes(False, True, False, False, False)),
    (_options(level=L0, constant_folding=OFF), Passes(True, False, True, True, False)),
    (_options(level=L0, arithmetic_optimization=OFF), Passes(False, True, True, False, True)),
    (_options(level=L0, common_subgraph_elimination=OFF), Passes(False, True, True, True, True)),
    (_options(level=L0, dependency_optimization=OFF), ALL_PASSES),  # the model pruner still removes them
    (_options(level=L0, dependency_optimization=OFF, disable_model_pruning=True),
     Passes(True, True, False, True, True)),
    (_options(max_folded_constant_in_bytes=0), ALL_PASSES),
])
def test_each_tf1_switch_turns_off_what_it_does_in_tf1(options, want):
    assert enabled_passes(options) == want


def _options_limit(n):
    return af.GraphOptions(optimizer_options=af.OptimizerOptions(max_folded_constant_in_bytes=n))


def test_fold_limit_and_tf_protos_are_read_by_attribute():
    assert enabled_passes(_options_limit(64)).max_constant_bytes == 64
    # a TF proto: nested messages with the same field names and enum numbers
    classic = SimpleNamespace(opt_level=-1, do_common_subexpression_elimination=False, do_constant_folding=False,
                              max_folded_constant_in_bytes=0)
    proto = SimpleNamespace(optimizer_options=classic,
                            rewrite_options=SimpleNamespace(constant_folding=2, arithmetic_optimization=0,
                                                            dependency_optimization=2, common_subgraph_elimination=0,
                                                            disable_model_pruning=True, disable_meta_optimizer=False))
    assert enabled_passes(proto) == Passes(True, False, False, True, False)


def test_every_pass_off_leaves_the_plan_as_it_was():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        y = af.identity(af.sin(x) * 1.0) + af.sin(x) + af.constant(2.0) * 3.0
    assert not optimize(_plan([y], [x], options=NONE).nodes, [y], [], [x], NONE)
    config = af.ConfigProto()
    config.graph_options.optimizer_options.opt_level = L0  # TF1's way: set fields on the default messages
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    sizes = []
    for cfg in (af.ConfigProto(), config):
        with af.Session(graph=g, config=cfg) as sess:
            _same(sess.run(y, {x: [1, 2, 3]}), np.sin(np.float32([1, 2, 3])) * 2 + np.float32(6))
            (run,) = sess._plans.values()
            sizes.append(len(run.plan.nodes))
    assert sizes == [3, 10]


@pytest.mark.parametrize("switch, pass_name", [
    (_options(level=L0, common_subgraph_elimination=OFF), "common_subexpression"),
    (_options(level=L0, constant_folding=OFF), "constant_folding"),
    (_options(dependency_optimization=OFF, disable_model_pruning=True), "identity"),
    (_options(arithmetic_optimization=OFF, constant_folding=OFF), "arithmetic"),
])
def test_each_pass_off_counts_nothing_and_the_others_still_run(switch, pass_name):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        y = af.identity(af.sin(x) * 1.0) + af.sin(x) + af.constant(2.0) * 3.0 - af.negative(-x)
    on, off, counts = _compare([y], {x: np.float32([1, 2, 3])}, switch)
    assert counts[pass_name] == 0
    assert sum(counts.values()) > 0 and len(on.nodes) < len(off.nodes)


# -- everything together, against the plain plan ----------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_programs_give_the_same_bits_with_and_without_optimisations(seed):
    rng = random.Random(seed)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 3])
        pool = [x, af.constant(np.float32([[1, -0.0, 2], [0.5, 3, -1]])), af.ones([2, 3]), af.zeros([2, 3])]
        makers = [
            lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: af.maximum(a, b),
            lambda a, b: af.identity(a), lambda a, b: af.negative(-a), lambda a, b: af.transpose(af.transpose(a)),
            lambda a, b: af.sin(a), lambda a, b: OPS["AddN"]([a, b]), lambda a, b: OPS["AddN"]([a]),
            lambda a, b: OPS["Cast"](a, DstT=af.float32), lambda a, b: a / 1.0, lambda a, b: af.tile(a, [1, 1]),
            lambda a, b: a * 1.0, lambda a, b: af.stop_gradient(b), lambda a, b: af.reshape(a, af.shape(a)),
        ]
        for _ in range(60):
            a, b = rng.choice(pool), rng.choice(pool)
            pool.append(rng.choice(makers)(a, b))
        fetches = rng.sample(pool[4:], 8)
    on, off, counts = _compare(fetches, {x: np.float32([[1, np.nan, -0.0], [2, -3, np.inf]])})
    assert len(on.nodes) < len(off.nodes) and sum(counts.values()) > 0
