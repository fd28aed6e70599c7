"""`import_graph_def`: rebuilds a graph document's nodes in the default graph, checking everything.

The document format and its codecs are in `asyncflow.serialization`. Import runs in two phases.
First every node is checked on its own (op type known, attrs well-tagged and of the declared
types, input count, recorded output dtypes) and against the others (inputs exist, dtypes match,
no cycle); nothing is added to the graph but the name scope and converted `input_map` values.
Then the ops are created with `Graph.create_op` in document order (or the nearest topological
order), each shape function re-run and merged with the recorded shapes, and the document's cond
and while contexts (checked in the first phase too) rebuilt around them, so that `af.gradients`
differentiates an imported loop or cond as it would the original; if that fails part-way, the ops
already added are taken back.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncflow import dtypes
from asyncflow.device import DeviceSpec
from asyncflow.graph import Graph, Operation, Tensor, get_default_graph
from asyncflow.ops.registry import OPS, REQUIRED, ArgSpec, BuildContext, OpDef, TypeList
from asyncflow.serialization import (
    CONTEXT_KINDS,
    FORMAT,
    PRODUCER_VERSION,
    BytesLike,
    _Decoder,
    _dtype_from_json,
    _shape_from_json,
    from_json,
)
from asyncflow.shapes import TensorShape

_VALID_NODE_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")


@dataclass
class _Node:
    """One node of a document, checked on its own (before anything is added to a graph)."""

    index: int
    name: str
    opdef: OpDef
    data: list[str]
    control: list[str]
    device: str
    attrs: dict[str, Any]
    out_types: list[dtypes.DType]
    stored_shapes: list[TensorShape] | None
    arg_of_input: list[tuple[ArgSpec, dtypes.DType]] = field(default_factory=list)


def _split_tensor_name(s: str) -> tuple[str, int]:
    op_name, colon, index = s.rpartition(":")
    if colon and index.isdigit():
        return op_name, int(index)
    if colon:
        raise ValueError(f"bad tensor name {s!r}")
    return s, 0


def _output_types(opdef: OpDef, attrs: dict[str, Any]) -> list[dtypes.DType]:
    out: list[dtypes.DType] = []
    for arg in opdef.outputs:
        out.extend(dt._as_ref if arg.is_ref else dt for dt in arg.arg_dtypes(attrs))
    return out


def _check_attrs(opdef: OpDef, attrs: dict[str, Any], where: str) -> None:
    """Fills defaults and checks type and list-length attrs against the op's declaration."""
    numbers = {a.number_attr for a in opdef.inputs + opdef.outputs if a.number_attr is not None}
    unknown = sorted(k for k in attrs if k not in opdef.attrs and k not in opdef.types and k not in numbers
                     and not k.startswith("_"))
    if unknown:
        raise ValueError(f"{where}: {opdef.type} has no attr {unknown[0]!r}")
    for k, default in opdef.attrs.items():
        if k not in attrs:
            if default is REQUIRED:
                raise ValueError(f"{where}: missing required attr '{k}'")
            attrs[k] = default
    for k, allowed in opdef.types.items():
        if k not in attrs and k in opdef.type_defaults:
            attrs[k] = opdef.type_defaults[k]
        v = attrs.get(k)
        if isinstance(allowed, TypeList):  # a list(type) attr: a list of allowed dtypes
            ok = isinstance(v, list) and all(isinstance(d, dtypes.DType) and d in allowed for d in v)
        else:
            ok = isinstance(v, dtypes.DType) and v in allowed
        if not ok:
            raise ValueError(f"{where}: type attr '{k}' is {v!r}, expected one of "
                             f"{', '.join(d.name for d in allowed)}")
    for k in numbers:
        v = attrs.get(k)
        if type(v) is not int or v < 0:
            raise ValueError(f"{where}: list-length attr '{k}' is {v!r}, expected a non-negative int")


