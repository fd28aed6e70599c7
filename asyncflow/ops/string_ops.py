"""String ops used in input code, as TF1: string_split / strings.split (SparseTensor results),
as_string, substr, reduce_join, regex_replace / regex_full_match, strings.length/lower/upper/strip,
string_to_hash_bucket_fast / to_hash_bucket_strong; `string_join` (io.py's StringJoin) and
`string_to_number` (parsing.py's StringToNumber) are re-exported by `af.strings`.

Strings are bytes in numpy object arrays, as TF returns them. None of these ops is differentiable.

Regular expressions: TF uses RE2; these kernels use Python's `re` on the strings decoded as UTF-8
(undecodable bytes kept by `surrogateescape`), with `re.ASCII` so `\\w`, `\\d`, `\\s` and `\\b` are
ASCII as RE2's are. RE2's syntax is mostly a subset of Python's; what differs: RE2 rejects
backreferences and lookaround (so do we, with RE2's messages), RE2's `\\z` is translated to Python's
`\\Z`, RE2's `\\pL` / `\\p{Greek}` Unicode classes and `\\C` are refused here (Python has none), and
case-insensitive matching of non-ASCII letters follows Python. Global replacement follows RE2's
rule for empty matches (no empty match right after the previous match), not Python's.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from asyncflow import dtypes, errors
from asyncflow.graph import Tensor, name_scope
from asyncflow.ops.array import concat, reshape
from asyncflow.ops.array import shape as shape_of
from asyncflow.ops.array_dims import expand_dims
from asyncflow.ops.array_extra import unravel_index
from asyncflow.ops.array_manip import transpose
from asyncflow.ops.io import string_join
from asyncflow.ops.parsing import string_to_number
from asyncflow.ops.registry import INDEX, BuildContext, constant, convert_to_tensor, op
from asyncflow.ops.shape_fns import broadcast_shapes
from asyncflow.ops.string_hash import fingerprint64, siphash24
from asyncflow.shapes import TensorShape, unknown_shape
from asyncflow.sparse_tensor import SparseTensor

__all__ = [
    "string_split", "as_string", "substr", "string_join", "reduce_join", "regex_replace", "string_strip",
    "string_to_hash_bucket_fast", "string_to_hash_bucket_strong", "string_to_number",
]

_TRAITS = {"differentiable": False}


def _invalid(k: Any, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, k.op, f"{k.op_type} '{k.name}': {message}")


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _map(strings: Any, fn: Any, out: Any = object) -> np.ndarray:
    """`fn` applied to every string of an object array, into an array of dtype `out`."""
    arr = np.asarray(strings, dtype=object)
    result = np.empty(arr.shape, dtype=out)
    flat = result.reshape(-1)
    for i, s in enumerate(arr.reshape(-1)):
        flat[i] = fn(_b(s))
    return result


def _same_shape(b: BuildContext) -> TensorShape:
    return b.shape(0)


def _check_rank(b: BuildContext, i: int, rank: int, what: str) -> None:
    got = b.shape(i).ndims
    if got is not None and got != rank:
        raise b.error(f"Shape must be rank {rank} but is rank {got} ({what}, shape {b.shape(i)})")


# -- string_split, strings.split ---------------------------------------------------------------------------
def _split_shape(b: BuildContext) -> list[TensorShape]:
    _check_rank(b, 0, 1, "input")
    _check_rank(b, 1, 0, "the delimiter")
    return [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])]


def _as_sparse(rows: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indices = [(i, j) for i, parts in enumerate(rows) for j in range(len(parts))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [p for parts in rows for p in parts]
    width = max((len(parts) for parts in rows), default=0)
    return (np.asarray(indices, np.int64).reshape(-1, 2), values, np.asarray([len(rows), width], np.int64))


def _check_vector(k: Any, source: np.ndarray, sep: np.ndarray, what: str) -> None:
    if source.ndim != 1:
        raise _invalid(k, f"input must be a vector, got shape: {list(source.shape)}")
    if sep.ndim != 0:
        raise _invalid(k, f"{what} must be a scalar, got shape: {list(sep.shape)}")


def split_any_of(text: bytes, delimiters: bytes, skip_empty: bool) -> list[bytes]:
    """StringSplit's rule: every byte of `delimiters` splits; no delimiters splits into bytes."""
    if not text:
        return []  # an empty string gives no tokens, even with skip_empty=False (as TF 2.21)
    if not delimiters:
        return [text[i:i + 1] for i in range(len(text))]
    parts = re.split(b"[" + re.escape(delimiters) + b"]", text)
    return [p for p in parts if p] if skip_empty else parts


