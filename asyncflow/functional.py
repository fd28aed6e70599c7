"""`af.map_fn`, `af.scan`, `af.foldl`, `af.foldr`: TF1's functional ops, each one `while_loop`.

The loops are TF1's (`map/while/`, `scan/while/`, `foldl/while/`, `foldr/while/`, with
`maximum_iterations=n`, so TF1's loop-variable layout and Exit names), and so are the arguments, the
nested structures (tuples, lists, namedtuples, dicts; `fn`'s results must have the structure of
`elems`, of `dtype` or of `initializer`), the static shapes ([n] + the shape of one result when
`infer_shape`), and the errors. `fn` is traced once, inside the loop's body; variables it makes with
`get_variable` are created once, outside the loop.

How the values move. TF1 reads element i from a TensorArray and writes result i into another. Here
the body reads element i with a gather, and appends result i, flattened, to a 1-D loop-carried
accumulator (a second loop variable carries the result's shape, since `fn`'s result shape is known
only once `fn` has been traced); after the loop one reshape makes the stacked [n, ...] tensor. Both
are ops the while-loop gradient already differentiates, so gradients reach `elems`, `initializer`
and any tensor or variable `fn` captures.

Cost: each append copies the accumulator, so the forward loop moves O(n^2 * result size) bytes,
and when a gradient is built each step's accumulator is kept for the backward loop (the concat's
gradient needs its length), so memory is O(n^2) too; each backward step densifies the gather's
gradient, O(n * element size). Right for the batch- and sequence-sized maps TF1 programs write
(a per-image map over a batch); not for very long sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import flatten, pack_as, while_loop
from asyncflow.graph import Tensor, control_dependencies, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.logging_ops import Assert
from asyncflow.ops.math_reduce import reduce_all
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.shapes import TensorShape


# -- structures ----------------------------------------------------------------------------------------
def _is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def _describe(x: Any) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in sorted(x.items())) + "}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_describe(v) for v in x)
        return f"{type(x).__name__}({inner})" if hasattr(x, "_fields") else \
            ("[" + inner + "]" if isinstance(x, list) else "(" + inner + ("," if len(x) == 1 else "") + ")")
    return "."


def _assert_same_structure(who: str, expected: Any, got: Any) -> None:
    """As TF's nest.assert_same_structure: a different nesting is a ValueError, the same nesting built
    from different sequence types (a list for a tuple) a TypeError."""

    def differ(kind: type) -> None:
        raise kind(f"{who}: The two structures don't have the same nested structure: expected "
                   f"{_describe(expected)}, fn returned {_describe(got)}")

    def walk(e: Any, g: Any) -> None:
        if isinstance(e, dict):
            if not isinstance(g, dict) or sorted(e) != sorted(g):
                differ(ValueError)
            for k in e:
                walk(e[k], g[k])
        elif isinstance(e, (list, tuple)):
            if not isinstance(g, (list, tuple)) or len(e) != len(g):
                differ(ValueError)
            for a, b in zip(e, g):
                walk(a, b)
            if type(e) is not type(g) and not (isinstance(e, list) and isinstance(g, list)):
                differ(TypeError)
        elif _is_nested(g):
            differ(ValueError)

    walk(expected, got)


# -- elements ------------------------------------------------------------------------------------------
def _check_fn(who: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{who}: fn must be callable, got {fn!r}")


def _elements(who: str, elems: Any) -> tuple[list[Tensor], int | None, Tensor]:
    """The flat element tensors (inside the caller's name scope), their static count and their count."""
    flat = flatten(elems)
    if not flat:
        raise ValueError(f"{who}: elems must be a Tensor or (possibly nested) sequence of Tensors. Got {elems!r}, "
                         f"which does not contain any Tensors.")
    flat = [convert_to_tensor(x, name="elem") for x in flat]
    for x in flat:
        if x.shape.ndims == 0:
            raise ValueError(f"{who}: Elements in elems must be 1+ dimensional Tensors, not scalars; got {x.name} "
                             f"of shape {x.shape}")
    n_static = None
    for x in flat:
        d = x.shape[0].value if x.shape.ndims is not None else None
        if d is not None and n_static is not None and d != n_static:
            raise ValueError(f"{who}: Dimensions {n_static} and {d} are not compatible: every tensor in elems must "
                             f"have the same first dimension")
        n_static = d if d is not None else n_static
    n = convert_to_tensor(n_static, dtype=dtypes.int32) if n_static is not None else \
        array.shape(flat[0], out_type=dtypes.int32)[0]
    return flat, n_static, n


def _read(flat: list[Tensor], i: Any) -> list[Tensor]:
    out = []
    for x in flat:
        x_i = array.gather(x, i)
        if x.shape.ndims is not None:
            x_i.set_shape(x.shape[1:])
        out.append(x_i)
    return out


def _results(who: str, value: Any, want: list[dtypes.DType]) -> list[Tensor]:
    """fn's flat results as tensors of the expected dtypes (python values are converted)."""
    flat = flatten(value)
    out = []
    for k, (v, d) in enumerate(zip(flat, want)):
        if isinstance(v, Tensor):
            if v.dtype.base_dtype != d:
                raise TypeError(f"{who}: fn returned a {v.dtype.base_dtype.name} tensor for output {k} ({v.name}), "
                                f"but {d.name} was expected (the dtype of elems, initializer or dtype=)")
        else:
            v = convert_to_tensor(v, dtype=d)
        out.append(v)
    return out


# -- the stacked outputs -------------------------------------------------------------------------------
class _Stacked:
    """Results appended one per iteration, stacked after the loop: a flat accumulator per output and the
    runtime shape of one result (see the module docstring for the cost)."""

    def __init__(self, out_dtypes: list[dtypes.DType]):
        self.dtypes = out_dtypes
        self.static: list[TensorShape | None] = [None] * len(out_dtypes)  # one result's shape, once traced

    def initial(self, first: list[Tensor] | None = None) -> list[list[Tensor]]:
        """Empty accumulators, or holding `first` (scan's first element when it has no initializer)."""
        if first is None:
            accs = [convert_to_tensor([], dtype=d) for d in self.dtypes]
            shapes = [convert_to_tensor([], dtype=dtypes.int32) for _ in self.dtypes]
        else:
            accs = [array.reshape(v, [-1]) for v in first]
            shapes = [array.shape(v, out_type=dtypes.int32) for v in first]
            self.static = [v.shape for v in first]
        return [accs, shapes]

    @staticmethod
    def invariants(n: int) -> list[list[TensorShape]]:
        return [[TensorShape([None])] * n, [TensorShape([None])] * n]

    @staticmethod
    def _same_shape_check(before: Tensor, v: Tensor) -> list[Any]:
        """Every result must have the first one's shape (TF1's TensorArray refuses another one at run time);
        only needed where the static shape leaves room for a difference."""
        if v.shape.ndims is None:
            return []
        now = array.shape(v, out_type=dtypes.int32)
        first = array.concat([before, now], 0)[:v.shape.ndims]  # `now` itself in the first iteration
        same = reduce_all(math.equal(first, now))
        return [Assert(same, ["fn's result has shape", now, "but an earlier one had shape", first],
                       name="check_shape")]

    def append(self, accs: list[Tensor], shapes: list[Tensor], values: list[Tensor],
               at_front: bool = False) -> list[list[Tensor]]:
        grown = []
        for k, (acc, v) in enumerate(zip(accs, values)):
            if self.static[k] is None:  # map_fn: known once fn has been traced
                self.static[k] = v.shape
            checks = [] if v.shape.is_fully_defined() else self._same_shape_check(shapes[k], v)
            with control_dependencies(checks):
                piece = array.reshape(v, [-1])
            grown.append(array.concat([piece, acc] if at_front else [acc, piece], 0))
        return [grown, [array.shape(v, out_type=dtypes.int32) for v in values]]

    def stack(self, accs: list[Tensor], shapes: list[Tensor], n_static: int | None, n: Tensor,
              infer_shape: bool) -> list[Tensor]:
        out = []
        for acc, shape_t, static in zip(accs, shapes, self.static):
            with name_scope("TensorArrayStack"):  # TF1's scope for the stacked TensorArray
                if static is not None and static.is_fully_defined():
                    dims = static.as_list()
                    target = [n_static] + dims if n_static is not None else \
                        array.concat([array.reshape(n, [1]), convert_to_tensor(dims, dtype=dtypes.int32)], 0)
                else:
                    target = array.concat([array.reshape(n, [1]), shape_t], 0)
                r = array.reshape(acc, target, name="TensorArrayGatherV3")
            if infer_shape and static is not None:
                r.set_shape(TensorShape([n_static]).concatenate(static))
            elif not infer_shape:
                r._shape = TensorShape(None)  # as TF1: a TensorArray that infers no shape stacks to an unknown one
            out.append(r)
        return out


# -- map_fn ----------------------------------------------------------------------------------------------
def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None, parallel_iterations: int | None = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, name: str | None = None,
           fn_output_signature: Any = None) -> Any:
    """`af.map_fn`: `fn` applied to each element of `elems` (unstacked on axis 0), results stacked."""
    signature = fn_output_signature if fn_output_signature is not None else dtype
    _check_fn("map_fn", fn)
    parallel_iterations = parallel_iterations or 10
    with name_scope(name, "map", [x for x in flatten(elems) if isinstance(x, Tensor)]):
        flat, n_static, n = _elements("map_fn", elems)
        if signature is None:
            out_structure, out_dtypes = elems, [x.dtype.base_dtype for x in flat]
        else:
            out_structure, out_dtypes = signature, [dtypes.as_dtype(d) for d in flatten(signature)]
        stacked = _Stacked(out_dtypes)

        def body(i: Tensor, accs: list[Tensor], shapes: list[Tensor]) -> list[Any]:
            value = fn(pack_as(elems, _read(flat, i)))
            _assert_same_structure("map_fn", out_structure, value)
            return [i + 1] + stacked.append(accs, shapes, _results("map_fn", value, out_dtypes))

        _, accs, shapes = while_loop(lambda i, *_: math.less(i, n), body,
                                     [convert_to_tensor(0, dtype=dtypes.int32)] + stacked.initial(),
                                     shape_invariants=[TensorShape([])] + stacked.invariants(len(out_dtypes)),
                                     parallel_iterations=parallel_iterations, back_prop=back_prop,
                                     swap_memory=swap_memory, maximum_iterations=n)
        return pack_as(out_structure, stacked.stack(accs, shapes, n_static, n, infer_shape))


