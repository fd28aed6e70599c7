"""Parsing ops, as TF1: `decode_csv` (DecodeCSV), `decode_raw` (DecodeRaw) and `string_to_number`
(StringToNumber), what the records of a reader go through on their way to tensors.

The rules follow TF's kernels: a CSV field may be quoted (`"a,b"`, `""` for a quote inside),
unquoted fields may not hold quotes or line breaks, an empty field (or one equal to `na_value`)
takes its column's default and a column without a default is required; numbers may carry
surrounding whitespace, and floats accept `inf`, `nan` and hexadecimal. Errors are
InvalidArgumentErrors naming the op, the record and the field, with TF's wording.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.ops.registry import BuildContext, TypeList, op
from asyncflow.shapes import TensorShape

_TRAITS = {"differentiable": False}

# -- numbers from strings --------------------------------------------------------------------------------
_INT = re.compile(rb"^\s*[+-]?[0-9]+\s*$")
_FLOAT = re.compile(rb"^\s*[+-]?(?:inf|infinity|nan|[0-9]+\.?[0-9]*(?:e[+-]?[0-9]+)?|\.[0-9]+(?:e[+-]?[0-9]+)?"
                    rb"|0x[0-9a-f]+(?:\.[0-9a-f]*)?(?:p[+-]?[0-9]+)?)\s*$", re.IGNORECASE)


def _as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def parse_int(text: bytes, np_type: Any) -> Any:
    """The integer `text` holds, or None (not an integer, or out of range for `np_type`)."""
    if not _INT.match(text):
        return None
    value = int(text)
    info = np.iinfo(np_type)
    return np_type(value) if info.min <= value <= info.max else None


def parse_float(text: bytes, np_type: Any) -> Any:
    """The float `text` holds (overflow gives inf, as strtod), or None."""
    if not _FLOAT.match(text):
        return None
    s = text.strip().decode("ascii")
    body = s.lstrip("+-")
    if body[:2].lower() == "0x":
        value = float.fromhex(s)
    else:
        value = float(s)
    with np.errstate(over="ignore"):
        return np_type(value)


def _parser(dtype: dtypes.DType) -> Any:
    np_type = dtype.as_numpy_dtype
    if dtype.is_integer:
        return lambda text: parse_int(text, np_type)
    return lambda text: parse_float(text, np_type)


# -- StringToNumber ----------------------------------------------------------------------------------------
_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64)


@op("StringToNumber", inputs="string_tensor: string", outputs="output: out_type", types={"out_type": _NUMBER_TYPES},
    type_defaults={"out_type": dtypes.float32}, shape=lambda b: b.shape(0), **_TRAITS)
def string_to_number_op(k, strings):
    parse = _parser(dtypes.as_dtype(k.out_type))
    arr = np.asarray(strings, dtype=object)
    out = np.empty(arr.shape, dtype=k.out_dtypes[0])
    flat = out.reshape(-1)
    for i, s in enumerate(arr.reshape(-1)):
        value = parse(_as_bytes(s))
        if value is None:
            text = _as_bytes(s).decode(errors="replace")
            raise ValueError(f"StringToNumberOp could not correctly convert string: {text}")
        flat[i] = value
    return out


def string_to_number(string_tensor: Any, out_type: Any = dtypes.float32, name: str | None = None) -> Any:
    """`af.string_to_number`: each string parsed as a number of `out_type` (float32 by default)."""
    return string_to_number_op(string_tensor, out_type=dtypes.as_dtype(out_type), name=name)


# -- DecodeRaw -------------------------------------------------------------------------------------------------
_RAW_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint16, dtypes.uint8, dtypes.int16,
              dtypes.int8, dtypes.int64, dtypes.complex64, dtypes.complex128, dtypes.bool, dtypes.bfloat16)


def _decode_raw_shape(b: BuildContext) -> TensorShape:
    return b.shape(0).concatenate([None]) if b.shape(0).ndims is not None else TensorShape(None)


@op("DecodeRaw", inputs="bytes: string", outputs="output: out_type", types={"out_type": _RAW_TYPES},
    attrs={"little_endian": True}, shape=_decode_raw_shape, **_TRAITS)
def decode_raw_op(k, data):
    np_type = np.dtype(k.out_dtypes[0])
    arr = np.asarray(data, dtype=object)
    flat = [_as_bytes(v) for v in arr.reshape(-1)]
    width = len(flat[0]) if flat else 0
    for i, v in enumerate(flat):
        if len(v) != width:
            raise ValueError(f"DecodeRaw requires input strings to all be the same size, but element {i} has size "
                             f"{width} != {len(v)}")
    if width % np_type.itemsize:
        raise ValueError(f"Input to DecodeRaw has length {width} that is not a multiple of {np_type.itemsize}, the "
                         f"size of {dtypes.as_dtype(k.out_type).name}")
    out = np.frombuffer(b"".join(flat), dtype=np_type).reshape(arr.shape + (width // np_type.itemsize,))
    if np_type.itemsize > 1 and k.little_endian != (sys.byteorder == "little"):
        part = np_type.itemsize // 2 if np_type.kind == "c" else np_type.itemsize
        out = out.view(f"u{part}").byteswap().view(np_type)
    return out.copy() if not out.flags.writeable else out


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True, name: str | None = None,
               bytes: Any = None) -> Any:  # noqa: A002 - TF1's deprecated argument name
    """`af.decode_raw`: each string's bytes reinterpreted as a vector of `out_type` (all strings the same size)."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes (or bytes) and out_type")
    return decode_raw_op(input_bytes, out_type=dtypes.as_dtype(out_type), little_endian=little_endian, name=name)


