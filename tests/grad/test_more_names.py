"""Finite-difference rows for the TF1 names added late: TensorScatterUpdate/Add/Sub/Max/Min (Max/Min share
the gradient among tied inputs, as TF), and the composites repeat, batch_gather, clip_by_average_norm and
saturate_cast, whose gradients come from the ops they are built of."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

RNG = np.random.RandomState(11)
IDX = np.int32([[1], [3]])

CASES = [
    GradCase("tensor_scatter_nd_update", ("TensorScatterUpdate",),
             lambda af, t, u: af.tensor_scatter_nd_update(t, IDX, u), [RNG.randn(4, 2), RNG.randn(2, 2)]),
    GradCase("tensor_scatter_nd_add", ("TensorScatterAdd",),
             lambda af, t, u: af.tensor_scatter_nd_add(t, np.int32([[1, 0], [1, 0], [2, 1]]), u),
             [RNG.randn(4, 2), RNG.randn(3)]),
    GradCase("tensor_scatter_nd_sub", ("TensorScatterSub",),
             lambda af, t, u: af.tensor_scatter_nd_sub(t, IDX, u), [RNG.randn(4, 2), RNG.randn(2, 2)]),
    # Values far apart, so no tie sits within the finite-difference step.
    GradCase("tensor_scatter_nd_max", ("TensorScatterMax",),
             lambda af, t, u: af.tensor_scatter_nd_max(t, np.int32([[0, 1], [2, 0], [3, 1]]), u),
             [np.arange(8.0).reshape(4, 2), np.array([0.5, 10.0, 2.0])]),
    GradCase("tensor_scatter_nd_min", ("TensorScatterMin",),
             lambda af, t, u: af.tensor_scatter_nd_min(t, np.int32([[0], [2]]), u),
             [np.arange(8.0).reshape(4, 2), np.array([[-1.0, 5.0], [4.5, 9.0]])]),
    GradCase("repeat", ("GatherV2",), lambda af, x: af.repeat(x, [2, 0, 1], axis=1), [RNG.randn(2, 3)]),
    GradCase("batch_gather", ("GatherV2",), lambda af, x: af.batch_gather(x, np.int32([[2, 0], [1, 1]])),
             [RNG.randn(2, 3)]),
    GradCase("clip_by_average_norm", ("Rsqrt",), lambda af, x: af.clip_by_average_norm(x, 0.2),
             [RNG.randn(2, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)


def test_tied_max_shares_the_gradient_as_tf():
    import asyncflow as af

    with af.Graph().as_default():
        t = af.constant([1.0, 2.0])
        u = af.constant([2.0])
        y = af.tensor_scatter_nd_max(t, [[1]], u)
        gt, gu = af.gradients(af.reduce_sum(y), [t, u])
        with af.Session() as sess:
            a, b = sess.run([gt, gu])
    assert a.tolist() == [1.0, 0.5] and b.tolist() == [0.5]
