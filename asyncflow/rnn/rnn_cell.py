"""`af.nn.rnn_cell`, as `tf.compat.v1.nn.rnn_cell`: the cells (cells.py) and their wrappers (cell_wrappers.py)."""

from asyncflow.rnn.cell_wrappers import DeviceWrapper, DropoutWrapper, ResidualWrapper
from asyncflow.rnn.cells import (
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "LSTMStateTuple",
           "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]
