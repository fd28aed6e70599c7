"""`af.train.Saver` and the checkpoint helpers, against TF1's behaviour (checked with tf.compat.v1):
op names, file names, the state file, pruning, renaming, errors; plus corruption (DataLossError),
a writer killed at random points, and a full disk, each leaving the previous checkpoint loadable.
"""

import os
import random
import signal
import subprocess
import sys
import time

import ml_dtypes
import numpy as np
import orjson
import pytest

import asyncflow as af
from asyncflow.ops import io_bundle
from asyncflow.train.saver import SaverDef

HERE = os.path.dirname(os.path.abspath(__file__))

VALUES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "f64": np.float64(np.pi),
    "i64": np.array([-(2**63), 0, 2**63 - 1, 5], np.int64),
    "flag": np.array([[True, False], [False, True]]),
    "text": np.array([b"", "h\u00e9llo".encode(), b"\x00\xff"], dtype=object),
    "bf16": np.array([1.5, -2.25, 3e38, 0.0, -0.0], ml_dtypes.bfloat16),
    "empty": np.zeros((0, 3), np.int32),
}


@pytest.fixture(autouse=True)
def fresh_graph():
    af.reset_default_graph()
    yield
    af.reset_default_graph()


def _zeros_like(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v)
    return np.full(v.shape, b"zero", dtype=object) if v.dtype == object else np.zeros_like(v)


def _make_variables(values: dict = VALUES, scope: str = "layer") -> dict:
    with af.name_scope(scope):
        return {k: af.Variable(_zeros_like(v), name=k) for k, v in values.items()}


def _set(sess, variables: dict, values: dict) -> None:
    for k, v in variables.items():
        v.load(values[k], sess)


def _assert_values(sess, variables: dict, values: dict) -> None:
    got = sess.run(variables)
    for k, want in values.items():
        g, w = np.asarray(got[k]), np.asarray(want)
        assert g.dtype == w.dtype and g.shape == w.shape, k
        assert g.tolist() == w.tolist() if w.dtype == object else g.tobytes() == w.tobytes(), k


def _listing(directory) -> list[str]:
    return sorted(os.listdir(directory))


# -- the ops a Saver builds ------------------------------------------------------------------------------------
def test_saver_builds_tf1_named_ops():
    with af.name_scope("layer"):
        w = af.Variable(af.zeros([2, 3]), name="w")
    b = af.Variable(np.int64(1), name="b")
    saver = af.train.Saver()
    ops = {o.name: o for o in af.get_default_graph().get_operations() if o.name.startswith("save/")}
    assert {n: o.type for n, o in ops.items()} == {
        "save/filename/input": "Const", "save/filename": "PlaceholderWithDefault",
        "save/Const": "PlaceholderWithDefault", "save/SaveV2/tensor_names": "Const",
        "save/SaveV2/shape_and_slices": "Const", "save/SaveV2": "SaveV2", "save/control_dependency": "Identity",
        "save/RestoreV2/tensor_names": "Const", "save/RestoreV2/shape_and_slices": "Const",
        "save/RestoreV2": "RestoreV2", "save/Assign": "Assign", "save/Assign_1": "Assign", "save/restore_all": "NoOp",
    }
    save = ops["save/SaveV2"]
    assert [t.name for t in save.inputs] == ["save/Const:0", "save/SaveV2/tensor_names:0",
                                            "save/SaveV2/shape_and_slices:0", "b:0", "layer/w:0"]
    assert save.get_attr("dtypes") == [af.int64, af.float32]
    assert ops["save/control_dependency"].control_inputs == [save]
    assert [t.name for t in ops["save/Assign_1"].inputs] == ["layer/w:0", "save/RestoreV2:1"]
    assert ops["save/Assign_1"].get_attr("_class") == [b"loc:@layer/w"]
    assert {c.name for c in ops["save/restore_all"].control_inputs} == {"save/Assign", "save/Assign_1"}
    assert saver.saver_def == SaverDef("save/Const:0", "save/control_dependency:0", "save/restore_all", 5, False,
                                       10000.0, SaverDef.V2)
    assert af.train.Saver([w]).saver_def.restore_op_name == "save_1/restore_all"
    assert af.train.Saver([b], name="mine").saver_def.save_tensor_name == "mine/control_dependency:0"


