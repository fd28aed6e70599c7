"""map_fn, scan, foldl, foldr: values against numpy (python loops), static shapes, TF1's names and errors.

Names, static shapes and error classes were checked against TF 2.21's compat.v1 (tfdiff); the output
names are TF1's (TF 2.21's v2 control flow names them after TensorLists instead).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import asyncflow as af

RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 3)).astype(np.float32)
Y = RNG.normal(size=(4,)).astype(np.float32)
Pair = collections.namedtuple("Pair", "a b")


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _run(fetches, feed=None):
    with af.Session() as sess:
        return sess.run(fetches, feed or {})


def _scan_np(fn, elems, init, reverse=False):
    order = range(len(elems) - 1, -1, -1) if reverse else range(len(elems))
    out, a = [None] * len(elems), init
    for i in order:
        a = fn(a, elems[i])
        out[i] = a
    return np.stack(out)


# -- map_fn ----------------------------------------------------------------------------------------------
def test_map_fn_values_shapes_and_names():
    x = af.placeholder(af.float32, [None, 3], name="x")
    y = af.map_fn(lambda r: r * 2.0 + 1.0, x)
    assert y.name == "map/TensorArrayStack/TensorArrayGatherV3:0"
    assert y.shape.as_list() == [None, 3]
    names = {op.name for op in af.get_default_graph().get_operations()}
    assert {"map/while/mul", "map/while/add", "map/while/Exit_1"} <= names
    np.testing.assert_allclose(_run(y, {x: X}), X * 2 + 1)
    assert _run(y, {x: np.zeros((0, 3), np.float32)}).shape == (0, 3)  # no elements: an empty [0, 3]


def test_map_fn_moves_values_through_tensor_arrays():
    """As TF1 (names checked against TF 2.21 with v1 control flow): elems unstacked into a TensorArray before the
    loop, element i read and result i written inside it, the results stacked after it; strings too."""
    out = af.map_fn(lambda s: af.string_join([s, "!"]), af.constant(["a", "bc"]))
    graph = af.get_default_graph()
    assert sorted(op.name for op in graph.get_operations() if op.type.startswith("TensorArray")) == [
        "map/TensorArray", "map/TensorArrayStack/TensorArrayGatherV3",
        "map/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3", "map/TensorArray_1",
        "map/while/TensorArrayReadV3", "map/while/TensorArrayWrite/TensorArrayWriteV3"]
    assert not any(op.type == "ConcatV2" for op in graph.get_operations())  # no accumulator growing per step
    assert list(_run(out)) == [b"a!", b"bc!"]


def test_map_fn_nested_elems_and_dtype():
    a, b = af.constant(X), af.constant(Y)
    out = af.map_fn(lambda p: (af.reduce_sum(p[0]) * p[1], af.cast(p[1] > 0, af.int32)), (a, b),
                    dtype=(af.float32, af.int32))
    assert [t.shape.as_list() for t in out] == [[4], [4]]
    assert [t.name for t in out] == ["map/TensorArrayStack/TensorArrayGatherV3:0",
                                     "map/TensorArrayStack_1/TensorArrayGatherV3:0"]
    s, pos = _run(out)
    np.testing.assert_allclose(s, X.sum(1) * Y, rtol=1e-6)
    np.testing.assert_array_equal(pos, (Y > 0).astype(np.int32))


def test_map_fn_dict_and_namedtuple_structures():
    elems = {"x": af.constant(X), "y": af.constant(Y)}
    out = af.map_fn(lambda d: {"x": d["x"] - d["y"], "y": d["y"] * 2.0}, elems)
    got = _run(out)
    np.testing.assert_allclose(got["x"], X - Y[:, None])
    np.testing.assert_allclose(got["y"], Y * 2)
    nt = af.map_fn(lambda p: Pair(p.b, p.a), Pair(af.constant(Y), af.constant(Y * 3)))
    got = _run(nt)
    assert isinstance(got, Pair)
    np.testing.assert_allclose(got.a, Y * 3)


def test_map_fn_output_shape_differs_from_elems_and_fn_output_signature():
    v = af.placeholder(af.int32, [None])
    out = af.map_fn(lambda k: af.fill([2, 3], af.cast(k, af.float32)), v, fn_output_signature=af.float32)
    assert out.shape.as_list() == [None, 2, 3]
    np.testing.assert_allclose(_run(out, {v: [1, 4]}), np.stack([np.full((2, 3), 1.0), np.full((2, 3), 4.0)]))


def test_map_fn_results_of_unknown_shape_must_agree():
    v = af.placeholder(af.int32, [None])
    out = af.map_fn(lambda k: af.range(k), v)
    assert out.shape.as_list() == [None, None]
    np.testing.assert_array_equal(_run(out, {v: [2, 2]}), [[0, 1], [0, 1]])
    loose = af.map_fn(lambda k: af.range(k), v, infer_shape=False)
    assert loose.shape.ndims is None  # as TF1: no shape inferred
    with af.Session() as sess:
        # TF1's TensorArray message (the results are written to a TensorArray that inferred the first one's shape)
        with pytest.raises(af.errors.InvalidArgumentError, match="incompatible with the TensorArray's inferred element "
                                                                 "shape: \\[2\\]"):
            sess.run(out, {v: [2, 3]})
        with pytest.raises(af.errors.InvalidArgumentError):
            sess.run(loose, {v: [2, 3]})


def test_map_fn_creates_variables_once_outside_the_loop():
    x = af.placeholder(af.float32, [None, 3])
    with af.variable_scope("layer"):
        y = af.map_fn(lambda r: r * af.get_variable("scale", [], initializer=af.constant_initializer(3.0)), x)
    assert [v.name for v in af.global_variables()] == ["layer/scale:0"]
    assert af.global_variables()[0].op._cf_context is None
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: X}), X * 3)


def test_map_fn_inner_cond_and_python_results():
    x = af.constant(Y)
    out = af.map_fn(lambda e: af.cond(e > 0, lambda: e, lambda: -e * 10.0), x)
    np.testing.assert_allclose(_run(out), np.where(Y > 0, Y, -Y * 10), rtol=1e-6)
    ones = af.map_fn(lambda e: 1.0, x)  # a python number becomes a tensor of the expected dtype
    np.testing.assert_allclose(_run(ones), np.ones(4))


def test_map_fn_errors():
    x = af.constant(X)
    with pytest.raises(ValueError, match="same nested structure"):
        af.map_fn(lambda r: (r, r), x)
    with pytest.raises(TypeError, match="int32 tensor for output 0"):
        af.map_fn(lambda r: af.cast(r, af.int32), x)
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        af.map_fn(lambda r: r, af.constant(1.0))
    with pytest.raises(ValueError, match="does not contain any Tensors"):
        af.map_fn(lambda r: r, [])
    with pytest.raises(TypeError, match="callable"):
        af.map_fn(3, x)
    with pytest.raises(ValueError, match="Dimensions 4 and 3 are not compatible"):
        af.map_fn(lambda p: p[0], (x, af.zeros([3, 3])))
    with pytest.raises(TypeError, match="same nested structure"):  # a list where a tuple was declared
        af.map_fn(lambda r: [r, r], x, dtype=(af.float32, af.float32))


# -- scan -------------------------------------------------------------------------------------------------
def test_scan_without_initializer_forward_and_reverse():
    x = af.placeholder(af.float32, [None, 3])
    fwd = af.scan(lambda a, e: a * 0.5 + e, x)
    rev = af.scan(lambda a, e: a * 0.5 + e, x, reverse=True)
    assert fwd.name == "scan/TensorArrayStack/TensorArrayGatherV3:0" and fwd.shape.as_list() == [None, 3]
    assert "scan/while/mul" in {op.name for op in af.get_default_graph().get_operations()}
    f, r = _run([fwd, rev], {x: X})
    step = lambda a, e: a * 0.5 + e  # noqa: E731
    np.testing.assert_allclose(f, np.stack([X[0]] + list(_scan_np(step, X[1:], X[0]))), rtol=1e-6)
    np.testing.assert_allclose(r, np.concatenate([_scan_np(step, X[:-1], X[-1], reverse=True), X[-1:]]),
                               rtol=1e-6)


def test_scan_with_nested_initializer_and_dtype_change():
    x = af.constant(X)
    init = (af.zeros([3]), af.constant(0, af.int64))
    out = af.scan(lambda a, e: (a[0] + e, a[1] + af.cast(af.reduce_sum(e) > 0, af.int64)), x, initializer=init,
                  reverse=True)
    assert [t.shape.as_list() for t in out] == [[4, 3], [4]]
    assert out[1].dtype == af.int64
    s, c = _run(out)
    np.testing.assert_allclose(s, np.cumsum(X[::-1], 0)[::-1], rtol=1e-6)
    np.testing.assert_array_equal(c, np.cumsum((X.sum(1) > 0)[::-1])[::-1])


def test_scan_nested_elems_with_scalar_initializer():
    elems = {"w": af.constant(Y), "x": af.constant(X)}
    out = af.scan(lambda a, d: a + d["w"] * af.reduce_sum(d["x"]), elems, initializer=1.0)
    np.testing.assert_allclose(_run(out), 1.0 + np.cumsum(Y * X.sum(1)), rtol=1e-5)


def test_scan_static_shape_and_infer_shape_false():
    x = af.constant(X)
    assert af.scan(lambda a, e: a + e, x, initializer=af.zeros([3])).shape.as_list() == [4, 3]
    assert af.scan(lambda a, e: a + e, x, infer_shape=False).shape.ndims is None


def test_scan_errors():
    x = af.constant(X)
    with pytest.raises(ValueError, match="same nested structure"):
        af.scan(lambda a, e: (a, a), x)
    with pytest.raises(ValueError, match="same nested structure"):
        af.scan(lambda a, e: a[0], x, initializer=(x[0], x[0]))
    with pytest.raises(TypeError, match="same nested structure"):
        af.scan(lambda a, e: (a[0] + e, a[1]), x, initializer=[x[0], x[0]])
    with pytest.raises(ValueError, match="Dimensions 4 and 3 are not compatible"):
        af.scan(lambda a, p: a, (x, af.zeros([3, 3])), initializer=0.0)
    with pytest.raises(TypeError, match="callable"):
        af.scan(None, x)
    empty = af.scan(lambda a, e: a + e, af.zeros([0, 3]))  # the first element is read at run time
    with pytest.raises(af.errors.InvalidArgumentError):
        _run(empty)
    assert _run(af.scan(lambda a, e: a + e, af.zeros([0, 3]), initializer=af.zeros([3]))).shape == (0, 3)


# -- foldl / foldr ------------------------------------------------------------------------------------------
def test_foldl_and_foldr_values_and_names():
    x = af.placeholder(af.float32, [None])
    left = af.foldl(lambda a, e: a * 2.0 - e, x)
    right = af.foldr(lambda a, e: a * 2.0 - e, x)
    left_init = af.foldl(lambda a, e: a * 2.0 - e, x, initializer=1.0)
    right_init = af.foldr(lambda a, e: a * 2.0 - e, x, initializer=1.0)
    assert left.name == "foldl/while/Exit_2:0" and right.name == "foldr/while/Exit_2:0"
    assert left.shape.as_list() == []
    got = _run([left, right, left_init, right_init], {x: Y})
    ref = []
    for seq, a in ((Y[1:], Y[0]), (Y[:-1][::-1], Y[-1]), (Y, 1.0), (Y[::-1], 1.0)):
        for e in seq:
            a = a * 2.0 - e
        ref.append(a)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_fold_nested_structures_and_dtype_change():
    elems = (af.constant(X), af.constant(Y))
    init = {"sum": af.zeros([3]), "count": af.constant(0)}
    out = af.foldl(lambda a, p: {"sum": a["sum"] + p[0] * p[1], "count": a["count"] + 1}, elems, initializer=init)
    got = _run(out)
    np.testing.assert_allclose(got["sum"], (X * Y[:, None]).sum(0), rtol=1e-5)
    assert got["count"] == 4
    pairs = af.foldr(lambda a, p: (a[0] + p[0], a[1] * p[1]), elems)  # no initializer: the last pair starts
    s, prod = _run(pairs)
    np.testing.assert_allclose(s, X.sum(0), rtol=1e-5)
    np.testing.assert_allclose(prod, np.prod(Y), rtol=1e-5)


def test_fold_errors():
    x = af.constant(X)
    with pytest.raises(ValueError, match="same nested structure"):
        af.foldl(lambda a, e: (a, e), x)
    with pytest.raises(TypeError, match="callable"):
        af.foldr(1, x)
    with pytest.raises(ValueError, match="does not contain any Tensors"):
        af.foldl(lambda a, e: a, {})
    empty = af.foldl(lambda a, e: a + e, af.zeros([0, 3]))
    with pytest.raises(af.errors.InvalidArgumentError):
        _run(empty)
    np.testing.assert_allclose(_run(af.foldr(lambda a, e: a + e, af.zeros([0, 3]), initializer=af.ones([3]))),
                               np.ones(3))


def test_functions_compose_inside_a_while_loop():
    x = af.constant(X)

    def body(i, acc):
        return i + 1, acc + af.reduce_sum(af.map_fn(lambda r: r * af.cast(i, af.float32), x))

    _, total = af.while_loop(lambda i, acc: i < 3, body, [af.constant(0), af.constant(0.0)])
    np.testing.assert_allclose(_run(total), X.sum() * 3, rtol=1e-5)