def _parse_node(i: int, raw: Any, decoder: _Decoder) -> _Node:
    if not isinstance(raw, dict):
        raise ValueError(f"node {i}: expected an object, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not _VALID_NODE_NAME.match(name):
        raise ValueError(f"node {i}: bad node name {name!r}")
    where = f"node '{name}'"
    op_type = raw.get("op")
    opdef = OPS.get(op_type) if isinstance(op_type, str) else None
    if opdef is None:
        raise ValueError(f"{where}: unknown op type {op_type!r} (not in asyncflow's op registry)")
    where = f"node '{name}' ({op_type})"
    inputs, device, raw_attrs = raw.get("input", []), raw.get("device", ""), raw.get("attr", {})
    if not isinstance(inputs, list) or not all(isinstance(s, str) and s.lstrip("^") for s in inputs):
        raise ValueError(f"{where}: 'input' must be a list of tensor names, got {inputs!r}")
    data = [s for s in inputs if not s.startswith("^")]
    control = [s[1:] for s in inputs if s.startswith("^")]
    if inputs[:len(data)] != data:
        raise ValueError(f"{where}: control inputs ('^name') must follow the data inputs: {inputs!r}")
    if not isinstance(device, str):
        raise ValueError(f"{where}: 'device' must be a string, got {device!r}")
    try:
        DeviceSpec.from_string(device)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if not isinstance(raw_attrs, dict):
        raise ValueError(f"{where}: 'attr' must be an object, got {type(raw_attrs).__name__}")
    attrs = {k: decoder.value(v, f"{where} attr '{k}'") for k, v in raw_attrs.items()}
    _check_attrs(opdef, attrs, where)
    out_types = _output_types(opdef, attrs)
    stored = raw.get("output")
    shapes = None
    if stored is not None:
        if not isinstance(stored, list) or len(stored) != len(out_types) or \
                not all(isinstance(o, dict) and set(o) == {"dtype", "shape"} for o in stored):
            raise ValueError(f"{where}: 'output' must list {len(out_types)} {{'dtype', 'shape'}} objects")
        for k, (o, want) in enumerate(zip(stored, out_types)):
            if _dtype_from_json(o["dtype"], f"{where} output {k}") != want or o["dtype"] != want.name:
                raise ValueError(f"{where}: output {k} is recorded as {o['dtype']!r}, the attrs give {want.name}")
        shapes = [_shape_from_json(o["shape"], f"{where} output {k}") for k, o in enumerate(stored)]
    expected: list[tuple[ArgSpec, dtypes.DType]] = []
    for arg in opdef.inputs:
        expected.extend((arg, dt) for dt in arg.arg_dtypes(attrs))
    if len(data) != len(expected):
        raise ValueError(f"{where}: takes {len(expected)} data inputs, the document gives {len(data)}")
    return _Node(i, name, opdef, data, control, device, attrs, out_types, shapes, expected)


@dataclass
class _ContextRecord:
    """One control-flow context of a document, checked: tensors as (node, index), ops as node names."""

    cls: Any
    scope: str
    outer: int | None
    ops: list[str]
    values: dict[str, Any]


def _open_document(graph_def: Any, buffers: Sequence[BytesLike] | None) -> tuple[list[Any], Any, _Decoder]:
    if isinstance(graph_def, (bytes, bytearray, memoryview, str)):
        graph_def = from_json(graph_def)
    if not isinstance(graph_def, dict):
        raise TypeError(f"graph_def must be a graph document (a dict or its JSON), got {type(graph_def).__name__}")
    fmt = graph_def.get("format")
    if fmt != FORMAT:
        raise ValueError(f"not an asyncflow graph document: format is {fmt!r}, expected {FORMAT!r}")
    versions = graph_def.get("versions", {})
    min_consumer = versions.get("min_consumer", 0) if isinstance(versions, dict) else None
    if type(min_consumer) is not int:
        raise ValueError(f"bad 'versions' {versions!r}")
    if min_consumer > PRODUCER_VERSION:
        raise ValueError(f"the document needs a reader of version >= {min_consumer}; this asyncflow reads "
                         f"version {PRODUCER_VERSION}")
    if graph_def.get("library"):
        raise ValueError("graph documents with a function library are not supported")
    nodes, held = graph_def.get("node", []), graph_def.get("buffers", [])
    if not isinstance(nodes, list):
        raise ValueError(f"'node' must be a list, got {type(nodes).__name__}")
    contexts = graph_def.get("contexts")  # absent from version 1 documents
    if buffers is not None:
        if held != len(buffers):
            raise ValueError(f"the header expects {held!r} buffers, {len(buffers)} were given")
        return nodes, contexts, _Decoder(list(buffers), inline=False)
    if not isinstance(held, list):
        raise ValueError("the document's buffers travel separately: pass them as import_graph_def(..., buffers=)")
    return nodes, contexts, _Decoder(held, inline=True)


def _parse_contexts(raw: Any, by_name: dict[str, _Node]) -> list[_ContextRecord]:
    """Checks the document's "contexts" against its nodes (each outer context an earlier record, each op in
    at most one context, every tensor and op a node's)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"'contexts' must be a list, got {type(raw).__name__}")
    owner: dict[str, int] = {}
    records = []
    for i, rec in enumerate(raw):
        kind = rec.get("kind") if isinstance(rec, dict) else None
        cls = CONTEXT_KINDS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"context {i}: expected an object with a known 'kind' ({', '.join(sorted(CONTEXT_KINDS))})"
                             f", got {rec if not isinstance(rec, dict) else kind!r}")
        scope, outer, ops = rec.get("scope"), rec.get("outer"), rec.get("ops", [])
        if not isinstance(scope, str):
            raise ValueError(f"context {i} ({kind}): 'scope' must be a string, got {scope!r}")
        where = f"context {i} ({kind} '{scope}')"
        if outer is not None and (type(outer) is not int or not 0 <= outer < i):
            raise ValueError(f"{where}: 'outer' must be null or the index of an earlier context, got {outer!r}")
        if not isinstance(ops, list) or not all(isinstance(o, str) and o in by_name for o in ops):
            raise ValueError(f"{where}: 'ops' must list nodes of the document, got {ops!r}")
        for o in ops:
            if owner.setdefault(o, i) != i:
                raise ValueError(f"{where}: node '{o}' is in context {owner[o]} too")
        values = {k: _context_value(rec.get(k), want, by_name, f"{where} field '{k}'")
                  for k, want in {**cls.fields, "captured": "pairs"}.items()}
        records.append(_ContextRecord(cls, scope, outer, ops, values))
    return records


def _context_value(v: Any, want: str, by_name: dict[str, _Node], where: str) -> Any:
    """A context field checked against its declared kind ("tensor", "tensors", "pairs", "op", "int", "bool",
    "str"; "?" when it may be null)."""
    if want.endswith("?"):
        if v is None:
            return None
        want = want[:-1]
    if want in ("tensors", "pairs"):
        item = "tensor" if want == "tensors" else "pair"
        if not isinstance(v, list):
            raise ValueError(f"{where}: expected a list of {item}s, got {v!r}")
        return [_context_value(x, item, by_name, where) for x in v]
    if want == "pair":
        if not isinstance(v, list) or len(v) != 2:
            raise ValueError(f"{where}: expected [outside tensor, inside tensor], got {v!r}")
        return tuple(_context_value(x, "tensor", by_name, where) for x in v)
    if want == "tensor" and isinstance(v, str):
        try:
            src, index = _split_tensor_name(v)
        except ValueError:
            src, index = "", 0
        if src in by_name and index < len(by_name[src].out_types):
            return src, index
        raise ValueError(f"{where}: {v!r} is not a tensor of the document")
    if want == "op" and isinstance(v, str):
        if v in by_name:
            return v
        raise ValueError(f"{where}: {v!r} is not a node of the document")
    if (want == "int" and type(v) is int) or (want == "bool" and type(v) is bool) or \
            (want == "str" and isinstance(v, str)):
        return v
    raise ValueError(f"{where}: expected {want}, got {v!r}")


def import_graph_def(
    graph_def: Any,
    input_map: dict[str, Any] | None = None,
    return_elements: Sequence[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
    *,
    buffers: Sequence[BytesLike] | None = None,
) -> list[Tensor | Operation] | None:
    """`af.import_graph_def`: adds a document's nodes to the default graph, as TF1 does.

    Node names get the prefix `name` ("import" by default, made unique; "" for none, in which case
    names that are taken get `_N`). `input_map` maps "x:0" (or "^x") in the document to a tensor
    (or op) of the default graph, used in place of that input; `return_elements` lists the names
    ("x:0" or "x") of the tensors and ops to return. `graph_def` is a document, its JSON, or a
    header whose raw `buffers` come separately. `op_dict` and `producer_op_list` are ignored (TF
    deprecated them). Raises ValueError, before the graph changes, when the document is malformed.
    """
    del op_dict, producer_op_list
    raw_nodes, raw_contexts, decoder = _open_document(graph_def, buffers)
    input_map = dict(input_map or {})
    if not all(isinstance(k, str) for k in input_map):
        raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
    if return_elements is not None and not all(isinstance(x, str) for x in return_elements):
        raise TypeError("return_elements must be a list of strings.")
    if not name and any(not isinstance(v, (Tensor, Operation)) for v in input_map.values()):
        raise ValueError("af.import_graph_def() requires a non-empty `name` if `input_map` contains non-Tensor "
                         "values. Try calling af.convert_to_tensor() on `input_map` values first.")
    nodes = [_parse_node(i, raw, decoder) for i, raw in enumerate(raw_nodes)]
    by_name: dict[str, _Node] = {}
    for node in nodes:
        if node.name in by_name:
            raise ValueError(f"node '{node.name}': duplicate node name in the document")
        by_name[node.name] = node
    contexts = _parse_contexts(raw_contexts, by_name)
    graph = get_default_graph()
    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    with graph.name_scope("import" if name is None else name):
        mapped = _resolve_input_map(graph, input_map, by_name)
        edges = {n.index: _check_inputs(n, by_name, mapped) for n in nodes}
        wanted = _check_return_elements(return_elements, by_name)
        order = _creation_order(nodes, edges)
        created: dict[str, Operation] = {}
        try:
            _create_ops(graph, nodes, order, mapped, created)
            _build_contexts(graph, contexts, mapped, created)
        except BaseException:
            graph._remove_operations(list(created.values()))
            raise
    if wanted is None:
        return None
    return [created[n].outputs[i] if i is not None else created[n] for n, i in wanted]


def _resolve_input_map(graph: Graph, input_map: dict[str, Any], by_name: dict[str, _Node]) -> dict[str, Any]:
    from asyncflow.ops.registry import convert_to_tensor

    mapped: dict[str, Any] = {}
    missing = []
    for key, value in input_map.items():
        if key.startswith("^"):
            src, index, norm = key[1:], None, key
            element = graph.as_graph_element(value, allow_tensor=True, allow_operation=True)
            element = element.op if isinstance(element, Tensor) else element
        else:
            src, index = _split_tensor_name(key)
            norm = f"{src}:{index}"
            if not isinstance(value, Tensor) and not hasattr(value, "_as_graph_element"):
                with graph.name_scope("_inputs"):  # TF's home for converted input_map values
                    value = convert_to_tensor(value)
            element = graph.as_graph_element(value, allow_tensor=True, allow_operation=False)
        node = by_name.get(src)
        if node is None or (index is not None and index >= len(node.out_types)):
            missing.append(key)
        mapped[norm] = element
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(missing)}]")
    return mapped


def _check_inputs(node: _Node, by_name: dict[str, _Node], mapped: dict[str, Any]) -> tuple[set[int], set[int]]:
    """Checks that every input exists and has the dtype the op expects; returns the nodes it waits for
    through data edges and through control edges."""
    where = f"node '{node.name}' ({node.opdef.type})"
    deps: set[int] = set()
    control: set[int] = set()
    for k, (s, (arg, want)) in enumerate(zip(node.data, node.arg_of_input)):
        try:
            src, index = _split_tensor_name(s)
        except ValueError as e:
            raise ValueError(f"{where}: input {k}: {e}") from None
        tensor = mapped.get(f"{src}:{index}")
        if tensor is not None:
            got = tensor.dtype
        else:
            producer = by_name.get(src)
            if producer is None:
                raise ValueError(f"{where}: input {k} ('{arg.name}') refers to '{s}', which is not a node of "
                                 f"the document")
            if index >= len(producer.out_types):
                raise ValueError(f"{where}: input {k} ('{arg.name}') refers to '{s}', but '{src}' has "
                                 f"{len(producer.out_types)} outputs")
            got = producer.out_types[index]
            deps.add(producer.index)
        if got.base_dtype != want or (arg.is_ref and not got.is_ref_dtype):
            need = want._as_ref.name if arg.is_ref else want.name
            raise ValueError(f"{where}: input {k} ('{arg.name}') from '{s}' is {got.name}, expected {need}")
    for c in node.control:
        if "^" + c in mapped:
            continue
        if c not in by_name:
            raise ValueError(f"{where}: control input '^{c}' is not a node of the document")
        control.add(by_name[c].index)
    return deps, control


def _check_return_elements(names: Sequence[str] | None, by_name: dict[str, _Node]) -> list | None:
    if names is None:
        return None
    out = []
    for s in names:
        if ":" in s:
            src, index = _split_tensor_name(s)
            if src not in by_name or index >= len(by_name[src].out_types):
                raise ValueError(f"Requested return tensor '{s}' not found in graph def")
            out.append((src, index))
        else:
            if s not in by_name:
                raise ValueError(f"Requested return node '{s}' not found in graph def")
            out.append((s, None))
    return out


def _kahn(deps: dict[int, set[int]]) -> list[int]:
    """The smallest topological order by document position (document order itself when it is one)."""
    pending = {i: len(d) for i, d in deps.items()}
    users: dict[int, list[int]] = {i: [] for i in deps}
    for i, d in deps.items():
        for j in d:
            users[j].append(i)
    ready = [i for i, p in pending.items() if p == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            pending[u] -= 1
            if not pending[u]:
                heapq.heappush(ready, u)
    return order


def _creation_order(nodes: list[_Node], edges: dict[int, tuple[set[int], set[int]]]) -> list[int]:
    """The order to create ops in. A control edge to a later node (`_add_control_input` made it) does
    not reorder the nodes: it is added once both exist, so a round trip keeps the document's order."""
    def forward(i: int, deps: set[int]) -> set[int]:  # a loop's back edge (NextIteration -> Merge) waits for nothing
        if nodes[i].opdef.control_flow != "merge":
            return deps
        return {j for j in deps if nodes[j].opdef.control_flow != "next_iteration"}

    done = set(_kahn({i: forward(i, d) | c for i, (d, c) in edges.items()}))
    if len(done) != len(nodes):
        stuck = sorted(n.name for n in nodes if n.index not in done)[:5]
        raise ValueError(f"the document's graph has a cycle through {stuck}; the only cycles a graph may have "
                         f"are loops closed by NextIteration -> Merge")
    return _kahn({i: forward(i, d) | {j for j in c if j < i} for i, (d, c) in edges.items()})


def _infer_shapes(node: _Node, op_name: str, inputs: list[Tensor]) -> list[TensorShape]:
    """The shape function's shapes, merged with the recorded ones (which may be more specific)."""
    where = f"node '{op_name}' ({node.opdef.type})"
    structured: list[Any] = []
    k = 0
    for arg in node.opdef.inputs:
        n = arg.count(node.attrs)
        structured.append(inputs[k:k + n] if arg.is_list else inputs[k])
        k += n
    n_out = len(node.out_types)
    if node.opdef.shape_fn is None:
        shapes = [TensorShape(None)] * n_out
    else:
        try:
            result = node.opdef.shape_fn(BuildContext(node.opdef.type, op_name, structured, node.attrs))
            result = [result] if isinstance(result, TensorShape) or not isinstance(result, list) else result
            shapes = [s if isinstance(s, TensorShape) else TensorShape(s) for s in result]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            raise ValueError(f"{where}: shape inference failed: {e}") from None
        if len(shapes) != n_out:
            raise ValueError(f"{where}: the shape function gave {len(shapes)} shapes for {n_out} outputs")
    if node.stored_shapes is None:
        return shapes
    try:
        return [s.merge_with(r) for s, r in zip(shapes, node.stored_shapes)]
    except ValueError:
        raise ValueError(f"{where}: recorded output shapes {[str(s) for s in node.stored_shapes]} conflict "
                         f"with the inferred {[str(s) for s in shapes]}") from None


def _create_ops(graph: Graph, nodes: list[_Node], order: list[int], mapped: dict[str, Any],
                created: dict[str, Operation]) -> None:
    """Creates the ops in `order`, recording each in `created` (document name -> op) as it goes."""
    # Names are marked as used in the graph as TF's importer does; taken ones get `_N`.
    final = {n.name: graph.unique_name(n.name) for n in nodes}
    deferred: list[_Node] = []

    def tensor(s: str) -> Tensor:
        src, index = _split_tensor_name(s)
        t = mapped.get(f"{src}:{index}")
        return t if t is not None else created[src]._outputs[index]

    back_edges: list[tuple[str, int, str]] = []  # (merge, input index, NextIteration tensor) to close loops
    for i in order:
        node = nodes[i]
        op_name = final[node.name]
        pending = [j for j, s in enumerate(node.data) if _is_later(s, mapped, created)]
        if pending:  # a loop's Merge: stand in its first available input until the NextIteration exists
            stand_in = next(tensor(s) for j, s in enumerate(node.data) if j not in pending)
            back_edges.extend((node.name, j, node.data[j]) for j in pending)
            inputs = [stand_in if j in pending else tensor(s) for j, s in enumerate(node.data)]
        else:
            inputs = [tensor(s) for s in node.data]
        controls = [mapped.get("^" + c) or created.get(c) for c in node.control]
        if None in controls:  # a control input created later: add them all, in order, at the end
            deferred.append(node)
            controls = []
        attrs = dict(node.attrs)
        if isinstance(attrs.get("_class"), list):  # colocation names follow the renamed nodes
            attrs["_class"] = [_renamed_group(g, final) for g in attrs["_class"]]
        shapes = _infer_shapes(node, op_name, inputs)
        op = graph.create_op(node.opdef.type, inputs, attrs, node.out_types, shapes, op_name, node.opdef,
                             control_inputs=controls)
        if node.device:
            scope = op.device
            op._set_device(DeviceSpec.from_string(scope).merge(DeviceSpec.from_string(node.device)).to_string()
                           if scope else node.device)
        created[node.name] = op
    for node in deferred:
        for c in node.control:
            created[node.name]._add_control_input(mapped.get("^" + c) or created[c])
    for merge, j, s in back_edges:
        created[merge]._update_input(j, tensor(s))


def _build_contexts(graph: Graph, records: list[_ContextRecord], mapped: dict[str, Any],
                    created: dict[str, Operation]) -> None:
    """The documented contexts around the imported ops: scopes under the import's name scope, contexts at
    the top nested in the one the import runs in, mapped tensors (`input_map`) in place of theirs."""
    prefix, base = graph._name_stack, graph._cf_context

    def resolve(v: Any, want: str) -> Any:
        if v is None or want.rstrip("?") in ("int", "bool", "str"):
            return v
        if want in ("tensors", "pairs"):
            return [resolve(x, "pair" if want == "pairs" else "tensor") for x in v]
        if want == "pair":
            return tuple(resolve(x, "tensor") for x in v)
        if want.startswith("op"):
            return created[v]
        src, index = v
        t = mapped.get(f"{src}:{index}")
        return t if t is not None else created[src]._outputs[index]

    built: list[Any] = []
    for rec in records:
        values = {k: resolve(rec.values[k], want) for k, want in {**rec.cls.fields, "captured": "pairs"}.items()}
        scope = f"{prefix}/{rec.scope}" if prefix and rec.scope else rec.scope
        ctx = rec.cls.from_dict(built[rec.outer] if rec.outer is not None else base, scope, values)
        for name in rec.ops:
            created[name]._cf_context = ctx
        built.append(ctx)


def _is_later(s: str, mapped: dict[str, Any], created: dict[str, Operation]) -> bool:
    src, index = _split_tensor_name(s)
    return mapped.get(f"{src}:{index}") is None and src not in created


def _renamed_group(group: Any, final: dict[str, str]) -> Any:
    if isinstance(group, bytes) and group.startswith(b"loc:@"):
        target = group[5:].decode("utf-8", "replace")
        if target in final:
            return b"loc:@" + final[target].encode()
    return group
