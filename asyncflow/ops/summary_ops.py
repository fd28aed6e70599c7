"""Summary ops, as TF1's: each kernel returns one serialized `Summary` protobuf (a scalar string).

`ScalarSummary` (one `simple_value` per tag), `HistogramSummary` (TF's default buckets),
`ImageSummary` (PNG, floats normalised per image), `AudioSummaryV2` (16-bit WAV),
`TensorSummaryV2` (a `TensorProto` with its `SummaryMetadata`: text summaries are this with the
`text` plugin) and `MergeSummary` (the union of several, refusing a tag seen twice). Their values
are computed in `summary_ops_encode.py`; the protos are TensorBoard's (the `tensorboard` extra).
None is differentiable. The `af.summary` functions that build them live in `asyncflow/summary/`.
Bad input fails the step with TF's `InvalidArgumentError` and TF's message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.ops.registry import ALL_TYPES, REAL, op
from asyncflow.ops.summary_ops_encode import (
    encode_png,
    encode_wav,
    histogram_into,
    normalize_image,
    protos,
    tensor_into,
)
from asyncflow.shapes import TensorShape

_IMAGE_TYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)
DEFAULT_BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)  # TF's ImageSummary `bad_color` default: red


def _scalar_string(b: Any) -> list[TensorShape]:
    return [TensorShape([])]


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, message)


def _dims(value: np.ndarray) -> str:
    """A shape as TF's `TensorShape::DebugString`: `[2,3]`."""
    return "[" + ",".join(str(d) for d in np.shape(value)) + "]"


def _text(tag: Any) -> str:
    return tag.decode("utf-8", "replace") if isinstance(tag, bytes) else str(tag)


def _scalar_tag(k: Any, tag: Any, message: str) -> str:
    if np.ndim(tag) != 0:
        raise _invalid(k, message)
    return _text(np.asarray(tag)[()])


def _serialized(summary: Any) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


@op("ScalarSummary", inputs="tags: string, values: T", outputs="summary: string", types={"T": REAL},
    shape=_scalar_string, differentiable=False)
def scalar_summary(k, tags, values):
    tags, values = np.asarray(tags), np.asarray(values)
    if tags.shape != values.shape:
        single = f" (tag '{_text(tags.reshape(-1)[0])}')" if tags.size == 1 else ""
        raise _invalid(k, f"tags and values are not the same shape: {_dims(tags)} != {_dims(values)}{single}")
    summary = protos(k).summary_pb2.Summary()
    for tag, value in zip(tags.reshape(-1).tolist(), values.reshape(-1)):
        summary.value.add(tag=_text(tag), simple_value=float(np.float32(value)))
    return _serialized(summary)


@op("HistogramSummary", inputs="tag: string, values: T", outputs="summary: string", types={"T": REAL},
    type_defaults={"T": dtypes.float32}, shape=_scalar_string, differentiable=False)
