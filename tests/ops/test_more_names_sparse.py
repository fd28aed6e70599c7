"""edit_distance, sparse_maximum/minimum, sparse_mask, sparse_reset_shape, sparse.expand_dims/eye, the
af.bitwise ops and py_function (EagerPyFunc), against numpy references; values, names and shift clamping
were checked against TF 2.21 with tfdiff while this was written."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case


def levenshtein(a, b):
    d = np.zeros((len(a) + 1, len(b) + 1), int)
    d[:, 0], d[0, :] = np.arange(len(a) + 1), np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1, -1]


def hyp_truth(af):
    hyp = af.SparseTensor([[0, 0, 0], [1, 0, 0], [1, 0, 1], [2, 1, 0]], ["a", "b", "c", "x"], [3, 2, 2])
    truth = af.SparseTensor([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2], [2, 1, 0]], ["a", "b", "d", "c", "y"],
                            [3, 2, 3])
    return hyp, truth


# Per position (hypothesis, truth): (0,0) has only a hypothesis -> inf normalised, its length otherwise;
# (0,1) only a truth -> 1 normalised, the truth length otherwise; missing in both -> 0 (as TF 2.21).
EDIT = np.float32([[np.inf, 1], [levenshtein("bc", "bdc") / 3, 0], [0, 1]])
EDIT_RAW = np.float32([[1, 1], [levenshtein("bc", "bdc"), 0], [0, 1]])


def sparse_pair(af):
    a = af.SparseTensor([[0, 0], [1, 2]], [1.0, -3.0], [2, 3])
    b = af.SparseTensor([[0, 0], [0, 1], [1, 1]], [0.5, 2.0, -1.0], [2, 3])
    return a, b


def fetch_sparse(sp):
    return [sp.indices, sp.values, sp.dense_shape]


X = np.int32([1, -8, 255, 7])
S = np.int32([1, 2, 33, -1])

CASES = [
    Case("edit_distance", ("EditDistance",),
         lambda af: [af.edit_distance(*hyp_truth(af)), af.edit_distance(*hyp_truth(af), normalize=False)],
         [EDIT, EDIT_RAW]),
    Case("sparse_maximum", ("SparseSparseMaximum",), lambda af: fetch_sparse(af.sparse_maximum(*sparse_pair(af))),
         [np.int64([[0, 0], [0, 1], [1, 1], [1, 2]]), np.float32([1, 2, 0, 0]), np.int64([2, 3])]),
    Case("sparse_minimum", ("SparseSparseMinimum",), lambda af: fetch_sparse(af.sparse.minimum(*sparse_pair(af))),
         [np.int64([[0, 0], [0, 1], [1, 1], [1, 2]]), np.float32([0.5, 0, -1, -3]), np.int64([2, 3])]),
    Case("sparse_mask", ("ListDiff", "GatherV2"),
         lambda af: (lambda m: [m.values, m.indices])(af.sparse_mask(
             af.IndexedSlices(af.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), af.constant([4, 7, 9]),
                              af.constant([10, 2])), [7])),
         [np.float32([[1, 2], [5, 6]]), np.int32([4, 9])]),
    Case("sparse_reset_shape", ("Max", "Maximum"),
         lambda af: [af.sparse_reset_shape(sparse_pair(af)[1]).dense_shape,
                     af.sparse_reset_shape(sparse_pair(af)[0], [4, 5]).dense_shape,
                     af.sparse_reset_shape(af.SparseTensor(af.placeholder_with_default(np.int64([[1, 1]]), [None, 2]),
                                                           [1.0], af.placeholder_with_default(np.int64([2, 2]), [2])),
                                           [3, 2]).dense_shape],
         [np.int64([2, 2]), np.int64([4, 5]), np.int64([3, 2])]),
    Case("sparse_expand_dims", ("ConcatV2", "Slice"),
         lambda af: [*fetch_sparse(af.sparse.expand_dims(sparse_pair(af)[0], 1)),
                     af.sparse.expand_dims(sparse_pair(af)[0]).indices],
         [np.int64([[0, 0, 0], [1, 0, 2]]), np.float32([1, -3]), np.int64([2, 1, 3]),
          np.int64([[0, 0, 0], [1, 2, 0]])]),
    Case("sparse_eye", ("Range", "Pack"), lambda af: fetch_sparse(af.sparse.eye(3, 4, dtype=af.int32)),
         [np.int64([[0, 0], [1, 1], [2, 2]]), np.int32([1, 1, 1]), np.int64([3, 4])]),
    Case("bitwise_logic", ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert"),
         lambda af: [af.bitwise.bitwise_and(X, 6), af.bitwise.bitwise_or(X, 6), af.bitwise.bitwise_xor(X, 6),
                     af.bitwise.invert(X), af.bitwise.invert(np.uint8([200, 3]))],
         [X & 6, X | 6, X ^ 6, ~X, np.uint8([55, 252])]),
    # Shift amounts are clamped to [0, bits - 1], as TF 2.21's kernels.
    Case("bitwise_shifts", ("LeftShift", "RightShift"),
         lambda af: [af.bitwise.left_shift(X, S), af.bitwise.right_shift(X, S),
                     af.bitwise.left_shift(np.uint8([200, 3]), np.uint8([1, 9])),
                     af.bitwise.right_shift(np.int8([-16, 16]), np.int8([2, 9]))],
         [np.int32([2, -32, -2**31, 7]), np.int32([0, -2, 0, 7]), np.uint8([144, 128]), np.int8([-4, 0])]),
    Case("py_function", ("EagerPyFunc",),
         lambda af: [af.py_function(lambda x, y: x.numpy() * 2 + y, [np.float32([1, 2]), np.float32(1)], af.float32),
                     *af.py_function(lambda s: [s.shape[0], s.numpy()[::-1]], [[b"a", b"b"]], [af.int64, af.string])],
         [np.float32([3, 5]), np.int64(2), np.array([b"b", b"a"], object)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_more_sparse_bitwise_and_script(case):
    check_case(case)


def test_names_and_static_shapes_as_tf():
    with af.Graph().as_default():
        d = af.edit_distance(*hyp_truth(af))
        assert (d.name, d.shape.as_list(), d.dtype) == ("edit_distance:0", [3, 2], af.float32)
        mx = af.sparse_maximum(*sparse_pair(af))
        assert (mx.values.op.name, mx.indices.shape.as_list()) == ("SparseSparseMaximum", [None, 2])
        eye = af.sparse.eye(3)
        assert (eye.indices.name, eye.get_shape().as_list()) == ("eye/stack:0", [3, 3])
        e = af.sparse.expand_dims(sparse_pair(af)[0], 1)
        assert (e.indices.name, e.dense_shape.name) == ("expand_dims/concat:0", "expand_dims/concat_1:0")
        sl = af.IndexedSlices(af.constant([[1.0]]), af.constant([4]), af.constant([10, 1]))
        m = af.sparse_mask(sl, [7])
        assert (m.values.name, m.indices.name) == ("sparse_mask:0", "sparse_mask/ListDiff:0")
        f = af.py_function(lambda x: x, [1.0], af.float32)
        assert (f.op.type, f.name) == ("EagerPyFunc", "EagerPyFunc:0")
        assert af.bitwise.left_shift(X, S).name == "LeftShift:0"
        assert af.sparse_reset_shape(sparse_pair(af)[0], [4, 5]).get_shape().as_list() == [4, 5]


def test_errors_as_tf():
    with af.Graph().as_default():
        a, b = sparse_pair(af)
        with pytest.raises(TypeError, match="Hypothesis must be a SparseTensor"):
            af.edit_distance(af.constant([1]), b)
        with pytest.raises(ValueError, match="Requested new_shape should have dimension sizes >= sp_input.shape"):
            af.sparse_reset_shape(a, [1, 5])
        with pytest.raises(TypeError, match="float"):
            af.bitwise.bitwise_and(np.float32([1]), np.float32([1]))
        other = af.SparseTensor([[0, 0]], [1.0], [3, 3])
        bad = af.sparse_maximum(a, other)
        shrink = af.sparse_reset_shape(
            af.SparseTensor([[1, 1]], [1.0], af.placeholder_with_default(np.int64([2, 2]), [2])), [1, 2])
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match="Operands' shapes do not match"):
                sess.run(bad.values)
            with pytest.raises(af.errors.InvalidArgumentError):
                sess.run(shrink.dense_shape)
