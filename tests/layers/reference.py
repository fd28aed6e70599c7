"""numpy references for the layer tests: convolution, transposed convolution and pooling in NHWC (the tests
transpose channels_first data around them), and a finite-difference gradient of a loss w.r.t. a variable."""

from __future__ import annotations

import numpy as np


def _same_pads(size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    eff = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def conv2d(x: np.ndarray, w: np.ndarray, strides=(1, 1), padding="valid", dilation=(1, 1)) -> np.ndarray:
    """x [N,H,W,C], w [KH,KW,C,F] -> cross-correlation as TF's Conv2D."""
    kh, kw = w.shape[:2]
    if padding == "same":
        (t, b), (left, r) = (_same_pads(x.shape[1], kh, strides[0], dilation[0]),
                             _same_pads(x.shape[2], kw, strides[1], dilation[1]))
        x = np.pad(x, [(0, 0), (t, b), (left, r), (0, 0)])
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (x.shape[1] - eh) // strides[0] + 1
    ow = (x.shape[2] - ew) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dilation[0]: i * dilation[0] + (oh - 1) * strides[0] + 1: strides[0],
                      j * dilation[1]: j * dilation[1] + (ow - 1) * strides[1] + 1: strides[1], :]
            out += patch @ w[i, j]
    return out


def conv2d_transpose(x: np.ndarray, w: np.ndarray, out_hw: tuple[int, int], strides=(1, 1),
                     padding="valid") -> np.ndarray:
    """x [N,H,W,C_in], w [KH,KW,F,C_in] -> [N, out_h, out_w, F]: the input gradient of conv2d (scatter form)."""
    kh, kw = w.shape[:2]
    oh, ow = out_hw
    pt = pl = 0
    if padding == "same":
        pt = _same_pads(oh, kh, strides[0])[0]
        pl = _same_pads(ow, kw, strides[1])[0]
    full = np.zeros((x.shape[0], oh + kh + 2 * strides[0], ow + kw + 2 * strides[1], w.shape[2]), np.float64)
    for a in range(x.shape[1]):
        for b in range(x.shape[2]):
            contrib = np.einsum("nc,ijfc->nijf", x[:, a, b, :], w)
            full[:, a * strides[0]: a * strides[0] + kh, b * strides[1]: b * strides[1] + kw, :] += contrib
    return full[:, pt: pt + oh, pl: pl + ow, :]


def pool2d(x: np.ndarray, size, strides, padding="valid", mode="max") -> np.ndarray:
    """x [N,H,W,C]; SAME pads are ignored by both max and average (TF's rule)."""
    n, h, w, c = x.shape
    if padding == "same":
        oh, ow = -(-h // strides[0]), -(-w // strides[1])
        pt = _same_pads(h, size[0], strides[0])[0]
        pl = _same_pads(w, size[1], strides[1])[0]
    else:
        oh, ow = (h - size[0]) // strides[0] + 1, (w - size[1]) // strides[1] + 1
        pt = pl = 0
    out = np.zeros((n, oh, ow, c), np.float64)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - pt, j * strides[1] - pl
            win = x[:, max(r0, 0): r0 + size[0], max(c0, 0): c0 + size[1], :]
            out[:, i, j, :] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return out


def numeric_grad(sess, loss, variable, feed=None, eps: float = 1e-6) -> np.ndarray:
    """d loss / d variable by central differences, loading perturbed values into the variable."""
    base = sess.run(variable)
    grad = np.zeros_like(base, dtype=np.float64)
    for i in range(base.size):
        for sign in (1, -1):
            value = base.copy()
            value.flat[i] += sign * eps
            variable.load(value, sess)
            grad.flat[i] += sign * sess.run(loss, feed) / (2 * eps)
    variable.load(base, sess)
    return grad


def separable_conv2d(x: np.ndarray, depthwise: np.ndarray, pointwise: np.ndarray, strides=(1, 1), padding="valid",
                     dilation=(1, 1)) -> np.ndarray:
    """Depthwise (channel c with multiplier m -> output channel c * M + m), then a 1x1 pointwise convolution."""
    c, m = depthwise.shape[2:]
    parts = [conv2d(x[..., i:i + 1], depthwise[:, :, i:i + 1, j:j + 1], strides, padding, dilation)
             for i in range(c) for j in range(m)]
    return np.concatenate(parts, axis=-1) @ pointwise[0, 0]
