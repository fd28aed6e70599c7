"""Finite-difference rows for IdentityN and EnsureShape (gradients pass straight through)."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

X = np.array([[0.5, -1.0], [2.0, 0.25]])
Y = np.array([1.5, -0.5])

CASES = [
    GradCase("identity_n", ("IdentityN",), lambda af, x, y: [t * t for t in af.identity_n([x, y])], [X, Y]),
    GradCase("ensure_shape", ("EnsureShape",), lambda af, x: af.sin(af.ensure_shape(x, [None, 2])), [X]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
