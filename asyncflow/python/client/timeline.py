"""`asyncflow.python.client.timeline`, as TF1's: Chrome trace files from a RunMetadata's step_stats (issue 11)."""

__all__: list[str] = []
