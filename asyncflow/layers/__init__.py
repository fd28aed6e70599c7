"""af.layers, as tf.compat.v1.layers: the v1 layer classes and their functional forms, each module as TF1 splits them
(base, core, convolutional, pooling, normalization)."""

from asyncflow.layers.base import InputSpec, Layer
from asyncflow.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten

__all__: list[str] = ["Layer", "InputSpec", "Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]
