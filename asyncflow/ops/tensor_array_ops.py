"""TF1's TensorArrayV3 ops: a per-step array of tensors, and the gradients of tensor_array_grad.py.

`TensorArrayV3(size)` makes a `TensorArrayStore` each time it runs and outputs it as its `resource`
handle (as `StackV2` does), with a float `flow` scalar. The store lives in the step's values, so
it never outlives the step and two steps or sessions never share one. Every other op takes the
handle and a flow, and writes output a new flow: the flow is what orders reads after writes
(a while loop carries it as a loop variable; the handle is loop-invariant). All are stateful, so
no pass folds or merges them.

A slot is written once (InvalidArgumentError on a second write, or on a write after a read that
cleared it); a read with `clear_after_read` drops the value. An unwritten slot reads as zeros
when its shape is known (the element shape, or, in a gradient array, the shape the forward
array's slot had), else InvalidArgumentError. `TensorArrayGradV3(handle, flow, source)` gives the
gradient array of `handle` for one `af.gradients` call (`source`): made once, same size, and its
writes ADD into a slot already written (gradients reaching one element from several reads).

Gradients (TF1's): a read writes its gradient into the gradient array; a write reads it back;
gather/scatter and concat/split likewise. The grad array is keyed by the name of the gradient
call (`_grad_source`), so the ops of one `af.gradients` call, inside a while loop's backward loop
or outside it, meet in the same array. The Python class is `asyncflow/ops/tensor_array.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, control_dependencies
from asyncflow.ops.array import identity
from asyncflow.ops.registry import ALL_TYPES, REQUIRED, BuildContext, op
from asyncflow.shapes import TensorShape, as_shape, unknown_shape


def _dims_text(dims: Any) -> str:
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _shape_text(shape: TensorShape) -> str:
    return _dims_text(None if shape.ndims is None else shape.as_list())


class _Slot:
    __slots__ = ("value", "written", "cleared", "shape")

    def __init__(self) -> None:
        self.value: np.ndarray | None = None
        self.written = False
        self.cleared = False
        self.shape: tuple[int, ...] | None = None  # what was written (kept after a clearing read)


class TensorArrayStore:
    """One run's TensorArray: its slots, its element shape as known at run time, its gradient arrays."""

    def __init__(self, name: str, dtype: dtypes.DType, size: int, element_shape: TensorShape, dynamic_size: bool,
                 clear_after_read: bool, identical_element_shapes: bool, aggregate: bool = False):
        self.name = name
        self.dtype = dtype
        self.slots = [_Slot() for _ in range(size)]
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.identical_element_shapes = identical_element_shapes
        self.aggregate = aggregate  # a gradient array: a second write to a slot adds
        self.closed = False
        self.grads: dict[str, TensorArrayStore] = {}

    def _fail(self, message: str) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(None, None, f"TensorArray {self.name}: {message}")

    def check_open(self) -> None:
        if self.closed:
            raise errors.InvalidArgumentError(None, None, f"TensorArray {self.name} has already been closed.")

    # -- writes ---------------------------------------------------------------------------------------
    def reserve(self, last: int) -> None:
        """Makes room for index `last`: grows a dynamic array; else InvalidArgumentError."""
        if last < 0 or (last >= len(self.slots) and not self.dynamic_size):
            raise self._fail(f"Tried to write to index {last} but array is not resizeable and size is: "
                             f"{len(self.slots)}")
        while len(self.slots) <= last:
            self.slots.append(_Slot())

    def write(self, index: int, value: Any) -> None:
        self.check_open()
        self.reserve(index)
        value = np.asarray(value)
        if self.dtype.is_string and value.dtype.kind in "OSU":
            # one row of a string tensor (scatter, split) is a bare bytes object: numpy makes it an 'S' array
            value = value.astype(object)
        if value.dtype != self.dtype.as_numpy_dtype and not (self.dtype.is_string and value.dtype == object):
            raise errors.InvalidArgumentError(None, None, f"TensorArray dtype is {self.dtype.name} but Op is "
                                                          f"trying to write dtype {dtypes.as_dtype(value.dtype).name}.")
        if not self.element_shape.is_compatible_with(value.shape):
            kind = "inferred element shape" if self.identical_element_shapes else "element shape"
            raise self._fail(f"Could not write to TensorArray index {index} because the value shape is "
                             f"{_dims_text(value.shape)} which is incompatible with the TensorArray's {kind}: "
                             f"{_shape_text(self.element_shape)} (consider setting infer_shape=False).")
        slot = self.slots[index]
        if self.aggregate and slot.written and slot.value is not None:
            if slot.value.shape != value.shape:
                raise self._fail(f"Could not aggregate to TensorArray index {index} because the existing shape is "
                                 f"{_dims_text(slot.value.shape)} but the new input shape is "
                                 f"{_dims_text(value.shape)}.")
            slot.value = slot.value + value  # a new array: values handed out are never changed
        else:
            if not self.aggregate:
                if slot.cleared:
                    raise self._fail(f"Could not write to TensorArray index {index} because it has already been "
                                     f"read.")
                if slot.written:
                    raise self._fail(f"Could not write to TensorArray index {index} because it has already been "
                                     f"written to.")
            slot.value, slot.cleared = value, False
        slot.written, slot.shape = True, value.shape
        if self.identical_element_shapes:  # TF's identical_element_shapes: the first write fixes the shape
            self.element_shape = TensorShape(value.shape)

    # -- reads ----------------------------------------------------------------------------------------
    def read(self, index: int) -> np.ndarray:
        self.check_open()
        if index < 0 or index >= len(self.slots):
            raise errors.InvalidArgumentError(None, None, f"Tried to read from index {index} but array size is: "
                                                          f"{len(self.slots)}")
        slot = self.slots[index]
        if slot.cleared:
            raise self._fail(f"Could not read index {index} twice because it was cleared after a previous read "
                             f"(perhaps try setting clear_after_read = false?).")
        if not slot.written:
            shape = slot.shape if slot.shape is not None else (
                tuple(self.element_shape.as_list()) if self.element_shape.is_fully_defined() else None)
            if shape is None:
                raise self._fail(
                    f"Could not read from TensorArray index {index}.  Furthermore, the element shape is not fully "
                    f"defined: {_shape_text(self.element_shape)}.  It is possible you are working with a resizeable "
                    f"TensorArray and stop_gradients is not allowing the gradients to be written.  If you set the "
                    f"full element_shape property on the forward TensorArray, the proper all-zeros tensor will be "
                    f"returned instead of incurring this error.")
            return np.zeros(shape, self.dtype.as_numpy_dtype)
        value = slot.value
        if self.clear_after_read:
            slot.value, slot.cleared = None, True
        return value

    def check_dtype(self, dtype: dtypes.DType) -> None:
        if dtype != self.dtype:
            raise errors.InvalidArgumentError(None, None, f"TensorArray dtype is {self.dtype.name} but Op requested "
                                                          f"dtype {dtype.name}.")

    def empty(self, element_shape: TensorShape) -> np.ndarray:
        """The [0, ...] result of packing nothing: only when the element shape is known (as TF)."""
        shape = element_shape
        if self.element_shape.is_compatible_with(shape):
            shape = shape.merge_with(self.element_shape)
        if not shape.is_fully_defined():
            raise errors.UnimplementedError(
                None, None, f"TensorArray has size zero, but element shape {_shape_text(shape)} is not fully "
                            f"defined. Currently only static shapes are supported when packing zero-size "
                            f"TensorArrays.")
        return np.zeros([0] + shape.as_list(), self.dtype.as_numpy_dtype)

    def gradient(self, source: str) -> TensorArrayStore:
        """The gradient array for the gradient call `source`: made once, then the same one."""
        self.check_open()
        grad = self.grads.get(source)
        if grad is None:
            grad = TensorArrayStore(f"{self.name}@{source}", self.dtype, len(self.slots), self.element_shape,
                                    False, True, self.identical_element_shapes, aggregate=True)
            for mine, theirs in zip(grad.slots, self.slots):
                mine.shape = theirs.shape  # an unwritten gradient slot reads as zeros of the forward shape
            self.grads[source] = grad
        return grad


