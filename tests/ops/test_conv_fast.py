"""The im2col/GEMM convolution kernels and the per-offset pooling gradients (asyncflow/ops/conv_util.py)
against naive numpy loops over output pixels, over the combinations that move their index arithmetic:
strides, dilations, SAME / VALID / EXPLICIT padding, groups, NHWC and NCHW, batches split into
several patch matrices, scratch buffers reused across calls and shared by threads. Stride-1 input
gradients take the flipped-filter convolution path, strided ones (and paddings wider than the window)
the scatter-add path; both are covered.

Kernels are called directly (`OpDef.sync`) with a plain context object, as the executor calls them;
the graph-level rows live in tests/ops/test_nn.py and test_nn_backprop.py.
"""

from __future__ import annotations

import threading
import types

import numpy as np
import pytest

from asyncflow.ops import conv_util
from asyncflow.ops.registry import OPS

RNG = np.random.default_rng(3)


def _ctx(op_type: str, dtype=np.float32, **attrs) -> types.SimpleNamespace:
    attrs.setdefault("explicit_paddings", [])
    attrs.setdefault("data_format", "NHWC")
    return types.SimpleNamespace(name=op_type.lower(), op_type=op_type, out_dtypes=[dtype], **attrs)


def _pads(size: int, k: int, stride: int, dilation: int, padding) -> tuple[int, int, int]:
    """(output size, before, after), restated from TF's rule."""
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - eff) // stride + 1, 0, 0
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2, total - total // 2
    before, after = padding
    return (size + before + after - eff) // stride + 1, before, after


def _geometry(x_shape, w_shape, strides, dilations, padding):
    (oh, top, bottom) = _pads(x_shape[1], w_shape[0], strides[0], dilations[0], padding[0])
    (ow, left, right) = _pads(x_shape[2], w_shape[1], strides[1], dilations[1], padding[1])
    return oh, ow, (top, bottom, left, right)


def _positions(oh, ow, kh, kw, strides, dilations):
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    yield i, j, a, b, i * strides[0] + a * dilations[0], j * strides[1] + b * dilations[1]


def conv_ref(x, w, strides, dilations, padding):
    """Conv2D, NHWC, groups allowed: one output pixel and one kernel tap at a time, in float64."""
    kh, kw, f_depth, out_depth = w.shape
    groups, per_group = x.shape[3] // f_depth, out_depth // (x.shape[3] // f_depth)
    oh, ow, (top, bottom, left, right) = _geometry(x.shape, w.shape, strides, dilations, padding)
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.zeros((x.shape[0], oh, ow, out_depth))
    for i, j, a, b, r, c in _positions(oh, ow, kh, kw, strides, dilations):
        for g in range(groups):
            outs = slice(g * per_group, (g + 1) * per_group)
            out[:, i, j, outs] += xp[:, r, c, g * f_depth:(g + 1) * f_depth] @ w[a, b, :, outs]
    return out


def conv_grads_ref(x, w, dy, strides, dilations, padding):
    """(dx, dw) of Conv2D for output gradient dy, the adjoints of `conv_ref`'s loop."""
    kh, kw, f_depth, out_depth = w.shape
    groups, per_group = x.shape[3] // f_depth, out_depth // (x.shape[3] // f_depth)
    oh, ow, (top, bottom, left, right) = _geometry(x.shape, w.shape, strides, dilations, padding)
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    dxp, dw = np.zeros(xp.shape), np.zeros(w.shape)
    for i, j, a, b, r, c in _positions(oh, ow, kh, kw, strides, dilations):
        for g in range(groups):
            outs, ins = slice(g * per_group, (g + 1) * per_group), slice(g * f_depth, (g + 1) * f_depth)
            dxp[:, r, c, ins] += dy[:, i, j, outs] @ w[a, b, :, outs].T
            dw[a, b, :, outs] += xp[:, r, c, ins].T @ dy[:, i, j, outs]
    return dxp[:, top:top + x.shape[1], left:left + x.shape[2]], dw


