"""Graph optimisations applied when a plan is compiled (the whitepaper's section 5.1; TF's grappler).

`optimize(nodes, fetches, targets, feeds, options)` looks at the subgraph a plan needs and returns a
`Rewrite`: which tensors are read from another tensor instead (common subexpressions, identity
chains, arithmetic simplifications), which tensors are constants computed once at plan time
(constant folding), and where control edges on an op that no longer runs go. `compile_plan`
applies it; the graph itself is never changed, so the same graph plans again with other options.

One sweep over the ops in topological order; each op, its inputs read through the rewrite so far, is
offered to the passes in this order, and the first that rewrites it wins:
  identity             Identity, IdentityN, StopGradient and a one-input AddN (grappler's model pruner and
                       dependency optimizer): consumers read the input.
  arithmetic           a result equal to one of its inputs, bit for bit, in shape and dtype (`_RULES`):
                       x*1, 1*x, x/1, integer x+0 and x-0, Neg(Neg(x)), Transpose(Transpose(x)) back to x,
                       Cast/Reshape to what x already is, Tile by ones, Pad by zeros, full Slice, no-op
                       Squeeze/Reverse/Transpose, Split in one. Float x+0 is kept (-0.0 + 0 is +0.0; TF 2.21
                       keeps it too), complex x*1 too (inf*0 in the product).
  common_subexpression same type, device, inputs (in order; either order for a commutative op of two),
                       attrs (arrays by bytes, floats by bits) and control inputs: one runs, the first
                       (or a preserved one, below). Consts merge by value; Placeholders never.
  constant_folding     a pure op whose inputs are all constants (Const, or folded) and that has no
                       control input runs its kernel once here; outputs over the byte limit, a kernel
                       error (it raises at run time as usual) or a value not of the declared dtype: not folded.
No pass touches an op that is stateful (random ops are), async, takes the step, runs Python of this
process, has a ref input or output, or has a fed output. A target or an op with a fetched output is
preserved (grappler's nodes_to_preserve): it still runs, and shows in a trace, with its inputs rewritten,
so each fetch gets an array of its own as in TF. A rewritten op must have no control input (its edges
would be lost) and, when it forwards a tensor, sit on that tensor's device.

Every pass is on by default and off as in TF1 through `ConfigProto(graph_options=...)`
(asyncflow/graph_options.py says which switch turns off which pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncflow.graph import Operation, Tensor
from asyncflow.graph_options import Passes, enabled_passes
from asyncflow.ops.registry import KernelContext

PASSES = ("identity", "arithmetic", "common_subexpression", "constant_folding")
CSE_CONST_BYTES = 1 << 16  # larger array attrs (big Consts) are not compared for CSE: hashing them costs


@dataclass
class Rewrite:
    """What `compile_plan` changes in the plan of a subgraph (the graph is left as it is)."""

    tensors: dict[Tensor, Tensor] = field(default_factory=dict)  # read the value's value instead of the key's
    folded: dict[Tensor, Any] = field(default_factory=dict)  # the key's value, computed at plan time
    # control edges on the key go to the value instead (None: the edge is satisfied, nothing to wait for)
    ops: dict[Operation, Operation | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # rewrites made, by pass

    def __bool__(self) -> bool:
        return bool(self.tensors or self.folded or self.ops)


def optimize(nodes: Sequence[Operation], fetches: Sequence[Tensor], targets: Sequence[Operation],
             feeds: Sequence[Tensor], options: Any = None) -> Rewrite:
    """The rewrites of the subgraph `nodes` (the ops `fetches`/`targets` need given `feeds`, in
    topological order; no control-flow op among them) under `options` (a GraphOptions, TF's proto of
    it, or a graph_options.Passes; None: TF1's defaults, every pass on)."""
    passes = enabled_passes(options)
    if not passes.any():
        return Rewrite(counts=dict.fromkeys(PASSES, 0))
    return _Optimizer(passes, fetches, targets, feeds).run(nodes)


class _Optimizer:
    def __init__(self, passes: Passes, fetches: Sequence[Tensor], targets: Sequence[Operation],
                 feeds: Sequence[Tensor]):
        self.passes = passes
        self.targets = set(targets)
        self.fed = set(feeds)
        self.fetched = set(fetches)
        self.rw = Rewrite(counts=dict.fromkeys(PASSES, 0))
        self.seen: dict[tuple, Operation] = {}  # CSE: key -> the op kept

    def run(self, nodes: Sequence[Operation]) -> Rewrite:
        p = self.passes
        steps = [(on, name, fn) for on, name, fn in (
            (p.identity, "identity", self._identity),
            (p.arithmetic or p.simplification, "arithmetic", self._arithmetic),
            (p.common_subexpression, "common_subexpression", self._common),
            (p.constant_folding, "constant_folding", self._fold)) if on]
        for op in nodes:
            if not self._pure(op):
                continue
            ins = [self.source(t) for t in op._inputs]
            if op in self.targets or any(t in self.fetched for t in op._outputs):
                # preserved, as grappler's nodes_to_preserve: it runs (and shows in a trace), its inputs rewritten,
                # and each fetch keeps an array of its own; equal ops after it may still read it
                if p.common_subexpression and self._common(op, ins, preserved=True):
                    self.rw.counts["common_subexpression"] += 1
                continue
            for _, name, step in steps:
                if step(op, ins):
                    self.rw.counts[name] += 1
                    break
        return self.rw

    # -- what the rewrite says so far ------------------------------------------------------------
    def source(self, t: Tensor) -> Tensor:
        """Where `t`'s value is read from (as exec/executor.py's `_Edges.source`)."""
        if t not in self.fed:
            while t in self.rw.tensors:
                t = self.rw.tensors[t]
        return t

    def const(self, t: Tensor) -> Any:
        """The value of source tensor `t` when it is a constant (as a plan presets it), else None."""
        if t in self.fed:
            return None
        value = self.rw.folded.get(t)
        if value is not None:
            return value
        op = t.op
        if op.op_def is not None and op.op_def.constant and not op._inputs and not op._control_inputs:
            return _preset_form(op._attrs["value"])
        return None

    def _pure(self, op: Operation) -> bool:
        d = op.op_def
        if d is None or d.stateful or d.is_async or d.uses_step or d.in_process_only or d.control_flow:
            return False
        if not op._outputs:
            return False
        return not any(t in self.fed or t.dtype.is_ref_dtype for t in op._outputs) and \
            not any(t.dtype.is_ref_dtype for t in op._inputs)

    def _producer(self, t: Tensor) -> Operation | None:
        """The op a control edge waiting for `t` waits for (None: `t` is there from the start)."""
        return None if t in self.fed or t in self.rw.folded else t.op

    def _forward(self, op: Operation, pairs: Sequence[tuple[int, Tensor]]) -> bool:
        """Consumers of `op`'s output i read tensor t instead, for each (i, t); False when not allowed."""
        if op._control_inputs:
            return False
        for i, t in pairs:
            out = op._outputs[i]
            if t.dtype != out.dtype or (t not in self.fed and t.op.device != op.device):
                return False
        producers = {self._producer(t) for _, t in pairs}
        if len(producers) > 1 and op._control_outputs:  # an edge on `op` could wait for only one of them
            return False
        for i, t in pairs:
            self.rw.tensors[op._outputs[i]] = t
        self.rw.ops[op] = producers.pop() if producers else None
        return True

    # -- the passes ------------------------------------------------------------------------------
    def _identity(self, op: Operation, ins: list[Tensor]) -> bool:
        if op.type not in _FORWARDS_INPUTS or (op.type == "AddN" and len(ins) != 1):
            return False
        return self._forward(op, list(enumerate(ins)))

    def _arithmetic(self, op: Operation, ins: list[Tensor]) -> bool:
        rule = _RULES.get(op.type)
        if rule is None or len(op._outputs) != 1:
            return False
        kind, fn = rule
        p = self.passes
        if not {"arithmetic": p.arithmetic, "simplification": p.simplification}.get(kind, True):
            return False
        t = fn(self, op, ins)
        return t is not None and self._forward(op, [(0, t)])

    def _common(self, op: Operation, ins: list[Tensor], preserved: bool = False) -> bool:
        """`op` reads an equal op seen before; a preserved `op` runs, and the equal op before it (when it is not
        preserved itself, nor folded) reads it instead: they have the same inputs, so no cycle can form."""
        key = self._key(op, ins)
        if key is None:
            return False
        kept = self.seen.setdefault(key, op)
        if kept is op:
            return False
        if preserved:
            if kept in self.targets or any(t in self.fetched or t in self.rw.folded for t in kept._outputs):
                return False
            kept, op = op, kept
            self.seen[key] = kept
        for mine, theirs in zip(op._outputs, kept._outputs):
            self.rw.tensors[mine] = theirs
        self.rw.ops[op] = kept
        return True

    def _key(self, op: Operation, ins: list[Tensor]) -> tuple | None:
        if not ins and not op.op_def.constant:  # a Placeholder stands for its own feed
            return None
        inputs = tuple(ins)
        if op.op_def.commutative and len(ins) == 2:  # a+b == b+a exactly; a sum of three is order-dependent
            inputs = tuple(sorted(ins, key=lambda t: (t.op._id, t.value_index)))
        try:
            attrs = _freeze(op._attrs)
        except _Unhashable:
            return None
        controls = frozenset(self._controls(op))
        return op.type, op.device, inputs, attrs, controls, len(op._outputs)

    def _controls(self, op: Operation) -> list[Operation]:
        # as executor.control_inputs + _Edges.controls: an edge on an op whose outputs are all fed is satisfied
        out = []
        for c in op._control_inputs:
            if c._outputs and all(t in self.fed for t in c._outputs):
                continue
            while c is not None and c in self.rw.ops:
                c = self.rw.ops[c]
            if c is not None:
                out.append(c)
        return out

    def _fold(self, op: Operation, ins: list[Tensor]) -> bool:
        if not ins or op._control_inputs:
            return False
        limit = self.passes.max_constant_bytes
        args = []
        for t in ins:
            value = self.const(t)
            if value is None:
                return False
            args.append(value)
        if sum(np.asarray(a).nbytes for a in args) > limit:
            return False
        for t in op._outputs:
            n = t.shape.num_elements() if t.shape.ndims is not None else None
            if n is not None and n * _itemsize(t) > limit:
                return False
        values = _evaluate(op, args)
        if values is None:
            return False
        folded = [_as_folded(v, t, limit) for v, t in zip(values, op._outputs)]
        if any(v is None for v in folded):
            return False
        for t, v in zip(op._outputs, folded):
            self.rw.folded[t] = v
        self.rw.ops[op] = None
        return True


# -- constant folding's helpers -------------------------------------------------------------------
def _evaluate(op: Operation, args: list[Any]) -> list[Any] | None:
    """`op`'s outputs computed by its kernel on `args`, or None when it fails or would wait."""
    d = op.op_def
    try:
        ctx = KernelContext(op, None)
        with np.errstate(all="ignore"):
            if d.sync is not None:
                out = d.sync(ctx, *args)
            else:
                coro = d.kernel(ctx, *args)
                try:
                    coro.send(None)
                except StopIteration as stop:
                    out = stop.value
                else:
                    coro.close()
                    return None
    except Exception:  # noqa: BLE001 - the op raises at run time, with the executor's message
        return None
    n = len(op._outputs)
    if n == 1 and not any(arg.is_list for arg in d.outputs):
        return [out]
    if not isinstance(out, (list, tuple)) or len(out) != n:
        return None
    return list(out)


def _as_folded(value: Any, t: Tensor, limit: int) -> Any:
    """`value` as a plan presets it (read-only; a numpy scalar when 0-d), or None when it is not exactly of
    `t`'s dtype and static shape (a kernel's numpy array of another dtype is left for run time) or too big."""
    want = np.dtype(t.dtype.base_dtype.as_numpy_dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype != want:
            return None
    elif isinstance(value, (bool, int, float, complex, bytes, str)):
        try:
            arr = np.asarray(value, dtype=want)
        except (TypeError, ValueError, OverflowError):
            return None
    else:
        return None
    if not t.shape.is_compatible_with(arr.shape) or arr.nbytes > limit:
        return None
    if arr.ndim == 0 and arr.dtype != object:
        return arr[()]
    view = arr.view()
    view.flags.writeable = False  # shared by every step of the plan
    return view


def _preset_form(arr: np.ndarray) -> Any:
    return arr[()] if arr.ndim == 0 and arr.dtype != object else arr


def _itemsize(t: Tensor) -> int:
    return np.dtype(t.dtype.base_dtype.as_numpy_dtype).itemsize


# -- CSE's attr comparison -------------------------------------------------------------------------
class _Unhashable(Exception):
    pass


def _freeze(v: Any) -> Any:
    """A hashable stand-in for an attr value, equal only for equal values of the same type: arrays by dtype,
    shape and bytes (so -0.0 differs from 0.0 and NaN equals itself), floats by their bits."""
    if isinstance(v, (np.ndarray, np.generic)):
        arr = np.asarray(v)
        if arr.nbytes > CSE_CONST_BYTES:
            raise _Unhashable
        if arr.dtype == object:
            return "O", arr.shape, tuple(_freeze(x) for x in arr.ravel().tolist())
        return "A", arr.dtype.str, arr.shape, arr.tobytes()
    if isinstance(v, float):
        return "f", v.hex()
    if isinstance(v, complex):
        return "c", v.real.hex(), v.imag.hex()
    if v is None or isinstance(v, (bool, int, str, bytes)):
        return type(v).__name__, v
    if isinstance(v, (list, tuple)):
        return type(v).__name__, tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return "d", tuple(sorted((str(k), _freeze(x)) for k, x in v.items()))
    if hasattr(v, "as_numpy_dtype") and hasattr(v, "name"):  # a DType
        return "dtype", v.name
    if hasattr(v, "ndims") and hasattr(v, "as_list"):  # a TensorShape
        return "shape", None if v.ndims is None else tuple(v.as_list())
    return "id", id(v)  # anything else (a function, a graph object): equal only to itself


# -- arithmetic rules: op type -> (switch, rule giving the input the result equals, or None) --------------
_FORWARDS_INPUTS = {"Identity", "IdentityN", "StopGradient", "AddN"}  # AddN only with one input

_Rule = Callable[[_Optimizer, Operation, list[Tensor]], Tensor | None]


def _keeps_shape(shape: Any, other: tuple) -> bool:
    """Whether broadcasting a tensor of static `shape` against a constant of shape `other` leaves it as it is."""
    if shape.ndims is None or len(other) > shape.ndims:
        return False
    dims = shape.as_list()
    return all(c == 1 or c == d for c, d in zip(reversed(other), reversed(dims)))


def _real(op: Operation) -> bool:
    dt = op._outputs[0].dtype.base_dtype
    return (dt.is_integer or dt.is_floating) and not dt.is_complex


def _neutral(test: Callable[[np.ndarray], bool], left: bool, when: Callable[[Operation], bool]) -> _Rule:
    """x op c -> x when `test(c)` (and c op x -> x when `left`), c a constant whose broadcast keeps x's shape."""
    def rule(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
        if not when(op):
            return None
        for keep, other in ((0, 1), (1, 0)) if left else ((0, 1),):
            c = opt.const(ins[other])
            if c is not None and test(np.asarray(c)) and _keeps_shape(op._inputs[keep].shape, np.shape(c)):
                return ins[keep]
        return None

    return rule


def _ones(c: np.ndarray) -> bool:
    return bool(np.all(c == 1))


def _add_zero(c: np.ndarray) -> bool:  # x + (-0.0) is x for every x; x + 0.0 turns -0.0 into 0.0
    return bool(np.all(c == 0)) and (c.dtype.kind in "iub" or bool(np.all(np.signbit(c))))


def _sub_zero(c: np.ndarray) -> bool:  # x - 0.0 is x for every x; x - (-0.0) is not
    return bool(np.all(c == 0)) and (c.dtype.kind in "iub" or not np.any(np.signbit(c)))


def _involution(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """f(f(x)) -> x for f its own inverse, when the inner f is an op the plan would run for nothing else."""
    inner_t = ins[0]
    inner = inner_t.op
    if inner.type != op.type or inner_t in opt.fed or inner_t in opt.rw.folded or inner._control_inputs:
        return None
    return opt.source(inner._inputs[0])


def _perm(opt: _Optimizer, t: Tensor) -> list[int] | None:
    c = opt.const(t)
    if c is None or np.ndim(c) != 1:
        return None
    p = [int(v) for v in np.asarray(c)]
    return p if sorted(p) == list(range(len(p))) else None


def _transpose(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """Transpose(Transpose(x, p), q) with p[q[i]] == i (arithmetic) -> x."""
    q = _perm(opt, ins[1])
    inner_t, inner = ins[0], ins[0].op
    if q is None or inner.type != "Transpose" or inner_t in opt.fed or inner_t in opt.rw.folded \
            or inner._control_inputs:
        return None
    p = _perm(opt, opt.source(inner._inputs[1]))
    if p is None or len(p) != len(q) or any(p[q[i]] != i for i in range(len(q))):
        return None
    return opt.source(inner._inputs[0])


def _transpose_noop(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """Transpose that moves only axes of size 1 (simplification) -> x."""
    p, shape = _perm(opt, ins[1]), op._inputs[0].shape
    if p is None or shape.ndims != len(p):
        return None
    dims = shape.as_list()
    return ins[0] if all(p[j] == j or dims[j] == 1 for j in range(len(p))) else None


def _reshape(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """Reshape to x's own, fully known static shape -> x."""
    c, shape = opt.const(ins[1]), op._inputs[0].shape
    if c is None or np.ndim(c) != 1 or not shape.is_fully_defined():
        return None
    want = [int(v) for v in np.asarray(c)]
    if want.count(-1) == 1:
        rest = int(np.prod([v for v in want if v != -1]))
        if rest <= 0 or shape.num_elements() % rest:
            return None
        want[want.index(-1)] = shape.num_elements() // rest
    return ins[0] if want == shape.as_list() else None


def _all_const(opt: _Optimizer, t: Tensor, test: Callable[[np.ndarray], bool], rank: int | None,
               width: int | None = None) -> bool:
    """Whether `t` is a constant passing `test` whose first dimension is `rank` (each row `width` long)."""
    c = opt.const(t)
    if c is None or rank is None:
        return False
    c = np.asarray(c)
    return c.ndim >= 1 and c.shape[0] == rank and (width is None or c.shape[1:] == (width,)) and test(c)


def _tile(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    ok = _all_const(opt, ins[1], lambda c: bool(np.all(c == 1)), op._inputs[0].shape.ndims)
    return ins[0] if ok else None


def _pad(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    ok = _all_const(opt, ins[1], lambda c: bool(np.all(c == 0)), op._inputs[0].shape.ndims, 2)
    return ins[0] if ok else None


def _slice(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    shape = op._inputs[0].shape
    begin, size = opt.const(ins[1]), opt.const(ins[2])
    if begin is None or size is None or shape.ndims is None or np.shape(begin) != (shape.ndims,) \
            or np.shape(size) != (shape.ndims,):
        return None
    dims = shape.as_list()
    full = all(int(b) == 0 and (int(s) == -1 or s == d) for b, s, d in zip(np.asarray(begin), np.asarray(size), dims))
    return ins[0] if full else None


def _squeeze(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """Squeeze of a tensor with no dimension of size 1 (or possibly 1) -> x."""
    shape = op._inputs[0].shape
    return ins[0] if shape.ndims is not None and all(d is not None and d > 1 for d in shape.as_list()) else None


def _reverse(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """ReverseV2 along axes of size 1 only -> x."""
    c, shape = opt.const(ins[1]), op._inputs[0].shape
    if c is None or np.ndim(c) != 1 or shape.ndims is None:
        return None
    n, dims = shape.ndims, shape.as_list()
    axes = [int(a) for a in np.asarray(c)]
    return ins[0] if all(-n <= a < n and dims[a] == 1 for a in axes) else None


def _split_one(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    """Split into one piece along a valid axis -> the value."""
    c, shape = opt.const(ins[0]), op._inputs[1].shape
    if op._attrs.get("num_split") != 1 or c is None or np.ndim(c) != 0 or shape.ndims is None:
        return None
    return ins[1] if -shape.ndims <= int(c) < shape.ndims else None


def _same(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    return ins[0]  # Cast: `_forward` takes it only when the dtype is already the one asked for


def _integer(op: Operation) -> bool:
    return op._outputs[0].dtype.base_dtype.is_integer


def _boolean(op: Operation) -> bool:
    return op._outputs[0].dtype.base_dtype.is_bool


_RULES: dict[str, tuple[str, _Rule]] = {
    # grappler's constant folding simplifications
    "Mul": ("simplification", _neutral(_ones, True, _real)),
    "Div": ("simplification", _neutral(_ones, False, _real)),
    "RealDiv": ("simplification", _neutral(_ones, False, _real)),
    "FloorDiv": ("simplification", _neutral(_ones, False, _integer)),
    "TruncateDiv": ("simplification", _neutral(_ones, False, _integer)),
    "AddV2": ("simplification", _neutral(_add_zero, True, _real)),
    "Sub": ("simplification", _neutral(_sub_zero, False, _real)),
    "LogicalAnd": ("simplification", _neutral(lambda c: bool(np.all(c)), True, _boolean)),
    "LogicalOr": ("simplification", _neutral(lambda c: not np.any(c), True, _boolean)),
    "Tile": ("simplification", _tile),
    "Pad": ("simplification", _pad),
    "PadV2": ("simplification", _pad),
    "MirrorPad": ("simplification", _pad),
    "Slice": ("simplification", _slice),
    "Squeeze": ("simplification", _squeeze),
    "ReverseV2": ("simplification", _reverse),
    "Split": ("simplification", _split_one),
    # grappler's arithmetic optimizer
    "Neg": ("arithmetic", _involution),
    "LogicalNot": ("arithmetic", _involution),
    "Invert": ("arithmetic", _involution),
    "Conj": ("arithmetic", _involution),
    "Cast": ("arithmetic", _same),
    "Reshape": ("arithmetic", _reshape),
}


def _transpose_rule(opt: _Optimizer, op: Operation, ins: list[Tensor]) -> Tensor | None:
    if opt.passes.arithmetic:
        t = _transpose(opt, op, ins)
        if t is not None:
            return t
    return _transpose_noop(opt, op, ins) if opt.passes.simplification else None


_RULES["Transpose"] = ("either", _transpose_rule)
