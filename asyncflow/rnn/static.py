"""static_rnn and static_bidirectional_rnn."""

__all__: list[str] = []