# (id, x shape NHWC, filter shape, strides (h, w), dilations (h, w), padding per axis)
GEOMETRIES = [
    ("same_s1", (2, 7, 6, 3), (3, 3, 3, 4), (1, 1), (1, 1), ("SAME", "SAME")),
    ("same_s2_even_kernel", (2, 8, 7, 2), (4, 2, 2, 3), (2, 2), (1, 1), ("SAME", "SAME")),
    ("valid_s21", (3, 9, 8, 2), (3, 2, 2, 5), (2, 1), (1, 1), ("VALID", "VALID")),
    ("valid_s23", (2, 11, 12, 3), (2, 3, 3, 2), (2, 3), (1, 1), ("VALID", "VALID")),
    ("same_dilation2", (2, 9, 9, 2), (3, 3, 2, 3), (1, 1), (2, 2), ("SAME", "SAME")),
    ("valid_dilation13", (1, 8, 12, 2), (2, 3, 2, 2), (1, 1), (1, 3), ("VALID", "VALID")),
    ("explicit", (2, 6, 5, 2), (3, 3, 2, 3), (2, 1), (1, 1), ((2, 0), (1, 3))),
    ("explicit_dilated", (1, 7, 7, 3), (2, 2, 3, 2), (1, 1), (2, 3), ((0, 1), (2, 2))),
    ("explicit_wider_than_window", (1, 5, 5, 2), (2, 2, 2, 3), (1, 1), (1, 1), ((3, 1), (0, 2))),
    ("groups", (2, 6, 6, 4), (3, 3, 2, 6), (1, 2), (1, 1), ("SAME", "SAME")),
    ("depthwise_like_groups", (2, 5, 6, 3), (2, 2, 1, 6), (1, 1), (1, 1), ("VALID", "VALID")),
    ("one_by_one", (2, 4, 5, 3), (1, 1, 3, 4), (1, 1), (1, 1), ("VALID", "VALID")),
    ("one_by_one_strided", (2, 5, 5, 3), (1, 1, 3, 2), (2, 2), (1, 1), ("SAME", "SAME")),
]


def _attrs(strides, dilations, padding, data_format="NHWC"):
    explicit = isinstance(padding[0], tuple)
    h, w = (2, 3) if data_format == "NCHW" else (1, 2)
    s, d = [1, 1, 1, 1], [1, 1, 1, 1]
    s[h], s[w], d[h], d[w] = strides[0], strides[1], dilations[0], dilations[1]
    attrs = {"strides": s, "dilations": d, "padding": "EXPLICIT" if explicit else padding[0],
             "data_format": data_format, "use_cudnn_on_gpu": True}
    if explicit:
        pairs = [[0, 0], [0, 0], [0, 0], [0, 0]]
        pairs[h], pairs[w] = list(padding[0]), list(padding[1])
        attrs["explicit_paddings"] = [v for pair in pairs for v in pair]
    return attrs


def _nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _case(geometry, dtype):
    _, x_shape, w_shape, strides, dilations, padding = geometry
    x = RNG.standard_normal(x_shape).astype(dtype)
    w = RNG.standard_normal(w_shape).astype(dtype)
    oh, ow, _ = _geometry(x_shape, w_shape, strides, dilations, padding)
    dy = RNG.standard_normal((x_shape[0], oh, ow, w_shape[3])).astype(dtype)
    return x, w, dy


def _run_all(geometry, data_format, dtype=np.float32, k=None):
    """(Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter) results and their references, NHWC."""
    _, x_shape, w_shape, strides, dilations, padding = geometry
    x, w, dy = _case(geometry, dtype)
    attrs = _attrs(strides, dilations, padding, data_format)
    to, back = (_nchw, lambda a: a.transpose(0, 2, 3, 1)) if data_format == "NCHW" else (lambda a: a, lambda a: a)
    sizes = np.array(x.shape if data_format == "NHWC" else _nchw(x).shape, np.int32)
    out = OPS["Conv2D"].sync(k or _ctx("Conv2D", dtype, **attrs), to(x), w)
    dx = OPS["Conv2DBackpropInput"].sync(k or _ctx("Conv2DBackpropInput", dtype, **attrs), sizes, w, to(dy))
    dw = OPS["Conv2DBackpropFilter"].sync(k or _ctx("Conv2DBackpropFilter", dtype, **attrs), to(x),
                                          np.array(w.shape, np.int32), to(dy))
    want_dx, want_dw = conv_grads_ref(x, w, dy, strides, dilations, padding)
    return [(back(out), conv_ref(x, w, strides, dilations, padding)), (back(dx), want_dx), (dw, want_dw)]


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=[g[0] for g in GEOMETRIES])
def test_conv_and_backprops_match_the_pixel_loop(geometry, data_format) -> None:
    for (got, want), what in zip(_run_all(geometry, data_format), ("Conv2D", "input grad", "filter grad")):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{geometry[0]} {what}")


