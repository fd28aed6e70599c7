"""The arithmetic the convolution and pooling kernels share: scratch buffers reused across steps,
zero-padding, im2col (the patch matrix a convolution multiplies by its filter in one GEMM) and
col2im (the scatter-add of a transposed convolution), all in NHWC.

Layout. A patch matrix row is one output pixel; its columns run over (kernel row, kernel column,
input channel), so `patches @ filter.reshape(kh * kw * c, out)` is the forward convolution and
`patchesᵀ @ out_backprop` the filter gradient (grouped convolutions keep one patch matrix per group
and batch the GEMM over the groups). The batch goes in chunks of images whose patches fit in a few
MiB, so the GEMM reads them from cache. The input gradient of a stride-1 convolution is the forward
convolution of the padded out_backprop with the flipped filter (`flipped_pads`, `flipped_filter`);
strided ones compute, per kernel offset, `out_backprop @ filter[offset]ᵀ` (one batched GEMM over
the offsets) and add each block into the strided slice of the padded input that offset read: a loop
over the kh * kw offsets, each one vectorised add, never a loop over pixels.

Max pool gradients (`first_max_hits`) work the same way: one vectorised compare per window offset.

Scratch. The padded input and the patch matrix are large and the same size every step, so each
kernel context (one per node per plan) keeps a `Scratch` of them. Two steps of one plan may run the
same kernel at once in different threads, so a buffer is taken for a call and given back after (a
second caller meanwhile gets a buffer of its own); a scratch buffer is never an op's output.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

# A patch matrix holds at most this many elements (4 MiB of float32): a batch goes in chunks of images, so
# that each chunk's patches are still in cache when its GEMM reads them (measured: 20% faster than one
# patch matrix for the whole batch at mnist_deep's second convolution, and far less scratch memory).
PATCH_ELEMENTS = 1 << 20
_KEEP_KEYS = 6  # a context keeps buffers of this many (tag, shape, dtype) keys; older ones are dropped

Pads = tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]


class Scratch:
    """Work buffers of one kernel context, keyed by (tag, shape, dtype); contents are undefined when taken."""

    def __init__(self) -> None:
        self._free: dict[tuple, list[np.ndarray]] = {}
        self._lock = threading.Lock()

    def take(self, tag: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        key = (tag, tuple(shape), np.dtype(dtype))
        with self._lock:
            free = self._free.get(key)
            if free:
                return free.pop()
        return np.empty(shape, dtype)

    def give(self, tag: str, buffer: np.ndarray) -> None:
        key = (tag, buffer.shape, buffer.dtype)
        with self._lock:
            free = self._free.pop(key, None) or []  # re-inserted last: the dict is kept in order of use
            free.append(buffer)
            self._free[key] = free
            while len(self._free) > _KEEP_KEYS:
                del self._free[next(iter(self._free))]

    @contextmanager
    def borrow(self, tag: str, shape: tuple[int, ...], dtype: Any) -> Iterator[np.ndarray]:
        buffer = self.take(tag, shape, dtype)
        try:
            yield buffer
        finally:
            self.give(tag, buffer)


_NO_SCRATCH = Scratch()  # for callers without a context (a fresh buffer each time: nothing is kept)


def scratch(k: Any) -> Scratch:
    """The Scratch kept on kernel context `k` (made on first use)."""
    found = getattr(k, "_scratch", None)
    if found is None:
        try:
            found = k._scratch = Scratch()
        except AttributeError:  # a context that takes no attributes: no reuse
            return _NO_SCRATCH
    return found


def has_padding(pads: Pads) -> bool:
    return any(p for pair in pads for p in pair)


def pad_into(buffer: np.ndarray, x: np.ndarray, pads: Pads, fill: Any = 0) -> np.ndarray:
    """`buffer` (of the padded shape) holding x at its pads' offset and `fill` around it."""
    (_, _), (top, bottom), (left, right), (_, _) = pads
    h, w = x.shape[1], x.shape[2]
    if top:
        buffer[:, :top] = fill
    if bottom:
        buffer[:, top + h:] = fill
    if left:
        buffer[:, top:top + h, :left] = fill
    if right:
        buffer[:, top:top + h, left + w:] = fill
    buffer[:, top:top + h, left:left + w] = x
    return buffer


