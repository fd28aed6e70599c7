"""Graph documents: `Graph.as_graph_def()` and `import_graph_def()` as plain JSON data, never pickle.

A graph document mirrors TF's GraphDef:

    {"format": "asyncflow.graph/1", "versions": {"producer": 1, "min_consumer": 1},
     "node": [{"name": "y", "op": "AddV2", "input": ["x", "c:1", "^init"], "device": "",
               "attr": {"T": {"dtype": "float32"}},
               "output": [{"dtype": "float32", "shape": [null, 3]}]}, ...],
     "buffers": [...]}

`input` names a node's data inputs as TF's NodeDef does ("x" is output 0, "x:1" output 1) and
then its control inputs ("^init"). `output` records each output's dtype and static shape (shapes
are `null` for unknown rank, dims `null` when unknown), so an import is exact; the importer also
re-runs the op's shape function and checks the two agree.

Attr values carry a type tag, so a round trip gives back exactly the Python value an Operation
held: {"bool": b}, {"int": i} (a decimal string beyond int64), {"float": x} ("nan", "inf",
"-inf" or "nan:0x<bits>" for the values JSON cannot hold), {"str": s}, {"bytes": s} (UTF-8 text)
or {"bytes_b64": s}, {"dtype": name}, {"shape": dims or null}, {"none": null}, {"list": [...]},
{"tuple": [...]}, and {"tensor": {"dtype", "shape", "buffer"}} for a numpy array (a numpy scalar
is {"scalar": {...}} of the same form). A tensor's bytes are an Arrow IPC stream (one record
batch, one column of the flattened values; `asyncflow.tensor_codec`) kept in the document's buffer
list, which comes in two forms:
  - a document (`graph_to_document`, `to_json`/`from_json`): "buffers" is a list of base64 strings;
  - a header plus buffers (`graph_to_parts`, `document_to_parts`): "buffers" is their count and the
    buffers travel separately as raw bytes, so the distributed runtime sends them without base64.
`import_graph_def` takes either (the second as `import_graph_def(header, buffers=...)`), and checks
everything it reads: a malformed document raises ValueError naming the node and what was wrong.

"contexts" (optional; producer version 2 on, a reader of version 1 ignores it, and a document without
it imports with no contexts) records the cond branches and while loops the graph was built with (TF1's
COND_CONTEXT / WHILE_CONTEXT), what `af.gradients` needs to differentiate through them:

    "contexts": [{"kind": "while", "scope": "while/", "outer": null, "ops": ["while/Enter", ...],
                  "captured": [["w:0", "while/Enter_2:0"]], "frame_name": "while/while_context",
                  "enters": ["while/Enter:0", ...], ...}, ...]

`kind` names a context class (`register_context_kind`), whose `fields` say what else the record holds
(tensors and ops by name); `outer` is the index of the enclosing context, always an earlier record;
`ops` are the nodes built directly in it; `captured` pairs an outside tensor with its capture. A
context whose tensors are not all in the document (a part of a graph, `graph_to_parts(graph, ops)`)
is left out, with the contexts inside it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from asyncflow import dtypes
from asyncflow.graph import Graph, Operation, Tensor, register_graph_serializer
from asyncflow.shapes import TensorShape
from asyncflow.tensor_codec import BytesLike, decode_tensor, encode_tensor, read_tensor_header

FORMAT = "asyncflow.graph/1"
PRODUCER_VERSION = 2  # 2: the optional "contexts" section
MIN_CONSUMER_VERSION = 1

# -- attr values with type tags --------------------------------------------------------------------
_INT64 = (-(2**63), 2**63 - 1)
_CANONICAL_NAN = struct.unpack("<Q", struct.pack("<d", float("nan")))[0]


def _float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


class _Encoder:
    """Turns attr values into tagged JSON, collecting tensor buffers on the side."""

    def __init__(self) -> None:
        self.buffers: list[pa.Buffer] = []

    def tensor(self, value: np.ndarray | np.generic, where: str) -> dict[str, Any]:
        try:
            data = encode_tensor(value)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        self.buffers.append(data)
        arr = np.asarray(value)
        return {"dtype": dtypes.as_dtype(arr.dtype).name, "shape": list(arr.shape), "buffer": len(self.buffers) - 1}

    def value(self, v: Any, where: str) -> dict[str, Any]:
        if v is None:
            return {"none": None}
        if isinstance(v, dtypes.DType):
            return {"dtype": v.name}
        if isinstance(v, TensorShape):
            return {"shape": _shape_to_json(v)}
        if isinstance(v, bool):
            return {"bool": v}
        if isinstance(v, np.ndarray):
            return {"tensor": self.tensor(v, where)}
        if isinstance(v, np.generic):
            return {"scalar": self.tensor(v, where)}
        if isinstance(v, int):
            return {"int": v if _INT64[0] <= v <= _INT64[1] else str(v)}
        if isinstance(v, float):
            return {"float": _float_to_json(v)}
        if isinstance(v, str):
            return {"str": v}
        if isinstance(v, bytes):
            try:
                return {"bytes": v.decode("utf-8")}
            except UnicodeDecodeError:
                return {"bytes_b64": base64.b64encode(v).decode("ascii")}
        if isinstance(v, (list, tuple)):
            items = [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
            return {"list" if isinstance(v, list) else "tuple": items}
        raise ValueError(f"{where}: cannot serialise an attr value of type {type(v).__name__}: {v!r}")


def _float_to_json(x: float) -> float | str:
    if math.isfinite(x):
        return x
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    bits = _float_bits(x)
    return "nan" if bits == _CANONICAL_NAN else f"nan:0x{bits:016x}"


_NAN_BITS = re.compile(r"^nan:0x([0-9a-f]{16})$")


def _float_from_json(v: Any, where: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if v == "nan":
        return float("nan")
    if v in ("inf", "-inf"):
        return float(v)
    m = _NAN_BITS.match(v) if isinstance(v, str) else None
    if m:
        x = struct.unpack("<d", struct.pack("<Q", int(m.group(1), 16)))[0]
        if not math.isnan(x):
            raise ValueError(f"{where}: {v!r} is not the bit pattern of a NaN")
        return x
    raise ValueError(f"{where}: bad float value {v!r}")


def _shape_to_json(shape: TensorShape) -> list[int | None] | None:
    return None if shape.ndims is None else shape.as_list()


def _shape_from_json(v: Any, where: str) -> TensorShape:
    if v is None:
        return TensorShape(None)
    if isinstance(v, list) and all(d is None or (type(d) is int and d >= 0) for d in v):
        return TensorShape(v)
    raise ValueError(f"{where}: bad shape {v!r} (a list of non-negative ints and nulls, or null)")


def _dtype_from_json(v: Any, where: str) -> dtypes.DType:
    try:
        if not isinstance(v, str):
            raise TypeError
        return dtypes.as_dtype(v)
    except TypeError:
        raise ValueError(f"{where}: unknown dtype {v!r}") from None


class _Decoder:
    """Reads tagged attr values back; a buffer is decoded (base64, Arrow) where a tensor refers to it."""

    def __init__(self, buffers: Sequence[Any], inline: bool):
        self._buffers = buffers
        self._inline = inline

    def _buffer(self, index: Any, where: str) -> BytesLike:
        if type(index) is not int or not 0 <= index < len(self._buffers):
            raise ValueError(f"{where}: buffer index {index!r} out of range (the document has "
                             f"{len(self._buffers)} buffers)")
        data = self._buffers[index]
        if not self._inline:
            return data
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ValueError(f"{where}: buffer {index} is not valid base64") from None

    def tensor(self, spec: Any, where: str) -> np.ndarray:
        if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "buffer"}:
            raise ValueError(f"{where}: a tensor is {{'dtype', 'shape', 'buffer'}}, got {spec!r}")
        dtype = _dtype_from_json(spec["dtype"], where)
        shape = _shape_from_json(spec["shape"], where)
        # The stream's metadata is checked against the attr's dtype and shape before its body is read
        # (compressed bodies, which no writer of documents produces, are refused by `decode_tensor`).
        head = read_tensor_header(self._buffer(spec["buffer"], where), where)
        if head.dtype != dtype or not shape.is_fully_defined() or list(head.shape) != shape.as_list():
            raise ValueError(f"{where}: the Arrow buffer holds {head.dtype.name}{list(head.shape)}, "
                             f"the document says {dtype.name}{spec['shape']}")
        return decode_tensor(head)

    def value(self, tagged: Any, where: str) -> Any:
        if not isinstance(tagged, dict) or len(tagged) != 1:
            raise ValueError(f"{where}: an attr value is an object with one type tag, got {tagged!r}")
        (tag, v), = tagged.items()
        if tag == "none" and v is None:
            return None
        if tag == "bool" and isinstance(v, bool):
            return v
        if tag == "int" and type(v) is int:
            return v
        if tag == "int" and isinstance(v, str) and re.fullmatch(r"-?[0-9]+", v):
            return int(v)
        if tag == "float":
            return _float_from_json(v, where)
        if tag == "str" and isinstance(v, str):
            return v
        if tag == "bytes" and isinstance(v, str):
            return v.encode("utf-8")
        if tag == "bytes_b64" and isinstance(v, str):
            try:
                return base64.b64decode(v, validate=True)
            except binascii.Error:
                pass
        if tag == "dtype":
            return _dtype_from_json(v, where)
        if tag == "shape":
            return _shape_from_json(v, where)
        if tag in ("list", "tuple") and isinstance(v, list):
            items = [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
            return items if tag == "list" else tuple(items)
        if tag == "tensor":
            return self.tensor(v, where)
        if tag == "scalar":
            arr = self.tensor(v, where)
            if arr.ndim:
                raise ValueError(f"{where}: a scalar must have shape [], got {list(arr.shape)}")
            return arr[()]
        raise ValueError(f"{where}: bad attr value {tagged!r} (unknown tag or wrong payload)")



# -- documents -------------------------------------------------------------------------------------
def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def graph_to_parts(graph: Graph, ops: Sequence[Operation] | None = None) -> tuple[dict, list[pa.Buffer]]:
    """The graph (or just `ops`, in order) as a JSON-able header and its tensor buffers (raw bytes)."""
    enc = _Encoder()
    nodes = []
    for op in graph.get_operations() if ops is None else ops:
        attrs = op.attrs
        nodes.append({
            "name": op.name,
            "op": op.type,
            "input": [_input_name(t) for t in op.inputs] + ["^" + c.name for c in op.control_inputs],
            "device": op.device,
            "attr": {k: enc.value(attrs[k], f"node '{op.name}' attr '{k}'") for k in sorted(attrs)},
            "output": [{"dtype": t.dtype.name, "shape": _shape_to_json(t.shape)} for t in op.outputs],
        })
    header = {"format": FORMAT, "versions": {"producer": PRODUCER_VERSION, "min_consumer": MIN_CONSUMER_VERSION},
              "node": nodes, "buffers": len(enc.buffers)}
    contexts = _contexts_to_json(graph.get_operations() if ops is None else ops)
    if contexts:
        header["contexts"] = contexts
    return header, enc.buffers


# -- control-flow contexts -------------------------------------------------------------------------
CONTEXT_KINDS: dict[str, type] = {}


def register_context_kind(cls: type) -> type:
    """Lets documents record contexts of class `cls` (asyncflow/control_flow.py registers its own): `cls.kind`
    names it, `cls.fields` says what a record holds, `to_dict`/`from_dict` write and rebuild it."""
    CONTEXT_KINDS[cls.kind] = cls
    return cls


def _contexts_to_json(ops: Sequence[Operation]) -> list[dict]:
    """The records of the contexts `ops` were built in, each after its outer context."""
    names = {op.name for op in ops}
    index: dict[Any, int | None] = {}
    records: list[dict] = []

    def name_of(v: Any, kind: str) -> Any:
        if v is None and kind.endswith("?"):
            return None
        if kind.startswith("tensors"):
            return [name_of(t, "tensor") for t in v]
        if kind.startswith(("tensor", "op")):
            op = v.op if isinstance(v, Tensor) else v
            if op.name not in names:
                raise KeyError(op.name)
            return v.name
        return {"int": int, "bool": bool, "str": str}[kind](v)

    def visit(ctx: Any) -> int | None:
        if ctx in index:
            return index[ctx]
        index[ctx] = None  # until it proves recordable
        outer = visit(ctx.outer) if ctx.outer is not None else None
        if CONTEXT_KINDS.get(getattr(ctx, "kind", "")) is None or (ctx.outer is not None and outer is None):
            return None
        values = ctx.to_dict()
        try:
            fields = {k: name_of(values[k], kind) for k, kind in type(ctx).fields.items()}
            captured = [[name_of(a, "tensor"), name_of(b, "tensor")] for a, b in values["captured"]]
        except KeyError:  # refers to a node outside the document
            return None
        records.append({"kind": ctx.kind, "scope": ctx.scope, "outer": outer, "ops": [], "captured": captured,
                        **fields})
        index[ctx] = len(records) - 1
        return index[ctx]

    for op in ops:
        if op._cf_context is not None:
            i = visit(op._cf_context)
            if i is not None:
                records[i]["ops"].append(op.name)
    return records


def parts_to_document(header: dict, buffers: Sequence[BytesLike]) -> dict:
    """A header and its buffers as one self-contained document (buffers inline as base64)."""
    if header.get("buffers") != len(buffers):
        raise ValueError(f"the header expects {header.get('buffers')!r} buffers, {len(buffers)} were given")
    return {**header, "buffers": [base64.b64encode(b).decode("ascii") for b in buffers]}


def document_to_parts(document: dict) -> tuple[dict, list[bytes]]:
    """The inverse of `parts_to_document`."""
    inline = document.get("buffers")
    if not isinstance(inline, list):
        raise ValueError("the document carries no inline buffer list")
    dec = _Decoder(inline, inline=True)
    buffers = [dec._buffer(i, "document") for i in range(len(inline))]
    return {**document, "buffers": len(buffers)}, buffers


def graph_to_document(graph: Graph) -> dict:
    """`Graph.as_graph_def()`: the graph as a self-contained, JSON-able document."""
    return parts_to_document(*graph_to_parts(graph))


register_graph_serializer(graph_to_document)


def to_json(graph_def: dict) -> bytes:
    """A document as JSON bytes (orjson)."""
    return orjson.dumps(graph_def)


def from_json(data: bytes | str) -> dict:
    """A document from JSON bytes; ValueError if it is not a JSON object."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"graph document is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"graph document must be a JSON object, got {type(doc).__name__}")
    return doc



# The importer lives next door (asyncflow/graph_import.py); it is part of this module's API.
from asyncflow.graph_import import import_graph_def  # noqa: E402

__all__ = [
    "FORMAT", "encode_tensor", "decode_tensor", "graph_to_parts", "graph_to_document", "parts_to_document",
    "document_to_parts", "to_json", "from_json", "import_graph_def", "register_context_kind",
]
