"""Bit layouts: the one place that knows how report bits are ordered (private).

Conventions
-----------
* **Bit index** ``j`` runs over ``0 .. k-1`` (``k`` Bloom bits); bit ``j`` of cohort
  ``c`` is row ``c * k + j`` of the stacked Bloom vector (google/rappor ``map.csv``).
* **Bit strings** follow google/rappor: character 0 is bit ``k - 1`` and the last
  character is bit 0 (``sum_bits.py``: "char 0 = bit 15" for k = 16).
* **Packed words**: a report is ``W = ceil(k / 64)`` little-endian 64-bit words; bit
  ``j`` is ``(w[j // 64] >> (j % 64)) & 1``; unused high bits are 0.  Arrays of
  packed reports have shape ``(n, W)`` and dtype ``uint64``.
* **Packed bytes** (:func:`pack_bytes`): the first ``ceil(k / 8)`` bytes of the
  words in little-endian order, so bit ``j`` is ``(b[j // 8] >> (j % 8)) & 1``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "bits_to_bitstrings",
    "bitstring_codes_to_bits",
    "bitstrings_to_bits",
    "num_words",
    "pack_bits",
    "pack_bytes",
    "unpack_bits",
    "unpack_bytes",
]


def num_words(num_bloombits: int) -> int:
    """Number of 64-bit words that hold ``num_bloombits`` bits."""
    return (num_bloombits + 63) // 64


def pack_bits(bits: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Pack an ``(n, k)`` array of 0/1 into ``(n, ceil(k/64))`` little-endian uint64 words."""
    arr = np.asarray(bits)
    if arr.ndim == 1:
        row: npt.NDArray[np.uint64] = pack_bits(arr[np.newaxis, :])[0]
        return row
    n, k = arr.shape
    w = num_words(k)
    packed = np.packbits(arr.astype(np.uint8, copy=False), axis=1, bitorder="little")
    out = np.zeros((n, w * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view("<u8").astype(np.uint64, copy=False).reshape(n, w)


def unpack_bits(words: npt.ArrayLike, num_bloombits: int) -> npt.NDArray[np.uint8]:
    """Inverse of :func:`pack_bits`: ``(n, W)`` words to an ``(n, k)`` uint8 array of 0/1."""
    arr = np.asarray(words, dtype=np.uint64)
    if arr.ndim == 1:
        bits_row: npt.NDArray[np.uint8] = unpack_bits(arr[np.newaxis, :], num_bloombits)[0]
        return bits_row
    n = arr.shape[0]
    as_bytes = np.ascontiguousarray(arr.astype("<u8", copy=False)).view(np.uint8).reshape(n, 8 * arr.shape[1])
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :num_bloombits]


def pack_bytes(bits: npt.ArrayLike) -> bytes:
    """Pack one report's ``k`` bits into ``ceil(k/8)`` bytes (bit ``j`` in byte ``j // 8``)."""
    arr = np.asarray(bits, dtype=np.uint8)
    return np.packbits(arr, bitorder="little").tobytes()


def unpack_bytes(data: bytes, num_bloombits: int) -> npt.NDArray[np.uint8]:
    """Inverse of :func:`pack_bytes`; raises ``ValueError`` on a wrong length or stray high bits."""
    expected = (num_bloombits + 7) // 8
    if len(data) != expected:
        msg = f"expected {expected} bytes for {num_bloombits} bits, found {len(data)}"
        raise ValueError(msg)
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
    if bits[num_bloombits:].any():
        msg = f"bits above bit {num_bloombits - 1} are set"
        raise ValueError(msg)
    return bits[:num_bloombits].copy()


def bitstring_codes_to_bits(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Bit strings as an ``(n, k)`` array of byte codes (row ``i`` = string ``i``) to bits.

    Column ``j`` of the result is bit ``j`` (character ``k - 1 - j``): 0 for ``'0'``, 1 for
    ``'1'`` and a value above 1 for any other byte, which the caller checks.  O(n k)
    time and memory (the former per-file index table was O(k**2)).
    """
    return np.ascontiguousarray(codes[:, ::-1]) - np.uint8(ord("0"))


def bitstrings_to_bits(strings: Sequence[str], num_bloombits: int) -> npt.NDArray[np.uint8]:
    """Convert google/rappor bit strings (character 0 = bit k-1) to an ``(n, k)`` 0/1 array.

    Raises ``ValueError`` (with the 0-based index of the first bad string) when a string
    has the wrong length or a character other than ``0``/``1``; callers add file and line.
    """
    n = len(strings)
    if n == 0:
        return np.zeros((0, num_bloombits), dtype=np.uint8)
    try:
        joined = "".join(strings).encode("ascii")
    except UnicodeEncodeError:
        joined = b""
    lengths_ok = len(joined) == n * num_bloombits
    if lengths_ok:
        bits = bitstring_codes_to_bits(np.frombuffer(joined, dtype=np.uint8).reshape(n, num_bloombits))
        if (bits <= 1).all():
            return bits
    # Slow path: find the first offending string for the message.
    for i, s in enumerate(strings):
        if len(s) != num_bloombits:
            raise _BitStringError(i, f"expected a bit string of {num_bloombits} characters, found {len(s)}")
        bad = next((ch for ch in s if ch not in "01"), None)
        if bad is not None:
            raise _BitStringError(i, f"expected only '0' and '1' in the bit string, found {bad!r}")
    raise _BitStringError(0, "malformed bit strings")  # pragma: no cover - unreachable


class _BitStringError(ValueError):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


BitStringError = _BitStringError


def bits_to_bitstrings(bits: npt.ArrayLike) -> list[str]:
    """Convert an ``(n, k)`` 0/1 array to google/rappor bit strings (character 0 = bit k-1)."""
    arr = np.asarray(bits, dtype=np.uint8)
    if arr.ndim == 1:
        arr = arr[np.newaxis, :]
    n, k = arr.shape
    chars = (arr[:, ::-1] + np.uint8(ord("0"))).astype(np.uint8)
    flat = np.ascontiguousarray(chars).tobytes().decode("ascii")
    return [flat[i * k : (i + 1) * k] for i in range(n)]
