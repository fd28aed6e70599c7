"""`af.bitwise`, as `tf.compat.v1.bitwise`: the integer bit ops of asyncflow/ops/bitwise_ops.py (see
_aliases.py); TF1 has none of them at the top level, so each resolves to that module."""

from asyncflow._aliases import bind
from asyncflow.ops import bitwise_ops as _bitwise_ops  # noqa: F401 - registers the ops bound below

_OPS = "ops.bitwise_ops."

__all__ = bind(globals(), "bitwise_and bitwise_or bitwise_xor invert left_shift right_shift",
               {name: _OPS + name for name in
                "bitwise_and bitwise_or bitwise_xor invert left_shift right_shift".split()})
