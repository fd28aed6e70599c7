"""Finite-difference rows for the pass-through logging ops (Print, CheckNumerics)."""

import numpy as np
import pytest

from tests.grad.harness import GradCase, check_gradient

X = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]])

CASES = [
    GradCase("print_is_identity", ("Print",), lambda af, x: af.Print(x * x, [x], message="x=") * 3.0, [X]),
    GradCase("check_numerics_is_identity", ("CheckNumerics",),
             lambda af, x: af.check_numerics(af.sin(x), "sin"), [X]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradient(case):
    check_gradient(case)
