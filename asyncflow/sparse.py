"""`af.sparse`, as `tf.compat.v1.sparse`: TF1's names for the sparse API of asyncflow/ops/sparse_ops.py
(see _aliases.py); what asyncflow does not have yet is listed in NOT_YET."""

from asyncflow._aliases import bind

_OPS = "ops.sparse_ops."

__all__ = bind(globals(), """
    SparseConditionalAccumulator SparseTensor add bincount concat cross cross_hashed expand_dims eye
    fill_empty_rows from_dense mask matmul maximum merge minimum placeholder reduce_max reduce_max_sparse
    reduce_sum reduce_sum_sparse reorder reset_shape reshape retain segment_mean segment_sqrt_n segment_sum
    slice softmax sparse_dense_matmul split to_dense to_indicator transpose
""", {"add": "sparse_add", "bincount": _OPS + "bincount", "concat": "sparse_concat",
      "cross": _OPS + "sparse_cross", "cross_hashed": _OPS + "sparse_cross_hashed",
      "expand_dims": "ops.sparse_more.sparse_expand_dims", "eye": "ops.sparse_more.sparse_eye",
      "fill_empty_rows": "sparse_fill_empty_rows", "from_dense": _OPS + "from_dense", "mask": "sparse_mask",
      "matmul": "sparse_tensor_dense_matmul", "maximum": "sparse_maximum", "merge": "sparse_merge",
      "minimum": "sparse_minimum", "placeholder": "sparse_placeholder", "reduce_max": "sparse_reduce_max",
      "reduce_max_sparse": "sparse_reduce_max_sparse", "reduce_sum": "sparse_reduce_sum",
      "reduce_sum_sparse": "sparse_reduce_sum_sparse", "reorder": "sparse_reorder",
      "reset_shape": "sparse_reset_shape", "reshape": "sparse_reshape", "retain": "sparse_retain",
      "segment_mean": "sparse_segment_mean", "segment_sqrt_n": "sparse_segment_sqrt_n",
      "segment_sum": "sparse_segment_sum", "slice": "sparse_slice", "softmax": "sparse_softmax",
      "sparse_dense_matmul": "sparse_tensor_dense_matmul", "split": "sparse_split",
      "to_dense": "sparse_tensor_to_dense", "to_indicator": "sparse_to_indicator", "transpose": "sparse_transpose"})
