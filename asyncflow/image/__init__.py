"""af.image, as tf.compat.v1.image (composites in image_ops.py over the kernels of asyncflow/ops/image_ops.py)."""

from asyncflow.image.image_ops import *
