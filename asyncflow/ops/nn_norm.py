"""Batch normalization ops (nn.batch_normalization, nn.fused_batch_norm)."""

__all__: list[str] = []
