"""`af.nn.embedding_lookup_sparse`, `safe_embedding_lookup_sparse` and `sparse_tensor_dense_matmul`'s
adjoints: values and gradients checked against TF 2.21's compat.v1 (the constants below are its output
for the same program), params as one tensor, a list of shards and a PartitionedVariable."""

import numpy as np
import pytest

import asyncflow as af

RNG = np.random.RandomState(0)
P = RNG.randn(6, 3).astype(np.float32)
GRAD_W = {c: RNG.randn(3, 3).astype(np.float32) for c in ("sum", "mean", "sqrtn")}
B = RNG.randn(3, 2).astype(np.float32)
IDS_IDX = [[0, 0], [0, 1], [0, 2], [2, 0], [2, 1]]

# TF 2.21: (unweighted, weighted) results per combiner; row 1 has no ids, so it is 0 (weights sum 0).
TF_UNWEIGHTED = {
    "sum": [[4.8923845, 3.8791595, -0.5002823], [0, 0, 0], [2.0977268, 1.8942363, 0.7735797]],
    "mean": [[1.6307949, 1.2930532, -0.1667608], [0, 0, 0], [1.0488634, 0.9471182, 0.3867899]],
    "sqrtn": [[2.8246195, 2.2396338, -0.2888381], [0, 0, 0], [1.4833168, 1.3394274, 0.5470034]],
}
TF_WEIGHTED = {
    "sum": [[6.9279785, 5.674696, -2.204697], [0, 0, 0], [3.6471016, 5.0824733, 0.8526322]],
    "mean": [[1.9794225, 1.6213417, -0.6299134], [0, 0, 0], [0.810467, 1.1294385, 0.1894738]],
    "sqrtn": [[3.0236177, 2.4766402, -0.9622086], [0, 0, 0], [1.0873556, 1.5153008, 0.2542058]],
}
TF_GRAD = {  # d sum(weighted * GRAD_W[c]) / d params, densified
    "sum": [[3.404632, -2.1815486, 0.0686378], [0.9392031, -2.5622873, -7.658969], [0, 0, 0],
            [0.1565339, -0.4270479, -1.2764949], [0, 0, 0], [6.809264, -4.363097, 0.1372755]],
    "mean": [[-0.6602655, -0.1159707, 0.0521163], [-0.1604433, 1.3138108, 1.2594504], [0, 0, 0],
             [-0.0267406, 0.2189685, 0.2099084], [0, 0, 0], [-1.320531, -0.2319414, 0.1042327]],
    "sqrtn": [[-0.7630672, 0.8724133, -0.2279234], [1.6108285, 1.5742847, -0.5071298], [0, 0, 0],
              [0.2684714, 0.2623808, -0.0845216], [0, 0, 0], [-1.5261345, 1.7448266, -0.4558468]],
}
TF_MAX_NORM_MEAN = [[0.5757676, 0.4363325, 0.1075677], [0, 0, 0], [0.5368744, 0.5809372, 0.1715285]]
TF_SAFE_MEAN = [[[2.2408931, 1.867558, -0.9772779], [0, 0, 0]], [[0, 0, 0], [0.9500884, -0.1513572, -0.1032189]]]
TF_SAFE_SQRTN_DEFAULT3 = [[[2.2408931, 1.867558, -0.9772779], [0.4105985, 0.1440436, 1.4542735]],
                          [[0.7610377, 0.121675, 0.4438632], [0.9500884, -0.1513572, -0.1032189]]]
TF_MATMUL = [[1.1662356, -2.4208467], [0.7697784, 2.0578575]]
TF_MATMUL_VALUES_GRAD = [-1.6138978, -4.634535, -3.1118803]  # entries of A = [[0,1],[1,0],[1,2]]
TF_MATMUL_B_GRAD = [[-4.0, -6.0], [0.0, 1.5], [1.0, 1.5]]


def numpy_lookup(params, combiner):
    """The unweighted reference: rows 0 and 2 hold ids [1, 3, 1] and [5, 0]."""
    out = np.zeros((3, 3), np.float32)
    for row, ids in ((0, [1, 3, 1]), (2, [5, 0])):
        total = params[ids].sum(0)
        out[row] = total if combiner == "sum" else total / (len(ids) if combiner == "mean" else np.sqrt(len(ids)))
    return out


