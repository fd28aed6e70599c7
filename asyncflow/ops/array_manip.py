"""Array ops that join, split, repeat, permute and reverse tensors.

ConcatV2, Unpack, Split, SplitV, Tile, Transpose, ConjugateTranspose, InvertPermutation and
ReverseV2, with TF1's public wrappers (`af.concat`, `af.unstack`, `af.split`, `af.tile`,
`af.transpose`, `af.invert_permutation`, `af.reverse`); padding (`af.pad`) lives in `array_pad`
and is re-exported here. Shape functions follow TF's C++ ones: what is statically wrong raises
ValueError naming the op and the shapes; what TF only finds at run time (a bad permutation) is an
InvalidArgumentError at run time. Each op's gradient follows its kernel (TF's array_grad rules).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.array import check_rank, fold_ops, identity, rank, rank_op, reshape, shape, size, stack
from asyncflow.ops.registry import (
    ALL_TYPES,
    INDEX,
    OPS,
    BuildContext,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.ops.shape_fns import normalize_axis, same_as_input
from asyncflow.shapes import Dimension, TensorShape, unknown_shape


def _length(b: BuildContext, i: int) -> int | None:
    """The number of elements of a vector input, when its static shape says."""
    s = b.shape(i)
    return s[0].value if s.ndims == 1 else None


def _normalize(k: Any, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{k.op_type} '{k.name}': {what} {axis} is out of range for an input of rank {rank} "
                         f"(expected {-rank} <= {what} < {rank})")
    return axis % rank


def _scalar_axis(k: Any, axis: Any, what: str) -> int:
    if np.ndim(axis) != 0:
        raise ValueError(f"{k.op_type} '{k.name}': {what} must be a scalar, got shape {list(np.shape(axis))}")
    return int(axis)


# -- concat ---------------------------------------------------------------------------------------------
def _concat_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 0, "axis")
    shapes = b.shapes(0)
    known = [s for s in shapes if s.ndims is not None]
    if not known:
        return unknown_shape()
    rank = known[0].ndims
    for s in known:
        if s.ndims != rank:
            raise b.error(f"Shape must be rank {rank} but is rank {s.ndims}: all values must have the same "
                          f"rank, got shapes {', '.join(map(str, shapes))}")
    if rank == 0:
        raise b.error("Can't concatenate scalars (use af.stack instead)")
    axis = b.const(1)
    if axis is None:
        return unknown_shape(rank)
    axis = normalize_axis(int(axis), rank, b)
    dims: list[Any] = [Dimension(None)] * rank
    total: int | None = 0
    first: dict[int, TensorShape] = {}
    for s in shapes:
        if s.ndims is None:
            total = None
            continue
        for j, d in enumerate(s.dims):
            if j == axis:
                continue
            if not dims[j].is_compatible_with(d):
                raise b.error(f"Dimension {j} in both shapes must be equal, but are {dims[j]} and {d}: shapes "
                              f"{first[j]} and {s} (concatenating along axis {axis})")
            if d.value is not None and dims[j].value is None:
                dims[j], first[j] = d, s
            first.setdefault(j, s)
        total = None if total is None or s[axis].value is None else total + s[axis].value
    dims[axis] = Dimension(total)
    return TensorShape(dims)


@op("ConcatV2", inputs="values: N * T, axis: Tidx", outputs="output: T",
    types={"T": ALL_TYPES, "Tidx": INDEX}, type_defaults={"Tidx": dtypes.int32}, shape=_concat_shape)
def concat_v2_op(k, *args):
    values, axis = args[:-1], _scalar_axis(k, args[-1], "axis")
    rank = np.ndim(values[0])
    if rank and -rank <= axis < rank:
        try:  # the common case first; numpy fails exactly where TF does, and the checks below say why
            return np.concatenate(values, axis=axis)
        except ValueError:
            pass
    shapes = [np.shape(v) for v in values]
    rank = len(shapes[0])
    if rank == 0:
        raise ValueError(f"ConcatV2 '{k.name}': Can't concatenate scalars (use af.stack instead)")
    axis = _normalize(k, axis, rank)
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != rank:
            raise ValueError(f"ConcatV2 '{k.name}': Ranks of all input tensors should match: shape[0] = "
                             f"{list(shapes[0])} vs. shape[{i}] = {list(s)}")
        for j in range(rank):
            if j != axis and s[j] != shapes[0][j]:
                raise ValueError(f"ConcatV2 '{k.name}': Dimension {j} in both shapes must be equal: shape[0] = "
                                 f"{list(shapes[0])} vs. shape[{i}] = {list(s)}")
    return np.concatenate(values, axis=axis)


@concat_v2_op.gradient
def _concat_grad(op: Any, grad: Any) -> list[Any]:
    """Each input gets its piece of the gradient (TF's _ConcatGradHelper).

    A dense gradient is cut with one SplitV (TF slices at ConcatOffset offsets instead; the pieces
    are the same). A sparse one stays sparse: along axis 0 each input keeps the rows that fall in
    its range, along another axis each input keeps all rows and its columns of the values.
    """
    from asyncflow.gradients import IndexedSlices

    values, axis = list(op.inputs[:-1]), op.inputs[-1]
    if len(values) == 1:
        return [grad, None]
    if isinstance(grad, IndexedSlices):
        return _concat_sparse_grad(values, axis, grad) + [None]
    dim = _concat_dim(values, axis)
    pieces = split(grad, _sizes_along(values, dim), dim)
    for piece, x in zip(pieces, values):
        piece.set_shape(x.shape)  # SplitV cannot tell when the axis is only known at run time
    return pieces + [None]


def _concat_dim(values: list[Tensor], axis: Tensor) -> Any:
    """The non-negative concat axis: an int when known statically, else an int32 scalar tensor."""
    from asyncflow.ops import math as _math

    axis_value, rank0 = constant_value(axis), values[0].shape.ndims
    if axis_value is not None and rank0 is not None:
        return int(axis_value) % rank0
    return _math.cast(axis, dtypes.int32) % rank(values[0])


def _sizes_along(values: list[Tensor], dim: Any, dtype: Any = dtypes.int32) -> Tensor:
    """A vector of each value's size along `dim` (a Const when all are statically known)."""
    if isinstance(dim, int):
        sizes = [x.shape[dim].value for x in values]
        if all(n is not None for n in sizes):
            return convert_to_tensor(sizes, dtype=dtype)
    return stack([shape(x, out_type=dtype)[dim] for x in values])


def _concat_sparse_grad(values: list[Tensor], axis: Tensor, grad: Any) -> list[Any]:
    from asyncflow.gradients import IndexedSlices
    from asyncflow.ops import math as _math
    from asyncflow.ops.array_index import gather

    dim = _concat_dim(values, axis)
    if not isinstance(dim, int):
        raise ValueError("Can only compute IndexedSlices gradient with statically-known concat_dim")
    if dim > 0:  # every input gets all the rows, and its own columns of the values
        pieces = split(grad.values, _sizes_along(values, dim), dim)
        return [IndexedSlices(v, grad.indices, shape(x)) for v, x in zip(pieces, values)]
    out = []
    index_dtype = grad.indices.dtype.base_dtype
    start = convert_to_tensor(0, dtype=index_dtype)
    for x in values:
        end = start + _math.cast(shape(x)[0], index_dtype)
        keep = _math.logical_and(grad.indices >= start, grad.indices < end)
        rows = OPS["Squeeze"](OPS["Where"](keep), squeeze_dims=[1])
        out.append(IndexedSlices(gather(grad.values, rows), gather(grad.indices, rows) - start, shape(x)))
        start = end
    return out


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """`af.concat`: joins `values` along `axis`; a single value is passed through an Identity, as TF1."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with name_scope(name):
            axis_t = convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            axis_t.shape.assert_has_rank(0)
            return identity(values[0], name=name)
    return concat_v2_op(list(values), axis, name=name)


# -- unstack / split --------------------------------------------------------------------------------------
def _unpack_shape(b: BuildContext) -> list[TensorShape]:
    x, num, axis = b.shape(0), b.attrs["num"], b.attrs["axis"]
    if x.ndims is None:
        return [unknown_shape()] * num
    axis = normalize_axis(axis, x.ndims, b)
    if x[axis].value not in (None, num):
        raise b.error(f"Dimension must be {num} but is {x[axis].value}: cannot unstack {num} values along "
                      f"axis {axis} of shape {x}")
    dims = x.dims
    del dims[axis]
    return [TensorShape(dims)] * num


@op("Unpack", inputs="value: T", outputs="output: num * T", types={"T": ALL_TYPES},
    attrs={"num": 0, "axis": 0}, shape=_unpack_shape)
def unpack_op(k, x):
    x = np.asarray(x)
    axis = _normalize(k, k.axis, x.ndim)
    if x.shape[axis] != k.num:
        raise ValueError(f"Unpack '{k.name}': Input shape axis {axis} must equal {k.num}, got shape "
                         f"{list(x.shape)}")
    return list(np.moveaxis(x, axis, 0))


@unpack_op.gradient
def _unpack_grad(op: Any, *grads: Any) -> Tensor:
    return stack(list(grads), axis=op.get_attr("axis"))


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """`af.unstack`: the slices of `value` along `axis`; `num` is inferred from the static shape."""
    if num is None:
        value = convert_to_tensor(value)
        shape = value.shape
        if shape.ndims is not None:
            if not -shape.ndims <= axis < shape.ndims:
                raise ValueError(f"Argument `axis` = {axis} not in range [{-shape.ndims}, {shape.ndims})")
            num = shape[axis].value
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {shape}")
    return unpack_op(value, num=num, axis=axis, name=name)


def _split_shape(b: BuildContext) -> list[TensorShape]:
    check_rank(b, 0, 0, "split_dim")
    n, x, axis = b.attrs["num_split"], b.shape(1), b.const(0)
    if x.ndims is None:
        return [unknown_shape()] * n
    if axis is None:
        return [unknown_shape(x.ndims)] * n
    axis = normalize_axis(int(axis), x.ndims, b)
    dim = x[axis].value
    if dim is not None and dim % n:
        raise b.error(f"Dimension size must be evenly divisible by {n} but is {dim}: cannot split axis {axis} "
                      f"of shape {x} into {n} equal pieces")
    dims = x.dims
    dims[axis] = Dimension(None if dim is None else dim // n)
    return [TensorShape(dims)] * n


@op("Split", inputs="split_dim: int32, value: T", outputs="output: num_split * T", types={"T": ALL_TYPES},
    attrs={"num_split": 1}, shape=_split_shape)
def split_op(k, axis, x):
    x = np.asarray(x)
    axis = _normalize(k, _scalar_axis(k, axis, "split_dim"), x.ndim, "split_dim")
    if x.shape[axis] % k.num_split:
        raise ValueError(f"Split '{k.name}': Number of ways to split should evenly divide the split dimension, "
                         f"but got split_dim {axis} (size = {x.shape[axis]}) and num_split {k.num_split}")
    n = x.shape[axis] // k.num_split
    return _slices_along(x, axis, [n] * k.num_split)


def _slices_along(x: np.ndarray, axis: int, sizes: list[int]) -> list[np.ndarray]:
    """Views of consecutive pieces of `sizes` along `axis` (np.split's result, without its per-call overhead)."""
    pre, out, start = (slice(None),) * axis, [], 0
    for piece in sizes:
        out.append(x[pre + (slice(start, start + piece),)])
        start += piece
    return out


@split_op.gradient
def _split_grad(op: Any, *grads: Any) -> list[Any]:
    return [None, concat(list(grads), op.inputs[0])]  # unused outputs come as zeros from the driver


def _split_sizes(sizes: list[int], dim: int | None, err: Any) -> list[int | None]:
    """The sizes with the one -1 resolved against `dim` (None when `dim` is unknown)."""
    wild = [i for i, s in enumerate(sizes) if s == -1]
    if len(wild) > 1:
        raise err(f"size_splits can only have one -1, got {sizes}")
    for i, s in enumerate(sizes):
        if s < -1:
            raise err(f"Split size at index {i} must be >= 0. Got: {s}")
    out: list[int | None] = list(sizes)
    given = sum(s for s in sizes if s != -1)
    if dim is None:
        if wild:
            out[wild[0]] = None
        return out
    if wild:
        if given > dim:
            raise err(f"Split size at index {wild[0]} must be >= 0. Got: {dim - given} (size_splits {sizes}, "
                      f"dimension size {dim})")
        out[wild[0]] = dim - given
    elif given != dim:
        raise err(f"can't split axis of size {dim} into pieces of size {sizes}: Determined shape must either "
                  f"match input shape along split_dim exactly if fully specified, or be less than the size "
                  f"of the input along split_dim if not fully specified.  Got: {given}")
    return out


def _split_v_shape(b: BuildContext) -> list[TensorShape]:
    check_rank(b, 1, 1, "size_splits")
    check_rank(b, 2, 0, "split_dim")
    n, x, sizes, axis = b.attrs["num_split"], b.shape(0), b.const(1), b.const(2)
    if _length(b, 1) not in (None, n):
        raise b.error(f"size_splits has {_length(b, 1)} elements but num_split is {n}")
    if x.ndims is None:
        return [unknown_shape()] * n
    if axis is None:
        return [unknown_shape(x.ndims)] * n
    axis = normalize_axis(int(axis), x.ndims, b)
    if sizes is None:
        pieces: list[int | None] = [None] * n
    else:
        pieces = _split_sizes([int(s) for s in sizes], x[axis].value, lambda m: b.error(f"{m} (input shape {x})"))
    out = []
    for piece in pieces:
        dims = x.dims
        dims[axis] = Dimension(piece)
        out.append(TensorShape(dims))
    return out


@op("SplitV", inputs="value: T, size_splits: Tlen, split_dim: int32", outputs="output: num_split * T",
    types={"T": ALL_TYPES, "Tlen": (dtypes.int8, dtypes.int32, dtypes.int64)}, attrs={"num_split": 1},
    shape=_split_v_shape)
def split_v_op(k, x, sizes, axis):
    x = np.asarray(x)
    axis = _normalize(k, _scalar_axis(k, axis, "split_dim"), x.ndim, "split_dim")
    if np.ndim(sizes) != 1 or len(sizes) != k.num_split:
        raise ValueError(f"SplitV '{k.name}': size_splits must be a vector of {k.num_split} elements, got shape "
                         f"{list(np.shape(sizes))}")

    def err(m: str) -> ValueError:
        return ValueError(f"SplitV '{k.name}': {m} (input shape {list(x.shape)}, split_dim {axis})")

    return _slices_along(x, axis, _split_sizes([int(s) for s in sizes], x.shape[axis], err))


@split_v_op.gradient
def _split_v_grad(op: Any, *grads: Any) -> list[Any]:
    return [concat(list(grads), op.inputs[2]), None, None]


def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str = "split") -> list[Tensor]:
    """`af.split`: a count gives a Split op of equal pieces, a list of sizes (one may be -1) a SplitV."""
    if isinstance(num_or_size_splits, Dimension):
        num_or_size_splits = num_or_size_splits.value
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        if num_or_size_splits < 1:
            raise ValueError(f"Attr 'num_split' of 'Split' Op passed {num_or_size_splits} less than minimum 1.")
        return split_op(axis, value, num_split=int(num_or_size_splits), name=name)
    size_splits = convert_to_tensor(num_or_size_splits)
    if size_splits.shape.ndims == 0:
        raise ValueError(f"Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
                         f"Argument provided: {num_or_size_splits}")
    if num is None:
        if size_splits.shape.ndims is not None:
            num = size_splits.shape[0].value
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {num_or_size_splits}")
    return split_v_op(value, size_splits, axis, num_split=num, name=name)


# -- tile ---------------------------------------------------------------------------------------------
def _tile_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 1, "multiples")
    x, n = b.shape(0), _length(b, 1)
    if x.ndims is not None and n is not None and n != x.ndims:
        raise b.error(f"Shape must be rank {x.ndims} but is rank {n}: multiples has {n} elements for an input "
                      f"of shape {x}")
    rank = x.ndims if x.ndims is not None else n
    if rank is None:
        return unknown_shape()
    mult = b.const_shape(1)
    if mult.ndims is None:
        return unknown_shape(rank)
    x = x if x.ndims is not None else unknown_shape(rank)
    return TensorShape([d * m for d, m in zip(x.dims, mult.dims)])


