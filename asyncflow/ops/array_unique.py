"""`Unique`: the distinct values of a vector in order of first appearance, and where each element went.

The optimizers use it to sum the rows of a sparse gradient that hit the same index before a
`SparseApply*` update (TF1's `_deduplicate_indexed_slices`). Not differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor
from asyncflow.ops.registry import ALL_TYPES, INDEX, BuildContext, op
from asyncflow.shapes import TensorShape


def _unique_shape(b: BuildContext) -> list[TensorShape]:
    x = b.shape(0)
    if x.ndims not in (None, 1):
        raise b.error(f"x must be a vector (rank 1), got shape {x}")
    return [TensorShape([None]), x if x.ndims == 1 else TensorShape([None])]


@op("Unique", inputs="x: T", outputs="y: T, idx: out_idx", types={"T": ALL_TYPES, "out_idx": INDEX},
    type_defaults={"out_idx": dtypes.int32}, shape=_unique_shape, differentiable=False)
def unique_op(k, x):
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"Unique '{k.name}': unique expects a 1D vector, got shape {list(x.shape)}")
    if x.dtype.kind == "f":  # NaN never equals NaN, so each one is its own value (as TF's hash map)
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True, equal_nan=False)
    else:
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=k.out_dtypes[1])
    rank[order] = np.arange(len(order))
    return x[first[order]].astype(k.out_dtypes[0], copy=False), rank[inverse.reshape(-1)]


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`af.unique`: (y, idx) with y the distinct values of the vector `x` and x == y[idx]."""
    y, idx = unique_op(x, out_idx=out_idx, name=name)
    return y, idx


__all__ = ["unique"]
