"""Einsum (one op on numpy.einsum, gradient by einsum), and TF1's tensordot and norm composites.

Split from `linalg_ops` (which re-exports these names) to keep modules small. `Einsum` accepts TF1's
equation forms: explicit (`ij,jk->ik`), implicit (`ij,jk`: the output is the indices seen once, in
alphabetical order) and `...` broadcasting. The gradient of input i is the einsum of the output
gradient with the other inputs, written out to input i's indices; indices only input i has are
broadcast back, and broadcast `...` dims are summed back (`unbroadcast`). An operand that repeats an
index (a diagonal such as `ii->i`) has no gradient here: building one raises a clear error.
`tensordot` is TF1's transpose/reshape/MatMul composite (op names `Tensordot/...`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import math_reduce as mr
from asyncflow.ops.array import reshape, shape
from asyncflow.ops.array_dims import broadcast_to, expand_dims, squeeze
from asyncflow.ops.array_index import gather
from asyncflow.ops.array_manip import concat, transpose
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.registry import NUMERIC, BuildContext, convert_to_tensor, op
from asyncflow.shapes import TensorShape, unknown_shape


def _parse(equation: str, n: int) -> tuple[list[str], str]:
    """(input subscripts, output subscripts) with `...` kept; implicit outputs made explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != n:
        raise ValueError(f"Einsum: equation {equation!r} names {len(ins)} inputs, but {n} were given")
    for s in ins + ([out] if arrow else []):
        if not s.replace("...", "").isalpha() and s.replace("...", ""):
            raise ValueError(f"Einsum: invalid subscripts {s!r} in equation {equation!r}")
    if not arrow:
        letters = "".join(s.replace("...", "") for s in ins)
        out = ("..." if any("..." in s for s in ins) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    return ins, out


def _letters_of(sub: str, ndims: int) -> list[str]:
    """Per-dimension labels; the dims under `...` are labelled `.0`, `.1`, ... counted from the right."""
    if "..." not in sub:
        return list(sub)
    head, tail = sub.split("...")
    n_ell = ndims - len(head) - len(tail)
    return list(head) + [f".{n_ell - 1 - i}" for i in range(n_ell)] + list(tail)


def _einsum_shape(b: BuildContext) -> TensorShape:
    shapes = b.shapes(0)
    ins, out = _parse(b.attrs["equation"], len(shapes))
    if any(s.ndims is None for s in shapes):
        return unknown_shape()
    dims: dict[str, Any] = {}
    n_ell = 0
    for sub, s in zip(ins, shapes):
        if len(sub.replace("...", "")) > s.ndims or ("..." not in sub and len(sub) != s.ndims):
            raise b.error(f"input of shape {s} does not match subscripts {sub!r}")
        labels = _letters_of(sub, s.ndims)
        n_ell = max(n_ell, sum(lab.startswith(".") for lab in labels))
        for lab, d in zip(labels, s.as_list()):
            old = dims.get(lab)
            if lab.startswith(".") and (old == 1 or d == 1):
                dims[lab] = d if old in (None, 1) else old  # `...` dims broadcast
            elif old is not None and d is not None and old != d:
                raise b.error(f"dimension {lab!r} is {old} in one input and {d} in another")
            else:
                dims[lab] = d if old is None else old
    return TensorShape([dims.get(lab) for lab in _letters_of(out, len(out.replace("...", "")) + n_ell)])


@op("Einsum", inputs="inputs: N * T", outputs="output: T", types={"T": NUMERIC}, attrs={"equation": ""},
    shape=_einsum_shape)
def Einsum(k, *xs):
    ins, out = _parse(k.equation, len(xs))
    # numpy's summation order follows the inputs' strides: contiguous inputs make the bits a function of
    # the values alone (a transposed constant and its serialised copy must give the same result).
    xs = [np.ascontiguousarray(x) for x in xs]
    return np.asarray(np.einsum(",".join(ins) + "->" + out, *xs)).astype(k.out_dtypes[0])


def _input_grad(op_: Any, grad: Tensor, i: int, ins: list[str], out: str) -> Tensor:
    """d/d input i: einsum(grad, other inputs) written to input i's indices, then laid out as input i."""
    x, sub = op_.inputs[i], ins[i]
    letters = sub.replace("...", "")
    if len(set(letters)) != len(letters):
        raise ValueError(f"Einsum '{op_.name}': no gradient for an operand that repeats an index ({sub!r})")
    if x.shape.ndims is None or op_.outputs[0].shape.ndims is None:
        raise ValueError(f"Einsum '{op_.name}': the gradient needs inputs of known rank")
    others = [s for j, s in enumerate(ins) if j != i]
    seen = set(out + "".join(others))
    head, _, tail = sub.partition("...") if "..." in sub else ("", "", sub)
    keep = "".join(c for c in head if c in seen), "".join(c for c in tail if c in seen)
    target = keep[0] + ("..." if "..." in out else "") + keep[1]
    g = Einsum([grad] + [op_.inputs[j] for j in range(len(ins)) if j != i], equation=",".join([out] + others)
               + "->" + target)
    n_ell_x = x.shape.ndims - len(letters)
    n_ell_g = g.shape.ndims - len(keep[0]) - len(keep[1]) if g.shape.ndims is not None else n_ell_x
    if n_ell_g > n_ell_x:  # `...` dims this input does not have were broadcast: sum them away
        g = mr.reduce_sum(g, list(range(len(keep[0]), len(keep[0]) + n_ell_g - n_ell_x)))
    for pos, c in enumerate(head + "." * n_ell_x + tail):
        if c != "." and c not in seen:
            g = expand_dims(g, pos)  # an index only this input has: summed in the forward pass
    xs, gs = x.shape.as_list(), g.shape.as_list()
    summed = [d for d in range(len(xs)) if xs[d] == 1 and gs[d] != 1]
    if summed:  # a size-1 `...` dim of x broadcast against the others
        g = mr.reduce_sum(g, summed, keepdims=True)
    return g if g.shape.is_fully_defined() and g.shape == x.shape else broadcast_to(g, shape(x))


@Einsum.gradient
def _einsum_grad(op_: Any, grad: Tensor) -> list[Tensor]:
    ins, out = _parse(op_.get_attr("equation"), len(op_.inputs))
    return [_input_grad(op_, grad, i, ins, out) for i in range(len(ins))]


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """`af.einsum(equation, *inputs, name=None)`: one `Einsum` op over numpy.einsum."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"invalid keyword arguments for einsum: {', '.join(kwargs)}")
    with name_scope(name, "einsum", list(inputs)):
        tensors = [convert_to_tensor(x, name="x") for x in inputs]
        _parse(equation, len(tensors))
        return Einsum(tensors, equation=equation)


# -- tensordot ------------------------------------------------------------------------------------------------
def _tensordot_axes(a: Tensor, axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError("'axes' must be at least 0.")
        if a.shape.ndims is None:
            raise ValueError("tensordot: an integer 'axes' needs `a` of known rank")
        if axes > a.shape.ndims:
            raise ValueError(f"'axes' must not be larger than the number of dimensions of tensor {a}.")
        return list(range(a.shape.ndims - axes, a.shape.ndims)), list(range(axes))
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError("'axes' must be an integer or have length 2.")
        a_axes, b_axes = axes
        if isinstance(a_axes, (int, np.integer)) and isinstance(b_axes, (int, np.integer)):
            a_axes, b_axes = [a_axes], [b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != {len(b_axes)}.")
        return [int(v) for v in a_axes], [int(v) for v in b_axes]
    raise ValueError("tensordot: 'axes' must be an integer or a pair of axis lists")


def _tensordot_reshape(a: Tensor, axes: list[int], flipped: bool = False) -> tuple[Tensor, Any]:
    """TF1's _tensordot_reshape: `a` transposed to (free, axes) (or (axes, free)) and made a matrix."""
    rank = a.shape.ndims
    if rank is None:
        raise ValueError("tensordot: inputs of unknown rank are not supported")
    axes = [i + rank if i < 0 else i for i in axes]
    free = [i for i in range(rank) if i not in axes]
    perm = axes + free if flipped else free + axes
    a_trans = transpose(a, perm) if perm != list(range(rank)) else a
    if a.shape.is_fully_defined():
        dims = a.shape.as_list()
        free_dims = [dims[i] for i in free]
        prod_free, prod_axes = int(np.prod(free_dims)), int(np.prod([dims[i] for i in axes]))
        new_shape: Any = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
        if a_trans.shape.as_list() != new_shape:
            a_trans = reshape(a_trans, new_shape)
        return a_trans, free_dims
    shape_a = shape(a)
    free_dims = gather(shape_a, free)
    prod_free = mr.reduce_prod(free_dims)
    prod_axes = mr.reduce_prod(gather(shape_a, axes))
    from asyncflow.ops.array import stack

    new_shape = stack([prod_axes, prod_free]) if flipped else stack([prod_free, prod_axes])
    return reshape(a_trans, new_shape), free_dims


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """`af.tensordot`: sums over `axes` of a and b, as TF1 builds it (transpose, reshape, MatMul, reshape)."""
    with name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes = _tensordot_axes(a, axes)
        a_reshape, a_free = _tensordot_reshape(a, a_axes)
        b_reshape, b_free = _tensordot_reshape(b, b_axes, True)
        ab = matmul(a_reshape, b_reshape)
        if isinstance(a_free, list) and isinstance(b_free, list):
            if ab.shape.is_fully_defined() and ab.shape.as_list() == a_free + b_free:
                return ab
            return reshape(ab, a_free + b_free, name=scope)
        a_free = convert_to_tensor(a_free, dtype=dtypes.int32)
        b_free = convert_to_tensor(b_free, dtype=dtypes.int32)
        return reshape(ab, concat([a_free, b_free], 0), name=scope)


# -- norm -----------------------------------------------------------------------------------------------------
def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: bool | None = None,  # noqa: A002
         name: str | None = None, keep_dims: bool | None = None) -> Tensor:
    """`af.norm`: vector norms (euclidean, 1, inf, p > 0) and matrix norms (fro, 1, inf) as TF1's
    linalg_ops.norm; the matrix 2-norm (which needs an SVD) is not offered."""
    keepdims = bool(mr._lookup("keepdims", keepdims, "keep_dims", keep_dims))
    is_matrix_norm = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix_norm:
        axis = tuple(axis)
        if not isinstance(axis[0], int) or not isinstance(axis[1], int) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ["euclidean", "fro", 1, np.inf]:
            raise ValueError(f"'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, inf], got {ord}")
    else:
        if not (isinstance(axis, int) or axis is None):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ["euclidean", 1, 2, np.inf] and (isinstance(ord, str) or not np.isreal(ord) or ord <= 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (axis,)
    from asyncflow.ops.math import abs as abs_
    from asyncflow.ops.math import conj
    from asyncflow.ops.math import pow as pow_
    from asyncflow.ops.math_unary import Sqrt

    with name_scope(name, "norm", [tensor]):
        tensor = convert_to_tensor(tensor)
        if ord in ["fro", "euclidean", 2, 2.0]:
            result = Sqrt(mr.reduce_sum(tensor * conj(tensor), axis, keepdims=True))
        else:
            result = abs_(tensor)
            if ord == 1:
                result = mr.reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if is_matrix_norm:
                    result = mr.reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if is_matrix_norm:
                    result = mr.reduce_sum(result, axis[1], keepdims=True)
                result = mr.reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                result = pow_(mr.reduce_sum(pow_(result, ord), axis, keepdims=True), 1.0 / ord)
        if not keepdims:
            result = squeeze(result, axis)
        return result
