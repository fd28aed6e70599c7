"""af.layers, as tf.compat.v1.layers: the v1 layer classes and their functional forms, each module as TF1 splits them
(base, core, convolutional, pooling, normalization), with TF1's aliases (Convolution2D, MaxPool2D, BatchNorm, ...)."""

from asyncflow.layers.base import InputSpec, Layer
from asyncflow.layers.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Convolution1D,
    Convolution2D,
    Convolution2DTranspose,
    Deconv2D,
    Deconvolution2D,
    SeparableConv1D,
    SeparableConv2D,
    SeparableConvolution1D,
    SeparableConvolution2D,
    conv1d,
    conv2d,
    conv2d_transpose,
    convolution1d,
    convolution2d,
    convolution2d_transpose,
    deconvolution2d,
    separable_conv1d,
    separable_conv2d,
    separable_convolution1d,
    separable_convolution2d,
)
from asyncflow.layers.core import Dense, Dropout, Flatten, FullyConnected, dense, dropout, flatten, fully_connected
from asyncflow.layers.normalization import BatchNorm, BatchNormalization, batch_norm, batch_normalization
from asyncflow.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AvgPool1D,
    AvgPool2D,
    MaxPool1D,
    MaxPool2D,
    MaxPooling1D,
    MaxPooling2D,
    average_pooling1d,
    average_pooling2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
    max_pooling1d,
    max_pooling2d,
)

__all__: list[str] = [
    "Layer", "InputSpec",
    "Dense", "Dropout", "Flatten", "dense", "dropout", "flatten", "FullyConnected", "fully_connected",
    "Conv1D", "Conv2D", "Conv2DTranspose", "conv1d", "conv2d", "conv2d_transpose",
    "Convolution1D", "Convolution2D", "Convolution2DTranspose", "Deconvolution2D", "Deconv2D",
    "convolution1d", "convolution2d", "convolution2d_transpose", "deconvolution2d",
    "SeparableConv1D", "SeparableConv2D", "separable_conv1d", "separable_conv2d", "SeparableConvolution1D",
    "SeparableConvolution2D", "separable_convolution1d", "separable_convolution2d",
    "MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
    "max_pooling1d", "max_pooling2d", "average_pooling1d", "average_pooling2d",
    "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "BatchNormalization", "batch_normalization", "BatchNorm", "batch_norm",
]
