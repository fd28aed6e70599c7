"""The stages that regroup rows: batch, padded_batch, unbatch, window, and slicing a SparseTensor source.

A node's components come in *groups*, one per leaf of its elements (structure.py): a dense
tensor is one component, a SparseTensor three (indices [N, rank], values [N], dense_shape [rank])
that start at the positions listed in the node's `"sparse"`. Batching a group of rows follows TF:
dense rows are stacked (or padded, then stacked); sparse rows get their row number prepended to
their indices, their values concatenated, and the dense shape `[rows, max of each dimension]`
(at least the padded shape, in padded_batch). Unbatching and slicing (from_tensor_slices of a
SparseTensor) undo it: row b keeps the entries whose first index is b, in their order.

Rows of sparse components seldom share shapes (their N differs), so these stages hand them on as
runs of rows that do share shapes (`blocks_of_rows`); a dense-only input keeps whole blocks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from asyncflow import errors
from asyncflow.data.runtime import Block, Env
from asyncflow.data.runtime_stages import CHUNK, Maker, Rows, Stage, _Blocks, _what, build, builder


def groups(node: dict) -> list[tuple[int, bool]]:
    """(first component, is sparse) of each leaf of `node`'s elements."""
    sparse = set(node.get("sparse", ()))
    out, c, n = [], 0, len(node["types"])
    while c < n:
        out.append((c, c in sparse))
        c += 3 if c in sparse else 1
    return out


def blocks_of_rows(rows: Sequence[list[np.ndarray]]) -> list[Block]:
    """Rows (a list of component arrays each) as blocks: each run of rows of equal shapes stacked into one."""
    out: list[Block] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or any(a.shape != b.shape for a, b in zip(rows[i], rows[start])):
            run = rows[start:i]
            out.append(Block([np.stack([r[c] for r in run]) for c in range(len(run[0]))], len(run)))
            start = i
    return out


# -- sparse rows ------------------------------------------------------------------------------------------
def batch_sparse(rows: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], what: str, component: int,
                 padded: np.ndarray | None = None) -> list[np.ndarray]:
    """The SparseTensor batching `rows` (each (indices, values, dense_shape)), as TF's batch does."""
    ranks = {len(s) for _, _, s in rows}
    if len(ranks) != 1:
        raise errors.InvalidArgumentError(
            None, None, f"{what}: Cannot batch sparse tensors of different ranks in component {component}: "
                        f"{sorted(ranks)}")
    rank = ranks.pop()
    longest = np.max(np.stack([np.asarray(s, np.int64) for _, _, s in rows]), axis=0) if rank else \
        np.zeros(0, np.int64)
    if padded is not None:
        if len(padded) != rank:
            raise errors.InvalidArgumentError(None, None, f"{what}: padded_shapes[{component}] has rank "
                                                          f"{len(padded)}, but a sparse element has rank {rank}")
        if any(p >= 0 and p < n for p, n in zip(padded, longest)):
            raise errors.InvalidArgumentError(
                None, None, f"{what}: Attempted to pad to a smaller size than the input element. Component "
                            f"{component}: sparse dense_shape {longest.tolist()}, padded shape {padded.tolist()}")
        longest = np.where(padded >= 0, padded, longest)
    counts = [len(v) for _, v, _ in rows]
    row_ids = np.repeat(np.arange(len(rows), dtype=np.int64), counts)[:, np.newaxis]
    idx = [np.asarray(i, np.int64).reshape(-1, rank) for i, _, _ in rows]
    indices = np.concatenate([row_ids, np.concatenate(idx)], axis=1)
    values = np.concatenate([np.asarray(v) for _, v, _ in rows])
    return [indices, values, np.concatenate([[len(rows)], longest]).astype(np.int64)]


