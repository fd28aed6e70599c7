"""`af.random`, as `tf.compat.v1.random`: TF1's names for the random ops and samplers defined in asyncflow.ops."""

from asyncflow._aliases import bind

__all__ = bind(globals(), """
    all_candidate_sampler categorical fixed_unigram_candidate_sampler gamma get_seed
    learned_unigram_candidate_sampler log_uniform_candidate_sampler multinomial normal poisson set_random_seed
    shuffle stateless_categorical stateless_multinomial stateless_normal stateless_truncated_normal stateless_uniform
    truncated_normal uniform uniform_candidate_sampler
""", {"categorical": "ops.random_extra.categorical", "stateless_categorical": "ops.random_extra.stateless_categorical",
      "stateless_normal": "ops.random_extra.stateless_random_normal",
      "stateless_truncated_normal": "ops.random_extra.stateless_truncated_normal",
      "stateless_uniform": "ops.random_extra.stateless_random_uniform", "gamma": "random_gamma",
      "normal": "random_normal", "poisson": "random_poisson", "shuffle": "random_shuffle", "uniform": "random_uniform"})
