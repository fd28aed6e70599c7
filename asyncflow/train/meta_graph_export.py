"""Writing meta graph documents: `af.train.export_meta_graph` and `write_graph`, and what `Saver.save` writes
beside a checkpoint (`P.meta`). The format, and the reader that rebuilds a graph from it, are in
asyncflow/train/meta_graph.py; this half sits below the Saver so that the Saver can write full documents.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import orjson

from asyncflow.graph import Graph, Operation, Tensor, get_default_graph
from asyncflow.ops.io_bundle import write_file_atomic
from asyncflow.serialization import graph_to_document
from asyncflow.variables import Variable

META_GRAPH_FORMAT = "asyncflow.meta_graph/1"


# -- export --------------------------------------------------------------------------------------------
def _variable_def(v: Variable) -> dict[str, Any]:
    return {"variable_name": v.name, "initializer_name": v.initializer.name, "snapshot_name": v.value().name,
            "initial_value_name": v.initial_value.name, "trainable": bool(v.trainable)}


def _collection_entries(items: list[Any]) -> list[Any]:
    """What of a collection a document can hold: graph elements by name, variables, numbers, strings."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, Variable):
            out.append({"variable": _variable_def(item)})
        elif isinstance(item, (Tensor, Operation)):
            out.append(item.name)
        elif isinstance(item, bool):
            continue  # TF has no bool list in a CollectionDef either
        elif isinstance(item, int):
            out.append({"int64": item})
        elif isinstance(item, float):
            out.append({"float": item})
        elif isinstance(item, (str, bytes)):
            out.append({"bytes": item.decode("utf-8", "replace") if isinstance(item, bytes) else item})
    return out


def _saver_def_dict(saver_def: Any) -> dict[str, Any] | None:
    if saver_def is None:
        return None
    if dataclasses.is_dataclass(saver_def) and not isinstance(saver_def, type):  # a SaverDef
        return dataclasses.asdict(saver_def)
    if isinstance(saver_def, dict):
        return dict(saver_def)
    raise TypeError(f"export_meta_graph: saver_def must be a SaverDef or a dict, got {type(saver_def).__name__}")


def export_meta_graph(filename: str | None = None, meta_info_def: dict | None = None, graph_def: dict | None = None,
                      saver_def: Any = None, collection_list: list[str] | None = None, as_text: bool = False,
                      graph: Graph | None = None, export_scope: str | None = None, clear_devices: bool = False,
                      clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                      save_debug_info: bool = False, **kwargs: Any) -> dict:
    """The meta graph document of `graph` (the default graph), written to `filename` when given (JSON,
    indented with `as_text`, written to a temporary file and renamed). `strip_default_attrs` and
    `save_debug_info` are accepted and have no effect."""
    del strip_default_attrs, save_debug_info
    if kwargs:
        raise TypeError(f"export_meta_graph() got unexpected keyword arguments {sorted(kwargs)}")
    if export_scope:
        raise NotImplementedError("export_meta_graph: export_scope is not supported; export the whole graph")
    if clear_extraneous_savers:
        raise NotImplementedError("export_meta_graph: clear_extraneous_savers is not supported")
    graph = graph if graph is not None else get_default_graph()
    document = graph_def if graph_def is not None else graph_to_document(graph)
    if clear_devices:
        document = {**document, "node": [{**node, "device": ""} for node in document["node"]]}
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    collections = {}
    for key in keys:
        entries = _collection_entries(graph.get_collection(key))
        if entries:
            collections[key] = entries
    meta = {"format": META_GRAPH_FORMAT, "meta_info_def": dict(meta_info_def or {}), "graph_def": document,
            "saver_def": _saver_def_dict(saver_def), "collection_def": collections}
    if filename:
        option = orjson.OPT_INDENT_2 if as_text else 0
        write_file_atomic(os.fspath(filename), [orjson.dumps(meta, option=option)])
    return meta


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Writes the graph document (asyncflow's JSON graph format, NOT a protobuf GraphDef) to `logdir/name`,
    atomically (a temporary file renamed into place), creating `logdir`; returns the path."""
    if isinstance(graph_or_graph_def, Graph):
        document = graph_to_document(graph_or_graph_def)
    elif isinstance(graph_or_graph_def, dict):
        document = graph_or_graph_def
    else:
        raise TypeError(f"write_graph: expected a Graph or a graph document, got {type(graph_or_graph_def).__name__}")
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    write_file_atomic(path, [orjson.dumps(document, option=orjson.OPT_INDENT_2 if as_text else 0)])
    return path


__all__ = ["export_meta_graph", "write_graph"]