def histogram_summary(k, tag, values):
    tag = _scalar_tag(k, tag, "tags must be scalar")
    flat = np.asarray(values).astype(np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:  # the C++ loop stops at the first non-finite value, with one of two messages
        what = "Nan in summary histogram for: " if np.isnan(flat[bad[0]]) else "Infinity in Histogram for: "
        raise _invalid(k, what + k.name)
    summary = protos(k).summary_pb2.Summary()
    histogram_into(summary.value.add(tag=tag).histo, flat)
    return _serialized(summary)


@op("ImageSummary", inputs="tag: string, tensor: T", outputs="summary: string", types={"T": _IMAGE_TYPES},
    type_defaults={"T": dtypes.float32}, attrs={"max_images": 3, "bad_color": DEFAULT_BAD_COLOR},
    shape=_scalar_string, differentiable=False)
def image_summary(k, tag, tensor):
    tag = _scalar_tag(k, tag, "Tags must be a scalar")
    images = np.asarray(tensor)
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise _invalid(k, f"Tensor must be 4-D with last dim 1, 3, or 4, not {_dims(images)}")
    batch, height, width, depth = images.shape
    bad_color = np.asarray(k.bad_color, dtype=np.uint8).reshape(-1)
    if images.dtype != np.uint8 and bad_color.size < depth:
        raise _invalid(k, f"expected depth <= bad_color.size, got depth = {depth}, bad_color.size = "
                          f"{bad_color.size}")
    summary = protos(k).summary_pb2.Summary()
    for i in range(min(k.max_images, batch)):
        # The suffix depends on how many images were asked for, not on how many the batch has (TF).
        value = summary.value.add(tag=f"{tag}/image/{i}" if k.max_images > 1 else f"{tag}/image")
        pixels = images[i] if images.dtype == np.uint8 else normalize_image(images[i], bad_color)
        value.image.height, value.image.width, value.image.colorspace = height, width, depth
        value.image.encoded_image_string = encode_png(k, pixels)
    return _serialized(summary)


@op("AudioSummaryV2", inputs="tag: string, tensor: float32, sample_rate: float32", outputs="summary: string",
    attrs={"max_outputs": 3}, shape=_scalar_string, differentiable=False)
def audio_summary_v2(k, tag, tensor, sample_rate):
    tag = _scalar_tag(k, tag, "Tag must be a scalar")
    if np.size(sample_rate) != 1:
        raise _invalid(k, "sample_rate must be rank-0 or contain a single value")
    rate = float(np.asarray(sample_rate).reshape(-1)[0])
    clips = np.asarray(tensor)
    if clips.ndim not in (2, 3):
        raise _invalid(k, f"Tensor must be 3-D or 2-D, got: {_dims(clips)}")
    if not rate > 0:
        raise _invalid(k, "sample_rate must be > 0")
    if clips.ndim == 2:
        clips = clips[:, :, None]
    batch, frames, channels = clips.shape
    summary = protos(k).summary_pb2.Summary()
    for i in range(min(k.max_outputs, batch)):
        value = summary.value.add(tag=f"{tag}/audio/{i}" if k.max_outputs > 1 else f"{tag}/audio")
        value.audio.sample_rate, value.audio.num_channels, value.audio.length_frames = rate, channels, frames
        value.audio.encoded_audio_string = encode_wav(clips[i], rate)
        value.audio.content_type = "audio/wav"
    return _serialized(summary)


@op("TensorSummaryV2", inputs="tag: string, tensor: T, serialized_summary_metadata: string",
    outputs="summary: string", types={"T": ALL_TYPES}, shape=_scalar_string, differentiable=False)
def tensor_summary_v2(k, tag, tensor, serialized_summary_metadata):
    tag = _scalar_tag(k, tag, "tag must be scalar")
    summary = protos(k).summary_pb2.Summary()
    value = summary.value.add(tag=tag)
    tensor_into(value.tensor, np.asarray(tensor))
    value.metadata.SetInParent()
    try:
        value.metadata.MergeFromString(np.asarray(serialized_summary_metadata).reshape(-1)[0])
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: TF's kernel ignores unparsable metadata too
        value.metadata.Clear()
    return _serialized(summary)


@op("MergeSummary", inputs="inputs: N * string", outputs="summary: string", shape=_scalar_string,
    differentiable=False)
def merge_summary(k, *inputs):
    pb = protos(k)
    merged = pb.summary_pb2.Summary()
    seen: set[str] = set()
    for serialized in inputs:
        for data in np.asarray(serialized).reshape(-1).tolist():
            one = pb.summary_pb2.Summary()
            try:
                one.MergeFromString(data)
            except Exception:  # noqa: BLE001 - protobuf's DecodeError: bad input
                raise _invalid(k, "Could not parse one of the summary inputs") from None
            for value in one.value:
                if value.tag and value.tag in seen:  # untagged values (TensorSummary's) may repeat
                    raise _invalid(k, f"Duplicate tag {value.tag} found in summary inputs ")
                seen.add(value.tag)
                merged.value.add().CopyFrom(value)
    return _serialized(merged)


__all__: list[str] = []
