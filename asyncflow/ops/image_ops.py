"""Image kernels behind `af.image`: resizing (bilinear, nearest neighbour, with their gradients), the
PNG/JPEG codecs, and the RGB/HSV conversions; the rest of `af.image` is composites (asyncflow/image/).

Resizing follows TF's kernels exactly: images are NHWC; a source coordinate is `dst * scale`
(legacy), `(dst + 0.5) * scale - 0.5` (`half_pixel_centers`), with `scale = (in - 1) / (out - 1)`
under `align_corners`, else `in / out`; bilinear output is float32 whatever the input type.
The codecs use Pillow (the `image` extra), never a hand-written decoder, and refuse images over
`MAX_PIXELS` before decoding them (a small file can declare a huge canvas).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.ops.registry import REAL, BuildContext, op
from asyncflow.shapes import TensorShape, unknown_shape

MAX_PIXELS = 1 << 28  # 268 M pixels: past this a decode is refused, not attempted


# -- resizing ----------------------------------------------------------------------------------------
def _resize_shape(b: BuildContext) -> list[TensorShape]:
    images = b.shape(0)
    if images.ndims is not None and images.ndims != 4:
        raise b.error(f"images must be 4-D [batch, height, width, channels], got shape {images}")
    if b.shape(1).ndims is not None and b.shape(1).as_list() not in ([2], [None]):
        raise b.error(f"size must be a 1-D int32 tensor of 2 elements, got shape {b.shape(1)}")
    size = b.const(1)
    dims = images.as_list() if images.ndims is not None else [None] * 4
    if size is not None:
        if np.any(np.asarray(size) <= 0):
            raise b.error(f"size must hold positive values, got {np.asarray(size).tolist()}")
        dims[1], dims[2] = int(size[0]), int(size[1])
    else:
        dims[1] = dims[2] = None
    return [TensorShape(dims)]


def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


def _check_size(k: Any, images: np.ndarray, size: np.ndarray) -> tuple[int, int]:
    size = np.asarray(size)
    if images.ndim != 4:
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': images must be 4-dimensional, "
                                                      f"got shape {list(images.shape)}")
    if size.shape != (2,) or np.any(size <= 0):
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': size must be 2 positive values, "
                                                      f"got {size.tolist()}")
    if k.align_corners and k.half_pixel_centers:
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': If half_pixel_centers is True, "
                                                      "align_corners must be False.")
    return int(size[0]), int(size[1])


def _linear_weights(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """TF's compute_interpolation_weights: lower and upper source index and the weight of upper."""
    scale = _scale(in_size, out_size, align_corners)
    dst = np.arange(out_size, dtype=np.float64)
    src = (dst + 0.5) * scale - 0.5 if half_pixel else dst * scale
    src = src.astype(np.float32).astype(np.float64)  # TF computes the coordinates in float32
    floor = np.floor(src)
    lower = np.clip(floor.astype(np.int64), 0, in_size - 1)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lower, upper, (src - floor).astype(np.float32)


_RESIZE_ATTRS = {"align_corners": False, "half_pixel_centers": False}


@op("ResizeBilinear", inputs="images: T, size: int32", outputs="resized_images: float32", types={"T": REAL},
    attrs=_RESIZE_ATTRS, shape=_resize_shape)
def resize_bilinear_op(k, images, size):
    out_h, out_w = _check_size(k, images, size)
    x = np.asarray(images, dtype=np.float32)
    y0, y1, wy = _linear_weights(x.shape[1], out_h, k.align_corners, k.half_pixel_centers)
    x0, x1, wx = _linear_weights(x.shape[2], out_w, k.align_corners, k.half_pixel_centers)
    wy, wx = wy[None, :, None, None], wx[None, None, :, None]
    top = x[:, y0][:, :, x0] + (x[:, y0][:, :, x1] - x[:, y0][:, :, x0]) * wx
    bottom = x[:, y1][:, :, x0] + (x[:, y1][:, :, x1] - x[:, y1][:, :, x0]) * wx
    return (top + (bottom - top) * wy).astype(np.float32)