@op("StringSplit", inputs="input: string, delimiter: string", outputs="indices: int64, values: string, shape: int64",
    attrs={"skip_empty": True}, shape=_split_shape, **_TRAITS)
def string_split_op(k, source, delimiter):
    source, delimiter = np.asarray(source, dtype=object), np.asarray(delimiter, dtype=object)
    _check_vector(k, source, delimiter, "delimiter")
    return _as_sparse([split_any_of(_b(s), _b(delimiter.item()), k.skip_empty) for s in source])


def split_v2(text: bytes, sep: bytes, maxsplit: int) -> list[bytes]:
    """StringSplitV2's rule: Python's str.split, except that once `maxsplit` splits are made the rest
    is one more token even when it is empty (TF's kernel), and `sep` b"" means whitespace."""
    if maxsplit == 0:
        return [text]
    if sep:
        return text.split(sep, maxsplit if maxsplit > 0 else -1)
    out: list[bytes] = []
    rest = text.lstrip()
    while rest:
        pieces = rest.split(None, 1)
        out.append(pieces[0])
        rest = pieces[1].lstrip() if len(pieces) > 1 else b""
        if maxsplit > 0 and len(out) == maxsplit:
            out.append(rest)
            break
    return out


@op("StringSplitV2", inputs="input: string, sep: string", outputs="indices: int64, values: string, shape: int64",
    attrs={"maxsplit": -1}, shape=_split_shape, **_TRAITS)
def string_split_v2_op(k, source, sep):
    source, sep = np.asarray(source, dtype=object), np.asarray(sep, dtype=object)
    _check_vector(k, source, sep, "sep")
    return _as_sparse([split_v2(_b(s), _b(sep.item()), int(k.maxsplit)) for s in source])


