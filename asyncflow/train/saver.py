"""`af.train.Saver`: checkpoints as ops in the graph, with TF1's names, semantics and errors.

A Saver builds its ops once (at construction, or at `build()` with `defer_build=True`) under a
`save/` name scope, as TF1 names them:

  save/filename/input, save/filename   the default filename ("model"), a PlaceholderWithDefault
  save/Const                           the filename tensor that `save` and `restore` feed
  save/SaveV2                          (+ /tensor_names, /shape_and_slices) reading each variable
  save/control_dependency              the filename, once SaveV2 ran: what `save` fetches
  save/RestoreV2, save/Assign, save/Assign_1, ..., save/restore_all

Checkpoint keys are the variables' op names (`layer/w`), or the keys of a `var_list` dict,
sorted. With `sharded=True` the variables are grouped by device, and each group gets its own
ShardedFilename, SaveV2 (on its device's CPU) and RestoreV2, so in a distributed run every
parameter server writes its own variables' shard into `P_temp/part-0000S-of-0000N`;
MergeV2Checkpoints then moves the shards' data files to `P.data-0000S-of-0000N` and commits one
index, and `save` fetches `save/Identity`.

`save` runs the save op with the filename fed, writes the meta graph, records the checkpoint in
the directory's `checkpoint` state file (replaced atomically, only once the checkpoint's index is
in place), then deletes the checkpoints beyond `max_to_keep`. `restore` runs `save/restore_all`;
RestoreV2 reads and checks every tensor before any Assign runs, so a failed restore leaves the
variables as they were. The file format is in `asyncflow/ops/io_bundle.py`; the meta graph
`P.meta` is a JSON meta graph document (asyncflow/train/meta_graph_export.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncflow import errors
from asyncflow.device import DeviceSpec, canonical
from asyncflow.graph import (
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    device,
    get_collection,
    name_scope,
)
from asyncflow.ops import io, state
from asyncflow.ops.array import constant, identity, placeholder_with_default, reshape
from asyncflow.ops.array import shape as array_shape
from asyncflow.ops.control import group
from asyncflow.train.checkpoint_management import *  # noqa: F403 - re-exported through __all__
from asyncflow.train.checkpoint_management import __all__ as _management_all
from asyncflow.train.checkpoint_management import (
    checkpoint_exists,
    get_checkpoint_mtimes,
    remove_checkpoint,
    update_checkpoint_state,
)
from asyncflow.train.meta_graph_export import export_meta_graph
from asyncflow.variables import Variable, global_variables

_log = logging.getLogger("asyncflow.train")


@dataclass
class SaverDef:
    """TF's SaverDef: where a Saver's ops are, and its checkpoint policy."""

    LEGACY = 0
    V1 = 1
    V2 = 2

    filename_tensor_name: str = ""
    save_tensor_name: str = ""
    restore_op_name: str = ""
    max_to_keep: int = 0
    sharded: bool = False
    keep_checkpoint_every_n_hours: float = 0.0
    version: int = 2


# -- what to save ------------------------------------------------------------------------------------------
def _variable_ref(var: Any, name: str | None = None) -> Tensor:
    """The ref tensor of a Variable (or of a VariableV2 op's output); TypeError for anything else."""
    ref = var._ref() if isinstance(var, Variable) else var
    if not isinstance(ref, Tensor) or ref.op.type not in ("VariableV2", "Variable"):
        if name is not None:
            raise TypeError(f"names_to_saveables must be a dict mapping string names to Tensors/Variables. Not a "
                            f"variable: {var!r}")
        raise TypeError(f"Variable to save is not a Variable: {var!r}")
    return ref


def _saveables(var_list: Any) -> list[tuple[str, Tensor]]:
    """(checkpoint key, variable ref) pairs sorted by key, checked as TF's `validate_and_slice_inputs`."""
    if isinstance(var_list, dict):
        named = [(k, _variable_ref(v, k)) for k, v in var_list.items()]
    else:
        if not isinstance(var_list, (list, tuple, set)):
            raise TypeError(f"Variables to save should be passed in a dict or a list: {var_list!r}")
        named = []
        seen_names: set[str] = set()
        shards = []  # a PartitionedVariable saves as its shards, each under its own name
        for var in var_list:
            shards.extend(list(var) if hasattr(var, "_get_variable_list") else [var])
        for var in sorted(shards, key=lambda v: v.name):
            ref = _variable_ref(var)
            if ref.op.name in seen_names:
                raise ValueError(f"At least two variables have the same name: {ref.op.name}")
            seen_names.add(ref.op.name)
            named.append((ref.op.name, ref))
    out: list[tuple[str, Tensor]] = []
    seen_ops: set[Operation] = set()
    for key, ref in sorted(named, key=lambda kv: kv[0]):
        if not isinstance(key, str):
            raise TypeError(f"checkpoint keys must be strings, got {key!r}")
        if ref.op in seen_ops:
            raise ValueError(f"The same saveable will be restored with two names: {key}")
        seen_ops.add(ref.op)
        out.append((key, ref))
    return out


def _cpu0(device_name: str) -> str:
    return DeviceSpec.from_string(device_name).merge(DeviceSpec(device_type="CPU", device_index=0)).to_string()


def _group_by_devices(saveables: list[tuple[str, Tensor]]) -> list[tuple[str, list[tuple[str, Tensor]]]]:
    per_device: dict[str, list[tuple[str, Tensor]]] = {}
    for key, ref in saveables:
        per_device.setdefault(canonical(ref.device), []).append((key, ref))
    return sorted(per_device.items())


# -- building the ops ---------------------------------------------------------------------------------------
def _add_save_ops(filename: Tensor, saveables: list[tuple[str, Tensor]]) -> Tensor:
    keys = [k for k, _ in saveables]
    save = io.save_v2(filename, keys, [""] * len(keys), [ref for _, ref in saveables], name="SaveV2")
    with colocate_with(filename), control_dependencies([save]):
        return identity(filename, name="control_dependency")


def _add_restore_ops(filename: Tensor, saveables: list[tuple[str, Tensor]], reshape_values: bool, name: str,
                     restore_device: str | None = None) -> Operation:
    keys = [k for k, _ in saveables]
    attrs: dict[str, Any] = {"dtypes": [ref.dtype.base_dtype for _, ref in saveables]}
    if not reshape_values:  # RestoreV2 checks every shape before any Assign runs (all or nothing)
        attrs["_expected_shapes"] = [ref.shape if ref.shape.is_fully_defined() else None for _, ref in saveables]
    with device(restore_device) if restore_device is not None else contextlib.nullcontext():
        restored = io.restore_v2(filename, keys, [""] * len(keys), name="RestoreV2", **attrs)
    assigns = []
    for (_, ref), value in zip(saveables, restored):
        if reshape_values:
            value = reshape(value, ref.shape.as_list() if ref.shape.is_fully_defined() else _shape_of(ref))
        with colocate_with(ref.op):
            assigns.append(state.assign_op(ref, value, validate_shape=not reshape_values and
                                           ref.shape.is_fully_defined(), use_locking=True, name="Assign"))
    return group(*assigns, name=name)


def _shape_of(ref: Tensor) -> Tensor:
    return array_shape(ref)


def _add_sharded_save_ops(filename: Tensor, per_device: list) -> Tensor:
    # TF picks ".part" for s3:// prefixes and "_temp/part" otherwise; asyncflow writes local files.
    suffix = constant("_temp/part", name="Const")
    tmp_prefix = io.string_join([filename, suffix])
    num_shards = constant(len(per_device), name="num_shards")
    prefixes, saves = [], []
    last_device = ""
    for shard, (dev, saveables) in enumerate(per_device):
        last_device = dev
        with device(_cpu0(dev)):
            prefix = io.sharded_filename(tmp_prefix, shard, num_shards, name="ShardedFilename")
            prefixes.append(prefix)
            saves.append(_add_save_ops(prefix, saveables))
    with control_dependencies([s.op for s in saves]), device(_cpu0(last_device)):
        merge = io.merge_v2_checkpoints(prefixes, filename, delete_old_dirs=True, name="MergeV2Checkpoints")
        with control_dependencies([merge]):
            return identity(filename)


def _add_sharded_restore_ops(filename: Tensor, per_device: list, reshape_values: bool) -> Operation:
    restores = []
    for dev, saveables in per_device:
        with device(dev):
            restores.append(_add_restore_ops(filename, saveables, reshape_values, "restore_shard", _cpu0(dev)))
    return group(*restores, name="restore_all")


def _build(saveables: list[tuple[str, Tensor]], name: str | None, reshape_values: bool, sharded: bool,
           filename: str | None, max_to_keep: int, keep_hours: float) -> SaverDef:
    graph = saveables[0][1].graph
    with graph.as_default(), name_scope(name, "save", [ref.op for _, ref in saveables]):
        filename_tensor = placeholder_with_default(filename or "model", shape=[], name="filename")
        filename_tensor = placeholder_with_default(filename_tensor, shape=[], name="Const")
        if sharded:
            per_device = _group_by_devices(saveables)
            save_tensor = _add_sharded_save_ops(filename_tensor, per_device)
            restore_op = _add_sharded_restore_ops(filename_tensor, per_device, reshape_values)
        else:
            save_tensor = _add_save_ops(filename_tensor, saveables)
            restore_op = _add_restore_ops(filename_tensor, saveables, reshape_values, "restore_all")
    return SaverDef(filename_tensor.name, save_tensor.name, restore_op.name, max_to_keep or 0, sharded,
                    keep_hours, SaverDef.V2)


# -- the Saver ------------------------------------------------------------------------------------------------
class Saver:
    """`af.train.Saver`: saves and restores variables through ops in the graph (see the module docstring)."""

    def __init__(self, var_list: Any = None, reshape: bool = False, sharded: bool = False, max_to_keep: int = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: str | None = None,
                 restore_sequentially: bool = False, saver_def: SaverDef | None = None, builder: Any = None,
                 defer_build: bool = False, allow_empty: bool = False, write_version: int = SaverDef.V2,
                 pad_step_number: bool = False, save_relative_paths: bool = False, filename: str | None = None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either set defer_build=False "
                             "or var_list=None.")
        if builder is not None:
            raise NotImplementedError("asyncflow's Saver builds its own ops; a custom `builder` is not supported")
        if write_version != SaverDef.V2:
            raise ValueError(f"asyncflow writes V2 checkpoints only (write_version={SaverDef.V2}), got {write_version}")
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially  # one RestoreV2 reads all tensors either way
        self.saver_def = saver_def
        self._allow_empty = allow_empty
        self._is_built = False
        self._is_empty: bool | None = None
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()
        if self.saver_def is not None:
            self._check_saver_def()

    def build(self) -> None:
        """Builds the save and restore ops (once)."""
        if self._is_built:
            return
        self._is_built = True
        if self.saver_def is not None:
            self._is_empty = False
            return
        var_list = self._var_list
        if var_list is None:
            var_list = global_variables() + get_collection("saveable_objects")
        saveables = _saveables(var_list)
        if not saveables:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        self._is_empty = False
        self.saver_def = _build(saveables, self._name, self._reshape, self._sharded, self._filename,
                                self._max_to_keep, self._keep_checkpoint_every_n_hours)

    def _check_saver_def(self) -> None:
        for field_name in ("save_tensor_name", "restore_op_name"):
            if not getattr(self.saver_def, field_name):
                raise ValueError(f"saver_def must specify the {field_name}: {self.saver_def}")
        self._sharded = self.saver_def.sharded
        self._max_to_keep = self.saver_def.max_to_keep

    def as_saver_def(self) -> SaverDef | None:
        return self.saver_def

    # -- the checkpoints this Saver keeps -------------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        if not isinstance(last_checkpoints, list):
            raise TypeError("last_checkpoints must be a list")
        self._last_checkpoints = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple[str, float]]) -> None:
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list")
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Takes over the checkpoints a previous run kept (those still on disk), with their times."""
        found = []
        for path in checkpoint_paths:
            mtimes = get_checkpoint_mtimes([path])
            if mtimes:
                found.append((path, mtimes[0]))
        self.set_last_checkpoints_with_time(found)

    def _record_last_checkpoint(self, path: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        while self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            if saved_at > self._next_checkpoint_time:  # kept for good: one per keep_checkpoint_every_n_hours
                self._next_checkpoint_time += self._keep_checkpoint_every_n_hours * 3600
                continue
            try:
                remove_checkpoint(path, SaverDef.V2, meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: %s", e)

    # -- save and restore ------------------------------------------------------------------------------------
    def save(self, sess: Any, save_path: str, global_step: Any = None, latest_filename: str | None = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True, write_state: bool = True,
             strip_default_attrs: bool = False, save_debug_info: bool = False) -> str | None:
        """Saves the variables to `save_path` (`save_path-STEP` with a global step); returns that prefix."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = int(sess.run(global_step))
            step = f"{int(global_step):08d}" if self._pad_step_number else str(int(global_step))
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not callable(getattr(sess, "run", None)):
            raise TypeError(f"'sess' must be a Session; {sess!r}")
        save_dir = os.path.dirname(save_path)
        model_checkpoint_path = None
        if not self._is_empty:
            try:
                out = sess.run(self.saver_def.save_tensor_name,
                               {self.saver_def.filename_tensor_name: checkpoint_file})
                model_checkpoint_path = os.fsdecode(out) if isinstance(out, bytes) else str(out)
                if write_state:
                    self._record_last_checkpoint(model_checkpoint_path)
                    update_checkpoint_state(save_dir, model_checkpoint_path, self.last_checkpoints, latest_filename,
                                            save_relative_paths=self._save_relative_paths)
                    self._maybe_delete_old_checkpoints(meta_graph_suffix)
            except (errors.FailedPreconditionError, errors.NotFoundError) as exc:
                if not os.path.isdir(save_dir or "."):
                    raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.") from exc
                raise
        if write_meta_graph:
            self.export_meta_graph(f"{checkpoint_file}.{meta_graph_suffix}", graph=getattr(sess, "graph", None))
        return model_checkpoint_path

    def restore(self, sess: Any, save_path: str) -> None:
        """Restores the variables from the checkpoint `save_path`; all of them, or none on error."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _log.info("Restoring parameters from %s", save_path)
        try:
            sess.run(self.saver_def.restore_op_name, {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as err:
            raise _wrap_restore_error(err, "a Variable name or other graph key that is missing") from err
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error(err, "a mismatch between the current graph and the graph") from err

    def export_meta_graph(self, filename: str | None = None, collection_list: list[str] | None = None,
                          as_text: bool = False, export_scope: str | None = None, clear_devices: bool = False,
                          clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                          save_debug_info: bool = False, graph: Any = None) -> dict:
        """The meta graph document (graph, SaverDef, collections), written to `filename` when given: see
        asyncflow/train/meta_graph_export.py."""
        return export_meta_graph(filename, saver_def=self.saver_def, collection_list=collection_list, as_text=as_text,
                                 graph=graph, export_scope=export_scope, clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)


def _wrap_restore_error(err: errors.OpError, cause: str) -> errors.OpError:
    message = (f"Restoring from checkpoint failed. This is most likely due to {cause} from the checkpoint. Please "
               f"ensure that you have not altered the graph expected based on the checkpoint. Original error:\n\n"
               f"{err.message}")
    return type(err)(err.node_def, err.op, message)


__all__ = ["Saver", "SaverDef", *_management_all]
