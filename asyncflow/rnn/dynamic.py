"""`af.nn.dynamic_rnn` and `af.nn.bidirectional_dynamic_rnn`, as TF1: one `while_loop` over time (`rnn/while/`),
the cell called in its body (its variables made once, outside the loop, and reused every step).

As TF1's `_dynamic_rnn_loop`: the time-major inputs are unstacked into TensorArrays before the loop
(`rnn/TensorArray_1`, named `rnn/dynamic_rnn/input_0` at run time), step t reads them
(`rnn/while/TensorArrayReadV3`) and writes its output into another TensorArray carried in the loop
variables, stacked after the loop (`rnn/TensorArrayStack/TensorArrayGatherV3`); time and memory are
linear in the number of steps, forward and backward. The observable semantics are TF1's:
`time_major`, nested inputs and states, `sequence_length` (outputs past a sequence's end are zeros
and its state is carried through; the loop stops at the longest sequence, and the steps after it,
never written, stack as zeros), `initial_state`, `parallel_iterations` (default 32), `swap_memory`
passed to the loop.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import while_loop
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.math_reduce import reduce_max
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.ops.tensor_array import TensorArray
from asyncflow.rnn.cells import _flatten, _pack, _size_dims, _zero_state_tensors
from asyncflow.rnn.static import _check_cell, batch_size_of, copy_through, initial_state_for, reverse_time_major
from asyncflow.shapes import TensorShape
from asyncflow.variable_scope import variable_scope


def _transpose_batch_time(x: Tensor) -> Tensor:
    x = convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        raise ValueError(f"Expected input tensor {x} to have rank at least 2")
    perm = [1, 0] + list(range(2, rank))
    out = array.transpose(x, perm)
    dims = x.shape.as_list()
    out.set_shape([dims[1], dims[0]] + dims[2:])
    return out


def _dynamic_rnn_loop(cell: Any, inputs: Any, state: Any, parallel_iterations: int, swap_memory: bool,
                      sequence_length: Any, dtype: Any) -> tuple[Any, Any]:
    flat_input = _flatten(inputs)
    flat_output_size = _flatten(cell.output_size)
    got_shapes = [x.shape for x in flat_input]
    for shape in got_shapes:
        if shape.ndims is not None and shape.ndims < 3:
            raise ValueError(f"Shape {shape} must have rank at least 3")
        if shape.ndims is None or any(d is None for d in shape.as_list()[2:]):
            raise ValueError("Input size (depth of inputs) must be accessible via shape inference, but saw value None.")
    time_steps = array.shape(flat_input[0], out_type=dtypes.int32)[0]
    const_time, const_batch = got_shapes[0].as_list()[:2]
    batch_size = batch_size_of(flat_input, 1)
    state_dtype = _flatten(state)[0].dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype)
    zero_output = _zero_state_tensors(cell.output_size, batch_size, state_dtype)
    if sequence_length is not None:
        max_sequence_length = reduce_max(sequence_length)
        loop_bound = math.minimum(time_steps, math.maximum(1, max_sequence_length))
    else:
        loop_bound = time_steps
    time = convert_to_tensor(0, dtype=dtypes.int32, name="time")
    with name_scope("dynamic_rnn") as base_name:
        pass

    def make_ta(name: str, element_shape: Any, dtype: Any) -> TensorArray:
        return TensorArray(dtype, size=time_steps, element_shape=element_shape, tensor_array_name=base_name + name)

    output_ta = [make_ta(f"output_{i}", TensorShape([const_batch] + _size_dims(size)), state_dtype)
                 for i, size in enumerate(flat_output_size)]
    input_ta = [make_ta(f"input_{i}", x.shape[1:], x.dtype.base_dtype) for i, x in enumerate(flat_input)]
    input_ta = [ta.unstack(x) for ta, x in zip(input_ta, flat_input)]

    def body(t: Tensor, output_ta_t: list[TensorArray], state: Any) -> tuple:
        step_input = []
        for ta, shape in zip(input_ta, got_shapes):
            x_t = ta.read(t)
            x_t.set_shape(shape[1:])
            step_input.append(x_t)
        output, new_state = cell(_pack(inputs, step_input), state)
        if sequence_length is not None:
            output, new_state = copy_through(t, sequence_length, zero_output, state, output, new_state)
        return t + 1, [ta.write(t, out) for ta, out in zip(output_ta_t, _flatten(output))], new_state

    # Steps after the longest sequence are never written: stacking reads them as zeros (TF1's TensorArray).
    _, output_final_ta, final_state = while_loop(lambda t, *_: math.less(t, loop_bound), body,
                                                 [time, output_ta, state], parallel_iterations=parallel_iterations,
                                                 maximum_iterations=time_steps, swap_memory=swap_memory)
    outputs = []
    for ta, size in zip(output_final_ta, flat_output_size):
        out = ta.stack()
        out.set_shape([const_time, const_batch] + _size_dims(size))
        outputs.append(out)
    return _pack(cell.output_size, outputs), final_state


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None, dtype: Any = None,
                parallel_iterations: int | None = None, swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple[Any, Any]:
    """`af.nn.dynamic_rnn`: (outputs [batch, time, output_size] or time-major, final state)."""
    _check_cell(cell)
    with variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(x) for x in _flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        if sequence_length is not None:
            sequence_length = math.cast(convert_to_tensor(sequence_length), dtypes.int32)
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length batch_size, but saw shape: "
                                 f"{sequence_length.shape}")
            sequence_length = array.identity(sequence_length, name="sequence_length")
        batch_size = batch_size_of(flat_input, 1)
        state = initial_state_for(cell, initial_state, batch_size, dtype)
        outputs, final_state = _dynamic_rnn_loop(cell, _pack(inputs, flat_input), state, parallel_iterations or 32,
                                                 swap_memory, sequence_length, dtype)
        if not time_major:
            outputs = _pack(outputs, [_transpose_batch_time(o) for o in _flatten(outputs)])
        return outputs, final_state


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, sequence_length: Any = None,
                              initial_state_fw: Any = None, initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: int | None = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """`af.nn.bidirectional_dynamic_rnn`: ((output_fw, output_bw), (state_fw, state_bw)); the backward pass runs
    on each sequence reversed within its length and its outputs are reversed back."""
    _check_cell(cell_fw)
    _check_cell(cell_bw)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw, dtype,
                                              parallel_iterations, swap_memory, time_major, fw_scope)
        time_axis = 0 if time_major else 1

        def reverse(x: Any) -> Tensor:
            x = convert_to_tensor(x)
            if sequence_length is None:
                return array.reverse(x, [time_axis])
            tm = x if time_major else _transpose_batch_time(x)
            out = reverse_time_major(tm, sequence_length)
            return out if time_major else _transpose_batch_time(out)

        with variable_scope("bw") as bw_scope:
            with name_scope("ReverseV2"):
                inputs_reverse = _pack(inputs, [reverse(x) for x in _flatten(inputs)])
            tmp, state_bw = dynamic_rnn(cell_bw, inputs_reverse, sequence_length, initial_state_bw, dtype,
                                        parallel_iterations, swap_memory, time_major, bw_scope)
    output_bw = _pack(tmp, [reverse(x) for x in _flatten(tmp)])
    return (output_fw, output_bw), (state_fw, state_bw)


__all__ = ["dynamic_rnn", "bidirectional_dynamic_rnn"]
