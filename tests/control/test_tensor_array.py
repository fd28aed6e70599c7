"""af.TensorArray: values against numpy inside and outside while_loop (dynamic_size growth included), TF1's
names, static shapes and errors.

Names, static shapes, values and error messages were checked against TF 2.21's compat.v1 with v1 control
flow (`disable_control_flow_v2`), whose TensorArray is the TensorArrayV3 family.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af

T, B, D = 4, 2, 3
X = (np.arange(T * B * D, dtype=np.float32).reshape(T, B, D) / 10).astype(np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _run(fetches, feed=None):
    with af.Session() as sess:
        return sess.run(fetches, feed or {})


def _rnn_np(xs):
    h, out = np.zeros((B, D), np.float32), []
    for x in xs:
        h = np.tanh(h + x)
        out.append(h)
    return np.stack(out), h


def _rnn(x, parallel_iterations=10):
    n = af.shape(x)[0]
    inp = af.TensorArray(af.float32, n).unstack(x)
    out = af.TensorArray(af.float32, n)

    def body(t, h, o):
        h = af.tanh(h + inp.read(t))
        return t + 1, h, o.write(t, h)

    _, h, o = af.while_loop(lambda t, h, o: t < n, body, [0, af.zeros([B, D]), out],
                            parallel_iterations=parallel_iterations)
    return inp, o, h


# -- inside while_loop ---------------------------------------------------------------------------------------
def test_loop_reads_an_unstacked_input_and_writes_an_output():
    x = af.placeholder(af.float32, [None, B, D])
    inp, o, h = _rnn(x)
    y = o.stack()
    assert isinstance(o, af.TensorArray) and o.dtype == af.float32
    assert [inp.handle.name, inp.flow.name, o.flow.name, y.name] == [
        "TensorArray:0", "TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3:0", "while/Exit_2:0",
        "TensorArrayStack/TensorArrayGatherV3:0"]
    assert y.shape.as_list() == [None, B, D]
    names = {op.name for op in af.get_default_graph().get_operations()}
    assert {"while/TensorArrayReadV3", "while/TensorArrayWrite/TensorArrayWriteV3"} <= names
    with af.Session() as sess:
        for xs in (X, X[:2], X[:0]):  # every step makes its own arrays: sizes differ, nothing is written twice
            got_y, got_h = sess.run([y, h], {x: xs})
            if len(xs):
                want_y, want_h = _rnn_np(xs)
                np.testing.assert_allclose(got_y, want_y, rtol=1e-6)
                np.testing.assert_allclose(got_h, want_h, rtol=1e-6)
            else:
                assert got_y.shape == (0, B, D)  # the element shape was inferred from the writes


@pytest.mark.parametrize("parallel_iterations", [1, 3, 10])
def test_loop_values_do_not_depend_on_parallel_iterations(parallel_iterations):
    _, o, _ = _rnn(af.constant(X), parallel_iterations)
    np.testing.assert_allclose(_run(o.stack()), _rnn_np(X)[0], rtol=1e-6)


def test_dynamic_size_grows_inside_a_loop():
    d = af.TensorArray(af.float32, 0, dynamic_size=True)
    assert d.dynamic_size

    def body(t, d):
        return t + 1, d.write(t, af.cast(t, af.float32) * af.ones([2]))

    _, d = af.while_loop(lambda t, d: t < 5, body, [0, d])
    stacked = d.stack()
    assert stacked.shape.as_list() == [None, 2]
    got, size = _run([stacked, d.size()])
    np.testing.assert_array_equal(got, np.repeat(np.arange(5, dtype=np.float32)[:, None], 2, axis=1))
    assert size == 5


def test_a_tensor_array_alone_nested_or_with_maximum_iterations():
    ta = af.TensorArray(af.int32, 3)
    only = af.while_loop(lambda a: a.size() > 0, lambda a: a, ta, maximum_iterations=0)
    assert isinstance(only, af.TensorArray)

    def body(i, state):
        ta, total = state
        return i + 1, (ta.write(i, i * i), total + i)

    _, (ta2, total) = af.while_loop(lambda i, s: True, body, (0, (ta, 0)), maximum_iterations=3)
    got = _run([ta2.stack(), total])
    np.testing.assert_array_equal(got[0], [0, 1, 4])
    assert got[1] == 3


def test_body_must_return_a_tensor_array_for_a_tensor_array_variable():
    ta = af.TensorArray(af.float32, 2)
    with pytest.raises(TypeError, match="TensorArray loop variable"):
        af.while_loop(lambda t, a: t < 2, lambda t, a: (t + 1, a.flow), [0, ta])


# -- static shapes ---------------------------------------------------------------------------------------------
def test_static_shapes_follow_the_element_shape():
    c = af.TensorArray(af.float32, 3, element_shape=[2, 5])
    assert [c.read(0).shape.as_list(), c.gather([0, 1]).shape.as_list(), c.concat().shape.as_list(),
            c.stack().shape.as_list()] == [[2, 5], [2, 2, 5], [6, 5], [3, 2, 5]]
    e = af.TensorArray(af.float32, 3).write(0, af.placeholder(af.float32, [None, 4]))
    assert e.element_shape.as_list() == [None, 4]
    assert e.stack().shape.as_list() == [3, None, 4] and e.concat().shape.as_list() == [None, 4]
    f = af.TensorArray(af.float32, 3, infer_shape=False).write(0, af.zeros([2, 4]))
    assert f.element_shape.ndims is None and f.stack().shape.ndims is None
    m = af.TensorArray(af.float32, 2, dynamic_size=True).write(0, [1.0])
    assert m.stack().shape.as_list() == [None, 1] and m.concat().shape.as_list() == [None]


def test_every_tensor_array_on_a_handle_shares_the_inferred_shape():
    ta = af.TensorArray(af.float32, 2)
    ta2 = ta.write(0, af.zeros([3]))
    assert ta.element_shape.as_list() == [3]  # TF1 shares it (one list for the handle)
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(2,\) but expected \(3,\)"):
        ta2.write(1, [1.0, 2.0])


# -- errors at graph construction ------------------------------------------------------------------------------
def test_construction_errors():
    h = af.TensorArray(af.float32, 2)
    with pytest.raises(ValueError, match="`size` must be provided"):
        af.TensorArray(af.float32)
    with pytest.raises(ValueError, match="both `handle` and `tensor_array_name`"):
        af.TensorArray(af.float32, handle=h.handle, flow=h.flow, tensor_array_name="a")
    with pytest.raises(ValueError, match="both a `handle` and `size`"):
        af.TensorArray(af.float32, 2, handle=h.handle, flow=h.flow)
    with pytest.raises(ValueError, match="flow must not be None"):
        af.TensorArray(af.float32, handle=h.handle)
    with pytest.raises(TypeError, match="Expected `handle` to be a Tensor"):
        af.TensorArray(af.float32, handle="h", flow=h.flow)


def test_string_elements_unstacked_split_and_written():
    ta = af.TensorArray(af.string, 2, clear_after_read=False).unstack(af.constant(["a", "bc"]))
    read, stacked = _run([ta.read(1), ta.stack()])
    assert read == b"bc" and list(stacked) == [b"a", b"bc"]
    pieces = af.TensorArray(af.string, 2, infer_shape=False).split(af.constant(["x", "y", "z"]), [1, 2])
    assert list(_run(pieces.concat())) == [b"x", b"y", b"z"]


def test_a_value_of_another_dtype_is_a_type_error():
    ta = af.TensorArray(af.float32, 2)
    with pytest.raises(TypeError, match="value has dtype int32, but the TensorArray holds float32"):
        ta.write(0, af.constant(1, af.int32))
    with pytest.raises(TypeError, match="scatter"):
        ta.scatter([0], af.constant([1], af.int32))
    assert ta.write(0, 1).flow.dtype == af.float32  # a Python number takes the array's dtype


# -- errors at run time (TF1's messages) --------------------------------------------------------------------------
def _fails(fetch, match, cls=af.errors.InvalidArgumentError, feed=None):
    with pytest.raises(cls, match=match):
        _run(fetch, feed)


def _after(dep, fn):
    with af.control_dependencies([dep]):
        return fn()


def test_reading_an_unwritten_slot():
    _fails(af.TensorArray(af.float32, 3).read(0),
           r"TensorArray TensorArray: Could not read from TensorArray index 0.  Furthermore, the element shape is not "
           r"fully defined: <unknown>")
    np.testing.assert_array_equal(_run(af.TensorArray(af.float32, 3, element_shape=[2]).read(1)), [0, 0])


def test_writing_a_slot_twice_or_after_a_read_and_reading_twice():
    ta = af.TensorArray(af.float32, 3).write(0, 1.0)
    _fails(ta.write(0, 2.0).flow, "Could not write to TensorArray index 0 because it has already been written to.")
    kept = af.TensorArray(af.float32, 3, clear_after_read=False).write(0, 1.0)
    _fails(kept.write(0, 2.0).flow, "already been written to")
    first = ta.read(0)
    _fails(_after(first, lambda: ta.read(0)), r"Could not read index 0 twice because it was cleared after a previous "
                                              r"read \(perhaps try setting clear_after_read = false\?\)")
    _fails(_after(first, lambda: ta.write(0, 3.0).flow),
           "Could not write to TensorArray index 0 because it has already been read.")
    a, b = _run([kept.read(0), _after(kept.read(0), lambda: kept.read(0))])
    assert a == b == 1.0


def test_index_out_of_range_and_sizes():
    ta = af.TensorArray(af.float32, 3)
    _fails(ta.write(5, 1.0).flow, "Tried to write to index 5 but array is not resizeable and size is: 3")
    _fails(ta.write(-1, 1.0).flow, "Tried to write to index -1 but array is not resizeable")
    _fails(ta.write(0, 1.0).read(4), "Tried to read from index 4 but array size is: 3")
    _fails(af.TensorArray(af.float32, 3).unstack(af.zeros([4, 2])).flow,
           r"Max scatter index must be < array size \(3 vs. 3\)")
    _fails(af.TensorArray(af.float32, -1).flow, "Size should be >= 0.")


def test_shape_errors_at_run_time():
    p = af.placeholder(af.float32, [None])
    ta = af.TensorArray(af.float32, 2).write(0, [1.0]).write(1, p)
    _fails(ta.flow, r"Could not write to TensorArray index 1 because the value shape is \[2\] which is incompatible "
                    r"with the TensorArray's inferred element shape: \[1\] \(consider setting infer_shape=False\).",
           feed={p: [1.0, 2.0]})
    loose = af.TensorArray(af.float32, 2, infer_shape=False).write(0, [1.0]).write(1, p)
    _fails(loose.stack(), r"TensorArray has inconsistent shapes.  Index 0 has shape: \[1\] but index 1 has shape: "
                          r"\[2\]", feed={p: [1.0, 2.0]})
    _fails(af.TensorArray(af.float32, 3).split(af.zeros([4, 2]), [1, 2]).flow,
           r"Expected sum of lengths to be equal to values.shape\[0\], but sum of lengths is 3 and value's shape is: "
           r"\[4,2\]")
    _fails(af.TensorArray(af.float32, 0, dynamic_size=True).stack(),
           "TensorArray has size zero, but element shape <unknown> is not fully defined", af.errors.UnimplementedError)
    _fails(af.TensorArray(af.float32, 0, dynamic_size=True).concat(),
           "TensorArray has size zero, but element_shape_except0 <unknown> is not fully defined",
           af.errors.UnimplementedError)


def test_a_closed_array_refuses_further_use():
    ta = af.TensorArray(af.float32, 2).write(0, 1.0)
    _fails(_after(ta.close(), lambda: ta.read(0)), "TensorArray TensorArray has already been closed.")


def test_the_array_takes_no_device_scope_unless_asked():
    with af.device("/job:worker/task:1"):
        ta = af.TensorArray(af.float32, 2)
        kept = af.TensorArray(af.float32, 2, colocate_with_first_write_call=False)
        write = ta.write(0, 1.0)
    assert ta.handle.op.device == "" and kept.handle.op.device == write.flow.op.device != ""
