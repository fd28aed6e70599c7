"""`af.nn.dynamic_rnn` and `af.nn.bidirectional_dynamic_rnn`, as TF1: one `while_loop` over time (`rnn/while/`),
the cell called in its body (its variables made once, outside the loop, and reused every step).

TF1 keeps the per-step inputs and outputs in TensorArrays; here the body reads step t of the
time-major inputs with a gather and appends its output to a loop-carried accumulator, so the loop
and its gradient are built from the ops the while-loop gradient already differentiates. The
observable semantics are TF1's: `time_major`, nested inputs and states, `sequence_length` (outputs
past a sequence's end are zeros and its state is carried through; the loop stops at the longest
sequence and the outputs after it are zeros), `initial_state`, `parallel_iterations` (default 32),
`swap_memory` accepted.
"""

from __future__ import annotations

from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import while_loop
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.math_reduce import reduce_max
from asyncflow.ops.registry import convert_to_tensor
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


def _state_invariants(state: Any) -> Any:
    return _pack(state, [TensorShape(t.shape) for t in _flatten(state)])


def _dynamic_rnn_loop(cell: Any, inputs: Any, state: Any, parallel_iterations: int, sequence_length: Any,
                      dtype: Any) -> tuple[Any, Any]:
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
    empty = [array.zeros(array.concat([[0], array.shape(z, out_type=dtypes.int32)], 0), dtype=state_dtype)
             for z in _flatten(zero_output)]
    for e, size in zip(empty, flat_output_size):
        e.set_shape([0, const_batch] + _size_dims(size))

    def body(t: Tensor, accumulated: list[Tensor], state: Any) -> tuple:
        step_input = []
        for x, shape in zip(flat_input, got_shapes):
            x_t = array.gather(x, t)
            x_t.set_shape(shape.as_list()[1:])
            step_input.append(x_t)
        output, new_state = cell(_pack(inputs, step_input), state)
        if sequence_length is not None:
            output, new_state = copy_through(t, sequence_length, zero_output, state, output, new_state)
        grown = [array.concat([acc, array.expand_dims(out, 0)], 0) for acc, out in zip(accumulated, _flatten(output))]
        return t + 1, grown, new_state

    invariants = [time.shape, [TensorShape([None] + e.shape.as_list()[1:]) for e in empty], _state_invariants(state)]
    _, accumulated, final_state = while_loop(lambda t, *_: math.less(t, loop_bound), body, [time, empty, state],
                                             shape_invariants=invariants, parallel_iterations=parallel_iterations,
                                             maximum_iterations=time_steps)
    outputs = []
    for acc, size in zip(accumulated, flat_output_size):
        acc = array.identity(acc)  # the loop's exit keeps its invariant shape (the gradient loop relies on it)
        if sequence_length is not None:  # steps after the longest sequence: zeros, as TF's TensorArray gives
            missing = array.concat([array.expand_dims(time_steps - array.shape(acc, out_type=dtypes.int32)[0], 0),
                                    array.shape(acc, out_type=dtypes.int32)[1:]], 0)
            acc = array.concat([acc, array.zeros(missing, dtype=acc.dtype.base_dtype)], 0)
        acc.set_shape([const_time, const_batch] + _size_dims(size))
        outputs.append(acc)
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
                                                 sequence_length, dtype)
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
