"""dynamic_rnn and bidirectional_dynamic_rnn on while_loop."""

__all__: list[str] = []
