"""Gradients through `while_loop`: a backward loop fed by stacks, as TF1 builds it.

For a forward loop W that ran N iterations, the gradient is a second loop of N iterations that
walks W's body backwards: its loop variables are the gradients of W's loop variables (starting
from the gradients of W's Exits) and, for each tensor W captured from outside (a constant
Enter), an accumulator of that tensor's gradient over all iterations. The backward body is the
gradient of W's body (`af.gradients` of the body's outputs with respect to its inputs), built
inside a `_GradWhileContext`: when one of its ops needs a value computed inside W, the context
adds a StackPushV2 of that value to W's body and hands out a StackPopV2 in the backward body,
so iteration k of W is matched with iteration N-1-k of the backward loop. W gets an iteration
counter (its Exit gives N); each iteration's pushes are chained to the counter so pushes, and
pops, happen in iteration order even with several iterations in flight.

Nesting (TF1's nested GradLoopState): a value computed inside a cond of W's body is live only in
the iterations that took that branch. Its push sits in the branch (it runs only then), and its pop
is guarded by a Switch of the stack handle on the cond's predicate as that iteration saw it (the
predicate is itself stacked, guarded by any cond around it), so pushes and pops pair up. Such a
push or pop may be dead, and a dead control input would kill the counter it orders: each is joined
back to the loop's level by a Merge of "ran" (after it) and "the other branch" (a Switch of the
counter), one per enclosing cond, and that Merge orders the next iteration. A loop inside W's body
(W2) is one node of the body's gradient, whose backward loop is built inside W's: W2's stacks are
made in W's body (a new stack each outer iteration), and their handles reach W2's backward loop the
way any value of W's body does, through W's own stacks. A loop inside a cond gets its counter and
stacks in that branch; when the branch is not taken they are dead, and so is its backward loop.
"""

from __future__ import annotations

from typing import Any

from asyncflow.control_flow import _CondContext, _WhileContext, while_loop
from asyncflow.graph import Operation, Tensor, control_dependencies
from asyncflow.ops import control_flow_ops as cf
from asyncflow.ops.array import identity, zeros_like
from asyncflow.ops.registry import constant


class _GradWhileContext(_WhileContext):
    """The backward loop's context: values of the forward loop arrive through stacks."""

    forward: _WhileContext

    def __init__(self, outer: Any, scope: str, frame_name: str, parallel_iterations: int):
        super().__init__(outer, scope, frame_name, parallel_iterations)
        self._pops: list[Operation] = []

    def capture(self, t: Tensor) -> Tensor:
        if self.owns(t.op):
            return t
        fwd = self.forward
        if fwd.owns(t.op):
            if t.op.op_def.control_flow == "enter" and t.op._attrs.get("is_constant"):
                return self.capture(t.op.inputs[0])  # loop-invariant: the outside value itself
            hit = self._captured.get(t)
            if hit is None:
                hit = self._captured[t] = self._stacked(t)
            return hit
        return super().capture(t)

    def _stacked(self, t: Tensor) -> Tensor:
        """Pushes `t` each forward iteration where it is live; returns its pop for the matching backward
        iteration (guarded by the same conds, so it is live exactly there)."""
        fwd = self.forward
        graph = t.graph
        push_ctx, guards = _liveness(t, fwd)
        saved_ctx, saved_scope = graph._cf_context, graph._name_stack
        try:
            graph._cf_context, graph._name_stack = fwd.outer, fwd.scope.rstrip("/")
            with control_dependencies(None):
                handle = cf.stack_v2_op(constant(-1, name="f_acc_size"), elem_type=t.dtype.base_dtype,
                                        stack_name=f"{t.op.name}_stack", name="f_acc")
            graph._cf_context = fwd  # everything below is fwd's or inside it: nothing is captured again
            with control_dependencies([fwd.count_identity.op]):  # in iteration order
                push = cf.stack_push_v2_op(handle, t, name="StackPushV2")
            push.op._cf_context = push_ctx
            fwd.count_next._add_control_input(_joined(push.op, fwd.count_identity, guards))
            graph._name_stack = self.scope.rstrip("/")
            real_guards = [(self.capture(pred), branch) for pred, branch in guards]  # as that iteration saw them
            graph._cf_context = self
            inner = self.capture(handle)
            if real_guards:
                inner = cf.switch_op(inner, real_guards[0][0], name="StackPopGuard")[real_guards[0][1]]
            with control_dependencies([self.pivot_op()]):
                pop = cf.stack_pop_v2_op(inner, elem_type=t.dtype.base_dtype, name="StackPopV2")
            pop.op._cf_context = self
            self._pops.append(_joined(pop.op, self.pivot_op().outputs[0], real_guards))
        finally:
            graph._cf_context, graph._name_stack = saved_ctx, saved_scope
        pop._shape = t.shape
        return pop

    def finish(self, next_iterations: list[Tensor]) -> None:
        for pop in self._pops:  # the next backward iteration pops only after this one did
            next_iterations[0].op._add_control_input(pop)


