"""orthogonal_initializer and uniform_unit_scaling_initializer as TF1's init_ops: the algorithm (QR of a
normal matrix of the taller orientation, columns signed by r's diagonal, flattened to (prod(shape[:-1]),
shape[-1]) and transposed back when wide), gain, dtypes, config, errors and the TF1 aliases. Random
streams differ from TF's, so values are checked against numpy applied to the same normal draw; the
Gram matrices, dtypes and errors were compared with TF 2.21 via tools/tfdiff.py."""

import numpy as np
import pytest

import asyncflow as af


def _run(*tensors):
    with af.Session() as s:
        s.run(af.global_variables_initializer())
        return s.run(list(tensors))


def test_aliases_are_tf1s():
    assert af.initializers.orthogonal is af.orthogonal_initializer is af.init_ops.Orthogonal
    assert af.initializers.uniform_unit_scaling is af.uniform_unit_scaling_initializer
    assert af.initializers.NOT_YET == ()


@pytest.mark.parametrize("shape", [[4, 3], [3, 5], [2, 2, 3, 8]])
def test_orthogonal_is_numpys_qr_of_the_same_normal_draw(shape):
    """Same graph seed and op seed: the initializer's normal matrix is the draw below, so its result is
    numpy's QR of it with TF's sign correction."""
    with af.Graph().as_default():
        af.set_random_seed(1)
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        value = af.orthogonal_initializer(gain=1.5, seed=7, dtype=af.float64)(shape)
        draw = af.random_normal(flat, dtype=af.float64, seed=7)
        got, a = _run(value, draw)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    assert got.shape == tuple(shape) and got.dtype == np.float64
    np.testing.assert_allclose(got, 1.5 * q.reshape(shape), rtol=1e-10, atol=1e-12)


def test_orthogonal_variables_are_orthogonal():
    with af.Graph().as_default():
        tall = af.get_variable("tall", [6, 4], initializer=af.orthogonal_initializer(gain=2.0, seed=3))
        wide = af.get_variable("wide", [3, 5], initializer=af.initializers.orthogonal(seed=4))
        conv = af.get_variable("conv", [2, 2, 3, 8], initializer=af.orthogonal_initializer(seed=5))
        t, w, c = _run(tall, wide, conv)
    assert t.dtype == np.float32
    np.testing.assert_allclose(t.T @ t, 4.0 * np.eye(4), atol=1e-5)
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-5)
    flat = c.reshape(-1, 8)
    np.testing.assert_allclose(flat.T @ flat, np.eye(8), atol=1e-5)


def test_orthogonal_errors_and_config():
    with pytest.raises(ValueError, match="at least two-dimensional"):
        af.orthogonal_initializer()([3])
    with pytest.raises(ValueError, match="floating point"):
        af.orthogonal_initializer(dtype=af.int32)
    assert af.orthogonal_initializer(seed=1).get_config() == {"gain": 1.0, "seed": 1, "dtype": "float32"}


def test_uniform_unit_scaling_bound_uses_the_whole_variable():
    factor, limit = 1.5, 1.5 * np.sqrt(3 / 20)
    with af.Graph().as_default():
        u = af.get_variable("u", [20, 30], initializer=af.uniform_unit_scaling_initializer(factor=factor, seed=6))
        parts = af.get_variable("p", [20, 30], initializer=af.initializers.uniform_unit_scaling(factor, seed=6),
                                partitioner=af.fixed_size_partitioner(2, axis=0))
        value, shards = _run(u, list(parts))
    assert value.dtype == np.float32
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.9 * limit
    # each [10, 30] shard is scaled by the whole [20, 30] variable's input size (20), not its own (10)
    assert all(np.abs(s).max() <= limit for s in shards) and max(np.abs(s).max() for s in shards) > 0.9 * limit
    assert af.uniform_unit_scaling_initializer(seed=2).get_config() == {"factor": 1.0, "seed": 2, "dtype": "float32"}
    with pytest.raises(ValueError, match="floating point"):
        af.uniform_unit_scaling_initializer(dtype=af.int64)
