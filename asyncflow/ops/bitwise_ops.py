"""Bitwise ops of `tf.bitwise`: BitwiseAnd, BitwiseOr, BitwiseXor, Invert, LeftShift and RightShift on
integer tensors, with broadcasting. A shift amount is clamped to [0, bits - 1] as TF's kernels do (so
`x << 40` on int32 is `x << 31`); a right shift of a signed value keeps its sign. None is
differentiable, as in TF. The namespace `af.bitwise` (asyncflow/bitwise.py) names them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow.ops.math import _binary, _gen_binary, _gen_unary, _unary
from asyncflow.ops.registry import INT


def _shift(fn: Any) -> Any:
    def apply(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x, y = np.asarray(x), np.asarray(y)
        bits = x.dtype.itemsize * 8
        return fn(x, np.clip(y, 0, bits - 1).astype(x.dtype))

    return apply


BitwiseAnd = _binary("BitwiseAnd", np.bitwise_and, INT, commutative=True, differentiable=False)
BitwiseOr = _binary("BitwiseOr", np.bitwise_or, INT, commutative=True, differentiable=False)
BitwiseXor = _binary("BitwiseXor", np.bitwise_xor, INT, commutative=True, differentiable=False)
LeftShift = _binary("LeftShift", _shift(np.left_shift), INT, differentiable=False)
RightShift = _binary("RightShift", _shift(np.right_shift), INT, differentiable=False)
Invert = _unary("Invert", np.invert, INT, differentiable=False)

bitwise_and = _gen_binary(BitwiseAnd, "bitwise_and")
bitwise_or = _gen_binary(BitwiseOr, "bitwise_or")
bitwise_xor = _gen_binary(BitwiseXor, "bitwise_xor")
left_shift = _gen_binary(LeftShift, "left_shift")
right_shift = _gen_binary(RightShift, "right_shift")
invert = _gen_unary(Invert, "invert")

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"]
