"""String and byte ops of TF1's top level: encode_base64 / decode_base64 (EncodeBase64 / DecodeBase64,
the web-safe alphabet `-_` as TF's) and fingerprint (Fingerprint: farmhash's Fingerprint64 of each row's
bytes, as 8 little-endian uint8). None is differentiable, as in TF.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

import numpy as np

from asyncflow.graph import Tensor
from asyncflow.ops.registry import ALL_TYPES, BuildContext, op
from asyncflow.ops.shape_fns import same_as_input
from asyncflow.ops.string_hash import fingerprint64
from asyncflow.shapes import TensorShape

__all__ = ["encode_base64", "decode_base64", "fingerprint"]


def _each(fn: Any, x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for i, s in np.ndenumerate(arr):
        out[i] = fn(s.encode() if isinstance(s, str) else bytes(s))
    return out


@op("EncodeBase64", inputs="input: string", outputs="output: string", attrs={"pad": False}, shape=same_as_input,
    differentiable=False)
def encode_base64_op(k, x):
    pad = k.pad
    return _each(lambda s: base64.urlsafe_b64encode(s) if pad else base64.urlsafe_b64encode(s).rstrip(b"="), x)


@op("DecodeBase64", inputs="input: string", outputs="output: string", shape=same_as_input, differentiable=False)
def decode_base64_op(k, x):
    def decode(s: bytes) -> bytes:
        body = s.rstrip(b"=")
        if len(body) % 4 == 1 or len(s) - len(body) > 2 or not all(c in _WEB_SAFE for c in body):
            raise ValueError(f"DecodeBase64 '{k.name}': Invalid character found in base64 (or a bad length): {s!r}")
        try:
            return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        except binascii.Error as exc:
            raise ValueError(f"DecodeBase64 '{k.name}': {exc}: {s!r}") from None

    return _each(decode, x)


_WEB_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.encode_base64`: each string in web-safe base64 (`-` and `_`), '='-padded only when `pad`."""
    return encode_base64_op(input, pad=bool(pad), name=name)


def decode_base64(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`af.decode_base64`: the bytes of each web-safe base64 string (padding optional)."""
    return decode_base64_op(input, name=name)


def _fingerprint_shape(b: BuildContext) -> TensorShape:
    x = b.shape(0)
    if x.ndims == 0:
        raise b.error(f"data must have rank at least one, got shape {x}")
    if b.shape(1).ndims not in (None, 0):
        raise b.error(f"method must be a scalar, got shape {b.shape(1)}")
    return TensorShape([None if x.ndims is None else x[0].value, 8])


def _fp_bytes(data: bytes) -> bytes:
    return struct.pack("<Q", fingerprint64(data))


@op("Fingerprint", inputs="data: T, method: string", outputs="fingerprint: uint8", types={"T": ALL_TYPES},
    shape=_fingerprint_shape, differentiable=False)
def fingerprint_op(k, data, method):
    method = np.asarray(method, dtype=object).item()
    method = method.decode() if isinstance(method, bytes) else str(method)
    if method != "farmhash64":
        raise ValueError(f"Fingerprint '{k.name}': Unsupported fingerprint method: {method}")
    data = np.asarray(data)
    if data.ndim == 0:
        raise ValueError(f"Fingerprint '{k.name}': data must have rank at least one, got a scalar")
    rows = data.reshape(data.shape[0], -1)
    out = np.empty((data.shape[0], 8), np.uint8)
    for i, row in enumerate(rows):
        if data.dtype == object:
            strings = [s.encode() if isinstance(s, str) else bytes(s) for s in row]
            # One string per row is hashed itself; several are hashed by their concatenated fingerprints.
            digest = _fp_bytes(strings[0]) if len(strings) == 1 else _fp_bytes(b"".join(map(_fp_bytes, strings)))
        else:
            digest = _fp_bytes(np.ascontiguousarray(row).tobytes())
        out[i] = np.frombuffer(digest, np.uint8)
    return out


def fingerprint(data: Any, method: str = "farmhash64", name: str | None = None) -> Tensor:
    """`af.fingerprint`: a [batch, 8] uint8 fingerprint of each row (first dimension) of `data`."""
    return fingerprint_op(data, method, name=name)