@pytest.mark.parametrize("geometry", GEOMETRIES[:3] + GEOMETRIES[6:10], ids=lambda g: g[0])
def test_float64_is_exact_to_rounding(geometry) -> None:
    for got, want in _run_all(geometry, "NHWC", np.float64):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("geometry", [GEOMETRIES[0], GEOMETRIES[1], GEOMETRIES[6], GEOMETRIES[9]],
                         ids=lambda g: g[0])
def test_batches_split_into_several_patch_matrices(geometry, monkeypatch) -> None:
    """A patch matrix smaller than one batch's: the kernels walk the batch in chunks (the last one short)."""
    monkeypatch.setattr(conv_util, "PATCH_ELEMENTS", 1)  # one image per chunk
    _, x_shape, *rest = geometry
    bigger = (geometry[0], (5, *x_shape[1:]), *rest)
    for got, want in _run_all(bigger, "NHWC"):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(conv_util, "PATCH_ELEMENTS", int(np.prod(x_shape[1:3])) * 2 * 9 * x_shape[3] + 1)
    for got, want in _run_all(bigger, "NHWC"):  # two images per chunk: 5 = 2 + 2 + 1
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_scratch_is_reused_across_calls_and_never_returned() -> None:
    geometry = GEOMETRIES[6]
    _, x_shape, w_shape, strides, dilations, padding = geometry
    attrs = _attrs(strides, dilations, padding)
    k = _ctx("Conv2D", **attrs)
    outputs = []
    for _ in range(3):  # new values each call: nothing stale may leak from the reused buffers
        x, w, _ = _case(geometry, np.float32)
        out = OPS["Conv2D"].sync(k, x, w)
        np.testing.assert_allclose(out, conv_ref(x, w, strides, dilations, padding), rtol=1e-4, atol=1e-4)
        outputs.append(out)
    kept = [b for buffers in k._scratch._free.values() for b in buffers]
    assert kept, "the padded input and the patch matrix stay on the context"
    for out in outputs:
        assert not any(np.shares_memory(out, b) for b in kept)
    assert len({id(o) for o in outputs}) == 3 and not np.shares_memory(outputs[0], outputs[1])


