"""Candidate samplers and the sampled losses. The losses are checked against a numpy re-implementation of
TF1's `_compute_sampled_logits` with the sampled ids given (`sampled_values`), the samplers' expected
counts exactly (TF's formulas) and their draws statistically."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from tests.ops.harness import Case, case_params, check_case

RNG = np.random.RandomState(0)
W = RNG.randn(20, 5).astype(np.float32)
B = RNG.randn(20).astype(np.float32)
X = RNG.randn(4, 5).astype(np.float32)
LABELS = np.array([[1], [3], [3], [19]], np.int64)
SAMPLED = np.array([0, 3, 7, 11, 2], np.int64)
TRUE_EXP = np.full((4, 1), 0.3, np.float32)
SAMPLED_EXP = np.linspace(0.1, 0.9, 5).astype(np.float32)
VALUES = (SAMPLED, TRUE_EXP, SAMPLED_EXP)


def sampled_logits(remove_hits):
    true_logits = (X * W[LABELS[:, 0]]).sum(1, keepdims=True) + B[LABELS[:, 0]][:, None] - np.log(TRUE_EXP)
    s_logits = X @ W[SAMPLED].T + B[SAMPLED] - np.log(SAMPLED_EXP)
    if remove_hits:
        s_logits = np.where(LABELS == SAMPLED[None, :], s_logits - np.finfo(np.float32).max, s_logits)
    logits = np.concatenate([true_logits, s_logits], 1).astype(np.float64)
    labels = np.concatenate([np.ones((4, 1)), np.zeros((4, 5))], 1)
    return logits, labels


def nce_ref(remove_hits):
    z, y = sampled_logits(remove_hits)
    return (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).sum(1).astype(np.float32)


def softmax_ref():
    z, y = sampled_logits(True)
    z = z - z.max(1, keepdims=True)
    return (-(y * (z - np.log(np.exp(z).sum(1, keepdims=True)))).sum(1)).astype(np.float32)


def log_uniform_p(ids, range_max):
    return (np.log(ids + 2.0) - np.log(ids + 1.0)) / np.log(range_max + 1.0)


CASES = [
    Case("nce_loss", ("MatMul",),
         lambda af: af.nn.nce_loss(W, B, LABELS, X, 5, 20, sampled_values=VALUES), nce_ref(False), rtol=1e-5),
    Case("nce_loss_accidental_hits", ("MatMul",),
         lambda af: af.nn.nce_loss(W, B, LABELS, X, 5, 20, sampled_values=VALUES, remove_accidental_hits=True),
         nce_ref(True), rtol=1e-5),
    Case("sampled_softmax_loss", ("SoftmaxCrossEntropyWithLogits",),
         lambda af: af.nn.sampled_softmax_loss(W, B, LABELS, X, 5, 20, sampled_values=VALUES), softmax_ref(),
         rtol=1e-5),
    Case("accidental_hits", ("ComputeAccidentalHits",),
         lambda af: list(af.nn.compute_accidental_hits(LABELS, SAMPLED, 1)),
         [np.array([1, 2], np.int32), np.array([1, 1], np.int64),
          np.full(2, -np.finfo(np.float32).max, np.float32)]),
    Case("log_uniform_expected_counts", ("LogUniformCandidateSampler",),
         lambda af: af.nn.log_uniform_candidate_sampler(LABELS, 1, 5, False, 20, seed=3)[1],
         (log_uniform_p(LABELS, 20) * 5).astype(np.float32), rtol=1e-6),
    Case("uniform_expected_counts", ("UniformCandidateSampler",),
         lambda af: af.nn.uniform_candidate_sampler(LABELS, 1, 4, False, 20, seed=3)[1],
         np.full((4, 1), 0.2, np.float32)),
    Case("fixed_unigram_expected_counts", ("FixedUnigramCandidateSampler",),
         lambda af: af.nn.fixed_unigram_candidate_sampler(LABELS, 1, 2, False, 20, unigrams=list(range(1, 21)),
                                                          distortion=0.5, seed=3)[1],
         (np.sqrt(LABELS + 1.0) / np.sqrt(np.arange(1, 21)).sum() * 2).astype(np.float32), rtol=1e-6),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_sampling(case):
    check_case(case)


def test_unique_samples_are_distinct_and_expected_counts_follow_the_tries():
    s, t, e = af.nn.log_uniform_candidate_sampler(LABELS, 1, 15, True, 20, seed=1)
    with af.Session() as sess:
        for _ in range(5):
            sv, tv, ev = sess.run([s, t, e])
            assert len(set(sv.tolist())) == 15 and sv.min() >= 0 and sv.max() < 20
            p = log_uniform_p(sv, 20)
            # -expm1(n * log1p(-p)) for one number of tries n >= 15, the same for every id
            tries = np.log1p(-ev) / np.log1p(-p)
            np.testing.assert_allclose(tries, tries[0], rtol=1e-4)
            assert tries[0] >= 15 - 1e-3
            np.testing.assert_allclose(tv, -np.expm1(tries[0] * np.log1p(-log_uniform_p(LABELS, 20))), rtol=1e-4)


def test_log_uniform_draws_follow_zipf():
    s, _, _ = af.nn.log_uniform_candidate_sampler(LABELS, 1, 20000, False, 10, seed=5)
    draws = af.Session().run(s)
    freq = np.bincount(draws, minlength=10) / len(draws)
    np.testing.assert_allclose(freq, log_uniform_p(np.arange(10), 10), atol=0.01)


def test_seeded_samplers_repeat_across_sessions_and_unique_needs_room():
    s, _, _ = af.nn.uniform_candidate_sampler(LABELS, 1, 6, True, 20, seed=7)
    a, b = af.Session().run(s), af.Session().run(s)
    np.testing.assert_array_equal(a, b)
    bad, _, _ = af.nn.uniform_candidate_sampler(LABELS, 1, 25, True, 20)
    with pytest.raises(af.errors.InvalidArgumentError, match="cannot be drawn"):
        af.Session().run(bad)


def test_nce_trains_word_vectors():
    """word2vec's use: the NCE loss falls under SGD, and the weights' gradient is sparse (IndexedSlices)."""
    af.set_random_seed(1)
    emb = af.Variable(af.random_uniform([30, 8], -1.0, 1.0))
    nce_w = af.Variable(af.truncated_normal([30, 8], stddev=0.3))
    nce_b = af.Variable(af.zeros([30]))
    inputs = af.placeholder(af.int32, [16])
    labels = af.placeholder(af.int32, [16, 1])
    loss = af.reduce_mean(af.nn.nce_loss(nce_w, nce_b, labels, af.nn.embedding_lookup(emb, inputs), 4, 30))
    assert isinstance(af.gradients(loss, nce_w)[0], af.IndexedSlices)
    step = af.train.GradientDescentOptimizer(1.0).minimize(loss)
    rng = np.random.RandomState(0)
    pairs = rng.randint(0, 30, 16)
    feed = {inputs: pairs, labels: ((pairs + 1) % 30)[:, None]}
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        first = np.mean([sess.run([loss, step], feed)[0] for _ in range(10)])
        for _ in range(150):
            sess.run(step, feed)
        last = np.mean([sess.run([loss, step], feed)[0] for _ in range(10)])
    assert last < first / 2
