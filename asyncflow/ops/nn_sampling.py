"""Candidate samplers and the sampled losses (nce_loss, sampled_softmax_loss)."""

__all__: list[str] = []