_TRAITS: dict[str, Any] = {"stateful": True}
_NO_GRAD: dict[str, Any] = {"stateful": True, "differentiable": False}
_T = {"T": ALL_TYPES}
_DTYPE = {"dtype": ALL_TYPES}


def _scalar(b: BuildContext) -> TensorShape:
    return TensorShape([])


def _check_scalar(b: BuildContext, i: int, what: str) -> None:
    if not b.shape(i).is_compatible_with([]):
        raise b.error(f"{what} must be a scalar, got shape {b.shape(i)}")


def _check_vector(b: BuildContext, i: int, what: str) -> TensorShape:
    if not b.shape(i).is_compatible_with([None]):
        raise b.error(f"{what} must be a vector, got shape {b.shape(i)}")
    return b.shape(i)


# -- making the array --------------------------------------------------------------------------------------
def _create_shape(b: BuildContext) -> list[TensorShape]:
    _check_scalar(b, 0, "size")
    return [TensorShape([]), TensorShape([])]


@op("TensorArrayV3", inputs="size: int32", outputs="handle: resource, flow: float32", types=_DTYPE,
    attrs={"element_shape": unknown_shape(), "dynamic_size": False, "clear_after_read": True,
           "identical_element_shapes": False, "tensor_array_name": ""}, shape=_create_shape, **_NO_GRAD)
