"""math_extra against numpy/scipy references: the extra elementwise functions, truncated division,
cumsum/cumprod, segment reductions (sorted and unsorted), bincount, confusion_matrix and the
composites (values and op names pinned with TF 2.21's compat.v1 while this was written)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(1)
X = RNG.uniform(-0.9, 0.9, (2, 3)).astype(np.float32)
POS = RNG.uniform(1.1, 3.0, (2, 3)).astype(np.float64)
D = RNG.randn(5, 2).astype(np.float32)
IDS = np.array([0, 0, 2, 2, 3], np.int32)


def cum_ref(x, axis, exclusive, reverse, fn=np.cumsum, ident=0):
    x = np.flip(x, axis) if reverse else x
    out = fn(x, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), ident), np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


def seg_ref(fn, data, ids, num, fill):
    out = np.full((num,) + data.shape[1:], fill, data.dtype)
    for i in range(num):
        rows = data[ids == i]
        if len(rows):
            out[i] = fn(rows, axis=0)
    return out


def unary(name, op_type, fn, x=X, rtol=1e-6):
    return Case(name, (op_type,), lambda af: getattr(af, name)(x), fn(x).astype(x.dtype), rtol=rtol, atol=1e-6)


CASES = [
    unary("tan", "Tan", np.tan), unary("asin", "Asin", np.arcsin), unary("acos", "Acos", np.arccos),
    unary("atan", "Atan", np.arctan), unary("sinh", "Sinh", np.sinh), unary("cosh", "Cosh", np.cosh),
    unary("asinh", "Asinh", np.arcsinh), unary("acosh", "Acosh", np.arccosh, POS),
    unary("atanh", "Atanh", np.arctanh), unary("expm1", "Expm1", np.expm1), unary("erf", "Erf", sp.erf),
    unary("erfc", "Erfc", sp.erfc), unary("lgamma", "Lgamma", sp.gammaln, POS),
    unary("digamma", "Digamma", sp.digamma, POS),
    Case("polygamma1", ("Polygamma",), lambda af: af.ops.math_extra.Polygamma(np.ones_like(POS), POS),
         sp.polygamma(1, POS)),
    Case("polygamma_orders_and_nan", ("Polygamma",),
         lambda af: af.ops.math_extra.Polygamma(np.array([0.0, 2.0, 1.5, -1.0]), np.array([0.5, 3.0, 2.0, 2.0])),
         np.array([sp.digamma(0.5), sp.polygamma(2, 3.0), np.nan, np.nan]), rtol=1e-12),
    Case("rint_half_even", ("Rint",), lambda af: af.rint(np.array([-1.5, -0.5, 0.5, 1.5, 2.7], np.float32)),
         np.array([-2.0, -0.0, 0.0, 2.0, 3.0], np.float32)),
    Case("atan2", ("Atan2",), lambda af: af.atan2(X, X[::-1]), np.arctan2(X, X[::-1])),
    Case("truncatediv_int", ("TruncateDiv",), lambda af: af.truncatediv(np.array([-7, 7, -7]), np.array([2, -2, -2])),
         np.array([-3, -3, 3], np.int64)),
    Case("truncatemod_int", ("TruncateMod",), lambda af: af.truncatemod(np.array([-7, 7, -7], np.int32), 2),
         np.array([-1, 1, -1], np.int32)),
    Case("truncatemod_float", ("TruncateMod",), lambda af: af.truncatemod(np.array([-7.5, 7.5]), 2.0),
         np.array([-1.5, 1.5])),
    Case("floor_div", ("FloorDiv",), lambda af: af.floor_div(np.array([-7, 7], np.int32), 2),
         np.array([-4, 3], np.int32)),
    Case("log_sigmoid", ("Softplus", "Neg"), lambda af: af.log_sigmoid(X * 30), -np.logaddexp(0, -X * 30),
         rtol=1e-5),
    Case("cumsum_axis1_excl_rev", ("Cumsum",), lambda af: af.cumsum(D, 1, exclusive=True, reverse=True),
         cum_ref(D, 1, True, True), rtol=1e-5),
    Case("cumsum_default", ("Cumsum",), lambda af: af.cumsum(IDS), np.cumsum(IDS).astype(np.int32)),
    Case("cumprod_excl", ("Cumprod",), lambda af: af.cumprod(D, 0, exclusive=True),
         cum_ref(D, 0, True, False, np.cumprod, 1), rtol=1e-5),
    Case("cumprod_rev", ("Cumprod",), lambda af: af.cumprod(D, -1, reverse=True),
         cum_ref(D, 1, False, True, np.cumprod, 1), rtol=1e-5),
    Case("to_casts", ("Cast",), lambda af: [af.to_float([1, 2]), af.to_double([1]), af.to_int32([1.7]),
                                            af.to_int64([-1.7])],
         [np.array([1, 2], np.float32), np.array([1.0]), np.array([1], np.int32), np.array([-1], np.int64)]),
    Case("reduce_logsumexp", ("Max", "Exp", "Log"), lambda af: af.reduce_logsumexp(D * 100, 1),
         sp.logsumexp(D.astype(np.float64) * 100, 1).astype(np.float32), rtol=1e-5),
    Case("reduce_logsumexp_inf_keepdims", ("Max",),
         lambda af: af.reduce_logsumexp(np.array([[-np.inf, -np.inf], [0.0, 0.0]]), axis=1, keepdims=True),
         np.array([[-np.inf], [np.log(2.0)]])),
    Case("count_nonzero", ("NotEqual", "Sum"), lambda af: [af.count_nonzero(IDS), af.count_nonzero(D > 0, axis=0,
                                                                                                 dtype=af.int32)],
         [np.int64(np.count_nonzero(IDS)), np.count_nonzero(D > 0, axis=0).astype(np.int32)]),
    Case("accumulate_n", ("AddN",), lambda af: af.accumulate_n([D, D, D]), D * 3),
    Case("is_non_decreasing", ("All", "LessEqual", "Less"),
         lambda af: [af.is_non_decreasing([1, 2, 2]), af.is_strictly_increasing([1, 2, 2]),
                     af.is_strictly_increasing([[1, 2], [3, 4]]), af.is_non_decreasing([5])],
         [np.bool_(True), np.bool_(False), np.bool_(True), np.bool_(True)]),
    Case("bincount", ("Bincount",), lambda af: [af.bincount([1, 1, 3]),
                                                af.bincount([1, 1, 3], weights=[1.0, 2.0, 3.0], minlength=6),
                                                af.bincount([1, 5, 3], maxlength=4)],
         [np.array([0, 2, 0, 1], np.int32), np.array([0, 3, 0, 3, 0, 0], np.float32),
          np.array([0, 1, 0, 1], np.int32)]),
    Case("confusion_matrix", ("ScatterNd",), lambda af: af.confusion_matrix([0, 1, 2, 1], [0, 2, 2, 1]),
         np.array([[1, 0, 0], [0, 1, 1], [0, 0, 1]], np.int32)),
    Case("confusion_matrix_weights", ("ScatterNd",),
         lambda af: af.confusion_matrix([[0], [1]], [1, 1], num_classes=3, weights=[2.0, 3.0], dtype=af.float32),
         np.array([[0, 2, 0], [0, 3, 0], [0, 0, 0]], np.float32), static_shape=[3, 3]),
    Case("segment_sum", ("SegmentSum",), lambda af: af.segment_sum(D, IDS), seg_ref(np.sum, D, IDS, 4, 0),
         static_shape=[None, 2], rtol=1e-5),
    Case("segment_mean_int", ("SegmentMean",), lambda af: af.segment_mean(np.array([1, 2, 4], np.int32), [0, 0, 0]),
         np.array([2], np.int32)),
    Case("segment_mean", ("SegmentMean",), lambda af: af.segment_mean(D, IDS), seg_ref(np.mean, D, IDS, 4, 0),
         rtol=1e-5),
    Case("segment_prod", ("SegmentProd",), lambda af: af.segment_prod(D, IDS), seg_ref(np.prod, D, IDS, 4, 1),
         rtol=1e-5),
    Case("segment_max_empty_is_zero", ("SegmentMax",), lambda af: af.segment_max(D, IDS),
         seg_ref(np.max, D, IDS, 4, 0)),
    Case("segment_min", ("SegmentMin",), lambda af: af.segment_min(D, IDS), seg_ref(np.min, D, IDS, 4, 0)),
    Case("unsorted_segment_max_lowest_fill", ("UnsortedSegmentMax",),
         lambda af: af.unsorted_segment_max(D, [3, -1, 0, 3, 0], 5),
         seg_ref(np.max, D, np.array([3, -1, 0, 3, 0]), 5, np.finfo(np.float32).min)),
    Case("unsorted_segment_min_int", ("UnsortedSegmentMin",),
         lambda af: af.unsorted_segment_min(np.array([4, 2, 9], np.int64), [1, 1, 0], 3),
         np.array([9, 2, np.iinfo(np.int64).max], np.int64)),
    Case("unsorted_segment_prod", ("UnsortedSegmentProd",),
         lambda af: af.unsorted_segment_prod(D, [2, 0, 2, 0, 1], 4),
         seg_ref(np.prod, D, np.array([2, 0, 2, 0, 1]), 4, 1), rtol=1e-5),
    Case("unsorted_segment_mean_sqrt_n", ("UnsortedSegmentSum",),
         lambda af: [af.unsorted_segment_mean(D, [1, 1, 1, 0, 1], 3),
                    af.unsorted_segment_sqrt_n(D, [1, 1, 1, 0, 1], 3)],
         [seg_ref(np.mean, D, np.array([1, 1, 1, 0, 1]), 3, 0),
          seg_ref(lambda r, axis: r.sum(axis) / np.sqrt(len(r)), D, np.array([1, 1, 1, 0, 1]), 3, 0)], rtol=1e-5),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case):
    check_case(case)


def test_segment_ids_must_be_sorted():
    with af.Graph().as_default(), af.Session() as s:
        with pytest.raises(af.errors.InvalidArgumentError, match="SegmentSum.*not increasing"):
            s.run(af.segment_sum(D, [0, 1, 0, 2, 2]))


def test_confusion_matrix_rejects_out_of_bound_labels():
    with af.Graph().as_default(), af.Session() as s:
        with pytest.raises(af.errors.InvalidArgumentError, match="out of bound"):
            s.run(af.confusion_matrix([0, 3], [1, 1], num_classes=3))


def test_names_as_tf1():
    with af.Graph().as_default():
        assert af.to_float([1]).op.name == "ToFloat"
        assert af.log_sigmoid(X).op.name == "LogSigmoid"
        assert af.confusion_matrix([0], [1]).op.name == "confusion_matrix/ScatterNd"
        assert af.count_nonzero(X).op.name == "count_nonzero/Sum"
        assert af.is_non_decreasing([1]).op.name == "is_non_decreasing/All"
        assert af.reduce_logsumexp(X).op.name == "ReduceLogSumExp"
        assert af.cumsum(X).op.name == "Cumsum"
