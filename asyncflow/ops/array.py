"""Array ops: constants, placeholders, identity, shapes, stacking, filling, reshaping.

This module owns the core array ops and re-exports the rest of the family, which lives in
`array_dims` (expand_dims, squeeze, broadcast_to), `array_slice` (Slice, StridedSlice,
`tensor[...]`), `array_manip` (concat, split, tile, transpose, reverse), `array_pad` (pad) and
`array_index` (gather, scatter, one_hot, segment sums, boolean_mask). The public functions reproduce TF1's
graph-mode Python wrappers, including their shortcuts: `af.shape(x)` of a fully known shape is a
Const named `Shape`, `af.zeros` of fewer than 1000 elements a Const, `af.stack` of plain numbers a
Const named `stack`.

Each op's gradient sits right below its kernel (`@Op.gradient`) and follows TF's array_grad
rules; ops that pass no gradient (constants, shape queries, StopGradient) say
`differentiable=False`.

Kernels never modify their inputs; an output may be a view of an input (numpy's reshape or
slicing), and Const and variable values are read-only arrays, so a view of them stays read-only
and the Session copies such a value before handing it to the user.

`fold_by_kernel` lets a shape-manipulating op be evaluated at graph-construction time when all
its inputs are known (TF's C++ shape inference does the same), so `af.reshape(x, [af.shape(y)[1],
-1])` gets a static shape when `y`'s second dimension is known.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.registry import (
    ALL_TYPES,
    INDEX,
    NUMERIC,
    REQUIRED,
    BuildContext,
    KernelContext,
    constant,
    constant_folder,
    constant_value,
    convert_to_tensor,
    op,
)
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.shapes import TensorShape, as_shape, unknown_shape

# Inputs larger than this are not evaluated at graph-construction time (shape tensors are small).
_FOLD_LIMIT = 1 << 12


def fold_by_kernel(t: Tensor) -> np.ndarray | None:
    """`t`'s value computed by running its op's kernel on its inputs' constant values, if all are known."""
    node = t.op
    values = []
    for x in node.inputs:
        v = constant_value(x)
        if v is None or np.size(v) > _FOLD_LIMIT:
            return None
        values.append(v)
    coro = node.op_def.kernel(KernelContext(node, None), *values)
    try:
        coro.send(None)
    except StopIteration as done:
        out = done.value
    except (ValueError, IndexError, TypeError):
        return None  # the same error is raised, naming the op, when the graph runs
    else:  # a kernel that suspends has no constant value
        coro.close()
        return None
    if isinstance(out, (list, tuple)):
        out = out[t.value_index]
    return np.asarray(out, dtype=t.dtype.as_numpy_dtype)


def fold_ops(*op_types: str) -> None:
    for op_type in op_types:
        constant_folder(op_type)(fold_by_kernel)


def rank_error(b: BuildContext, i: int, want: int, arg: str) -> ValueError:
    return b.error(f"Shape must be rank {want} but is rank {b.shape(i).ndims} for '{arg}' "
                   f"(shape {b.shape(i)})")


def check_rank(b: BuildContext, i: int, want: int, arg: str) -> None:
    if b.shape(i).ndims not in (None, want):
        raise rank_error(b, i, want, arg)


# -- sources -----------------------------------------------------------------------------------
def _const_shape(b: BuildContext) -> TensorShape:
    return TensorShape(b.attrs["value"].shape)


def _prepare_const(k: Any) -> None:
    # A numeric 0-d constant is handed out as a numpy scalar: scalar arithmetic skips the ufunc machinery.
    value = k.value
    k.output = value[()] if value.ndim == 0 and value.dtype != object else value


@op("Const", outputs="output: dtype", types={"dtype": ALL_TYPES}, attrs={"value": REQUIRED},
    shape=_const_shape, differentiable=False, prepare=_prepare_const, constant=True)
def const_op(k):
    return k.output


@constant_folder("Const")
def _fold_const(t: Tensor) -> np.ndarray:
    return t.op._attrs["value"]


