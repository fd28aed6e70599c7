"""`af.train.Example` messages and `parse_example` / `parse_single_example` (ParseExampleV2): values,
dtypes, static shapes, op names and errors, all checked against TF 2.21 (the constants below are what
TF wrote or returned)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af

# tf.train.Example(...).SerializeToString(deterministic=True) in TF 2.21:
# E1 = {a: int64 [1, 2, 3], b: float [0.5, 1.5], s: bytes [hi, yo], id: int64 [7]}
E1 = bytes.fromhex("0a3f0a0c0a016112071a050a030102030a110a0162120c120a0a080000003f0000c03f0a0b0a02696412051a030a01"
                   "070a0f0a0173120a0a080a0268690a02796f")
# E2 = {a: int64 [4, 5, 6], b: float [2.5], id: int64 [8]}
E2 = bytes.fromhex("0a2a0a0c0a016112071a050a030405060a0d0a0162120812060a04000020400a0b0a02696412051a030a0108")
# E3 = {ix: int64 [5, 1], val: float [0.5, 2.0]}, E4 = {ix: int64 [3], val: float [7.0]}
E3 = bytes.fromhex("0a230a0c0a02697812061a040a0205010a130a0376616c120c120a0a080000003f00000040")
E4 = bytes.fromhex("0a1e0a0b0a02697812051a030a01030a0f0a0376616c120812060a040000e040")


def _example(**features):
    t = af.train
    out = {}
    for key, values in features.items():
        if isinstance(values[0], bytes):
            out[key] = t.Feature(bytes_list=t.BytesList(value=values))
        elif isinstance(values[0], float):
            out[key] = t.Feature(float_list=t.FloatList(value=values))
        else:
            out[key] = t.Feature(int64_list=t.Int64List(value=values))
    return t.Example(features=t.Features(feature=out))


def test_messages_serialise_as_tf():
    assert _example(a=[1, 2, 3], b=[0.5, 1.5], id=[7], s=[b"hi", b"yo"]).SerializeToString(deterministic=True) == E1
    assert _example(ix=[5, 1], val=[0.5, 2.0]).SerializeToString(deterministic=True) == E3
    parsed = af.train.Example.FromString(E2)
    assert list(parsed.features.feature["a"].int64_list.value) == [4, 5, 6]
    assert parsed.features.feature["b"].WhichOneof("kind") == "float_list"
    assert af.train.Example.DESCRIPTOR.full_name == "tensorflow.Example"
    seq = af.train.SequenceExample()
    seq.context.feature["id"].int64_list.value.append(3)
    seq.feature_lists.feature_list["tokens"].feature.add().bytes_list.value.append(b"x")
    again = af.train.SequenceExample.FromString(seq.SerializeToString())
    assert again.feature_lists.feature_list["tokens"].feature[0].bytes_list.value == [b"x"]
    assert isinstance(again.feature_lists.feature_list["tokens"], af.train.FeatureList)
    assert isinstance(again.feature_lists, af.train.FeatureLists)


FEATURES = {"a": af.FixedLenFeature([3], af.int64), "id": af.io.FixedLenFeature([], af.int64),
            "b": af.VarLenFeature(af.float32), "s": af.io.VarLenFeature(af.string),
            "m": af.FixedLenFeature([2], af.float32, default_value=[9.0, 8.0]),
            "q": af.io.FixedLenSequenceFeature([], af.float32, allow_missing=True)}


def _static(t):
    if isinstance(t, af.SparseTensor):
        return ("sparse", t.indices.shape.as_list(), t.values.shape.as_list(), t.dense_shape.shape.as_list())
    return ("dense", t.shape.as_list())


def test_parse_single_example_values_dtypes_shapes_and_op_names():
    graph = af.Graph()
    with graph.as_default():
        out = af.parse_single_example(E1, FEATURES)
        # names as TF 2.21 builds them (sorted dense keys: a, id, m, q)
        assert [(o.name, o.type) for o in graph.get_operations()] == [
            ("ParseSingleExample/serialized", "Const"), ("ParseSingleExample/ParseExample/Const", "Const"),
            ("ParseSingleExample/ParseExample/Const_1", "Const"), ("ParseSingleExample/ParseExample/key_m", "Const"),
            ("ParseSingleExample/ParseExample/Reshape/shape", "Const"),
            ("ParseSingleExample/ParseExample/Reshape", "Reshape"),
            ("ParseSingleExample/ParseExample/Const_2", "Const"),
            ("ParseSingleExample/ParseExample/ParseExampleV2/names", "Const"),
            ("ParseSingleExample/ParseExample/ParseExampleV2/sparse_keys", "Const"),
            ("ParseSingleExample/ParseExample/ParseExampleV2/dense_keys", "Const"),
            ("ParseSingleExample/ParseExample/ParseExampleV2/ragged_keys", "Const"),
            ("ParseSingleExample/ParseExample/ParseExampleV2", "ParseExampleV2")]
        assert {k: _static(v) for k, v in out.items()} == {
            "a": ("dense", [3]), "id": ("dense", []), "m": ("dense", [2]), "q": ("dense", [None]),
            "b": ("sparse", [None, 1], [None], [1]), "s": ("sparse", [None, 1], [None], [1])}
        with af.Session() as sess:
            got = sess.run(out)
    np.testing.assert_array_equal(got["a"], np.array([1, 2, 3], np.int64))
    assert got["a"].dtype == np.int64 and got["id"] == 7 and np.shape(got["id"]) == ()
    np.testing.assert_array_equal(got["m"], np.array([9.0, 8.0], np.float32))
    assert got["m"].dtype == np.float32 and got["q"].shape == (0,) and got["q"].dtype == np.float32
    assert got["b"].indices.tolist() == [[0], [1]] and got["b"].dense_shape.tolist() == [2]
    assert got["b"].values.dtype == np.float32 and got["b"].values.tolist() == [0.5, 1.5]
    assert got["s"].values.tolist() == [b"hi", b"yo"]


def test_parse_example_batch_as_tf():
    with af.Graph().as_default():
        out = af.io.parse_example([E1, E2], FEATURES)
        assert {k: _static(v) for k, v in out.items()} == {
            "a": ("dense", [2, 3]), "id": ("dense", [2]), "m": ("dense", [2, 2]), "q": ("dense", [2, None]),
            "b": ("sparse", [None, 2], [None], [2]), "s": ("sparse", [None, 2], [None], [2])}
        with af.Session() as sess:
            got = sess.run(out)
    assert got["a"].tolist() == [[1, 2, 3], [4, 5, 6]] and got["id"].tolist() == [7, 8]
    assert got["m"].tolist() == [[9.0, 8.0], [9.0, 8.0]] and got["q"].shape == (2, 0)
    assert got["b"].indices.tolist() == [[0, 0], [0, 1], [1, 0]] and got["b"].dense_shape.tolist() == [2, 2]
    assert got["b"].values.tolist() == [0.5, 1.5, 2.5]
    assert got["s"].indices.tolist() == [[0, 0], [0, 1]] and got["s"].dense_shape.tolist() == [2, 2]


def _run(parse, serialized, features, **kwargs):
    with af.Graph().as_default():
        out = parse(serialized, features, **kwargs)
        with af.Session() as sess:
            return sess.run(out)


def test_sequence_features_pad_and_reshape():
    got = _run(af.parse_example, [E1, E2], {
        "a": af.FixedLenSequenceFeature([], af.int64, allow_missing=True),
        "b": af.FixedLenSequenceFeature([], af.float32, allow_missing=True, default_value=-1.0)})
    assert got["a"].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert got["b"].tolist() == [[0.5, 1.5], [2.5, -1.0]]  # padded with the default, as TF
    got = _run(af.parse_single_example, E1, {"a": af.FixedLenSequenceFeature([3], af.int64, allow_missing=True)})
    assert got["a"].tolist() == [[1, 2, 3]]
    got = _run(af.parse_example, [E1, E2], {"a": af.FixedLenFeature([1, 3], af.int64)})
    assert got["a"].shape == (2, 1, 3)


def test_defaults_missing_keys_and_empty_batches():
    got = _run(af.parse_single_example, E1, {"zz": af.FixedLenFeature([], af.string, default_value="dflt"),
                                             "s": af.FixedLenFeature([2], af.string)})
    assert got["zz"] == b"dflt" and got["s"].tolist() == [b"hi", b"yo"]
    got = _run(af.parse_example, [E2, E1], {"s": af.VarLenFeature(af.string)})
    assert got["s"].indices.tolist() == [[1, 0], [1, 1]] and got["s"].dense_shape.tolist() == [2, 2]
    got = _run(af.parse_example, np.array([], dtype=object), {"a": af.FixedLenFeature([3], af.int64),
                                                              "s": af.VarLenFeature(af.string)})
    assert got["a"].shape == (0, 3) and got["a"].dtype == np.int64
    assert got["s"].indices.shape == (0, 2) and got["s"].dense_shape.tolist() == [0, 0]


def test_sparse_feature_as_tf():
    got = _run(af.parse_example, [E3, E4], {"sp": af.SparseFeature(index_key="ix", value_key="val",
                                                                   dtype=af.float32, size=10)})
    assert got["sp"].indices.tolist() == [[0, 1], [0, 5], [1, 3]]
    assert got["sp"].values.tolist() == [2.0, 0.5, 7.0] and got["sp"].dense_shape.tolist() == [2, 10]
    two = _example(i=[1, 0], j=[2, 4], v=[5.0, 6.0]).SerializeToString()
    got = _run(af.parse_single_example, two, {"sp": af.SparseFeature(["i", "j"], "v", af.float32, [3, 5])})
    assert got["sp"].indices.tolist() == [[0, 4], [1, 2]] and got["sp"].values.tolist() == [6.0, 5.0]
    assert got["sp"].dense_shape.tolist() == [3, 5]


def test_fed_records_and_example_names():
    with af.Graph().as_default():
        batch = af.placeholder(af.string, [None])
        one = af.placeholder(af.string, [])
        out = af.parse_example(batch, {"a": af.FixedLenFeature([3], af.int64)})
        single = af.parse_single_example(one, {"a": af.FixedLenFeature([3], af.int64)})
        named = af.parse_example(batch, {"zz": af.FixedLenFeature([], af.int64)}, example_names=["ex0", "ex1"])
        with af.Session() as sess:
            assert sess.run(out, {batch: [E2]})["a"].tolist() == [[4, 5, 6]]
            assert sess.run(single, {one: E2})["a"].tolist() == [4, 5, 6]
            with pytest.raises(af.errors.InvalidArgumentError, match="Name: ex0, Feature: zz "
                                                                     r"\(data type: int64\) is required"):
                sess.run(named, {batch: [E3, E4]})
            with pytest.raises(af.errors.InvalidArgumentError,
                               match=r"Could not parse example input, value: '\\n\\x05\\n\\x03'"):
                sess.run(single, {one: b"\x0a\x05\x0a\x03"})


# TF 2.21's messages for each bad input (the run-time ones are InvalidArgumentError).
RUN_ERRORS = [
    ("missing", af.parse_single_example, E1, {"zz": af.FixedLenFeature([], af.int64)},
     r"Feature: zz \(data type: int64\) is required but could not be found."),
    ("missing_batch", af.parse_example, [E1, E2], {"zz": af.FixedLenFeature([], af.int64)},
     r"Name: <unknown>, Feature: zz \(data type: int64\) is required"),
    ("wrong_type", af.parse_single_example, E1, {"a": af.FixedLenFeature([3], af.float32)},
     r"Key: a.  Data types don't match. Data type: int64 but expected type: float"),
    ("wrong_type_varlen", af.parse_single_example, E1, {"a": af.VarLenFeature(af.string)},
     r"Key: a.  Data types don't match. Expected type: string, Actual type: int64"),
    ("wrong_length", af.parse_example, [E1, E2], {"b": af.FixedLenFeature([2], af.float32)},
     r"Name: <unknown>, Key: b, Index: 1.  Number of float values != expected.  Values size: 1 but output "
     r"shape: \[2\]"),
    ("not_divisible", af.parse_single_example, E1, {"b": af.FixedLenSequenceFeature([3], af.float32, True)},
     r"Error while parsing feature with key b: number of elements should be divisible by 3, found 2 instead"),
    ("garbage", af.parse_single_example, b"\xff\xff\x01", {"a": af.FixedLenFeature([3], af.int64)},
     r"Could not parse example input"),
]


@pytest.mark.parametrize("case", RUN_ERRORS, ids=[c[0] for c in RUN_ERRORS])
def test_run_time_errors_as_tf(case):
    _, parse, serialized, features, message = case
    with pytest.raises(af.errors.InvalidArgumentError, match=message) as info:
        _run(parse, serialized, features)
    assert "ParseExampleV2" in str(info.value)


BUILD_ERRORS = [
    ("int32", {"a": af.FixedLenFeature([3], af.int32)}, E1, TypeError,
     "Value passed to parameter 'dense_defaults' has DataType int32 not in list of allowed values: float32, int64, "
     "string"),
    ("sequence_without_allow_missing", {"a": af.FixedLenSequenceFeature([], af.int64)}, E1, ValueError,
     "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."),
    ("empty", {}, E1, ValueError, "Invalid argument: features cannot be empty."),
    ("none", None, E1, ValueError, "Invalid argument: features cannot be None."),
    ("not_scalar", {"a": af.FixedLenFeature([3], af.int64)}, [E1], ValueError, "Input serialized must be a scalar"),
    ("unknown_first_dim", {"a": af.FixedLenFeature([None], af.int64)}, E1, ValueError,
     "First dimension of shape for feature a unknown. Consider using FixedLenSequenceFeature"),
    ("default_shape", {"a": af.FixedLenFeature([3], af.int64, default_value=[1, 2])}, E1, ValueError,
     "Cannot reshape a tensor with 2 elements"),
    ("not_a_feature", {"a": 3}, E1, ValueError, "Unsupported int 3 for key 'a'"),
]


@pytest.mark.parametrize("case", BUILD_ERRORS, ids=[c[0] for c in BUILD_ERRORS])
def test_graph_construction_errors_as_tf(case):
    _, features, serialized, error, message = case
    with af.Graph().as_default(), pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        af.parse_single_example(serialized, features)


def test_conflicting_sparse_and_dense_keys():
    with af.Graph().as_default(), pytest.raises(ValueError, match="Dense and sparse keys must not intersect"):
        af.parse_example([E3], {"ix": af.FixedLenFeature([2], af.int64),
                                "sp": af.SparseFeature("ix", "val", af.float32, 10)})


def _mixed_records() -> list[bytes]:
    """Examples that exercise each path of the kernel: features present, missing (defaults), empty, varying."""
    t, out = af.train, []
    for i in range(24):
        feat = {"w": t.Feature(bytes_list=t.BytesList(value=[b"w" * (i % 3)] * (i % 3)))}  # empty lists too
        if i % 3:
            feat["lab"] = t.Feature(int64_list=t.Int64List(value=[i]))
        if i % 4 != 1:
            feat["vec"] = t.Feature(float_list=t.FloatList(value=[i, i + 0.5, i + 0.25]))
        if i % 5 != 2:
            feat["ids"] = t.Feature(int64_list=t.Int64List(value=list(range(i, i + i % 4))))
        if i % 2:
            feat["seq"] = t.Feature(float_list=t.FloatList(value=[float(i)] * (2 * (i % 3))))
        if i % 6 != 3:
            feat["tag"] = t.Feature(bytes_list=t.BytesList(value=[b"t%d" % i, b"u"]))
        out.append(t.Example(features=t.Features(feature=feat)).SerializeToString())
    return out


MIXED_FEATURES = {"lab": af.io.FixedLenFeature([], af.int64, default_value=-1),
                  "vec": af.io.FixedLenFeature([3], af.float32, default_value=[0.0, 1.0, 2.0]),
                  "ids": af.io.VarLenFeature(af.int64),
                  "seq": af.io.FixedLenSequenceFeature([2], af.float32, allow_missing=True, default_value=-7.0),
                  "tag": af.io.FixedLenFeature([2], af.string, default_value=[b"x", b"y"]),
                  "w": af.io.VarLenFeature(af.string)}


def test_batches_with_missing_empty_and_varying_features_match_single_records():
    # Each feature of a batch is gathered in one pass (missing ones take the default, empty lists give no
    # sparse entries, sequences pad with the default): row i of the batch is parse_single_example(record i).
    # The same records and features gave the same values in TF 2.21 (tfdiff, batch and single).
    records = _mixed_records()
    with af.Graph().as_default():
        batch = af.io.parse_example(records, MIXED_FEATURES)
        one = af.placeholder(af.string, [])
        single = af.io.parse_single_example(one, MIXED_FEATURES)
        with af.Session() as sess:
            got = sess.run(batch)
            rows = [sess.run(single, {one: r}) for r in records]
    assert got["lab"].tolist() == [-1 if i % 3 == 0 else i for i in range(24)]
    assert got["vec"][1].tolist() == [0.0, 1.0, 2.0] and got["vec"][2].tolist() == [2.0, 2.5, 2.25]
    assert got["tag"][3].tolist() == [b"x", b"y"] and got["tag"][4].tolist() == [b"t4", b"u"]
    assert got["seq"].shape == (24, 2, 2) and got["seq"][1].tolist() == [[1.0, 1.0], [-7.0, -7.0]]
    assert got["ids"].dense_shape.tolist() == [24, 3] and got["w"].dense_shape.tolist() == [24, 2]
    for i, row in enumerate(rows):
        for key in ("lab", "vec", "tag"):
            assert row[key].tolist() == got[key][i].tolist(), (i, key)
        assert row["seq"].tolist() == got["seq"][i][:row["seq"].shape[0]].tolist()
        for key in ("ids", "w"):
            mine = got[key].indices[:, 0] == i
            assert row[key].values.tolist() == got[key].values[mine].tolist(), (i, key)
            assert row[key].indices[:, 0].tolist() == got[key].indices[mine, 1].tolist()
            assert row[key].dense_shape.tolist() == [int(mine.sum())]
        assert row["ids"].values.tolist() == ([] if i % 5 == 2 else list(range(i, i + i % 4)))
