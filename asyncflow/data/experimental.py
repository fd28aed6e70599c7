"""`af.data.experimental`: the names TF1 programs use from `tf.data.experimental`."""

from asyncflow.data.runtime import AUTOTUNE

__all__ = ["AUTOTUNE"]