def string_split(source: Any, sep: Any = None, skip_empty: bool = True, delimiter: Any = None,
                 result_type: str = "SparseTensor", name: str | None = None) -> SparseTensor:
    """`af.string_split`: a vector of strings split on any byte of `sep` (default " "), as a SparseTensor."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    sep = delimiter if sep is None else sep
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'SparseTensor' (asyncflow has no RaggedTensor)")
    with name_scope(name, "StringSplit", [source]):
        sep_t = convert_to_tensor(" " if sep is None else sep, dtype=dtypes.string)
        source_t = convert_to_tensor(source, dtype=dtypes.string)
        indices, values, shape = string_split_op(source_t, sep_t, skip_empty=bool(skip_empty))
        return SparseTensor(indices, values, shape)


def strings_split(input: Any = None, sep: Any = None, maxsplit: int = -1,  # noqa: A002 - TF1's name
                  result_type: str = "SparseTensor", source: Any = None, name: str | None = None) -> Any:
    """`af.strings.split`: Python's str.split on each string (whitespace when `sep` is None), as a
    SparseTensor of rank rank(input) + 1 (a scalar counts as a vector of one)."""
    if input is not None and source is not None:
        raise ValueError("Cannot specify both 'input' and 'source'")
    input = source if input is None else input  # noqa: A001
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'SparseTensor' (asyncflow has no RaggedTensor)")
    with name_scope(name, "StringSplit", [input]):
        x = convert_to_tensor(input, dtype=dtypes.string, name="input")
        if x.shape.ndims == 0:
            x = expand_dims(x, 0)
        sep_t = convert_to_tensor("" if sep is None else sep, dtype=dtypes.string)
        if x.shape.ndims == 1:
            return SparseTensor(*string_split_v2_op(x, sep_t, maxsplit=int(maxsplit)))
        if x.shape.ndims is None:
            raise ValueError("strings.split needs an input of known rank")
        # Higher ranks: split the flattened strings, then spread each row number over the input's dims.
        dims = shape_of(x, out_type=dtypes.int64)
        indices, values, flat_shape = string_split_v2_op(reshape(x, [-1]), sep_t, maxsplit=int(maxsplit))
        rows = unravel_index(indices[:, 0], dims)
        full = concat([transpose(rows), indices[:, 1:]], 1)
        dense_shape = concat([dims, flat_shape[1:]], 0)
        return SparseTensor(full, values, dense_shape)


# -- as_string -------------------------------------------------------------------------------------------------
_AS_STRING_TYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
                    dtypes.uint32, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                    dtypes.complex64, dtypes.complex128, dtypes.bool, dtypes.string)


def _as_string_format(k: Any, dtype: dtypes.DType) -> bytes:
    """The printf format TF's AsString kernel builds from the attrs (InvalidArgumentError as TF's)."""
    fill, width, precision = k.fill, int(k.width), int(k.precision)
    fill = fill.encode() if isinstance(fill, str) else fill
    if k.scientific and k.shortest:
        raise _invalid(k, "Cannot select both scientific and shortest notation")
    if len(fill) > 1:
        raise _invalid(k, "Fill string must be one or fewer characters")
    if fill and fill not in b" +-0#":
        raise _invalid(k, f'Fill argument not supported: "{fill.decode(errors="replace")}"')
    floating = dtype.is_floating or dtype.is_complex
    if not floating and dtype != dtypes.bool:
        if k.scientific or k.shortest:
            raise _invalid(k, f"scientific and shortest format not supported for datatype {dtype.name}")
        if precision > -1:
            raise _invalid(k, f"precision not supported for datatype {dtype.name}")
    fmt = b"%" + fill + (b"%d" % width if width > -1 else b"") + (b".%d" % precision if precision > -1 else b"")
    if floating:
        return fmt + (b"g" if k.shortest else b"e" if k.scientific else b"f")
    return fmt + (b"s" if dtype == dtypes.string else b"d")


@op("AsString", inputs="input: T", outputs="output: string", types={"T": _AS_STRING_TYPES},
    attrs={"precision": -1, "scientific": False, "shortest": False, "width": -1, "fill": ""},
    shape=_same_shape, **_TRAITS)
def as_string_op(k, x):
    dtype = dtypes.as_dtype(k.T)
    fmt = _as_string_format(k, dtype)
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=object)
    flat, src = out.reshape(-1), x.reshape(-1)
    if dtype == dtypes.bool:  # TF ignores width and fill for bools
        flat[:] = [b"true" if v else b"false" for v in src.tolist()]
    elif dtype.is_complex:
        plain = fmt.replace(b"0", b"", 1) if fmt.startswith(b"%0") else fmt

        def part(v: float) -> bytes:
            return (fmt if np.isfinite(v) else plain) % v

        flat[:] = [b"(" + part(v.real) + b"," + part(v.imag) + b")" for v in src.tolist()]
    elif dtype.is_floating:
        plain = fmt.replace(b"0", b"", 1) if fmt.startswith(b"%0") else fmt  # C pads inf/nan with spaces
        flat[:] = [(fmt if np.isfinite(v) else plain) % v for v in src.astype(np.float64).tolist()]
    elif dtype == dtypes.string:
        flat[:] = [fmt % _b(v) for v in src.tolist()]
    else:
        flat[:] = [fmt % v for v in src.tolist()]
    return out


def as_string(input: Any, precision: int = -1, scientific: bool = False, shortest: bool = False,  # noqa: A002
              width: int = -1, fill: str = "", name: str | None = None) -> Tensor:
    """`af.as_string` / `af.strings.as_string`: each element printed with TF's printf formats."""
    return as_string_op(input, precision=int(precision), scientific=bool(scientific), shortest=bool(shortest),
                        width=int(width), fill=fill, name=name)


