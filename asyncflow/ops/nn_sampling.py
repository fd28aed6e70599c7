"""Candidate samplers and the sampled losses, as TF1: `uniform_candidate_sampler`,
`log_uniform_candidate_sampler`, `fixed_unigram_candidate_sampler`, `compute_accidental_hits`,
`nce_loss` and `sampled_softmax_loss`.

A sampler draws `num_sampled` ids in [0, range_max) (with `unique`, by rejection until that many are
distinct) and returns them with the expected count of each true and sampled id under the draw: TF's
`p * num_sampled`, or `-expm1(num_tries * log1p(-p))` when rejection needed more tries than ids.
The log-uniform (Zipfian) law is P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1). The sampled
losses are TF1's `_compute_sampled_logits` composite: the true and sampled rows of the weights
gathered in one `embedding_lookup` (so their gradient is an IndexedSlices), log Q subtracted, and
accidental hits pushed to -FLT_MAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.math_matmul import matmul
from asyncflow.ops.math_reduce import reduce_any
from asyncflow.ops.nn_embedding import embedding_lookup
from asyncflow.ops.nn_losses import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2
from asyncflow.ops.random import _generator, _op_seeds
from asyncflow.ops.registry import BuildContext, constant, convert_to_tensor, op
from asyncflow.shapes import TensorShape

_FLT_MAX = float(np.finfo(np.float32).max)
_SAMPLER_ATTRS = {"num_true": 1, "num_sampled": 1, "unique": True, "range_max": 1, "seed": 0, "seed2": 0}


def _sampler_shape(b: BuildContext) -> list[TensorShape]:
    true = b.shape(0)
    if true.ndims is not None and true.ndims != 2:
        raise b.error(f"true_classes must be a matrix [batch, num_true], got shape {true}")
    n = b.attrs["num_sampled"]
    batch = true.as_list()[0] if true.ndims else None
    return [TensorShape([n]), TensorShape([batch, b.attrs["num_true"]]), TensorShape([n])]


def _expected(p: np.ndarray, batch_size: int, num_tries: int) -> np.ndarray:
    if num_tries == batch_size:
        return p * batch_size
    return -np.expm1(num_tries * np.log1p(-p))


def _sample(k: Any, true_classes: np.ndarray, draw: Any, probability: Any) -> tuple:
    n, range_max = int(k.num_sampled), int(k.range_max)
    true = np.asarray(true_classes, np.int64)
    if true.ndim != 2 or true.shape[1] != k.num_true:
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': true_classes must be "
                                                      f"[batch, {k.num_true}], got {list(true.shape)}")
    if k.unique and n > range_max:
        raise errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': num_sampled={n} unique ids cannot "
                                                      f"be drawn from range_max={range_max}")
    gen = _generator(k)
    if k.unique:
        picked: list[int] = []
        seen: set[int] = set()
        tries = 0
        while len(picked) < n:
            for value in draw(gen, max(n - len(picked), 16)):
                tries += 1
                if int(value) not in seen:
                    seen.add(int(value))
                    picked.append(int(value))
                    if len(picked) == n:
                        break
        sampled = np.array(picked, np.int64)
    else:
        sampled, tries = np.asarray(draw(gen, n), np.int64), n
    true_expected = _expected(probability(true), n, tries).astype(np.float32)
    sampled_expected = _expected(probability(sampled), n, tries).astype(np.float32)
    return sampled, true_expected, sampled_expected


def _declare_sampler(op_type: str, draw: Any, probability: Any, extra_attrs: dict | None = None) -> Any:
    def kernel(k, true_classes):
        return _sample(k, true_classes, lambda gen, m: draw(k, gen, m), lambda ids: probability(k, ids))

    kernel.__name__ = f"{op_type}_kernel"
    return op(op_type, inputs="true_classes: int64",
              outputs="sampled_candidates: int64, true_expected_count: float32, sampled_expected_count: float32",
              attrs={**_SAMPLER_ATTRS, **(extra_attrs or {})}, shape=_sampler_shape, stateful=True,
              differentiable=False)(kernel)


UniformCandidateSampler = _declare_sampler(
    "UniformCandidateSampler", lambda k, gen, m: gen.integers(0, k.range_max, size=m),
    lambda k, ids: np.full(np.shape(ids), 1.0 / k.range_max))


def _log_uniform_draw(k: Any, gen: np.random.Generator, m: int) -> np.ndarray:
    log_range = np.log(k.range_max + 1.0)
    return (np.exp(gen.random(m) * log_range).astype(np.int64) - 1) % k.range_max


def _log_uniform_p(k: Any, ids: Any) -> np.ndarray:
    ids = np.asarray(ids, np.float64)
    return (np.log(ids + 2.0) - np.log(ids + 1.0)) / np.log(k.range_max + 1.0)


LogUniformCandidateSampler = _declare_sampler("LogUniformCandidateSampler", _log_uniform_draw, _log_uniform_p)


def _unigram_table(k: Any) -> np.ndarray:
    weights = np.asarray(k.unigrams, np.float64)
    if len(weights) != k.range_max:
        raise errors.InvalidArgumentError(None, k.op, f"FixedUnigramCandidateSampler '{k.name}': {len(weights)} "
                                                      f"unigrams for range_max={k.range_max}")
    weights = weights ** k.distortion
    return weights / weights.sum()


FixedUnigramCandidateSampler = _declare_sampler(
    "FixedUnigramCandidateSampler",
    lambda k, gen, m: gen.choice(k.range_max, size=m, p=_unigram_table(k)),
    lambda k, ids: _unigram_table(k)[np.asarray(ids, np.int64)],
    {"unigrams": [], "distortion": 1.0})


def _sampler_call(opdef: Any, true_classes: Any, num_true: int, num_sampled: int, unique: bool, range_max: int,
                  seed: int | None, name: str | None, **attrs: Any) -> tuple[Tensor, Tensor, Tensor]:
    seed1, seed2 = _op_seeds(seed)
    true_classes = convert_to_tensor(true_classes, name="true_classes")
    if true_classes.dtype.base_dtype != dtypes.int64:
        true_classes = math.cast(true_classes, dtypes.int64)
    out = opdef(true_classes, num_true=int(num_true), num_sampled=int(num_sampled), unique=bool(unique),
                range_max=int(range_max), seed=seed1, seed2=seed2, name=name, **attrs)
    return tuple(out)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool, range_max: int,
                              seed: int | None = None, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`af.nn.uniform_candidate_sampler`: ids drawn uniformly from [0, range_max)."""
    return _sampler_call(UniformCandidateSampler, true_classes, num_true, num_sampled, unique, range_max, seed, name)


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`af.nn.log_uniform_candidate_sampler`: ids drawn from the Zipfian law (small ids are frequent)."""
    return _sampler_call(LogUniformCandidateSampler, true_classes, num_true, num_sampled, unique, range_max, seed,
                         name)


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                                    range_max: int, vocab_file: str = "", distortion: float = 1.0,
                                    num_reserved_ids: int = 0, num_shards: int = 1, shard: int = 0,
                                    unigrams: Any = (), seed: int | None = None,
                                    name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`af.nn.fixed_unigram_candidate_sampler`: ids drawn with probability unigrams ** distortion (normalised).

    Only `unigrams` given in the call are supported (no `vocab_file`, shards or reserved ids)."""
    if vocab_file or num_reserved_ids or num_shards != 1 or shard:
        raise ValueError("fixed_unigram_candidate_sampler: asyncflow takes the unigrams as a list; vocab_file, "
                         "num_reserved_ids and sharding are not supported")
    return _sampler_call(FixedUnigramCandidateSampler, true_classes, num_true, num_sampled, unique, range_max, seed,
                         name, unigrams=[float(u) for u in unigrams], distortion=float(distortion))


