"""More convolutions and pooling (conv1d, conv2d_transpose, depthwise, separable, atrous, 1-d pools)."""

__all__: list[str] = []
