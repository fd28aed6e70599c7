"""The ops of asyncflow/ops/image_more.py against numpy references: greedy NMS (V3, V4 padded, V5 with scores and
Soft-NMS, WithOverlaps) and DrawBoundingBoxesV2; every expected value here also matched TF 2.21 (tfdiff)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

BOXES = np.float32([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                    [0, 100, 1, 101], [1, 1, 0, 0]])
SCORES = np.float32([0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.9])
IMG = np.random.RandomState(1).rand(2, 5, 6, 3).astype(np.float32)


def iou(a, b):
    ya, yb = sorted(a[::2]), sorted(b[::2])
    xa, xb = sorted(a[1::2]), sorted(b[1::2])
    inter = max(0, min(ya[1], yb[1]) - max(ya[0], yb[0])) * max(0, min(xa[1], xb[1]) - max(xa[0], xb[0]))
    area_a, area_b = (ya[1] - ya[0]) * (xa[1] - xa[0]), (yb[1] - yb[0]) * (xb[1] - xb[0])
    return 0.0 if area_a <= 0 or area_b <= 0 else inter / (area_a + area_b - inter)


def nms_ref(boxes, scores, k, thresh, score_thresh=-np.inf, overlaps=None):
    """Plain greedy NMS: by score (then index), keep a box unless it overlaps a kept one by more than thresh."""
    kept = []
    for i in sorted(range(len(scores)), key=lambda j: (-scores[j], j)):
        if len(kept) == k or scores[i] <= score_thresh:
            break
        over = [overlaps[i][j] if overlaps is not None else iou(boxes[i], boxes[j]) for j in kept]
        if all(o <= thresh for o in over):
            kept.append(i)
    return np.int32(kept)


def soft_nms_ref(boxes, scores, thresh, sigma):
    scores, alive, kept, kept_scores = list(map(float, scores)), set(range(len(scores))), [], []
    while alive:
        best = min(alive, key=lambda j: (-scores[j], j))
        alive.discard(best)
        kept.append(best)
        kept_scores.append(scores[best])
        for j in list(alive):
            o = iou(boxes[best], boxes[j])
            if o > thresh:
                alive.discard(j)
            else:
                scores[j] *= np.exp(-0.5 * o * o / sigma)
    return np.int32(kept), np.float32(kept_scores)


def draw_ref(images, boxes, colors):
    out = images.copy()
    _, h, w, d = images.shape
    for b in range(images.shape[0]):
        for i, (y1, x1, y2, x2) in enumerate(boxes[b]):
            top, left = int(np.float32(y1) * (h - 1)), int(np.float32(x1) * (w - 1))
            bottom, right = int(np.float32(y2) * (h - 1)), int(np.float32(x2) * (w - 1))
            if top > bottom or left > right or top >= h or left >= w or bottom < 0 or right < 0:
                continue
            color = colors[i % len(colors)][:d]
            for r in range(max(top, 0), min(bottom, h - 1) + 1):
                for c in range(max(left, 0), min(right, w - 1) + 1):
                    if r in (top, bottom) or c in (left, right):
                        out[b, r, c] = color
    return out


OVERLAPS = np.float32([[1, 0.6, 0.1], [0.6, 1, 0.2], [0.1, 0.2, 1]])
TF_COLORS = [[1, 1, 0, 1], [0, 0, 1, 1]]  # the first two rows of TF's default colour table
BOX_SETS = np.float32([[[0, 0, 0.5, 0.5], [0.2, 0.3, 1.2, 0.9]], [[-0.5, 0.1, 0.4, 0.7], [0.5, 0.5, 0.4, 0.6]]])

CASES = [
    Case("non_max_suppression", ("NonMaxSuppressionV3",),
         lambda af: [af.image.non_max_suppression(BOXES, SCORES, 3, 0.5),
                     af.image.non_max_suppression(BOXES, SCORES, 10, 0.5, score_threshold=0.55),
                     af.image.non_max_suppression(BOXES, SCORES, 10, 0.0)],
         [nms_ref(BOXES, SCORES, 3, 0.5), nms_ref(BOXES, SCORES, 10, 0.5, 0.55), nms_ref(BOXES, SCORES, 10, 0.0)]),
    Case("non_max_suppression_padded", ("NonMaxSuppressionV4",),
         lambda af: [*af.image.non_max_suppression_padded(BOXES, SCORES, 6, 0.5, pad_to_max_output_size=True),
                     *af.image.non_max_suppression_padded(BOXES, SCORES, 6, 0.5)],
         # Three boxes survive (pinned with TF 2.21): [3, 0, 5] padded with zeros to six.
         [np.int32([3, 0, 5, 0, 0, 0]), np.int32(3), nms_ref(BOXES, SCORES, 6, 0.5), np.int32(3)]),
    Case("non_max_suppression_with_scores", ("NonMaxSuppressionV5",),
         lambda af: [*af.image.non_max_suppression_with_scores(BOXES, SCORES, 10, 0.5),
                     *af.image.non_max_suppression_with_scores(BOXES, SCORES, 10, 0.5, soft_nms_sigma=0.5)],
         [nms_ref(BOXES, SCORES, 10, 0.5), SCORES[nms_ref(BOXES, SCORES, 10, 0.5)],
          *soft_nms_ref(BOXES, SCORES, 0.5, 0.5)]),
    Case("non_max_suppression_overlaps", ("NonMaxSuppressionWithOverlaps",),
         lambda af: af.image.non_max_suppression_overlaps(OVERLAPS, np.float32([0.5, 0.9, 0.2]), 3, 0.5),
         nms_ref(None, [0.5, 0.9, 0.2], 3, 0.5, overlaps=OVERLAPS)),
    Case("draw_bounding_boxes", ("DrawBoundingBoxesV2",),
         lambda af: [af.image.draw_bounding_boxes(IMG, BOX_SETS),
                     af.image.draw_bounding_boxes(IMG, np.float32([[[0, 0, 0.5, 0.5]], [[0.25, 0.2, 0.75, 0.8]]]),
                                                  colors=np.float32([[0.1, 0.2, 0.3], [0.5, 0.5, 0.5]]))],
         [draw_ref(IMG, BOX_SETS, np.float32(TF_COLORS)),
          draw_ref(IMG, np.float32([[[0, 0, 0.5, 0.5]], [[0.25, 0.2, 0.75, 0.8]]]), np.float32([[0.1, 0.2, 0.3]]))]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_image_more_ops(case):
    check_case(case)


def test_names_shapes_and_errors_as_tf():
    with af.Graph().as_default():
        nms = af.image.non_max_suppression(BOXES, SCORES, 3)
        assert (nms.name, nms.shape.as_list()) == ("non_max_suppression/NonMaxSuppressionV3:0", [None])
        idx, valid = af.image.non_max_suppression_padded(BOXES, SCORES, 6, pad_to_max_output_size=True)
        assert (idx.shape.as_list(), valid.shape.as_list()) == ([6], [])
        assert af.image.draw_bounding_boxes(IMG, BOX_SETS).name == "DrawBoundingBoxes:0"
        with pytest.raises(ValueError, match="boxes must be 2-D"):
            af.image.non_max_suppression(BOXES[None], SCORES, 3)
        with pytest.raises(ValueError, match="must be True for batched input"):
            af.image.non_max_suppression_padded(BOXES[None], SCORES[None], 3)
        bad = af.image.non_max_suppression(BOXES, SCORES, 3, iou_threshold=1.5)
        with af.Session() as sess, pytest.raises(af.errors.InvalidArgumentError, match="iou_threshold must be in"):
            sess.run(bad)
