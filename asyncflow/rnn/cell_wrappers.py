"""The RNN cell wrappers of `af.nn.rnn_cell`, as TF1: `DropoutWrapper`, `ResidualWrapper`, `DeviceWrapper`.

A wrapper adds no variable scope of its own: the wrapped cell's variables keep their names
(`multi_rnn_cell/cell_0/basic_lstm_cell/kernel` with or without dropout). DropoutWrapper drops the
input, the output and the state (by default every state but an LSTM's memory `c`); with
`variational_recurrent` one mask per run is drawn when the wrapper is made and reused at every step.
Seeds are TF1's: md5 of the wrapper's seed and a salt per tensor, so a seeded graph is reproducible.
"""

from __future__ import annotations

import hashlib
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import device as device_scope
from asyncflow.graph import name_scope
from asyncflow.ops import math
from asyncflow.ops import random as random_ops
from asyncflow.ops.nn_ops import dropout
from asyncflow.ops.registry import constant_value, convert_to_tensor
from asyncflow.rnn.cells import LSTMStateTuple, RNNCell, _flatten, _pack, _size_dims, map_structure


class _Wrapper(RNNCell):
    """A cell around a cell: sizes and zero state are the wrapped cell's, and it adds no scope."""

    def __init__(self, cell: Any):
        super().__init__(name=getattr(cell, "name", None))
        if not callable(cell) or not hasattr(cell, "state_size"):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        self._cell = cell

    cell = property(lambda self: self._cell)
    wrapped_cell = cell
    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)
    trainable_weights = property(lambda self: self._cell.trainable_weights)
    non_trainable_weights = property(lambda self: self._cell.non_trainable_weights)
    trainable_variables = trainable_weights
    weights = property(lambda self: self._cell.weights)
    variables = weights

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        return self._wrapped_call(inputs, state, scope)

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        raise NotImplementedError


def _default_state_filter(substate: Any) -> Any:
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _check_keep_prob(value: Any, attr: str) -> Any:
    static = constant_value(value) if not isinstance(value, (int, float)) else value
    if static is not None and (float(static) < 0 or float(static) > 1):
        raise ValueError(f"Parameter {attr} must be between 0 and 1: {float(static)}")
    return value


class DropoutWrapper(_Wrapper):
    """`af.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
    variational_recurrent=False, input_size=None, dtype=None, seed=None, dropout_state_filter_visitor=None)`."""

    def __init__(self, cell: Any, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False, input_size: Any = None,
                 dtype: Any = None, seed: int | None = None, dropout_state_filter_visitor: Any = None):
        super().__init__(cell)
        self._input_keep_prob = _check_keep_prob(input_keep_prob, "input_keep_prob")
        self._output_keep_prob = _check_keep_prob(output_keep_prob, "output_keep_prob")
        self._state_keep_prob = _check_keep_prob(state_keep_prob, "state_keep_prob")
        self._seed = seed
        self._variational = variational_recurrent
        self._state_filter = dropout_state_filter_visitor or _default_state_filter
        self._noise: dict[str, Any] = {}
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            dtype = dtypes.as_dtype(dtype)

            def batch_noise(size: Any, salt: str, i: int) -> Any:
                shape = [1] + _size_dims(size)
                return random_ops.random_uniform(shape, seed=self._gen_seed(salt, i), dtype=dtype)

            if self._should_drop(input_keep_prob):
                if input_size is None:
                    raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 or is unknown, "
                                     "input_size must be provided")
                self._noise["input"] = _pack(input_size, [batch_noise(s, "input", i)
                                                          for i, s in enumerate(_flatten(input_size))])
            self._noise["state"] = _pack(cell.state_size, [batch_noise(s, "state", i)
                                                           for i, s in enumerate(_flatten(cell.state_size))])
            self._noise["output"] = _pack(cell.output_size, [batch_noise(s, "output", i)
                                                             for i, s in enumerate(_flatten(cell.output_size))])

    @staticmethod
    def _should_drop(p: Any) -> bool:
        return not isinstance(p, (int, float)) or p < 1

    def _gen_seed(self, salt_prefix: str, index: int) -> int | None:
        if self._seed is None:
            return None
        text = (str(self._seed) + f"{salt_prefix}_{index}").encode("utf-8")
        return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _drop(self, values: Any, salt: str, keep_prob: Any, which: Any = None) -> Any:
        leaves = _flatten(values)
        selected = _flatten(which) if which is not None else [True] * len(leaves)
        noise = _flatten(self._noise[salt]) if self._variational else [None] * len(leaves)
        out = []
        for i, (value, use, n) in enumerate(zip(leaves, selected, noise)):
            if not use:
                out.append(value)
            elif n is None:
                out.append(dropout(value, keep_prob=keep_prob, seed=self._gen_seed(salt, i)))
            else:
                value = convert_to_tensor(value)
                keep = math.cast(keep_prob, value.dtype.base_dtype)
                kept = math.divide(value, keep) * math.floor(keep + n)
                kept.set_shape(value.shape)
                out.append(kept)
        return _pack(values, out)

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        if self._should_drop(self._input_keep_prob):
            inputs = self._drop(inputs, "input", self._input_keep_prob)
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._should_drop(self._state_keep_prob):
            which = map_structure(lambda _: True, new_state)
            filtered = _filter_structure(self._state_filter, new_state)
            new_state = self._drop(new_state, "state", self._state_keep_prob, filtered if filtered is not None
                                   else which)
        if self._should_drop(self._output_keep_prob):
            output = self._drop(output, "output", self._output_keep_prob)
        return output, new_state


def _filter_structure(visitor: Any, state: Any) -> Any:
    """TF's `get_traverse_shallow_structure` expanded to one bool per leaf of `state`."""
    decision = visitor(state)
    if isinstance(decision, bool):
        return map_structure(lambda _: decision, state)
    if isinstance(state, (list, tuple)):
        parts = [_filter_structure(lambda s, d=d: d if isinstance(d, bool) else visitor(s), s)
                 for s, d in zip(state, decision)]
        return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)
    return decision


class ResidualWrapper(_Wrapper):
    """`af.nn.rnn_cell.ResidualWrapper(cell, residual_fn=None)`: output = inputs + cell's output."""

    def __init__(self, cell: Any, residual_fn: Any = None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        outputs, new_state = self._cell(inputs, state, scope=scope)

        def default_residual(i: Any, o: Any) -> Any:
            i, o = convert_to_tensor(i), convert_to_tensor(o)
            if i.shape.is_fully_defined() and o.shape.is_fully_defined() and i.shape != o.shape:
                raise ValueError(f"ResidualWrapper: inputs {i.shape} and outputs {o.shape} must have the same shape")
            return math.add(i, o)

        residual = self._residual_fn or (lambda i, o: map_structure(default_residual, i, o))
        return residual(inputs, outputs), new_state


class DeviceWrapper(_Wrapper):
    """`af.nn.rnn_cell.DeviceWrapper(cell, device)`: the cell (and its zero state) built on `device`."""

    def __init__(self, cell: Any, device: str):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with device_scope(self._device):
            return super().zero_state(batch_size, dtype)

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        with device_scope(self._device):
            return self._cell(inputs, state, scope=scope)


__all__ = ["DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]