def split_sparse(indices: np.ndarray, values: np.ndarray, shape: np.ndarray,
                 what: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Row b of a batched SparseTensor for each b < dense_shape[0]: its entries in their order."""
    if len(shape) == 0:
        raise errors.InvalidArgumentError(None, None, f"{what}: cannot slice or unbatch a sparse scalar")
    n = int(shape[0])
    first = indices[:, 0] if len(indices) else np.zeros(0, np.int64)
    if len(first) and (first.min() < 0 or first.max() >= n):
        raise errors.InvalidArgumentError(None, None, f"{what}: a sparse index's first entry is outside "
                                                      f"[0, {n}) (dense_shape {shape.tolist()})")
    order = np.argsort(first, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(first, minlength=n))])
    rest, inner = indices[order][:, 1:], values[order]
    sub = np.asarray(shape[1:], np.int64)
    return [(rest[bounds[b]:bounds[b + 1]], inner[bounds[b]:bounds[b + 1]], sub) for b in range(n)]


def unbatch_element(values: Sequence[np.ndarray], layout: list[tuple[int, bool]], what: str) -> list[Block]:
    """The rows of one batched element (components `values`), as blocks."""
    sizes, pieces = set(), []
    for c, sparse in layout:
        if sparse:
            rows = split_sparse(values[c], values[c + 1], values[c + 2], what)
            sizes.add(len(rows))
            pieces.append([list(r) for r in rows])
        else:
            v = values[c]
            if v.ndim == 0:
                raise errors.InvalidArgumentError(None, None, f"{what}: Input element must have a non-scalar "
                                                              f"value in each component.")
            sizes.add(v.shape[0])
            pieces.append([[r] for r in v])
    if len(sizes) > 1:
        raise errors.InvalidArgumentError(None, None, f"{what}: all components must have the same size in "
                                                      f"dimension 0 (sparse: dense_shape[0]); got {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    rows = [[a for piece in pieces for a in piece[b]] for b in range(n)]
    return blocks_of_rows(rows) if rows else []


# -- batch and padded_batch ----------------------------------------------------------------------------------
class _Batch(Stage):
    def __init__(self, node: dict, env: Env, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.rows = Rows(self.input)
        self.node = node
        self.layout = groups(node)
        self.size = int(env.capture(node["captures"][0]))
        self.drop = bool(env.capture(node["captures"][1]))
        if self.size <= 0:
            raise errors.InvalidArgumentError(None, None, f"{_what(node)}: Batch size must be greater than zero.")
        self.padded = node["op"] == "PaddedBatchDatasetV2"
        if self.padded:  # one padded shape and one padding value per leaf
            self.pad_shapes = [np.asarray(env.capture(i)).astype(np.int64) for i in node["padded_shapes"]]
            self.pad_values = [env.capture(i) for i in node["padding_values"]]

    async def next(self) -> Block | None:
        parts: list[Block] = []
        count = 0
        while count < self.size:
            b = await self.rows.take(self.size - count)
            if b is None:
                break
            parts.append(b)
            count += b.n
        if count == 0 or (self.drop and count < self.size):
            return None
        cols: list[np.ndarray] = []
        for leaf, (c, sparse) in enumerate(self.layout):
            if sparse:
                pad = self.pad_shapes[leaf] if self.padded else None
                cols += batch_sparse(_sparse_rows(parts, c), _what(self.node), leaf, pad)
            elif self.padded:
                cols.append(self._pad(parts, c, leaf))
            else:
                cols.append(self._stack(parts, c))
        return Block([c[np.newaxis] for c in cols], 1)

    def _stack(self, parts: list[Block], i: int) -> np.ndarray:
        if len(parts) == 1:
            return parts[0].cols[i]
        first = parts[0].cols[i].shape[1:]
        seen = parts[0].n
        for p in parts[1:]:
            if p.cols[i].shape[1:] != first:
                raise errors.InvalidArgumentError(
                    None, None, f"{_what(self.node)}: Cannot batch tensors with different shapes in component {i}. "
                                f"First element had shape {list(first)} and element {seen} had shape "
                                f"{list(p.cols[i].shape[1:])}.")
            seen += p.n
        return np.concatenate([p.cols[i] for p in parts])

    def _pad(self, parts: list[Block], i: int, leaf: int) -> np.ndarray:
        want = self.pad_shapes[leaf]
        rank = len(want)
        for p in parts:
            if p.cols[i].ndim - 1 != rank:
                raise errors.InvalidArgumentError(
                    None, None, f"{_what(self.node)}: padded_shapes[{leaf}] has rank {rank}, but an element of "
                                f"component {leaf} has shape {list(p.cols[i].shape[1:])}")
        longest = [max(p.cols[i].shape[1 + d] for p in parts) for d in range(rank)]
        shape = [longest[d] if want[d] < 0 else int(want[d]) for d in range(rank)]
        for p in parts:
            for d in range(rank):
                if p.cols[i].shape[1 + d] > shape[d]:
                    raise errors.InvalidArgumentError(
                        None, None, f"{_what(self.node)}: Attempted to pad to a smaller size than the input element. "
                                    f"Component {leaf}: element shape {list(p.cols[i].shape[1:])}, padded shape "
                                    f"{shape}")
        dtype = parts[0].cols[i].dtype
        out = np.empty([sum(p.n for p in parts)] + shape, dtype=dtype)
        out[...] = self.pad_values[leaf]
        row = 0
        for p in parts:
            c = p.cols[i]
            out[(slice(row, row + p.n),) + tuple(slice(0, s) for s in c.shape[1:])] = c
            row += p.n
        return out


def _sparse_rows(parts: Sequence[Block], c: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return [(p.cols[c][j], p.cols[c + 1][j], p.cols[c + 2][j]) for p in parts for j in range(p.n)]


@builder("BatchDatasetV2", "PaddedBatchDatasetV2")
def _batch(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Batch(node, env, make_input)


# -- unbatch and sparse slices ------------------------------------------------------------------------------
class _Unbatch(Stage):
    def __init__(self, node: dict, make_input: Maker):
        self.input = make_input()
        self.inputs = (self.input,)
        self.node = node
        self.layout = groups(node)
        self.sparse = any(s for _, s in self.layout)
        self.out: deque[Block] = deque()

    async def next(self) -> Block | None:
        while not self.out:
            block = await self.input.next()
            if block is None:
                return None
            if self.sparse:
                for i in range(block.n):
                    self.out.extend(unbatch_element(block.row(i), self.layout, _what(self.node)))
                continue
            sizes = {c.shape[1] if c.ndim > 1 else None for c in block.cols}
            if None in sizes or len(sizes) != 1:
                raise errors.InvalidArgumentError(None, None, f"{_what(self.node)}: Input element must have a "
                                                              f"non-scalar value in each component, all of one size "
                                                              f"in dimension 0")
            b = sizes.pop()
            if b:
                return Block([c.reshape((block.n * b,) + c.shape[2:]) for c in block.cols], block.n * b)
        return self.out.popleft()


@builder("UnbatchDataset")
def _unbatch(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Unbatch(node, make_input)


def sparse_slices(node: dict, env: Env) -> Maker:
    """from_tensor_slices with SparseTensor leaves: the captured element unbatched (TensorSliceDataset)."""
    values = [np.asarray(env.capture(i)) for i in node["captures"]]
    blocks = unbatch_element(values, groups(node), _what(node))
    chunked = [b.slice(s, s + CHUNK) for b in blocks for s in range(0, b.n, CHUNK)]
    return lambda: _Blocks(chunked)


# -- window -----------------------------------------------------------------------------------------------
class _Window(Stage):
    """TF's WindowDataset: a buffer of `(size - 1) * stride + 1` rows; each window takes every `stride`-th
    buffered row, then the buffer drops `shift` rows (reading and discarding more when `shift` is larger).
    A window is handed on as its rows stacked per leaf, as batch stacks them (structure.py)."""

    def __init__(self, node: dict, env: Env, make_input: Maker):
        size, shift, stride = (int(env.capture(i)) for i in node["captures"][:3])
        for what, v in (("size", size), ("shift", shift), ("stride", stride)):
            if v <= 0:
                raise errors.InvalidArgumentError(None, None, f"{_what(node)}: Window {what} must be greater than "
                                                              f"zero.")
        self.size, self.shift, self.stride = size, shift, stride
        self.drop = bool(env.capture(node["captures"][3]))
        self.target = (size - 1) * stride + 1
        self.input = make_input()
        self.inputs = (self.input,)
        self.rows = Rows(self.input)
        self.node = node
        self.layout = groups(node["input"])
        self.buffer: deque[list[np.ndarray]] = deque()
        self.ended = False

    async def _read(self, k: int, keep: bool) -> None:
        while k > 0 and not self.ended:
            block = await self.rows.take(k)
            if block is None:
                self.ended = True
                return
            k -= block.n
            if keep:
                self.buffer.extend(block.row(i) for i in range(block.n))

    async def next(self) -> Block | None:
        await self._read(self.target - len(self.buffer), True)
        if not self.buffer or (self.drop and len(self.buffer) < self.target):
            return None
        picked = [self.buffer[i] for i in range(0, len(self.buffer), self.stride)]
        if self.shift >= len(self.buffer):
            await self._read(self.shift - len(self.buffer), False)
            self.buffer.clear()
        else:
            for _ in range(self.shift):
                self.buffer.popleft()
        cols: list[np.ndarray] = []
        for leaf, (c, sparse) in enumerate(self.layout):
            if sparse:
                cols += batch_sparse([(r[c], r[c + 1], r[c + 2]) for r in picked], _what(self.node), leaf)
                continue
            shapes = {r[c].shape for r in picked}
            if len(shapes) > 1:
                raise errors.InvalidArgumentError(
                    None, None, f"{_what(self.node)}: the elements of a window differ in shape in component {leaf} "
                                f"({sorted(shapes)}); asyncflow's windows hold elements of one shape")
            cols.append(np.stack([r[c] for r in picked]))
        return Block([c[np.newaxis] for c in cols], 1)


@builder("WindowDataset")
def _window(node: dict, env: Env) -> Maker:
    make_input = build(node["input"], env)
    return lambda: _Window(node, env, make_input)
