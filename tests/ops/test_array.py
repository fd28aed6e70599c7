"""Array ops against numpy references (rows: see tests/ops/harness.py), plus `tensor[...]`, op naming,
static shapes with partially known inputs, constant folding and construction/run-time errors.

Inputs with partially known shapes are placeholders named `in0`, `in1`, ... fed by the row (see
`fed`), so a row checks the static shape TF gives for such inputs and the values for a real feed.
"""

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

DTYPES = ["float32", "int32", "int64", "bool", "string"]


def arr(dtype: str, shape: tuple[int, ...], offset: int = 0) -> np.ndarray:
    """A test array of `dtype`: distinct values (negative ones too), bytes objects for strings."""
    n = int(np.prod(shape))
    if dtype == "string":
        return np.array([f"s{i + offset}".encode() for i in range(n)] + [None], dtype=object)[:-1].reshape(shape)
    if dtype == "bool":
        return ((np.arange(n) + offset) % 3 == 0).reshape(shape)
    values = np.arange(n) - n // 2 + offset
    if dtype.startswith("float") or dtype.startswith("complex"):
        values = values + 0.5
    return values.astype(dtype).reshape(shape)


def fed(cid: str, op_types: tuple, fn, inputs: list, expect, static_shape=None, **kw) -> Case:
    """A row whose inputs are placeholders `in<i>` with the given partial shapes, fed with the values."""
    def build(af_):
        phs = [af_.placeholder(_af_dtype(v), shape, name=f"in{i}") for i, (v, shape) in enumerate(inputs)]
        return fn(af_, *phs)

    def feeds(graph):
        return {graph.get_tensor_by_name(f"in{i}:0"): v for i, (v, _) in enumerate(inputs)}

    return Case(cid, op_types, build, expect, static_shape=static_shape, feeds=feeds, **kw)


def _af_dtype(v: np.ndarray):
    return af.string if v.dtype == object else af.as_dtype(v.dtype)


X = arr("float32", (2, 3))
I3 = arr("int64", (2, 3, 4))
S = arr("string", (2, 2))

# -- sources, identity, shapes ----------------------------------------------------------------------
SOURCE_CASES = [
    Case("stop_gradient_is_identity", ("StopGradient",), lambda af: af.stop_gradient(np.arange(4.0) - 1.5),
         lambda: np.arange(4.0) - 1.5, static_shape=[4]),
    *[Case(f"const_{d}", ("Const",), lambda af, d=d: af.constant(arr(d, (2, 3))), lambda d=d: arr(d, (2, 3)),
           static_shape=[2, 3]) for d in DTYPES],
    Case("const_scalar_broadcast", ("Const",), lambda af: af.constant(7, af.int64, shape=[2, 2]),
         np.full((2, 2), 7, np.int64), static_shape=[2, 2]),
    *[fed(f"identity_{d}", ("Identity",), lambda af, x: af.identity(x), [(arr(d, (3, 2)), [None, 2])],
          lambda d=d: arr(d, (3, 2)), static_shape=[None, 2]) for d in DTYPES],
    Case("placeholder_with_default_unfed", ("PlaceholderWithDefault",),
         lambda af: af.placeholder_with_default(X, [None, 3]), X, static_shape=[None, 3]),
    Case("placeholder_with_default_fed", ("PlaceholderWithDefault",),
         lambda af: af.placeholder_with_default(X, [None, 3], name="pwd"), arr("float32", (4, 3), 5),
         static_shape=[None, 3],
         feeds=lambda g: {g.get_tensor_by_name("pwd:0"): arr("float32", (4, 3), 5)}),
    fed("shape_partial", ("Shape",), lambda af, x: af.shape(x), [(I3, [None, 3, None])],
        np.array([2, 3, 4], np.int32), static_shape=[3]),
    fed("shape_int64_unknown_rank", ("Shape",), lambda af, x: af.shape(x, out_type=af.int64), [(S, None)],
        np.array([2, 2], np.int64), static_shape=[None]),
    Case("shape_known_is_const", ("Const",), lambda af: af.shape(I3), np.array([2, 3, 4], np.int32),
         static_shape=[3]),
    fed("shape_n", ("ShapeN",), lambda af, x, y: af.shape_n([x, y], out_type=af.int64),
        [(X, [None, 3]), (arr("float32", (5,)), None)], [np.array([2, 3]), np.array([5])]),
    fed("size_partial", ("Size",), lambda af, x: af.size(x), [(I3, [2, None, 4])], np.int32(24), static_shape=[]),
    fed("size_int64", ("Size",), lambda af, x: af.size(x, out_type=af.int64), [(S, None)], np.int64(4)),
    fed("rank_unknown", ("Rank",), lambda af, x: af.rank(x), [(I3, None)], np.int32(3), static_shape=[]),
    Case("rank_known_is_const", ("Const",), lambda af: af.rank(X), np.int32(2), static_shape=[]),
]

# -- stacking, filling -------------------------------------------------------------------------------------
STACK_CASES = [
    *[fed(f"stack_{d}_axis{axis}", ("Pack",), lambda af, x, y, axis=axis: af.stack([x, y], axis=axis),
          [(arr(d, (2, 3)), [None, 3]), (arr(d, (2, 3), 1), [2, None])],
          lambda d=d, axis=axis: np.stack([arr(d, (2, 3)), arr(d, (2, 3), 1)], axis=axis),
          static_shape={0: [2, 2, 3], 1: [2, 2, 3], -1: [2, 3, 2]}[axis])
      for d in DTYPES for axis in (0, 1, -1)],
    fed("autopack_nested", ("Pack",), lambda af, x: af.convert_to_tensor([[x, 2.0], [3.0, x]]),
        [(np.float32(1.5), [])], np.array([[1.5, 2.0], [3.0, 1.5]], np.float32), static_shape=[2, 2]),
    *[fed(f"fill_{d}", ("Fill",), lambda af, dims, d=d: af.fill(dims, arr(d, (1,))[0]),
          [(np.array([2, 3], np.int32), [2])],
          lambda d=d: np.full((2, 3), arr(d, (1,))[0], dtype=arr(d, (1,)).dtype),
          static_shape=[None, None]) for d in DTYPES],
    fed("zeros_from_shape_tensor", ("Fill", "Shape"), lambda af, x: af.zeros(af.shape(x), af.int64),
        [(X, [None, 3])], np.zeros((2, 3), np.int64), static_shape=[None, 3]),
    Case("zeros_large_is_fill", ("Fill",), lambda af: af.zeros([40, 30], af.bool), np.zeros((40, 30), bool),
         static_shape=[40, 30]),
    Case("ones_small_is_const", ("Const",), lambda af: af.ones([2, 2], af.int32), np.ones((2, 2), np.int32)),
    *[fed(f"zeros_like_{d}", ("ZerosLike",), lambda af, x: af.zeros_like(x), [(arr(d, (2, 3)), [None, 3])],
          lambda d=d: np.full((2, 3), b"", dtype=object) if d == "string" else np.zeros((2, 3), d),
          static_shape=[None, 3]) for d in DTYPES],
    *[fed(f"ones_like_op_{d}", ("OnesLike",), lambda af, x: af._OPS["OnesLike"](x), [(arr(d, (2, 3)), [None, 3])],
          lambda d=d: np.ones((2, 3), d), static_shape=[None, 3]) for d in ("float32", "int64", "bool")],
    fed("ones_like_partial", ("Fill", "Shape"), lambda af, x: af.ones_like(x, dtype=af.int32),
        [(X, [None, 3])], np.ones((2, 3), np.int32), static_shape=[None, 3]),
]