@op("ResizeBilinearGrad", inputs="grads: float32, original_image: T", outputs="output: T",
    types={"T": (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)}, attrs=_RESIZE_ATTRS,
    shape=lambda b: [b.shape(1)], differentiable=False)
def resize_bilinear_grad_op(k, grads, original):
    g = np.asarray(grads, dtype=np.float64)
    _, in_h, in_w, _ = np.shape(original)
    y0, y1, wy = _linear_weights(in_h, g.shape[1], k.align_corners, k.half_pixel_centers)
    x0, x1, wx = _linear_weights(in_w, g.shape[2], k.align_corners, k.half_pixel_centers)
    wy, wx = wy.astype(np.float64)[None, :, None, None], wx.astype(np.float64)[None, None, :, None]
    out = np.zeros((g.shape[0], in_h, in_w, g.shape[3]))
    for ys, fy in ((y0, 1 - wy), (y1, wy)):
        for xs, fx in ((x0, 1 - wx), (x1, wx)):
            part = np.zeros((g.shape[0], in_h, g.shape[2], g.shape[3]))
            np.add.at(part, (slice(None), ys), g * fy * fx)
            np.add.at(out, (slice(None), slice(None), xs), part)
    return out.astype(k.out_dtypes[0])


@resize_bilinear_op.gradient
def _resize_bilinear_grad(op_: Any, grad: Any) -> list[Any]:
    return [resize_bilinear_grad_op(grad, op_.inputs[0], align_corners=op_.get_attr("align_corners"),
                                    half_pixel_centers=op_.get_attr("half_pixel_centers")), None]


def _nearest_index(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    scale = np.float32(_scale(in_size, out_size, align_corners))
    dst = np.arange(out_size, dtype=np.float32)
    src = (dst + np.float32(0.5)) * scale if half_pixel else dst * scale
    idx = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)  # C roundf: halves away from 0
    return np.clip(idx.astype(np.int64), 0, in_size - 1)


@op("ResizeNearestNeighbor", inputs="images: T, size: int32", outputs="resized_images: T", types={"T": REAL},
    attrs=_RESIZE_ATTRS, shape=_resize_shape)
def resize_nearest_op(k, images, size):
    out_h, out_w = _check_size(k, images, size)
    ys = _nearest_index(images.shape[1], out_h, k.align_corners, k.half_pixel_centers)
    xs = _nearest_index(images.shape[2], out_w, k.align_corners, k.half_pixel_centers)
    return np.ascontiguousarray(np.asarray(images)[:, ys][:, :, xs])


@op("ResizeNearestNeighborGrad", inputs="grads: T, size: int32", outputs="output: T", types={"T": REAL},
    attrs=_RESIZE_ATTRS, shape=_resize_shape, differentiable=False)
def resize_nearest_grad_op(k, grads, size):
    in_h, in_w = (int(s) for s in np.asarray(size))
    g = np.asarray(grads)
    ys = _nearest_index(in_h, g.shape[1], k.align_corners, k.half_pixel_centers)
    xs = _nearest_index(in_w, g.shape[2], k.align_corners, k.half_pixel_centers)
    rows = np.zeros((g.shape[0], in_h, g.shape[2], g.shape[3]), dtype=g.dtype)
    np.add.at(rows, (slice(None), ys), g)
    out = np.zeros((g.shape[0], in_h, in_w, g.shape[3]), dtype=g.dtype)
    np.add.at(out, (slice(None), slice(None), xs), rows)
    return out


@resize_nearest_op.gradient
def _resize_nearest_grad(op_: Any, grad: Any) -> list[Any]:
    from asyncflow.ops.array import shape as shape_of
    from asyncflow.ops.array import strided_slice

    size = strided_slice(shape_of(op_.inputs[0], out_type=dtypes.int32), [1], [3], [1])
    return [resize_nearest_grad_op(grad, size, align_corners=op_.get_attr("align_corners"),
                                   half_pixel_centers=op_.get_attr("half_pixel_centers")), None]


# -- codecs (Pillow) ----------------------------------------------------------------------------------
def _pillow(k: Any) -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise errors.UnimplementedError(
            None, k.op, f"{k.op_type} '{k.name}' needs Pillow: pip install 'asyncflow[image]'") from None
    return Image