# -- substr ----------------------------------------------------------------------------------------------------
def _substr_shape(b: BuildContext) -> TensorShape:
    pos, length = b.shape(1), b.shape(2)
    if length.ndims is not None and pos.ndims is not None and pos.ndims != length.ndims:
        raise b.error(f"Shape must be rank {length.ndims} but is rank {pos.ndims} (pos and len must have the "
                      f"same rank, got {pos} and {length})")
    if pos.ndims is not None and length.ndims is not None:
        for a, c in zip(pos.as_list(), length.as_list()):
            if a != c:
                raise b.error(f"pos and len shapes must match: {pos} vs. {length}")
    return broadcast_shapes(b.shape(0), pos, f"{b.op_type} '{b.name}': ")


def _char_starts(text: bytes) -> list[int]:
    """Offsets of the UTF-8 characters of `text` (bytes that are not continuation bytes)."""
    return [i for i, c in enumerate(text) if c & 0xC0 != 0x80]


def _substring(k: Any, text: bytes, pos: int, length: int, index: int) -> bytes:
    if k.unit == "BYTE":
        n = len(text)
        if not -n <= pos <= n:
            raise _invalid(k, f"pos {pos} out of range for string b'{text.decode(errors='replace')}' at index {index}")
        start = pos + n if pos < 0 else pos
        return text[start:] if length < 0 else text[start:start + length]
    starts = _char_starts(text) + [len(text)]
    n = len(starts) - 1
    if not -n <= pos <= n:
        raise _invalid(k, f"pos {pos} out of range for string at index {index}")
    start = pos + n if pos < 0 else pos
    stop = n if length < 0 else min(n, start + length)
    return text[starts[start]:starts[stop]]


@op("Substr", inputs="input: string, pos: T, len: T", outputs="output: string", types={"T": INDEX},
    attrs={"unit": "BYTE"}, shape=_substr_shape, **_TRAITS)
def substr_op(k, strings, pos, length):
    strings, pos, length = np.asarray(strings, dtype=object), np.asarray(pos), np.asarray(length)
    if pos.shape != length.shape:
        raise _invalid(k, f"pos and len should have the same shape, got: {list(pos.shape)} vs. {list(length.shape)}")
    try:
        shape = np.broadcast_shapes(strings.shape, pos.shape)
    except ValueError:
        raise _invalid(k, f"Incompatible shapes: {list(strings.shape)} vs. {list(pos.shape)}") from None
    s = np.broadcast_to(strings, shape).reshape(-1)
    p, n = np.broadcast_to(pos, shape).reshape(-1).tolist(), np.broadcast_to(length, shape).reshape(-1).tolist()
    out = np.empty(len(s), dtype=object)
    for i in range(len(s)):
        out[i] = _substring(k, _b(s[i]), p[i], n[i], i)
    return out.reshape(shape)


