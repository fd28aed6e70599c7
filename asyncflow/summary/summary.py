"""The summary-building functions of `tf.compat.v1.summary`: scalar, histogram, image, audio, text,
tensor_summary, merge, merge_all.

Names and tags follow TF1's `summary_scope`: a summary named `loss` opens the name scope `loss`
(made unique: `loss_1`, ...), the op takes the scope's name, and the tag is that name; with
`family="f"` the scope is `f/loss` inside the current one and the tag gets `f/` once more in front
(`f/outer/f/loss`), so the family is the TensorBoard tab. Characters outside `[-/\\w.]` become `_`
and leading slashes go (`clean_tag`). Each op lands in `collections` (default
`[GraphKeys.SUMMARIES]`, what `merge_all` reads); `merge` joins ops into one `MergeSummary`.
Nothing here runs per step: building a summary adds ops only when called.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import GraphKeys, Tensor, add_to_collection, get_collection, name_scope
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.ops.summary_ops import (
    audio_summary_v2,
    histogram_summary,
    image_summary,
    merge_summary,
    scalar_summary,
    tensor_summary_v2,
)

log = logging.getLogger("asyncflow.summary")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def clean_tag(name: str | None) -> str | None:
    """A summary name with characters TF1 does not allow in names replaced by `_`, leading `/` dropped."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        log.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def summary_scope(name: str | None, family: str | None = None, default_name: str | None = None,
                  values: Any = None) -> Iterator[tuple[str, str]]:
    """Opens the summary's name scope; yields `(tag, scope)` as TF1's `summary_op_util.summary_scope`."""
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with name_scope(base, default_name, values) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(value: Tensor, collections: Any, default: list[str]) -> None:
    for key in default if collections is None else collections:
        add_to_collection(key, value)


def scalar(name: str, tensor: Any, collections: Any = None, family: str | None = None) -> Tensor:
    """A `Summary` with one `simple_value`. A non-scalar `tensor` fails when run (InvalidArgumentError)."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = scalar_summary(tag, tensor, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram(name: str, values: Any, collections: Any = None, family: str | None = None) -> Tensor:
    """A `Summary` with a histogram of `values` (TF's default buckets); NaN or Inf fail when run."""
    with summary_scope(name, family, values=[values], default_name="HistogramSummary") as (tag, scope):
        value = histogram_summary(tag, values, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Any = None,
          family: str | None = None) -> Tensor:
    """Up to `max_outputs` images of a `[batch, h, w, 1|3|4]` tensor as PNG (tags `name/image[/i]`).

    Float images are scaled into uint8 one image at a time (see `ops/summary_ops_encode.py`).
    Encoding needs Pillow (the `image` extra); without it the op fails when run, with
    `UnimplementedError` naming the extra."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = image_summary(tag, tensor, max_images=max_outputs, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int = 3, collections: Any = None,
          family: str | None = None) -> Tensor:
    """Up to `max_outputs` clips of a `[batch, frames(, channels)]` float tensor in [-1, 1] as WAV."""
    with summary_scope(name, family=family, values=[tensor]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        value = audio_summary_v2(tag, tensor, rate, max_outputs=max_outputs, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def _summary_metadata() -> Any:
    from tensorboard.compat.proto.summary_pb2 import SummaryMetadata

    return SummaryMetadata


def tensor_summary(name: str, tensor: Any, summary_description: str | None = None, collections: Any = None,
                   summary_metadata: Any = None, family: str | None = None, display_name: str | None = None) -> Tensor:
    """A `Summary` holding `tensor` as a `TensorProto`, with its `SummaryMetadata` (TensorSummaryV2)."""
    metadata = _summary_metadata()() if summary_metadata is None else summary_metadata
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    serialized = metadata.SerializeToString()
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = tensor_summary_v2(tag, tensor, serialized, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def text(name: str, tensor: Any, collections: Any = None) -> Tensor:
    """A string tensor for TensorBoard's text tab (a tensor summary with the `text` plugin's metadata)."""
    if not isinstance(tensor, Tensor):
        tensor = convert_to_tensor(tensor)
    if tensor.dtype.base_dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got <dtype: '{tensor.dtype.name}'>")
    metadata_cls = _summary_metadata()
    metadata = metadata_cls(plugin_data=metadata_cls.PluginData(plugin_name="text"))
    return tensor_summary(name=name, tensor=tensor, summary_metadata=metadata, collections=collections)


def merge(inputs: Any, collections: Any = None, name: str | None = None) -> Tensor:
    """One `Summary` with the values of every input (each a serialized `Summary`); a repeated tag fails."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("List argument 'inputs' to 'MergeSummary' Op with length 0 shorter than minimum length 1.")
    name = clean_tag(name)
    with name_scope(name, "Merge", inputs):
        value = merge_summary(inputs, name=name)
        _collect(value, collections, [])
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None, name: str | None = None) -> Tensor | None:
    """`merge` of the collection `key` (filtered by `re.match(scope)`), or None when it is empty."""
    summaries = get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None


__all__ = ["scalar", "histogram", "image", "audio", "text", "tensor_summary", "merge", "merge_all"]
