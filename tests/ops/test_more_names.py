"""TF1 top-level names added late: tensor_scatter_nd_*, unique_with_counts, bitcast, broadcast_dynamic_shape,
batch_gather, repeat, histogram_fixed_width_bins, saturate_cast, to_complex*, clip_by_average_norm,
encode/decode_base64 and fingerprint, against numpy references; names, static shapes, errors and the
fingerprint/saturation values were checked against TF 2.21 with tfdiff while this was written."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

T = np.arange(8, dtype=np.float32).reshape(4, 2)


def scatter_ref(tensor, indices, updates, fn):
    out = np.array(tensor, copy=True)
    indices, updates = np.asarray(indices), np.asarray(updates)
    r = indices.shape[-1]
    for where, row in zip(indices.reshape(-1, r), updates.reshape((-1,) + out.shape[r:])):
        out[tuple(where)] = fn(out[tuple(where)], row)
    return out


def repeat_ref(x, repeats, axis):
    return np.repeat(x, repeats, axis=axis)


CASES = [
    Case("tensor_scatter_nd_update", ("TensorScatterUpdate",),
         lambda af: [af.tensor_scatter_nd_update(T, [[1], [3]], [[9.0, 9.0], [7.0, 7.0]]),
                     af.tensor_scatter_update(np.array([b"a", b"b"], object), [[1]], [b"z"])],
         [scatter_ref(T, [[1], [3]], [[9, 9], [7, 7]], lambda a, b: b), np.array([b"a", b"z"], object)]),
    Case("tensor_scatter_nd_add", ("TensorScatterAdd",),
         lambda af: [af.tensor_scatter_nd_add(T, [[1, 0], [1, 0]], [5.0, 6.0]),
                     af.tensor_scatter_add(np.int64([1, 2, 3]), np.int64([[0], [2], [0]]), np.int64([1, 1, 1]))],
         [scatter_ref(T, [[1, 0], [1, 0]], [5, 6], np.add), np.int64([3, 2, 4])]),
    Case("tensor_scatter_nd_sub", ("TensorScatterSub",),
         lambda af: [af.tensor_scatter_nd_sub(T, [[0]], [[1.0, 1.0]]), af.tensor_scatter_sub(T, [[2, 1]], [3.0])],
         [scatter_ref(T, [[0]], [[1, 1]], np.subtract), scatter_ref(T, [[2, 1]], [3], np.subtract)]),
    Case("tensor_scatter_nd_max", ("TensorScatterMax",),
         lambda af: af.tensor_scatter_nd_max(T, [[0, 1], [2, 0], [2, 0]], [0.5, 10.0, 11.0]),
         scatter_ref(T, [[0, 1], [2, 0], [2, 0]], [0.5, 10, 11], np.maximum), static_shape=[4, 2]),
    Case("tensor_scatter_nd_min", ("TensorScatterMin",),
         lambda af: af.tensor_scatter_nd_min(np.int32([5, 5, 5]), [[0], [1]], np.int32([3, 9])), np.int32([3, 5, 5])),
    Case("unique_with_counts", ("UniqueWithCounts",),
         lambda af: [*af.unique_with_counts([1, 1, 4, 2, 4, 4]),
                     *af.unique_with_counts(np.array([b"b", b"a", b"b"], object), out_idx=af.int64)],
         [np.int32([1, 4, 2]), np.int32([0, 0, 1, 2, 1, 1]), np.int32([2, 3, 1]),
          np.array([b"b", b"a"], object), np.int64([0, 1, 0]), np.int64([2, 1])]),
    Case("bitcast", ("Bitcast",),
         lambda af: [af.bitcast(np.float32([1.0, -2.0]), af.uint8),
                     af.bitcast(np.uint8([[1, 0, 0, 0], [0, 0, 128, 63]]), af.float32),
                     af.bitcast(np.int32([-1, 2]), af.uint32)],
         [np.float32([1.0, -2.0]).view(np.uint8).reshape(2, 4), np.float32([1.4e-45, 1.0]),
          np.uint32([2**32 - 1, 2])], rtol=1e-2),
    Case("broadcast_dynamic_shape", ("BroadcastArgs",),
         lambda af: [af.broadcast_dynamic_shape([2, 1, 3], [4, 1]),
                     af.broadcast_dynamic_shape(np.int64([5]), np.int64([1, 1]))],
         [np.int32([2, 4, 3]), np.int64([1, 5])]),
    Case("batch_gather", ("GatherV2",),
         lambda af: [af.batch_gather(np.int32([[1, 2, 3], [4, 5, 6]]), [[2, 0], [1, 1]]),
                     af.batch_gather(np.arange(24.0).reshape(2, 3, 4), [[0], [2]]),
                     af.batch_gather([5.0, 6.0, 7.0], [2, 0])],
         [np.int32([[3, 1], [5, 5]]), np.arange(24.0).reshape(2, 3, 4)[[[0], [1]], [[0], [2]]],
          np.float32([7, 5])]),
    Case("repeat", ("GatherV2", "UpperBound", "Cumsum"),
         lambda af: [af.repeat([[1, 2], [3, 4]], [1, 3], axis=0), af.repeat([[1, 2], [3, 4]], 2),
                     af.repeat(np.arange(6.0).reshape(2, 3), [0, 2, 1], axis=-1)],
         [repeat_ref(np.int32([[1, 2], [3, 4]]), [1, 3], 0), repeat_ref(np.int32([[1, 2], [3, 4]]), 2, None),
          repeat_ref(np.arange(6.0).reshape(2, 3), [0, 2, 1], 1)]),
    Case("histogram_fixed_width_bins", ("Floor", "Assert"),
         lambda af: [af.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0, 15], [0.0, 5.0], nbins=5),
                     af.histogram_fixed_width_bins(np.float64([[0.1, 0.9], [0.5, 0.49]]), np.float64([0, 1]), nbins=2)],
         [np.int32([0, 0, 1, 2, 4, 4]), np.int32([[0, 1], [1, 0]])]),
    Case("saturate_cast", ("Cast", "Maximum", "Minimum"),
         lambda af: [af.saturate_cast([-1e10, 3e9, 5.5, 1e20], af.int32), af.saturate_cast([300, -5, 7], af.uint8),
                     af.saturate_cast(np.complex64([1 + 2j, -3e5]), af.int16)],
         # float32(2**31 - 1) rounds to 2**31, so TF clamps at the next float down, 2**31 - 128.
         [np.int32([-2**31, 2**31 - 128, 5, 2**31 - 128]), np.uint8([255, 0, 7]), np.int16([1, -32768])]),
    Case("to_complex", ("Cast",),
         lambda af: [af.to_complex64([1.0, 2.0]), af.to_complex128(np.float64([3.0]))],
         [np.complex64([1, 2]), np.complex128([3])]),
    Case("clip_by_average_norm", ("Rsqrt", "Minimum"),
         lambda af: [af.clip_by_average_norm(np.float32([[1, 2], [3, 4]]), 0.5),
                     af.clip_by_average_norm(np.float32([0.1, 0.1]), 5.0)],
         [np.float32(np.float32([[1, 2], [3, 4]]) * 0.5 / max(np.sqrt(30.0) / 4, 0.5)), np.float32([0.1, 0.1])],
         rtol=1e-5),
    Case("encode_base64", ("EncodeBase64",),
         lambda af: [af.encode_base64([b"hello", b"a", b"", b"\xff\xfe?>"]),
                     af.encode_base64([[b"hello", b"a"]], pad=True)],
         [np.array([base64.urlsafe_b64encode(s).rstrip(b"=") for s in [b"hello", b"a", b"", b"\xff\xfe?>"]], object),
          np.array([[b"aGVsbG8=", b"YQ=="]], object)]),
    Case("decode_base64", ("DecodeBase64",),
         lambda af: af.decode_base64([b"aGVsbG8", b"YQ==", b"", b"__4_Pg"]),
         np.array([b"hello", b"a", b"", b"\xff\xfe?>"], object)),
    # Fingerprints pinned with TF 2.21 (farmhash64, little-endian bytes).
    Case("fingerprint", ("Fingerprint",),
         lambda af: [af.fingerprint(np.int32([[1, 2], [3, 4]])), af.fingerprint([b"abc", b"hello world"]),
                     af.fingerprint([[b"abc", b"d"], [b"x", b"y"]])],
         [np.uint8([[76, 18, 253, 133, 168, 204, 240, 10], [254, 162, 60, 240, 103, 244, 53, 255]]),
          np.uint8([[105, 243, 231, 116, 160, 179, 165, 36], [27, 176, 214, 139, 71, 183, 143, 88]]),
          np.uint8([[42, 36, 211, 10, 152, 245, 170, 130], [186, 9, 112, 82, 61, 81, 48, 156]])]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_more_names(case):
    check_case(case)


def test_names_and_static_shapes_as_tf():
    with af.Graph().as_default():
        a = af.tensor_scatter_nd_update(T, [[1]], [[9.0, 9.0]])
        assert (a.name, a.shape.as_list()) == ("TensorScatterUpdate:0", [4, 2])
        assert af.tensor_scatter_update(T, [[0]], [[1.0, 1.0]]).name == "TensorScatterUpdate_1:0"
        f = af.fingerprint(np.int32([[1, 2], [3, 4]]))
        assert (f.name, f.shape.as_list(), f.dtype) == ("Fingerprint:0", [2, 8], af.uint8)
        y, idx, count = af.unique_with_counts([1, 2])
        assert (y.name, count.name, count.shape.as_list()) == ("UniqueWithCounts:0", "UniqueWithCounts:2", [None])
        assert af.bitcast(np.float32([1.0]), af.uint8).shape.as_list() == [1, 4]
        assert af.bitcast(np.uint8([[1, 2]]), af.int16).shape.as_list() == [1]
        assert af.broadcast_dynamic_shape([2, 1, 3], [4, 1]).shape.as_list() == [3]
        assert af.saturate_cast([1.0], af.int32).name == "saturate_cast:0"
        assert af.clip_by_average_norm([1.0], 1.0).name == "clip_by_average_norm:0"
        assert af.batch_gather([[1, 2]], [[0]]).name.startswith("BatchGather/")
        assert af.repeat([[1, 2]], 3, axis=1).shape.as_list() == [1, 6]
        assert af.to_complex64([1.0]).name == "ToComplex64:0"
        assert af.encode_base64(["a"]).name == "EncodeBase64:0"


def test_errors_as_tf():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="TensorScatterUpdate.*must match dimensions"):
            af.tensor_scatter_nd_update(T, [[1]], [[1.0, 2.0, 3.0]])
        with pytest.raises(ValueError, match="Bitcast.*last dimension"):
            af.bitcast(np.uint8([1, 2, 3]), af.int16)
        with pytest.raises(ValueError, match="unknown shape"):
            af.batch_gather([[1, 2]], af.placeholder(af.int32))
        idx = af.placeholder(af.int32)
        bad = af.tensor_scatter_nd_update(T, idx, [[1.0, 2.0]])
        dec = af.decode_base64(["ab$c"])
        shapes = af.broadcast_dynamic_shape(af.placeholder(af.int32, [None], "s"), [3])
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match=r"indices\[0\] = \[5\] does not index into"):
                sess.run(bad, {idx: [[5]]})
            with pytest.raises(af.errors.InvalidArgumentError, match="Invalid character found in base64"):
                sess.run(dec)
            with pytest.raises(af.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
                sess.run(shapes, {"s:0": [2]})