# -- round trips ----------------------------------------------------------------------------------------------
def test_round_trip_every_dtype_and_shape(tmp_path):
    variables = _make_variables()
    saver = af.train.Saver()
    with af.Session() as sess:
        _set(sess, variables, VALUES)
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
        assert prefix == str(tmp_path / "model.ckpt")
        assert _listing(tmp_path) == ["checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index",
                                      "model.ckpt.meta"]
        _set(sess, variables, {k: _zeros_like(v) for k, v in VALUES.items()})
        saver.restore(sess, prefix)
        _assert_values(sess, variables, VALUES)
    shapes = dict(af.train.list_variables(str(tmp_path)))
    assert shapes == {f"layer/{k}": list(np.shape(v)) for k, v in VALUES.items()}
    assert af.train.load_variable(str(tmp_path), "layer/f32:0").tolist() == VALUES["f32"].tolist()
    reader = af.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map()["layer/bf16"] == af.bfloat16
    assert reader.get_tensor("layer/f64") == np.pi and reader.has_tensor("layer/text")
    with pytest.raises(af.errors.NotFoundError, match="Key nope not found in checkpoint"):
        af.train.load_variable(prefix, "nope")


def test_restore_into_a_fresh_graph_and_session(tmp_path):
    variables = _make_variables()
    saver = af.train.Saver()
    with af.Session() as sess:
        _set(sess, variables, VALUES)
        prefix = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
    graph = af.Graph()
    with graph.as_default():
        fresh = _make_variables()
        restorer = af.train.Saver()
        with af.Session() as sess:  # no initializer: a restore initialises the variables
            restorer.restore(sess, prefix)
            _assert_values(sess, fresh, VALUES)


def test_meta_graph_is_an_importable_graph_document_with_its_saver_def(tmp_path):
    w = af.Variable([1.0, 2.0], name="w")
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(w.initializer)
        prefix = saver.save(sess, str(tmp_path / "m"))
    with open(prefix + ".meta", "rb") as f:
        meta = orjson.loads(f.read())
    assert meta["format"] == "asyncflow.meta_graph/1"
    assert meta["collection_def"]["variables"] == [{"variable": {  # TF's VariableDef fields
        "variable_name": "w:0", "initializer_name": "w/Assign", "snapshot_name": "w/read:0",
        "initial_value_name": "w/initial_value:0", "trainable": True}}]
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(meta["graph_def"], name="")
        restorer = af.train.Saver(saver_def=SaverDef(**meta["saver_def"]))
        with af.Session() as sess:
            restorer.restore(sess, prefix)
            assert sess.run("w:0").tolist() == [1.0, 2.0]
    with af.Graph().as_default():
        imported = af.train.import_meta_graph(prefix + ".meta")
        (v,) = af.trainable_variables()
        assert v.name == "w:0" and v.initial_value.name == "w/initial_value:0"
        with af.Session() as sess:
            imported.restore(sess, prefix)
            assert sess.run(v).tolist() == [1.0, 2.0]


