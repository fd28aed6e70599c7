"""The `checkpoint` state file and the checkpoint look-ups of tf.train: `latest_checkpoint`,
`get_checkpoint_state`, `update_checkpoint_state`, `checkpoint_exists`, `get_checkpoint_mtimes`,
`remove_checkpoint`, and the reader side (`NewCheckpointReader`, `load_checkpoint`,
`list_variables`, `load_variable`).

The state file is TF's CheckpointState text format, one field per line, strings C-escaped:

    model_checkpoint_path: "/ckpt/model.ckpt-200"
    all_model_checkpoint_paths: "/ckpt/model.ckpt-100"
    all_model_checkpoint_paths: "/ckpt/model.ckpt-200"

Relative paths (`save_relative_paths=True`) are relative to the file's directory. The file is
replaced atomically (temporary file, fsync, rename), so it always names complete checkpoints.
"""

from __future__ import annotations

import glob
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.ops.io_bundle import BundleReader, remove_stale_files, write_file_atomic

_log = logging.getLogger("asyncflow.train")


@dataclass
class CheckpointState:
    """TF's CheckpointState: the newest checkpoint and the ones still kept, oldest first."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float = 0.0


# -- the text format ------------------------------------------------------------------------------------
_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
            ord("\\"): "\\\\"}


def _c_escape(text: str) -> str:
    """Text proto string escaping, as TF's CEscape: bytes outside printable ASCII become octal."""
    out = []
    for b in os.fsencode(text):
        if b in _ESCAPES:
            out.append(_ESCAPES[b])
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


_UNESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.S)
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b'"': b'"', b"'": b"'", b"\\": b"\\", b"a": b"\a",
           b"b": b"\b", b"f": b"\f", b"v": b"\v", b"?": b"?"}


def _c_unescape(raw: bytes, where: str) -> str:
    def sub(m: re.Match) -> bytes:
        if m.group(1):
            return bytes([int(m.group(1), 8) & 0xFF])
        if m.group(2):
            return bytes([int(m.group(2), 16)])
        if m.group(3) in _SIMPLE:
            return _SIMPLE[m.group(3)]
        raise ValueError(f"{where}: bad escape \\{m.group(3).decode(errors='replace')}")

    return os.fsdecode(_UNESCAPE.sub(sub, raw))


