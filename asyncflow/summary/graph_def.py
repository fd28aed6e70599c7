"""asyncflow's graph documents as TF `GraphDef` protos, and RunMetadata as TF's, for TensorBoard.

TensorBoard's graph tab reads a `GraphDef` (TensorBoard's own `graph_pb2`): per node its name, op
type, inputs (`x`, `x:1`, `^ctrl`), device and attrs. `graph_def_proto` converts a graph document
(`Graph.as_graph_def()`, see asyncflow/serialization.py) node by node: dtypes, shapes, numbers,
strings and lists become `AttrValue`s; a tensor attr (a `Const`'s `value`) keeps its dtype and shape,
and its values when it has at most `MAX_CONST_ELEMENTS` elements, so event files stay small; each
node gets TF's `_output_shapes` (what `as_graph_def(add_shapes=True)` adds, and what the graph tab
shows on edges). `run_metadata_proto` turns an `af.RunMetadata` (whatever its step stats hold: TF's
`dev_stats`/`node_stats` shape, or the flat per-node records) into TF's `RunMetadata`.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Graph
from asyncflow.session import LOCAL_DEVICE

MAX_CONST_ELEMENTS = 1024
_REF_OFFSET = 100  # TF's DT_FLOAT_REF is DT_FLOAT + 100, and so on


def _pb() -> Any:
    from tensorboard.compat.proto import attr_value_pb2, config_pb2, graph_pb2, meta_graph_pb2

    return attr_value_pb2, graph_pb2, config_pb2, meta_graph_pb2


def _dtype_enum(name: str) -> int:
    if name.endswith("_ref"):
        return dtypes.as_dtype(name[:-4]).as_datatype_enum + _REF_OFFSET
    return dtypes.as_dtype(name).as_datatype_enum


def _shape_into(proto: Any, dims: list | None) -> None:
    if dims is None:
        proto.unknown_rank = True
        return
    for d in dims:
        proto.dim.add(size=-1 if d is None else d)


def _float(v: Any) -> float:
    return float(v) if not isinstance(v, str) else (math.nan if v.startswith("nan") else float(v))


def _bytes(tag: str, v: Any) -> bytes:
    return v.encode("utf-8") if tag in ("str", "bytes") else base64.b64decode(v)


class _AttrReader:
    """Reads a document's tagged attr values into `AttrValue` protos (None: left out of the GraphDef)."""

    def __init__(self, buffers: Any):
        self._buffers = buffers if isinstance(buffers, list) else []

    def tensor_into(self, proto: Any, spec: dict) -> None:
        from asyncflow.serialization import decode_tensor

        proto.dtype = _dtype_enum(spec["dtype"])
        _shape_into(proto.tensor_shape, spec["shape"])
        size = int(np.prod(spec["shape"])) if spec["shape"] else 1
        index = spec.get("buffer")
        if size > MAX_CONST_ELEMENTS or not (isinstance(index, int) and 0 <= index < len(self._buffers)):
            return  # large values stay out of the event file: dtype and shape say enough for the graph tab
        arr = decode_tensor(base64.b64decode(self._buffers[index]))
        if arr.dtype == object:
            proto.string_val.extend(arr.reshape(-1).tolist())
        else:
            proto.tensor_content = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()

    def value(self, attr_value_pb2: Any, tagged: dict) -> Any:
        ((tag, v),) = tagged.items()
        out = attr_value_pb2.AttrValue()
        if tag == "dtype":
            out.type = _dtype_enum(v)
        elif tag == "shape":
            _shape_into(out.shape, v)
        elif tag == "bool":
            out.b = v
        elif tag == "int":
            out.i = int(v)
        elif tag == "float":
            out.f = _float(v)
        elif tag in ("str", "bytes", "bytes_b64"):
            out.s = _bytes(tag, v)
        elif tag in ("tensor", "scalar"):
            self.tensor_into(out.tensor, v)
        elif tag in ("list", "tuple"):
            return self._list(attr_value_pb2, v, out)
        else:  # {"none": null}: TF has no such attr value
            return None
        return out

    def _list(self, attr_value_pb2: Any, items: list, out: Any) -> Any:
        out.list.SetInParent()
        for item in items:
            ((tag, v),) = item.items()
            if tag == "dtype":
                out.list.type.append(_dtype_enum(v))
            elif tag == "shape":
                _shape_into(out.list.shape.add(), v)
            elif tag == "bool":
                out.list.b.append(v)
            elif tag == "int":
                out.list.i.append(int(v))
            elif tag == "float":
                out.list.f.append(_float(v))
            elif tag in ("str", "bytes", "bytes_b64"):
                out.list.s.append(_bytes(tag, v))
            elif tag in ("tensor", "scalar"):
                self.tensor_into(out.list.tensor.add(), v)
            else:  # nested lists and Nones have no AttrValue form
                return None
        return out


