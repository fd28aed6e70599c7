"""`af.layers.InputSpec`: what a layer accepts (rank, dtype, fixed axes), checked on every call as the v1 layers do.

A layer sets `self.input_spec` (in `__init__` for the rank, in `build` for the axes it fixed, e.g. Dense's last
dimension); `Layer.__call__` runs `assert_input_compatibility` before building, so a bad input is a ValueError that
names the layer, the expectation and the shape received (TF's wording).
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.shapes import TensorShape, as_shape


class InputSpec:
    """`af.layers.InputSpec(dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None)`."""

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None, max_ndim: int | None = None,
                 min_ndim: int | None = None, axes: dict | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None, optional: bool = False):
        self.dtype = dtypes.as_dtype(dtype).name if dtype is not None else None
        static = as_shape(shape)
        if static.ndims is None:
            self.shape, self.ndim = None, ndim
        else:
            self.shape, self.ndim = tuple(static.as_list()), static.ndims
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name, self.allow_last_axis_squeeze, self.optional = name, allow_last_axis_squeeze, optional
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError, AttributeError):
            raise TypeError(f"Argument `axes` must be a dict with integer keys. Received: axes={axes}") from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim else self.max_ndim) - 1
            if max(self.axes) > max_dim:
                raise ValueError(f"Axis {max(self.axes)} is greater than the maximum allowed value: {max_dim}")

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                          ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                          ("axes", self.axes)) if v]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self) -> dict:
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config: dict) -> InputSpec:
        return cls(**config)


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


def _display(shape: TensorShape) -> str:
    return str(tuple(shape.as_list()))


def assert_input_compatibility(input_spec: Any, inputs: Any, layer_name: str) -> None:
    """Raises TF's ValueError when `inputs` do not satisfy `input_spec` (None: anything goes)."""
    if not input_spec:
        return
    specs = _flatten(input_spec)
    inputs = _flatten(inputs)
    for x, spec in zip(inputs, specs):
        if spec is not None and not (x is None and spec.optional) and not hasattr(x, "shape"):
            raise TypeError(f"Inputs to a layer should be tensors. Got '{x}' (of type {type(x)}) as input for "
                            f"layer '{layer_name}'.")
    if len(inputs) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received {len(inputs)} input '
                         f"tensors. Inputs received: {inputs}")
    for index, (x, spec) in enumerate(zip(inputs, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        shape = as_shape(x.shape)
        if shape.ndims is None:
            return
        prefix = f'Input {index} of layer "{layer_name}" is incompatible with the layer: '
        ndim = shape.ndims
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
            raise ValueError(f"{prefix}expected ndim={spec.ndim}, found ndim={ndim}. "
                             f"Full shape received: {_display(shape)}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{prefix}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{prefix}expected min_ndim={spec.min_ndim}, found ndim={ndim}. "
                             f"Full shape received: {_display(shape)}")
        if spec.dtype is not None and x.dtype.base_dtype.name != spec.dtype:
            raise ValueError(f"{prefix}expected dtype={spec.dtype}, found dtype={x.dtype.base_dtype.name}")
        dims = shape.as_list()
        for axis, value in spec.axes.items():
            value = getattr(value, "value", value)
            if value is not None and dims[int(axis)] not in (value, None):
                raise ValueError(f"{prefix}expected axis {axis} of input shape to have value {value}, but received "
                                 f"input with shape {_display(shape)}")
        if spec.shape is not None:
            for want, got in zip(spec.shape, dims):
                if want is not None and got is not None and want != got:
                    raise ValueError(f"{prefix}expected shape={spec.shape}, found shape={_display(shape)}")


__all__ = ["InputSpec"]
