"""Finite-difference rows for the differentiable sparse ops: gradients reach a SparseTensor's values
(and the dense operand, and SparseToDense's/SparseFillEmptyRows' default value)."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient, grad_params

RNG = np.random.RandomState(11)
IDX = np.array([[0, 1], [0, 3], [1, 0], [2, 2]], np.int64)
SHAPE = np.array([3, 4], np.int64)
V = RNG.uniform(0.5, 1.5, 4)
IDX3 = np.array([[0, 0, 1], [0, 0, 3], [1, 2, 0], [1, 2, 1]], np.int64)
SHAPE3 = np.array([2, 3, 4], np.int64)
DATA = RNG.randn(4, 3)
SEG_IDX = np.array([0, 2, 1, 3, 0], np.int32)
SEG_IDS = np.array([0, 0, 1, 3, 3], np.int32)


def st(af, values, idx=IDX, shape=SHAPE):
    return af.SparseTensor(idx, values, shape)


def matmul_case(adj_a, adj_b):
    b = RNG.randn(2, 4) if adj_b else RNG.randn(4, 2)
    idx, shape = (IDX[:, ::-1].copy(), SHAPE[::-1].copy()) if adj_a else (IDX, SHAPE)
    order = np.lexsort(idx.T[::-1])
    return GradCase(f"matmul_adj{int(adj_a)}{int(adj_b)}", ("SparseTensorDenseMatMul",),
                    lambda af, v, b: af.sparse_tensor_dense_matmul(st(af, v, idx[order], shape), b,
                                                                   adjoint_a=adj_a, adjoint_b=adj_b),
                    [V, b])


CASES = [
    GradCase("to_dense_values_and_default", ("SparseToDense",),
             lambda af, v, d: af.sparse_tensor_to_dense(st(af, v), default_value=d), [V, np.array(0.3)]),
    GradCase("sparse_to_dense_scalar_value", ("SparseToDense",),
             lambda af, v, d: af.sparse_to_dense(np.array([1, 3], np.int32), [5], v, d),
             [np.array(0.7), np.array(-0.2)]),
    GradCase("reorder", ("SparseReorder",),
             lambda af, v: af.sparse_reorder(st(af, v, IDX[[2, 0, 3, 1]])).values, [V]),
    GradCase("add_sparse", ("SparseAdd",),
             lambda af, a, b: af.sparse_add(st(af, a), st(af, b, np.array([[0, 3], [2, 0]]))).values,
             [V, RNG.uniform(0.5, 1.5, 2)]),
    GradCase("add_dense", ("SparseTensorDenseAdd",), lambda af, v, d: af.sparse_add(st(af, v), d),
             [V, RNG.randn(3, 4)]),
    GradCase("slice", ("SparseSlice",), lambda af, v: af.sparse_slice(st(af, v), [0, 1], [2, 3]).values, [V]),
    GradCase("fill_empty_rows", ("SparseFillEmptyRows",),
             lambda af, v, d: af.sparse_fill_empty_rows(
                 af.SparseTensor([[2, 1], [0, 0], [2, 0]], v, [4, 2]), d)[0].values,
             [RNG.uniform(0.5, 1.5, 3), np.array(0.4)]),
    *[matmul_case(a, b) for a in (False, True) for b in (False, True)],
    GradCase("reduce_sum_axis1", ("SparseReduceSum",), lambda af, v: af.sparse_reduce_sum(st(af, v), 1), [V]),
    GradCase("reduce_sum_all", ("SparseReduceSum",), lambda af, v: af.sparse_reduce_sum(st(af, v)), [V]),
    GradCase("reduce_sum_keepdims", ("SparseReduceSum",),
             lambda af, v: af.sparse_reduce_sum(st(af, v, IDX3, SHAPE3), [0, 2], keepdims=True), [V]),
    GradCase("softmax", ("SparseSoftmax",), lambda af, v: af.sparse_softmax(st(af, v, IDX3, SHAPE3)).values,
             [RNG.randn(4)]),
    *[GradCase(f"cwise_{kind.lower()}", (f"SparseDenseCwise{kind}",),
               lambda af, v, d, kind=kind: getattr(af.ops.sparse_math, f"SparseDenseCwise{kind}")(IDX, v, SHAPE, d),
               [V, RNG.uniform(1.0, 2.0, (4,))]) for kind in ("Add", "Mul", "Div")],
    GradCase("cwise_mul_column", ("SparseDenseCwiseMul",),
             lambda af, v, d: af.ops.sparse_math.SparseDenseCwiseMul(IDX, v, SHAPE, d),
             [V, RNG.uniform(1.0, 2.0, (3, 1))]),
    *[GradCase(f"segment_{fn}{'_num' if num else ''}",
               (f"SparseSegment{kind}" + ("WithNumSegments" if num else ""),),
               lambda af, x, fn=fn, num=num: getattr(af, fn)(x, SEG_IDX, SEG_IDS, num_segments=6 if num else None),
               [DATA])
      for fn, kind in (("sparse_segment_sum", "Sum"), ("sparse_segment_mean", "Mean"),
                       ("sparse_segment_sqrt_n", "SqrtN")) for num in (False, True)],
]


@pytest.mark.parametrize("case", grad_params(CASES))
def test_sparse_gradient(case: GradCase) -> None:
    check_gradient(case)
