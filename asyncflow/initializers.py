"""`af.initializers`, as `tf.compat.v1.initializers`: the initializer classes and the init ops under TF1's names."""

from asyncflow._aliases import bind

__all__ = bind(globals(), """
    constant global_variables glorot_normal glorot_uniform he_normal he_uniform identity lecun_normal
    lecun_uniform local_variables ones orthogonal random_normal random_uniform tables_initializer truncated_normal
    uniform_unit_scaling variables variance_scaling zeros
""", {"constant": "constant_initializer", "global_variables": "global_variables_initializer",
      "glorot_normal": "glorot_normal_initializer", "glorot_uniform": "glorot_uniform_initializer",
      "identity": "identity_initializer", "local_variables": "local_variables_initializer",
      "ones": "ones_initializer", "orthogonal": "orthogonal_initializer",
      "random_normal": "random_normal_initializer", "random_uniform": "random_uniform_initializer",
      "truncated_normal": "truncated_normal_initializer", "uniform_unit_scaling": "uniform_unit_scaling_initializer",
      "variables": "variables_initializer", "variance_scaling": "variance_scaling_initializer",
      "zeros": "zeros_initializer", "he_normal": "init_ops.he_normal", "he_uniform": "init_ops.he_uniform",
      "lecun_normal": "init_ops.lecun_normal", "lecun_uniform": "init_ops.lecun_uniform"})
