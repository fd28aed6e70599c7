"""Data types: the `DType` objects (`af.float32`, ...) and `as_dtype`, with TF1's names and enum values.

A DType wraps the numpy dtype that kernels use. Strings are numpy object arrays of `bytes`,
as TF1 returns them; bfloat16 is `ml_dtypes.bfloat16`.
"""

from __future__ import annotations

import builtins
from typing import Any

import ml_dtypes
import numpy as np


class DType:
    """One element type. Compare with `==`; `as_numpy_dtype` is the numpy scalar type."""

    __slots__ = ("_name", "_enum", "_np", "_base", "_ref")

    def __init__(self, name: str, enum: int, np_type: Any, base: DType | None = None):
        self._name = name
        self._enum = enum
        self._np = np.dtype(np_type)
        self._base = base or self
        # TF1 reference types (`float32_ref`): the dtype of a variable's own output.
        self._ref = DType(name + "_ref", enum + 100, np_type, self) if base is None else self

    name = property(lambda self: self._name)
    as_datatype_enum = property(lambda self: self._enum)
    base_dtype = property(lambda self: self._base)
    is_ref_dtype = property(lambda self: self._base is not self)
    _is_ref_dtype = is_ref_dtype
    _as_ref = property(lambda self: self._ref)
    as_numpy_dtype = property(lambda self: self._np.type)
    np = property(lambda self: self._np)
    is_bool = property(lambda self: self._base._name == "bool")
    is_complex = property(lambda self: self._base._name.startswith("complex"))
    is_floating = property(lambda self: self._base._name in ("float16", "bfloat16", "float32", "float64"))
    is_integer = property(lambda self: self._base._name.startswith(("int", "uint")))
    is_unsigned = property(lambda self: self._base._name.startswith("uint") or self._base._name == "bool")
    is_numeric = property(lambda self: self._base._name not in ("string", "bool", "resource"))
    is_string = property(lambda self: self._base._name == "string")
    size = property(lambda self: 0 if self.is_string else self._np.itemsize)

    @property
    def real_dtype(self) -> DType:
        return {"complex64": float32, "complex128": float64}.get(self._name, self)

    @property
    def min(self):
        if self.is_floating:
            return ml_dtypes.finfo(self._np).min if self._name == "bfloat16" else np.finfo(self._np).min
        if self.is_integer:
            return np.iinfo(self._np).min
        if self.is_bool:
            return False
        raise TypeError(f"Cannot find minimum value of {self._name}.")

    @property
    def max(self):
        if self.is_floating:
            return ml_dtypes.finfo(self._np).max if self._name == "bfloat16" else np.finfo(self._np).max
        if self.is_integer:
            return np.iinfo(self._np).max
        if self.is_bool:
            return True
        raise TypeError(f"Cannot find maximum value of {self._name}.")

    def is_compatible_with(self, other: Any) -> bool:
        return self == as_dtype(other)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __hash__(self) -> int:
        return self._enum

    def __repr__(self) -> str:
        return f"af.{self._name}"

    def __str__(self) -> str:
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):  # copy/deepcopy keep the singleton
        return as_dtype, (self._name,)


float16 = DType("float16", 19, np.float16)
half = float16
float32 = DType("float32", 1, np.float32)
float64 = DType("float64", 2, np.float64)
double = float64
bfloat16 = DType("bfloat16", 14, ml_dtypes.bfloat16)
int8 = DType("int8", 6, np.int8)
int16 = DType("int16", 5, np.int16)
int32 = DType("int32", 3, np.int32)
int64 = DType("int64", 9, np.int64)
uint8 = DType("uint8", 4, np.uint8)
uint16 = DType("uint16", 17, np.uint16)
uint32 = DType("uint32", 22, np.uint32)
uint64 = DType("uint64", 23, np.uint64)
bool = DType("bool", 10, np.bool_)  # noqa: A001 - TF's public name
complex64 = DType("complex64", 8, np.complex64)
complex128 = DType("complex128", 18, np.complex128)
string = DType("string", 7, np.object_)
# A handle to a resource that lives in a step or a container (a stack, a queue): an opaque Python
# object in a numpy object array; never serialised, never differentiated.
resource = DType("resource", 20, np.object_)

ALL: tuple[DType, ...] = (
    float16, bfloat16, float32, float64, int8, int16, int32, int64,
    uint8, uint16, uint32, uint64, bool, complex64, complex128, string,
)  # the value types; `resource` is a handle, allowed only where an op asks for it
FLOATING = (float16, bfloat16, float32, float64)
INTEGER = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
COMPLEX = (complex64, complex128)
REAL = FLOATING + INTEGER
NUMERIC = REAL + COMPLEX

_BY_NAME = ({d.name: d for d in ALL + (resource,)} | {d._ref.name: d._ref for d in ALL}
            # TF1's C-style aliases ("float" is float32: `tf.placeholder("float", [None, 784])`);
            # "int" and "long" are not names in TF either, so they stay a TypeError.
            | {"half": float16, "float": float32, "double": float64,
               "half_ref": float16._ref, "float_ref": float32._ref, "double_ref": float64._ref})
_BY_ENUM = {d.as_datatype_enum: d for d in ALL + (resource,)} | {d._ref.as_datatype_enum: d._ref for d in ALL}
_BY_NP = {d.np: d for d in ALL if d is not string}
_BY_PY = {float: float64, int: int64, complex: complex128, str: string, bytes: string}
_BY_PY[builtins.bool] = bool


def as_dtype(type_value: Any) -> DType:
    """Converts a DType, a name ('float32'), an enum value, a numpy dtype or a Python type to a DType."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        raise TypeError(f"Cannot convert value {type_value!r} to a DType: unknown name.")
    if isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        if type_value in _BY_ENUM:
            return _BY_ENUM[type_value]
        raise TypeError(f"Cannot convert value {type_value!r} to a DType: unknown enum.")
    if isinstance(type_value, type) and type_value in _BY_PY:
        return _BY_PY[type_value]
    try:
        npd = np.dtype(type_value)
    except TypeError:
        raise TypeError(f"Cannot convert value {type_value!r} to a DType.") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    if npd.kind in "OSU":
        return string
    raise TypeError(f"Cannot convert value {type_value!r} to a DType.")


__all__ = [
    "DType", "as_dtype", "float16", "half", "float32", "float64", "double", "bfloat16",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128", "string", "resource",
]