# -- reshape, expand_dims, squeeze, broadcast_to -------------------------------------------------------
RESHAPE_CASES = [
    *[fed(f"reshape_{d}", ("Reshape",), lambda af, x: af.reshape(x, [3, -1]), [(arr(d, (2, 3, 2)), [None, 3, 2])],
          lambda d=d: arr(d, (2, 3, 2)).reshape(3, -1), static_shape=[3, None]) for d in DTYPES],
    fed("reshape_infers_dim", ("Reshape",), lambda af, x: af.reshape(x, [-1, 3]),
        [(arr("int32", (2, 3, 1)), [None, 3, 1])], arr("int32", (2, 3, 1)).reshape(-1, 3), static_shape=[None, 3]),
    Case("reshape_infers_from_known", ("Reshape",), lambda af: af.reshape(af.constant(I3), [4, -1, 2]),
         I3.reshape(4, -1, 2), static_shape=[4, 3, 2]),
    fed("reshape_to_shape_of", ("Reshape",), lambda af, x: af.reshape(x, af.shape(af.zeros([3, 2]))),
        [(X, None)], X.reshape(3, 2), static_shape=[3, 2]),
    fed("reshape_to_folded_shape_slice", ("Reshape", "StridedSlice", "Shape"),
        lambda af, x, y: af.reshape(x, [af.shape(y)[1], -1]),
        [(X, [2, 3]), (arr("float32", (3, 2)), [None, 2])], X.reshape(2, 3), static_shape=[2, 3]),
    *[fed(f"expand_dims_{d}_{axis}", ("ExpandDims",), lambda af, x, axis=axis: af.expand_dims(x, axis),
          [(arr(d, (2, 3)), [None, 3])], lambda d=d, axis=axis: np.expand_dims(arr(d, (2, 3)), axis),
          static_shape={0: [1, None, 3], -1: [None, 3, 1], 1: [None, 1, 3]}[axis])
      for d in ("float32", "string") for axis in (0, -1, 1)],
    Case("expand_dims_dim_alias_int64", ("ExpandDims",), lambda af: af.expand_dims(I3, dim=np.int64(-4)),
         np.expand_dims(I3, 0), static_shape=[1, 2, 3, 4]),
    fed("squeeze_all", ("Squeeze",), lambda af, x: af.squeeze(x), [(arr("int32", (1, 3, 1)), [1, 3, 1])],
        arr("int32", (3,)), static_shape=[3]),
    fed("squeeze_all_unknown", ("Squeeze",), lambda af, x: af.squeeze(x), [(arr("bool", (1, 3, 1)), [1, None, 1])],
        arr("bool", (3,)), static_shape=None),
    *[fed(f"squeeze_axis_{d}", ("Squeeze",), lambda af, x: af.squeeze(x, [0, -1]),
          [(arr(d, (1, 2, 1)), [None, None, 1])], lambda d=d: arr(d, (2,)), static_shape=[None]) for d in DTYPES],
    fed("squeeze_dims_alias", ("Squeeze",), lambda af, x: af.squeeze(x, squeeze_dims=1),
        [(arr("int64", (2, 1)), [2, 1])], arr("int64", (2,)), static_shape=[2]),
    fed("broadcast_to", ("BroadcastTo",), lambda af, x: af.broadcast_to(x, [2, 2, 3]),
        [(arr("int32", (1, 3)), [None, 3])], np.broadcast_to(arr("int32", (1, 3)), (2, 2, 3)),
        static_shape=[2, 2, 3]),
    Case("broadcast_to_string", ("BroadcastTo",), lambda af: af.broadcast_to(S[:1], [3, 2]),
         np.broadcast_to(S[:1], (3, 2)), static_shape=[3, 2]),
]

# -- slicing ----------------------------------------------------------------------------------------
SLICE_CASES = [
    *[fed(f"slice_{d}", ("Slice",), lambda af, x: af.slice(x, [0, 1, 1], [-1, 2, 2]), [(arr(d, (2, 3, 4)), None)],
          lambda d=d: arr(d, (2, 3, 4))[:, 1:3, 1:3], static_shape=[None, 2, 2]) for d in DTYPES],
    fed("slice_partial_size", ("Slice",), lambda af, x: af.slice(x, [1, 0], [1, -1]), [(X, [None, 3])],
        X[1:2, :], static_shape=[1, 3]),
    fed("slice_int64_begin_tensor", ("Slice",), lambda af, x, b: af.slice(x, b, np.array([1, -1], np.int64)),
        [(X, [2, 3]), (np.array([1, 1], np.int64), [2])], X[1:2, 1:], static_shape=[1, None]),
    *[fed(f"strided_slice_{d}", ("StridedSlice",), lambda af, x: x[::-1, 1:, None, ::2],
          [(arr(d, (2, 3, 4)), [None, 3, 4])], lambda d=d: arr(d, (2, 3, 4))[::-1, 1:, None, ::2],
          static_shape=[None, 2, 1, 2]) for d in DTYPES],
    Case("strided_slice_masks", ("StridedSlice",),
         lambda af: af.strided_slice(I3, [1, 2], [0, 0], [1, -2], begin_mask=1, end_mask=3),
         I3[:, 2::-2], static_shape=[2, 2, 4]),
    Case("strided_slice_empty_interval", ("StridedSlice",), lambda af: af.strided_slice(I3, [0, 0], [2, 5], [1, -2]),
         I3[0:2, 0:5:-2], static_shape=[2, 0, 4]),
    Case("strided_slice_default_strides", ("StridedSlice", "Fill"), lambda af: af.strided_slice(I3, [0, 1], [2, 3]),
         I3[0:2, 1:3], static_shape=[2, 2, 4]),
    Case("strided_slice_shrink_newaxis_ellipsis", ("StridedSlice",),
         lambda af: af.strided_slice(I3, [0, 0, -1], [0, 0, 0], [1, 1, 1], ellipsis_mask=2, new_axis_mask=1,
                                     shrink_axis_mask=4),
         I3[None, ..., -1], static_shape=[1, 2, 3]),
]