def state_to_text(state: CheckpointState) -> str:
    lines = [f'model_checkpoint_path: "{_c_escape(state.model_checkpoint_path)}"']
    lines += [f'all_model_checkpoint_paths: "{_c_escape(p)}"' for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"


_FIELD = re.compile(rb'^\s*(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([-+0-9.eE]+|inf|nan))\s*$', re.S)


def state_from_text(data: bytes, where: str) -> CheckpointState:
    """Parses the state file; ValueError naming `where` on anything it does not understand."""
    state = CheckpointState()
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith(b"#"):
            continue
        m = _FIELD.match(line)
        if not m:
            raise ValueError(f"{where}:{number}: cannot parse {line[:80]!r}")
        key, text, num = m.group(1).decode(), m.group(2), m.group(3)
        if key in ("model_checkpoint_path", "all_model_checkpoint_paths") and text is not None:
            value = _c_unescape(text, f"{where}:{number}")
            if key == "model_checkpoint_path":
                state.model_checkpoint_path = value
            else:
                state.all_model_checkpoint_paths.append(value)
        elif key in ("all_model_checkpoint_timestamps", "last_preserved_timestamp") and num is not None:
            if key == "last_preserved_timestamp":
                state.last_preserved_timestamp = float(num)
            else:
                state.all_model_checkpoint_timestamps.append(float(num))
        else:
            raise ValueError(f"{where}:{number}: unexpected field {line[:80]!r}")
    return state


# -- the state file -----------------------------------------------------------------------------------------
def _state_path(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths: list[str] | None = None,
                                    all_model_checkpoint_timestamps: list[float] | None = None,
                                    last_preserved_timestamp: float | None = None) -> CheckpointState:
    """The state naming `model_checkpoint_path` last. As TF1: when `save_dir` is relative, relative paths
    (which are relative to the working directory, like `save_dir`) are rewritten relative to `save_dir`,
    since that is what a reader joins them to; absolute paths stay as given."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(save_dir):
        def under_dir(p: str) -> str:
            return p if os.path.isabs(p) else os.path.relpath(p, save_dir or ".")

        model_checkpoint_path, paths = under_dir(model_checkpoint_path), [under_dir(p) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, list(all_model_checkpoint_timestamps or []),
                           last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: list[str] | None = None,
                            latest_filename: str | None = None,
                            all_model_checkpoint_timestamps: list[float] | None = None,
                            last_preserved_timestamp: float | None = None,
                            save_relative_paths: bool = False) -> None:
    """Replaces `save_dir`'s state file atomically (`save_relative_paths` as the Saver's flag)."""
    path = _state_path(save_dir, latest_filename)
    if os.path.abspath(path) == os.path.abspath(model_checkpoint_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           f"Please use a different save path.")
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        def rel(p: str) -> str:
            return os.path.relpath(p, save_dir or ".") if os.path.isabs(p) else p

        model_checkpoint_path, paths = rel(model_checkpoint_path), [rel(p) for p in paths]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, paths,
                                            all_model_checkpoint_timestamps, last_preserved_timestamp)
    write_file_atomic(path, [state_to_text(state).encode()])


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None) -> CheckpointState | None:
    """The directory's CheckpointState (relative paths made absolute), or None without a readable one."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path, "rb") as f:
            state = state_from_text(f.read(), path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # TF ignores an unreadable state file, with a warning
        _log.warning("%s: %s", type(e).__name__, e)
        _log.warning("%s: Checkpoint ignored", path)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}")
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a (V2) checkpoint with this prefix exists: its `.index` file (a glob pattern, as TF)."""
    index = os.fspath(checkpoint_prefix) + ".index"
    return os.path.exists(index) or bool(glob.glob(index))


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint the state file names, or None (also when its files are gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the checkpoints' index files (missing ones skipped)."""
    out = []
    for prefix in checkpoint_prefixes:
        try:
            out.append(os.path.getmtime(prefix + ".index"))
        except OSError:
            continue
    return out


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: int = 2,
                      meta_graph_suffix: str = "meta") -> None:
    """Deletes a checkpoint's files: the index first, so what remains is never half a checkpoint."""
    for path in [checkpoint_prefix + ".index", f"{checkpoint_prefix}.{meta_graph_suffix}"]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    remove_stale_files(checkpoint_prefix)


# -- reading checkpoints outside a graph ----------------------------------------------------------------------
class CheckpointReader:
    """`NewCheckpointReader(prefix)`: the tensors of a checkpoint, by name, as numpy arrays."""

    def __init__(self, filepattern: str):
        self._reader = BundleReader(os.fspath(filepattern))

    def has_tensor(self, tensor_str: str) -> bool:
        return tensor_str in self._reader.entries

    def get_tensor(self, tensor_str: str) -> Any:
        if tensor_str not in self._reader.entries:
            raise errors.NotFoundError(None, None, f"Key {tensor_str} not found in checkpoint")
        value = np.array(self._reader.read_many([tensor_str])[0])
        return value[()] if value.ndim == 0 else value

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(e.shape) for name, e in self._reader.entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        return {name: e.dtype for name, e in self._reader.entries.items()}

    def debug_string(self) -> bytes:
        return "".join(f"{n} ({e.dtype.name}) {list(e.shape)}\n"
                       for n, e in sorted(self._reader.entries.items())).encode()


NewCheckpointReader = CheckpointReader


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader for a checkpoint prefix, or for the latest checkpoint of a directory."""
    filename = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(filename):
        filename = latest_checkpoint(filename)
        if filename is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
    return CheckpointReader(filename)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor in the checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def load_variable(ckpt_dir_or_file: str, name: str) -> Any:
    """The value of tensor `name` (a trailing ':0' is ignored) in the checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


__all__ = [
    "latest_checkpoint", "get_checkpoint_state", "update_checkpoint_state", "generate_checkpoint_state_proto",
    "checkpoint_exists", "get_checkpoint_mtimes", "remove_checkpoint", "NewCheckpointReader", "load_checkpoint",
    "list_variables", "load_variable", "CheckpointState",
]
