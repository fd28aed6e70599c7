"""roll, searchsorted, setdiff1d, space_to_batch(_nd) / batch_to_space(_nd), required_space_to_batch_paddings,
parallel_stack and extract_image_patches against numpy references written from the ops' definitions
(element loops, not the kernels' reshapes); names, static shapes and errors as TF 2.21 (checked with
tfdiff while this was written)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

X = np.arange(24).reshape(2, 3, 4).astype(np.float32)
SEQ = np.array([[1.0, 2, 2, 4], [0, 5, 6, 7]], np.float32)
IMG = np.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3).astype(np.float32)
IM = np.arange(5 * 6 * 2).reshape(1, 5, 6, 2).astype(np.float32)


def space_to_batch_ref(x, block, pads):
    m = len(block)
    padded = np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)] * (x.ndim - m - 1))
    batch = x.shape[0]
    out_spatial = [padded.shape[i + 1] // block[i] for i in range(m)]
    out = np.zeros([batch * int(np.prod(block))] + out_spatial + list(x.shape[m + 1:]), x.dtype)
    for bi, offsets in enumerate(np.ndindex(*block)):  # block offsets row-major, the batch index fastest
        for b in range(batch):
            for pos in np.ndindex(*out_spatial):
                src = tuple(p * s + o for p, s, o in zip(pos, block, offsets))
                out[(bi * batch + b,) + pos] = padded[(b,) + src]
    return out


def batch_to_space_ref(x, block, crops):
    m, prod = len(block), int(np.prod(block))
    batch, spatial = x.shape[0] // prod, list(x.shape[1:m + 1])
    full = np.zeros([batch] + [s * k for s, k in zip(spatial, block)] + list(x.shape[m + 1:]), x.dtype)
    for bi, offsets in enumerate(np.ndindex(*block)):
        for b in range(batch):
            for pos in np.ndindex(*spatial):
                full[(b,) + tuple(p * k + o for p, k, o in zip(pos, block, offsets))] = x[(bi * batch + b,) + pos]
    return full[(slice(None),) + tuple(slice(c0, full.shape[i + 1] - c1) for i, (c0, c1) in enumerate(crops))]


def patches_ref(x, ks, st, rt, padding):
    n, h, w, c = x.shape
    eff = [(ks[i] - 1) * rt[i] + 1 for i in range(2)]
    if padding == "VALID":
        rows, cols = (h - eff[0]) // st[0] + 1, (w - eff[1]) // st[1] + 1
        top = left = 0
    else:
        rows, cols = -(-h // st[0]), -(-w // st[1])
        top = max(0, (rows - 1) * st[0] + eff[0] - h) // 2
        left = max(0, (cols - 1) * st[1] + eff[1] - w) // 2
    out = np.zeros((n, rows, cols, ks[0] * ks[1] * c), x.dtype)
    for r in range(rows):
        for q in range(cols):
            for i in range(ks[0]):
                for j in range(ks[1]):
                    y, z = r * st[0] + i * rt[0] - top, q * st[1] + j * rt[1] - left
                    if 0 <= y < h and 0 <= z < w:
                        out[:, r, q, (i * ks[1] + j) * c:(i * ks[1] + j + 1) * c] = x[:, y, z, :]
    return out


CASES = [
    Case("roll", ("Roll",),
         lambda af: [af.roll(X, 1, 0), af.roll(X, [1, -2], [2, 1]), af.roll(X, [1, 1], [2, 2]),
                     af.roll(np.arange(5), np.int64(-7), 0)],
         [np.roll(X, 1, 0), np.roll(X, (1, -2), (2, 1)), np.roll(X, 2, 2), np.roll(np.arange(5), -7)]),
    Case("searchsorted", ("LowerBound", "UpperBound"),
         lambda af: [af.searchsorted(SEQ, [[2.0, 3, 0], [5, 8, -1]]),
                     af.searchsorted(SEQ, [[2.0, 3, 0], [5, 8, -1]], side="right", out_type=af.int64),
                     af.searchsorted([1, 3, 5], [0, 3, 6])],
         [np.int32([[1, 3, 0], [1, 4, 0]]), np.int64([[3, 3, 0], [2, 4, 0]]), np.int32([0, 1, 3])]),
    Case("searchsorted_rank3", ("LowerBound",),
         lambda af: af.searchsorted(np.sort(np.arange(24).reshape(2, 3, 4) % 5, -1), np.full([2, 3, 2], 2)),
         np.array([np.searchsorted(r, [2, 2]) for r in np.sort(np.arange(24).reshape(6, 4) % 5, -1)],
                  np.int32).reshape(2, 3, 2), static_shape=[2, 3, 2]),
    Case("setdiff1d", ("ListDiff",),
         lambda af: [*af.setdiff1d([1, 2, 3, 4, 2, 6], [2, 4]),
                     *af.setdiff1d(["a", "b", "c"], ["b"], index_dtype=af.int64)],
         [np.int32([1, 3, 6]), np.int32([0, 2, 5]), np.array([b"a", b"c"], dtype=object), np.int64([0, 2])]),
    Case("space_to_batch_nd", ("SpaceToBatchND",),
         lambda af: [af.space_to_batch_nd(IMG, [2, 3], [[0, 0], [0, 0]]),
                     af.space_to_batch_nd(IMG, np.int64([2, 2]), np.int64([[1, 1], [0, 2]])),
                     af.space_to_batch(IMG, [[0, 0], [1, 1]], 2),
                     af.space_to_batch_nd(np.arange(12).reshape(2, 6), [3], [[1, 2]])],
         [space_to_batch_ref(IMG, [2, 3], [[0, 0], [0, 0]]), space_to_batch_ref(IMG, [2, 2], [[1, 1], [0, 2]]),
          space_to_batch_ref(IMG, [2, 2], [[0, 0], [1, 1]]),
          np.int64([[0, 2, 5], [0, 8, 11], [0, 3, 0], [6, 9, 0], [1, 4, 0], [7, 10, 0]])]),  # pinned with TF 2.21
    Case("batch_to_space_nd", ("BatchToSpaceND",),
         lambda af: [af.batch_to_space_nd(IMG, [2, 1], [[1, 0], [0, 2]]),
                     af.batch_to_space(np.arange(48).reshape(4, 2, 2, 3).astype(np.float32), [[0, 1], [1, 0]],
                                       block_size=2)],
         [batch_to_space_ref(IMG, [2, 1], [[1, 0], [0, 2]]),
          batch_to_space_ref(np.arange(48).reshape(4, 2, 2, 3).astype(np.float32), [2, 2], [[0, 1], [1, 0]])]),
    Case("required_space_to_batch_paddings", ("Pack",),
         lambda af: [*af.required_space_to_batch_paddings([4, 7], [3, 2], [[1, 0], [2, 2]]),
                     *af.required_space_to_batch_paddings(af.placeholder_with_default([5, 5], [2]), [2, 3])],
         [np.int32([[1, 1], [2, 3]]), np.int32([[0, 1], [0, 1]]), np.int32([[0, 1], [0, 1]]),
          np.int32([[0, 1], [0, 1]])]),
    Case("parallel_stack", ("ParallelConcat",), lambda af: af.parallel_stack([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
         np.float32([[1, 2], [3, 4], [5, 6]]), static_shape=[3, 2]),
    Case("extract_image_patches", ("ExtractImagePatches",),
         lambda af: [af.extract_image_patches(IM, [1, 2, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
                     af.extract_image_patches(IM, [1, 3, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
                     af.extract_image_patches(IM, sizes=[1, 2, 2, 1], strides=[1, 1, 1, 1], rates=[1, 1, 2, 1],
                                              padding="SAME")],
         [patches_ref(IM, [2, 3], [2, 2], [1, 1], "VALID"), patches_ref(IM, [3, 2], [2, 3], [2, 1], "SAME"),
          patches_ref(IM, [2, 2], [1, 1], [1, 2], "SAME")]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_array_more(case):
    check_case(case)


def test_names_and_static_shapes_as_tf():
    with af.Graph().as_default():
        dyn = af.space_to_batch_nd(af.placeholder_with_default(IMG, [None, None, 6, 3]), [2, 3], [[0, 0], [0, 0]])
        assert (dyn.name, dyn.shape.as_list()) == ("SpaceToBatchND:0", [None, None, 2, 3])
        b2s = af.batch_to_space_nd(IMG, [2, 1], [[1, 0], [0, 2]])
        assert (b2s.name, b2s.shape.as_list()) == ("BatchToSpaceND:0", [1, 7, 4, 3])
        ss = af.searchsorted(SEQ, [[2.0], [5.0]])
        assert (ss.name, ss.shape.as_list()) == ("Reshape_2:0", [2, 1])
        p = af.extract_image_patches(IM, [1, 3, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME")
        assert (p.name, p.shape.as_list()) == ("ExtractImagePatches:0", [1, 3, 2, 12])
        paddings, crops = af.required_space_to_batch_paddings([4, 7], [3, 2])
        assert (paddings.name, crops.name) == ("required_space_to_batch_paddings/paddings:0",
                                               "required_space_to_batch_paddings/crops:0")
        assert af.parallel_stack([[1.0], [2.0]]).name == "parallel_stack/ParallelConcat:0"
        out, idx = af.setdiff1d([1, 2], [2])
        assert (out.shape.as_list(), idx.dtype) == ([None], af.int32)


def test_errors_as_tf():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="padded_shape\\[0\\]=4 is not divisible by block_shape\\[0\\]=3"):
            af.space_to_batch_nd(IMG, [3, 3], [[0, 0], [0, 0]])
        with pytest.raises(ValueError, match="Input batch dimension \\(2\\) is not divisible by product of block"):
            af.batch_to_space_nd(IMG, [2, 2], [[0, 0], [0, 0]])
        with pytest.raises(ValueError, match="shift and axis must have the same size"):
            af.roll(X, [1, 2], [0])
        with pytest.raises(ValueError, match="Argument `side` must be either 'right' or 'left'"):
            af.searchsorted(SEQ, SEQ, side="middle")
        with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
            af.extract_image_patches(IM, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")
        bad_axis = af.roll(X, 1, 3)
        shape = af.placeholder(af.int32, [2])
        s2b = af.space_to_batch_nd(af.reshape(IMG, af.concat([[2], shape, [3]], 0)), [3, 3], [[0, 0], [0, 0]])
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match="axis 3 is out of range"):
                sess.run(bad_axis)
            with pytest.raises(af.errors.InvalidArgumentError, match="is not divisible by block_shape"):
                sess.run(s2b, {shape: [4, 6]})