def _getitem_case(cid: str, index, shape=(4, 3, 5), known=(None, 3, None), static=None) -> Case:
    value = arr("int32", shape)
    return fed(f"getitem_{cid}", ("StridedSlice",), lambda af, x: x[index], [(value, list(known))],
               lambda: value[index], static_shape=static)


GETITEM_CASES = [
    _getitem_case("int", 1, static=[3, None]),
    _getitem_case("neg_int", -1, static=[3, None]),
    _getitem_case("from_1", np.s_[1:], static=[None, 3, None]),
    _getitem_case("reverse", np.s_[::-1], static=[None, 3, None]),
    _getitem_case("reverse_step2", np.s_[::-2], static=[None, 3, None]),
    _getitem_case("ellipsis_0", np.s_[..., 0], static=[None, 3]),
    _getitem_case("newaxis_int", np.s_[None, :, 1], static=[1, None, None]),
    _getitem_case("range_step", np.s_[1:3, ::2], static=[None, 2, None]),
    _getitem_case("colon_newaxis", np.s_[:, None], static=[None, 1, 3, None]),
    _getitem_case("known_range_step", np.s_[1:3, ::2], known=(4, 3, 5), static=[2, 2, 5]),
    _getitem_case("negative_bounds", np.s_[-3:-1, -1:0:-1, -2], known=(4, 3, 5), static=[2, 2]),
    _getitem_case("clamped_bounds", np.s_[-10:10, 5:], known=(4, 3, 5), static=[4, 0, 5]),
    _getitem_case("empty_reverse", np.s_[-10::-1], known=(4, 3, 5), static=[0, 3, 5]),
    _getitem_case("ellipsis_middle", np.s_[1, ..., ::-3], known=(4, 3, 5), static=[3, 2]),
    _getitem_case("numpy_int", np.int64(2), known=(4, 3, 5), static=[3, 5]),
    _getitem_case("all", np.s_[...], known=(4, 3, 5), static=[4, 3, 5]),
    fed("getitem_tensor_index", ("StridedSlice", "Pack", "AddV2"), lambda af, x, i: x[i, 1:],
        [(arr("float32", (4, 3)), [None, 3]), (np.int32(2), [])], arr("float32", (4, 3))[2, 1:],
        static_shape=[None]),  # a begin that is not constant leaves the sliced dims unknown, as in TF
    fed("getitem_tensor_bounds_int64", ("StridedSlice", "Pack", "Cast"), lambda af, x, i: x[:, i:],
        [(arr("float32", (4, 3)), [4, 3]), (np.int64(1), [])], arr("float32", (4, 3))[:, 1:],
        static_shape=[4, None]),
]

# -- concat / unstack / split ------------------------------------------------------------------------------
CONCAT_CASES = [
    *[fed(f"concat_{d}", ("ConcatV2",), lambda af, x, y: af.concat([x, y], 0),
          [(arr(d, (1, 3)), [None, 3]), (arr(d, (2, 3), 7), [2, 3])],
          lambda d=d: np.concatenate([arr(d, (1, 3)), arr(d, (2, 3), 7)], 0), static_shape=[None, 3])
      for d in DTYPES],
    fed("concat_neg_axis", ("ConcatV2",), lambda af, x, y: af.concat([x, y, x], -1),
        [(X, [2, None]), (arr("float32", (2, 1)), None)], np.concatenate([X, arr("float32", (2, 1)), X], -1),
        static_shape=[2, None]),
    Case("concat_int64_axis_known", ("ConcatV2",), lambda af: af.concat([I3, I3], np.int64(1)),
         np.concatenate([I3, I3], 1), static_shape=[2, 6, 4]),
    fed("concat_axis_tensor", ("ConcatV2",), lambda af, x, a: af.concat([x, x], a), [(X, [2, 3]), (np.int32(1), [])],
        np.concatenate([X, X], 1), static_shape=[None, None]),
    Case("concat_single_is_identity", ("Identity",), lambda af: af.concat([X], 0), X, static_shape=[2, 3]),
    *[fed(f"unstack_{d}_axis{axis}", ("Unpack",), lambda af, x, axis=axis: af.unstack(x, axis=axis),
          [(arr(d, (2, 3, 4)), [2, 3, 4])], lambda d=d, axis=axis: list(np.moveaxis(arr(d, (2, 3, 4)), axis, 0)))
      for d in ("float32", "string") for axis in (0, 1, -1)],
    fed("unstack_num_given", ("Unpack",), lambda af, x: af.unstack(x, num=2), [(X, [None, 3])], list(X)),
    *[fed(f"split_{d}", ("Split",), lambda af, x: af.split(x, 2, axis=-1), [(arr(d, (3, 4)), [None, 4])],
          lambda d=d: np.split(arr(d, (3, 4)), 2, axis=-1)) for d in ("float32", "int64", "bool", "string")],
    Case("split_shapes", ("Split",), lambda af: af.split(af.placeholder_with_default(I3, [None, 3, 4]), 3, axis=1)[0],
         I3[:, :1], static_shape=[None, 1, 4]),
    *[fed(f"split_sizes_{d}", ("SplitV",), lambda af, x: af.split(x, [1, -1, 1], axis=1),
          [(arr(d, (2, 5)), [2, 5])], lambda d=d: np.split(arr(d, (2, 5)), [1, 4], axis=1))
      for d in ("int32", "string")],
    Case("split_sizes_unknown_dim", ("SplitV",),
         lambda af: af.split(af.placeholder_with_default(I3, [None, 3, 4]), [1, -1], axis=0)[1],
         I3[1:], static_shape=[None, 3, 4]),
    Case("split_sizes_tensor", ("SplitV",), lambda af: af.split(X, af.constant([2, 1]), axis=1),
         np.split(X, [2], axis=1)),
    Case("split_middle_axis_with_empty_pieces", ("Split", "SplitV"),
         lambda af: af.split(I3, 3, axis=1) + af.split(I3, [0, 3, 0, 1], axis=-1),
         np.split(I3, 3, axis=1) + np.split(I3, [0, 3, 3], axis=-1)),
]

