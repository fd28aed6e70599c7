"""array_extra against numpy references: sequence_mask, reverse_sequence, meshgrid, linspace,
sort/argsort, space_to_depth/depth_to_space, histogram_fixed_width, unravel_index (values, names and
static shapes matched TF 2.21's compat.v1 while this was written)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(5)
X = RNG.randn(3, 5).astype(np.float32)
IMG = RNG.randn(2, 4, 6, 3).astype(np.float32)
SEQ = np.arange(24).reshape(3, 4, 2)


def s2d(x, bs):
    n, h, w, c = x.shape
    return x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // bs, w // bs, -1)


def rev_seq(x, lengths, seq, batch):
    out = x.copy()
    for b, n in enumerate(lengths):
        idx = [slice(None)] * x.ndim
        idx[batch], idx[seq] = b, slice(0, n)
        out[tuple(idx)] = np.flip(x[tuple(idx)], axis=seq - (1 if batch < seq else 0))
    return out


def linspace_ref(start, stop, n, dt=np.float32):
    step = (dt(stop) - dt(start)) / dt(n - 1)
    out = (dt(start) + step * np.arange(n, dtype=dt)).astype(dt)
    out[-1] = stop
    return out


CASES = [
    Case("sequence_mask", ("Range", "Less"), lambda af: af.sequence_mask([1, 3, 2], 5),
         np.arange(5) < np.array([[1], [3], [2]]), static_shape=[3, 5]),
    Case("sequence_mask_default_maxlen_float", ("Max", "Cast"),
         lambda af: af.sequence_mask(np.array([[1, 0], [2, 3]]), dtype=af.float32),
         (np.arange(3) < np.array([[1, 0], [2, 3]])[..., None]).astype(np.float32)),
    Case("reverse_sequence", ("ReverseSequence",), lambda af: af.reverse_sequence(SEQ, [2, 4, 0], seq_axis=1),
         rev_seq(SEQ, [2, 4, 0], 1, 0), static_shape=[3, 4, 2]),
    Case("reverse_sequence_batch_axis", ("ReverseSequence",),
         lambda af: af.reverse_sequence(SEQ, np.array([1, 2], np.int64), seq_dim=0, batch_dim=2),
         rev_seq(SEQ, [1, 2], 0, 2)),
    Case("meshgrid_xy_ij", ("Reshape", "Mul"),
         lambda af: [*af.meshgrid([1, 2, 3], [4, 5]), *af.meshgrid([1.0, 2.0], [3.0, 4.0, 5.0], [6.0], indexing="ij")],
         [*np.meshgrid(np.int32([1, 2, 3]), np.int32([4, 5])),
          *np.meshgrid(np.float32([1, 2]), np.float32([3, 4, 5]), np.float32([6]), indexing="ij")]),
    Case("linspace", ("LinSpace",), lambda af: [af.linspace(0.0, 1.0, 7), af.lin_space(-2.0, 3.0, 1),
                                                af.linspace(np.float64(1), 2.0, 4)],
         [linspace_ref(0, 1, 7), np.array([-2.0], np.float32), linspace_ref(1, 2, 4, np.float64)]),
    Case("sort_argsort_ascending_stable", ("TopKV2", "Neg"),
         lambda af: [af.sort([3, 1, 2, 1]), af.argsort([3, 1, 2, 1]), af.sort(X), af.argsort(X, axis=0)],
         [np.array([1, 1, 2, 3], np.int32), np.array([1, 3, 2, 0], np.int32), np.sort(X),
          np.argsort(X, axis=0, kind="stable").astype(np.int32)]),
    Case("sort_descending_axis0", ("TopKV2", "Transpose"),
         lambda af: [af.sort(X, axis=0, direction="DESCENDING"), af.argsort([3, 1, 2, 1], direction="DESCENDING")],
         [-np.sort(-X, axis=0), np.array([0, 2, 1, 3], np.int32)]),
    Case("space_to_depth", ("SpaceToDepth",), lambda af: af.space_to_depth(IMG, 2), s2d(IMG, 2),
         static_shape=[2, 2, 3, 12]),
    Case("space_to_depth_nchw", ("SpaceToDepth",),
         lambda af: af.space_to_depth(IMG.transpose(0, 3, 1, 2), 2, data_format="NCHW"),
         s2d(IMG, 2).transpose(0, 3, 1, 2)),
    Case("depth_to_space", ("DepthToSpace",), lambda af: af.depth_to_space(s2d(IMG, 2), 2), IMG,
         static_shape=[2, 4, 6, 3]),
    Case("depth_to_space_nchw", ("DepthToSpace",),
         lambda af: af.depth_to_space(s2d(IMG, 2).transpose(0, 3, 1, 2), 2, data_format="NCHW"),
         IMG.transpose(0, 3, 1, 2)),
    Case("histogram_fixed_width", ("HistogramFixedWidth",),
         lambda af: [af.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0, 15], [0.0, 5.0], nbins=5),
                     af.histogram_fixed_width(X, [-1.0, 1.0], 4, dtype=af.int64)],
         [np.array([2, 1, 1, 0, 2], np.int32),  # pinned with TF 2.21
          np.bincount(np.clip(np.floor((X.ravel().astype(np.float64) + 1) / 2 * 4), 0, 3).astype(int),
                      minlength=4).astype(np.int64)]),
    Case("unravel_index", ("UnravelIndex",), lambda af: [af.unravel_index([1, 5, 7], [3, 3]),
                                                         af.unravel_index(np.int64(5), np.array([2, 3], np.int64))],
         [np.array([[0, 1, 2], [1, 2, 1]], np.int32), np.array([1, 2], np.int64)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case):
    check_case(case)


def test_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="divisible"):
            af.space_to_depth(np.zeros((1, 3, 4, 1)), 2)
        with pytest.raises(ValueError, match="ASCENDING"):
            af.sort([1, 2], direction="UP")
        with pytest.raises(ValueError, match="indexing"):
            af.meshgrid([1], indexing="xx")
        with af.Session() as s, pytest.raises(af.errors.InvalidArgumentError, match="seq_lengths"):
            s.run(af.reverse_sequence(SEQ, [5, 1, 1], seq_axis=1))


def test_names_as_tf1():
    with af.Graph().as_default():
        assert af.sequence_mask([1, 2], 3).op.name == "SequenceMask/Less"
        assert af.meshgrid([1, 2], [3])[0].op.name == "meshgrid/mul"
        assert af.argsort([1]).name == "argsort/TopKV2:1"
        assert af.histogram_fixed_width([1.0], [0.0, 1.0]).op.name == "histogram_fixed_width"
        assert af.reverse_sequence(SEQ, [1, 1, 1], 1).op.inputs[1].dtype == af.int32
