"""Table rows for the TensorArrayV3 ops: each row fills an array and reads it back within one step (the
flow orders the ops), against numpy. Loops, errors and static shapes: tests/control/test_tensor_array.py;
gradients: tests/grad/test_tensor_array.py.
"""

import numpy as np
import pytest

from asyncflow.ops import tensor_array_ops
from tests.ops.harness import Case, case_params, check_case

X = np.arange(12, dtype=np.float32).reshape(4, 3)
V = np.arange(6, dtype=np.float32)


def _write_read(af):
    ta = af.TensorArray(af.float32, 3, clear_after_read=False)
    ta = ta.write(0, X[0]).write(2, X[2]).write(1, af.constant(X[1]) * 2.0)
    return [ta.read(2), ta.read(1), ta.read(0), ta.size()]


def _write_read_int_and_string(af):
    ints = af.TensorArray(af.int32, 2).write(1, [7, 8]).write(0, [5, 6])
    strs = af.TensorArray(af.string, 1).write(0, "abc")
    return [ints.stack(), af.reshape(strs.read(0), [1])]


def _unwritten_reads_zeros(af):
    ta = af.TensorArray(af.float32, 3, element_shape=[2])
    ta = ta.write(1, [1.0, 2.0])
    return ta.stack()


def _dynamic_size(af):
    ta = af.TensorArray(af.float32, 1, dynamic_size=True)
    ta = ta.write(3, [1.0, 2.0]).write(0, [3.0, 4.0])
    return [ta.size(), ta.stack()]


def _scatter_gather(af):
    ta = af.TensorArray(af.float32, 4, clear_after_read=False)
    ta = ta.scatter([3, 0, 2, 1], X)
    return [ta.gather([1, 3]), ta.stack(), ta.gather(af.constant([], af.int32))]


def _unstack_stack(af):
    return af.TensorArray(af.float32, 4).unstack(X).stack()


def _split_concat(af):
    ta = af.TensorArray(af.float32, 3, infer_shape=False).split(V, [1, 2, 3])
    value, lengths = tensor_array_ops.tensor_array_concat_v3(ta.handle, ta.flow, dtype=af.float32)
    return [value, lengths]


def _split_rows_concat(af):
    ta = af.TensorArray(af.float32, 2, clear_after_read=False, infer_shape=False).split(X, [3, 1])
    return [ta.concat(), ta.read(1)]


def _empty_with_shapes(af):
    ta = af.TensorArray(af.float32, 0, dynamic_size=True, element_shape=[3])
    return [ta.stack(), ta.concat(), ta.size()]


def _close(af):
    ta = af.TensorArray(af.float32, 2).write(0, 1.0).write(1, 2.0)
    total = ta.read(0) + ta.read(1)
    with af.control_dependencies([total]):
        closed = ta.close()
    with af.control_dependencies([closed]):
        return af.identity(total)


def _grad_array_adds(af):
    ta = af.TensorArray(af.float32, 3).write(0, [1.0, 1.0])
    g = ta.grad("gradients")
    g = g.write(1, [1.0, 2.0]).write(1, [10.0, 20.0])  # a gradient array adds a second write
    again = ta.grad("gradients", flow=g.flow)  # the same array for the same source
    other = ta.grad("gradients_1")
    return [again.stack(), other.size()]


CASES = [
    Case("tensor_array_write_read_size", ("TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3"), _write_read,
         [X[2], X[1] * 2, X[0], np.int32(3)]),
    Case("tensor_array_int_and_string", ("TensorArrayWriteV3", "TensorArrayGatherV3"), _write_read_int_and_string,
         [np.array([[5, 6], [7, 8]], np.int32), np.array([b"abc"], object)]),
    Case("tensor_array_unwritten_slots_read_zeros", ("TensorArrayGatherV3",), _unwritten_reads_zeros,
         np.array([[0, 0], [1, 2], [0, 0]], np.float32), static_shape=[3, 2]),
    Case("tensor_array_dynamic_size_grows", ("TensorArraySizeV3",), _dynamic_size,
         [np.int32(4), np.array([[3, 4], [0, 0], [0, 0], [1, 2]], np.float32)]),
    Case("tensor_array_scatter_gather", ("TensorArrayScatterV3", "TensorArrayGatherV3"), _scatter_gather,
         [X[[3, 0]], X[[1, 3, 2, 0]], np.zeros((0, 3), np.float32)]),
    Case("tensor_array_unstack_stack", ("TensorArrayScatterV3", "TensorArrayGatherV3"), _unstack_stack, X,
         static_shape=[4, 3]),
    Case("tensor_array_split_concat_vector", ("TensorArraySplitV3", "TensorArrayConcatV3"), _split_concat,
         [V, np.array([1, 2, 3], np.int64)]),
    Case("tensor_array_split_concat_rows", ("TensorArraySplitV3", "TensorArrayConcatV3"), _split_rows_concat,
         [X, X[3:]]),
    Case("tensor_array_empty_with_element_shape", ("TensorArrayGatherV3", "TensorArrayConcatV3"), _empty_with_shapes,
         [np.zeros((0, 3), np.float32), np.zeros((0,), np.float32), np.int32(0)]),
    Case("tensor_array_close", ("TensorArrayCloseV3",), _close, np.float32(3)),
    Case("tensor_array_grad_array_adds", ("TensorArrayGradV3",), _grad_array_adds,
         [np.array([[0, 0], [11, 22], [0, 0]], np.float32), np.int32(3)]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_tensor_array_ops(case):
    check_case(case)