# -- tile / pad / transpose / reverse -------------------------------------------------------------------------
MANIP_CASES = [
    *[fed(f"tile_{d}", ("Tile",), lambda af, x: af.tile(x, [2, 3]), [(arr(d, (2, 2)), [None, 2])],
          lambda d=d: np.tile(arr(d, (2, 2)), [2, 3]), static_shape=[None, 6]) for d in DTYPES],
    fed("tile_multiples_tensor", ("Tile",), lambda af, x, m: af.tile(x, m), [(X, [2, 3]), (np.array([1, 2]), [2])],
        np.tile(X, [1, 2]), static_shape=[None, None]),
    *[fed(f"pad_{d}", ("Pad",), lambda af, x: af.pad(x, [[1, 0], [0, 2]]), [(arr(d, (2, 3)), [None, 3])],
          lambda d=d: np.pad(arr(d, (2, 3)), [[1, 0], [0, 2]], constant_values=b"" if d == "string" else 0),
          static_shape=[None, 5]) for d in DTYPES],
    Case("pad_v2_int", ("PadV2",), lambda af: af.pad(I3, [[0, 1], [1, 0], [0, 0]], constant_values=-9),
         np.pad(I3, [[0, 1], [1, 0], [0, 0]], constant_values=-9), static_shape=[3, 4, 4]),
    Case("pad_v2_string", ("PadV2",), lambda af: af.pad(S, [[1, 0], [0, 1]], constant_values="z"),
         np.pad(S, [[1, 0], [0, 1]], constant_values=b"z"), static_shape=[3, 3]),
    Case("pad_unknown_paddings", ("Pad",), lambda af: af.pad(X, af.placeholder_with_default([[1, 1], [0, 2]], [2, 2])),
         np.pad(X, [[1, 1], [0, 2]]), static_shape=[None, None]),
    *[fed(f"mirror_pad_{mode.lower()}", ("MirrorPad",), lambda af, x, mode=mode: af.pad(x, [[1, 1], [2, 1]], mode=mode),
          [(arr("float32", (3, 3)), [None, 3])], lambda mode=mode: np.pad(arr("float32", (3, 3)), [[1, 1], [2, 1]],
                                                                          mode=mode.lower()),
          static_shape=[None, 6]) for mode in ("REFLECT", "SYMMETRIC")],
    *[fed(f"transpose_{d}", ("Transpose",), lambda af, x: af.transpose(x), [(arr(d, (2, 3, 4)), [None, 3, 4])],
          lambda d=d: np.transpose(arr(d, (2, 3, 4))), static_shape=[4, 3, None]) for d in DTYPES],
    fed("transpose_perm", ("Transpose",), lambda af, x: af.transpose(x, [1, 2, 0]), [(I3, [2, None, 4])],
        np.transpose(I3, [1, 2, 0]), static_shape=[None, 4, 2]),
    fed("transpose_perm_int64_tensor", ("Transpose",), lambda af, x, p: af.transpose(x, p),
        [(I3, [2, 3, 4]), (np.array([2, 0, 1], np.int64), [3])], np.transpose(I3, [2, 0, 1]),
        static_shape=[None, None, None]),
    Case("transpose_conjugate", ("ConjugateTranspose",),
         lambda af: af.transpose(arr("complex64", (2, 3)) * (1 + 1j), conjugate=True),
         lambda: np.conj(arr("complex64", (2, 3)) * (1 + 1j)).T.astype(np.complex64), static_shape=[3, 2]),
    *[fed(f"reverse_{d}", ("ReverseV2",), lambda af, x: af.reverse(x, [0, -1]), [(arr(d, (2, 3, 4)), [None, 3, 4])],
          lambda d=d: arr(d, (2, 3, 4))[::-1, :, ::-1], static_shape=[None, 3, 4]) for d in DTYPES],
    Case("reverse_v2_no_axes", ("ReverseV2",), lambda af: af.reverse_v2(X, np.zeros([0], np.int64)), X),
]

# -- indexing ops -------------------------------------------------------------------------------------------
IDX = np.array([[2, 0], [1, 1]], np.int32)