@op("Tile", inputs="input: T, multiples: Tmultiples", outputs="output: T",
    types={"T": ALL_TYPES, "Tmultiples": INDEX}, type_defaults={"Tmultiples": dtypes.int32}, shape=_tile_shape)
def tile_op(k, x, multiples):
    if np.ndim(multiples) != 1 or len(multiples) != np.ndim(x):
        raise ValueError(f"Tile '{k.name}': Expected multiples argument to be a vector of length {np.ndim(x)} "
                         f"but got length {np.size(multiples)} (input shape {list(np.shape(x))})")
    for i, m in enumerate(multiples):
        if m < 0:
            raise ValueError(f"Tile '{k.name}': Expected multiples[{i}] >= 0, but got {int(m)}")
    return np.tile(x, [int(m) for m in multiples]).astype(k.out_dtypes[0], copy=False)


@tile_op.gradient
def _tile_grad(op: Any, grad: Any) -> list[Any]:
    """The copies summed (TF's _TileGrad): grad reshaped to [m0, d0, m1, d1, ...], reduced over the m's."""
    from asyncflow.gradients import IndexedSlices
    from asyncflow.ops import math as _math
    from asyncflow.ops.array_index import unsorted_segment_sum

    x, multiples = op.inputs
    input_shape = shape(x, out_type=multiples.dtype.base_dtype)
    split_shape = reshape(transpose(stack([multiples, input_shape])), [-1])
    axes = _math.range(0, size(split_shape), 2)
    if isinstance(grad, IndexedSlices):  # fold the rows onto the input's rows first
        rows = _math.cast(input_shape[0], grad.indices.dtype.base_dtype)
        grad = unsorted_segment_sum(grad.values, _math.floormod(grad.indices, rows), rows)
        split_shape = concat([convert_to_tensor([1], dtype=split_shape.dtype.base_dtype), split_shape[1:]], 0)
    x_grad = _math.reduce_sum(reshape(grad, split_shape), axes)
    x_grad.set_shape(x.shape)
    return [x_grad, None]


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return tile_op(input, multiples, name=name)