def ids_and_weights():
    ids = af.SparseTensor(IDS_IDX, af.constant([1, 3, 1, 5, 0], af.int64), [3, 3])
    w = af.SparseTensor(IDS_IDX, [2.0, 0.5, 1.0, 3.0, 1.5], [3, 3])
    return ids, w


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_combiners_values_and_gradient_match_tf(combiner):
    with af.Graph().as_default():
        ids, w = ids_and_weights()
        p = af.constant(P)
        shards = [af.constant(P[:3]), af.constant(P[3:])]
        plain = af.nn.embedding_lookup_sparse(p, ids, None, combiner=combiner)
        weighted = af.nn.embedding_lookup_sparse(p, ids, w, combiner=combiner)
        sharded = af.nn.embedding_lookup_sparse(shards, ids, w, combiner=combiner, partition_strategy="div")
        sharded_mod = af.nn.embedding_lookup_sparse(shards, ids, None, combiner=combiner)
        assert plain.shape.as_list() == [None, 3] and weighted.shape.as_list() == [None, 3]
        assert plain.op.name == weighted.op.name.replace("_1", "") == "embedding_lookup_sparse"
        grad = af.gradients(af.reduce_sum(weighted * GRAD_W[combiner]), p)[0]
        assert isinstance(grad, af.IndexedSlices)
        with af.Session() as s:
            got = s.run([plain, weighted, sharded, sharded_mod, af.convert_to_tensor(grad)])
    np.testing.assert_allclose(got[0], TF_UNWEIGHTED[combiner], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], TF_WEIGHTED[combiner], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], TF_WEIGHTED[combiner], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0], numpy_lookup(P, combiner), rtol=1e-5, atol=1e-6)
    mod_rows = P[[(i % 2) * 3 + i // 2 for i in range(6)]]  # "mod": id i is row i // 2 of shard i % 2
    np.testing.assert_allclose(got[3], numpy_lookup(mod_rows, combiner), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[4], TF_GRAD[combiner], rtol=1e-5, atol=1e-6)


def test_max_norm_safe_lookup_and_partitioned_variable():
    with af.Graph().as_default():
        ids, _ = ids_and_weights()
        p = af.constant(P)
        clipped = af.nn.embedding_lookup_sparse(p, ids, None, max_norm=1.0)
        idx3 = [[0, 0, 0], [0, 1, 0], [1, 0, 1], [1, 1, 0]]
        ids3 = af.SparseTensor(idx3, af.constant([1, -1, 4, 2], af.int64), [2, 2, 2])
        w3 = af.SparseTensor(idx3, [1.0, 2.0, -1.0, 0.5], [2, 2, 2])
        safe = af.nn.safe_embedding_lookup_sparse(p, ids3, w3, combiner="mean")
        safe_default = af.nn.safe_embedding_lookup_sparse([p], ids3, None, combiner="sqrtn", default_id=3)
        assert safe.shape.as_list() == [2, 2, 3]  # as TF 2.21 (the reshape to a constant dense shape)
        var = af.get_variable("emb", [6, 3], initializer=af.random_normal_initializer(seed=1),
                              partitioner=af.fixed_size_partitioner(2))
        from_var = af.nn.embedding_lookup_sparse(var, ids, None, combiner="mean", partition_strategy="div")
        grads = af.gradients(af.reduce_sum(from_var), list(var))
        assert all(isinstance(g, af.IndexedSlices) for g in grads)
        with af.Session() as s:
            s.run(af.global_variables_initializer())
            got = s.run([clipped, safe, safe_default, from_var])
            full = np.concatenate(s.run(list(var)))
    np.testing.assert_allclose(got[0], TF_MAX_NORM_MEAN, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], TF_SAFE_MEAN, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], TF_SAFE_SQRTN_DEFAULT3, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], numpy_lookup(full, "mean"), rtol=1e-5, atol=1e-6)


def test_bad_arguments():
    with af.Graph().as_default():
        ids, w = ids_and_weights()
        with pytest.raises(ValueError, match="combiner must be one of 'mean', 'sqrtn' or 'sum', got max"):
            af.nn.embedding_lookup_sparse(P, ids, None, combiner="max")
        with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
            af.nn.embedding_lookup_sparse(P, [1, 2], None)
        with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
            af.nn.embedding_lookup_sparse(P, ids, [1.0])


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_sparse_dense_matmul_adjoints_match_tf(adjoint_a, adjoint_b):
    with af.Graph().as_default():
        a = af.SparseTensor([[0, 1], [1, 0], [1, 2]], [1.5, -2.0, 0.5], [2, 3])
        a = af.sparse.transpose(a) if adjoint_a else a
        b = af.constant(B.T.copy() if adjoint_b else B)
        m = af.sparse.matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
        assert m.shape.as_list() == [2, 2]
        ga, gb = af.gradients(af.reduce_sum(m * np.arange(4.0, dtype=np.float32).reshape(2, 2)), [a.values, b])
        with af.Session() as s:
            got_m, got_ga, got_gb = s.run([m, ga, gb])
    np.testing.assert_allclose(got_m, TF_MATMUL, rtol=1e-5)
    # a transposed A lists its entries in the order [1,0], [0,1], [2,1]
    want_ga = np.array(TF_MATMUL_VALUES_GRAD)[[1, 0, 2]] if adjoint_a else TF_MATMUL_VALUES_GRAD
    np.testing.assert_allclose(got_ga, want_ga, rtol=1e-5)
    np.testing.assert_allclose(got_gb, np.array(TF_MATMUL_B_GRAD).T if adjoint_b else TF_MATMUL_B_GRAD, rtol=1e-5)
