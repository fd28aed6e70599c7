"""multinomial / categorical, random_gamma, random_poisson, random_crop and the stateless samplers: names,
static shapes and dtypes as TF 2.21 (checked with tfdiff), seeded determinism, and the distributions'
moments on large samples drawn with fixed seeds (bounds of 6+ standard errors, so a fixed seed passing
them is no accident of that seed).

The stateful ops' rows check what is deterministic (shapes, dtypes, ranges); the stateless ops are pure
functions of their seed, so their rows hold exact values: numpy's Philox keyed by the seed, which is
how asyncflow defines them (TensorFlow's bit streams differ).
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case


def _philox(seed):
    return np.random.Generator(np.random.Philox(key=(seed[0] << 64) | seed[1]))


def _in_range(x, lo, hi):
    """0 everywhere iff lo <= x <= hi."""
    return af.cast(af.logical_or(x < lo, x > hi), af.int32)


def _truncated(seed, n):
    gen = _philox(seed)
    v = gen.standard_normal(n)
    bad = np.flatnonzero(np.abs(v) > 2)
    while bad.size:
        v[bad] = gen.standard_normal(bad.size)
        bad = bad[np.abs(v[bad]) > 2]
    return v


CASES = [
    Case("multinomial_shape_range", ("Multinomial",),
         lambda af: (lambda m: [af.shape(m), _in_range(m, 0, 2)])(af.multinomial(np.zeros([4, 3], np.float32), 50,
                                                                                 seed=1)),
         [np.int32([4, 50]), np.zeros([4, 50], np.int32)]),
    Case("multinomial_certain_class", ("Multinomial",),
         lambda af: af.random.categorical([[-np.inf, 0.0, -np.inf], [0.0, -np.inf, -np.inf]], 6, dtype=af.int32,
                                          seed=2),
         np.int32([[1] * 6, [0] * 6]), static_shape=[2, 6]),
    Case("random_gamma_shape_positive", ("RandomGamma",),
         lambda af: (lambda g: [af.shape(g), af.cast(g > 0, af.int32)])(
             af.random_gamma([5, 3], [[0.5], [2.0]], seed=3)),
         [np.int32([5, 3, 2, 1]), np.ones([5, 3, 2, 1], np.int32)]),
    Case("random_poisson_shape_nonnegative", ("RandomPoissonV2",),
         lambda af: (lambda p: [af.shape(p), _in_range(p, 0, 10**9)])(af.random_poisson([1.0, 4.0], [6], dtype=af.int64,
                                                                                      seed=4)),
         [np.int32([6, 2]), np.zeros([6, 2], np.int32)]),
    Case("stateless_uniform", ("StatelessRandomUniform",),
         lambda af: af.random.stateless_uniform([2, 3], seed=[1, 2]),
         lambda: _philox((1, 2)).random((2, 3), dtype=np.float32), static_shape=[2, 3]),
    Case("stateless_uniform_int", ("StatelessRandomUniformInt",),
         lambda af: af.random.stateless_uniform([5], seed=np.int32([7, 8]), minval=-3, maxval=9, dtype=af.int64),
         lambda: _philox((7, 8)).integers(-3, 9, size=(5,), dtype=np.int64)),
    Case("stateless_normal", ("StatelessRandomNormal",),
         lambda af: af.random.stateless_normal([4], seed=[3, 4], mean=1.0, stddev=2.0, dtype=af.float64),
         lambda: _philox((3, 4)).standard_normal(4) * 2.0 + 1.0),
    Case("stateless_truncated_normal", ("StatelessTruncatedNormal",),
         lambda af: af.random.stateless_truncated_normal([200], seed=[5, 6], dtype=af.float64),
         lambda: _truncated((5, 6), 200)),
    Case("stateless_categorical", ("StatelessMultinomial",),
         lambda af: [af.random.stateless_categorical([[0.0, -np.inf], [-np.inf, 0.0]], 3, seed=[1, 1]),
                     af.random.stateless_multinomial([[-np.inf, 0.0]], 2, seed=[1, 1], output_dtype=af.int32)],
         [np.int64([[0, 0, 0], [1, 1, 1]]), np.int32([[1, 1]])]),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_random_extra(case):
    check_case(case)


def _run(build, seed=1234, runs=1):
    with af.Graph().as_default():
        af.set_random_seed(seed)
        t = build()
        with af.Session() as sess:
            return [sess.run(t) for _ in range(runs)]


def test_names_static_shapes_and_dtypes_as_tf():
    with af.Graph().as_default():
        got = {
            "m": af.multinomial([[0.0, 1.0]], 3), "c": af.random.categorical([[0.0, 1.0]], 3, dtype=af.int32),
            "g": af.random_gamma([5, 3], [[1.0], [2.0]], beta=[1.0, 2.0, 3.0], dtype=af.float64),
            "p": af.random_poisson(2.0, [2, 3]), "p2": af.random.poisson([1.0, 3.0], [4], dtype=af.int64),
            "crop": af.random_crop(np.zeros([4, 5, 3]), [2, 2, 3]),
            "su": af.random.stateless_uniform([2, 3], seed=[1, 2]),
            "sc": af.random.stateless_categorical([[0.0, 1.0]], 5, seed=[1, 2]),
        }
        want = {  # TF 2.21's names, static shapes and dtypes
            "m": ("multinomial/Multinomial:0", [1, 3], af.int64), "c": ("categorical/Multinomial:0", [1, 3], af.int32),
            "g": ("random_gamma/Maximum:0", [5, 3, 2, 3], af.float64),
            "p": ("random_poisson/RandomPoissonV2:0", [2, 3], af.float32),
            "p2": ("random_poisson_1/RandomPoissonV2:0", [4, 2], af.int64),
            "crop": ("random_crop:0", [2, 2, 3], af.float64),
            "su": ("stateless_random_uniform:0", [2, 3], af.float32),
            "sc": ("stateless_categorical/StatelessMultinomial:0", [1, 5], af.int64),
        }
        for key, t in got.items():
            assert (t.name, t.shape.as_list(), t.dtype) == want[key], key


def test_seeded_ops_repeat_across_sessions_and_advance_across_runs():
    for build in (lambda: af.multinomial(np.zeros([2, 5]), 20, seed=7), lambda: af.random_gamma([20], 2.0, seed=7),
                  lambda: af.random_poisson(3.0, [20], seed=7), lambda: af.random_crop(np.arange(100).reshape(10, 10),
                                                                                      [3, 3], seed=7)):
        a, b = _run(build, runs=2), _run(build, runs=2)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert not np.array_equal(a[0], a[1])


def test_stateless_ops_depend_only_on_the_seed():
    with af.Graph().as_default():
        seed = af.placeholder(af.int64, [2])
        u = af.random.stateless_uniform([50], seed=seed)
        with af.Session() as sess:
            a, b, c = (sess.run(u, {seed: s}) for s in ([1, 2], [1, 2], [2, 1]))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_categorical_frequencies():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    (draws,) = _run(lambda: af.multinomial(np.log(probs), 40_000, seed=1))
    for row in range(2):
        freq = np.bincount(draws[row], minlength=3) / draws.shape[1]
        np.testing.assert_allclose(freq, probs[row], atol=0.015)  # standard error < 0.0025


def test_gamma_moments_and_rate():
    alpha, beta = np.array([0.5, 3.0], np.float32), np.array([1.0, 2.0], np.float32)
    (x,) = _run(lambda: af.random_gamma([50_000], alpha, beta=beta, seed=2))
    assert x.shape == (50_000, 2) and x.dtype == np.float32 and (x > 0).all()
    np.testing.assert_allclose(x.mean(0), alpha / beta, rtol=0.03)  # mean alpha/beta, variance alpha/beta^2
    np.testing.assert_allclose(x.var(0), alpha / beta**2, rtol=0.06)


def test_poisson_moments():
    (x,) = _run(lambda: af.random_poisson([0.5, 4.0, 20.0], [40_000], dtype=af.float64, seed=3))
    assert x.dtype == np.float64 and (x == np.round(x)).all()
    np.testing.assert_allclose(x.mean(0), [0.5, 4.0, 20.0], rtol=0.03)
    np.testing.assert_allclose(x.var(0), [0.5, 4.0, 20.0], rtol=0.06)


def test_random_crop_offsets_cover_the_image_uniformly():
    value = np.arange(5 * 4).reshape(5, 4)
    (crops,) = _run(lambda: af.stack([af.random_crop(value, [2, 3], seed=s) for s in range(600)]))
    corners = crops[:, 0, 0]
    counts = np.bincount(corners, minlength=20)[[0, 1, 4, 5, 8, 9, 12, 13]]  # the 4 x 2 valid offsets
    assert counts.sum() == 600 and counts.min() > 40  # 75 expected each
    for crop in crops:
        row, col = divmod(crop[0, 0], 4)
        np.testing.assert_array_equal(crop, value[row:row + 2, col:col + 3])


def test_stateless_moments():
    with af.Graph().as_default():
        u = af.random.stateless_uniform([100_000], seed=[9, 9])
        n = af.random.stateless_normal([100_000], seed=[9, 9])
        t = af.random.stateless_truncated_normal([100_000], seed=[9, 9])
        with af.Session() as sess:
            u, n, t = sess.run([u, n, t])
    assert abs(u.mean() - 0.5) < 0.006 and abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.015
    assert np.abs(t).max() <= 2 and abs(t.std() - 0.8796) < 0.015  # a standard normal truncated at +-2


def test_errors_as_tf():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="Accepted dtypes are int32, int64"):
            af.multinomial([[0.0, 1.0]], 2, output_dtype=af.float32)
        with pytest.raises(ValueError, match="Shape must be rank 2"):
            af.multinomial([0.0, 1.0], 2)
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
            af.random.stateless_uniform([2], seed=[1, 2], dtype=af.int32)
        crop = af.random_crop(np.zeros([4, 5]), [5, 2])
        seed = af.placeholder(af.int64)
        bad_seed = af.random.stateless_uniform([2], seed=seed)
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match="Need value.shape >= size, got"):
                sess.run(crop)
            with pytest.raises(af.errors.InvalidArgumentError, match="seed must have shape \\[2\\], not \\[3\\]"):
                sess.run(bad_seed, {seed: [1, 2, 3]})