# -- transpose --------------------------------------------------------------------------------------------
def _transpose_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 1, "perm")
    x, n = b.shape(0), _length(b, 1)
    if x.ndims is not None and n is not None and n != x.ndims:
        raise b.error(f"Dimension must be {x.ndims} but is {n}: perm has {n} elements for an input of shape {x}")
    rank = x.ndims if x.ndims is not None else n
    if rank is None:
        return unknown_shape()
    perm = b.const(1)
    if perm is None:
        return unknown_shape(rank)
    x = x if x.ndims is not None else unknown_shape(rank)
    for p in perm.tolist():
        if not -rank < p < rank or (rank == 0 and p):
            raise b.error(f"perm dim {p} is out of range of input rank {rank} (perm {perm.tolist()})")
    return TensorShape([x[p] for p in perm.tolist()])


def _permute(k: Any, x: np.ndarray, perm: Any) -> np.ndarray:
    perm = np.asarray(perm).tolist()
    if np.ndim(perm) != 1 or len(perm) != x.ndim:
        raise ValueError(f"{k.op_type} '{k.name}': transpose expects a vector of size {x.ndim}. But input(1) is "
                         f"a vector of size {np.size(perm)}")
    for p in perm:
        if not 0 <= p < x.ndim:
            raise ValueError(f"{k.op_type} '{k.name}': {p} is out of range [0 .. {x.ndim})")
    for i in range(x.ndim):
        if i not in perm:
            raise ValueError(f"{k.op_type} '{k.name}': {i} is missing from {{{','.join(map(str, perm))}}}.")
    return np.transpose(x, perm)


