"""The two string hashes TF's bucketing ops use, in pure Python over 64-bit integers.

`fingerprint64` is farmhash's Fingerprint64 (farmhashna::Hash64), the hash behind
`string_to_hash_bucket_fast`; `siphash24` is SipHash-2-4 keyed by two 64-bit words, the hash
behind `to_hash_bucket_strong`. Both are written from the published algorithms and checked against
TensorFlow 2.21's bucket values in tests/ops/test_string_ops.py. Each is a few dozen integer
operations per 8 bytes: fine for the labels and vocabulary strings input code hashes.
"""

from __future__ import annotations

import struct

_M64 = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rotr(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M64


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _hash_len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M64
        b = _fetch64(s, n - 8)
        c = (_rotr(b, 37) * mul + a) & _M64
        d = ((_rotr(a, 25) + b) * mul) & _M64
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16(n + (a << 3), _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _hash_len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    return _hash_len16((_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64,
                       (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)


def _hash_len33to64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    y = (_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64
    z = _hash_len16(y, (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_fetch64(s, 16) * mul) & _M64
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M64
    h = ((z + _fetch64(s, n - 24)) * mul) & _M64
    return _hash_len16((_rotr((e + f) & _M64, 43) + _rotr(g, 30) + h) & _M64,
                       (e + _rotr((f + a) & _M64, 18) + g) & _M64, mul)


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = struct.unpack_from("<4Q", s, i)
    a = (a + w) & _M64
    b = _rotr((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rotr(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def fingerprint64(s: bytes) -> int:
    """farmhash Fingerprint64 of `s` (TF's `Fingerprint64`), an unsigned 64-bit integer."""
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s)
    if n <= 32:
        return _hash_len17to32(s)
    if n <= 64:
        return _hash_len33to64(s)
    seed = 81
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v, w = (0, 0), (0, 0)
    x = (seed * _K2 + _fetch64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64  # leaves 1 to 64 bytes for the final round
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotr((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rotr((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _M64
        z = (_rotr((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak_hash_len32_with_seeds(s, i, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _M64
    v0 = (v[0] + w0) & _M64
    w0 = (w0 + v0) & _M64
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotr((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rotr((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _M64
    z = (_rotr((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak_hash_len32_with_seeds(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64,
                       (_hash_len16(v[1], w[1], mul) + x) & _M64, mul)


def _rotl(v: int, shift: int) -> int:
    return ((v << shift) | (v >> (64 - shift))) & _M64


def siphash24(key: tuple[int, int], s: bytes) -> int:
    """SipHash-2-4 of `s` under the 128-bit key (key[0], key[1]), as TF's StrongKeyedHash."""
    k0, k1 = key[0] & _M64, key[1] & _M64
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(count: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(count):
            v0 = (v0 + v1) & _M64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _M64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _M64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _M64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(s)
    whole = n - n % 8
    for i in range(0, whole, 8):
        m = _fetch64(s, i)
        v3 ^= m
        rounds(2)
        v0 ^= m
    last = int.from_bytes(s[whole:], "little") | ((n & 0xFF) << 56)
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3
