"""IdentityN and EnsureShape rows (numpy reference: the inputs themselves)."""

import numpy as np
import pytest

from tests.ops.harness import Case, case_params, check_case

CASES = [
    Case("identity_n_mixed", ("IdentityN",), lambda af: af.identity_n([af.constant([1.5, 2.0]), af.constant(3)]),
         [np.array([1.5, 2.0], np.float32), np.int32(3)]),
    Case("ensure_shape_passes", ("EnsureShape",), lambda af: af.ensure_shape(af.constant([[1, 2]]), [None, 2]),
         np.array([[1, 2]], np.int32), static_shape=[1, 2]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_identity_ops(case):
    check_case(case)
