"""What the summary kernels put in their `Summary` protos, computed as TF's C++ kernels compute it.

- `histogram_into`: TF's `histogram::Histogram` with its default bucket limits (`1e-12 * 1.1**k` up
  to 1e20, their negatives, 0 and +-DBL_MAX), each value counted in the first bucket whose limit is
  above it, runs of empty buckets collapsed into one (the limit of the run's last bucket), and `sum`
  and `sum_squares` added in input order, as the C++ loop does.
- `normalize_image`: a float image scaled into uint8 per image (all values >= 0: `255 / max`;
  any negative: `127 / max|v|` around 128), pixels with a non-finite channel painted `bad_color`.
- `encode_png`: the uint8 image as PNG, through Pillow (the `image` extra).
- `encode_wav`: 16-bit PCM WAV through the standard library's `wave` (samples `round(x * 32768)`,
  clamped to int16, as TF's `FloatToInt16Sample`).
- `tensor_into`: a numpy array as a `TensorProto` (`string_val` for strings, `tensor_content` else).

The protos are TensorBoard's own (`tensorboard.compat.proto`, the `tensorboard` extra), imported
the first time a summary kernel runs, so `import asyncflow` does not need TensorBoard.
"""

from __future__ import annotations

import functools
import io
import sys
import types
import wave
from typing import Any

import numpy as np

from asyncflow import dtypes, errors

DBL_MAX = sys.float_info.max


def protos(k: Any = None) -> types.SimpleNamespace:
    """TensorBoard's protobuf modules; UnimplementedError (naming the op) when TensorBoard is missing."""
    try:
        from tensorboard.compat.proto import (
            event_pb2,
            histogram_pb2,
            summary_pb2,
            tensor_pb2,
            tensor_shape_pb2,
        )
    except ImportError:
        where = f"{k.op_type} '{k.name}' needs" if k is not None else "summaries need"
        raise errors.UnimplementedError(None, getattr(k, "op", None),
                                        f"{where} TensorBoard's protos: pip install 'asyncflow[tensorboard]'") from None
    return types.SimpleNamespace(summary_pb2=summary_pb2, event_pb2=event_pb2, histogram_pb2=histogram_pb2,
                                 tensor_pb2=tensor_pb2, tensor_shape_pb2=tensor_shape_pb2)


# -- histograms ---------------------------------------------------------------------------------------
@functools.cache
def default_bucket_limits() -> np.ndarray:
    """TF's default histogram bucket limits (the same doubles: the factor 1.1 is applied step by step)."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(DBL_MAX)
    limits = np.array([-x for x in reversed(positive)] + [0.0] + positive)
    limits.setflags(write=False)
    return limits


def _sequential_sum(values: np.ndarray) -> float:
    # C++ adds one value at a time; numpy's sum is pairwise and may differ in the last bits.
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def histogram_into(proto: Any, values: np.ndarray) -> None:
    """Fills a `HistogramProto` with `values` (float64, all finite) as TF's `Histogram::EncodeToProto`."""
    limits = default_bucket_limits()
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    index = np.minimum(np.searchsorted(limits, flat, side="right"), limits.size - 1)
    counts = np.bincount(index, minlength=limits.size)
    proto.min = float(flat.min()) if flat.size else DBL_MAX
    proto.max = float(flat.max()) if flat.size else -DBL_MAX
    proto.num = float(flat.size)
    proto.sum = _sequential_sum(flat)
    proto.sum_squares = _sequential_sum(flat * flat)
    # Every non-empty bucket is written; a run of empty ones becomes one entry, at its last bucket.
    nonempty = np.flatnonzero(counts)
    before = nonempty[nonempty > 0] - 1
    run_ends = before[counts[before] == 0]
    last = [limits.size - 1] if counts[-1] == 0 else []
    keep = np.unique(np.concatenate([nonempty, run_ends, np.array(last, dtype=np.int64)]))
    proto.bucket_limit.extend(limits[keep].tolist())
    proto.bucket.extend(counts[keep].astype(np.float64).tolist())


# -- images -------------------------------------------------------------------------------------------
_ZERO_THRESHOLD = np.float32(1e-6)


def normalize_image(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """A float image `[h, w, depth]` (float16/32/64) as uint8, as TF's `NormalizeFloatImage`."""
    t = image.dtype.type
    pixels = image.reshape(-1, image.shape[-1])
    finite = np.isfinite(pixels).all(axis=1)
    good = pixels[finite].astype(np.float32)  # the range is taken in float32 whatever the image's type
    lo = good.min() if good.size else np.float32(np.inf)
    hi = good.max() if good.size else np.float32(-np.inf)
    if lo < 0:
        max_val = max(abs(lo), abs(hi))
        scale, offset = t(0.0 if max_val < _ZERO_THRESHOLD else np.float32(127.0) / max_val), t(128.0)
    else:
        scale, offset = t(0.0 if hi < _ZERO_THRESHOLD else np.float32(255.0) / hi), t(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = pixels * scale + offset  # in the image's own type, as the C++ kernel's Eigen expression
        out = np.clip(np.nan_to_num(scaled.astype(np.float64)), 0, 255).astype(np.uint8)
    out[~finite] = bad_color[: image.shape[-1]]
    return out.reshape(image.shape)


def encode_png(k: Any, image: np.ndarray) -> bytes:
    """A uint8 `[h, w, 1|3|4]` image as PNG bytes (Pillow, zlib's default compression as TF)."""
    try:
        from PIL import Image
    except ImportError:
        raise errors.UnimplementedError(
            None, k.op, f"{k.op_type} '{k.name}' encodes PNG with Pillow: pip install 'asyncflow[image]'") from None
    depth = image.shape[-1]
    pil = Image.fromarray(np.ascontiguousarray(image[..., 0] if depth == 1 else image),
                          mode={1: "L", 3: "RGB", 4: "RGBA"}[depth])
    buf = io.BytesIO()
    pil.save(buf, format="PNG")
    return buf.getvalue()


# -- audio --------------------------------------------------------------------------------------------
def encode_wav(samples: np.ndarray, sample_rate: float) -> bytes:
    """`[frames, channels]` float samples as a 16-bit PCM WAV file (TF's `EncodeAudioAsS16LEWav`)."""
    scaled = (samples.astype(np.float32) * np.float32(32768.0)).astype(np.float64)
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)  # roundf: halves away from zero
    pcm = np.clip(rounded, -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(int(np.floor(sample_rate + 0.5)))  # the header's rate: rounded, as TF's
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


# -- tensors ------------------------------------------------------------------------------------------
def tensor_into(proto: Any, value: np.ndarray) -> None:
    """Fills a `TensorProto` with `value` as TF's `Tensor::AsProtoField` (strings) / `AsProtoTensorContent`."""
    arr = np.asarray(value)
    dtype = dtypes.as_dtype(arr.dtype)
    proto.dtype = dtype.as_datatype_enum
    proto.tensor_shape.SetInParent()  # a scalar's shape is present and empty
    for size in arr.shape:
        proto.tensor_shape.dim.add(size=size)
    if dtype.is_string:
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in arr.reshape(-1).tolist())
    else:
        proto.tensor_content = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
