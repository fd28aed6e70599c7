"""Recurrent networks, as TF1 (`af.nn.rnn_cell`, `af.nn.static_rnn`, `af.nn.dynamic_rnn`, ...).

Cells and the unrolling functions are composites of registered ops; nothing below this package
imports it. `asyncflow/nn.py` re-exports what TF1 puts under `tf.nn`.
"""

from asyncflow.rnn import rnn_cell as rnn_cell
from asyncflow.rnn.dynamic import *
from asyncflow.rnn.static import *