INDEX_CASES = [
    fed("one_hot_default", ("OneHot",), lambda af, i: af.one_hot(i, 4), [(np.array([0, 3, -1, 7], np.int32), [None])],
        lambda: _one_hot_ref([0, 3, -1, 7], 4, np.float32(1), np.float32(0), -1), static_shape=[None, 4]),
    fed("one_hot_axis0_int64", ("OneHot",), lambda af, i: af.one_hot(i, 3, axis=0, dtype=af.int64),
        [(IDX.astype(np.int64), [2, None])],
        lambda: _one_hot_ref(IDX, 3, np.int64(1), np.int64(0), 0), static_shape=[3, 2, None]),
    fed("one_hot_axis1_on_off", ("OneHot",), lambda af, i: af.one_hot(i, 3, on_value=5, off_value=-1, axis=1),
        [(IDX.astype(np.uint8), [None, 2])],
        lambda: _one_hot_ref(IDX, 3, np.int32(5), np.int32(-1), 1), static_shape=[None, 3, 2]),
    Case("one_hot_bool", ("OneHot",), lambda af: af.one_hot([1, 2], 3, on_value=True, off_value=False),
         lambda: _one_hot_ref([1, 2], 3, np.bool_(True), np.bool_(False), -1), static_shape=[2, 3]),
    Case("one_hot_string", ("OneHot",), lambda af: af.one_hot([1], 2, on_value="on", off_value="off"),
         lambda: _one_hot_ref([1], 2, np.array(b"on", object), np.array(b"off", object), -1), static_shape=[1, 2]),
    *[fed(f"gather_{d}_axis{axis}", ("GatherV2",), lambda af, p, i, axis=axis: af.gather(p, i, axis=axis),
          [(arr(d, (3, 3, 2)), [None, 3, 2]), (IDX, [2, None])],
          lambda d=d, axis=axis: np.take(arr(d, (3, 3, 2)), IDX, axis=axis),
          static_shape={0: [2, None, 3, 2], 1: [None, 2, None, 2], -2: [None, 2, None, 2]}[axis])
      for d in DTYPES for axis in (0, 1, -2)],
    Case("gather_scalar_index_int64", ("GatherV2",), lambda af: af.gather(X, np.int64(2), axis=-1), X[:, 2],
         static_shape=[2]),
    Case("gather_scalar_index_middle_axis", ("GatherV2",),
         lambda af: [af.gather(I3, 1, axis=1), af.gather(I3, np.int64(1)), af.gather(I3[0, 0], 3)],
         [I3[:, 1], I3[1], I3[0, 0, 3]]),
    Case("gather_batch_dims", ("GatherV2",), lambda af: af.gather(I3, [[0, 3], [2, 0]], axis=2, batch_dims=1),
         lambda: np.stack([np.take(I3[b], [[0, 3], [2, 0]][b], axis=1) for b in range(2)]), static_shape=[2, 3, 2]),
    Case("gather_negative_batch_dims", ("GatherV2",),
         lambda af: af.gather(I3, [[0, 1], [2, 0]], axis=1, batch_dims=-1),
         lambda: np.stack([np.take(I3[b], [[0, 1], [2, 0]][b], axis=0) for b in range(2)]), static_shape=[2, 2, 4]),
    Case("gather_unknown_axis", ("GatherV2",), lambda af: af.gather(I3, [[2]], axis=af.placeholder_with_default(1, [])),
         np.take(I3, [[2]], axis=1), static_shape=[None, None, None, None]),
    *[fed(f"gather_nd_{d}", ("GatherNd",), lambda af, p, i: af.gather_nd(p, i),
          [(arr(d, (2, 3, 2)), [None, 3, 2]), (np.array([[1, 2], [0, 0], [1, 1]], np.int64), [None, 2])],
          lambda d=d: arr(d, (2, 3, 2))[[1, 0, 1], [2, 0, 1]], static_shape=[None, 2]) for d in DTYPES],
    Case("gather_nd_full_index", ("GatherNd",), lambda af: af.gather_nd(I3, [[[1, 2, 3]], [[0, 0, 1]]]),
         I3[[[1], [0]], [[2], [0]], [[3], [1]]], static_shape=[2, 1]),
    Case("gather_nd_empty_index", ("GatherNd",), lambda af: af.gather_nd(X, np.zeros((2, 0), np.int32)),
         np.stack([X, X]), static_shape=[2, 2, 3]),
    fed("scatter_nd_duplicates_sum", ("ScatterNd",), lambda af, i, u: af.scatter_nd(i, u, [4, 2]),
        [(np.array([[1], [3], [1]], np.int32), [None, 1]), (arr("float32", (3, 2)), [None, 2])],
        lambda: _scatter_ref([[1], [3], [1]], arr("float32", (3, 2)), (4, 2)), static_shape=[4, 2]),
    Case("scatter_nd_int64_elements", ("ScatterNd",), lambda af: af.scatter_nd(np.array([[0, 1], [1, 0]]),
                                                                           np.array([5, 7], np.int64), [2, 2]),
         np.array([[0, 5], [7, 0]], np.int64), static_shape=[2, 2]),
    Case("scatter_nd_bool", ("ScatterNd",), lambda af: af.scatter_nd([[0], [0], [2]], [True, True, False], [3]),
         np.array([True, False, False]), static_shape=[3]),
    Case("scatter_nd_string", ("ScatterNd",), lambda af: af.scatter_nd([[0], [2]], ["a", "b"], [3]),
         np.array([b"a", b"", b"b"], dtype=object), static_shape=[3]),
    fed("unsorted_segment_sum", ("UnsortedSegmentSum",), lambda af, d, s: af.unsorted_segment_sum(d, s, 4),
        [(I3, [2, 3, None]), (np.array([[0, 1, 0], [3, 3, -1]], np.int32), [2, 3])],
        lambda: _segment_ref(I3, np.array([[0, 1, 0], [3, 3, -1]]), 4), static_shape=[4, None]),
    Case("unsorted_segment_sum_float_unknown_num", ("UnsortedSegmentSum",),
         lambda af: af.unsorted_segment_sum(X, np.array([1, 1], np.int64), af.placeholder_with_default(3, [])),
         lambda: _segment_ref(X, np.array([1, 1]), 3), static_shape=[None, 3]),
    *[fed(f"dynamic_partition_{d}", ("DynamicPartition",), lambda af, x, p: af.dynamic_partition(x, p, 3),
          [(arr(d, (4, 2)), [None, 2]), (np.array([2, 0, 2, 1], np.int32), [None])],
          lambda d=d: [arr(d, (4, 2))[np.array([2, 0, 2, 1]) == i] for i in range(3)]) for d in ("float32", "string")],
    Case("dynamic_stitch_later_wins", ("DynamicStitch",),
         lambda af: af.dynamic_stitch([[0, 2], [[2], [4]]], [arr("int64", (2, 2)), arr("int64", (2, 1, 2), 9)]),
         lambda: _stitch_ref([[0, 2], [2, 4]], [arr("int64", (2, 2)), arr("int64", (2, 2), 9)], 5),
         static_shape=[5, 2]),
]


def _one_hot_ref(indices, depth, on, off, axis):
    """out[..., j, ...] = on where indices[...] == j (j at `axis`), off elsewhere (out-of-range rows all off)."""
    indices = np.asarray(indices)
    out = np.empty(indices.shape + (depth,), dtype=np.asarray(on).dtype)
    for pos in np.ndindex(indices.shape):
        for j in range(depth):
            out[pos + (j,)] = on if indices[pos] == j else off
    return np.moveaxis(out, -1, indices.ndim if axis == -1 else axis)


def _scatter_ref(indices, updates, shape):
    out = np.zeros(shape, updates.dtype)
    np.add.at(out, tuple(np.asarray(indices).T), updates)
    return out


def _segment_ref(data, ids, num):
    out = np.zeros((num,) + data.shape[ids.ndim:], data.dtype)
    for pos in np.ndindex(ids.shape):
        if ids[pos] >= 0:
            out[ids[pos]] += data[pos]
    return out


def _stitch_ref(indices, data, size):
    out = np.zeros((size,) + data[0].shape[1:], data[0].dtype)
    for idx, rows in zip(indices, data):
        for i, row in zip(idx, rows):
            out[i] = row
    return out


CASES = (SOURCE_CASES + STACK_CASES + RESHAPE_CASES + SLICE_CASES + GETITEM_CASES + CONCAT_CASES + MANIP_CASES
         + INDEX_CASES)


@pytest.mark.parametrize("case", case_params(CASES))
def test_array(case):
    check_case(case)


def _random_index(rng: np.random.Generator, rank: int) -> tuple:
    def bound():
        return None if rng.random() < 0.4 else int(rng.integers(-6, 7))

    spec, ellipsis = [], False
    for _ in range(int(rng.integers(0, rank + 2))):
        r = rng.random()
        if r < 0.25:
            spec.append(int(rng.integers(-3, 3)))
        elif r < 0.35 and not ellipsis:
            spec.append(Ellipsis)
            ellipsis = True
        elif r < 0.45:
            spec.append(None)
        else:
            spec.append(slice(bound(), bound(), [None, 1, 2, 3, -1, -2][int(rng.integers(0, 6))]))
    return tuple(spec)


