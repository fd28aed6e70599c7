"""`af.TensorArray`: TF1's graph-mode TensorArray (tensor_array_ops.py's `_GraphTensorArray`).

A TensorArray is a `handle` (the per-step array made by `TensorArrayV3`) and a `flow` (a float
scalar): each write returns a new TensorArray on the same handle with the write's output flow,
and reads take the flow, so the flow orders them. `af.while_loop` carries a TensorArray in its
`loop_vars` as its flow and rebuilds it in the body and the result (the handle is captured as a
loop invariant). The ops, their kernels and their gradients are `asyncflow/ops/tensor_array_ops.py`.

Static shapes as TF1: `element_shape` (given, or merged from every write when `infer_shape`; all
TensorArrays built from one share it), `read` gives it, `stack`/`gather` give [None] + it ([size]
+ it for `stack` of a fixed-size array of known size), `concat` [None or size * dim 0] + the rest.
A write of another dtype is a TypeError at once (TF1 logs it and fails when the step runs).
"""

from __future__ import annotations

import contextlib
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor, colocate_with, control_dependencies, name_scope
from asyncflow.ops import tensor_array_ops as ta_ops
from asyncflow.ops.array import identity, shape
from asyncflow.ops.math import cast
from asyncflow.ops.math_reduce import range as _range
from asyncflow.ops.registry import constant_value, convert_to_tensor
from asyncflow.shapes import TensorShape, as_shape, unknown_shape