@op("Transpose", inputs="x: T, perm: Tperm", outputs="y: T", types={"T": ALL_TYPES, "Tperm": INDEX},
    type_defaults={"Tperm": dtypes.int32}, shape=_transpose_shape)
def transpose_op(k, x, perm):
    return _permute(k, np.asarray(x), perm)


@transpose_op.gradient
def _transpose_grad(op: Any, grad: Any) -> list[Any]:
    return [transpose(grad, invert_permutation(op.inputs[1])), None]


@op("ConjugateTranspose", inputs="x: T, perm: Tperm", outputs="y: T", types={"T": ALL_TYPES, "Tperm": INDEX},
    type_defaults={"Tperm": dtypes.int32}, shape=_transpose_shape)
def conjugate_transpose_op(k, x, perm):
    out = _permute(k, np.asarray(x), perm)
    return np.conj(out) if out.dtype.kind == "c" else out


@conjugate_transpose_op.gradient
def _conjugate_transpose_grad(op: Any, grad: Any) -> list[Any]:
    return [transpose(grad, invert_permutation(op.inputs[1]), conjugate=True), None]


def _invert_permutation_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 0, 1, "x")
    return b.shape(0)


@op("InvertPermutation", inputs="x: T", outputs="y: T", types={"T": INDEX}, type_defaults={"T": dtypes.int32},
    shape=_invert_permutation_shape, differentiable=False)
