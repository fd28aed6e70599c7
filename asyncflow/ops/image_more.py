"""Image ops of tf.image that detection and augmentation code calls: greedy non-max suppression
(NonMaxSuppressionV3, V4 padded, V5 with scores and Soft-NMS, WithOverlaps) and DrawBoundingBoxesV2.
The public functions are in asyncflow/image/image_more.py.

NMS, as TF's kernels: candidates whose score exceeds `score_threshold` are visited by decreasing
score (ties: the lower index first); a candidate is kept unless its IoU (or given overlap) with a
kept box exceeds the threshold; at most `max_output_size` are kept. Boxes are [y1, x1, y2, x2] in
any corner order; a box of zero area overlaps nothing. With Soft-NMS (sigma > 0, V5) a kept box
decays the later scores by exp(-iou^2 / (2 sigma)) instead of removing them. None of these ops is
differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.ops.registry import BuildContext, op
from asyncflow.shapes import TensorShape

_NMS_FLOAT = (dtypes.float16, dtypes.float32)


def _iou_matrix(boxes: np.ndarray) -> np.ndarray:
    b = boxes.astype(np.float64)
    y1, y2 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    x1, x2 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (y2 - y1) * (x2 - x1)
    ih = np.maximum(np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]), 0)
    iw = np.maximum(np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]), 0)
    inter = ih * iw
    union = area[:, None] + area[None] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where((area[:, None] > 0) & (area[None] > 0), inter / union, 0.0)
    return iou


def _greedy(overlap: np.ndarray, scores: np.ndarray, max_out: int, threshold: float, score_threshold: float,
            sigma: float = 0.0) -> tuple[list[int], list[float]]:
    scores = scores.astype(np.float64).copy()
    alive = scores > score_threshold
    kept: list[int] = []
    kept_scores: list[float] = []
    scale = -0.5 / sigma if sigma > 0 else 0.0
    while len(kept) < max_out and alive.any():
        candidates = np.flatnonzero(alive)
        best = candidates[np.argmax(scores[candidates])]  # argmax takes the lowest index among ties
        alive[best] = False
        kept.append(int(best))
        kept_scores.append(float(scores[best]))
        row = overlap[best]
        alive &= row <= threshold
        if sigma > 0:
            scores = np.where(alive, scores * np.exp(scale * row * row), scores)
            alive &= scores > score_threshold
    return kept, kept_scores


def _check_nms_inputs(k: Any, boxes: np.ndarray, scores: np.ndarray, max_out: Any, thresh: Any, what: str) -> int:
    if boxes.ndim != 2 or (what == "boxes" and boxes.shape[1] != 4):
        raise ValueError(f"{k.op_type} '{k.name}': {what} must be {'[num_boxes, 4]' if what == 'boxes' else '2-D'}, "
                         f"got shape {list(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{k.op_type} '{k.name}': scores must be [num_boxes] with num_boxes = {boxes.shape[0]}, got "
                         f"shape {list(scores.shape)}")
    max_out = int(np.asarray(max_out))
    if max_out < 0:
        raise ValueError(f"{k.op_type} '{k.name}': max_output_size must be non-negative, got {max_out}")
    if what == "boxes" and not 0 <= float(np.asarray(thresh)) <= 1:
        raise ValueError(f"{k.op_type} '{k.name}': iou_threshold must be in [0, 1], got {float(np.asarray(thresh))}")
    return max_out


def _nms_shape(b: BuildContext, n_boxes_dims: int = 2) -> None:
    if b.shape(0).ndims not in (None, n_boxes_dims):
        raise b.error(f"boxes must be {n_boxes_dims}-D, got shape {b.shape(0)}")
    if b.shape(1).ndims not in (None, 1):
        raise b.error(f"scores must be 1-D, got shape {b.shape(1)}")
    for i in range(2, len(b.inputs)):
        if b.shape(i).ndims not in (None, 0):
            raise b.error(f"input {i} must be a scalar, got shape {b.shape(i)}")


def _v3_shape(b: BuildContext) -> TensorShape:
    _nms_shape(b)
    return TensorShape([None])


@op("NonMaxSuppressionV3", inputs="boxes: T, scores: T, max_output_size: int32, iou_threshold: T_threshold, "
    "score_threshold: T_threshold", outputs="selected_indices: int32",
    types={"T": _NMS_FLOAT, "T_threshold": _NMS_FLOAT}, type_defaults={"T_threshold": dtypes.float32},
    shape=_v3_shape, differentiable=False)
def non_max_suppression_v3_op(k, boxes, scores, max_output_size, iou_threshold, score_threshold):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    max_out = _check_nms_inputs(k, boxes, scores, max_output_size, iou_threshold, "boxes")
    kept, _ = _greedy(_iou_matrix(boxes), scores, max_out, float(iou_threshold), float(score_threshold))
    return np.asarray(kept, np.int32)


def _v4_shape(b: BuildContext) -> list[TensorShape]:
    _nms_shape(b)
    size = b.const(2)
    padded = b.attrs["pad_to_max_output_size"] and size is not None
    return [TensorShape([int(size) if padded else None]), TensorShape([])]


@op("NonMaxSuppressionV4", inputs="boxes: T, scores: T, max_output_size: int32, iou_threshold: T_threshold, "
    "score_threshold: T_threshold", outputs="selected_indices: int32, valid_outputs: int32",
    types={"T": _NMS_FLOAT, "T_threshold": _NMS_FLOAT}, type_defaults={"T_threshold": dtypes.float32},
    attrs={"pad_to_max_output_size": False}, shape=_v4_shape, differentiable=False)
def non_max_suppression_v4_op(k, boxes, scores, max_output_size, iou_threshold, score_threshold):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    max_out = _check_nms_inputs(k, boxes, scores, max_output_size, iou_threshold, "boxes")
    kept, _ = _greedy(_iou_matrix(boxes), scores, max_out, float(iou_threshold), float(score_threshold))
    valid = len(kept)
    if k.pad_to_max_output_size:
        kept = kept + [0] * (max_out - valid)
    return np.asarray(kept, np.int32), np.int32(valid)


def _v5_shape(b: BuildContext) -> list[TensorShape]:
    _nms_shape(b)
    size = b.const(2)
    n = int(size) if b.attrs["pad_to_max_output_size"] and size is not None else None
    return [TensorShape([n]), TensorShape([n]), TensorShape([])]


@op("NonMaxSuppressionV5", inputs="boxes: T, scores: T, max_output_size: int32, iou_threshold: T, "
    "score_threshold: T, soft_nms_sigma: T", outputs="selected_indices: int32, selected_scores: T, "
    "valid_outputs: int32", types={"T": _NMS_FLOAT}, attrs={"pad_to_max_output_size": False}, shape=_v5_shape,
    differentiable=False)
def non_max_suppression_v5_op(k, boxes, scores, max_output_size, iou_threshold, score_threshold, sigma):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    max_out = _check_nms_inputs(k, boxes, scores, max_output_size, iou_threshold, "boxes")
    if float(sigma) < 0:
        raise ValueError(f"NonMaxSuppressionV5 '{k.name}': soft_nms_sigma must be non-negative, got {float(sigma)}")
    kept, kept_scores = _greedy(_iou_matrix(boxes), scores, max_out, float(iou_threshold), float(score_threshold),
                                float(sigma))
    valid = len(kept)
    if k.pad_to_max_output_size:
        kept, kept_scores = kept + [0] * (max_out - valid), kept_scores + [0.0] * (max_out - valid)
    return np.asarray(kept, np.int32), np.asarray(kept_scores, k.out_dtypes[1]), np.int32(valid)


@op("NonMaxSuppressionWithOverlaps", inputs="overlaps: float32, scores: float32, max_output_size: int32, "
    "overlap_threshold: float32, score_threshold: float32", outputs="selected_indices: int32", shape=_v3_shape,
    differentiable=False)
def non_max_suppression_with_overlaps_op(k, overlaps, scores, max_output_size, overlap_threshold,
                                               score_threshold):
    overlaps, scores = np.asarray(overlaps), np.asarray(scores)
    max_out = _check_nms_inputs(k, overlaps, scores, max_output_size, overlap_threshold, "overlaps")
    if overlaps.shape[0] != overlaps.shape[1]:
        raise ValueError(f"NonMaxSuppressionWithOverlaps '{k.name}': overlaps must be square, got shape "
                         f"{list(overlaps.shape)}")
    kept, _ = _greedy(overlaps.astype(np.float64), scores, max_out, float(overlap_threshold), float(score_threshold))
    return np.asarray(kept, np.int32)


# -- draw_bounding_boxes ---------------------------------------------------------------------------------------
_DEFAULT_COLORS = np.float32([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                              [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]])


def _draw_shape(b: BuildContext) -> TensorShape:
    if b.shape(0).ndims not in (None, 4):
        raise b.error(f"images must be 4-D [batch, height, width, depth], got shape {b.shape(0)}")
    if b.shape(1).ndims not in (None, 3):
        raise b.error(f"boxes must be 3-D [batch, num_boxes, 4], got shape {b.shape(1)}")
    return b.shape(0)


@op("DrawBoundingBoxesV2", inputs="images: T, boxes: float32, colors: float32", outputs="output: T",
    types={"T": (dtypes.float32, dtypes.float16)}, shape=_draw_shape, differentiable=False)
def draw_bounding_boxes_v2_op(k, images, boxes, colors):
    images, boxes, colors = np.asarray(images), np.asarray(boxes), np.asarray(colors, np.float32)
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise ValueError(f"DrawBoundingBoxesV2 '{k.name}': images must be [batch, height, width, depth] with depth "
                         f"1, 3 or 4, got shape {list(images.shape)}")
    if boxes.ndim != 3 or boxes.shape[2] != 4 or boxes.shape[0] != images.shape[0]:
        raise ValueError(f"DrawBoundingBoxesV2 '{k.name}': boxes must be [batch, num_boxes, 4] with the images' "
                         f"batch, got shape {list(boxes.shape)}")
    if colors.size == 0:
        colors = _DEFAULT_COLORS
    if colors.ndim != 2 or colors.shape[1] < images.shape[3]:
        raise ValueError(f"DrawBoundingBoxesV2 '{k.name}': colors must be [num_colors, >= depth], got shape "
                         f"{list(colors.shape)}")
    out = images.copy()
    height, width, depth = images.shape[1:]
    for b in range(images.shape[0]):
        for i, box in enumerate(boxes[b]):
            color = colors[i % len(colors), :depth].astype(out.dtype)
            # TF truncates each scaled corner toward zero, then skips boxes wholly outside the image.
            top, left = int(box[0] * (height - 1)), int(box[1] * (width - 1))
            bottom, right = int(box[2] * (height - 1)), int(box[3] * (width - 1))
            if top > bottom or left > right or top >= height or left >= width or bottom < 0 or right < 0:
                continue
            t, btm = max(top, 0), min(bottom, height - 1)
            lft, rgt = max(left, 0), min(right, width - 1)
            for row in (top, bottom):  # an edge outside the image is not drawn
                if 0 <= row < height:
                    out[b, row, lft:rgt + 1] = color
            for col in (left, right):
                if 0 <= col < width:
                    out[b, t:btm + 1, col] = color
    return out