class TensorArray:
    """A list of tensors of one dtype, written and read by index inside a graph (TF1's TensorArray)."""

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Tensor | None = None, flow: Tensor | None = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True, name: str | None = None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot provide both `handle` and `tensor_array_name` arguments at the same time.")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError(f"Expected `handle` to be a Tensor, but got `{handle}` of type `{type(handle)}` instead.")
        if handle is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        for arg, value in (("size", size), ("element_shape", element_shape), ("dynamic_size", dynamic_size),
                           ("clear_after_read", clear_after_read)):
            if handle is not None and value is not None:
                raise ValueError(f"Cannot provide both a `handle` and `{arg}` arguments at the same time.")
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._colocate_with_first_write_call = colocate_with_first_write_call
        # One list shared by every TensorArray on this handle: what one write learns, all see (as TF1).
        self._element_shape = [as_shape(element_shape) if element_shape is not None else unknown_shape()]
        self._size = size
        with name_scope(name, "TensorArray", [handle, size, flow]) as scope:
            if handle is not None:
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._handle, self._flow = handle, flow
            else:
                # As TF1: with colocate_with_first_write_call the array has no device of its own, so it goes
                # where the ops that use it go (placement keeps a resource's users with it).
                place = colocate_with(None, ignore_existing=True) if colocate_with_first_write_call else \
                    contextlib.nullcontext()
                with place:
                    self._handle, self._flow = ta_ops.tensor_array_v3(
                        size, dtype=self._dtype, element_shape=self._element_shape[0],
                        identical_element_shapes=infer_shape, dynamic_size=self._dynamic_size,
                        clear_after_read=True if clear_after_read is None else clear_after_read,
                        tensor_array_name=tensor_array_name or "", name=scope)

    # -- properties ---------------------------------------------------------------------------------------
    flow = property(lambda self: self._flow)
    dtype = property(lambda self: self._dtype)
    handle = property(lambda self: self._handle)
    element_shape = property(lambda self: self._element_shape[0])
    dynamic_size = property(lambda self: self._dynamic_size)

    def _with_flow(self, flow: Tensor) -> TensorArray:
        """A TensorArray on the same handle, ordered by `flow` (TF1's build_ta_with_new_flow)."""
        ta = TensorArray.__new__(TensorArray)
        ta.__dict__.update(self.__dict__)  # the element-shape list stays shared
        ta._flow = flow
        return ta

    def _check_element_shape(self, shape: TensorShape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def _value(self, value: Any, what: str) -> Tensor:
        value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
        if value.dtype.base_dtype != self._dtype:
            raise TypeError(f"TensorArray {what}: the value has dtype {value.dtype.base_dtype.name}, but the "
                            f"TensorArray holds {self._dtype.name}")
        return value

    # -- the API ---------------------------------------------------------------------------------------------
    def identity(self) -> TensorArray:
        """A TensorArray whose flow is an identity of this one's (so control dependencies can gate it)."""
        return self._with_flow(identity(self._flow))

    def grad(self, source: str, flow: Tensor | None = None, name: str | None = None) -> TensorArray:
        """The gradient TensorArray for the gradient call `source` (made once per step; writes add)."""
        flow = self._flow if flow is None else flow
        with name_scope(name, "TensorArrayGrad", [self._handle]):
            g_handle, _ = ta_ops.tensor_array_grad_v3(self._handle, flow, source=source, name=name)
            with control_dependencies([g_handle]):
                flow = identity(flow, name="gradient_flow")
        g = TensorArray(self._dtype, handle=g_handle, flow=flow, infer_shape=self._infer_shape,
                        colocate_with_first_write_call=False)
        g._element_shape = self._element_shape
        return g

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at `index` (an int32 scalar)."""
        value = ta_ops.tensor_array_read_v3(self._handle, index, self._flow, dtype=self._dtype, name=name)
        value.set_shape(self.element_shape)
        return value

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """Writes `value` at `index`; use the TensorArray it returns from then on."""
        with name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = self._value(value, "write")
            self._check_element_shape(value.shape)
            flow = ta_ops.tensor_array_write_v3(self._handle, index, value, self._flow, name=name)
        return self._with_flow(flow)

    def stack(self, name: str | None = None) -> Tensor:
        """All elements, stacked along a new first dimension."""
        with name_scope(name, "TensorArrayStack", [self._handle]):
            value = self.gather(_range(0, self.size()), name=name)
            if self.element_shape and not self._dynamic_size and self._size is not None:
                known = constant_value(self._size) if isinstance(self._size, Tensor) else self._size
                value.set_shape([None if known is None else int(known)] + self.element_shape.as_list())
            return value

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices` (an int32 vector), stacked."""
        value = ta_ops.tensor_array_gather_v3(self._handle, indices, self._flow, dtype=self._dtype,
                                              element_shape=self.element_shape, name=name)
        if self.element_shape:
            value.set_shape([None] + self.element_shape.as_list())
        return value

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first dimension."""
        value, _ = ta_ops.tensor_array_concat_v3(self._handle, self._flow, dtype=self._dtype,
                                                 element_shape_except0=self.element_shape[1:], name=name)
        if self.element_shape:
            dim0 = None
            if self._infer_shape and self.element_shape.ndims:
                size = constant_value(self.size())
                first = self.element_shape[0].value
                if size is not None and first is not None:
                    dim0 = int(size) * first
            value.set_shape([dim0] + self.element_shape.as_list()[1:])
        return value

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Writes the rows of `value` (along its first dimension) as elements 0, 1, ..."""
        with name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            return self.scatter(_range(0, shape(value)[0]), value, name=name)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """Writes row i of `value` at `indices[i]`."""
        with name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = self._value(value, "scatter")
            if value.shape.ndims == 0:
                raise ValueError(f"TensorArray scatter: value must be at least a vector, got shape {value.shape}")
            self._check_element_shape(value.shape[1:])
            flow = ta_ops.tensor_array_scatter_v3(self._handle, indices, value, self._flow, name=name)
        return self._with_flow(flow)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """Splits `value` along its first dimension into pieces of `lengths` rows, written as elements."""
        with name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths_64 = cast(lengths, dtypes.int64)
            known = constant_value(lengths_64)
            if value.shape.ndims is not None and known is not None and known.size and known.max() == known.min():
                self._check_element_shape(TensorShape([int(known.reshape(-1)[0])]).concatenate(value.shape[1:]))
            flow = ta_ops.tensor_array_split_v3(self._handle, value, lengths_64, self._flow, name=name)
        return self._with_flow(flow)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (a constant for a fixed-size array of known size)."""
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=dtypes.int32)
        return ta_ops.tensor_array_size_v3(self._handle, self._flow, name=name)

    def close(self, name: str | None = None) -> Any:
        """Closes the array (its elements are dropped; later uses fail)."""
        return ta_ops.tensor_array_close_v3(self._handle, name=name)


__all__ = ["TensorArray"]