def tensor_array_v3(k, size):
    n = int(size)
    if n < 0:
        raise errors.InvalidArgumentError(None, None, "Size should be >= 0.")
    store = TensorArrayStore(k.tensor_array_name or k.name, k.dtype, n, as_shape(k.element_shape), k.dynamic_size,
                             k.clear_after_read, k.identical_element_shapes)
    return store, np.float32(0)


@op("TensorArrayGradV3", inputs="handle: resource, flow_in: float32",
    outputs="grad_handle: resource, flow_out: float32", attrs={"source": REQUIRED},
    shape=lambda b: [TensorShape([]), TensorShape([])], **_NO_GRAD)
def tensor_array_grad_v3(k, handle, flow_in):
    return handle.gradient(k.source), flow_in


@op("TensorArraySizeV3", inputs="handle: resource, flow_in: float32", outputs="size: int32", shape=_scalar,
    **_NO_GRAD)
def tensor_array_size_v3(k, handle, flow_in):
    handle.check_open()
    return np.int32(len(handle.slots))


@op("TensorArrayCloseV3", inputs="handle: resource", **_NO_GRAD)
def tensor_array_close_v3(k, handle):
    handle.check_open()
    handle.closed = True
    for slot in handle.slots:
        slot.value = None


# -- gradient helpers (TF1's tensor_array_grad.py) ----------------------------------------------------------
def _grad_source(t: Any) -> str:
    """Which `af.gradients` call built `t`: its name up to its first `gradients*` scope.

    TF takes the last such scope; here the body of a while loop's backward loop is differentiated
    by a gradients call nested inside the outer one (`gradients/while_grad/gradients/...`), and
    its ops must meet the outer call's in the same gradient array, so the outermost one names it.
    """
    tokens = t.name.split("/")
    for i, token in enumerate(tokens):
        if token.startswith("gradients"):
            return "/".join(tokens[:i + 1])
    raise ValueError(f"Expected op/tensor name to start with gradients (excluding scope), got: {t.name}. This "
                     f"means that a af.gradients call with this op in its dependency path has a custom name that "
                     f"does not start with 'gradients'.")


def _dense(g: Any) -> Any:
    return g._as_tensor() if hasattr(g, "_as_tensor") and not isinstance(g, Tensor) else g


def _grad_array(handle: Tensor, flow: Tensor, source: str) -> tuple[Tensor, Tensor]:
    """The gradient array's handle, and a flow that runs after it was made. For an array made inside a
    while loop's body, `handle` in the backward loop is that iteration's array, kept on a stack."""
    g_handle, _ = tensor_array_grad_v3(handle, flow, source=source)
    with control_dependencies([g_handle]):
        return g_handle, identity(flow, name="gradient_flow")


def _after_forward(op: Any, flow: Tensor) -> Tensor:
    """`flow`, once the forward op has written (so the gradient array sees the final size)."""
    flow_out = identity(op.outputs[0], name="flow_out")
    with control_dependencies([flow_out]):
        return identity(flow, name="write_barrier")


# -- writes and reads ----------------------------------------------------------------------------------------
def _write_shape(b: BuildContext) -> TensorShape:
    _check_scalar(b, 1, "index")
    _check_scalar(b, 3, "flow_in")
    return TensorShape([])


@op("TensorArrayWriteV3", inputs="handle: resource, index: int32, value: T, flow_in: float32",
    outputs="flow_out: float32", types=_T, shape=_write_shape, **_TRAITS)
def tensor_array_write_v3(k, handle, index, value, flow_in):
    handle.write(int(index), value)
    return flow_in


@tensor_array_write_v3.gradient
def _write_grad(op: Any, flow: Tensor) -> list[Any]:
    flow = _after_forward(op, flow)
    g_handle, g_flow = _grad_array(op.inputs[0], flow, _grad_source(flow))
    grad = tensor_array_read_v3(g_handle, op.inputs[1], g_flow, dtype=op.get_attr("T"))
    grad.set_shape(op.inputs[2].shape)
    return [None, None, grad, flow]


def _read_shape(b: BuildContext) -> TensorShape:
    _check_scalar(b, 1, "index")
    return unknown_shape()


