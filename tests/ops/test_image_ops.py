"""Image kernels against numpy references and values pinned with TF 2.21's compat.v1 runtime.

The bilinear and nearest-neighbour references below re-derive TF's kernels (source coordinate
`dst * scale`, or `(dst + 0.5) * scale - 0.5` with half-pixel centres, `scale = (in - 1) / (out - 1)`
under align_corners) with plain loops; the 2x2 -> 3x3 tables were printed by TF itself."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import asyncflow as af
from asyncflow.ops import image_ops as k
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.default_rng(7)
X22 = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32).reshape(1, 2, 2, 1)
IMG = RNG.integers(0, 256, size=(6, 5, 3)).astype(np.uint8)


def _scale(n_in, n_out, align):
    return (n_in - 1) / (n_out - 1) if align and n_out > 1 else n_in / n_out


def bilinear_reference(x, out_h, out_w, align=False, half=False):
    n, h, w, c = x.shape
    out = np.zeros((n, out_h, out_w, c), np.float64)
    sh, sw = np.float32(_scale(h, out_h, align)), np.float32(_scale(w, out_w, align))
    for i in range(out_h):
        fy = np.float32((i + 0.5) * sh - 0.5) if half else np.float32(i * sh)
        y0, y1, dy = max(int(np.floor(fy)), 0), min(int(np.ceil(fy)), h - 1), fy - np.floor(fy)
        for j in range(out_w):
            fx = np.float32((j + 0.5) * sw - 0.5) if half else np.float32(j * sw)
            x0, x1, dx = max(int(np.floor(fx)), 0), min(int(np.ceil(fx)), w - 1), fx - np.floor(fx)
            top = x[:, y0, x0] + (x[:, y0, x1] - x[:, y0, x0]) * dx
            bottom = x[:, y1, x0] + (x[:, y1, x1] - x[:, y1, x0]) * dx
            out[:, i, j] = top + (bottom - top) * dy
    return out.astype(np.float32)


def nearest_reference(x, out_h, out_w, align=False, half=False):
    n, h, w, c = x.shape

    def index(i, n_in, n_out):
        s = np.float32(_scale(n_in, n_out, align))
        src = (i + 0.5) * s if half else i * s
        return min(int(np.floor(src + 0.5)) if align else int(np.floor(src)), n_in - 1)

    return np.stack([np.stack([x[:, index(i, h, out_h), index(j, w, out_w)] for j in range(out_w)], 1)
                     for i in range(out_h)], 1)


def _png(arr, mode=None):
    buf = io.BytesIO()
    Image.fromarray(arr, mode=mode).save(buf, format="PNG")
    return buf.getvalue()


def _jpeg(arr):
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


F4 = RNG.random((2, 5, 7, 3)).astype(np.float32)
GRADS = RNG.random((2, 3, 4, 3)).astype(np.float32)
HSV = RNG.random((4, 3)).astype(np.float32)

CASES = [
    Case("resize_bilinear_pinned_tf", ("ResizeBilinear",), lambda af: af.image.resize_bilinear(X22, [3, 3]),
         np.array([[1.0, 5 / 3, 2.0], [7 / 3, 31 / 9, 4.0], [3.0, 13 / 3, 5.0]], np.float32).reshape(1, 3, 3, 1),
         static_shape=[1, 3, 3, 1]),
    Case("resize_bilinear_align_pinned_tf", ("ResizeBilinear",),
         lambda af: af.image.resize_bilinear(X22, [3, 3], align_corners=True),
         np.array([[1.0, 1.5, 2.0], [2.0, 2.75, 3.5], [3.0, 4.0, 5.0]], np.float32).reshape(1, 3, 3, 1)),
    Case("resize_bilinear_uint8_to_float", ("ResizeBilinear",), lambda af: af.image.resize_bilinear(IMG, [4, 9]),
         bilinear_reference(IMG[None].astype(np.float32), 4, 9)[0], rtol=1e-5, atol=1e-4),
    Case("resize_bilinear_half_pixel", ("ResizeBilinear",),
         lambda af: af.image.resize_bilinear(F4, [8, 3], half_pixel_centers=True),
         bilinear_reference(F4, 8, 3, half=True), rtol=1e-5),
    Case("resize_nearest_pinned_tf", ("ResizeNearestNeighbor",),
         lambda af: af.image.resize_nearest_neighbor(X22, [3, 5]),
         np.array([[1, 1, 1, 2, 2], [1, 1, 1, 2, 2], [3, 3, 3, 5, 5]], np.float32).reshape(1, 3, 5, 1)),
    Case("resize_nearest_align_pinned_tf", ("ResizeNearestNeighbor",),
         lambda af: af.image.resize_nearest_neighbor(X22, [3, 5], align_corners=True),
         np.array([[1, 1, 2, 2, 2], [3, 3, 5, 5, 5], [3, 3, 5, 5, 5]], np.float32).reshape(1, 3, 5, 1)),
    Case("resize_nearest_uint8", ("ResizeNearestNeighbor",),
         lambda af: af.image.resize_nearest_neighbor(IMG[None], [11, 3], half_pixel_centers=True),
         nearest_reference(IMG[None], 11, 3, half=True)),
    Case("resize_bilinear_grad_is_the_adjoint", ("ResizeBilinearGrad",),
         lambda af: k.resize_bilinear_grad_op(GRADS, F4),
         lambda: _adjoint(lambda x: bilinear_reference(x, 3, 4), F4.shape, GRADS), rtol=1e-5, atol=1e-5),
    Case("resize_nearest_grad_is_the_adjoint", ("ResizeNearestNeighborGrad",),
         lambda af: k.resize_nearest_grad_op(GRADS, np.array([5, 7], np.int32)),
         lambda: _adjoint(lambda x: nearest_reference(x, 3, 4), F4.shape, GRADS), rtol=1e-5, atol=1e-5),
    Case("decode_png_rgb", ("DecodePng",), lambda af: af.image.decode_png(_png(IMG)), IMG),
    Case("decode_png_to_gray", ("DecodePng",), lambda af: af.image.decode_png(_png(IMG[:, :, 0], "L"), channels=1),
         IMG[:, :, :1]),
    Case("decode_png_uint16_scales", ("DecodePng",),
         lambda af: af.image.decode_png(_png(IMG), dtype=af.uint16), IMG.astype(np.uint16) * 257),
    Case("decode_jpeg_grey_flat", ("DecodeJpeg",),
         lambda af: af.image.decode_jpeg(_jpeg(np.full((8, 8, 3), 128, np.uint8)), channels=1),
         np.full((8, 8, 1), 128, np.uint8)),
    Case("decode_image_png", ("DecodeImage",), lambda af: af.image.decode_image(_png(IMG), channels=3), IMG),
    Case("encode_png_round_trip", ("EncodePng", "DecodePng"),
         lambda af: af.image.decode_png(af.image.encode_png(IMG)), IMG),
    Case("encode_jpeg_round_trip_flat", ("EncodeJpeg", "DecodeJpeg"),
         lambda af: af.image.decode_jpeg(af.image.encode_jpeg(np.full((16, 16, 3), 200, np.uint8))),
         np.full((16, 16, 3), 200, np.uint8)),
    Case("rgb_to_hsv", ("RGBToHSV",), lambda af: af.image.rgb_to_hsv(HSV),
         lambda: _hsv_reference(HSV), rtol=1e-5, atol=1e-6),
    Case("hsv_to_rgb_inverts", ("HSVToRGB", "RGBToHSV"), lambda af: af.image.hsv_to_rgb(af.image.rgb_to_hsv(HSV)),
         HSV, rtol=1e-5, atol=1e-6),
]


def _adjoint(forward, in_shape, grads):
    """The transpose of the linear map `forward`, applied to `grads`, by probing each input element."""
    out = np.zeros(in_shape, np.float64)
    basis = np.zeros(in_shape, np.float32)
    for idx in np.ndindex(*in_shape):
        basis[idx] = 1.0
        out[idx] = np.sum(forward(basis) * grads)
        basis[idx] = 0.0
    return out.astype(np.float32)


def _hsv_reference(rgb):
    import colorsys

    return np.array([colorsys.rgb_to_hsv(*row) for row in rgb.astype(np.float64)], np.float32)


@pytest.mark.parametrize("case", case_params(CASES))
def test_image_op(case):
    check_case(case)


def test_decoders_refuse_garbage_and_bombs():
    with af.Session() as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="cannot decode"):
            sess.run(af.image.decode_png(b"not a png at all"))
        header = io.BytesIO()
        Image.new("L", (1, 1)).save(header, format="PNG")
        data = bytearray(header.getvalue())
        data[16:24] = (40000).to_bytes(4, "big") + (40000).to_bytes(4, "big")  # IHDR: a 1.6 G pixel canvas
        with pytest.raises(af.errors.InvalidArgumentError, match="exceeds the limit|cannot decode"):
            sess.run(af.image.decode_png(bytes(data)))
    with pytest.raises(ValueError, match="scalar string"):
        af.image.decode_png(af.constant([b"a", b"b"]))


def test_resize_errors_name_the_op_and_the_argument():
    with pytest.raises(ValueError, match="ResizeBilinear.*size must"):
        af.image.resize_bilinear(np.zeros((1, 4, 4, 1), np.float32), [0, 3])
    size = af.placeholder(af.int32, [2])
    resized = af.image.resize_bilinear(np.zeros((1, 4, 4, 1), np.float32), size, align_corners=True,
                                       half_pixel_centers=True)
    with af.Session() as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="half_pixel_centers is True"):
            sess.run(resized, {size: [2, 2]})
