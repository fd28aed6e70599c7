"""More of tf.compat.v1.image: TF1's other names for functions asyncflow has (extract_patches,
extract_image_patches, random_crop, resize = resize_images, resize_with_crop_or_pad, transpose), the
colour-space matrices rgb_to_yuv / yuv_to_rgb / rgb_to_yiq / yiq_to_rgb, sobel_edges, image_gradients,
psnr, and the public wrappers of the ops in asyncflow/ops/image_more.py: non_max_suppression (+
_with_scores, _overlaps, _padded) and draw_bounding_boxes. Composites are built as TF 2.21's
image_ops_impl.py builds them, so their gradients come from the ops they use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.image.image_ops import convert_image_dtype, resize_image_with_crop_or_pad, resize_images, transpose_image
from asyncflow.ops import array, math
from asyncflow.ops.array_more import extract_image_patches
from asyncflow.ops.image_more import (
    draw_bounding_boxes_v2_op,
    non_max_suppression_v3_op,
    non_max_suppression_v4_op,
    non_max_suppression_v5_op,
    non_max_suppression_with_overlaps_op,
)
from asyncflow.ops.linalg_einsum import tensordot
from asyncflow.ops.nn_conv_extra import depthwise_conv2d
from asyncflow.ops.random_extra import random_crop
from asyncflow.ops.registry import constant, convert_to_tensor

__all__ = [
    "extract_patches", "extract_image_patches", "random_crop", "resize", "resize_with_crop_or_pad", "transpose",
    "rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "sobel_edges", "image_gradients", "psnr",
    "non_max_suppression", "non_max_suppression_with_scores", "non_max_suppression_overlaps",
    "non_max_suppression_padded", "draw_bounding_boxes",
]

resize = resize_images  # tf.compat.v1.image.resize is the v1 resize_images
resize_with_crop_or_pad = resize_image_with_crop_or_pad
transpose = transpose_image


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: str, name: str | None = None) -> Tensor:
    """`af.image.extract_patches`: extract_image_patches with TF2's argument name `sizes`."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


# -- colour spaces: one 3x3 matrix each, applied to the last dimension (TF's constants) ---------------------
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _colour(images: Any, matrix: list) -> Tensor:
    images = convert_to_tensor(images, name="images")
    kernel = convert_to_tensor(matrix, dtype=images.dtype.base_dtype, name="kernel")
    ndims = images.shape.ndims
    if ndims is None:
        raise ValueError("images must have a known rank (the colour channels are its last dimension)")
    return tensordot(images, kernel, axes=[[ndims - 1], [0]])


def rgb_to_yiq(images: Any) -> Tensor:
    """`af.image.rgb_to_yiq`: RGB (last dimension, values in [0, 1]) to YIQ."""
    return _colour(images, _RGB_TO_YIQ)


def yiq_to_rgb(images: Any) -> Tensor:
    """`af.image.yiq_to_rgb`: YIQ to RGB."""
    return _colour(images, _YIQ_TO_RGB)


def rgb_to_yuv(images: Any) -> Tensor:
    """`af.image.rgb_to_yuv`: RGB (last dimension, values in [0, 1]) to YUV."""
    return _colour(images, _RGB_TO_YUV)


def yuv_to_rgb(images: Any) -> Tensor:
    """`af.image.yuv_to_rgb`: YUV to RGB."""
    return _colour(images, _YUV_TO_RGB)


# -- edges and gradients ----------------------------------------------------------------------------------------
def sobel_edges(image: Any) -> Tensor:
    """`af.image.sobel_edges`: [batch, h, w, d, 2], the vertical and horizontal Sobel responses of each channel
    (reflect-padded, so the output keeps the image's size)."""
    image = convert_to_tensor(image)
    static_shape = image.shape
    image_shape = array.shape(image)
    kernels = np.float64([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])
    kernels = np.expand_dims(np.transpose(kernels, (1, 2, 0)), -2)  # [3, 3, 1, 2]
    kernels_t = constant(kernels, dtype=image.dtype.base_dtype)
    kernels_t = array.tile(kernels_t, array.stack([1, 1, image_shape[-1], 1]), name="sobel_filters")
    padded = array.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = depthwise_conv2d(padded, kernels_t, [1, 1, 1, 1], "VALID")
    output = array.reshape(output, array.concat([image_shape, [2]], 0))
    output.set_shape(static_shape.concatenate([2]))
    return output


