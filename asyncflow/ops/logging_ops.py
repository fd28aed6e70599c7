"""Ops that print, assert and check, as TF1: `Print`, `print` (PrintV2), `Assert`, `check_numerics`.

`Print` passes its first input through and prints the others when it runs; `print` is an op to run
(or to put in `control_dependencies`); `Assert` fails the step with `InvalidArgumentError` when its
condition is false, printing its data the way TF's kernel does (`summarize` entries of each);
`check_numerics` passes a floating tensor through unless it holds a NaN or an infinity. The
`assert_*` family built on `Assert` lives in `check_ops.py`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Operation, Tensor, get_default_graph, name_scope
from asyncflow.ops.array import identity
from asyncflow.ops.control import group
from asyncflow.ops.registry import ALL_TYPES, FLOAT, TypeList, convert_to_tensor, op
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.shapes import TensorShape


# -- formatting --------------------------------------------------------------------------------------
def _element(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (np.bool_, bool)):
        return "1" if v else "0"
    if isinstance(v, np.floating):
        return np.format_float_positional(v, trim="-")
    return str(v.item() if hasattr(v, "item") else v)


def summarize(value: Any, max_entries: int) -> str:
    """TF's `Tensor::SummarizeValue` (what `Print` and `Assert` show): the first `max_entries` values
    (all when negative), rows in brackets past the first dimension, `...` where values were left out:
    `0 1 2...` for a vector, `[1.5 2][3...]...` for a 2x2 matrix cut at 3."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _element(arr[()])
    flat = arr.reshape(-1)
    limit = flat.size if max_entries < 0 else min(max_entries, flat.size)
    out: list[str] = []
    index = 0

    def one_dim(dim: int) -> None:
        nonlocal index
        if index >= limit:
            return
        if dim == arr.ndim - 1:
            for i in range(arr.shape[dim]):
                if index >= limit:
                    if dim != 0:
                        out.append("...")
                    return
                out.append((" " if i else "") + _element(flat[index]))
                index += 1
            return
        for _ in range(arr.shape[dim]):
            opened = index < limit
            if opened:
                out.append("[")
            one_dim(dim + 1)
            if opened:
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if limit < flat.size else "")