# -- scan -------------------------------------------------------------------------------------------------
def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: str | None = None) -> Any:
    """`af.scan`: the sequence of accumulators a_i = fn(a_{i-1}, elems[i]) (from the end when `reverse`),
    stacked; without `initializer`, a_0 is elems[0] (elems[n-1] reversed) and fn starts at the next one."""
    _check_fn("scan", fn)
    with name_scope(name, "scan", [x for x in flatten(elems) if isinstance(x, Tensor)]):
        flat, n_static, n = _elements("scan", elems)
        if initializer is None:
            state_structure = elems
            first = _read(flat, n - 1 if reverse else 0)
            start: Any = n - 2 if reverse else 1
        else:
            state_structure = initializer
            first = [convert_to_tensor(v) for v in flatten(initializer)]
            start = n - 1 if reverse else 0
        stacked = _Stacked([v.dtype.base_dtype for v in first])
        initial = stacked.initial(first if initializer is None else None)

        def body(i: Tensor, state: list[Tensor], accs: list[Tensor], shapes: list[Tensor]) -> list[Any]:
            value = fn(pack_as(state_structure, state), pack_as(elems, _read(flat, i)))
            _assert_same_structure("scan", state_structure, value)
            new_state = _results("scan", value, stacked.dtypes)
            return [i - 1 if reverse else i + 1, new_state] + stacked.append(accs, shapes, new_state, at_front=reverse)

        cond = (lambda i, *_: math.greater_equal(i, 0)) if reverse else (lambda i, *_: math.less(i, n))
        _, _, accs, shapes = while_loop(
            cond, body, [convert_to_tensor(start, dtype=dtypes.int32), first] + initial,
            shape_invariants=[TensorShape([]), [v.shape for v in first]] + stacked.invariants(len(first)),
            parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory,
            maximum_iterations=n)
        if initializer is not None:
            stacked.static = [v.shape for v in first]  # the loop keeps the state's shape
        return pack_as(state_structure, stacked.stack(accs, shapes, n_static, n, infer_shape))