@op("TensorArrayReadV3", inputs="handle: resource, index: int32, flow_in: float32", outputs="value: dtype",
    types=_DTYPE, shape=_read_shape, **_TRAITS)
def tensor_array_read_v3(k, handle, index, flow_in):
    handle.check_dtype(k.dtype)
    return handle.read(int(index))


@tensor_array_read_v3.gradient
def _read_grad(op: Any, grad: Any) -> list[Any]:
    grad = _dense(grad)
    g_handle, g_flow = _grad_array(op.inputs[0], op.inputs[2], _grad_source(grad))
    return [None, None, tensor_array_write_v3(g_handle, op.inputs[1], grad, g_flow)]


# -- gather and scatter ---------------------------------------------------------------------------------------
def _gather_shape(b: BuildContext) -> TensorShape:
    indices = _check_vector(b, 1, "indices")
    return TensorShape([indices[0] if indices.ndims else None]).concatenate(as_shape(b.attrs["element_shape"]))


def _stack(handle: TensorArrayStore, values: list[np.ndarray], element_shape: TensorShape) -> np.ndarray:
    if not values:
        return handle.empty(element_shape)
    first = values[0].shape
    for i, v in enumerate(values[1:], 1):
        if v.shape != first:
            raise errors.InvalidArgumentError(None, None, f"TensorArray has inconsistent shapes.  Index 0 has shape: "
                                                          f"{_dims_text(first)} but index {i} has shape: "
                                                          f"{_dims_text(v.shape)}")
    return np.stack(values).astype(handle.dtype.as_numpy_dtype, copy=False)


@op("TensorArrayGatherV3", inputs="handle: resource, indices: int32, flow_in: float32", outputs="value: dtype",
    types=_DTYPE, attrs={"element_shape": unknown_shape()}, shape=_gather_shape, **_TRAITS)
def tensor_array_gather_v3(k, handle, indices, flow_in):
    handle.check_open()
    handle.check_dtype(k.dtype)
    return _stack(handle, [handle.read(int(i)) for i in np.asarray(indices).reshape(-1)], as_shape(k.element_shape))


@tensor_array_gather_v3.gradient
def _gather_grad(op: Any, grad: Any) -> list[Any]:
    grad = _dense(grad)
    g_handle, g_flow = _grad_array(op.inputs[0], op.inputs[2], _grad_source(grad))
    return [None, None, tensor_array_scatter_v3(g_handle, op.inputs[1], grad, g_flow)]


def _scatter_shape(b: BuildContext) -> TensorShape:
    indices = _check_vector(b, 1, "indices")
    value = b.shape(2)
    if value.ndims == 0:
        raise b.error(f"value must be at least a vector, got shape {value}")
    if indices.ndims and value.ndims and not indices[0].is_compatible_with(value[0]):
        raise b.error(f"indices has {indices[0]} elements but value's first dimension is {value[0]}")
    return TensorShape([])


@op("TensorArrayScatterV3", inputs="handle: resource, indices: int32, value: T, flow_in: float32",
    outputs="flow_out: float32", types=_T, shape=_scatter_shape, **_TRAITS)
def tensor_array_scatter_v3(k, handle, indices, value, flow_in):
    handle.check_open()
    indices = np.asarray(indices).reshape(-1)
    value = np.asarray(value)
    if value.ndim == 0 or value.shape[0] != indices.size:
        raise errors.InvalidArgumentError(None, None, f"Expected len(indices) == values.shape[0], but saw: "
                                                      f"{indices.size} vs. {value.shape[0] if value.ndim else 0}")
    if indices.size:
        top = int(indices.max())
        if not handle.dynamic_size and top >= len(handle.slots):
            raise errors.InvalidArgumentError(None, None, f"Max scatter index must be < array size ({top} vs. "
                                                          f"{len(handle.slots)})")
        if int(indices.min()) < 0:
            raise errors.InvalidArgumentError(None, None, f"Index {int(indices.min())} must be non-negative")
    for i, index in enumerate(indices.tolist()):
        handle.write(index, value[i])
    return flow_in


@tensor_array_scatter_v3.gradient
def _scatter_grad(op: Any, flow: Tensor) -> list[Any]:
    flow = _after_forward(op, flow)
    g_handle, g_flow = _grad_array(op.inputs[0], flow, _grad_source(flow))
    value = op.inputs[2]
    grad = tensor_array_gather_v3(g_handle, op.inputs[1], g_flow, dtype=op.get_attr("T"),
                                  element_shape=value.shape[1:])
    grad.set_shape(value.shape)
    return [None, None, grad, flow]