def graph_def_proto(graph: Graph | dict) -> Any:
    """A TF `GraphDef` (TensorBoard's proto) for an `af.Graph` or a graph document."""
    attr_value_pb2, graph_pb2, _, _ = _pb()
    document = graph.as_graph_def() if isinstance(graph, Graph) else graph
    if not isinstance(document, dict) or not isinstance(document.get("node"), list):
        raise TypeError(f"expected an af.Graph or a graph document (a dict with 'node'), got {type(graph).__name__}")
    reader = _AttrReader(document.get("buffers"))
    out = graph_pb2.GraphDef()
    out.versions.producer = int(document.get("versions", {}).get("producer", 0))
    for node in document["node"]:
        proto = out.node.add(name=node["name"], op=node["op"], device=node.get("device") or "")
        proto.input.extend(node.get("input", []))
        for key, tagged in node.get("attr", {}).items():
            value = reader.value(attr_value_pb2, tagged)
            if value is not None:
                proto.attr[key].CopyFrom(value)
        outputs = node.get("output", [])
        if outputs:
            shapes = proto.attr["_output_shapes"].list
            for spec in outputs:
                _shape_into(shapes.shape.add(), spec.get("shape"))
    return out


def meta_graph_proto(graph_def: Any) -> Any:
    """A `MetaGraphDef` holding `graph_def` (what TF1's FileWriter writes beside the graph)."""
    _, _, _, meta_graph_pb2 = _pb()
    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    return meta


# -- RunMetadata ----------------------------------------------------------------------------------------
def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _fill(message: Any, obj: Any) -> None:
    """Copies `obj` (a proto of the same shape, a dict or an object with the fields as attributes)."""
    if hasattr(obj, "SerializeToString"):
        message.MergeFromString(obj.SerializeToString())
        return
    message.SetInParent()
    for field in message.DESCRIPTOR.fields:
        value = _get(obj, field.name)
        if value is None:
            continue
        repeated = field.label == field.LABEL_REPEATED
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            continue  # maps (allocator names, ...) are not needed by the timeline or TensorBoard
        if field.message_type is not None:
            if repeated:
                for item in value:
                    _fill(getattr(message, field.name).add(), item)
            else:
                _fill(getattr(message, field.name), value)
        elif repeated:
            getattr(message, field.name).extend(value)
        else:
            setattr(message, field.name, value)


def _flat_step_stats(proto: Any, records: list[dict]) -> None:
    """Per-node records `{"node", "op", "start_s", "end_s"}` as one device's `node_stats`."""
    dev = proto.dev_stats.add(device=LOCAL_DEVICE)
    for r in records:
        start = int(r["start_s"] * 1e6)
        took = max(int((r["end_s"] - r["start_s"]) * 1e6), 0)
        dev.node_stats.add(node_name=r["node"], timeline_label=f"{r['node']} = {r['op']}()", all_start_micros=start,
                           op_start_rel_micros=0, op_end_rel_micros=took, all_end_rel_micros=took)


def run_metadata_proto(run_metadata: Any) -> Any:
    """TF's `RunMetadata` (TensorBoard's proto) for an `af.RunMetadata` or a RunMetadata proto."""
    _, _, config_pb2, _ = _pb()
    out = config_pb2.RunMetadata()
    if hasattr(run_metadata, "SerializeToString"):
        out.MergeFromString(run_metadata.SerializeToString())
        return out
    stats = _get(run_metadata, "step_stats")
    if isinstance(stats, list):
        _flat_step_stats(out.step_stats, stats)
    elif stats is not None:
        _fill(out.step_stats, stats)
    for graph in _get(run_metadata, "partition_graphs") or []:
        out.partition_graphs.add().CopyFrom(graph if hasattr(graph, "SerializeToString") else graph_def_proto(graph))
    return out


__all__: list[str] = []