def test_getitem_matches_numpy_on_random_indices():
    """Values equal numpy's basic indexing; the static shape is numpy's where the input's dims are known."""
    rng = np.random.default_rng(1234)
    checked = 0
    while checked < 150:
        shape = tuple(int(d) for d in rng.integers(0, 5, size=int(rng.integers(1, 4))))
        index = _random_index(rng, len(shape))
        value = arr("int32", shape)
        try:
            want = value[index]
        except IndexError:
            continue
        known = [d if rng.random() < 0.6 else None for d in shape]
        with af.Graph().as_default():
            x = af.placeholder(af.int32, known)
            out = x[index]
            static = out.shape.as_list()
            with af.Session() as sess:
                got = sess.run(out, {x: value})
        np.testing.assert_array_equal(got, want, err_msg=f"x{list(shape)}[{index}]")
        assert got.shape == want.shape and out.shape.is_compatible_with(want.shape), (index, static)
        if None not in known:
            assert static == list(want.shape), f"x{list(shape)}[{index}]: static {static} != {want.shape}"
        checked += 1


# -- op naming (TF1's, including the ops the Python wrappers create) ----------------------------------------------
def _names(graph):
    return [(o.name, o.type) for o in graph.get_operations()]


def test_getitem_names_and_consts_follow_tf():
    g = af.Graph()
    with g.as_default():
        x = af.constant(X)
        a, b = x[1], x[:, ::-1]
        assert (a.op.name, b.op.name) == ("strided_slice", "strided_slice_1")
        assert a.op.type == "StridedSlice"
        assert [t.op.name for t in a.op.inputs[1:]] == ["strided_slice/stack", "strided_slice/stack_1",
                                                        "strided_slice/stack_2"]
        assert [t.op.type for t in a.op.inputs[1:]] == ["Const"] * 3
        assert a.op.get_attr("shrink_axis_mask") == 1
        assert (b.op.get_attr("begin_mask"), b.op.get_attr("end_mask")) == (3, 3)
        i = af.placeholder(af.int32, [])
        c = x[i]
        assert c.op.inputs[1].op.type == "Pack" and c.op.inputs[2].op.inputs[0].op.name == "add"
        scalar = af.constant(S)[1, 0]  # a string scalar comes back as bytes, as in TF
        assert scalar.shape.as_list() == []
        with af.Session() as sess:
            assert sess.run(scalar) == S[1, 0]


def test_wrappers_name_ops_as_tf():
    g = af.Graph()
    with g.as_default():
        single = af.concat([X], 0)
        assert (single.op.name, single.op.type) == ("concat/concat", "Identity")
        joined = af.concat([X, X], 0)
        assert joined.op.name == "concat_1"
        assert [t.op.name for t in joined.op.inputs] == ["concat_1/values_0", "concat_1/values_1", "concat_1/axis"]
        assert af.split(X, 3, axis=1)[0].op.name == "split"
        assert af.split(X, [1, 2], axis=1)[0].op.type == "SplitV"
        assert af.unstack(X)[0].name == "unstack:0"
        assert af.transpose(X).op.name == "transpose"
        assert af.one_hot([1], 2).op.name == "one_hot"
        assert af.gather(X, [0]).op.name == "GatherV2"
        assert af.pad(X, [[1, 1], [0, 0]], mode="reflect").op.get_attr("mode") == "REFLECT"
        assert af.pad(X, [[1, 1], [0, 0]], constant_values=1.0).op.type == "PadV2"
        assert af.stack([1, 2]).op.type == "Const"
        assert af.shape(X).op.name == "Shape" and af.shape(X).op.type == "Const"
        assert af.squeeze(np.zeros((1, 2)), axis=0).op.get_attr("squeeze_dims") == [0]
        expanded = af.expand_dims(X, 0)
        assert [t.op.name for t in expanded.op.inputs] == ["ExpandDims/input", "ExpandDims/dim"]


def test_convert_to_tensor_autopacks_lists_with_tensors():
    g = af.Graph()
    with g.as_default():
        t1 = af.constant(1.0)
        packed = af.convert_to_tensor([t1, 2.0])
        assert (packed.op.name, packed.op.type, packed.shape.as_list()) == ("packed", "Pack", [2])
        assert [t.op.name for t in packed.op.inputs] == ["Const", "packed/1"]
        nested = af.convert_to_tensor([[t1, 2.0], [3.0, 4.0]])
        assert nested.op.name == "packed_1" and nested.op.inputs[0].op.name == "packed_1/0"
        stacked = af.stack([t1, 5.0])
        assert (stacked.op.name, stacked.op.inputs[1].op.name) == ("stack", "stack/1")
        cast = af.convert_to_tensor([af.constant(1), 2], dtype=af.float32)
        assert cast.dtype == af.float32 and cast.op.inputs[0].op.type == "Cast"
        with af.Session() as sess:
            np.testing.assert_array_equal(sess.run(nested), [[1.0, 2.0], [3.0, 4.0]])
            np.testing.assert_array_equal(sess.run(cast), [1.0, 2.0])
        with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of dtype float32 to int32"):
            af.convert_to_tensor([af.constant(1), af.constant(1.0)])


def test_shape_size_rank_fold_to_consts_when_known():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.float32, [None, 0])
        assert af.size(p).op.type == "Const"  # a zero dim makes the size known
        assert af.rank(p).op.type == "Const"
        assert af.shape(p).op.type == "Shape"
        ones = af.ones_like(af.placeholder(af.int32, [None, 3]))
        assert ones.op.type == "Fill" and ones.shape.as_list() == [None, 3]


def test_gather_reads_a_variables_snapshot():
    g = af.Graph()
    with g.as_default():
        w = af.Variable(X, name="w")
        out = af.gather(w, [1, 1])
        assert out.op.inputs[0].op.name == "w/read"
        with af.Session() as sess:
            sess.run(af.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(out), X[[1, 1]])