# -- concat and split -------------------------------------------------------------------------------------------
def _concat_shape(b: BuildContext) -> list[TensorShape]:
    return [TensorShape([None]).concatenate(as_shape(b.attrs["element_shape_except0"])), TensorShape([None])]


@op("TensorArrayConcatV3", inputs="handle: resource, flow_in: float32", outputs="value: dtype, lengths: int64",
    types=_DTYPE, attrs={"element_shape_except0": unknown_shape()}, shape=_concat_shape, **_TRAITS)
def tensor_array_concat_v3(k, handle, flow_in):
    handle.check_open()
    handle.check_dtype(k.dtype)
    values = [handle.read(i) for i in range(len(handle.slots))]
    if not values:
        rest = as_shape(k.element_shape_except0)
        known = handle.element_shape[1:]
        if known.is_compatible_with(rest):
            rest = rest.merge_with(known)
        if not rest.is_fully_defined():
            raise errors.UnimplementedError(
                None, None, f"TensorArray has size zero, but element_shape_except0 {_shape_text(rest)} is not fully "
                            f"defined. Currently only static shapes are supported when concatenating zero-size "
                            f"TensorArrays.")
        return np.zeros([0] + rest.as_list(), handle.dtype.as_numpy_dtype), np.zeros([0], np.int64)
    for i, v in enumerate(values):
        if v.ndim == 0:
            raise errors.InvalidArgumentError(None, None, f"Concat saw a scalar shape at index {i} but requires at "
                                                          f"least vectors.")
        if v.shape[1:] != values[0].shape[1:]:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: "
                            f"{_dims_text(values[0].shape[1:])} but index {i} has (excepting dimension 0) shape: "
                            f"{_dims_text(v.shape[1:])}")
    lengths = np.array([v.shape[0] for v in values], np.int64)
    return np.concatenate(values).astype(handle.dtype.as_numpy_dtype, copy=False), lengths


@tensor_array_concat_v3.gradient
def _concat_grad(op: Any, grad: Any, lengths_grad: Any) -> list[Any]:
    grad = _dense(grad)
    g_handle, g_flow = _grad_array(op.inputs[0], op.inputs[1], _grad_source(grad))
    return [None, tensor_array_split_v3(g_handle, grad, op.outputs[1], g_flow)]


def _split_shape(b: BuildContext) -> TensorShape:
    if b.shape(1).ndims == 0:
        raise b.error(f"value must be at least a vector, got shape {b.shape(1)}")
    _check_vector(b, 2, "lengths")
    return TensorShape([])


@op("TensorArraySplitV3", inputs="handle: resource, value: T, lengths: int64, flow_in: float32",
    outputs="flow_out: float32", types=_T, shape=_split_shape, **_TRAITS)
def tensor_array_split_v3(k, handle, value, lengths, flow_in):
    handle.check_open()
    value = np.asarray(value)
    lengths = np.asarray(lengths).reshape(-1)
    if value.ndim == 0:
        raise errors.InvalidArgumentError(None, None, f"Expected value to be at least a vector, but received shape: "
                                                      f"{_dims_text(value.shape)}")
    if int(lengths.sum()) != value.shape[0]:
        raise errors.InvalidArgumentError(None, None, f"Expected sum of lengths to be equal to values.shape[0], but "
                                                      f"sum of lengths is {int(lengths.sum())} and value's shape is: "
                                                      f"{_dims_text(value.shape)}")
    if lengths.size > len(handle.slots) and not handle.dynamic_size:
        raise errors.InvalidArgumentError(None, None, f"TensorArray's size is not equal to the size of lengths "
                                                      f"({len(handle.slots)} vs. {lengths.size}), and the TensorArray "
                                                      f"is not marked as dynamically resizeable")
    if (lengths < 0).any():
        raise errors.InvalidArgumentError(None, None, "Expected lengths to be non-negative")
    start = 0
    for i, n in enumerate(lengths.tolist()):
        handle.write(i, value[start:start + n])
        start += n
    return flow_in


@tensor_array_split_v3.gradient
def _split_grad(op: Any, flow: Tensor) -> list[Any]:
    flow = _after_forward(op, flow)
    g_handle, g_flow = _grad_array(op.inputs[0], flow, _grad_source(flow))
    value = op.inputs[1]
    grad, _ = tensor_array_concat_v3(g_handle, g_flow, dtype=op.get_attr("T"),
                                     element_shape_except0=value.shape[1:])
    grad.set_shape(value.shape)
    return [None, grad, None, flow]


__all__: list[str] = []
