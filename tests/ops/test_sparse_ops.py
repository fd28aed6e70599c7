"""Sparse ops against numpy references (each SparseTensor result fetched as its three tensors).

Orders and edge cases that a reference could get wrong were checked against TF 2.21's compat.v1
while this was written: SparseConcat sorts its output into row-major order along any axis,
SparseReduceMax leaves an output no entry falls in at 0, SparseAdd thresholds only the entries
present in both operands, SparseFillEmptyRows keeps each row's entries in input order.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

IDX = np.array([[0, 1], [0, 3], [1, 0], [2, 2]], np.int64)
VAL = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
SHAPE = np.array([3, 4], np.int64)
RNG = np.random.RandomState(3)
B = RNG.randn(4, 2).astype(np.float32)
C64 = (RNG.randn(4) + 1j * RNG.randn(4)).astype(np.complex64)
BC = (RNG.randn(3, 2) + 1j * RNG.randn(3, 2)).astype(np.complex64)
DATA = RNG.randn(4, 3).astype(np.float32)


def dense(idx, val, shape, default=0):
    out = np.full(tuple(shape), default, np.asarray(val).dtype)
    for i, v in zip(np.asarray(idx).reshape(len(val), -1), val):
        out[tuple(i)] = v
    return out


def sp(af_, idx=IDX, val=VAL, shape=SHAPE):
    return af_.SparseTensor(idx, val, shape)


def parts(s):
    return (s.indices, s.values, s.dense_shape)


D = dense(IDX, VAL, SHAPE)
IDX3 = np.array([[0, 0, 1], [0, 0, 3], [1, 2, 0], [1, 2, 1]], np.int64)
VAL3 = np.array([1.0, 2.0, 3.0, -1.0], np.float32)
SHAPE3 = np.array([2, 3, 4], np.int64)


def softmax_ref(idx, val):
    out = np.empty_like(val)
    for key in {tuple(r[:-1]) for r in idx}:
        rows = [i for i, r in enumerate(idx) if tuple(r[:-1]) == key]
        e = np.exp(val[rows] - val[rows].max())
        out[rows] = e / e.sum()
    return out


def segment_ref(kind, data, idx, ids, num=None):
    num = num if num is not None else ids[-1] + 1
    out = np.zeros((num,) + data.shape[1:], data.dtype)
    for s in range(num):
        rows = data[idx[ids == s]]
        if len(rows):
            total = rows.sum(0)
            out[s] = total if kind == "Sum" else total / (len(rows) if kind == "Mean" else np.sqrt(len(rows)))
    return out


def segment_grad_ref(kind, grad, idx, ids, dim0):
    out = np.zeros((dim0,) + grad.shape[1:], grad.dtype)
    counts = np.bincount(ids, minlength=grad.shape[0])
    for i, s in zip(idx, ids):
        w = 1.0 if kind == "Sum" else (1 / counts[s] if kind == "Mean" else 1 / np.sqrt(counts[s]))
        out[i] += grad[s] * w
    return out


SEG_IDX = np.array([0, 2, 1, 3, 0], np.int32)
SEG_IDS = np.array([0, 0, 1, 3, 3], np.int32)


def segment_cases():
    cases = []
    for kind, fn in (("Sum", "sparse_segment_sum"), ("Mean", "sparse_segment_mean"),
                     ("SqrtN", "sparse_segment_sqrt_n")):
        cases.append(Case(f"segment_{kind}", (f"SparseSegment{kind}",),
                          lambda af, fn=fn: getattr(af, fn)(DATA, SEG_IDX, SEG_IDS),
                          segment_ref(kind, DATA, SEG_IDX, SEG_IDS), static_shape=[None, 3]))
        cases.append(Case(f"segment_{kind}_num", (f"SparseSegment{kind}WithNumSegments",),
                          lambda af, fn=fn: getattr(af, fn)(DATA, SEG_IDX, SEG_IDS, num_segments=6),
                          segment_ref(kind, DATA, SEG_IDX, SEG_IDS, 6), static_shape=[6, 3], rtol=1e-5))
        grad = RNG.randn(4, 3).astype(np.float32)
        op = af.ops.sparse_math.SEGMENT_GRAD_OPS[kind]
        cases.append(Case(f"segment_{kind}_grad_op", (f"SparseSegment{kind}Grad",),
                          lambda af, op=op, grad=grad: op(grad, SEG_IDX, SEG_IDS, 5),
                          segment_grad_ref(kind, grad, SEG_IDX, SEG_IDS, 5), static_shape=[5, 3], rtol=1e-5))
    return cases


def matmul_ref(adjoint_a, adjoint_b, a=D, b=B):
    a = np.conj(a.T) if adjoint_a else a
    b = np.conj(b.T) if adjoint_b else b
    return a @ b


CASES = [
    # -- to dense
    Case("to_dense", ("SparseToDense",), lambda af: af.sparse_tensor_to_dense(sp(af)), D, static_shape=[3, 4]),
    Case("to_dense_default", ("SparseToDense",), lambda af: af.sparse.to_dense(sp(af), default_value=-1.0),
         dense(IDX, VAL, SHAPE, -1.0)),
    Case("to_dense_unsorted_unvalidated", ("SparseToDense",),
         lambda af: af.sparse_tensor_to_dense(sp(af, IDX[::-1], VAL[::-1]), validate_indices=False), D),
    Case("sparse_to_dense_scalar_value", ("SparseToDense",),
         lambda af: af.sparse_to_dense(np.array([1, 3], np.int32), [5], 7, default_value=1),
         np.array([1, 7, 1, 7, 1], np.int32), static_shape=[5]),
    Case("sparse_to_dense_strings", ("SparseToDense",),
         lambda af: af.sparse_to_dense([[0, 1]], [2, 2], ["x"], default_value=""),
         np.array([[b"", b"x"], [b"", b""]], object)),
    # -- matmul, every adjoint combination, real and complex
    *[Case(f"matmul_adj{int(a)}{int(b)}", ("SparseTensorDenseMatMul",),
           lambda af, a=a, b=b: af.sparse_tensor_dense_matmul(
               sp(af) if not a else af.sparse_transpose(sp(af)), B if not b else B.T, adjoint_a=a, adjoint_b=b),
           matmul_ref(False, False), static_shape=[3, 2], rtol=1e-5)
      for a in (False, True) for b in (False, True)],
    Case("matmul_complex_adjoint_a", ("SparseTensorDenseMatMul",),
         lambda af: af.sparse_tensor_dense_matmul(af.SparseTensor(IDX, C64, SHAPE), BC, adjoint_a=True),
         matmul_ref(True, False, dense(IDX, C64, SHAPE), BC), rtol=1e-5),
    Case("matmul_dense_times_sparse", ("SparseTensorDenseMatMul",),
         lambda af: af.sparse_tensor_dense_matmul(B[:3].T.copy(), sp(af)), B[:3].T @ D, static_shape=[2, 4],
         rtol=1e-5),
    # -- reductions
    Case("reduce_sum_axis1", ("SparseReduceSum",), lambda af: af.sparse_reduce_sum(sp(af), 1), D.sum(1),
         static_shape=[3]),
    Case("reduce_sum_all", ("SparseReduceSum",), lambda af: af.sparse_reduce_sum(sp(af)), np.float32(D.sum())),
    Case("reduce_sum_keepdims_neg_axis", ("SparseReduceSum",),
         lambda af: af.sparse.reduce_sum(sp(af, IDX3, VAL3, SHAPE3), -2, keepdims=True),
         dense(IDX3, VAL3, SHAPE3).sum(1, keepdims=True), static_shape=[2, 1, 4]),
    Case("reduce_max_empty_row_is_zero", ("SparseReduceMax",),
         lambda af: af.sparse_reduce_max(af.SparseTensor([[0, 0], [0, 1]], [-5.0, -2.0], [2, 2]), 1),
         np.array([-2.0, 0.0], np.float32)),
    Case("reduce_max_int_all", ("SparseReduceMax",),
         lambda af: af.sparse_reduce_max(af.SparseTensor([[0, 0], [1, 1]], [-5, -3], [2, 2])), np.int32(-3)),
    Case("reduce_sum_sparse", ("SparseReduceSumSparse",),
         lambda af: parts(af.sparse_reduce_sum_sparse(sp(af), 0, keepdims=True)),
         (np.array([[0, 0], [0, 1], [0, 2], [0, 3]]), np.array([3.0, 1.0, 4.0, 2.0], np.float32),
          np.array([1, 4]))),
    Case("reduce_max_sparse", ("SparseReduceMaxSparse",),
         lambda af: parts(af.sparse_reduce_max_sparse(sp(af, IDX3, VAL3, SHAPE3), [2])),
         (np.array([[0, 0], [1, 2]]), np.array([2.0, 3.0], np.float32), np.array([2, 3]))),
    # -- structure
    Case("reorder", ("SparseReorder",),
         lambda af: parts(af.sparse_reorder(sp(af, IDX[[2, 0, 3, 1]], VAL[[2, 0, 3, 1]]))), (IDX, VAL, SHAPE)),
    Case("reshape_inferred", ("SparseReshape",),
         lambda af: parts(af.sparse_reshape(sp(af), [-1, 2])),
         (np.array([[0, 1], [1, 1], [2, 0], [5, 0]]), VAL, np.array([6, 2]))),
    Case("concat_axis1_reorders", ("SparseConcat",),
         lambda af: parts(af.sparse_concat(1, [sp(af), af.SparseTensor([[1, 1], [0, 0]], [5.0, 6.0], [3, 2])])),
         (np.array([[0, 1], [0, 3], [0, 4], [1, 0], [1, 5], [2, 2]]), np.array([1, 2, 6, 3, 5, 4], np.float32),
          np.array([3, 6]))),
    Case("concat_expand_nonconcat", ("SparseConcat",),
         lambda af: parts(af.sparse_concat(0, [sp(af), af.SparseTensor([[0, 5]], [9.0], [1, 6])],
                                           expand_nonconcat_dim=True)),
         (np.concatenate([IDX, [[3, 5]]]), np.append(VAL, np.float32(9)), np.array([4, 6]))),
    Case("add_sparse_threshold", ("SparseAdd",),
         lambda af: parts(af.sparse_add(af.SparseTensor([[0, 0], [0, 1]], [0.05, 1.0], [2, 2]),
                                        af.SparseTensor([[0, 1], [1, 1]], [-0.99, 0.01], [2, 2]), threshold=0.1)),
         (np.array([[0, 0], [1, 1]]), np.array([0.05, 0.01], np.float32), np.array([2, 2]))),
    Case("add_sparse", ("SparseAdd",),
         lambda af: af.sparse_tensor_to_dense(af.sparse_add(sp(af), sp(af, IDX[1:], VAL[1:] * 2))),
         D + dense(IDX[1:], VAL[1:] * 2, SHAPE), static_shape=[3, 4]),
    Case("add_grad_op", ("SparseAddGrad",),
         lambda af: af.ops.sparse_structure.sparse_add_grad_op(np.array([1.0, 2.0, 3.0]), [[0, 0], [0, 2]],
                                                               [[0, 2], [1, 1]], [[0, 0], [0, 2], [1, 1]]),
         [np.array([1.0, 2.0]), np.array([2.0, 3.0])]),
    Case("add_dense", ("SparseTensorDenseAdd",), lambda af: af.sparse_add(np.ones((3, 4), np.float32), sp(af)),
         D + 1, static_shape=[3, 4]),
    Case("slice", ("SparseSlice",), lambda af: parts(af.sparse_slice(sp(af), [0, 1], [2, 10])),
         (np.array([[0, 0], [0, 2]]), VAL[:2], np.array([2, 3]))),
    Case("slice_grad_op", ("SparseSliceGrad",),
         lambda af: af.ops.sparse_structure.sparse_slice_grad_op(np.array([5.0, 6.0]), IDX, [0, 1],
                                                                 [[0, 0], [0, 2]]),
         np.array([5.0, 6.0, 0.0, 0.0])),
    Case("split_uneven", ("SparseSplit",),
         lambda af: [parts(s) for s in af.sparse_split(sp_input=af.SparseTensor([[0, 0], [0, 4], [1, 2]], [1, 2, 3],
                                                                                  [2, 5]), num_split=2, axis=1)],
         [(np.array([[0, 0], [1, 2]]), np.array([1, 3], np.int32), np.array([2, 3])),
          (np.array([[0, 1]]), np.array([2], np.int32), np.array([2, 2]))]),
    Case("fill_empty_rows", ("SparseFillEmptyRows",),
         lambda af: [*parts(af.sparse_fill_empty_rows(af.SparseTensor([[2, 1], [0, 0], [2, 0]], [1.0, 2.0, 3.0],
                                                                      [4, 2]), -1.0)[0]),
                     af.sparse_fill_empty_rows(af.SparseTensor([[2, 1], [0, 0], [2, 0]], [1.0, 2.0, 3.0], [4, 2]),
                                               -1.0)[1]],
         [np.array([[0, 0], [1, 0], [2, 1], [2, 0], [3, 0]]), np.array([2, -1, 1, 3, -1], np.float32),
          np.array([4, 2]), np.array([False, True, False, True])]),
    Case("fill_empty_rows_grad_op", ("SparseFillEmptyRowsGrad",),
         lambda af: af.ops.sparse_structure.sparse_fill_empty_rows_grad_op(np.array([2, 0, 3], np.int64),
                                                                           np.array([1.0, 2.0, 3.0, 4.0])),
         [np.array([3.0, 1.0, 4.0]), np.float64(2.0)]),
    # -- softmax and the sparse-dense elementwise ops
    Case("softmax", ("SparseSoftmax",), lambda af: af.sparse_softmax(sp(af, IDX3, VAL3, SHAPE3)).values,
         softmax_ref(IDX3, VAL3)),
    Case("cwise_mul_broadcast", ("SparseDenseCwiseMul",),
         lambda af: af.ops.sparse_math.SparseDenseCwiseMul(IDX, VAL, SHAPE, B[:, 0].copy()),
         VAL * B[:, 0][IDX[:, 1]]),
    Case("cwise_div_full", ("SparseDenseCwiseDiv",),
         lambda af: af.ops.sparse_math.SparseDenseCwiseDiv(IDX, VAL, SHAPE, D + 2),
         VAL / (D + 2)[tuple(IDX.T)]),
    Case("cwise_add_column", ("SparseDenseCwiseAdd",),
         lambda af: af.ops.sparse_math.SparseDenseCwiseAdd(IDX, VAL, SHAPE, np.array([[10.0], [20.0], [30.0]],
                                                                                      np.float32)),
         VAL + np.array([10, 10, 20, 30], np.float32)),
    *segment_cases(),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_sparse_op(case: Case) -> None:
    check_case(case)


# -- composites and bad input --------------------------------------------------------------------------------
def run(fetch, feed=None):
    with af.Session() as s:
        return s.run(fetch, feed)


def test_retain_transpose_merge_indicator_from_dense():
    with af.Graph().as_default():
        r = af.sparse_retain(sp(af), [True, False, False, True])
        t = af.sparse.transpose(sp(af))
        ind = af.sparse_to_indicator(af.SparseTensor([[0, 0], [0, 1], [1, 0]], [2, 0, 1], [2, 2]), 3)
        fd = af.sparse.from_dense(D)
        assert t.shape.as_list() == [4, 3]
        got = run({"r": r, "t": t, "ind": ind, "fd": fd})
    np.testing.assert_array_equal(got["r"].indices, IDX[[0, 3]])
    np.testing.assert_array_equal(got["r"].values, VAL[[0, 3]])
    np.testing.assert_array_equal(dense(got["t"].indices, got["t"].values, got["t"].dense_shape), D.T)
    np.testing.assert_array_equal(got["ind"], [[True, False, True], [False, True, False]])
    np.testing.assert_array_equal(got["fd"].indices, IDX)
    np.testing.assert_array_equal(got["fd"].values, VAL)


@pytest.mark.parametrize("build, message", [
    (lambda: af.sparse_tensor_to_dense(sp(af, IDX[[1, 0, 2, 3]])),
     r"SparseToDense 'SparseToDense': indices\[1\] = \[0,1\] is out of order. Many sparse ops require sorted "
     r"indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy."),
    (lambda: af.sparse_tensor_to_dense(sp(af, [[0, 0], [5, 1]], [1.0, 2.0])),
     r"SparseToDense 'SparseToDense': indices\[1\] = \[5,1\] is out of bounds: need 0 <= index < \[3,4\]"),
    (lambda: af.sparse_tensor_to_dense(sp(af, [[0, 0], [0, 0]], [1.0, 2.0])),
     r"indices\[1\] = \[0,0\] is repeated"),
    (lambda: af.sparse_tensor_dense_matmul(sp(af, [[0, 0], [5, 1]], [1.0, 2.0]), np.ones((4, 2), np.float32)),
     r"SparseTensorDenseMatMul 'SparseTensorDenseMatMul/SparseTensorDenseMatMul': m \(5\) from index\[1,0\] out "
     r"of bounds \(>=3\)"),
    (lambda: af.sparse_reduce_sum(sp(af, [[0, 0], [5, 1]], [1.0, 2.0]), 1),
     r"SparseReduceSum 'SparseReduceSum': indices\[1\] = \[5,1\] is out of bounds"),
    (lambda: af.sparse_segment_sum(DATA, [0, 1, 2], [1, 0, 1]),
     r"SparseSegmentSum 'SparseSegmentSum': segment ids are not increasing"),
    (lambda: af.sparse_segment_sum(DATA, [0, 5, 2], [0, 0, 1]),
     r"SparseSegmentSum 'SparseSegmentSum': Bad: indices\[1\] == 5 out of range \[0, 4\)"),
    (lambda: af.sparse_reshape(af.SparseTensor([[0, 0]], [1], af.placeholder_with_default(
        np.array([2, 3], np.int64), [2])), [4, 2]).indices,
     r"SparseReshape 'SparseReshape': Input to reshape is a tensor with 6 dense values, but the "
     r"requested shape has 8"),
])
def test_bad_indices_are_invalid_argument_errors_naming_the_op(build, message):
    with af.Graph().as_default():
        fetch = build()
        with pytest.raises(af.errors.InvalidArgumentError, match=message):
            run(fetch)


def test_static_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match=r"Shapes \(3, 4\) and \(3, 5\) are incompatible"):
            af.sparse_add(sp(af), af.SparseTensor([[0, 0]], [1.0], [3, 5]))
        with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
            af.sparse_add(D, D)
        with pytest.raises(TypeError, match="Input must be a SparseTensor"):
            af.sparse_reorder(D)
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            af.sparse_split(sp(af), 2, 1)
        with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 12 elements to shape \[5, 2\]"):
            af.sparse_reshape(sp(af), [5, 2])
        with pytest.raises(ValueError, match="indices has 2 rows but values has 3 elements"):
            af.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0, 3.0], [2, 2])