def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """`af.image.image_gradients`: (dy, dx), the one-step forward differences of a [batch, h, w, d] image, with
    zeros in the last row (dy) and column (dx)."""
    image = convert_to_tensor(image)
    if image.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {image.shape}.")
    image_shape = array.shape(image)
    batch_size, height, width, depth = array.unstack(image_shape)
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    dy = array.concat([dy, array.zeros(array.stack([batch_size, 1, width, depth]), image.dtype.base_dtype)], 1)
    dy = array.reshape(dy, image_shape)
    dx = array.concat([dx, array.zeros(array.stack([batch_size, height, 1, depth]), image.dtype.base_dtype)], 2)
    dx = array.reshape(dx, image_shape)
    return dy, dx


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """`af.image.psnr`: 20 log10(max_val) - 10 log10(mse) over the last three dimensions, in float32."""
    with name_scope(name, "PSNR", [a, b]):
        a, b = convert_to_tensor(a), convert_to_tensor(b)
        if a.shape.ndims is not None and b.shape.ndims is not None and not a.shape.is_compatible_with(b.shape):
            raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible (psnr's images a and b)")
        if a.shape.ndims is not None and a.shape.ndims < 3:
            raise ValueError(f"Shape {a.shape} must have rank >= 3 (psnr's images)")
        max_val = math.cast(max_val, a.dtype.base_dtype)
        max_val = convert_image_dtype(max_val, dtypes.float32)
        a = convert_image_dtype(a, dtypes.float32)
        b = convert_image_dtype(b, dtypes.float32)
        mse = math.reduce_mean(math.squared_difference(a, b), [-3, -2, -1])
        value = math.subtract(20 * math.log(max_val) / math.log(10.0),
                              np.float32(10 / np.log(10)) * math.log(mse), name="psnr")
        return array.identity(value)


# -- non-max suppression and boxes -------------------------------------------------------------------------------
def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: float = 0.5,
                        score_threshold: float = float("-inf"), name: str | None = None) -> Tensor:
    """`af.image.non_max_suppression`: indices of the boxes greedy NMS keeps, best score first."""
    with name_scope(name, "non_max_suppression"):
        iou_threshold = convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = convert_to_tensor(score_threshold, name="score_threshold")
        return non_max_suppression_v3_op(boxes, scores, max_output_size, iou_threshold, score_threshold)


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: float = 0.5,
                                    score_threshold: float = float("-inf"), soft_nms_sigma: float = 0.0,
                                    name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.image.non_max_suppression_with_scores`: (indices, scores) kept by NMS, or by Soft-NMS when
    soft_nms_sigma > 0 (the returned scores are then the decayed ones)."""
    with name_scope(name, "non_max_suppression_with_scores"):
        iou_threshold = convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = convert_to_tensor(score_threshold, name="score_threshold")
        soft_nms_sigma = convert_to_tensor(soft_nms_sigma, name="soft_nms_sigma")
        indices, kept_scores, _ = non_max_suppression_v5_op(boxes, scores, max_output_size, iou_threshold,
                                                            score_threshold, soft_nms_sigma,
                                                            pad_to_max_output_size=False)
        return indices, kept_scores


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any, overlap_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"), name: str | None = None) -> Tensor:
    """`af.image.non_max_suppression_overlaps`: greedy NMS over a given [n, n] overlap matrix."""
    with name_scope(name, "non_max_suppression_overlaps"):
        overlap_threshold = convert_to_tensor(overlap_threshold, name="overlap_threshold")
        return non_max_suppression_with_overlaps_op(overlaps, scores, max_output_size, overlap_threshold,
                                                    score_threshold)


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: float = 0.5,
                               score_threshold: float = float("-inf"), pad_to_max_output_size: bool = False,
                               name: str | None = None, sorted_input: bool = False,
                               canonicalized_coordinates: bool = False, tile_size: int = 512) -> tuple[Tensor, Tensor]:
    """`af.image.non_max_suppression_padded`: (indices, num_valid), the indices zero-padded to max_output_size when
    pad_to_max_output_size; one image ([num_boxes, 4]) only (batched boxes are not in asyncflow yet)."""
    del sorted_input, canonicalized_coordinates, tile_size  # speed knobs of TF's tiled version; same result
    boxes = convert_to_tensor(boxes)
    if boxes.shape.ndims is not None and boxes.shape.ndims > 2:
        if not pad_to_max_output_size:
            raise ValueError(f"'pad_to_max_output_size' (value {pad_to_max_output_size}) must be True for batched "
                             "input")
        raise NotImplementedError("non_max_suppression_padded: batched boxes are not supported in asyncflow yet; "
                                  "use boxes of shape [num_boxes, 4]")
    with name_scope(name, "non_max_suppression_padded"):
        iou_threshold = convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = convert_to_tensor(score_threshold, name="score_threshold")
        indices, valid = non_max_suppression_v4_op(boxes, scores, max_output_size, iou_threshold, score_threshold,
                                                   pad_to_max_output_size=bool(pad_to_max_output_size))
        return indices, valid


def draw_bounding_boxes(images: Any, boxes: Any, name: str | None = None, colors: Any = None) -> Tensor:
    """`af.image.draw_bounding_boxes`: the 1-pixel outlines of `boxes` ([batch, n, 4], relative [y1, x1, y2, x2])
    drawn on float images in `colors` (RGBA rows, cycled; TF's table of ten when None)."""
    if colors is None:  # TF runs its V1 op then: the node is named after it
        return draw_bounding_boxes_v2_op(images, boxes, np.zeros([0, 0], np.float32), name=name or "DrawBoundingBoxes")
    return draw_bounding_boxes_v2_op(images, boxes, colors, name=name)