@op("ComputeAccidentalHits", inputs="true_classes: int64, sampled_candidates: int64",
    outputs="indices: int32, ids: int64, weights: float32", attrs={"num_true": 1, "seed": 0, "seed2": 0},
    shape=lambda b: [TensorShape([None])] * 3, differentiable=False)
def compute_accidental_hits_op(k, true_classes, sampled):
    true, sampled = np.asarray(true_classes, np.int64), np.asarray(sampled, np.int64)
    rows, cols = np.nonzero((true[:, :, None] == sampled[None, None, :]).any(axis=1))
    return rows.astype(np.int32), cols.astype(np.int64), np.full(len(rows), -_FLT_MAX, np.float32)


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int, seed: int | None = None,
                            name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`af.nn.compute_accidental_hits`: (row, sampled position, -FLT_MAX) for each sampled id that is a true one."""
    seed1, seed2 = _op_seeds(seed)
    true_classes = math.cast(convert_to_tensor(true_classes), dtypes.int64)
    sampled = math.cast(convert_to_tensor(sampled_candidates), dtypes.int64)
    return tuple(compute_accidental_hits_op(true_classes, sampled, num_true=int(num_true), seed=seed1, seed2=seed2,
                                            name=name))


# -- the sampled losses -------------------------------------------------------------------------------
def _sum_rows(x: Tensor) -> Tensor:
    """TF1's `_sum_rows`: a matmul with a column of ones, which is faster than reduce_sum in TF's kernels."""
    cols = array.shape(x)[1]
    ones = array.ones(array.stack([cols, 1]), x.dtype.base_dtype)
    return array.reshape(matmul(x, ones), [-1])


def _compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                            num_classes: int, num_true: int = 1, sampled_values: Any = None,
                            subtract_log_q: bool = True, remove_accidental_hits: bool = False,
                            partition_strategy: str = "mod", name: str | None = None,
                            seed: int | None = None) -> tuple[Tensor, Tensor]:
    if not isinstance(weights, (list, tuple)):
        weights = [weights]
    with name_scope(name, "compute_sampled_logits", list(weights) + [biases, inputs, labels]):
        labels = convert_to_tensor(labels, name="labels")
        if labels.dtype.base_dtype != dtypes.int64:
            labels = math.cast(labels, dtypes.int64)
        labels_flat = array.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed)
        sampled, true_expected, sampled_expected = (array.stop_gradient(convert_to_tensor(s))
                                                    for s in sampled_values)
        sampled = math.cast(sampled, dtypes.int64)
        inputs = convert_to_tensor(inputs, name="inputs")
        all_ids = array.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        n_true = array.shape(labels_flat)[0]
        true_w = array.slice(all_w, [0, 0], array.stack([n_true, -1]))
        sampled_w = array.slice(all_w, array.stack([n_true, 0]), [-1, -1])
        sampled_logits = matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        true_b = array.slice(all_b, [0], array.expand_dims(n_true, 0))
        sampled_b = array.slice(all_b, array.expand_dims(n_true, 0), [-1])
        dim = array.shape(true_w)[1:2]
        new_true_w_shape = array.concat([[-1, num_true], dim], 0)
        row_wise_dots = math.multiply(array.expand_dims(inputs, 1), array.reshape(true_w, new_true_w_shape))
        dots_as_matrix = array.reshape(row_wise_dots, array.concat([[-1], dim], 0))
        true_logits = array.reshape(_sum_rows(dots_as_matrix), [-1, num_true])
        true_logits += array.reshape(true_b, [-1, num_true])
        sampled_logits += sampled_b
        if remove_accidental_hits:
            hits = reduce_any(math.equal(array.expand_dims(labels, -1), sampled), axis=1)
            sampled_logits += math.cast(hits, sampled_logits.dtype.base_dtype) * constant(
                -_FLT_MAX, dtype=sampled_logits.dtype.base_dtype)
        if subtract_log_q:
            true_logits -= math.log(math.cast(true_expected, true_logits.dtype.base_dtype))
            sampled_logits -= math.log(math.cast(sampled_expected, sampled_logits.dtype.base_dtype))
        out_logits = array.concat([true_logits, sampled_logits], 1)
        out_labels = array.concat([array.ones_like(true_logits) / num_true, array.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int, num_classes: int,
             num_true: int = 1, sampled_values: Any = None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss") -> Tensor:
    """`af.nn.nce_loss`: the noise-contrastive estimation loss per example, [batch]."""
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits, partition_strategy=partition_strategy,
        name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="sampled_losses")
    return _sum_rows(sampled_losses)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int, num_classes: int,
                         num_true: int = 1, sampled_values: Any = None, remove_accidental_hits: bool = True,
                         partition_strategy: str = "mod", name: str = "sampled_softmax_loss",
                         seed: int | None = None) -> Tensor:
    """`af.nn.sampled_softmax_loss`: the softmax loss over the true class and the sampled ones, [batch]."""
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits, partition_strategy=partition_strategy,
        name=name, seed=seed)
    labels = array.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


__all__ = [
    "uniform_candidate_sampler", "log_uniform_candidate_sampler", "fixed_unigram_candidate_sampler",
    "compute_accidental_hits", "nce_loss", "sampled_softmax_loss",
]
