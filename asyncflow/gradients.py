"""Automatic differentiation: `af.gradients`, `IndexedSlices`, and gradient registration.

The whitepaper's method: the backward graph is built by extending the graph, op by op, from
the ys back to the xs. Each op's gradient function lives in the op's own declaration
(`@SomeOp.gradient`, TF's signature `grad_fn(op, *output_grads) -> input grads`); this module
only drives them:

  1. `_between`: the ops on some path from an x to a y (stopping at `stop_gradients`).
  2. pending[op] = how many of its outputs' consumers are in that set and still owe a gradient.
  3. Starting from the ys (with `grad_ys`, ones by default), pop an op whose consumers have all
     contributed, sum each output's gradients (`add_n`; sparse ones stay `IndexedSlices`), call
     its gradient function under `gradients/<op>_grad`, hand each input its share.
  4. Each x gets the sum of what reached it, or None when no path leads there.

Only floating and complex tensors carry gradients (as TF). An op on the path without a gradient
function raises LookupError naming the op and its type; ops declared `differentiable=False`
(or marked with `NotDifferentiable`) pass no gradient.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from asyncflow.graph import Operation, Tensor, colocate_with, get_default_graph, name_scope
from asyncflow.ops.registry import OPS, convert_to_tensor

GradientFunction = Callable[..., Any]
_REGISTERED: dict[str, GradientFunction | None] = {}


class IndexedSlicesValue(NamedTuple):
    """What `Session.run` gives for a fetched `IndexedSlices`, and takes as its feed (TF1's type)."""

    values: Any
    indices: Any
    dense_shape: Any = None


class IndexedSlices:
    """A sparse gradient: rows `indices` of a tensor of shape `dense_shape` hold `values`."""

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)
    op = property(lambda self: self._values.op)
    name = property(lambda self: self._values.name)
    device = property(lambda self: self._values.device)

    def get_shape(self) -> Any:
        from asyncflow.ops.registry import constant_value_as_shape

        if self._dense_shape is None:
            return self._values.shape[:0].concatenate([None]).concatenate(self._values.shape[1:])
        return constant_value_as_shape(self._dense_shape)

    shape = property(get_shape)

    def _as_tensor(self) -> Tensor:
        """The dense tensor: rows summed into place (`unsorted_segment_sum`), as TF converts them."""
        from asyncflow.ops.array import shape as shape_of
        from asyncflow.ops.array import unsorted_segment_sum

        if self._dense_shape is None:
            raise ValueError(f"IndexedSlices {self.name} has no dense_shape; it cannot be made dense.")
        rows = self._dense_shape[0] if self._dense_shape is not None else shape_of(self._values)[0]
        return unsorted_segment_sum(self._values, self._indices, rows)

    def __repr__(self) -> str:
        return f"IndexedSlices(indices={self._indices!r}, values={self._values!r}, dense_shape={self._dense_shape!r})"