def _open(k: Any, contents: Any) -> Any:
    Image = _pillow(k)
    data = np.asarray(contents)[()] if np.ndim(contents) == 0 else None
    if not isinstance(data, bytes):
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': contents must be a scalar string")
    try:
        img = Image.open(io.BytesIO(data))
        if img.width * img.height > MAX_PIXELS:
            raise errors.InvalidArgumentError(
                None, k.op, f"{k.op_type} '{k.name}': image of {img.width}x{img.height} pixels exceeds the limit "
                            f"of {MAX_PIXELS}")
        img.load()
    except errors.OpError:
        raise
    except Exception as exc:  # noqa: BLE001 - any decoder failure is bad input
        raise errors.InvalidArgumentError(
            None, k.op, f"{k.op_type} '{k.name}': cannot decode the image: {type(exc).__name__}: {exc}") from None
    return img


def _to_array(k: Any, img: Any, channels: int, dtype: np.dtype) -> np.ndarray:
    if channels not in (0, 1, 3, 4):
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': channels must be 0, 1, 3 or 4, "
                                                      f"got {channels}")
    wide = img.mode in ("I;16", "I;16B", "I;16L", "I")
    if channels == 0:
        mode = {"L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA", "P": "RGBA" if "transparency" in img.info
                else "RGB", "1": "L"}.get(img.mode, "L" if wide else "RGB")
    else:
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    if wide and mode == "L":
        arr = np.asarray(img, dtype=np.uint16 if img.mode != "I" else np.int32).astype(np.uint16)
        arr = arr if dtype == np.uint16 else (arr >> 8).astype(np.uint8)
    else:
        arr = np.asarray(img.convert(mode))
        if dtype == np.uint16:
            arr = arr.astype(np.uint16) * 257  # TF scales 8-bit data up to 16 bits
    arr = arr.reshape(arr.shape[0], arr.shape[1], -1)
    if mode == "LA" and channels == 0:
        arr = arr[..., :2]
    return np.ascontiguousarray(arr.astype(dtype, copy=False))


def _decode_shape(b: BuildContext) -> list[TensorShape]:
    if b.shape(0).ndims not in (None, 0):
        raise b.error(f"contents must be a scalar string, got shape {b.shape(0)}")
    channels = b.attrs.get("channels", 0)
    return [TensorShape([None, None, channels or None])]


@op("DecodePng", inputs="contents: string", outputs="image: dtype",
    types={"dtype": (dtypes.uint8, dtypes.uint16)}, attrs={"channels": 0}, type_defaults={"dtype": dtypes.uint8},
    shape=_decode_shape, differentiable=False)
def decode_png_op(k, contents):
    return _to_array(k, _open(k, contents), k.channels, k.out_dtypes[0])


@op("DecodeJpeg", inputs="contents: string", outputs="image: uint8",
    attrs={"channels": 0, "ratio": 1, "fancy_upscaling": True, "try_recover_truncated": False,
           "acceptable_fraction": 1.0, "dct_method": ""}, shape=_decode_shape, differentiable=False)
def decode_jpeg_op(k, contents):
    img = _open(k, contents)
    if k.ratio not in (1, 2, 4, 8):
        raise errors.InvalidArgumentError(None, k.op, f"DecodeJpeg '{k.name}': ratio must be 1, 2, 4 or 8")
    if k.ratio != 1:
        img = img.reduce(k.ratio)
    return _to_array(k, img, k.channels, np.uint8)


@op("DecodeImage", inputs="contents: string", outputs="image: dtype",
    types={"dtype": (dtypes.uint8, dtypes.uint16, dtypes.float32)}, attrs={"channels": 0, "expand_animations": True},
    type_defaults={"dtype": dtypes.uint8}, shape=lambda b: [unknown_shape()], differentiable=False)
def decode_image_op(k, contents):
    want = k.out_dtypes[0]
    arr = _to_array(k, _open(k, contents), k.channels, np.uint16 if want == np.uint16 else np.uint8)
    if want == np.float32:  # TF: convert_image_dtype of the uint8 image
        arr = arr.astype(np.float32) / np.float32(255)
    return arr


