"""Print, print, Assert, check_numerics, the assert_* family and py_func, against TF1's documented
behaviour; the printed texts and failure messages were pinned with TF 2.21's compat.v1 runtime
(`Print(x, [x, m, s, 7, True], message="msg: ")` printed `msg: [0 1 2...][[1.5 2][3...]...][ab cd][7][1]`)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops.logging_ops import format_v2, summarize
from tests.ops.harness import Case, case_params, check_case

M = np.array([[1.5, 2.0], [3.0, 4.0]], np.float32)


def _after(op, value):
    """`value` once `op` ran: how a graph uses an op that has no outputs."""
    with af.control_dependencies([op]):
        return af.identity(value)


CASES = [
    Case("print_passes_input_through", ("Print",), lambda af: af.Print(af.constant(M), [af.constant(3)]), M),
    Case("string_format_numpy_layout", ("StringFormat",),
         lambda af: af.stack([af.ops.logging_ops.string_format([af.constant(M), af.constant(np.arange(10))],
                                                               template="{} and {}", placeholder="{}", summarize=2)]),
         np.array([b"[[1.5 2]\n [3 4]] and [0 1 ... 8 9]"], dtype=object)),
    Case("print_v2_runs", ("PrintV2",), lambda af: _after(af.print("x", output_stream=sys.stdout), 1.0),
         np.float32(1.0)),
    Case("assert_true_passes", ("Assert",), lambda af: _after(af.Assert(af.constant(True), ["never shown"]), 2),
         np.int32(2)),
    Case("check_numerics_finite_passes", ("CheckNumerics",),
         lambda af: af.check_numerics(af.constant([1.0, -2.0]), "fine"), np.array([1.0, -2.0], np.float32)),
    Case("py_func_doubles", ("PyFunc",),
         lambda af: af.py_func(lambda a: a * 2, [af.constant([1.0, 2.0])], af.float32),
         np.array([2.0, 4.0], np.float32)),
    Case("py_func_stateless_two_outputs", ("PyFuncStateless",),
         lambda af: af.py_func(lambda a: (a.sum(), np.array([b"x"])), [af.constant([1, 2], af.int64)],
                               [af.int64, af.string], stateful=False),
         [np.int64(3), np.array([b"x"], dtype=object)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_logging_op(case):
    check_case(case)


@pytest.mark.parametrize("value, n, text", [
    (np.arange(10), 3, "0 1 2..."),
    (M, 3, "[1.5 2][3...]..."),
    (M, -1, "[1.5 2][3 4]"),
    (np.array([b"ab", b"cd"], dtype=object), 3, "ab cd"),
    (np.int32(7), 3, "7"),
    (np.bool_(True), 3, "1"),
    (np.zeros((0, 2)), 3, ""),
    (np.arange(8).reshape(2, 2, 2), 5, "[[0 1][2 3]][[4...]]..."),  # as TF 2.21 printed it
])
def test_summarize_is_tf1s_summarize_value(value, n, text):
    assert summarize(value, n) == text


def test_format_v2_cuts_each_dimension():
    assert format_v2(np.arange(10), 3) == "[0 1 2 ... 7 8 9]"
    assert format_v2(np.arange(5), 3) == "[0 1 2 3 4]"
    assert format_v2(np.arange(12).reshape(6, 2), 1) == "[[0 1]\n ...\n [10 11]]"


def test_print_writes_tf1s_line_to_stderr_and_honours_first_n(capfd):
    x = af.constant(np.arange(10))
    p = af.Print(x, [x, af.constant(M), af.constant(["ab", "cd"]), af.constant(7), af.constant(True)],
                 message="msg: ", first_n=2)
    assert p.name == "Print:0" and p.shape.as_list() == [10]
    with af.Session() as sess:
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(p), np.arange(10))
    err = capfd.readouterr().err
    assert err.count("msg: [0 1 2...][[1.5 2][3...]...][ab cd][7][1]\n") == 2


def test_print_v2_to_stdout_with_structures(capfd):
    m = af.constant(M)
    op = af.print("values:", af.constant(np.arange(10)), {"a": m}, [1, m], summarize=2, output_stream=sys.stdout,
                  end="!\n")
    assert isinstance(op, af.Operation) and op.type == "PrintV2" and op.name == "PrintV2"
    with af.Session() as sess:
        sess.run(op)
    out = capfd.readouterr().out
    assert out == "values: [0 1 ... 8 9] {'a': [[1.5 2]\n [3 4]]} [1, [[1.5 2]\n [3 4]]]!\n"
    with pytest.raises(ValueError, match="output_stream"):
        af.print("x", output_stream="log(info)")


def test_assert_fails_the_step_showing_its_data():
    flag = af.placeholder(af.bool, [])
    a = af.Assert(flag, ["hello", af.constant(np.arange(10)), af.constant(M), af.constant(2.5)])
    assert a.name == "Assert/Assert" and a.type == "Assert"
    with af.Session() as sess:
        sess.run(a, {flag: True})
        with pytest.raises(af.errors.InvalidArgumentError) as info:
            sess.run(a, {flag: False})
    assert "assertion failed: [hello] [0 1 2...] [[1.5 2][3...]...] [2.5]" in str(info.value)
    assert info.value.op.name == "Assert/Assert"
    with pytest.raises(TypeError, match="bool"):
        af.Assert(af.constant(1), ["x"])


def test_check_numerics_names_what_it_found():
    x = af.placeholder(af.float32, [None])
    checked = af.check_numerics(x, "my tensor")
    with af.Session() as sess:
        for value, what in [([np.nan, 1.0], "NaN"), ([np.inf], "Inf"), ([np.nan, -np.inf], "Inf and NaN")]:
            with pytest.raises(af.errors.InvalidArgumentError, match=f"my tensor : Tensor had {what} values"):
                sess.run(checked, {x: value})
    with pytest.raises(TypeError, match="floating"):
        af.check_numerics(af.constant([1, 2]), "ints")


def test_check_numerics_checks_the_gradient_too():
    x = af.placeholder(af.float32, [2])
    y = af.sqrt(af.check_numerics(x, "x"))
    (g,) = af.gradients(af.reduce_sum(y), [x])
    with af.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [4.0, 1.0]}), [0.25, 0.5])
        with pytest.raises(af.errors.InvalidArgumentError, match="detected in gradient. x : Tensor had Inf"):
            sess.run(g, {x: [0.0, 1.0]})  # x is finite, sqrt's gradient at 0 is not


def test_verify_tensor_all_finite_and_add_check_numerics_ops():
    af.reset_default_graph()
    x = af.placeholder(af.float32, [2])
    v = af.verify_tensor_all_finite(x * 2.0, "doubled")
    assert v.name == "VerifyFinite/control_dependency:0"
    y = af.log(x)
    check_all = af.add_check_numerics_ops()
    with af.Session() as sess:
        np.testing.assert_allclose(sess.run(v, {x: [1.0, 2.0]}), [2.0, 4.0])
        sess.run(check_all, {x: [1.0, 2.0]})
        with pytest.raises(af.errors.InvalidArgumentError, match=f"{y.op.name}:0 : Tensor had Inf values"):
            sess.run([y, check_all], {x: [0.0, 2.0]})
    g = af.Graph()
    with g.as_default():
        af.cond(af.constant(True), lambda: af.constant(1.0), lambda: af.constant(2.0))
        with pytest.raises(ValueError, match="not compatible with TensorFlow control flow"):
            af.add_check_numerics_ops()


@pytest.mark.parametrize("build, ok_feed, bad_feed, text", [
    (lambda x: af.assert_equal(x, [1, 2, 4]), [1, 2, 4], [1, 2, 3],
     "[Condition x == y did not hold element-wise:] [x (x:0) = ] [1 2 3] [y (assert_equal/y:0) = ] [1 2 4]"),
    (lambda x: af.assert_none_equal(x, [0, 0, 0]), [1, 2, 3], [1, 0, 3], "did not hold for every single element"),
    (lambda x: af.assert_less(x, 3), [0, 1, 2], [0, 1, 3], "Condition x < y did not hold"),
    (lambda x: af.assert_less_equal(x, 3), [1, 2, 3], [1, 2, 4], "Condition x <= y did not hold"),
    (lambda x: af.assert_greater(x, 0), [1, 2, 3], [0, 2, 3], "Condition x > y did not hold"),
    (lambda x: af.assert_greater_equal(x, 1), [1, 2, 3], [0, 2, 3], "Condition x >= y did not hold"),
    (lambda x: af.assert_positive(x), [1, 2, 3], [0, 2, 3], "Condition x > 0 did not hold"),
    (lambda x: af.assert_negative(-x), [1, 2, 3], [1, 0, 3], "Condition x < 0 did not hold"),
    (lambda x: af.assert_non_negative(x), [0, 2, 3], [-1, 2, 3], "Condition x >= 0 did not hold"),
    (lambda x: af.assert_non_positive(-x), [0, 2, 3], [-1, 2, 3], "Condition x <= 0 did not hold"),
    (lambda x: af.assert_equal(x, 5, message="five please"), [5, 5, 5], [5, 4, 5], "[five please]"),
])
def test_comparison_asserts_at_run_time(build, ok_feed, bad_feed, text):
    x = af.placeholder(af.int32, [3], name="x")
    check = build(x)
    with af.Session() as sess:
        sess.run(check, {x: ok_feed})
        with pytest.raises(af.errors.InvalidArgumentError) as info:
            sess.run(check, {x: bad_feed})
    assert text in str(info.value)


def test_asserts_on_constants_are_decided_while_building():
    with pytest.raises(af.errors.InvalidArgumentError, match="Condition x == y did not hold"):
        af.assert_equal(af.constant([1, 2]), af.constant([1, 3]))
    with pytest.raises(af.errors.InvalidArgumentError, match="Condition x > 0"):
        af.assert_positive(af.constant([1.0, -1.0]))
    assert af.assert_equal(af.constant(1), 1).type == "Assert"  # true: still an op to run


def test_assert_near_uses_the_dtypes_epsilon_by_default():
    x = af.placeholder(af.float32, [2])
    loose = af.assert_near(x, [1.0, 2.0], rtol=0.1)
    tight = af.assert_near(x, [1.0, 2.0])
    with af.Session() as sess:
        sess.run(loose, {x: [1.05, 2.1]})
        sess.run(tight, {x: [1.0, 2.0]})
        with pytest.raises(af.errors.InvalidArgumentError, match="not equal to tolerance"):
            sess.run(tight, {x: [1.0001, 2.0]})


def test_rank_and_type_checks():
    m = af.ones([2, 3])
    assert af.assert_rank(m, 2).name == "assert_rank/static_checks_determined_all_ok"
    with pytest.raises(ValueError, match="must have rank 3.  Received rank 2"):
        af.assert_rank(m, 3)
    with pytest.raises(ValueError, match="must have rank at least 3"):
        af.assert_rank_at_least(m, 3)
    af.assert_rank_at_least(m, 1)
    af.assert_rank_in(m, [1, 2])
    with pytest.raises(ValueError, match=r"rank in \(0, 1\)"):
        af.assert_rank_in(m, [0, 1])
    u = af.placeholder(af.float32)
    dynamic = af.assert_rank(u, 2)
    with af.Session() as sess:
        sess.run(dynamic, {u: np.ones((2, 2))})
        with pytest.raises(af.errors.InvalidArgumentError, match="must have rank 2"):
            sess.run(dynamic, {u: np.ones(3)})
    with pytest.raises(TypeError, match="must be of type int32"):
        af.assert_type(m, af.int32)
    assert af.assert_type(m, af.float32).type == "NoOp"
    with pytest.raises(TypeError, match="integer"):
        af.assert_integer(m)
    with pytest.raises(ValueError, match="Expected scalar"):
        af.assert_scalar(m)
    s = af.constant(1.0)
    assert af.assert_scalar(s) is s
    assert af.is_numeric_tensor(m) and not af.is_numeric_tensor(af.constant("a"))
    with pytest.raises(TypeError, match="proper"):
        af.assert_proper_iterable(np.ones(3))
    af.assert_proper_iterable([1, 2])
    assert af.assert_same_float_dtype([m, af.ones([1])]) == af.float32
    with pytest.raises(ValueError, match="expected type float32"):
        af.assert_same_float_dtype([m, af.ones([1], af.float64)])


def test_py_func_errors_map_to_tf_classes_and_have_no_gradient():
    x = af.placeholder(af.float32, [2])

    def stop(a):
        raise StopIteration

    cases = [(lambda a: 1 / 0, af.errors.UnknownError), (lambda a: int("x"), af.errors.InvalidArgumentError),
             (stop, af.errors.OutOfRangeError), (lambda a: [a, a], af.errors.InvalidArgumentError)]
    fetches = [af.py_func(f, [x], af.float32) for f, _ in cases]
    with af.Session() as sess:
        for t, (_, cls) in zip(fetches, cases):
            with pytest.raises(cls, match="PyFunc"):
                sess.run(t, {x: [1.0, 2.0]})
    assert af.gradients(af.reduce_sum(fetches[0]), x) == [None]
    assert isinstance(af.py_func(lambda a: None, [x], []), af.Operation)
    with pytest.raises(TypeError, match="callable"):
        af.py_func(3, [x], af.float32)


def test_an_imported_py_func_never_resolves_a_callable():
    g = af.Graph()
    with g.as_default():
        af.py_func(lambda a: a + 1, [af.constant([1.0])], af.float32, name="plus_one")
    doc = g.as_graph_def()
    fresh = af.Graph()
    with fresh.as_default():
        af.import_graph_def(doc, name="")
        with af.Session() as sess, pytest.raises(af.errors.FailedPreconditionError, match="no Python function"):
            sess.run("plus_one:0")
