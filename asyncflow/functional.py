"""`af.map_fn`, `af.scan`, `af.foldl`, `af.foldr`: TF1's functional ops, each one `while_loop`.

The loops are TF1's (`map/while/`, `scan/while/`, `foldl/while/`, `foldr/while/`, with
`maximum_iterations=n`, so TF1's loop-variable layout and Exit names), and so are the arguments, the
nested structures (tuples, lists, namedtuples, dicts; `fn`'s results must have the structure of
`elems`, of `dtype` or of `initializer`), the static shapes ([n] + the shape of one result when
`infer_shape`), and the errors. `fn` is traced once, inside the loop's body; variables it makes with
`get_variable` are created once, outside the loop.

How the values move (TF1's way): each element tensor is unstacked into a TensorArray before the
loop, the body reads element i from it and writes result i into an output TensorArray (carried
as its flow in `loop_vars`), and the outputs are stacked after the loop
(`map/TensorArrayStack/TensorArrayGatherV3`). A result whose shape differs from the first one's
is TF1's run-time InvalidArgumentError from the TensorArray. The TensorArray gradients
(tensor_array_ops.py) carry gradients back to `elems`, `initializer` and any tensor or variable
`fn` captures.

Cost: linear in n: one read and one write per step, one scatter before the loop and one gather
after it; the backward loop reads and writes the gradient arrays the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncflow import dtypes
from asyncflow.control_flow import flatten, pack_as, while_loop
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.ops.tensor_array import TensorArray
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


def _elements(who: str, elems: Any) -> tuple[list[Tensor], int | None, Any]:
    """The flat element tensors (inside the caller's name scope), their static count and their count (the
    static one when known, as TF1)."""
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
    n = n_static if n_static is not None else array.shape(flat[0], out_type=dtypes.int32)[0]
    return flat, n_static, n


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


# -- TensorArrays ------------------------------------------------------------------------------------------
def _unstacked(flat: list[Tensor], n: Any) -> list[TensorArray]:
    """Each element tensor unstacked into a TensorArray of `n` elements (TF1's `elems_ta`)."""
    return [TensorArray(x.dtype.base_dtype, size=n, dynamic_size=False, infer_shape=True).unstack(x) for x in flat]


def _read(tas: list[TensorArray], i: Any) -> list[Tensor]:
    return [ta.read(i) for ta in tas]


def _stacked(tas: list[TensorArray], n_static: int | None) -> list[Tensor]:
    """The result arrays stacked, each [n_static] + one result's shape (TF1's `r.stack()` and set_shape)."""
    out = []
    for ta in tas:
        r = ta.stack()
        r.set_shape(TensorShape([n_static]).concatenate(r.shape[1:]))
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
        elems_ta = _unstacked(flat, n)
        i = convert_to_tensor(0, dtype=dtypes.int32)
        accs_ta = [TensorArray(d, size=n, dynamic_size=False, infer_shape=infer_shape) for d in out_dtypes]

        def compute(i: Tensor, tas: list[TensorArray]) -> tuple[Any, ...]:
            value = fn(pack_as(elems, _read(elems_ta, i)))
            _assert_same_structure("map_fn", out_structure, value)
            results = _results("map_fn", value, out_dtypes)
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, results)]

        _, r_a = while_loop(lambda i, _: math.less(i, n), compute, (i, accs_ta),
                            parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory,
                            maximum_iterations=n)
        return pack_as(out_structure, _stacked(r_a, n_static))


# -- scan -------------------------------------------------------------------------------------------------
def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: str | None = None) -> Any:
    """`af.scan`: the sequence of accumulators a_i = fn(a_{i-1}, elems[i]) (from the end when `reverse`),
    stacked; without `initializer`, a_0 is elems[0] (elems[n-1] reversed) and fn starts at the next one."""
    _check_fn("scan", fn)
    with name_scope(name, "scan", [x for x in flatten(elems) if isinstance(x, Tensor)]):
        flat, n_static, n = _elements("scan", elems)
        elems_ta = _unstacked(flat, n)
        if initializer is None:
            state_structure = elems
            a_flat = _read(elems_ta, n - 1 if reverse else 0)
            skip = 1
        else:
            state_structure = initializer
            a_flat = [convert_to_tensor(v) for v in flatten(initializer)]
            skip = 0
        accs_ta = [TensorArray(a.dtype.base_dtype, size=n, element_shape=a.shape if infer_shape else None,
                               dynamic_size=False, infer_shape=infer_shape) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]
        want = [a.dtype.base_dtype for a in a_flat]

        def compute(i: Tensor, state: list[Tensor], tas: list[TensorArray]) -> tuple[Any, ...]:
            value = fn(pack_as(state_structure, state), pack_as(elems, _read(elems_ta, i)))
            _assert_same_structure("scan", state_structure, value)
            new_state = _results("scan", value, want)
            tas = [ta.write(i, v) for ta, v in zip(tas, new_state)]
            return (i - 1 if reverse else i + 1), new_state, tas

        if reverse:
            start, cond = n - 1 - skip, (lambda i, *_: math.greater_equal(i, 0))
        else:
            start, cond = skip, (lambda i, *_: math.less(i, n))
        _, _, r_a = while_loop(cond, compute, (convert_to_tensor(start, dtype=dtypes.int32), a_flat, accs_ta),
                               parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory,
                               maximum_iterations=n)
        return pack_as(state_structure, _stacked(r_a, n_static))


# -- foldl / foldr -----------------------------------------------------------------------------------------
def _fold(who: str, fn: Any, elems: Any, initializer: Any, parallel_iterations: int, back_prop: bool,
          swap_memory: bool, name: str | None, from_end: bool) -> Any:
    _check_fn(who, fn)
    with name_scope(name, who, [x for x in flatten(elems) if isinstance(x, Tensor)]):
        flat, _, n = _elements(who, elems)
        elems_ta = _unstacked(flat, n)
        if initializer is None:
            state_structure = elems
            state = _read(elems_ta, n - 1 if from_end else 0)
            start: Any = n - 1 if from_end else 1
        else:
            state_structure = initializer
            state = [convert_to_tensor(v) for v in flatten(initializer)]
            start = n if from_end else 0
        want = [v.dtype.base_dtype for v in state]

        def body(i: Tensor, state: list[Tensor]) -> list[Any]:
            j = i - 1 if from_end else i
            value = fn(pack_as(state_structure, state), pack_as(elems, _read(elems_ta, j)))
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