def test_partial_var_list_and_dict_renaming(tmp_path):
    a = af.Variable(1.0, name="a")
    b = af.Variable(2.0, name="b")
    only_a = af.train.Saver([a])
    renamed = af.train.Saver({"model/first": a, "model/second": b})
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        p_a = only_a.save(sess, str(tmp_path / "only_a"), write_meta_graph=False)
        p_r = renamed.save(sess, str(tmp_path / "renamed"), write_meta_graph=False)
        assert af.train.list_variables(p_a) == [("a", [])]
        assert af.train.list_variables(p_r) == [("model/first", []), ("model/second", [])]
        sess.run([a.assign(10.0), b.assign(20.0)])
        only_a.restore(sess, p_a)
        assert sess.run([a, b]) == [1.0, 20.0]  # b is not in the partial saver's list
    graph = af.Graph()
    with graph.as_default():  # the renamed keys restore into variables of other names
        x = af.Variable(0.0, name="x")
        y = af.Variable(0.0, name="y")
        with af.Session() as sess:
            af.train.Saver({"model/first": y, "model/second": x}).restore(sess, p_r)
            assert sess.run([x, y]) == [2.0, 1.0]


def test_reshape_restores_into_another_shape(tmp_path):
    w = af.Variable(np.arange(6, dtype=np.float32), name="w")
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(w.initializer)
        prefix = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
    graph = af.Graph()
    with graph.as_default():
        w2 = af.Variable(af.zeros([2, 3]), name="w")
        with af.Session() as sess:
            with pytest.raises(af.errors.InvalidArgumentError, match=r"lhs shape= \[2,3\] rhs shape= \[6\]"):
                af.train.Saver().restore(sess, prefix)
            af.train.Saver(reshape=True).restore(sess, prefix)
            assert sess.run(w2).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_sharded_saver_writes_one_shard_per_device(tmp_path):
    w = af.Variable(np.arange(4.0), name="w")
    with af.device("/cpu:0"):
        b = af.Variable(np.int64(3), name="b")
    saver = af.train.Saver(sharded=True)
    graph = af.get_default_graph()
    saves = [o for o in graph.get_operations() if o.type == "SaveV2"]
    assert [o.name for o in saves] == ["save/SaveV2", "save/SaveV2_1"]
    assert [[t.name for t in o.inputs][3:] for o in saves] == [["w:0"], ["b:0"]]  # "" sorts before /device:CPU:0
    assert all(o.device == "/device:CPU:0" for o in saves)
    assert saver.saver_def.save_tensor_name == "save/Identity:0"
    assert graph.get_operation_by_name("save/MergeV2Checkpoints").type == "MergeV2Checkpoints"
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "m"), global_step=7, write_meta_graph=False)
        assert _listing(tmp_path) == ["checkpoint", "m-7.data-00000-of-00002", "m-7.data-00001-of-00002", "m-7.index"]
        sess.run([w.assign([0.0] * 4), b.assign(0)])
        saver.restore(sess, prefix)
        assert sess.run(w).tolist() == [0.0, 1.0, 2.0, 3.0] and sess.run(b) == 3


def test_overwriting_a_prefix_replaces_it_whole(tmp_path):
    w = af.Variable(1.0, name="w")
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(w.initializer)
        prefix = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
        sess.run(w.assign(2.0))
        assert saver.save(sess, str(tmp_path / "m"), write_meta_graph=False) == prefix
        # The new data file took a fresh name while the old index still read the old one.
        data = [n for n in _listing(tmp_path) if ".data-" in n]
        assert len(data) == 1 and data[0].startswith("m.data-00000-of-00001.")
        sess.run(w.assign(3.0))
        saver.restore(sess, prefix)
        assert sess.run(w) == 2.0
        assert saver.last_checkpoints == [prefix]


# -- names, the state file, pruning -----------------------------------------------------------------------------
def test_global_step_naming_and_state_file(tmp_path):
    w = af.Variable(1.0, name="w")
    step = af.train.get_or_create_global_step()
    saver = af.train.Saver()
    base = str(tmp_path / "model.ckpt")
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        sess.run(step.assign(42))
        assert saver.save(sess, base, global_step=3) == base + "-3"
        assert saver.save(sess, base, global_step=np.int64(4)) == base + "-4"
        assert saver.save(sess, base, global_step=step) == base + "-42"
        assert saver.save(sess, base, global_step=af.constant(9) + 1) == base + "-10"
        padded = af.train.Saver([w], pad_step_number=True)
        assert padded.save(sess, base, global_step=7, write_state=False) == base + "-00000007"
    assert saver.last_checkpoints == [base + "-3", base + "-4", base + "-42", base + "-10"]
    with open(tmp_path / "checkpoint") as f:
        assert f.read() == (f'model_checkpoint_path: "{base}-10"\n'
                            + "".join(f'all_model_checkpoint_paths: "{base}-{s}"\n' for s in (3, 4, 42, 10)))
    assert af.train.latest_checkpoint(str(tmp_path)) == base + "-10"
    state = af.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [base + "-3", base + "-4", base + "-42", base + "-10"]
    assert af.train.checkpoint_exists(base + "-42") and not af.train.checkpoint_exists(base + "-5")