def invert_permutation_op(k, x):
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"InvertPermutation '{k.name}': invert_permutation expects a 1D vector, got shape "
                         f"{list(x.shape)}")
    n = x.size
    out = np.full(n, -1, dtype=x.dtype)
    for i, d in enumerate(x.tolist()):
        if not 0 <= d < n:
            raise ValueError(f"InvertPermutation '{k.name}': {d} is not between 0 and {n}")
        if out[d] >= 0:
            raise ValueError(f"InvertPermutation '{k.name}': {d} is duplicated in the input.")
        out[d] = i
    return out


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """`af.invert_permutation`: y[x[i]] = i."""
    return invert_permutation_op(x, name=name)


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """`af.transpose`: permutes the dimensions; `perm=None` reverses them."""
    with name_scope(name, "transpose", [a]) as scope:
        if not isinstance(a, Tensor):
            a = convert_to_tensor(a, name="a")
        fn = conjugate_transpose_op if conjugate and a.dtype.is_complex else transpose_op
        if perm is None:
            if a.shape.ndims is not None:
                perm = np.arange(a.shape.ndims - 1, -1, -1, dtype=np.int32)
            else:  # TF builds the reversed range in the graph: Range(Rank(a) - 1, -1, -1)
                perm = OPS["Range"](rank_op(a) - 1, -1, -1)
        return fn(a, perm, name=scope)