# -- foldl / foldr -----------------------------------------------------------------------------------------
def _fold(who: str, fn: Any, elems: Any, initializer: Any, parallel_iterations: int, back_prop: bool,
          swap_memory: bool, name: str | None, from_end: bool) -> Any:
    _check_fn(who, fn)
    with name_scope(name, who, [x for x in flatten(elems) if isinstance(x, Tensor)]):
        flat, _, n = _elements(who, elems)
        if initializer is None:
            state_structure = elems
            state = _read(flat, n - 1 if from_end else 0)
            start: Any = n - 1 if from_end else 1
        else:
            state_structure = initializer
            state = [convert_to_tensor(v) for v in flatten(initializer)]
            start = n if from_end else 0
        want = [v.dtype.base_dtype for v in state]

        def body(i: Tensor, state: list[Tensor]) -> list[Any]:
            j = i - 1 if from_end else i
            value = fn(pack_as(state_structure, state), pack_as(elems, _read(flat, j)))
            _assert_same_structure(who, state_structure, value)
            return [j if from_end else i + 1, _results(who, value, want)]

        cond = (lambda i, *_: math.greater(i, 0)) if from_end else (lambda i, *_: math.less(i, n))
        _, final = while_loop(cond, body, [convert_to_tensor(start, dtype=dtypes.int32), state],
                              parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory,
                              maximum_iterations=n)
        return pack_as(state_structure, final)


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """`af.foldl`: fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1]); without `initializer`,
    elems[0] starts the fold."""
    return _fold("foldl", fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, False)


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """`af.foldr`: the fold from the end, fn(...fn(initializer, elems[n-1])..., elems[0]); without
    `initializer`, elems[n-1] starts it."""
    return _fold("foldr", fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, True)


__all__ = ["map_fn", "scan", "foldl", "foldr"]