def _liveness(t: Tensor, loop: _WhileContext) -> tuple[Any, list[tuple[Tensor, int]]]:
    """Where `t` (a value computed in `loop`'s body) is live: the context its push belongs to, and the
    conds between it and `loop`, innermost first, as (the cond's predicate, the branch taken)."""
    op = t.op
    ctx = op._cf_context
    if op.op_def is not None and op.op_def.control_flow == "exit":
        ctx = ctx.outer  # an inner loop's result lives around that loop
    guards: list[tuple[Tensor, int]] = []
    if op.op_def is not None and op.op_def.control_flow == "switch" and isinstance(ctx, _CondContext) \
            and t.value_index != ctx.branch:
        guards.append((ctx.pred, 1 - ctx.branch))  # a branch's capture seen from the other branch
        ctx = ctx.outer
    push_ctx = ctx
    while ctx is not None and ctx is not loop:
        if isinstance(ctx, _CondContext):
            guards.append((ctx.pred, ctx.branch))
        elif isinstance(ctx, _WhileContext):
            raise LookupError(f"No gradient defined for '{op.name}': the gradient of while_loop "
                              f"'{loop.scope[:-1]}' needs a value of the inner loop '{ctx.scope[:-1]}' from outside it")
        ctx = ctx.outer
    return push_ctx, guards


def _joined(op: Operation, anchor: Tensor, guards: list[tuple[Tensor, int]]) -> Operation:
    """An op at the loop's level that runs once `op` ran, or once it is known not to (an untaken branch):
    per enclosing cond, Merge(Switch(anchor, pred)[other branch], Identity(Switch(anchor, pred)[branch]) after
    `op`), TF's ControlTrigger built from ops whose dead-ness rules are the frame executor's own."""
    for pred, branch in guards:
        sides = cf.switch_op(anchor, pred, name="JoinSwitch")
        with control_dependencies([op]):
            ran = identity(sides[branch], name="JoinRan")
        op = cf.merge_op([sides[1 - branch], ran], name="Join")[0].op
    return op


def _grad_context(forward: _WhileContext) -> Any:
    def make(outer: Any, scope: str, frame_name: str, parallel_iterations: int) -> _GradWhileContext:
        ctx = _GradWhileContext(outer, scope, frame_name, parallel_iterations)
        ctx.forward = forward
        return ctx

    return make