# -- reverse ----------------------------------------------------------------------------------------------
def _reverse_axes(axes: list[int], rank: int, err: Any) -> list[int]:
    seen = []
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise err(f"'axis'[{i}] = {a} is out of valid range [0, {rank - 1}]")
        if a % rank in seen:
            raise err(f"axis {a % rank} specified more than once.")
        seen.append(a % rank)
    return seen


def _reverse_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 1, 1, "axis")
    x, axes = b.shape(0), b.const(1)
    if x.ndims is not None and axes is not None:
        _reverse_axes(axes.tolist(), x.ndims, lambda m: b.error(f"{m} (input shape {x})"))
    return same_as_input(b)


@op("ReverseV2", inputs="tensor: T, axis: Tidx", outputs="output: T", types={"T": ALL_TYPES, "Tidx": INDEX},
    type_defaults={"Tidx": dtypes.int32}, shape=_reverse_shape)
def reverse_v2_op(k, x, axis):
    x = np.asarray(x)
    if np.ndim(axis) != 1:
        raise ValueError(f"ReverseV2 '{k.name}': 'axis' must be 1-D, not {list(np.shape(axis))}")
    axes = _reverse_axes(np.asarray(axis).tolist(), x.ndim, lambda m: ValueError(f"ReverseV2 '{k.name}': {m}"))
    return np.flip(x, axis=tuple(axes)) if axes else x


@reverse_v2_op.gradient
def _reverse_v2_grad(op: Any, grad: Any) -> list[Any]:
    return [reverse(grad, op.inputs[1]), None]


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """`af.reverse` (TF1's `reverse_v2`): reverses the listed dimensions."""
    return reverse_v2_op(tensor, axis, name=name)


reverse_v2 = reverse

fold_ops("ConcatV2", "Unpack", "Split", "SplitV", "Tile", "Transpose", "ReverseV2", "InvertPermutation")

# Padding lives in its own module; `pad` stays part of this module's public names.
from asyncflow.ops.array_pad import pad  # noqa: E402

__all__ = ["concat", "unstack", "split", "tile", "pad", "transpose", "reverse", "reverse_v2", "invert_permutation"]
