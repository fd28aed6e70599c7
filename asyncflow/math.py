"""`af.math`, as `tf.compat.v1.math`: TF1's names for functions defined in asyncflow.ops (see _aliases.py)."""

from asyncflow._aliases import bind

_MORE = "ops.math_more."  # names TF1 has only under tf.math, not at the top level

__all__ = bind(globals(), """
    abs accumulate_n acos acosh add add_n angle argmax argmin asin asinh atan atan2 atanh bessel_i0 bessel_i0e
    bessel_i1 bessel_i1e betainc bincount ceil confusion_matrix conj cos cosh count_nonzero cumprod cumsum
    cumulative_logsumexp digamma divide divide_no_nan equal erf erfc erfcinv erfinv exp expm1 floor floordiv
    floormod greater greater_equal igamma igammac imag in_top_k invert_permutation is_finite is_inf is_nan
    is_non_decreasing is_strictly_increasing l2_normalize lbeta less less_equal lgamma log log1p log_sigmoid
    log_softmax logical_and logical_not logical_or logical_xor maximum minimum mod multiply multiply_no_nan ndtri
    negative nextafter not_equal polygamma polyval pow real reciprocal reciprocal_no_nan reduce_all reduce_any
    reduce_euclidean_norm reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_std reduce_sum
    reduce_variance rint round rsqrt scalar_mul segment_max segment_mean segment_min segment_prod segment_sum
    sigmoid sign sin sinh softmax softplus softsign sqrt square squared_difference subtract tan tanh top_k
    truediv unsorted_segment_max unsorted_segment_mean unsorted_segment_min unsorted_segment_prod
    unsorted_segment_sqrt_n unsorted_segment_sum xdivy xlog1py xlogy zero_fraction zeta
""", {"divide_no_nan": "div_no_nan", "multiply_no_nan": _MORE + "multiply_no_nan",
      "reciprocal_no_nan": _MORE + "reciprocal_no_nan", "xlogy": _MORE + "xlogy", "xdivy": _MORE + "xdivy",
      "xlog1py": _MORE + "xlog1py", "reduce_euclidean_norm": _MORE + "reduce_euclidean_norm",
      "reduce_variance": _MORE + "reduce_variance", "reduce_std": _MORE + "reduce_std", "erfinv": _MORE + "erfinv",
      "erfcinv": _MORE + "erfcinv", "ndtri": _MORE + "ndtri", "bessel_i0": _MORE + "bessel_i0",
      "bessel_i0e": _MORE + "bessel_i0e", "bessel_i1": _MORE + "bessel_i1", "bessel_i1e": _MORE + "bessel_i1e",
      "cumulative_logsumexp": _MORE + "cumulative_logsumexp", "nextafter": _MORE + "nextafter",
      "polyval": _MORE + "polyval"})
