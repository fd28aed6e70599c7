"""`af.train.export_meta_graph`, `import_meta_graph` and `write_graph`: a graph with its collections and
its Saver, in a JSON file (never pickle), so that a graph built and trained in one program can be
rebuilt in another and trained on.

A meta graph document (`P.meta` beside a checkpoint, written by `Saver.save` too) mirrors TF's
MetaGraphDef:

    {"format": "asyncflow.meta_graph/1", "meta_info_def": {...},
     "graph_def": <graph document, asyncflow/serialization.py>,
     "saver_def": {filename_tensor_name, save_tensor_name, restore_op_name, ...} or null,
     "collection_def": {key: [entry, ...]}}

A collection entry is the name of a graph element ("loss:0", "train_op") or a tagged value:
{"variable": {variable_name, initializer_name, snapshot_name, initial_value_name, trainable}} (TF's
VariableDef), {"int64": n}, {"float": x} or {"bytes": s}. Collections of other Python objects
(queue runners, control-flow contexts) are left out. `import_meta_graph` also reads a plain
variable name ("w:0", as `Saver.save` writes variable collections): an element made by a
VariableV2 op becomes a Variable again (its `w/Assign` initializer and `w/read` snapshot), one
Python object per variable shared by all the collections that hold it.

Importing adds the nodes (prefixed by `import_scope/` when given) to the default graph, refills
the collections, and returns a Saver built on the document's SaverDef (or a new Saver over the
imported variables when the document has none), so the classic TF1 flow works:

    saver = af.train.import_meta_graph(path + ".meta")
    saver.restore(sess, path)
    sess.run(af.get_collection("train_op")[0])
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

import orjson

from asyncflow.graph import Graph, GraphKeys, Tensor, get_default_graph
from asyncflow.serialization import import_graph_def
from asyncflow.train.meta_graph_export import META_GRAPH_FORMAT, export_meta_graph, write_graph
from asyncflow.train.saver import Saver, SaverDef
from asyncflow.variables import Variable, global_variables

_VARIABLE_OPS = ("VariableV2", "Variable")


# -- import --------------------------------------------------------------------------------------------
def read_meta_graph_file(filename: str) -> dict:
    """The meta graph document in `filename`; IOError if missing, ValueError if it is not one."""
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    try:
        meta = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"{filename}: not a meta graph (JSON) file: {e}") from None
    return _check_meta(meta, filename)


def _check_meta(meta: Any, where: str) -> dict:
    if not isinstance(meta, dict) or meta.get("format") != META_GRAPH_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ValueError(f"{where}: not a meta graph document (format {META_GRAPH_FORMAT!r} expected, got {found!r})")
    if not isinstance(meta.get("graph_def"), dict):
        raise ValueError(f"{where}: the meta graph has no graph_def document")
    collections = meta.get("collection_def") or {}
    if not isinstance(collections, dict) or not all(isinstance(v, list) for v in collections.values()):
        raise ValueError(f"{where}: collection_def must map keys to lists")
    return meta


def _prefixed(name: str, scope: str) -> str:
    return f"{scope}/{name}" if scope else name


class _CollectionReader:
    """Turns a document's collection entries back into graph elements, Variables and values."""

    def __init__(self, graph: Graph, scope: str, trainable_names: set[str]):
        self._graph = graph
        self._scope = scope
        self._trainable = trainable_names
        self._variables: dict[str, Variable] = {}

    def _has_op(self, name: str) -> bool:
        try:
            self._graph.as_graph_element(name, allow_tensor=False)
        except KeyError:
            return False
        return True

    def _variable(self, spec: dict[str, Any]) -> Variable:
        name = spec["variable_name"]
        if name not in self._variables:
            self._variables[name] = Variable(variable_def=spec, import_scope=self._scope or None)
        return self._variables[name]

    def entry(self, key: str, entry: Any) -> Any:
        if isinstance(entry, str):
            element = self._graph.as_graph_element(_prefixed(entry, self._scope))
            if isinstance(element, Tensor) and element.op.type in _VARIABLE_OPS and self._has_op(
                    f"{element.op.name}/Assign"):
                # A variable saved by name (Saver.save's collections): a Variable again.
                return self._variable({"variable_name": entry, "trainable": entry in self._trainable})
            return element
        if isinstance(entry, dict) and len(entry) == 1:
            (tag, value), = entry.items()
            if tag == "variable" and isinstance(value, dict) and isinstance(value.get("variable_name"), str):
                return self._variable(value)
            if tag == "int64" and type(value) is int:
                return value
            if tag == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if tag == "bytes" and isinstance(value, str):
                return value.encode("utf-8")
        raise ValueError(f"import_meta_graph: collection {key!r} has a malformed entry {entry!r}")


def _trainable_names(collections: dict[str, list]) -> set[str]:
    names = set()
    for entry in collections.get(GraphKeys.TRAINABLE_VARIABLES, []):
        if isinstance(entry, str):
            names.add(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("variable"), dict):
            names.add(entry["variable"].get("variable_name"))
    return names


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False, import_scope: str | None = None,
                      input_map: dict | None = None, restore_collections_predicate: Any = None,
                      **kwargs: Any) -> Saver | None:
    """Adds the meta graph's nodes to the default graph (names prefixed by `import_scope/`), refills its
    collections, and returns the Saver that restores a checkpoint into them (None if it has no variables)."""
    if kwargs:
        raise TypeError(f"import_meta_graph() got unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(meta_graph_or_file, dict):
        meta = _check_meta(meta_graph_or_file, "meta graph")
    else:
        meta = read_meta_graph_file(meta_graph_or_file)
    document = meta["graph_def"]
    if clear_devices:
        document = {**document, "node": [{**node, "device": ""} for node in document.get("node", [])]}
    graph = get_default_graph()
    scope = graph.unique_name(import_scope, mark_as_used=False) if import_scope else ""
    import_graph_def(document, input_map=input_map, name=scope)
    collections = meta.get("collection_def") or {}
    reader = _CollectionReader(graph, scope, _trainable_names(collections))
    for key in sorted(collections):
        if restore_collections_predicate is not None and not restore_collections_predicate(key):
            continue
        for entry in collections[key]:
            graph.add_to_collection(key, reader.entry(key, entry))
    return _saver_for(meta.get("saver_def"), scope)


def _saver_for(saver_def: Any, scope: str) -> Saver | None:
    if saver_def:
        if not isinstance(saver_def, dict):
            raise ValueError(f"import_meta_graph: saver_def must be an object, got {saver_def!r}")
        known = {f.name for f in fields(SaverDef)}
        values = {k: v for k, v in saver_def.items() if k in known}
        for name_field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            if values.get(name_field):
                values[name_field] = _prefixed(values[name_field], scope)
        return Saver(saver_def=SaverDef(**values))
    if any(v.name.startswith(f"{scope}/") or not scope for v in global_variables()):
        return Saver()
    return None


__all__ = ["export_meta_graph", "import_meta_graph", "write_graph"]
