"""af.losses, as tf.compat.v1.losses (composites in losses_impl.py)."""

from asyncflow.losses.losses_impl import *