# -- DecodeCSV -------------------------------------------------------------------------------------------------
_CSV_TYPES = TypeList((dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string))


def _decode_csv_shape(b: BuildContext) -> list[TensorShape]:
    for i, s in enumerate(b.shapes(1)):
        if s.ndims is not None and (s.ndims > 1 or (s.ndims == 1 and s[0].value is not None and s[0].value > 1)):
            raise b.error(f"Shape of a default must be a length-0 or length-1 vector, or a scalar (record_defaults "
                          f"{i} has shape {s})")
    return [b.shape(0) for _ in b.inputs[1]]


def split_csv_record(record: bytes, delim: int, quotes: bool, select: set[int] | None) -> tuple[list[bytes], int]:
    """TF's ExtractFields: the fields of one record (only the selected columns) and how many it has."""
    fields: list[bytes] = []
    n, i, count = len(record), 0, 0
    while i < n:
        c = record[i]
        if c in (10, 13):  # line breaks between fields are skipped, as TF's kernel does
            i += 1
            continue
        field = bytearray()
        if quotes and c == 34:
            i += 1
            while i < n - 1:
                if record[i] == 34:
                    if record[i + 1] == 34:
                        field.append(34)
                        i += 2
                        continue
                    if record[i + 1] != delim:
                        raise ValueError("Quote inside a string has to be escaped by another quote")
                    break
                field.append(record[i])
                i += 1
            if not (i < n and record[i] == 34 and (i == n - 1 or record[i + 1] == delim)):
                raise ValueError("Quoted field has to end with quote followed by delim or end")
            i += 2
        else:
            while i < n and record[i] != delim:
                if (quotes and record[i] == 34) or record[i] in (10, 13):
                    raise ValueError("Unquoted fields cannot have quotes/CRLFs inside")
                field.append(record[i])
                i += 1
            i += 1
        if select is None or count in select:
            fields.append(bytes(field))
        count += 1
    if n and record[n - 1] == delim:
        if select is None or count in select:
            fields.append(b"")
        count += 1
    return fields, count


@op("DecodeCSV", inputs="records: string, record_defaults: OUT_TYPE", outputs="output: OUT_TYPE",
    types={"OUT_TYPE": _CSV_TYPES}, attrs={"field_delim": ",", "use_quote_delim": True, "na_value": "",
                                            "select_cols": []}, shape=_decode_csv_shape, **_TRAITS)
def decode_csv_op(k, records, *defaults):
    delim = k.field_delim.encode() if isinstance(k.field_delim, str) else k.field_delim
    if len(delim) != 1:
        raise ValueError("field_delim should be only 1 char")
    na_value = k.na_value.encode() if isinstance(k.na_value, str) else k.na_value
    types = [dtypes.as_dtype(t) for t in k.OUT_TYPE]
    select = set(k.select_cols) if k.select_cols else None
    n_fields = len(types)
    for j, d in enumerate(defaults):
        if np.size(d) > 1:
            raise ValueError(f"record_defaults[{j}] must be a scalar or a vector of at most one element")
    arr = np.asarray(records, dtype=object)
    outs = [np.empty(arr.shape, dtype=t.as_numpy_dtype) for t in types]
    flats = [o.reshape(-1) for o in outs]
    parsers = [None if t == dtypes.string else _parser(t) for t in types]
    for r, record in enumerate(arr.reshape(-1)):
        fields, count = split_csv_record(_as_bytes(record), delim[0], k.use_quote_delim, select)
        if len(fields) != n_fields:
            raise ValueError(f"Expect {n_fields} fields but have {len(fields) if select else count} in record {r}")
        for f, field in enumerate(fields):
            if not field or field == na_value:
                default = np.asarray(defaults[f], dtype=object if types[f] == dtypes.string else None)
                if default.size == 0:
                    raise ValueError(f"Field {f} is required but missing in record {r}!")
                flats[f][r] = default.reshape(-1)[0]
            elif parsers[f] is None:
                flats[f][r] = field
            else:
                value = parsers[f](field)
                if value is None:
                    raise ValueError(f"Field {f} in record {r} is not a valid {types[f].name}: "
                                     f"{field.decode(errors='replace')}")
                flats[f][r] = value
    return outs


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",", use_quote_delim: bool = True,
               name: str | None = None, na_value: str = "", select_cols: Any = None) -> list[Any]:
    """`af.decode_csv`: one tensor per column of the CSV `records` (same shape as `records`), typed
    and defaulted by `record_defaults` (one tensor per column: a value, or empty for a required column)."""
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    return decode_csv_op(records, list(record_defaults), field_delim=field_delim, use_quote_delim=use_quote_delim,
                         na_value=na_value, select_cols=select_cols or [], name=name)


__all__ = ["decode_csv", "decode_raw", "string_to_number"]