def test_one_context_used_by_several_threads_at_once() -> None:
    """Two steps of one plan may run the same kernel concurrently: each call takes its own buffers."""
    geometry = GEOMETRIES[0]
    _, _, _, strides, dilations, padding = geometry
    attrs = _attrs(strides, dilations, padding)
    k_fwd, k_in, k_filter = (_ctx(t, **attrs) for t in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"))
    cases = [_case(geometry, np.float32) for _ in range(4)]
    wants = [conv_ref(x, w, strides, dilations, padding) for x, w, _ in cases]
    wants_grad = [conv_grads_ref(x, w, dy, strides, dilations, padding) for x, w, dy in cases]
    failures: list[str] = []

    def work(i: int) -> None:
        x, w, dy = cases[i]
        for _ in range(30):
            out = OPS["Conv2D"].sync(k_fwd, x, w)
            dx = OPS["Conv2DBackpropInput"].sync(k_in, np.array(x.shape, np.int32), w, dy)
            dw = OPS["Conv2DBackpropFilter"].sync(k_filter, x, np.array(w.shape, np.int32), dy)
            for got, want in ((out, wants[i]), (dx, wants_grad[i][0]), (dw, wants_grad[i][1])):
                if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                    failures.append(f"thread {i}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_empty_and_zero_depth_inputs() -> None:
    attrs = _attrs((1, 1), (1, 1), ("SAME", "SAME"))
    out = OPS["Conv2D"].sync(_ctx("Conv2D", **attrs), np.zeros((0, 4, 4, 2), np.float32),
                             np.ones((3, 3, 2, 5), np.float32))
    assert out.shape == (0, 4, 4, 5)
    dx = OPS["Conv2DBackpropInput"].sync(_ctx("Conv2DBackpropInput", **attrs), np.array([2, 4, 4, 2], np.int32),
                                         np.ones((3, 3, 2, 5), np.float32), np.zeros((2, 4, 4, 5), np.float32))
    np.testing.assert_array_equal(dx, np.zeros((2, 4, 4, 2)))
    dw = OPS["Conv2DBackpropFilter"].sync(_ctx("Conv2DBackpropFilter", **attrs), np.zeros((0, 4, 4, 2), np.float32),
                                          np.array([3, 3, 2, 5], np.int32), np.zeros((0, 4, 4, 5), np.float32))
    np.testing.assert_array_equal(dw, np.zeros((3, 3, 2, 5)))


# -- max pool gradients: the first maximum in row-major window order -------------------------------------------
def _pool_ref(x, dy, ksize, strides, padding):
    """(MaxPoolGrad, MaxPoolGradGrad of dy-shaped-as-x) by scanning each window, strictly-greater replaces."""
    n, h, w, c = x.shape
    oh, top, _ = _pads(h, ksize[0], strides[0], 1, padding[0])
    ow, left, _ = _pads(w, ksize[1], strides[1], 1, padding[1])
    dx = np.zeros(x.shape)
    gg = np.zeros((n, oh, ow, c))
    g_in = dy[1]
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best = None
                    for r in range(i * strides[0] - top, i * strides[0] - top + ksize[0]):
                        for q in range(j * strides[1] - left, j * strides[1] - left + ksize[1]):
                            if 0 <= r < h and 0 <= q < w and (best is None or x[b, r, q, ch] > x[b, best[0],
                                                                                                  best[1], ch]):
                                best = (r, q)
                    if best is not None:
                        dx[b, best[0], best[1], ch] += dy[0][b, i, j, ch]
                        gg[b, i, j, ch] = g_in[b, best[0], best[1], ch]
    return dx, gg


POOLS = [
    ("k2s2_valid", (2, 6, 8, 3), (2, 2), (2, 2), ("VALID", "VALID")),
    ("k3s2_same", (2, 7, 6, 2), (3, 3), (2, 2), ("SAME", "SAME")),
    ("k3s1_same_overlap", (1, 5, 5, 2), (3, 3), (1, 1), ("SAME", "SAME")),
    ("k23s12_valid", (2, 7, 9, 2), (2, 3), (1, 2), ("VALID", "VALID")),
    ("explicit_wide", (1, 4, 4, 2), (2, 2), (2, 2), ((3, 0), (0, 2))),  # some windows see only padding
]


def _pool_inputs(kind: str, shape):
    if kind == "ties":
        return RNG.integers(0, 3, shape).astype(np.float32)
    x = RNG.standard_normal(shape).astype(np.float32)
    if kind == "nonfinite":  # NaN first in some windows, NaN later in others, infinities
        x.reshape(-1)[::7] = np.nan
        x.reshape(-1)[3::11] = -np.inf
        x.reshape(-1)[5::13] = np.inf
    return x


@pytest.mark.parametrize("kind", ["random", "ties", "nonfinite"])
@pytest.mark.parametrize("pool", POOLS, ids=[p[0] for p in POOLS])
def test_max_pool_grads_take_the_first_maximum(pool, kind) -> None:
    _, shape, ksize, strides, padding = pool
    x = _pool_inputs(kind, shape)
    attrs = _attrs(strides, (1, 1), padding)
    attrs.pop("dilations"), attrs.pop("use_cudnn_on_gpu")
    attrs["ksize"] = [1, ksize[0], ksize[1], 1]
    oh, _, _ = _pads(shape[1], ksize[0], strides[0], 1, padding[0])
    ow, _, _ = _pads(shape[2], ksize[1], strides[1], 1, padding[1])
    dy = RNG.standard_normal((shape[0], oh, ow, shape[3])).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    want_dx, want_gg = _pool_ref(x, (dy, g), ksize, strides, padding)
    dx = OPS["MaxPoolGrad"].sync(_ctx("MaxPoolGrad", **attrs), x, np.zeros_like(dy), dy)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6, atol=1e-6)
    if not isinstance(padding[0], tuple):  # MaxPoolGradGrad takes SAME or VALID only
        attrs.pop("explicit_paddings", None)
        gg = OPS["MaxPoolGradGrad"].sync(_ctx("MaxPoolGradGrad", **attrs), x, np.zeros_like(dy), g)
        np.testing.assert_allclose(gg, want_gg, rtol=1e-6, atol=1e-6)


def test_max_pool_grad_with_non_finite_gradients_routes_them_only_to_the_maximum() -> None:
    x = RNG.standard_normal((1, 4, 4, 1)).astype(np.float32)
    dy = np.array([np.inf, np.nan, -np.inf, 1.0], np.float32).reshape(1, 2, 2, 1)
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    dx = OPS["MaxPoolGrad"].sync(_ctx("MaxPoolGrad", **attrs), x, np.zeros_like(dy), dy)
    want, _ = _pool_ref(x, (dy, x), (2, 2), (2, 2), ("VALID", "VALID"))
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(want))
    np.testing.assert_array_equal(dx[~np.isnan(dx)], want[~np.isnan(want)])
    assert np.count_nonzero(dx) == 4  # the rest of each window stays exactly 0, not 0 * inf
