"""Bloom-filter hashing: the only module that imports :mod:`mmh3`.

Specification (precise enough for a client in another language; see ``docs/hashing.md``)
------------------------------------------------------------------------------------
Inputs: a value ``v`` (a ``str`` is encoded as UTF-8; ``bytes`` are used as they are),
a cohort ``c`` in ``[0, m)``, ``h`` hash functions and ``k`` Bloom bits.

1. For block ``b = 0, 1, ..., ceil(h / 2) - 1`` compute MurmurHash3_x64_128 (Austin
   Appleby's ``MurmurHash3_x64_128``) of the key ``uint32_le(b) || v`` with the 32-bit
   seed ``c``.  Its result is two unsigned 64-bit words ``(h1, h2)``; as 16 bytes they
   are ``h1`` little-endian followed by ``h2`` little-endian.
2. Hash ``i`` (``0 <= i < h``) takes word ``h1`` of block ``i // 2`` when ``i`` is even
   and ``h2`` when ``i`` is odd; call it ``w``.
3. Its bit index is ``floor(w * k / 2**64)`` (Lemire's multiply-shift reduction: every
   index in ``[0, k)`` gets either ``floor(2**64 / k)`` or ``ceil(2**64 / k)`` of the
   words, a relative bias below ``k / 2**64``).
4. The Bloom filter of ``v`` in cohort ``c`` has bit ``j`` set iff some hash has index
   ``j`` (indices that coincide set one bit).

Every cohort therefore has its own family of hash functions.  Values are hashed
exactly as given: no normalization, trimming or case folding.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import mmh3
import numpy as np
import numpy.typing as npt

from ._murmur import murmur3_x64_128
from .exceptions import InvalidParameterError
from .params import Params

__all__ = ["bloom_bit_indices", "bloom_bits", "bloom_bits_table", "bloom_filter", "value_bytes"]

_BLOCK_PREFIXES = tuple(struct.pack("<I", b) for b in range(64))
_murmur = mmh3.mmh3_x64_128_utupledigest


def utf8_problem(text: str) -> str:
    """Why ``text`` has no UTF-8 form, for messages: its first lone surrogate and where it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a str holding the lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}"
    return ""


def value_bytes(value: str | bytes) -> bytes:
    """The bytes that are hashed for ``value`` (UTF-8 for ``str``).

    Raises
    ------
    InvalidParameterError
        If ``value`` is neither str nor bytes, or is a str that UTF-8 cannot encode (a
        lone surrogate such as ``"\\ud800"``).
    """
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            msg = f"A RAPPOR value must be bytes or a str encodable as UTF-8. Got {utf8_problem(value)} instead."
            raise InvalidParameterError(msg) from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    msg = f"A RAPPOR value must be str or bytes. Got {type(value).__name__} instead."
    raise InvalidParameterError(msg)


def _prefix(block: int) -> bytes:
    if block < len(_BLOCK_PREFIXES):
        return _BLOCK_PREFIXES[block]
    return struct.pack("<I", block)


def _indices(data: bytes, cohort: int, num_bloombits: int, num_hashes: int) -> list[int]:
    out: list[int] = []
    for block in range((num_hashes + 1) // 2):
        words = _murmur(_prefix(block) + data, cohort)
        for w in words:
            if len(out) == num_hashes:
                break
            out.append((w * num_bloombits) >> 64)
    return out


def _check_cohort(cohort: int, params: Params) -> int:
    if isinstance(cohort, bool) or not isinstance(cohort, (int, np.integer)) or not 0 <= cohort < params.num_cohorts:
        msg = f"The 'cohort' parameter must be an int in the range [0, {params.num_cohorts - 1}]. Got {cohort!r} instead."
        raise InvalidParameterError(msg)
    return int(cohort)


def bloom_bit_indices(value: str | bytes, cohort: int, *, num_bloombits: int, num_hashes: int) -> tuple[int, ...]:
    """The ``num_hashes`` Bloom bit indices of ``value`` in ``cohort`` (with repeats, in hash order).

    Examples
    --------
    >>> bloom_bit_indices("v1", 0, num_bloombits=16, num_hashes=2)  # doctest: +SKIP
    (11, 3)
    """
    return tuple(_indices(value_bytes(value), int(cohort), num_bloombits, num_hashes))


def bloom_bits(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.int64]:
    """Bloom bit indices of ``value`` in ``cohort`` as an int64 array of shape ``(h,)``."""
    c = _check_cohort(cohort, params)
    return np.asarray(_indices(value_bytes(value), c, params.num_bloombits, params.num_hashes), dtype=np.int64)


def bloom_filter(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.uint8]:
    """The Bloom filter of ``value`` in ``cohort``: a 0/1 uint8 array of shape ``(k,)``, index = bit."""
    out = np.zeros(params.num_bloombits, dtype=np.uint8)
    out[bloom_bits(value, cohort, params)] = 1
    return out


def bloom_bits_table(values: Sequence[str | bytes], params: Params) -> npt.NDArray[np.int32]:
    """Bloom bit indices of every value in every cohort.

    Parameters
    ----------
    values : sequence of str or bytes
        The candidate strings (``S`` of them).
    params : Params

    Returns
    -------
    ndarray of shape (S, num_cohorts, num_hashes), dtype int32
        ``out[s, c, i]`` is the index of hash ``i`` of ``values[s]`` in cohort ``c``.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    out = np.empty((len(values), m, h), dtype=np.int64 if k > 2**31 - 1 else np.int32)
    encoded = [value_bytes(v) for v in values]
    kk = np.uint64(k)
    for b in range((h + 1) // 2):
        prefix = _prefix(b)
        # Vectorized MurmurHash3_x64_128 over all keys and all cohorts (seeds); bit-identical to mmh3.
        h1, h2 = murmur3_x64_128([prefix + d for d in encoded], np.arange(m))
        for i, w in ((2 * b, h1), (2 * b + 1, h2)):
            if i >= h:
                break
            if k < 2**32:
                # floor(w * k / 2**64) without overflow, in place: split w into 32-bit halves;
                # hi*k < 2**64 and (lo*k) >> 32 < 2**32, so the sum fits in 64 bits.
                lo = w & np.uint64(0xFFFFFFFF)
                lo *= kk
                lo >>= np.uint64(32)
                w >>= np.uint64(32)
                w *= kk
                w += lo
                w >>= np.uint64(32)
                out[:, :, i] = w
            else:  # pragma: no cover - k >= 2**32 bits is not a practical Bloom filter
                for idx in np.ndindex(w.shape):
                    out[idx + (i,)] = (int(w[idx]) * k) >> 64
    return out
