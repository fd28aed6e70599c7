"""The RNN cells of `af.nn.rnn_cell`, as TF1's `rnn_cell_impl`: `RNNCell`, `BasicRNNCell`, `BasicLSTMCell`,
`LSTMCell`, `GRUCell`, `MultiRNNCell`, `LSTMStateTuple`.

A cell is a layer (asyncflow/layers/base.py): its variables are made on the first call, in a scope
named after the class (`basic_lstm_cell/kernel`, `bias`), and shared by every later call, so a cell
unrolled over time, or called inside a `while_loop` body, has one set of weights. The gate order,
forget bias, peepholes, clipping and projection follow TF1's code, so a TF1 checkpoint's layout maps
one to one. The wrappers (dropout, residual, device) are in cell_wrappers.py.
"""

from __future__ import annotations

import collections
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import Tensor, name_scope
from asyncflow.init_ops import constant_initializer, zeros_initializer
from asyncflow.layers.base import Layer
from asyncflow.ops import array, math
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.math_reduce import clip_by_value
from asyncflow.ops.nn_ops import bias_add
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.shapes import Dimension, TensorShape
from asyncflow.variable_scope import get_variable_scope, variable_scope


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """`af.nn.rnn_cell.LSTMStateTuple(c, h)`: an LSTM's memory and output."""

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _flatten(structure: Any) -> list[Any]:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(structure: Any, leaves: Any) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if isinstance(s, (list, tuple)):
            items = [build(v) for v in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)

    return build(structure)


def map_structure(fn: Any, *structures: Any) -> Any:
    """`fn` over the leaves of equally shaped nested tuples (namedtuples kept)."""
    leaves = [_flatten(s) for s in structures]
    return _pack(structures[0], [fn(*xs) for xs in zip(*leaves)])


def _size_dims(size: Any) -> list[int]:
    if isinstance(size, TensorShape):
        return size.as_list()
    if isinstance(size, Dimension):
        return [size.value]
    if isinstance(size, (list, tuple)) and not hasattr(size, "_fields"):
        return list(size)
    return [int(size)]


def _zero_state_tensors(state_size: Any, batch_size: Any, dtype: Any) -> Any:
    def zeros(size: Any) -> Tensor:
        dims = _size_dims(size)
        shape = array.concat([array.expand_dims(convert_to_tensor(batch_size, dtype=dtypes.int32), 0),
                              convert_to_tensor(dims, dtype=dtypes.int32)], 0) \
            if isinstance(batch_size, Tensor) else [batch_size] + dims
        z = array.zeros(shape, dtype=dtype)
        static_batch = batch_size if isinstance(batch_size, int) else None
        z.set_shape([static_batch] + dims)
        return z

    return map_structure(zeros, state_size)


class RNNCell(Layer):
    """`af.nn.rnn_cell.RNNCell`: the cell interface. Subclasses give `state_size`, `output_size`, `build` and
    `call(inputs, state) -> (output, new_state)`."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
        self._rnncell_scope: Any = None

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        if scope is not None:
            with variable_scope(scope) as vs:
                return super().__call__(inputs, state, scope=vs)
        if self._rnncell_scope is None:
            self._rnncell_scope = get_variable_scope()
        with variable_scope(self._rnncell_scope, auxiliary_name_scope=False):
            return super().__call__(inputs, state)

    @property
    def state_size(self) -> Any:
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError("Abstract method")

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros of `state_size`, with `batch_size` rows (an int or a scalar tensor)."""
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return _zero_state_tensors(self.state_size, batch_size, dtypes.as_dtype(dtype))

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> Any:
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape.as_list()[0] or array.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)


def _input_depth(cell: Layer, inputs_shape: Any) -> int:
    shape = TensorShape(inputs_shape) if not isinstance(inputs_shape, TensorShape) else inputs_shape
    depth = shape.as_list()[-1] if shape.ndims is not None else None
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {shape}")
    return int(depth)


