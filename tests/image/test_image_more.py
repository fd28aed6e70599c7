"""af.image names added late: aliases (extract_patches, resize, resize_with_crop_or_pad, transpose, random_crop),
rgb_to_yuv/yiq and back, sobel_edges, image_gradients and psnr against numpy references written from their
definitions (values checked against TF 2.21 with tfdiff), with finite-difference checks of the composites."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.grad.harness import GradCase, check_gradient

IMG = np.random.RandomState(1).rand(2, 5, 6, 3).astype(np.float32)
RGB_TO_YUV = np.array([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                       [0.114, 0.43601035, -0.10001026]])
RGB_TO_YIQ = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                       [0.114, -0.32134392, 0.31119955]])


def run(fetches):
    with af.Session() as sess:
        return sess.run(fetches)


@pytest.fixture(autouse=True)
def fresh_graph():
    with af.Graph().as_default():
        yield


def sobel_ref(x):
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    out = np.zeros(x.shape + (2,))
    for k, kern in enumerate((ky, ky.T)):
        for i in range(3):
            for j in range(3):
                out[..., k] += kern[i, j] * padded[:, i:i + x.shape[1], j:j + x.shape[2]]
    return out


def test_colour_spaces_round_trip_and_match_the_matrices():
    yuv, yiq = af.image.rgb_to_yuv(IMG), af.image.rgb_to_yiq(IMG)
    back_yuv, back_yiq = af.image.yuv_to_rgb(yuv), af.image.yiq_to_rgb(yiq)
    got = run([yuv, yiq, back_yuv, back_yiq])
    np.testing.assert_allclose(got[0], IMG @ RGB_TO_YUV, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], IMG @ RGB_TO_YIQ, rtol=1e-5, atol=1e-6)
    # TF's inverse matrices are rounded to eight places, so the round trip holds to about 1e-4.
    np.testing.assert_allclose(got[2], IMG, atol=2e-4)
    np.testing.assert_allclose(got[3], IMG, atol=2e-4)
    assert yuv.shape.as_list() == [2, 5, 6, 3] and yuv.dtype == af.float32


def test_sobel_edges_and_image_gradients():
    edges = af.image.sobel_edges(IMG)
    dy, dx = af.image.image_gradients(IMG)
    assert edges.shape.as_list() == [2, 5, 6, 3, 2]
    got_edges, got_dy, got_dx = run([edges, dy, dx])
    np.testing.assert_allclose(got_edges, sobel_ref(IMG), rtol=1e-5, atol=1e-5)
    want_dy, want_dx = np.zeros_like(IMG), np.zeros_like(IMG)
    want_dy[:, :-1] = IMG[:, 1:] - IMG[:, :-1]
    want_dx[:, :, :-1] = IMG[:, :, 1:] - IMG[:, :, :-1]
    np.testing.assert_allclose(got_dy, want_dy, atol=1e-6)
    np.testing.assert_allclose(got_dx, want_dx, atol=1e-6)
    with pytest.raises(ValueError, match="image_gradients expects a 4D tensor"):
        af.image.image_gradients(IMG[0])


def test_psnr_float_and_uint8():
    rng = np.random.RandomState(2)
    a, b = rng.randint(0, 255, (4, 4, 3)).astype(np.uint8), rng.randint(0, 255, (4, 4, 3)).astype(np.uint8)
    p_float, p_uint8 = af.image.psnr(IMG, IMG * 0.9, 1.0), af.image.psnr(a, b, 255)
    assert p_float.name == "PSNR/Identity:0" and p_float.shape.as_list() == [2]
    got = run([p_float, p_uint8])
    mse = np.mean((IMG - IMG * np.float32(0.9)) ** 2, axis=(1, 2, 3))
    np.testing.assert_allclose(got[0], -10 * np.log10(mse), rtol=1e-4)
    mse8 = np.mean(((a / 255.0) - (b / 255.0)) ** 2)
    np.testing.assert_allclose(got[1], -10 * np.log10(mse8), rtol=1e-4)
    assert got[1].dtype == np.float32


def test_aliases_are_the_tf1_functions():
    assert af.image.resize is af.image.resize_images
    assert af.image.resize_with_crop_or_pad is af.image.resize_image_with_crop_or_pad
    assert af.image.transpose is af.image.transpose_image
    assert af.image.random_crop is af.random_crop and af.image.extract_image_patches is af.extract_image_patches
    p = af.image.extract_patches(IMG, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    q = af.extract_image_patches(IMG, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    assert p.shape.as_list() == [2, 4, 5, 12]
    np.testing.assert_array_equal(*run([p, q]))


@pytest.mark.parametrize("case", [
    GradCase("sobel_edges", ("DepthwiseConv2dNative",), lambda af, x: af.image.sobel_edges(x),
             [np.random.RandomState(3).randn(1, 3, 4, 2)]),
    GradCase("rgb_to_yiq", ("MatMul",), lambda af, x: af.image.rgb_to_yiq(x), [np.random.RandomState(4).rand(2, 3, 3)]),
    GradCase("image_gradients", ("Sub",), lambda af, x: list(af.image.image_gradients(x)),
             [np.random.RandomState(5).randn(1, 3, 3, 2)]),
], ids=lambda c: c.id)
def test_composite_gradients(case):
    check_gradient(case)