def test_max_to_keep_prunes_oldest_checkpoints(tmp_path):
    af.Variable(1.0, name="w")
    saver = af.train.Saver(max_to_keep=2)
    base = str(tmp_path / "m")
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        for step in range(4):
            saver.save(sess, base, global_step=step)
        assert saver.last_checkpoints == [base + "-2", base + "-3"]
        assert _listing(tmp_path) == ["checkpoint"] + [f"m-{s}.{ext}" for s in (2, 3)
                                                      for ext in ("data-00000-of-00001", "index", "meta")]
        saver.save(sess, base, global_step=2)  # a step saved again moves to the end, as in TF
        assert saver.last_checkpoints == [base + "-3", base + "-2"]
        assert af.train.latest_checkpoint(str(tmp_path)) == base + "-2"
        keep_all = af.train.Saver(max_to_keep=None)
        for step in (10, 11):
            keep_all.save(sess, base, global_step=step, write_meta_graph=False)
        assert keep_all.last_checkpoints == [] and af.train.checkpoint_exists(base + "-10")
        assert af.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [base + "-11"]
        hourly = af.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.0)  # every one is kept for good
        for step in (20, 21, 22):
            hourly.save(sess, base, global_step=step, write_meta_graph=False)
        assert all(af.train.checkpoint_exists(f"{base}-{s}") for s in (20, 21, 22))


def test_relative_paths_and_state_file_edge_cases(tmp_path):
    af.Variable(1.0, name="w")
    saver = af.train.Saver(save_relative_paths=True)
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=1, write_meta_graph=False)
    with open(tmp_path / "checkpoint") as f:
        assert f.read() == 'model_checkpoint_path: "m-1"\nall_model_checkpoint_paths: "m-1"\n'
    assert af.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-1")  # made absolute on reading
    assert af.train.latest_checkpoint(str(tmp_path), "other_state") is None
    os.remove(tmp_path / "m-1.index")
    assert af.train.latest_checkpoint(str(tmp_path)) is None  # the state names a checkpoint that is gone
    (tmp_path / "checkpoint").write_text("garbage here")
    assert af.train.get_checkpoint_state(str(tmp_path)) is None  # TF ignores it, with a warning
    (tmp_path / "checkpoint").write_text("")
    with pytest.raises(ValueError, match="Invalid checkpoint state loaded from"):
        af.train.get_checkpoint_state(str(tmp_path))
    af.train.update_checkpoint_state(str(tmp_path), str(tmp_path / 'we"ird\npath\u00e9'))
    assert af.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == str(tmp_path / 'we"ird\npath\u00e9')