@op("Placeholder", outputs="output: dtype", types={"dtype": ALL_TYPES}, attrs={"shape": None},
    shape=lambda b: as_shape(b.attrs["shape"]) if b.attrs["shape"] is not None else unknown_shape(),
    differentiable=False)
def placeholder_op(k):
    from asyncflow import errors

    raise errors.InvalidArgumentError(
        None, None, f"You must feed a value for placeholder tensor '{k.name}' with dtype {k.dtype.name}"
    )


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """`af.placeholder`: a tensor that must be fed; `shape=None` accepts any shape."""
    shape = None if shape is None else as_shape(shape)
    return placeholder_op(dtype=dtypes.as_dtype(dtype), shape=shape, name=name)


def _placeholder_with_default_shape(b: BuildContext) -> TensorShape:
    # The default must fit the declared shape, which may be less specific than the default's.
    if not b.shape(0).is_compatible_with(b.attrs["shape"]):
        raise b.error(f"the default value has shape {b.shape(0)}, incompatible with the declared "
                      f"shape {b.attrs['shape']}")
    return b.attrs["shape"]


@op("PlaceholderWithDefault", inputs="input: dtype", outputs="output: dtype", types={"dtype": ALL_TYPES},
    attrs={"shape": REQUIRED}, shape=_placeholder_with_default_shape)
def placeholder_with_default_op(k, x):
    return x


@placeholder_with_default_op.gradient
def _placeholder_with_default_grad(op: Any, grad: Any) -> list[Any]:
    return [grad]  # the default value is what flowed through, as TF's _IdGrad


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.placeholder_with_default`: `input` unless fed; `shape` may be less specific than input's."""
    return placeholder_with_default_op(input, shape=as_shape(shape), name=name)


@op("Identity", inputs="input: T", outputs="output: T", types={"T": ALL_TYPES}, shape=same_as_input)
def identity_op(k, x):
    return x


@identity_op.gradient
def _identity_grad(op: Any, grad: Any) -> list[Any]:
    return [grad]


@constant_folder("Identity")
def _fold_identity(t: Tensor) -> np.ndarray | None:
    return constant_value(t.op.inputs[0])


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return identity_op(input, name=name)


@op("StopGradient", inputs="input: T", outputs="output: T", types={"T": ALL_TYPES}, shape=same_as_input,
    differentiable=False)
def stop_gradient_op(k, x):
    return x


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.stop_gradient`: the identity, through which no gradient flows."""
    return stop_gradient_op(input, name=name)


# -- shape queries -------------------------------------------------------------------------------
@op("Shape", inputs="input: T", outputs="output: out_type", types={"T": ALL_TYPES, "out_type": INDEX},
    type_defaults={"out_type": dtypes.int32},
    shape=lambda b: TensorShape([b.shape(0).ndims]), differentiable=False)
def shape_op(k, x):
    return np.array(np.shape(x), dtype=k.out_dtypes[0])


@constant_folder("Shape")
def _fold_shape(t: Tensor) -> np.ndarray | None:
    s = t.op.inputs[0].shape
    return np.array(s.as_list(), dtype=t.dtype.as_numpy_dtype) if s.is_fully_defined() else None


def shape(input: Any, name: str | None = None, out_type: Any = None) -> Tensor:  # noqa: A002
    """`af.shape`: the shape as a 1-D tensor; a Const named `Shape` when the static shape is fully known."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    with name_scope(name, "Shape", [input]) as scope:
        x = convert_to_tensor(input)
        if x.shape.is_fully_defined():
            return constant(x.shape.as_list(), dtype=out_type, name=scope)
        return shape_op(x, out_type=out_type, name=scope)


def _shape_n_shapes(b: BuildContext) -> list[TensorShape]:
    return [TensorShape([s.ndims]) for s in b.shapes(0)]


@op("ShapeN", inputs="input: N * T", outputs="output: N * out_type",
    types={"T": ALL_TYPES, "out_type": INDEX}, type_defaults={"out_type": dtypes.int32},
    shape=_shape_n_shapes, differentiable=False)
