"""Gradients through the cond branches and while loops of an IMPORTED graph (`import_graph_def`,
`af.train.import_meta_graph`): the graph document carries each context, the importer rebuilds it, and
`af.gradients` builds the same backward graph, with the same values, as on the original graph."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import asyncflow as af

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5


def _gradients(graph: af.Graph, loss: af.Tensor, xs: list[af.Tensor]) -> tuple[list[Any], list[tuple]]:
    """af.gradients(loss, xs) in `graph`, and the ops it built (name, type, input names)."""
    with graph.as_default():
        before = set(graph.get_operations())
        grads = af.gradients(loss, xs)
        return grads, [(op.name, op.type, [t.name for t in op.inputs]) for op in graph.get_operations()
                       if op not in before]


def _run(graph: af.Graph, fetches: list[Any], feeds: list[dict[str, Any]], prefix: str,
         values: dict[str, np.ndarray] | None) -> tuple[list[list[np.ndarray]], dict[str, np.ndarray]]:
    """`fetches` run with each feed; variables initialised, then given `values` (by their original names)."""
    with graph.as_default(), af.Session() as sess:
        sess.run(af.global_variables_initializer())
        variables = {v.op.name[len(prefix):]: v for v in af.global_variables()}
        if values is not None:  # the original's values (random initializers draw anew)
            for name, v in variables.items():
                v.load(values[name], sess)
        out = [sess.run(fetches, {graph.get_tensor_by_name(prefix + k): v for k, v in feed.items()})
               for feed in feeds]
        return out, {name: sess.run(v) for name, v in variables.items()}


def _compare(build: Callable[[], tuple[af.Tensor, list[Any]]], feeds: list[dict[str, Any]],
             import_scope: str | None = None, same_ops: bool = True) -> None:
    """Gradients of `build`'s loss on the graph and on its meta graph imported into a fresh graph agree, and
    the backward graphs are the same op for op (names under `import_scope` aside)."""
    original = af.Graph()
    with original.as_default():
        loss, xs = build()
        xs = [x._ref() if hasattr(x, "_ref") else x for x in xs]
        meta = af.train.export_meta_graph()
    grads, want_ops = _gradients(original, loss, xs)
    prefix = f"{import_scope}/" if import_scope else ""
    imported = af.Graph()
    with imported.as_default():
        af.train.import_meta_graph(meta, import_scope=import_scope)
        loss2 = imported.get_tensor_by_name(prefix + loss.name)
        xs2 = [imported.get_tensor_by_name(prefix + x.name) for x in xs]
    grads2, got_ops = _gradients(imported, loss2, xs2)
    def strip(name: str) -> str:  # the import scope, at the start or under "gradients/"
        return re.sub(rf"(^|/){re.escape(prefix)}", r"\1", name) if prefix else name

    if same_ops:
        assert [(strip(n), t, [strip(i) for i in ins]) for n, t, ins in got_ops] == want_ops
    want, values = _run(original, [loss] + grads, feeds, "", None)
    got, _ = _run(imported, [loss2] + grads2, feeds, prefix, values)
    for w_step, g_step in zip(want, got):
        for w, g in zip(w_step, g_step):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def _while_with_captured_variable():
    x = af.placeholder(af.float32, [None, 3], name="x")
    w = af.Variable(af.fill([3], 2.0), name="w")
    _, acc = af.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w), [0, af.reduce_sum(x, 0)])
    return af.reduce_sum(acc, name="loss"), [w, x]


@pytest.mark.parametrize("scope", [None, "imported"])
def test_while_loop_with_a_captured_variable(scope):
    _compare(_while_with_captured_variable, [{"x:0": np.ones((2, 3), np.float32)}], scope)


def _trained_while():
    loss, xs = _while_with_captured_variable()
    af.train.GradientDescentOptimizer(0.1).minimize(loss)  # the loop already has a counter and stacks
    return loss, xs


@pytest.mark.parametrize("scope", [None, "again"])
def test_a_loop_differentiated_before_export_keeps_its_counter(scope):
    # Not op for op: as in TF, an import marks no name scope used, so the original's second gradients call
    # is "gradients_1" and the imported graph's first is "gradients" (clashing names get "_1").
    _compare(_trained_while, [{"x:0": X}], scope, same_ops=False)
    with af.Graph().as_default() as g:
        _trained_while()
        doc = g.as_graph_def()
    with af.Graph().as_default() as g:
        af.import_graph_def(doc, name="")
        af.gradients(g.get_tensor_by_name("loss:0"), g.get_tensor_by_name("w:0"))
        assert [op.name for op in g.get_operations() if "f_count" in op.name and op.type == "Exit"] == \
            ["while/f_count_exit"]


def test_the_repro_gives_tfs_values(tmp_path):
    path = str(tmp_path / "model.meta")
    with af.Graph().as_default():
        _while_with_captured_variable()
        af.train.export_meta_graph(filename=path)
    with af.Graph().as_default() as g:
        af.train.import_meta_graph(path)
        grads = af.gradients(g.get_tensor_by_name("loss:0"), af.trainable_variables())
        with af.Session() as sess:
            sess.run(af.global_variables_initializer())
            (got,) = sess.run(grads, {"x:0": np.ones((2, 3))})
    np.testing.assert_array_equal(got, [24, 24, 24])  # TF 2.21 (tf.compat.v1) gives [24, 24, 24]


def _cond():
    x = af.placeholder(af.float32, [None, 3], name="x")
    flag = af.placeholder(af.bool, [], name="flag")
    w = af.Variable([1.0, -2.0, 0.5], name="w")
    y = af.cond(flag, lambda: af.tanh(x * w), lambda: x * w * w + x)
    return af.reduce_sum(af.square(y), name="loss"), [w, x]


@pytest.mark.parametrize("scope", [None, "s"])
def test_cond(scope):
    _compare(_cond, [{"x:0": X, "flag:0": True}, {"x:0": X, "flag:0": False}], scope)


def test_cond_in_a_loop_runs_forward_and_differentiates_as_the_original():
    def build():
        x = af.placeholder(af.float32, [3], name="x")
        _, y = af.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, af.cond(i < 2, lambda: a * 2.0,
                                                                                 lambda: a - 1.0)), [0, x])
        return af.identity(y, name="y"), [x]

    feed = [1.0, 2.0, 3.0]
    with af.Graph().as_default() as g1:
        y, (x,) = build()
        doc = g1.as_graph_def()
        (g,) = af.gradients(y * y, x)  # 2 * y * dy/dx, dy/dx = 4
        with af.Session() as sess:
            want, want_grad = sess.run([y, g], {x: feed})
    np.testing.assert_allclose(want_grad, 8.0 * want)
    with af.Graph().as_default() as g2:
        af.import_graph_def(doc, name="")
        y2 = g2.get_tensor_by_name("y:0")
        (g,) = af.gradients(y2 * y2, g2.get_tensor_by_name("x:0"))
        with af.Session() as sess:
            got, got_grad = sess.run(["y:0", g], {"x:0": feed})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_grad, want_grad)


def _dynamic_rnn():
    x = af.placeholder(af.float32, [2, 4, 3], name="x")
    lengths = af.constant([4, 2], name="lengths")
    cell = af.nn.rnn_cell.GRUCell(5)
    out, state = af.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=af.float32)
    return af.add(af.reduce_sum(af.square(out)), af.reduce_sum(state), name="loss"), af.trainable_variables() + [x]


def test_dynamic_rnn():
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 4, 3)
    _compare(_dynamic_rnn, [{"x:0": x}])
    _compare(_dynamic_rnn, [{"x:0": x}], "rnn_import")


def _map_fn():
    x = af.placeholder(af.float32, [None, 3], name="x")
    w = af.Variable([[0.5, -1.0], [2.0, 0.0], [1.0, 1.5]], name="w")
    y = af.map_fn(lambda row: af.sigmoid(af.tensordot(row, w, 1)), x)
    return af.reduce_sum(y * y, name="loss"), [w, x]


def test_map_fn():
    _compare(_map_fn, [{"x:0": X}])


def _tensor_array_loop():
    x = af.placeholder(af.float32, [3], name="x")
    w = af.Variable([1.5, -0.5, 2.0], name="w")
    ta = af.TensorArray(af.float32, size=4)

    def body(i, h, ta):
        h = af.tanh(h * w + af.cast(i, af.float32))
        return i + 1, h, ta.write(i, h)

    _, _, ta = af.while_loop(lambda i, h, ta: i < 4, body, [0, x, ta])
    return af.reduce_sum(ta.stack() * af.constant([[1.0], [2.0], [3.0], [4.0]]), name="loss"), [w, x]


@pytest.mark.parametrize("scope", [None, "ta"])
def test_tensor_array_loop(scope):
    _compare(_tensor_array_loop, [{"x:0": np.array([0.1, -0.2, 0.3], np.float32)}], scope)


def _dropout():
    x = af.placeholder(af.float32, [None, 3], name="x")
    training = af.placeholder_with_default(False, [], name="training")
    h = af.layers.dense(x, 4, activation=af.nn.relu, name="hidden",
                        kernel_initializer=af.constant_initializer(np.linspace(-1, 1, 12).reshape(3, 4)))
    h = af.layers.dropout(h, rate=0.5, training=training, seed=7)
    return af.reduce_sum(af.layers.dense(h, 2, name="out", use_bias=False,
                                         kernel_initializer=af.ones_initializer()), name="loss"), \
        af.trainable_variables()


@pytest.mark.parametrize("scope", [None, "ft"])
def test_dropout_with_a_tensor_training_flag(scope):
    _compare(_dropout, [{"x:0": X}, {"x:0": X, "training:0": True}], scope)


def test_input_map_replaces_a_loops_outside_tensor():
    with af.Graph().as_default() as g1:
        _while_with_captured_variable()
        doc = g1.as_graph_def()
    with af.Graph().as_default() as g2:
        z = af.placeholder(af.float32, [3], name="z")
        (loss,) = af.import_graph_def(doc, input_map={"Sum:0": z}, return_elements=["loss:0"], name="m")
        (grad,) = af.gradients(loss, z)
        with af.Session() as sess:
            sess.run(g2.get_operation_by_name("m/w/Assign"))
            np.testing.assert_array_equal(sess.run(grad, {z: [1.0, 2.0, 3.0]}), [8.0, 8.0, 8.0])