# -- errors --------------------------------------------------------------------------------------------------
def test_construction_errors_follow_tf(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        af.train.Saver()
    empty = af.train.Saver(allow_empty=True)
    w = af.Variable(1.0, name="w")
    with pytest.raises(ValueError, match="At least two variables have the same name: w"):
        af.train.Saver([w, w])
    with pytest.raises(ValueError, match="The same saveable will be restored with two names: b"):
        af.train.Saver({"a": w, "b": w})
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        af.train.Saver([w.value()])
    with pytest.raises(TypeError, match="names_to_saveables must be a dict mapping string names"):
        af.train.Saver({"t": w.value()})
    with pytest.raises(ValueError, match="build cannot be deferred"):
        af.train.Saver([w], defer_build=True)
    with af.Session() as sess:
        assert empty.save(sess, str(tmp_path / "x"), write_meta_graph=False) is None  # nothing to save, as TF
        assert _listing(tmp_path) == []
        empty.restore(sess, str(tmp_path / "x"))  # and nothing to restore
        deferred = af.train.Saver(defer_build=True)
        with pytest.raises(RuntimeError, match="build"):
            deferred.save(sess, "/nonexistent/x")
        deferred.build()  # what MonitoredTrainingSession's Scaffold does
        sess.run(w.initializer)
        assert deferred.save(sess, str(tmp_path / "d"), write_meta_graph=False) == str(tmp_path / "d")


def test_save_errors_follow_tf(tmp_path):
    w = af.Variable(1.0, name="w")
    saver = af.train.Saver()
    with af.Session() as sess:
        with pytest.raises(af.errors.FailedPreconditionError, match="Attempting to use uninitialized value w"):
            saver.save(sess, str(tmp_path / "m"))
        sess.run(w.initializer)
        with pytest.raises(ValueError, match="Parent directory of .*no/such/m doesn't exist, can't save."):
            saver.save(sess, str(tmp_path / "no" / "such" / "m"))
        with pytest.raises(ValueError, match="'latest_filename' collides with 'save_path'"):
            saver.save(sess, str(tmp_path / "checkpoint"))
        assert saver.save(sess, str(tmp_path / "new" / "m"), write_meta_graph=False)  # one level is created


def _save_two_variables(tmp_path):
    af.Variable([1.0, 2.0], name="a")
    af.Variable(np.int64(3), name="b")
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        return saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)


def _restore_fails_and_changes_nothing(prefix, variables, error, match):
    """The restore raises `error`, and every variable keeps its value (the restore is all or nothing)."""
    saver = af.train.Saver()
    with af.Session() as sess:
        sess.run(af.global_variables_initializer())
        before = sess.run(variables)
        with pytest.raises(error, match=match):
            saver.restore(sess, prefix)
        assert [np.asarray(x).tolist() for x in sess.run(variables)] == [np.asarray(x).tolist() for x in before]


def test_missing_key_raises_not_found_and_restores_nothing(tmp_path):
    prefix = _save_two_variables(tmp_path)
    graph = af.Graph()
    with graph.as_default():
        a = af.Variable([0.0, 0.0], name="a")
        w = af.Variable(5.0, name="w")
        _restore_fails_and_changes_nothing(
            prefix, [a, w], af.errors.NotFoundError,
            r"(?s)Restoring from checkpoint failed\. This is most likely due to a Variable name or other graph key "
            r"that is missing from the checkpoint.*Key w not found in checkpoint")


def test_mismatches_raise_invalid_argument_and_restore_nothing(tmp_path):
    prefix = _save_two_variables(tmp_path)
    for shape_or_dtype in ("shape", "dtype"):
        graph = af.Graph()
        with graph.as_default():
            a = af.Variable([0.0, 0.0, 0.0] if shape_or_dtype == "shape" else [0.0, 0.0], name="a")
            b = af.Variable(np.int64(0) if shape_or_dtype == "shape" else np.int32(0), name="b")
            match = r"lhs shape= \[3\] rhs shape= \[2\]" if shape_or_dtype == "shape" else \
                "tensor_name = b; expected dtype int32 does not equal original dtype int64"
            _restore_fails_and_changes_nothing(prefix, [a, b], af.errors.InvalidArgumentError,
                                               f"(?s)a mismatch between the current graph.*{match}")


def test_missing_checkpoint_raises_value_error(tmp_path):
    af.Variable(1.0, name="w")
    saver = af.train.Saver()
    with af.Session() as sess:
        with pytest.raises(ValueError, match="Can't load save_path when it is None."):
            saver.restore(sess, None)
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: .*nothing"):
            saver.restore(sess, str(tmp_path / "nothing"))
    with pytest.raises(af.errors.NotFoundError, match="Failed to find any matching files for .*nothing"):
        af.train.NewCheckpointReader(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        af.train.list_variables(str(tmp_path))


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))