def forward_count(loop: _WhileContext) -> Tensor:
    """Adds an iteration counter to `loop` (once); returns its Exit: how many iterations ran."""
    if loop.count is not None:
        return loop.count
    graph = loop.pred.graph
    saved_ctx, saved_scope = graph._cf_context, graph._name_stack
    try:
        graph._cf_context, graph._name_stack = loop.outer, loop.scope.rstrip("/")
        with control_dependencies(None):
            start = constant(0, name="f_count_start")
            enter = cf.enter_op(start, frame_name=loop.frame_name, is_constant=False,
                                parallel_iterations=loop.parallel_iterations, name="f_count")
            enter.op._cf_context = loop
            merge = cf.merge_op([enter, enter], name="f_count_merge")[0]
            merge.op._cf_context = loop
            switch = cf.switch_op(merge, loop.pred, name="f_count_switch")
            switch[0].op._cf_context = loop
            exit_ = cf.exit_op(switch[0], name="f_count_exit")
            exit_.op._cf_context = loop
        graph._cf_context = loop
        with loop.entered(switch[1].op), control_dependencies(None):
            count_id = identity(switch[1], name="f_count_identity")
            from asyncflow.ops.math import add

            nxt = cf.next_iteration_op(add(count_id, 1), name="f_count_next")
        merge.op._update_input(1, nxt)
    finally:
        graph._cf_context, graph._name_stack = saved_ctx, saved_scope
    loop.count, loop.count_identity, loop.count_next = exit_, count_id, nxt.op
    return exit_


def loop_gradients(loop: _WhileContext, members: set[Operation], exit_grads: list[Any],
                   wanted: set[Tensor]) -> dict[Tensor, Any]:
    """Gradients for the tensors `loop` takes from outside, given the gradients of its Exits.

    Returns {outside tensor: gradient}: for each loop variable's initial value and each captured tensor
    that is in `wanted` (on the way to the xs).
    """
    from asyncflow.gradients import IndexedSlices, _backprop_dtype, gradients
    from asyncflow.ops.math import add, greater, subtract

    if not getattr(loop, "back_prop", True):
        return {}
    first = 1 if getattr(loop, "has_counter", False) else 0
    var_ids = [j for j in range(first, len(loop.exits)) if _backprop_dtype(loop.exits[j])]
    # What the loop's Enter took in: for a loop nested in a cond or a loop, the enclosing context's capture
    # of the original tensor (that capture's own gradient takes it further out).
    captured = [(inside.op.inputs[0], inside) for inside in loop._captured.values()
                if _backprop_dtype(inside) and inside.op.inputs[0] in wanted]
    if not var_ids:
        return {}
    count = forward_count(loop)

    def dense(g: Any) -> Any:
        return g._as_tensor() if isinstance(g, IndexedSlices) else g

    init = [count] + [dense(exit_grads[j]) if exit_grads[j] is not None else zeros_like(loop.exits[j])
                      for j in var_ids] + [zeros_like(outside) for outside, _ in captured]

    def cond(n: Tensor, *rest: Tensor) -> Tensor:
        return greater(n, 0)

    def body(n: Tensor, *rest: Tensor) -> list[Tensor]:
        grads_in, accs = list(rest[:len(var_ids)]), list(rest[len(var_ids):])
        ys = [loop.next_iterations[j].op.inputs[0] for j in var_ids]
        xs = [loop.identities[j] for j in var_ids] + [inside for _, inside in captured]
        grads = gradients(ys, xs, grad_ys=grads_in, _level=loop)
        out = [subtract(n, 1)]
        out += [dense(g) if g is not None else zeros_like(gi) for g, gi in zip(grads[:len(var_ids)], grads_in)]
        out += [add(acc, dense(g)) if g is not None else acc for g, acc in zip(grads[len(var_ids):], accs)]
        return out

    # A gradient varies across backward iterations as its variable did forward (an accumulator that grows
    # by one row per step, say), so each takes its forward loop variable's invariant shape.
    invariants = [count.shape] + [loop.identities[j].shape for j in var_ids]
    invariants += [t.shape for t in init[1 + len(var_ids):]]
    result = while_loop(cond, body, init, shape_invariants=invariants, parallel_iterations=loop.parallel_iterations,
                        name=f"{loop.scope[:-1].split('/')[-1]}_grad", _context_factory=_grad_context(loop),
                        return_same_structure=True)
    out: dict[Tensor, Any] = {}
    pairs = [(loop.enters[j].op.inputs[0], result[1 + k]) for k, j in enumerate(var_ids)]
    pairs += [(outside, result[1 + len(var_ids) + k]) for k, (outside, _) in enumerate(captured)]
    for t, g in pairs:  # a tensor both starts a loop variable and is read in the body: both shares count
        out[t] = add(out[t], g) if t in out else g
    return out