def substr(input: Any, pos: Any, len: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """`af.substr` / `af.strings.substr`: `len` bytes (or UTF8_CHAR characters) from `pos` of each string."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return substr_op(input, pos, len, unit=unit, name=name)


# -- reduce_join -----------------------------------------------------------------------------------------------
def _reduce_join_shape(b: BuildContext) -> TensorShape:
    x, axes = b.shape(0), b.const(1)
    keep = b.attrs["keep_dims"]
    if x.ndims is None:
        return unknown_shape()
    if axes is None:
        return unknown_shape(x.ndims) if keep else unknown_shape()
    dims = x.as_list()
    reduced = set()
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -x.ndims <= a < x.ndims:
            raise b.error(f"Invalid reduction dimension {a} for input with {x.ndims} dimensions.")
        reduced.add(a % x.ndims)
    return TensorShape([1 if i in reduced else d for i, d in enumerate(dims)] if keep else
                       [d for i, d in enumerate(dims) if i not in reduced])


@op("ReduceJoin", inputs="inputs: string, reduction_indices: int32", outputs="output: string",
    attrs={"keep_dims": False, "separator": ""}, shape=_reduce_join_shape, **_TRAITS)
def reduce_join_op(k, inputs, reduction_indices):
    x = np.asarray(inputs, dtype=object)
    axes = np.asarray(reduction_indices).reshape(-1).tolist()
    seen: list[int] = []
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(k, f"Invalid reduction dimension {a} for input with {x.ndim} dimensions.")
        if a % max(x.ndim, 1) in seen:
            raise _invalid(k, f"Duplicate reduction dimension {a}")
        seen.append(a % x.ndim)
    sep = _b(k.separator)
    kept = [i for i in range(x.ndim) if i not in seen]
    # The first listed axis varies fastest in the joined order (TF's kernel).
    joined = int(np.prod([x.shape[i] for i in seen], dtype=np.int64))
    moved = np.transpose(x, kept + seen[::-1]).reshape([x.shape[i] for i in kept] + [joined])
    out = np.empty(moved.shape[:-1], dtype=object)
    flat = out.reshape(-1)
    rows = moved.reshape(flat.size, joined)
    for i in range(len(flat)):
        flat[i] = sep.join(_b(v) for v in rows[i])
    if k.keep_dims:
        out = out.reshape([1 if i in seen else d for i, d in enumerate(x.shape)])
    return out


def reduce_join(inputs: Any, axis: Any = None, keep_dims: bool | None = None, separator: str = "",
                name: str | None = None, reduction_indices: Any = None, keepdims: bool | None = None) -> Tensor:
    """`af.reduce_join` / `af.strings.reduce_join`: strings joined along `axis` (all axes by default)."""
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axis = reduction_indices if axis is None else axis
    with name_scope(None, "ReduceJoin", [inputs, axis]):
        x = convert_to_tensor(inputs)
        if axis is None:
            if x.shape.ndims is None:
                raise ValueError("reduce_join over all axes needs an input of known rank")
            axis = constant(np.arange(x.shape.ndims - 1, -1, -1, dtype=np.int32))
        return reduce_join_op(x, axis, keep_dims=keep, separator=separator, name=name)


# -- regular expressions ---------------------------------------------------------------------------------------
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}


def _translate_re2(pattern: str) -> str:
    """RE2 syntax to Python's; ValueError (with RE2's wording) for what RE2 rejects or we cannot do."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in "123456789":
                raise ValueError(f"invalid escape sequence: \\{nxt}")
            if nxt in "pPC":
                raise ValueError(f"\\{nxt} (Unicode classes and \\C) are not supported by asyncflow's regex engine")
            out.append("\\Z" if nxt == "z" else pattern[i:i + 2])
            i += 2
        elif pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            raise ValueError(f"invalid perl operator: {pattern[i:i + (4 if pattern[i + 2] == '<' else 3)]}")
        elif pattern.startswith("[:", i) and "[" in "".join(out[-1:]):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end > 0 else ""
            if name.lstrip("^") in _POSIX_CLASSES and not name.startswith("^"):
                out.append(_POSIX_CLASSES[name])
                i = end + 2
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_COMPILED: dict[str, re.Pattern] = {}


def _compile(k: Any, pattern: Any) -> re.Pattern:
    text = _b(pattern).decode("utf-8", "surrogateescape")
    found = _COMPILED.get(text)
    if found is None:
        try:
            found = re.compile(_translate_re2(text), re.ASCII)
        except (ValueError, re.error) as e:
            raise _invalid(k, f"Invalid pattern: {text}, error: {e}") from None
        _COMPILED[text] = found
    return found


def _parse_rewrite(rewrite: Any, groups: int) -> list[str | int] | None:
    """RE2's rewrite string: `\\0`..`\\9` are groups, `\\\\` a backslash. None when RE2 would refuse it
    (another escape, or a group the pattern lacks): RE2's Replace then fails and TF keeps the string."""
    text, parts, i = _b(rewrite).decode("utf-8", "surrogateescape"), [], 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            parts.append(c)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt.isdigit() and int(nxt) <= groups:
            parts.append(int(nxt))
        elif nxt == "\\":
            parts.append("\\")
        else:
            return None
        i += 2
    return parts