def _encode(k: Any, image: Any, fmt: str, **options: Any) -> np.ndarray:
    Image = _pillow(k)
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4):
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': image must be 3-dimensional "
                                                      f"[height, width, channels] with 1-4 channels, got shape "
                                                      f"{list(arr.shape)}")
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[arr.shape[2]]
    if arr.dtype == np.uint16:
        if arr.shape[2] != 1:
            raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': 16-bit images must have one "
                                                          "channel here (Pillow writes 16-bit grayscale only)")
        img = Image.fromarray(arr[:, :, 0].astype(np.uint16), mode="I;16")
    else:
        img = Image.fromarray(arr[:, :, 0] if mode == "L" else arr, mode=mode)
    out = io.BytesIO()
    img.save(out, format=fmt, **options)
    return np.array(out.getvalue(), dtype=object)


@op("EncodePng", inputs="image: T", outputs="contents: string", types={"T": (dtypes.uint8, dtypes.uint16)},
    attrs={"compression": -1}, shape=lambda b: [TensorShape([])], differentiable=False)
def encode_png_op(k, image):
    level = 6 if k.compression < 0 else min(int(k.compression), 9)
    return _encode(k, image, "PNG", compress_level=level)


@op("EncodeJpeg", inputs="image: uint8", outputs="contents: string",
    attrs={"format": "", "quality": 95, "progressive": False, "optimize_size": False, "chroma_downsampling": True,
           "density_unit": "in", "x_density": 300, "y_density": 300, "xmp_metadata": ""},
    shape=lambda b: [TensorShape([])], differentiable=False)
def encode_jpeg_op(k, image):
    arr = np.asarray(image)
    if arr.ndim == 3 and arr.shape[2] not in (1, 3):
        raise errors.InvalidArgumentError(None, k.op, f"EncodeJpeg '{k.name}': image must have 1 or 3 channels, "
                                                      f"got {arr.shape[2]}")
    return _encode(k, arr, "JPEG", quality=int(k.quality), progressive=bool(k.progressive),
                   optimize=bool(k.optimize_size), subsampling=-1 if k.chroma_downsampling else 0,
                   dpi=(k.x_density, k.y_density))


# -- colour spaces ---------------------------------------------------------------------------------------
def _last_dim_3(b: BuildContext) -> list[TensorShape]:
    s = b.shape(0)
    if s.ndims is not None and (s.ndims < 1 or s.as_list()[-1] not in (None, 3)):
        raise b.error(f"the last dimension must be size 3, got shape {s}")
    return [s]


@op("RGBToHSV", inputs="images: T", outputs="output: T", types={"T": (dtypes.float32, dtypes.float64)},
    shape=_last_dim_3, differentiable=False)
def rgb_to_hsv_op(k, images):
    x = np.asarray(images)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = x.max(-1)
    span = v - x.min(-1)
    s = np.where(v > 0, span / np.where(v > 0, v, 1), 0)
    safe = np.where(span > 0, span, 1)
    h = np.where(v == r, (g - b) / safe, np.where(v == g, 2 + (b - r) / safe, 4 + (r - g) / safe))
    h = np.where(span > 0, h / 6, 0)
    h = np.where(h < 0, h + 1, h)
    return np.stack([h, s, v], -1).astype(x.dtype)


@op("HSVToRGB", inputs="images: T", outputs="output: T", types={"T": (dtypes.float32, dtypes.float64)},
    shape=_last_dim_3, differentiable=False)
def hsv_to_rgb_op(k, images):
    x = np.asarray(images)
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = h * 6
    r = np.clip(np.abs(dh - 3) - 1, 0, 1)
    g = np.clip(2 - np.abs(dh - 2), 0, 1)
    b = np.clip(2 - np.abs(dh - 4), 0, 1)
    rgb = np.stack([r, g, b], -1)
    return (((rgb - 1) * s[..., None] + 1) * v[..., None]).astype(x.dtype)


__all__: list[str] = []
