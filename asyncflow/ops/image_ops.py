"""Image kernels (resize, codecs) behind af.image."""

__all__: list[str] = []