def _rewrite(m: re.Match, parts: list[str | int]) -> str:
    return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)


def regex_replace_one(regex: re.Pattern, parts: list[str | int], text: bytes, replace_global: bool) -> bytes:
    s = text.decode("utf-8", "surrogateescape")
    if not replace_global:
        m = regex.search(s)
        return text if m is None else (s[:m.start()] + _rewrite(m, parts) + s[m.end():]).encode(
            "utf-8", "surrogateescape")
    out, p, last_end, count = [], 0, -1, 0
    while p <= len(s):
        m = regex.search(s, p)
        if m is None:
            break
        out.append(s[p:m.start()])
        if m.start() == m.end() == last_end:  # RE2: no empty match right where the previous one ended
            out.append(s[p:p + 1])
            p += 1
            continue
        out.append(_rewrite(m, parts))
        p = last_end = m.end()
        count += 1
    if count == 0:
        return text
    out.append(s[p:])
    return "".join(out).encode("utf-8", "surrogateescape")


def _replace_all(k: Any, strings: Any, pattern: Any, rewrite: Any) -> np.ndarray:
    regex = _compile(k, pattern)
    parts = _parse_rewrite(rewrite, regex.groups)
    if parts is None:
        return np.array(strings, dtype=object)
    return _map(strings, lambda s: regex_replace_one(regex, parts, s, bool(k.replace_global)))


def _scalar_args_shape(b: BuildContext) -> TensorShape:
    for i in range(1, len(b.inputs)):
        _check_rank(b, i, 0, "pattern and rewrite must be scalars")
    return b.shape(0)


@op("RegexReplace", inputs="input: string, pattern: string, rewrite: string", outputs="output: string",
    attrs={"replace_global": True}, shape=_scalar_args_shape, **_TRAITS)
def regex_replace_op(k, strings, pattern, rewrite):
    return _replace_all(k, strings, np.asarray(pattern, dtype=object).item(), np.asarray(rewrite, dtype=object).item())


@op("StaticRegexReplace", inputs="input: string", outputs="output: string",
    attrs={"pattern": "", "rewrite": "", "replace_global": True}, shape=_same_shape, **_TRAITS)
def static_regex_replace_op(k, strings):
    return _replace_all(k, strings, k.pattern, k.rewrite)


def regex_replace(input: Any, pattern: Any, rewrite: Any, replace_global: bool = True,  # noqa: A002
                  name: str | None = None) -> Tensor:
    """`af.regex_replace` / `af.strings.regex_replace`: matches of `pattern` replaced by `rewrite`
    (RE2 syntax; `\\1` in the rewrite is group 1). Python strings give StaticRegexReplace, as TF."""
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return static_regex_replace_op(input, pattern=pattern, rewrite=rewrite, replace_global=bool(replace_global),
                                       name=name)
    return regex_replace_op(input, pattern, rewrite, replace_global=bool(replace_global), name=name)


def _full_match(k: Any, strings: Any, pattern: Any) -> np.ndarray:
    regex = _compile(k, pattern)
    return _map(strings, lambda s: regex.fullmatch(s.decode("utf-8", "surrogateescape")) is not None, np.bool_)


@op("RegexFullMatch", inputs="input: string, pattern: string", outputs="output: bool", shape=_scalar_args_shape,
    **_TRAITS)
def regex_full_match_op(k, strings, pattern):
    return _full_match(k, strings, np.asarray(pattern, dtype=object).item())


@op("StaticRegexFullMatch", inputs="input: string", outputs="output: bool", attrs={"pattern": ""},
    shape=_same_shape, **_TRAITS)
def static_regex_full_match_op(k, strings):
    return _full_match(k, strings, k.pattern)