def format_v2(value: Any, summarize_n: int, indent: int = 0) -> str:
    """A tensor as `tf.print` shows it (numpy's layout): `[0 1 ... 8 9]`, the first and last
    `summarize_n` entries of each dimension (all when negative), rows on their own lines."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _element(arr[()])
    n = arr.shape[0]
    cut = 0 <= summarize_n and 2 * summarize_n < n
    keep = list(range(summarize_n)) + [-1] + list(range(n - summarize_n, n)) if cut else list(range(n))
    if arr.ndim == 1:
        return "[" + " ".join("..." if i < 0 else _element(arr[i]) for i in keep) + "]"
    rows = ["..." if i < 0 else format_v2(arr[i], summarize_n, indent + 1) for i in keep]
    return "[" + ("\n" + " " * (indent + 1)).join(rows) + "]"


def _streams() -> dict[str, Any]:
    return {"stderr": sys.stderr, "stdout": sys.stdout}


def _bracketed(data: Any, max_entries: int) -> str:
    return "[" + summarize(data, max_entries) + "]"


# -- Print (v1) -------------------------------------------------------------------------------------
def _prepare_print(k: Any) -> None:
    k.printed = 0


@op("Print", inputs="input: T, data: U", outputs="output: T", types={"T": ALL_TYPES, "U": TypeList(ALL_TYPES)},
    attrs={"message": "", "first_n": -1, "summarize": 3}, shape=same_as_input, stateful=True,
    prepare=_prepare_print)
def print_v1(k, input, *data):
    if k.first_n < 0 or k.printed < k.first_n:
        k.printed += 1
        sys.stderr.write(k.message + "".join(_bracketed(d, k.summarize) for d in data) + "\n")
        sys.stderr.flush()
    return input


@print_v1.gradient
def _print_grad(op: Operation, grad: Any) -> list[Any]:
    """Print is the identity on its first input; its data get no gradient."""
    return [grad] + [None] * (len(op.inputs) - 1)


def Print(input_: Any, data: Any, message: str | None = None, first_n: int | None = None,
          summarize: int | None = None, name: str | None = None) -> Tensor:
    """`tf.Print`: `input_`, and prints `message` then each of `data` (to stderr) each time it runs."""
    input_ = convert_to_tensor(input_, name="input")
    data = [convert_to_tensor(d) for d in data]
    return print_v1(input_, data, message=message or "", first_n=-1 if first_n is None else first_n,
                    summarize=3 if summarize is None else summarize, name=name)


# -- print (PrintV2) --------------------------------------------------------------------------------
@op("PrintV2", inputs="input: string", attrs={"output_stream": "stderr", "end": "\n"}, stateful=True,
    differentiable=False, shape=lambda b: [])
def print_v2(k, text):
    stream = _streams()[k.output_stream]
    stream.write(_element(np.asarray(text)[()]) + k.end)
    stream.flush()


@op("StringFormat", inputs="inputs: T", outputs="output: string", types={"T": TypeList(ALL_TYPES)},
    attrs={"template": "%s", "placeholder": "%s", "summarize": 3}, differentiable=False,
    shape=lambda b: [TensorShape([])])
def string_format(k, *inputs):
    parts = k.template.split(k.placeholder)
    if len(parts) != len(inputs) + 1:
        raise errors.InvalidArgumentError(
            None, k.op, f"StringFormat '{k.name}': {len(parts) - 1} placeholders in the template for {len(inputs)} "
                        "inputs")
    out = [parts[0]]
    for value, rest in zip(inputs, parts[1:]):
        out += [format_v2(value, k.summarize), rest]
    return np.array("".join(out).encode("utf-8"), dtype=object)


def _template(item: Any, tensors: list[Tensor], placeholder: str) -> str:
    """`item`'s text with `placeholder` where each tensor inside it goes (nested lists, tuples, dicts)."""
    if isinstance(item, Tensor) or hasattr(item, "_as_graph_element"):
        tensors.append(convert_to_tensor(item))
        return placeholder
    if isinstance(item, dict):
        return "{" + ", ".join(f"{k!r}: {_template(v, tensors, placeholder)}" for k, v in item.items()) + "}"
    if isinstance(item, (list, tuple)):
        inner = ", ".join(_template(v, tensors, placeholder) for v in item)
        return f"[{inner}]" if isinstance(item, list) else f"({inner}{',' if len(item) == 1 else ''})"
    return str(item)


def print(*inputs: Any, **kwargs: Any) -> Operation:  # noqa: A001 - TF's name
    """`tf.print(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end="\\n", name=None)`: an op that
    prints its inputs when it runs (tensors as numpy lays them out, other values as `str`)."""
    output_stream = kwargs.pop("output_stream", sys.stderr)
    summarize_n = kwargs.pop("summarize", 3)
    sep, end, name = kwargs.pop("sep", " "), kwargs.pop("end", "\n"), kwargs.pop("name", None)
    if kwargs:
        raise ValueError(f"print: unrecognized keyword arguments {sorted(kwargs)}")
    stream = next((key for key, s in _streams().items() if output_stream is s or output_stream == key), None)
    if stream is None:
        raise ValueError(f"print: output_stream must be sys.stderr or sys.stdout (or 'stderr'/'stdout'), "
                         f"got {output_stream!r}")
    with name_scope(name, "PrintV2") as scope:
        tensors: list[Tensor] = []
        placeholder = "{}"
        while any(placeholder in str(i) for i in inputs if not isinstance(i, Tensor)):
            placeholder = "{" + placeholder + "}"  # a literal "{}" in the text must not take a tensor
        template = sep.join(_template(i, tensors, placeholder) for i in inputs)
        text = string_format(tensors, template=template, placeholder=placeholder,
                             summarize=-1 if summarize_n is None else summarize_n, name="StringFormat")
        return print_v2(text, output_stream=stream, end=end, name=scope)