def _truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def _overwrite(path, data):
    with open(path, "wb") as f:
        f.write(data)


CORRUPTIONS = {
    "flipped_data_byte": (".data-00000-of-00001", lambda p: _flip(p, os.path.getsize(p) - 20), "checksum mismatch"),
    "flipped_first_data_byte": (".data-00000-of-00001", lambda p: _flip(p, 0), "checksum mismatch"),
    "truncated_data": (".data-00000-of-00001", lambda p: _truncate(p, os.path.getsize(p) // 2), "truncated"),
    "empty_data": (".data-00000-of-00001", lambda p: _truncate(p, 0), "truncated"),
    "flipped_index_byte": (".index", lambda p: _flip(p, os.path.getsize(p) // 2), "not a valid checkpoint index"),
    "truncated_index": (".index", lambda p: _truncate(p, os.path.getsize(p) - 5), "not a valid checkpoint index"),
    "garbage_index": (".index", lambda p: _overwrite(p, b"garbage" * 10), "not a valid checkpoint index"),
    "json_but_not_an_index": (".index", lambda p: _overwrite(p, b'{"format": "x"}'), "not a valid checkpoint index"),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_corrupt_checkpoint_raises_data_loss_naming_the_file(tmp_path, corruption):
    suffix, damage, match = CORRUPTIONS[corruption]
    prefix = _save_two_variables(tmp_path)
    damage(prefix + suffix)
    graph = af.Graph()
    with graph.as_default():
        a = af.Variable([0.0, 0.0], name="a")
        b = af.Variable(np.int64(0), name="b")
        _restore_fails_and_changes_nothing(prefix, [a, b], af.errors.DataLossError,
                                           f"{prefix}{suffix}.*{match}")
    with pytest.raises(af.errors.DataLossError, match=match):
        [af.train.load_variable(prefix, name) for name in ("a", "b")]


# -- crashes and full disks -------------------------------------------------------------------------------------
def _check_consistent(directory) -> str | None:
    """Every checkpoint the state file names loads, with all its variables at one step (the one in its name)."""
    state = af.train.get_checkpoint_state(directory)
    if state is None:
        return None
    assert af.train.latest_checkpoint(directory) == state.model_checkpoint_path
    for path in state.all_model_checkpoint_paths:
        reader = af.train.NewCheckpointReader(path)
        step = int(reader.get_tensor("step"))
        assert (reader.get_tensor("big") == step).all(), path
        assert reader.get_tensor("tag").tolist() == [str(step).encode(), b"x" * (step % 7)], path
        assert (reader.get_tensor("half").astype(np.float32) == step % 256).all(), path
        if "model.ckpt-" in path:
            assert int(path.rsplit("-", 1)[1]) == step, path
    return state.model_checkpoint_path


def _interrupted_writes(directory) -> bool:
    """Whether a killed writer left a trace: a temporary file, or data files no index claims."""
    names = os.listdir(directory)
    temps = any(io_bundle._TMP_MARK in n for n in names)
    orphans = any(".data-" in n and n.split(".data-")[0] + ".index" not in names for n in names)
    return temps or orphans


def test_killed_writer_always_leaves_a_loadable_checkpoint(tmp_path):
    """A real process saving in a loop is SIGKILLed at random points, many times; after each kill the
    checkpoints the state file names all load and are consistent, and the latest restores in a Session."""
    writer = subprocess.Popen([sys.executable, os.path.join(HERE, "crash_writer.py"), str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(HERE)))
    rng = random.Random(20240611)
    kills, traces, latest_seen = 25, 0, set()
    graph = af.Graph()
    with graph.as_default():
        big = af.Variable(af.zeros([256, 256]), name="big")
        step = af.Variable(np.int64(-1), name="step")
        saver = af.train.Saver([big, step])
    try:
        assert writer.stdout.readline().strip() == "ready"
        for i in range(kills):
            writer.stdin.write(f"go {i * 1000}\n")
            writer.stdin.flush()
            pid = int(writer.stdout.readline())
            time.sleep(rng.uniform(0.005, 0.15))
            os.kill(pid, signal.SIGKILL)
            writer.stdin.write(f"wait {pid}\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "reaped"
            traces += _interrupted_writes(tmp_path)
            latest = _check_consistent(str(tmp_path))
            if latest is not None:
                latest_seen.add(latest)
                with af.Session(graph=graph) as sess:
                    saver.restore(sess, latest)
                    assert (sess.run(big) == sess.run(step)).all()
    finally:
        writer.kill()
        writer.wait()
    # Progress, not speed, is what the test needs (a loaded CI machine is slow): several kills left a
    # new latest checkpoint, and some landed in the middle of a save.
    assert len(latest_seen) >= 3, "the writer rarely got a checkpoint out before it was killed"
    assert traces > 0, "no kill landed in the middle of a save; the test proves nothing"


def _disk_full_setup(directory):
    w = af.Variable(af.zeros([10000]), name="w")  # 40 KB: one checkpoint fits the 64 KB disk, two do not
    saver = af.train.Saver()
    sess = af.Session()
    sess.run(w.initializer)
    sess.run(w.assign(af.ones([10000])))
    first = saver.save(sess, os.path.join(directory, "m"), global_step=1, write_meta_graph=False)
    sess.run(w.assign(af.fill([10000], 2.0)))
    return w, saver, sess, first


def _assert_previous_checkpoint_intact(directory, w, saver, sess, first):
    assert af.train.latest_checkpoint(directory) == first
    sess.run(w.assign(af.zeros([10000])))
    saver.restore(sess, first)
    assert (sess.run(w) == 1.0).all()
    assert not [n for n in os.listdir(directory) if io_bundle._TMP_MARK in n], os.listdir(directory)


def test_full_disk_fails_the_save_and_keeps_the_previous_checkpoint(tmp_path):
    """A real full disk: a 64 KB tmpfs (needs root and mount; skipped otherwise)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root; test_save_to_dev_full covers ENOSPC without it")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        w, saver, sess, first = _disk_full_setup(str(mount))
        with pytest.raises(af.errors.ResourceExhaustedError, match="No space left on device"):
            saver.save(sess, str(mount / "m"), global_step=2, write_meta_graph=False)
        _assert_previous_checkpoint_intact(str(mount), w, saver, sess, first)
        assert not af.train.checkpoint_exists(str(mount / "m-2"))
        sess.close()
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("failing", ["data", "index", "state"])
def test_save_to_dev_full_keeps_the_previous_checkpoint(tmp_path, monkeypatch, failing):
    """ENOSPC without root: the write of one file (data, index or the state file) goes to /dev/full."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    w, saver, sess, first = _disk_full_setup(str(tmp_path))
    real_open = open

    def open_full(path, mode="r", *args, **kwargs):
        name = os.path.basename(str(path))
        hit = {"data": ".data-" in name, "index": ".index" in name, "state": name.startswith(".checkpoint")}[failing]
        if mode == "xb" and hit:
            real_open(path, mode).close()  # the temporary file exists, so its clean-up is tested too
            return real_open("/dev/full", "wb")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(io_bundle, "open", open_full, raising=False)
    with pytest.raises(af.errors.ResourceExhaustedError, match="No space left on device"):
        saver.save(sess, str(tmp_path / "m"), global_step=2, write_meta_graph=False)
    monkeypatch.undo()
    _assert_previous_checkpoint_intact(str(tmp_path), w, saver, sess, first)
    assert af.train.checkpoint_exists(str(tmp_path / "m-2")) == (failing == "state")
    sess.close()