# -- boolean_mask (composed from Reshape, Where, Squeeze and GatherV2, as TF) ------------------------------------
@pytest.mark.parametrize("axis,mask_shape", [(None, (2,)), (0, (2, 3)), (1, (3,)), (1, (3, 4))])
def test_boolean_mask_matches_numpy(axis, mask_shape):
    mask = arr("bool", mask_shape, 1)
    g = af.Graph()
    with g.as_default():
        out = af.boolean_mask(I3, mask, axis=axis)
        assert out.op.name == "boolean_mask/GatherV2"
        a = axis or 0
        want = I3[(slice(None),) * a + (mask,)]
        assert out.shape.as_list() == [*want.shape[:a], None, *want.shape[a + 1:]]
        with af.Session() as sess:
            np.testing.assert_array_equal(sess.run(out), want)


def test_boolean_mask_with_partial_shapes_and_bool_getitem():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.string, [None, 2])
        m = af.placeholder(af.bool, [None])
        out = af.boolean_mask(x, m)
        by_index = x[m]
        assert out.shape.as_list() == [None, 2]
        with af.Session() as sess:
            got, got2 = sess.run([out, by_index], {x: np.array([[b"a", b"b"], [b"c", b"d"], [b"e", b"f"]], object),
                                                   m: [True, False, True]})
        np.testing.assert_array_equal(got, [[b"a", b"b"], [b"e", b"f"]])
        np.testing.assert_array_equal(got2, got)
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        af.boolean_mask(X, True)
    with pytest.raises(ValueError, match="incompatible"):
        af.boolean_mask(I3, [True, False], axis=1)


def test_transpose_of_unknown_rank_builds_a_range():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.int64)
        out = af.transpose(x)
        assert out.op.inputs[1].op.type == "Range"
        with af.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {x: I3}), I3.T)


# -- construction-time errors: ValueError naming the op and the shapes -----------------------------------------------
def _build(fn):
    with af.Graph().as_default():
        return fn()


@pytest.mark.parametrize("fn,match", [
    (lambda: af.concat([af.placeholder(af.float32, [None, 4]), X], 0),
     r"ConcatV2 'concat': Dimension 1 in both shapes must be equal, but are 4 and 3.*\(\?, 4\).*\(2, 3\)"),
    (lambda: af.concat([X, [1.0, 2.0]], 0), r"ConcatV2 'concat': Shape must be rank 2 but is rank 1"),
    (lambda: af.concat([1.0, 2.0], 0), r"ConcatV2 'concat': Can't concatenate scalars"),
    (lambda: af.concat([X, X], 2), r"ConcatV2 'concat': axis 2 is out of range"),
    (lambda: af.tile(X, [2, 1, 1]), r"Tile 'Tile': Shape must be rank 2 but is rank 3.*\(2, 3\)"),
    (lambda: af.transpose(X, [1, 0, 2]), r"Transpose 'transpose': Dimension must be 2 but is 3.*\(2, 3\)"),
    (lambda: af.transpose(X, [0, 2]), r"Transpose 'transpose': perm dim 2 is out of range of input rank 2"),
    (lambda: af.split(X, 2, axis=1), r"Split 'split': Dimension size must be evenly divisible by 2 but is 3"),
    (lambda: af.split(X, [1, 1], axis=1), r"SplitV 'split': can't split axis of size 3 into pieces of size \[1, 1\]"),
    (lambda: af.split(X, [-1, -1], axis=1), r"SplitV 'split': size_splits can only have one -1"),
    (lambda: af.squeeze(X, [1]), r"Squeeze 'Squeeze': Can not squeeze dim\[1\], expected a dimension of 1, got 3"),
    (lambda: af.squeeze(X, [2]), r"Squeeze 'Squeeze': squeeze_dims\[0\] not in \[-2,2\)"),
    (lambda: af.expand_dims(X, 3), r"ExpandDims 'ExpandDims': dim 3 not in the interval \[-3, 2\]"),
    (lambda: af.reshape(X, [4, 2]), r"Reshape 'Reshape': Cannot reshape a tensor with 6 elements .* \(8 elements\)"),
    (lambda: af.reshape(X, [4, -1]), r"Reshape 'Reshape': .*evenly divisible by 4 but is 6"),
    # as TF: the failed attempt to make one Const leaves a Const `stack`, so the Pack is `stack_1`
    (lambda: af.stack([X, X.T]), r"Pack 'stack_1': Shapes \(2, 3\) and \(3, 2\) are incompatible"),
    (lambda: af.stack([X, X], axis=3), r"Argument `axis` = 3 not in range \[-3, 3\)"),
    (lambda: af.gather(X, [0], axis=2), r"GatherV2 'GatherV2': axis 2 is out of range for params of shape \(2, 3\)"),
    (lambda: af.gather_nd(X, [[1, 0, 0]]), r"GatherNd 'GatherNd': indices.shape\[-1\] must be <= params.rank"),
    (lambda: af.scatter_nd([[1]], [1.0, 2.0], [3]), r"ScatterNd 'ScatterNd': Dimensions \[0,1\) of indices"),
    (lambda: af.scatter_nd([[1]], [[1.0, 2.0]], [3, 3]), r"ScatterNd 'ScatterNd': updates.shape\[1:\]"),
    (lambda: X_t()[5], r"StridedSlice 'strided_slice': slice index 5 of dimension 0 out of bounds"),
    (lambda: X_t()[1, 2, 3], r"StridedSlice 'strided_slice': Index out of range using input dim 2"),
    (lambda: X_t()[::0], r"StridedSlice 'strided_slice': strides\[0\] must be non-zero"),
    (lambda: af.constant(1.0)[0], r"StridedSlice 'strided_slice': Attempting to slice scalar input"),
    (lambda: af.slice(X, [3, 0], [-1, -1]), r"Slice 'Slice': begin\[0\] = 3 is past the end"),
    (lambda: af.one_hot([1], -1), r"OneHot 'one_hot': depth must be non-negative"),
    (lambda: af.reverse(X, [1, -1]), r"ReverseV2 'ReverseV2': axis 1 specified more than once"),
    (lambda: af.reverse(X, [2]), r"ReverseV2 'ReverseV2': 'axis'\[0\] = 2 is out of valid range"),
    (lambda: af.pad(X, [[-1, 0], [0, 0]]), r"Pad 'Pad': Paddings must be non-negative"),
    (lambda: af.pad(X, [[1, 0]]), r"Pad 'Pad': paddings must have one row per input dimension"),
    (lambda: af.placeholder_with_default(X, [3, None]),
     r"PlaceholderWithDefault 'PlaceholderWithDefault': the default value has shape \(2, 3\)"),
    (lambda: af.fill([2], [1.0, 2.0]), r"Fill 'Fill': Shape must be rank 0 but is rank 1 for 'value'"),
    (lambda: af.broadcast_to([1, 2, 3], [2, 4]),
     r"BroadcastTo 'BroadcastTo': Dimensions must be equal, but are 4 and 3"),
    (lambda: af.unstack(af.placeholder(af.float32, [None, 3])), r"Cannot infer argument `num` from shape \(\?, 3\)"),
    (lambda: af.unstack(X, num=3), r"Unpack 'unstack': Dimension must be 3 but is 2"),
    (lambda: af.unstack(X, axis=2), r"Argument `axis` = 2 not in range \[-2, 2\)"),
    (lambda: af.split(X, 0), r"Attr 'num_split' of 'Split' Op passed 0 less than minimum 1"),
    (lambda: af.squeeze(X, axis=[0], squeeze_dims=[0]), r"Cannot specify both 'squeeze_dims' and 'axis'"),
    (lambda: af.unsorted_segment_sum(X, [0, 0, 0], 2),
     r"UnsortedSegmentSum 'UnsortedSegmentSum': data.shape must start"),
])
def test_construction_errors_name_the_op_and_shapes(fn, match):
    with pytest.raises(ValueError, match=match):
        _build(fn)