def regex_full_match(input: Any, pattern: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.strings.regex_full_match`: whether each whole string matches `pattern` (RE2 syntax)."""
    if isinstance(pattern, (str, bytes)):
        return static_regex_full_match_op(input, pattern=pattern, name=name)
    return regex_full_match_op(input, pattern, name=name)


# -- length, lower, upper, strip -------------------------------------------------------------------------------
@op("StringLength", inputs="input: string", outputs="output: int32", attrs={"unit": "BYTE"}, shape=_same_shape,
    **_TRAITS)
def string_length_op(k, strings):
    if k.unit == "BYTE":
        return _map(strings, len, np.int32)
    return _map(strings, lambda s: sum(1 for c in s if c & 0xC0 != 0x80), np.int32)


def string_length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """`af.strings.length`: the length of each string in bytes (or UTF8_CHAR characters)."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return string_length_op(input, unit=unit, name=name)


def _case_kernel(ascii_fn: Any, text_fn: Any) -> Any:
    def kernel(k, strings):
        if not k.encoding:
            return _map(strings, ascii_fn)  # bytes methods change ASCII letters only, as TF without encoding
        return _map(strings, lambda s: text_fn(s.decode("utf-8")).encode("utf-8"))

    return kernel


string_lower_op = op("StringLower", inputs="input: string", outputs="output: string", attrs={"encoding": ""},
                     shape=_same_shape, **_TRAITS)(_case_kernel(bytes.lower, str.lower))
string_upper_op = op("StringUpper", inputs="input: string", outputs="output: string", attrs={"encoding": ""},
                     shape=_same_shape, **_TRAITS)(_case_kernel(bytes.upper, str.upper))


def _check_encoding(encoding: str) -> str:
    if encoding not in ("", "utf-8"):
        raise ValueError(f"encoding must be '' or 'utf-8', got {encoding!r}")
    return encoding


def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`af.strings.lower`: ASCII letters lowered (all letters with encoding='utf-8')."""
    return string_lower_op(input, encoding=_check_encoding(encoding), name=name)


def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`af.strings.upper`: ASCII letters uppered (all letters with encoding='utf-8')."""
    return string_upper_op(input, encoding=_check_encoding(encoding), name=name)


@op("StringStrip", inputs="input: string", outputs="output: string", shape=_same_shape, **_TRAITS)
def string_strip_op(k, strings):
    return _map(strings, bytes.strip)  # ASCII whitespace, as isspace


def string_strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.string_strip` / `af.strings.strip`: leading and trailing whitespace removed."""
    return string_strip_op(input, name=name)


# -- hash buckets ----------------------------------------------------------------------------------------------
@op("StringToHashBucketFast", inputs="input: string", outputs="output: int64", attrs={"num_buckets": 1},
    shape=_same_shape, **_TRAITS)
def string_to_hash_bucket_fast_op(k, strings):
    n = int(k.num_buckets)
    return _map(strings, lambda s: fingerprint64(s) % n, np.int64)


@op("StringToHashBucketStrong", inputs="input: string", outputs="output: int64", attrs={"num_buckets": 1, "key": []},
    shape=_same_shape, **_TRAITS)
def string_to_hash_bucket_strong_op(k, strings):
    if len(k.key) != 2:
        raise _invalid(k, "Key must have 2 elements")
    n, key = int(k.num_buckets), (int(k.key[0]), int(k.key[1]))
    return _map(strings, lambda s: siphash24(key, s) % n, np.int64)


def _check_buckets(op_type: str, num_buckets: Any) -> int:
    if int(num_buckets) < 1:
        raise ValueError(f"{op_type}: Value for attr 'num_buckets' of {num_buckets} must be at least minimum 1")
    return int(num_buckets)


def string_to_hash_bucket_fast(input: Any, num_buckets: int, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.string_to_hash_bucket_fast`: Fingerprint64(s) % num_buckets (farmhash, as TF: same buckets)."""
    return string_to_hash_bucket_fast_op(
        input, num_buckets=_check_buckets("StringToHashBucketFast", num_buckets), name=name)


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Any,  # noqa: A002
                                 name: str | None = None) -> Tensor:
    """`af.string_to_hash_bucket_strong`: SipHash-2-4(key, s) % num_buckets (as TF: same buckets)."""
    return string_to_hash_bucket_strong_op(
        input, num_buckets=_check_buckets("StringToHashBucketStrong", num_buckets),
        key=[int(v) for v in key], name=name)
