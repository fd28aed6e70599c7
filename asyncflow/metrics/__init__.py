"""af.metrics, as tf.compat.v1.metrics (composites in metrics_impl.py, curve.py and at_k.py)."""

from asyncflow.metrics.at_k import *
from asyncflow.metrics.curve import *
from asyncflow.metrics.metrics_impl import *
