"""Real data for the TF1 programs, with no download: scikit-learn's bundled digits (8x8 images) and the
Zen of Python as a text corpus."""

from __future__ import annotations

import codecs
import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, test images, test labels): float32 pixels in [0, 1], int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    return x[:1500], y[:1500], x[1500:], y[1500:]


def one_hot(labels: np.ndarray, n: int = 10) -> np.ndarray:
    out = np.zeros((len(labels), n), np.float32)
    out[np.arange(len(labels)), labels] = 1.0
    return out


class Batches:
    """`next_batch(n)` over a dataset, reshuffled each epoch (the tutorials' `mnist.train.next_batch`)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int = 0):
        self.images, self.labels = images, labels
        self._rng = np.random.RandomState(seed)
        self._order = self._rng.permutation(len(images))
        self._pos = 0

    def next_batch(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self._pos + n > len(self._order):
            self._order, self._pos = self._rng.permutation(len(self.images)), 0
        idx = self._order[self._pos:self._pos + n]
        self._pos += n
        return self.images[idx], self.labels[idx]


@functools.lru_cache(maxsize=1)
def zen_text() -> str:
    import this

    return codecs.decode(this.s, "rot13")