# -- Assert -----------------------------------------------------------------------------------------
@op("Assert", inputs="condition: bool, data: T", types={"T": TypeList(ALL_TYPES)}, attrs={"summarize": 3},
    stateful=True, differentiable=False, shape=lambda b: [])
def assert_op(k, condition, *data):
    if not np.all(condition):
        shown = " ".join(_bracketed(d, k.summarize) for d in data)
        raise errors.InvalidArgumentError(None, k.op, f"assertion failed: {shown}")


def Assert(condition: Any, data: Any, summarize: int | None = None, name: str | None = None) -> Operation:
    """`tf.Assert`: an op that fails the step with `InvalidArgumentError` (showing `data`) when `condition`
    is false."""
    with name_scope(name, "Assert", [condition]):
        condition = convert_to_tensor(condition, name="Condition")
        if condition.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"Assert: condition must be a bool tensor, got {condition.dtype.base_dtype.name}")
        data = [convert_to_tensor(d) for d in data]
        return assert_op(condition, data, summarize=3 if summarize is None else summarize, name="Assert")


# -- check_numerics ---------------------------------------------------------------------------------
@op("CheckNumerics", inputs="tensor: T", outputs="output: T", types={"T": FLOAT}, attrs={"message": ""},
    shape=same_as_input)
def check_numerics_op(k, tensor):
    arr = np.asarray(tensor)
    nan, inf = bool(np.isnan(arr).any()), bool(np.isinf(arr).any())
    if nan or inf:
        what = "Inf and NaN" if nan and inf else "NaN" if nan else "Inf"
        raise errors.InvalidArgumentError(None, k.op, f"{k.message} : Tensor had {what} values")
    return tensor


@check_numerics_op.gradient
def _check_numerics_grad(op: Operation, grad: Any) -> Tensor:
    """As TF1: the gradient is checked too, with a message that says so."""
    return check_numerics_op(grad, message="Not a number (NaN) or infinity (Inf) values detected in gradient. "
                                           + op.get_attr("message"))


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tf.check_numerics`: `tensor`, or `InvalidArgumentError` naming `message` when it has a NaN or an Inf."""
    tensor = convert_to_tensor(tensor, name="tensor")
    if tensor.dtype.base_dtype not in FLOAT:
        raise TypeError(f"CheckNumerics: tensor must be floating, got {tensor.dtype.base_dtype.name}")
    return check_numerics_op(tensor, message=message, name=name)


def verify_tensor_all_finite(t: Any = None, msg: str | None = None, name: str | None = None, x: Any = None,
                             message: str | None = None) -> Tensor:
    """`tf.verify_tensor_all_finite`: `t` after a `check_numerics` of it (TF1's `with_dependencies`)."""
    t = t if x is None else x
    msg = msg if message is None else message
    with name_scope(name, "VerifyFinite", [t]):
        t = convert_to_tensor(t, name="x")
        graph = get_default_graph()
        with graph.colocate_with(t.op):
            check = check_numerics(t, message=msg or "")
            with graph.control_dependencies([check]):
                return identity(t, name="control_dependency")


def add_check_numerics_ops() -> Operation:
    """`tf.add_check_numerics_ops`: one `CheckNumerics` on every floating output in the graph, grouped.

    As TF1, a graph with `cond` or `while_loop` is refused (a check inside a branch or loop body could
    not be grouped with the others)."""
    graph = get_default_graph()
    checks = []
    for o in graph.get_operations():
        if o.op_def is not None and o.op_def.control_flow is not None:
            raise ValueError("tf.add_check_numerics_ops() is not compatible with TensorFlow control flow operations "
                             "such as tf.cond() or tf.while_loop().")
    for o in list(graph.get_operations()):
        for t in o.outputs:
            if t.dtype.base_dtype in FLOAT and not t.dtype.is_ref_dtype:
                message = f"{o.name}:{t.value_index}"
                with graph.control_dependencies(checks[-1:]):
                    checks.append(check_numerics(t, message=message).op)
    return group(*checks, name="CheckNumerics") if checks else group(name="CheckNumerics")


__all__ = ["Print", "print", "Assert", "check_numerics", "verify_tensor_all_finite", "add_check_numerics_ops"]