def windows(x: np.ndarray, kh: int, kw: int, out_hw: tuple[int, int], strides: tuple[int, int],
            dilations: tuple[int, int]) -> np.ndarray:
    """The read-only [n, oh, ow, kh, kw, c] view of padded NHWC `x` that im2col copies."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    s0, s1, s2, s3 = x.strides
    return as_strided(x, (x.shape[0], oh, ow, kh, kw, x.shape[3]), (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3),
                      writeable=False)


def offset_slices(a: int, b: int, out_hw: tuple[int, int], strides: tuple[int, int],
                  dilations: tuple[int, int]) -> tuple[slice, slice]:
    """The rows and columns of the padded input that kernel offset (a, b) meets, one per output position."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    return slice(a * dh, a * dh + (oh - 1) * sh + 1, sh), slice(b * dw, b * dw + (ow - 1) * sw + 1, sw)


def chunk_images(n: int, per_image: int) -> int:
    """How many images' patches fit in one patch matrix."""
    return max(1, min(n, PATCH_ELEMENTS // max(1, per_image)))


def conv_forward(out: np.ndarray, x: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                 dilations: tuple[int, int], pool: Scratch) -> None:
    """out[n, i, j, :] = the (dilated, strided) window of padded NHWC `x` at (i, j) · w: im2col and one GEMM
    per chunk of images (a batched GEMM over the groups when the convolution is grouped). `out` is
    C-contiguous."""
    n, oh, ow, out_depth = out.shape
    kh, kw, f_depth, _ = w.shape
    depth = x.shape[3]
    groups = depth // f_depth
    if kh == kw == 1 and strides == (1, 1) and x.flags.c_contiguous and groups == 1:  # the input is the matrix
        np.matmul(x.reshape(-1, depth), w.reshape(depth, out_depth), out=out.reshape(-1, out_depth))
        return
    w_groups = _group_major(w.reshape(kh * kw, f_depth, groups, out_depth // groups))  # [g, taps*f, out of g]
    for start, count, patches in _patch_chunks(x, (kh, kw), (oh, ow), strides, dilations, groups, pool):
        rows = count * oh * ow
        target = out[start:start + count].reshape(rows, out_depth)
        if groups == 1:
            np.matmul(patches[0], w_groups[0], out=target)
        else:
            target.reshape(rows, groups, -1)[...] = np.matmul(patches, w_groups).transpose(1, 0, 2)


def conv_filter_grad(dw: np.ndarray, x: np.ndarray, dy: np.ndarray, strides: tuple[int, int],
                     dilations: tuple[int, int], pool: Scratch) -> None:
    """dw = patchesᵀ · dy over padded NHWC `x`, one GEMM per chunk of images (batched over the groups)."""
    kh, kw, f_depth, out_depth = dw.shape
    n, oh, ow, _ = dy.shape
    groups = x.shape[3] // f_depth
    per_group = out_depth // groups
    total = np.zeros((groups, kh * kw * f_depth, per_group), dw.dtype) if groups > 1 else None
    for start, count, patches in _patch_chunks(x, (kh, kw), (oh, ow), strides, dilations, groups, pool):
        rows = count * oh * ow
        grads = dy[start:start + count].reshape(rows, out_depth)
        if groups == 1:
            target = dw.reshape(kh * kw * f_depth, out_depth)
            if start == 0:
                np.matmul(patches[0].T, grads, out=target)
            else:
                target += patches[0].T @ grads
        else:
            total += np.matmul(patches.transpose(0, 2, 1), grads.reshape(rows, groups, per_group).transpose(1, 0, 2))
    if total is not None:  # [g, taps, f, out of g] -> [taps, f, g, out of g]
        dw.reshape(kh * kw, f_depth, groups, per_group)[...] = total.reshape(groups, kh * kw, f_depth,
                                                                             per_group).transpose(1, 2, 0, 3)


def _group_major(w: np.ndarray) -> np.ndarray:
    """A filter viewed [taps, f, groups, out of group] as [groups, taps * f, out of group]."""
    taps, f_depth, groups, per_group = w.shape
    return np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(groups, taps * f_depth, per_group)


def _patch_chunks(x: np.ndarray, ksize: tuple[int, int], out_hw: tuple[int, int], strides: tuple[int, int],
                  dilations: tuple[int, int], groups: int, pool: Scratch):
    """(first image, images, patch matrices [groups, rows, taps * f]) for each chunk of images of padded NHWC
    `x`, built in one scratch buffer (a group's columns are its taps x its input channels)."""
    (kh, kw), (oh, ow) = ksize, out_hw
    n, depth = x.shape[0], x.shape[3]
    f_depth = depth // groups
    per_image = oh * ow * kh * kw * depth
    chunk = chunk_images(n, per_image)
    with pool.borrow("patches", (chunk * per_image,), x.dtype) as buffer:
        for start in range(0, n, chunk):
            count = min(chunk, n - start)
            view = windows(x[start:start + count], kh, kw, out_hw, strides, dilations)
            part = buffer[:count * per_image]
            if groups == 1:
                np.copyto(part.reshape(view.shape), view)
            else:
                grouped = view.reshape(*view.shape[:5], groups, f_depth).transpose(5, 0, 1, 2, 3, 4, 6)
                np.copyto(part.reshape(grouped.shape), grouped)
            yield start, count, part.reshape(groups, count * oh * ow, kh * kw * f_depth)


def flipped_pads(pads: Pads, ksize: tuple[int, int], dilations: tuple[int, int]) -> Pads | None:
    """The paddings of out_backprop under which a stride-1 convolution with the flipped filter is the input
    gradient (each is the window's reach minus the forward padding); None where one would be negative (a
    forward padding wider than the window: the scatter-add path handles it)."""
    (top, bottom), (left, right) = pads[1], pads[2]
    reach_h, reach_w = (ksize[0] - 1) * dilations[0], (ksize[1] - 1) * dilations[1]
    new = ((0, 0), (reach_h - top, reach_h - bottom), (reach_w - left, reach_w - right), (0, 0))
    return None if min(new[1] + new[2]) < 0 else new


def flipped_filter(w: np.ndarray, groups: int) -> np.ndarray:
    """The filter of the input gradient as a convolution of out_backprop: rotated 180 degrees, in and out
    channels swapped within each group: [kh, kw, out depth per group, in depth], output channel g * f + i."""
    kh, kw, f_depth, out_depth = w.shape
    rotated = w[::-1, ::-1].reshape(kh, kw, f_depth, groups, out_depth // groups)
    return np.ascontiguousarray(rotated.transpose(0, 1, 4, 3, 2)).reshape(kh, kw, out_depth // groups,
                                                                          groups * f_depth)


def conv_input_grad(padded: np.ndarray, dy: np.ndarray, w: np.ndarray, strides: tuple[int, int],
                    dilations: tuple[int, int], pool: Scratch) -> None:
    """Adds the transposed convolution of `dy` into zeroed `padded` (the padded NHWC input's shape): per kernel
    offset, dy · w[offset]ᵀ (one batched GEMM over the offsets per chunk of images) added into the strided slice
    of `padded` that offset read."""
    kh, kw, f_depth, out_depth = w.shape
    n, oh, ow, _ = dy.shape
    depth = padded.shape[3]
    groups = depth // f_depth
    per_group = out_depth // groups
    # [offset, group, out channel of the group, in channel of the group]: the GEMMs' right-hand sides
    w_t = w.reshape(kh * kw, f_depth, groups, per_group).transpose(0, 2, 3, 1)
    chunk = chunk_images(n, oh * ow * kh * kw * depth)
    with pool.borrow("blocks", (kh * kw, groups, chunk * oh * ow, f_depth), padded.dtype) as blocks:
        for start in range(0, n, chunk):
            count = min(chunk, n - start)
            rows = count * oh * ow
            part = blocks[:, :, :rows] if count < chunk else blocks
            grads = dy[start:start + count].reshape(rows, groups, per_group).transpose(1, 0, 2)
            np.matmul(grads[None], w_t, out=part)
            target = padded[start:start + count]
            for a in range(kh):
                for b in range(kw):
                    block = part[a * kw + b]  # [groups, rows, f_depth]
                    block = block[0] if groups == 1 else block.transpose(1, 0, 2)
                    view = target[(slice(None), *offset_slices(a, b, (oh, ow), strides, dilations))]
                    view += block.reshape(count, oh, ow, depth)


@contextmanager
def padded_input(pool: Scratch, x: np.ndarray, pads: Pads, fill: Any = 0) -> Iterator[np.ndarray]:
    """`x` padded (a scratch buffer while the block runs), or `x` itself when it needs no padding and is
    C-contiguous (im2col reads a contiguous input fastest)."""
    if not has_padding(pads) and x.flags.c_contiguous:
        yield x
        return
    shape = tuple(size + before + after for size, (before, after) in zip(x.shape, pads))
    with pool.borrow("padded", shape, x.dtype) as buffer:
        yield pad_into(buffer, x, pads, fill)


# -- max pool: which window element is the maximum --------------------------------------------------------------
def window_offsets(ksize: tuple[int, int], strides: tuple[int, int], out_hw: tuple[int, int],
                   in_hw: tuple[int, int], before: tuple[int, int]) -> Iterator[tuple[int, np.ndarray]]:
    """(offset a * kw + b, [oh, ow] mask of the outputs whose window has an input element there), in row-major
    order, skipping offsets that meet only padding."""
    (kh, kw), (sh, sw), (oh, ow), (in_h, in_w), (top, left) = ksize, strides, out_hw, in_hw, before
    for a in range(kh):
        rows = np.arange(oh) * sh + a - top
        rows_in = (rows >= 0) & (rows < in_h)
        for b in range(kw):
            cols = np.arange(ow) * sw + b - left
            inside = rows_in[:, None] & ((cols >= 0) & (cols < in_w))[None, :]
            if inside.any():
                yield a * kw + b, inside


def first_max_hits(x: np.ndarray, ksize: tuple[int, int], strides: tuple[int, int], out_hw: tuple[int, int],
                   pads: Pads, pool: Scratch) -> list[tuple[int, np.ndarray]]:
    """For each window offset that meets the input: (offset a * kw + b, the [n, oh, ow, c] boolean mask of the
    pool windows over NHWC `x` whose maximum sits there).

    Windows are scanned in row-major order and a later element replaces the best so far only when it
    is strictly greater (TF's CPU kernel), so ties go to the first maximum and a NaN first element
    keeps the place. Padding is never chosen; a window with no input element (possible with large
    explicit padding) is in no mask. With finite float inputs that rule is "the first element equal to
    the window's maximum", computed with unmasked ufuncs (a maximum, then one compare per offset);
    otherwise (NaN, infinities, integers) by tracking the best so far with masked copies.
    """
    shape = (x.shape[0], *out_hw, x.shape[3])
    if not int(np.prod(shape)):
        return []
    offsets = list(window_offsets(ksize, strides, out_hw, x.shape[1:3], (pads[1][0], pads[2][0])))
    exact = x.dtype in (np.float32, np.float64) and _all_finite(x)
    with padded_input(pool, x, pads, -np.inf if exact else 0) as padded:
        views = [(o, inside, padded[(slice(None), *offset_slices(o // ksize[1], o % ksize[1], out_hw, strides,
                                                                 (1, 1)))]) for o, inside in offsets]
        if not exact:
            where = _first_max_tracked(views, shape, x.dtype)
            return [(o, where == o) for o, _, _ in views]
        top = views[0][2].copy()
        for _, _, values in views[1:]:
            np.maximum(top, values, out=top)
        found = np.zeros(shape, bool)
        hits = []
        for o, inside, values in views:
            hit = np.equal(values, top)
            if not inside.all():  # padding (-inf) equals the maximum only of windows with no input element
                hit &= inside[None, :, :, None]
            hit &= ~found
            found |= hit
            hits.append((o, hit))
        return hits


def _first_max_tracked(views: list, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The offset of each window's first maximum (-1: none), tracking the best so far: NaN- and padding-safe."""
    best = np.empty(shape, dtype)
    where = np.full(shape, -1, np.int64)
    seen = np.zeros(shape[1:3], bool)  # outputs whose window has met an input element so far
    take = np.empty(shape, bool)
    with np.errstate(invalid="ignore"):
        for o, inside, values in views:
            np.greater(values, best, out=take)
            if not seen.all():
                take |= ~seen[None, :, :, None]
            if not inside.all():
                take &= inside[None, :, :, None]
            np.copyto(best, values, where=take)
            np.copyto(where, o, where=take)
            seen |= inside
    return where


def masked_adder(values: np.ndarray):
    """`add(target, values, hit)`: target += values where hit. For finite floats (and integers) as
    `values * hit`, unmasked and fast; with NaN or infinities (which `* 0` would spread) as a masked add."""
    if values.dtype.kind in "iu" or (values.dtype.kind == "f" and _all_finite(values)):
        def add(target: np.ndarray, values: np.ndarray, hit: np.ndarray) -> None:
            target += values * hit
    else:
        def add(target: np.ndarray, values: np.ndarray, hit: np.ndarray) -> None:
            np.add(target, values, out=target, where=hit)
    return add


def _all_finite(x: np.ndarray) -> bool:
    """No NaN or infinity in `x` (one summing pass; a sum that overflows answers False, which is only slower)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.isfinite(np.sum(x)))