def shape_n_op(k, *xs):
    return [np.array(np.shape(x), dtype=k.out_dtypes[0]) for x in xs]


@constant_folder("ShapeN")
def _fold_shape_n(t: Tensor) -> np.ndarray | None:
    s = t.op.inputs[t.value_index].shape
    return np.array(s.as_list(), dtype=t.dtype.as_numpy_dtype) if s.is_fully_defined() else None


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """`af.shape_n`: the shapes of a list of tensors of one dtype, as one ShapeN op."""
    return shape_n_op(list(input), out_type=out_type, name=name)


@op("Size", inputs="input: T", outputs="output: out_type", types={"T": ALL_TYPES, "out_type": INDEX},
    type_defaults={"out_type": dtypes.int32}, shape=lambda b: TensorShape([]), differentiable=False)
def size_op(k, x):
    return k.out_dtypes[0](np.size(x))


@constant_folder("Size")
def _fold_size(t: Tensor) -> np.ndarray | None:
    n = t.op.inputs[0].shape.num_elements()
    return None if n is None else np.array(n, dtype=t.dtype.as_numpy_dtype)


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:  # noqa: A002
    """`af.size`: the number of elements; a Const when the static shape tells it."""
    out_type = dtypes.as_dtype(out_type)
    with name_scope(name, "Size", [input]) as scope:
        x = convert_to_tensor(input)
        s = x.shape
        if s.is_fully_defined():
            return constant(s.num_elements(), dtype=out_type, name=scope)
        if s.ndims and any(d.value == 0 for d in s.dims):
            return constant(0, dtype=out_type, name=scope)
        return size_op(x, out_type=out_type, name=scope)


@op("Rank", inputs="input: T", outputs="output: int32", types={"T": ALL_TYPES},
    shape=lambda b: TensorShape([]), differentiable=False)
def rank_op(k, x):
    return np.int32(np.ndim(x))


