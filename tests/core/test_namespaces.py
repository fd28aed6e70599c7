"""The TF1 namespaces of aliases: each name is the package's one implementation, renamed as TF1 does."""

import numpy as np
import pytest

import asyncflow as af


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test builds in its own default graph (variables made by one must not meet another's)."""
    af.reset_default_graph()
    yield
    af.reset_default_graph()


@pytest.mark.parametrize("alias, target", [
    (af.math.reduce_sum, af.reduce_sum), (af.math.softmax, af.nn.softmax), (af.math.top_k, af.nn.top_k),
    (af.math.in_top_k, af.nn.in_top_k), (af.math.l2_normalize, af.nn.l2_normalize),
    (af.random.truncated_normal, af.truncated_normal), (af.random.normal, af.random_normal),
    (af.random.uniform, af.random_uniform), (af.random.shuffle, af.random_shuffle),
    (af.random.set_random_seed, af.set_random_seed), (af.random.log_uniform_candidate_sampler,
                                                     af.nn.log_uniform_candidate_sampler),
    (af.initializers.zeros, af.zeros_initializer), (af.initializers.glorot_uniform, af.glorot_uniform_initializer),
    (af.initializers.global_variables, af.global_variables_initializer),
    (af.debugging.assert_equal, af.assert_equal), (af.debugging.check_numerics, af.check_numerics),
    (af.debugging.assert_all_finite, af.verify_tensor_all_finite), (af.linalg.matmul, af.matmul),
])
def test_alias_is_the_implementation(alias, target):
    assert alias is target


@pytest.mark.parametrize("ns", [af.math, af.linalg, af.random, af.initializers, af.debugging, af.sparse, af.strings])
def test_every_bound_name_is_usable_and_not_yet_is_disjoint(ns):
    for name in ns.__all__:
        assert callable(getattr(ns, name)), name
    assert not set(ns.__all__) & set(ns.NOT_YET)


def test_namespaced_calls_run():
    x = af.constant([[1.0, -2.0], [3.0, 4.0]])
    with af.Session() as sess:
        assert sess.run(af.math.reduce_sum(x)) == 6.0
        assert sess.run(af.random.truncated_normal([3], seed=1)).shape == (3,)
        np.testing.assert_array_equal(sess.run(af.math.top_k(x, 1)[1]), [[0], [1]])


def test_initializers_he_lecun_identity():
    v = af.get_variable("ident", [2, 3], initializer=af.initializers.identity(2.0))
    h = af.get_variable("he", [400, 300], initializer=af.initializers.he_normal(seed=1))
    u = af.get_variable("lu", [400, 300], initializer=af.initializers.lecun_uniform(seed=2))
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), 2 * np.eye(2, 3))
        assert abs(sess.run(h).std() - np.sqrt(2 / 400)) < 0.01
        assert abs(np.abs(sess.run(u)).max() - np.sqrt(3 / 400)) < 0.005
    with pytest.raises(ValueError, match="2D"):
        af.get_variable("bad", [2, 2, 2], initializer=af.initializers.identity())
