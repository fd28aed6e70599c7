"""`af.manip`, as `tf.compat.v1.manip`: TF1's second home for a few array functions (see _aliases.py)."""

from asyncflow._aliases import bind

__all__ = bind(globals(), "batch_to_space_nd gather_nd reshape reverse roll scatter_nd space_to_batch_nd tile")