@constant_folder("Rank")
def _fold_rank(t: Tensor) -> np.ndarray | None:
    r = t.op.inputs[0].shape.ndims
    return None if r is None else np.array(r, dtype=np.int32)


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.rank`: the number of dimensions; a Const when the static rank is known."""
    with name_scope(name, "Rank", [input]) as scope:
        x = convert_to_tensor(input)
        if x.shape.ndims is not None:
            return constant(x.shape.ndims, dtype=dtypes.int32, name=scope)
        return rank_op(x, name=scope)


# -- stacking (also what convert_to_tensor uses for lists that hold tensors) --------------------------
def _pack_shape(b: BuildContext) -> TensorShape:
    shapes = b.shapes(0)
    merged = shapes[0]
    for s in shapes[1:]:
        try:
            merged = merged.merge_with(s)
        except ValueError:
            raise b.error(f"Shapes {shapes[0]} and {s} are incompatible (all values must have the same "
                          f"shape)") from None
    if merged.ndims is None:
        return unknown_shape()
    rank = merged.ndims + 1
    axis = b.attrs["axis"]
    if not -rank <= axis < rank:
        raise b.error(f"axis {axis} is out of range [{-rank}, {rank})")
    dims = merged.dims
    dims.insert(axis % rank, len(shapes))
    return TensorShape(dims)


@op("Pack", inputs="values: N * T", outputs="output: T", types={"T": ALL_TYPES}, attrs={"axis": 0},
    shape=_pack_shape)
def pack_op(k, *values):
    first = np.shape(values[0])
    for i, v in enumerate(values[1:], 1):
        if np.shape(v) != first:
            raise ValueError(f"Pack '{k.name}': Shapes of all inputs must match: values[0].shape = "
                             f"{list(first)} != values[{i}].shape = {list(np.shape(v))}")
    return np.stack(values, axis=k.axis)


@pack_op.gradient
def _pack_grad(op: Any, grad: Any) -> list[Tensor]:
    from asyncflow.ops.array_manip import unstack

    return unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@constant_folder("Pack")
def _fold_pack(t: Tensor) -> np.ndarray | None:
    parts = [constant_value(x) for x in t.op.inputs]
    if any(p is None for p in parts):
        return None
    return np.stack(parts, axis=t.op._attrs["axis"])


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """`af.stack`, as TF1: plain numbers become one Const named `name`; otherwise a Pack op."""
    if axis == 0:
        try:
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError, NotImplementedError):
            pass
    value_shape = convert_to_tensor(values[0], name=name).shape
    if value_shape.ndims is not None:
        expanded = value_shape.ndims + 1
        if not -expanded <= axis < expanded:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-expanded}, {expanded})")
    return pack_op(list(values), axis=axis, name=name)


def _is_tensor(v: Any) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _first_dtype(value: Any) -> dtypes.DType | None:
    for v in value:
        if _is_tensor(v):
            return convert_to_tensor(v).dtype.base_dtype
        if isinstance(v, (list, tuple)):
            found = _first_dtype(v)
            if found is not None:
                return found
    return None


def _autopack(value: Any, dtype: Any, name: str) -> Tensor:
    """A (nested) list holding tensors, packed exactly as TF's autopacking conversion does.

    Each nesting level is a name scope (`packed`, `packed/0`, ...); plain elements become Consts
    named by their index; when `dtype` differs from the first tensor's, tensors are cast to it.
    """
    inferred = _first_dtype(value)
    dtype = inferred if dtype is None else dtypes.as_dtype(dtype)
    if dtype != inferred:  # TF casts every tensor of another dtype first, outside the packing scope
        value = _cast_tensors(value, dtype)
    return _autopack_level(value, dtype, name)


def _cast_tensors(value: Any, dtype: dtypes.DType) -> Any:
    if isinstance(value, (list, tuple)):
        return [_cast_tensors(v, dtype) for v in value]
    if not _is_tensor(value):
        return value
    value = convert_to_tensor(value)
    if value.dtype.base_dtype == dtype:
        return value
    from asyncflow.ops import math as _math

    return _math.cast(value, dtype)


def _autopack_level(items: Any, dtype: dtypes.DType, name: str) -> Any:
    must_pack = False
    converted = []
    with name_scope(name) as scope:
        for i, elem in enumerate(items):
            if _is_tensor(elem):
                elem = convert_to_tensor(elem)
                if elem.dtype.base_dtype != dtype:
                    raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                    f"{elem.dtype.base_dtype.name} to {dtype.name} (Tensor is: {elem!r})")
                converted.append(elem)
                must_pack = True
            elif isinstance(elem, (list, tuple)):
                inner = _autopack_level(elem, dtype, str(i))
                must_pack = must_pack or isinstance(inner, Tensor)
                converted.append(inner)
            else:
                converted.append(elem)
        if not must_pack:
            return converted
        tensors = [e if isinstance(e, Tensor) else constant(e, dtype=dtype, name=str(i))
                   for i, e in enumerate(converted)]
        return pack_op(tensors, name=scope)


# -- filling -----------------------------------------------------------------------------------------
def _fill_shape(b: BuildContext) -> TensorShape:
    check_rank(b, 0, 1, "dims")
    check_rank(b, 1, 0, "value")
    return b.const_shape(0)


@op("Fill", inputs="dims: index_type, value: T", outputs="output: T",
    types={"T": ALL_TYPES, "index_type": INDEX}, type_defaults={"index_type": dtypes.int32},
    shape=_fill_shape)
def fill_op(k, dims, value):
    if np.ndim(value) != 0:
        raise ValueError(f"Fill '{k.name}': value must be a scalar, got shape {list(np.shape(value))}")
    if np.ndim(dims) != 1:
        raise ValueError(f"Fill '{k.name}': dims must be a vector, got shape {list(np.shape(dims))}")
    for d in dims:
        if d < 0:
            raise ValueError(f"Fill '{k.name}': Dimension {int(d)} must be >= 0 (dims = {list(map(int, dims))})")
    return np.full(tuple(int(d) for d in dims), value, dtype=k.out_dtypes[0])


@fill_op.gradient
def _fill_grad(op: Any, grad: Any) -> list[Any]:
    from asyncflow.ops.math import reduce_sum

    return [None, reduce_sum(grad)]


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    return fill_op(dims, value, name=name)


def _filled(shape: Any, dtype: Any, fill_value: Any, name: str | None, default_name: str) -> Tensor:
    """TF1's zeros/ones: a Const when the shape is known and small, otherwise a Fill."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, default_name, [shape]) as scope:
        if not isinstance(shape, Tensor):
            try:
                dims = as_shape(shape)
            except (TypeError, ValueError):
                dims = None
            if dims is not None and dims.is_fully_defined():
                if dims.num_elements() < 1000:  # TF keeps big fills out of the serialized graph
                    return constant(fill_value, dtype=dtype, shape=dims.as_list(), name=scope)
                wide = any(d >= 2**31 for d in dims.as_list())
                shape = constant(dims.as_list(), dtype=dtypes.int64 if wide else dtypes.int32,
                                 name="shape_as_tensor")
            else:
                shape = convert_to_tensor(shape, dtype=dtypes.int32)
        shape = convert_to_tensor(shape)
        if shape.shape.ndims == 0:
            shape = reshape(shape, [-1])
        return fill_op(shape, constant(fill_value, dtype=dtype), name=scope)


def _zero(dtype: dtypes.DType) -> Any:
    return False if dtype.is_bool else "" if dtype.is_string else 0


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, _zero(dtypes.as_dtype(dtype)), name, "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, True if dtypes.as_dtype(dtype).is_bool else 1, name, "ones")


@op("ZerosLike", inputs="x: T", outputs="y: T", types={"T": ALL_TYPES}, shape=same_as_input,
    differentiable=False)
def zeros_like_op(k, x):
    if k.out_dtypes[0] == np.object_:
        return np.full(np.shape(x), b"", dtype=object)
    return np.zeros_like(x)


@op("OnesLike", inputs="x: T", outputs="y: T", types={"T": NUMERIC + (dtypes.bool,)}, shape=same_as_input,
    differentiable=False)
def ones_like_op(k, x):
    return np.ones_like(x)


def _shape_as_tensor(t: Tensor) -> Tensor:
    """TF's `shape_internal(t)` without out_type: a Const `shape_as_tensor` when known, else a Shape op."""
    with name_scope(None, "Shape", [t]) as scope:
        if t.shape.is_fully_defined():
            return constant(t.shape.as_list(), dtype=dtypes.int32, name="shape_as_tensor")
        return shape_op(t, name=scope)


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    with name_scope(name, "zeros_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        if optimize and t.shape.is_fully_defined():
            return zeros(t.shape, dtype=dtype or t.dtype.base_dtype, name=scope)
        if dtype is not None and dtype != t.dtype.base_dtype:
            return zeros(_shape_as_tensor(t), dtype=dtype, name=scope)
        return zeros_like_op(t, name=scope)


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    with name_scope(name, "ones_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        dtype = t.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype)
        out = ones(_shape_as_tensor(t), dtype=dtype, name=scope)
        out.set_shape(t.shape)
        return out


# -- reshape -------------------------------------------------------------------------------------------
def _known_product(dims: list[int | None]) -> tuple[int, int | None, bool]:
    """(product of the known dims, index of the one unknown dim or None, more than one unknown)."""
    n, unknown = 1, None
    for i, d in enumerate(dims):
        if d is None:
            if unknown is not None:
                return n, unknown, True
            unknown = i
        else:
            n *= d
    return n, unknown, False


def _reshape_shape(b: BuildContext) -> TensorShape:
    """TF's Reshape shape function: infers the one unknown output dim (or checks the element count)."""
    check_rank(b, 1, 1, "shape")
    out = b.const_shape(1)
    x = b.shape(0)
    if out.ndims is None or x.ndims is None:
        return out
    out_dims = out.as_list()
    out_n, out_unknown, too_many = _known_product(out_dims)
    in_n, in_unknown, too_many_in = _known_product(x.as_list())
    if too_many or too_many_in:
        return out
    shown = [-1 if d is None else d for d in out_dims]
    if in_unknown is None and out_unknown is None:
        if in_n != out_n:
            raise b.error(f"Cannot reshape a tensor with {in_n} elements (shape {x}) to shape {shown} "
                          f"({out_n} elements)")
    elif in_unknown is None and out_n > 0:
        if in_n % out_n:
            raise b.error(f"Cannot reshape a tensor with {in_n} elements (shape {x}) to shape {shown}: "
                          f"Dimension size must be evenly divisible by {out_n} but is {in_n}")
        out_dims[out_unknown] = in_n // out_n
    elif out_unknown is None and in_n != 0 and out_n % in_n:
        raise b.error(f"Cannot reshape a tensor of shape {x} to shape {shown}: Dimension size must be "
                      f"evenly divisible by {in_n} but is {out_n}")
    return TensorShape(out_dims)


@op("Reshape", inputs="tensor: T, shape: Tshape", outputs="output: T",
    types={"T": ALL_TYPES, "Tshape": INDEX}, type_defaults={"Tshape": dtypes.int32}, shape=_reshape_shape)
def reshape_op(k, x, new_shape):
    if np.ndim(new_shape) != 1:
        raise ValueError(f"Reshape '{k.name}': shape must be a vector, got shape {list(np.shape(new_shape))}")
    dims = [int(d) for d in new_shape]
    wild = [i for i, d in enumerate(dims) if d == -1]
    if len(wild) > 1:
        raise ValueError(f"Reshape '{k.name}': Only one input size may be -1, not both {wild[0]} and {wild[1]}")
    if any(d < -1 for d in dims):
        raise ValueError(f"Reshape '{k.name}': Size {dims.index(min(dims))} must be non-negative, not "
                         f"{min(dims)}")
    n = int(np.size(x))
    known = math.prod(d for d in dims if d != -1)
    if wild:
        if known == 0 or n % known:
            raise ValueError(f"Reshape '{k.name}': Input to reshape is a tensor with {n} values, but the "
                             f"requested shape requires a multiple of {known} (shape {dims})")
    elif known != n:
        raise ValueError(f"Reshape '{k.name}': Input to reshape is a tensor with {n} values, but the "
                         f"requested shape has {known} (shape {dims})")
    return np.reshape(x, dims)


@reshape_op.gradient
def _reshape_grad(op: Any, grad: Any) -> list[Any]:
    """The gradient reshaped back to the input's shape (TF's _ReshapeGrad).

    With one unknown input dimension (and no zero one) the target is a constant with a -1, so
    the gradient does not wait on a Shape of the forward input.
    """
    x = op.inputs[0]
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is not None and dims.count(None) == 1 and 0 not in dims:
        return [reshape(grad, [-1 if d is None else d for d in dims]), None]
    return [reshape(grad, shape(x)), None]


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return reshape_op(tensor, shape, name=name)


fold_ops("Fill", "Reshape")

_CORE = [
    "stop_gradient",
    "constant", "placeholder", "placeholder_with_default", "identity", "shape", "shape_n", "size", "rank",
    "stack", "fill", "zeros", "ones", "zeros_like", "ones_like", "reshape", "convert_to_tensor",
]

# The rest of the family; imported last because those modules build on the functions above.
from asyncflow.ops import array_dims, array_index, array_manip, array_slice  # noqa: E402
from asyncflow.ops.array_dims import *  # noqa: E402, F403
from asyncflow.ops.array_index import *  # noqa: E402, F403
from asyncflow.ops.array_manip import *  # noqa: E402, F403
from asyncflow.ops.array_slice import *  # noqa: E402, F403
from asyncflow.ops.array_slice import _slice_helper  # noqa: E402, F401 - used by overloads for tensor[...]

__all__ = _CORE + array_dims.__all__ + array_slice.__all__ + array_manip.__all__ + array_index.__all__
