"""af.nn.rnn_cell: the RNN cells, as tf.compat.v1.nn.rnn_cell."""

__all__: list[str] = []