class BasicRNNCell(RNNCell):
    """`af.nn.rnn_cell.BasicRNNCell(num_units, activation=tanh)`: output = new_state = act(W [x, h] + b)."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None, **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math.tanh

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(self, inputs_shape)
        self._kernel = self.add_weight("kernel", shape=[depth + self._num_units, self._num_units])
        self._bias = self.add_weight("bias", shape=[self._num_units], initializer=zeros_initializer(self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Tensor, Tensor]:
        gate_inputs = bias_add(matmul(array.concat([inputs, state], 1), self._kernel), self._bias)
        output = self._activation(gate_inputs)
        return output, output


class BasicLSTMCell(RNNCell):
    """`af.nn.rnn_cell.BasicLSTMCell(num_units, forget_bias=1.0, state_is_tuple=True, activation=tanh)`:
    gates i, j, f, o from one kernel [input + units, 4 * units]."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Any = None, reuse: Any = None, name: str | None = None, dtype: Any = None,
                 **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math.tanh

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units) if self._state_is_tuple else 2 * self._num_units

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(self, inputs_shape)
        self._kernel = self.add_weight("kernel", shape=[depth + self._num_units, 4 * self._num_units])
        self._bias = self.add_weight("bias", shape=[4 * self._num_units],
                                     initializer=zeros_initializer(self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Tensor, Any]:
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array.split(state, 2, axis=1)
        gate_inputs = bias_add(matmul(array.concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = array.split(gate_inputs, 4, axis=1)
        forget_bias = convert_to_tensor(self._forget_bias, dtype=f.dtype.base_dtype)
        new_c = math.add(math.multiply(c, math.sigmoid(math.add(f, forget_bias))),
                         math.multiply(math.sigmoid(i), self._activation(j)))
        new_h = math.multiply(self._activation(new_c), math.sigmoid(o))
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else array.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """`af.nn.rnn_cell.LSTMCell`: the LSTM with optional peepholes (`w_f_diag`, `w_i_diag`, `w_o_diag`), cell
    clipping and a projection (`projection/kernel`) of the output to `num_proj` units."""

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: float | None = None,
                 initializer: Any = None, num_proj: int | None = None, proj_clip: float | None = None,
                 num_unit_shards: int | None = None, num_proj_shards: int | None = None, forget_bias: float = 1.0,
                 state_is_tuple: bool = True, activation: Any = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None, **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise ValueError("LSTMCell: num_unit_shards and num_proj_shards are deprecated in TF1 and not supported; "
                             "use a partitioner in the variable scope instead")
        self._num_units, self._use_peepholes, self._cell_clip = num_units, use_peepholes, cell_clip
        self._initializer, self._num_proj, self._proj_clip = initializer, num_proj, proj_clip
        self._forget_bias, self._state_is_tuple = forget_bias, state_is_tuple
        self._activation = activation or math.tanh
        out = num_proj if num_proj else num_units
        self._state_size = LSTMStateTuple(num_units, out) if state_is_tuple else num_units + out
        self._output_size = out

    state_size = property(lambda self: self._state_size)
    output_size = property(lambda self: self._output_size)

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(self, inputs_shape)
        h_depth = self._num_proj if self._num_proj is not None else self._num_units
        self._kernel = self.add_weight("kernel", shape=[depth + h_depth, 4 * self._num_units],
                                       initializer=self._initializer)
        self._bias = self.add_weight("bias", shape=[4 * self._num_units], initializer=zeros_initializer(self._dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", shape=[self._num_units], initializer=self._initializer)
            self._w_i_diag = self.add_weight("w_i_diag", shape=[self._num_units], initializer=self._initializer)
            self._w_o_diag = self.add_weight("w_o_diag", shape=[self._num_units], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/kernel", shape=[self._num_units, self._num_proj],
                                                initializer=self._initializer)
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Tensor, Any]:
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        sigmoid = math.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array.slice(state, [0, 0], [-1, self._num_units])
            m_prev = array.slice(state, [0, self._num_units], [-1, num_proj])
        lstm_matrix = bias_add(matmul(array.concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = array.split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        m = sigmoid(o + self._w_o_diag * c) * self._activation(c) if self._use_peepholes else \
            sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else array.concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """`af.nn.rnn_cell.GRUCell`: `gates/kernel|bias` (reset and update, bias initialised to 1) and
    `candidate/kernel|bias`; new_h = u * h + (1 - u) * act(W [x, r * h] + b)."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, kernel_initializer: Any = None,
                 bias_initializer: Any = None, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math.tanh
        self._kernel_initializer, self._bias_initializer = kernel_initializer, bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_weight("gates/kernel", shape=[depth + n, 2 * n],
                                            initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            "gates/bias", shape=[2 * n],
            initializer=self._bias_initializer or constant_initializer(1.0, dtype=self._dtype))
        self._candidate_kernel = self.add_weight("candidate/kernel", shape=[depth + n, n],
                                                 initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            "candidate/bias", shape=[n], initializer=self._bias_initializer or zeros_initializer(self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Tensor, Tensor]:
        gate_inputs = bias_add(matmul(array.concat([inputs, state], 1), self._gate_kernel), self._gate_bias)
        value = math.sigmoid(gate_inputs)
        r, u = array.split(value, 2, axis=1)
        r_state = r * state
        candidate = bias_add(matmul(array.concat([inputs, r_state], 1), self._candidate_kernel), self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """`af.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=True)`: the cells stacked, each in `cell_<i>`."""

    def __init__(self, cells: list[RNNCell], state_is_tuple: bool = True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        if len(set(id(c) for c in cells)) < len(cells):
            import warnings

            warnings.warn("At least two cells provided to MultiRNNCell are the same object and will share weights.",
                          stacklevel=2)
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(isinstance(c.state_size, tuple) for c in self._cells):
            raise ValueError("Some cells return tuples of states, but the flag state_is_tuple is not set.  "
                             f"State sizes are: {[c.state_size for c in self._cells]}")

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    def build(self, inputs_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        cur_inp = inputs
        new_states = []
        start = 0
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not isinstance(state, (list, tuple)):
                        raise ValueError(f"Expected state to be a tuple of length {len(self.state_size)}, but "
                                         f"received: {state}")
                    cur_state = state[i]
                else:
                    cur_state = array.slice(state, [0, start], [-1, cell.state_size])
                    start += cell.state_size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        new_states_out = tuple(new_states) if self._state_is_tuple else array.concat(new_states, 1)
        return cur_inp, new_states_out

    @property
    def trainable_weights(self) -> list[Any]:
        return [w for cell in self._cells for w in cell.trainable_weights] if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        return [w for cell in self._cells for w in cell.non_trainable_weights]

    trainable_variables = trainable_weights
    weights = property(lambda self: self.trainable_weights + self.non_trainable_weights)
    variables = weights


__all__ = ["RNNCell", "LSTMStateTuple", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
           "map_structure"]