def RegisterGradient(op_type: str) -> Callable[[GradientFunction], GradientFunction]:  # noqa: N802 - TF's name
    """Registers `fn(op, *grads)` as the gradient of `op_type`, or of a name used in `gradient_override_map`."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")

    def register(fn: GradientFunction) -> GradientFunction:
        if op_type in _REGISTERED:
            raise KeyError(f"Registering two gradient with name '{op_type}'! (Previous registration was in "
                           f"{getattr(_REGISTERED[op_type], '__module__', '?')})")
        _REGISTERED[op_type] = fn
        return fn

    return register


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's name
    """Declares that `op_type` passes no gradient (its inputs get None)."""
    if op_type in OPS:
        OPS[op_type].differentiable = False
        OPS[op_type].grad = None
    _REGISTERED[op_type] = None


no_gradient = NotDifferentiable
NoGradient = NotDifferentiable


def gradient_function(op: Operation) -> tuple[bool, GradientFunction | None]:
    """(differentiable, fn) for `op`, honouring `gradient_override_map` (the `_gradient_op_type` attr)."""
    override = op._attrs.get("_gradient_op_type")
    if override is not None:
        if override not in _REGISTERED:
            raise LookupError(f"gradient_override_map names '{override}' for op '{op.name}', but no gradient is "
                              f"registered under that name")
        fn = _REGISTERED[override]
        return fn is not None, fn
    if op.type in _REGISTERED:
        fn = _REGISTERED[op.type]
        return fn is not None, fn
    opdef = op.op_def
    if opdef is None or not opdef.differentiable:
        return False, None
    return True, opdef.grad


def _backprop_dtype(t: Tensor) -> bool:
    base = t.dtype.base_dtype
    return base.is_floating or base.is_complex


def _as_tensors(values: Any, as_ref: bool) -> list[Tensor]:
    items = values if isinstance(values, (list, tuple)) else [values]
    out = []
    for v in items:
        if hasattr(v, "_ref") and as_ref:
            out.append(v._ref())
        elif isinstance(v, IndexedSlices):
            out.append(v.values)
        else:
            out.append(convert_to_tensor(v))
    return out


def _between(ys: list[Tensor], xs: list[Tensor], stops: set[Operation], stop_at_xs: bool = False) -> set[Operation]:
    """Ops on a path from an x to a y that carries gradients (backprop dtypes, no stop).

    `stop_at_xs` (a loop body's gradient): paths end at the xs, so the loop's own cycle is not followed.
    """
    reached: set[Operation] = set()
    queue = deque(x.op for x in xs)
    while queue:
        op = queue.popleft()
        if op in reached or op in stops:
            continue
        reached.add(op)
        for out in op._outputs:
            if _backprop_dtype(out):
                queue.extend(out._consumers)
    between: set[Operation] = set()
    x_ops = {x.op for x in xs} if stop_at_xs else set()
    queue = deque(y.op for y in ys)
    while queue:
        op = queue.popleft()
        if op in between or op not in reached:
            continue
        between.add(op)
        if op not in x_ops:
            queue.extend(t.op for t in op._inputs)
    return between


def _aggregate(grads: list[Any], name: str) -> Any:
    """Sums the gradients that reached one tensor: dense by add_n, all-sparse by concatenation."""
    from asyncflow.ops.array import concat
    from asyncflow.ops.math import add_n

    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, IndexedSlices) for g in grads):
        return IndexedSlices(concat([g.values for g in grads], 0), concat([g.indices for g in grads], 0),
                             grads[0].dense_shape)
    dense = [g._as_tensor() if isinstance(g, IndexedSlices) else g for g in grads]
    return add_n(dense, name=name)


def _default_grad_y(y: Tensor, i: int) -> Tensor:
    from asyncflow.ops.array import fill, shape

    with name_scope(f"grad_ys_{i}"):
        if y.shape.is_fully_defined():
            from asyncflow.ops.array import ones

            return ones(y.shape, dtype=y.dtype.base_dtype, name="Fill")
        return fill(shape(y), convert_to_tensor(1, dtype=y.dtype.base_dtype))


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: str = "none",
    _level: Any = None,
) -> list[Any]:
    """`af.gradients`: the symbolic partial derivatives of sum(ys) with respect to each x.

    Returns one entry per x: a Tensor, an `IndexedSlices` (for sparse reads such as `gather`), or
    None when x does not affect ys (`unconnected_gradients="zero"` gives zeros instead).
    """
    ys_list = _as_tensors(ys, as_ref=False)
    xs_list = _as_tensors(xs, as_ref=True)
    grad_ys_list = [None] * len(ys_list) if grad_ys is None else list(grad_ys if isinstance(grad_ys, (list, tuple))
                                                                        else [grad_ys])
    if len(grad_ys_list) != len(ys_list):
        raise ValueError(f"Passed {len(grad_ys_list)} grad_ys for {len(ys_list)} ys")
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
    stops = {t.op for t in _as_tensors(stop_gradients, as_ref=False)} if stop_gradients is not None else set()
    graph = ys_list[0].graph if ys_list else get_default_graph()
    with graph.as_default(), name_scope(name, "gradients", ys_list + xs_list):
        between = _between(ys_list, xs_list, stops, stop_at_xs=_level is not None)
        # A while loop inside `between` is one node: its gradient is a whole backward loop.
        node_of = {op: _loop_of(op, _level) or op for op in between}
        members: dict[Any, set[Operation]] = {}
        for op, node in node_of.items():
            if node is not op:
                members.setdefault(node, set()).add(op)
        pending = {node: 0 for node in node_of.values()}
        for op in between:
            for t in op._inputs:
                if t.op in between and node_of[t.op] is not node_of[op]:
                    pending[node_of[t.op]] += 1
        received: dict[Tensor, list[Any]] = {}
        for i, (y, gy) in enumerate(zip(ys_list, grad_ys_list)):
            if y.op not in between:
                continue
            if gy is None:
                if y.dtype.base_dtype.is_complex:
                    raise TypeError(f"Gradients of complex tensors ({y}) must set grad_ys (y.dtype = "
                                    f"{y.dtype.base_dtype.name})")
                gy = _default_grad_y(y, i)
            elif not isinstance(gy, IndexedSlices):
                gy = convert_to_tensor(gy, dtype=y.dtype.base_dtype, name=f"grad_ys_{i}")
            received.setdefault(y, []).append(gy)
        def order(node: Any) -> int:  # creation order: the backward graph is the same on every call
            return min(o._id for o in members[node]) if node in members else node._id

        ready = deque(sorted((n for n, p in pending.items() if p == 0), key=order))
        xs_set = set(xs_list)
        while ready:
            node = ready.popleft()
            if node in members:
                _backprop_loop(node, members[node], received, between, xs_set)
            else:
                _backprop_op(node, received, between, stops, xs_set, colocate_gradients_with_ops)
            for op in members.get(node, (node,)):
                for t in op._inputs:
                    if t.op in between and node_of[t.op] is not node:
                        src = node_of[t.op]
                        pending[src] -= 1
                        if pending[src] == 0:
                            ready.append(src)
        results = []
        for x in xs_list:
            g = _aggregate(received.get(x, []), name=f"{x.op.name}_grad/AddN") if x in received else None
            if g is None and unconnected_gradients == "zero":
                from asyncflow.ops.array import zeros_like

                g = zeros_like(x)
            results.append(g)
        return results


def _backprop_op(op: Operation, received: dict[Tensor, list[Any]], between: set[Operation],
                 stops: set[Operation], xs: set[Tensor], colocate: bool) -> None:
    """Calls `op`'s gradient function with its summed output gradients; files the input gradients."""
    if op in stops:
        return
    out_grads = []
    for t in op._outputs:
        g = _aggregate(received.get(t, []), name=f"{op.name}_grad/AddN_{t.value_index}") if t in received else None
        out_grads.append(g)
        if g is not None:
            received[t] = [g]
    if all(g is None for g in out_grads) or not any(t.op in between or t in xs for t in op._inputs):
        return
    differentiable, fn = gradient_function(op)
    if not differentiable:
        return
    if fn is None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
    for i, t in enumerate(op._outputs):  # TF hands zeros to a gradient function for unused outputs
        if out_grads[i] is None and _backprop_dtype(t):
            from asyncflow.ops.array import zeros_like

            # Computed from `t` itself, not folded to a constant: on an untaken cond branch it must be dead.
            out_grads[i] = zeros_like(t, optimize=False)
    scope = name_scope(op.name + "_grad")
    with scope, (colocate_with(op) if colocate else _nullcontext()):
        in_grads = fn(op, *out_grads)
    if not isinstance(in_grads, (list, tuple)):
        in_grads = [in_grads]
    if len(in_grads) != len(op._inputs):
        raise ValueError(f"Gradient function of {op.type} ('{op.name}') returned {len(in_grads)} gradients for "
                         f"{len(op._inputs)} inputs")
    for t, g in zip(op._inputs, in_grads):
        if g is None or not _backprop_dtype(t) or (t.op not in between and t not in xs):
            continue
        if not isinstance(g, IndexedSlices):
            g = convert_to_tensor(g)
            if g.dtype.base_dtype != t.dtype.base_dtype:
                raise TypeError(f"Gradient of {op.type} '{op.name}' for input {t.name} has dtype "
                                f"{g.dtype.base_dtype.name}, expected {t.dtype.base_dtype.name}")
        received.setdefault(t, []).append(g)


def _loop_of(op: Operation, level: Any) -> Any:
    """The outermost while loop holding `op` below `level` (the loop whose body is being differentiated)."""
    from asyncflow.control_flow import _WhileContext

    found, ctx = None, op._cf_context
    while ctx is not None and ctx is not level:
        if isinstance(ctx, _WhileContext):
            found = ctx
        ctx = ctx.outer
    return found


def _backprop_loop(loop: Any, members: set[Operation], received: dict[Tensor, list[Any]],
                   between: set[Operation], xs: set[Tensor]) -> None:
    """A whole while loop's gradient: a backward loop from its Exits' gradients to what it took in."""
    from asyncflow.control_flow_grad import loop_gradients

    exit_grads = [_aggregate(received[x], name=f"{x.op.name}_grad/AddN") if x in received else None
                  for x in loop.exits]
    wanted = {t for op in members for t in op._inputs
              if t.op not in members and (t.op in between or t in xs) and _backprop_dtype(t)}
    for t, g in loop_gradients(loop, members, exit_grads, wanted).items():
        received.setdefault(t, []).append(g)


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def hessians(ys: Any, xs: Any, name: str = "hessians", **kwargs: Any) -> list[Tensor]:
    """Second derivatives of sum(ys) for each x in `xs` (dense; each x flattened, as TF)."""
    from asyncflow.ops.array import reshape, stack, unstack
    from asyncflow.ops.registry import constant

    out = []
    xs_list = xs if isinstance(xs, (list, tuple)) else [xs]
    with name_scope(name):
        for x in xs_list:
            (g,) = gradients(ys, x, **kwargs)
            flat = reshape(g, [-1])
            n = flat.shape[0].value
            if n is None:
                raise ValueError("hessians needs x with a fully known shape")
            rows = [gradients(row, x)[0] for row in unstack(flat, num=n)]
            shape = constant(list(x.shape.as_list()) * 2)
            out.append(reshape(stack(rows), shape))
    return out


__all__ = [
    "gradients", "IndexedSlices", "IndexedSlicesValue", "RegisterGradient", "NotDifferentiable", "NoGradient",
    "no_gradient", "hessians",
]