def X_t():
    return af.constant(X)


def test_one_hot_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="dtype int32 of on_value does not match dtype float32 of off_value"):
        _build(lambda: af.one_hot([1], 3, on_value=1, off_value=0.0))
    with pytest.raises(TypeError, match="dtype float32 of on_value does not match dtype parameter int32"):
        _build(lambda: af.one_hot([1], 3, on_value=1.0, dtype=af.int32))


# -- run-time errors: InvalidArgumentError naming the op ---------------------------------------------------------------
def _partial(value, shape, name="in"):
    return af.placeholder(_af_dtype(np.asarray(value)), shape, name=name)


@pytest.mark.parametrize("fn,feed,match", [
    (lambda x: af.gather(x, [0, 5]), X, r"GatherV2 'GatherV2'.*indices\[1\] = 5 is not in \[0, 2\)"),
    (lambda x: af.gather(x, [[0, -1]], axis=1), X, r"indices\[0,1\] = -1 is not in \[0, 3\)"),
    (lambda x: af.gather_nd(x, [[1, 3]]), X, r"GatherNd 'GatherNd'.*indices\[0\] = \[1, 3\] does not index into "
                                              r"param shape \[2,3\]"),
    (lambda x: af.scatter_nd([[5]], x[0, :1], [3]), X, r"ScatterNd 'ScatterNd'.*indices\[0\] = \[5\] does not index"),
    (lambda x: x[5], X, r"StridedSlice 'strided_slice'.*slice index 5 of dimension 0 out of bounds"),
    (lambda x: af.slice(x, [1, 0], [2, -1]), X, r"Slice 'Slice'.*Expected size\[0\] in \[0, 1\], but got 2"),
    (lambda x: af.slice(x, [-1, 0], [1, -1]), X, r"Expected begin\[0\] in \[0, 2\], but got -1"),
    (lambda x: af.reshape(x, [4, -1]), X, r"Reshape 'Reshape'.*requires a multiple of 4"),
    (lambda x: af.reshape(x, [-1, -1]), X, r"Only one input size may be -1, not both 0 and 1"),
    (lambda x: af.tile(x, af.placeholder_with_default([2, -1], [2])), X, r"Expected multiples\[1\] >= 0, but got -1"),
    (lambda x: af.pad(x, [[2, 0], [0, 0]], mode="REFLECT"), X,
     r"MirrorPad 'MirrorPad'.*paddings must be less than the dimension size: 2, 0 not less than 2"),
    (lambda x: af.pad(x, [[3, 0], [0, 0]], mode="SYMMETRIC"), X, r"must be no greater than the dimension size"),
    (lambda x: af.transpose(x, [0, 0]), X, r"Transpose 'transpose'.*1 is missing from \{0,0\}"),
    (lambda x: af.squeeze(x, [0]), X, r"Squeeze 'Squeeze'.*Can not squeeze dim\[0\], expected a dimension of 1, got 2"),
    (lambda x: af.concat([x, np.ones((2, 2), np.float32)], 0), X,
     r"ConcatV2 'concat'.*Dimension 1 in both shapes must be equal: shape\[0\] = \[2, 3\] vs. shape\[1\] = \[2, 2\]"),
    (lambda x: af.split(x, 2, axis=1), X, r"Split 'split'.*should evenly divide the split dimension"),
    (lambda x: af.split(x, [1, 1], axis=1), X, r"SplitV 'split'.*Determined shape must either match"),
    (lambda x: af.unstack(x, num=3), X, r"Unpack 'unstack'.*Input shape axis 0 must equal 3, got shape \[2, 3\]"),
    (lambda x: af.unsorted_segment_sum(x, [5, 0], 3), X,
     r"UnsortedSegmentSum 'UnsortedSegmentSum'.*segment_ids\[0\] = 5 is out of range \[0, 3\)"),
    (lambda x: af.one_hot(af.cast(x[0], af.int32), 3, axis=2), X,
     r"OneHot 'one_hot'.*Expected axis to be -1 or between \[0, 2\).  But received: 2"),
    (lambda x: af.fill(af.placeholder_with_default([2, -1], [2]), x[0, 0]), X,
     r"Fill 'Fill'.*Dimension -1 must be >= 0"),
    (lambda x: af.broadcast_to(x, [2, 4]), X, r"BroadcastTo 'BroadcastTo'.*Unable to broadcast tensor of shape"),
    (lambda x: af.expand_dims(x, af.placeholder_with_default(5, [])), X,
     r"ExpandDims 'ExpandDims'.*Tried to expand dim index 5 for tensor with 2 dimensions"),
    (lambda x: af.reverse(x, af.placeholder_with_default([1, -1], [2])), X, r"axis 1 specified more than once"),
])
def test_run_time_errors_are_invalid_argument(fn, feed, match):
    with af.Graph().as_default():
        x = _partial(feed, [None] * np.ndim(feed))
        out = fn(x)
        with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match=match):
            sess.run(out, {x: feed})


def test_dynamic_stitch_fills_string_gaps_and_keeps_the_last_duplicate():
    with af.Graph().as_default(), af.Session() as sess:
        assert sess.run(af.dynamic_stitch([[0, 2]], [["a", "b"]])).tolist() == [b"a", b"", b"b"]
        # Within one list and across lists, the later entry for an index wins.
        got = sess.run(af.dynamic_stitch([[0, 1, 0, 1], [1]], [[1.0, 2.0, 3.0, 4.0], [9.0]]))
        assert got.tolist() == [3.0, 9.0]
