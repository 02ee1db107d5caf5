"""MurmurHash3_x64_128 vectorized over many keys and many seeds with numpy (private).

:func:`murmur3_x64_128` computes exactly what ``mmh3.mmh3_x64_128_utupledigest(key, seed)``
computes (Austin Appleby's reference ``MurmurHash3_x64_128`` in ``MurmurHash3.cpp``,
public domain), for every pair of a key and a seed at once.  numpy's ``uint64``
array arithmetic wraps modulo ``2**64``, which is the C semantics the hash relies on.

How it is vectorized
--------------------
* The key-dependent half of each 16-byte block (``k1 *= c1; k1 = rotl(k1, 31);
  k1 *= c2`` and the same for ``k2``) does not depend on the seed, so it is computed
  once per key and block, shape ``(S, blocks)``.
* The state ``(h1, h2)`` is an ``(S, len(seeds))`` array updated block by block.
  Keys are grouped by their number of full blocks, so every key of a group runs the
  same steps; a tail shorter than 16 bytes is zero-padded, which is harmless because
  the reference mixes a zero ``k1``/``k2`` into zero.
* Work is done in chunks of keys so that temporaries stay in the CPU cache.

Why not ``mmh3`` in a loop
--------------------------
``mmh3`` hashes one key under one seed per call, and a candidate list needs every key
under every cohort: 20,000 keys x 128 cohorts take 0.04 CPU-s here against 0.77 for a
Python loop of ``mmh3`` calls into an array, 21x (best of 3, ``python
benchmarks/hand_written.py``, on a quiet 2-core machine, 2026-11-24).  ``tests/client/test_murmur.py`` checks it bit for bit against
``mmh3``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["murmur3_x64_128"]

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_N1 = np.uint64(0x52DCE729)
_N2 = np.uint64(0x38495AB5)
_FIVE = np.uint64(5)
_S33 = np.uint64(33)

# Number of (key, seed) states handled per chunk: 2**16 uint64 = 512 KiB per array.
_CHUNK_STATES = 1 << 16


def _rotl(x: npt.NDArray[np.uint64], r: int, tmp: npt.NDArray[np.uint64]) -> None:
    """Rotate ``x`` left by ``r`` bits in place (``tmp`` is scratch of the same shape)."""
    np.right_shift(x, np.uint64(64 - r), out=tmp)
    np.left_shift(x, np.uint64(r), out=x)
    x |= tmp


def _fmix(x: npt.NDArray[np.uint64], tmp: npt.NDArray[np.uint64]) -> None:
    """The finalization mix ``fmix64``, in place."""
    for const in (_F1, _F2, None):
        np.right_shift(x, _S33, out=tmp)
        x ^= tmp
        if const is not None:
            x *= const


def _padded_words(keys: Sequence[bytes], width: int, prefix: bytes,
                  lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """``prefix + key`` for every key, zero-padded to ``width`` bytes, as ``(len(keys), width // 8)`` little-endian words.

    ``lengths``: the keys' lengths (without the prefix).
    """
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    out = np.zeros((len(keys), width), dtype=np.uint8)
    out[:, :len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    if data.size:
        starts = np.cumsum(lengths) - lengths
        rows = np.repeat(np.arange(len(keys)), lengths)
        cols = np.arange(len(prefix), data.size + len(prefix)) - np.repeat(starts, lengths)
        out[rows, cols] = data
    return out.view("<u8").astype(np.uint64, copy=False)


def _hash_group(
    words: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.uint64],
    seeds: npt.NDArray[np.uint64],
    nblocks: int,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Hash keys that all have ``nblocks`` full 16-byte blocks (plus a tail of 0..15 bytes)."""
    # Seed-independent halves of every block, including the zero-padded tail block.
    k1 = words[:, 0::2].copy()
    k2 = words[:, 1::2].copy()
    k1 *= _C1
    _rotl(k1, 31, np.empty_like(k1))
    k1 *= _C2
    k2 *= _C2
    _rotl(k2, 33, np.empty_like(k2))
    k2 *= _C1
    n, s = words.shape[0], seeds.shape[0]
    # Tail (0..15 bytes, zero-padded: mixing a zero word leaves the state unchanged) and the
    # length are xored into the state one after the other: one word per key.
    tail1 = k1[:, nblocks] ^ lengths
    tail2 = k2[:, nblocks] ^ lengths
    # Temporaries are allocated once: the chunk's arrays stay in the CPU cache.  The state
    # starts as the seed xored with the first word it takes (one pass instead of a copy
    # and an xor); in the first block h2 is still the seed when h1 adds it.
    h1, h2, tmp = np.empty((n, s), dtype=np.uint64), np.empty((n, s), dtype=np.uint64), np.empty((n, s), dtype=np.uint64)
    first1, first2 = (k1[:, 0], k2[:, 0]) if nblocks else (tail1, tail2)
    np.bitwise_xor(first1[:, np.newaxis], seeds[np.newaxis, :], out=h1)
    for b in range(nblocks):
        if b:
            h1 ^= k1[:, b : b + 1]
        _rotl(h1, 27, tmp)
        if b:
            h1 += h2
        else:
            h1 += seeds[np.newaxis, :]
        h1 *= _FIVE
        h1 += _N1
        if b:
            h2 ^= k2[:, b : b + 1]
        else:
            np.bitwise_xor(first2[:, np.newaxis], seeds[np.newaxis, :], out=h2)
        _rotl(h2, 31, tmp)
        h2 += h1
        h2 *= _FIVE
        h2 += _N2
    if nblocks:
        h1 ^= tail1[:, np.newaxis]
        h2 ^= tail2[:, np.newaxis]
    else:
        np.bitwise_xor(first2[:, np.newaxis], seeds[np.newaxis, :], out=h2)
    h1 += h2
    h2 += h1
    _fmix(h1, tmp)
    _fmix(h2, tmp)
    h1 += h2
    h2 += h1
    return h1, h2


def murmur3_x64_128(
    keys: Sequence[bytes], seeds: npt.ArrayLike, *, prefix: bytes = b""
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """MurmurHash3_x64_128 of every key (after ``prefix``) under every seed.

    Parameters
    ----------
    keys : sequence of bytes
        The ``S`` keys, of any lengths.
    seeds : array-like of int, shape (n_seeds,)
        32-bit seeds in ``[0, 2**32)``.
    prefix : bytes, default=b""
        Hashed before every key: the digests of ``prefix + key``, without making those
        ``S`` byte strings.

    Returns
    -------
    h1, h2 : ndarray of shape (S, n_seeds), dtype uint64
        The two 64-bit halves of the digest, as ``mmh3.mmh3_x64_128_utupledigest``
        returns them: ``(h1[i, j], h2[i, j]) == mmh3.mmh3_x64_128_utupledigest(keys[i], seeds[j])``.

    References
    ----------
    Austin Appleby, ``MurmurHash3.cpp`` (SMHasher), function ``MurmurHash3_x64_128``.
    """
    seed_arr = np.asarray(seeds, dtype=np.int64).reshape(-1)
    if seed_arr.size and (seed_arr.min() < 0 or seed_arr.max() > 0xFFFFFFFF):
        msg = "MurmurHash3 seeds must be in the range [0, 2**32)."
        raise ValueError(msg)
    seeds_u = seed_arr.astype(np.uint64)
    n = len(keys)
    h1 = np.empty((n, seeds_u.size), dtype=np.uint64)
    h2 = np.empty_like(h1)
    if n == 0 or seeds_u.size == 0:
        return h1, h2
    key_lengths = np.fromiter((len(key) for key in keys), dtype=np.int64, count=n)
    lengths = key_lengths + len(prefix)
    nblocks = lengths // 16
    order = np.argsort(nblocks, kind="stable")
    bounds = np.flatnonzero(np.diff(nblocks[order])) + 1
    chunk = max(1, _CHUNK_STATES // seeds_u.size)
    for group in np.split(order, bounds):
        nb = int(nblocks[group[0]])
        for start in range(0, group.size, chunk):
            rows: slice | npt.NDArray[np.intp]
            if len(bounds) == 0:  # one group, in the keys' order: a slice, not a gather
                stop = min(start + chunk, n)
                chunk_keys, rows = keys[start:stop], slice(start, stop)
            else:
                rows = group[start : start + chunk]
                chunk_keys = [keys[i] for i in rows]
            words = _padded_words(chunk_keys, 16 * (nb + 1), prefix, key_lengths[rows])
            g1, g2 = _hash_group(words, lengths[rows].astype(np.uint64), seeds_u, nb)
            h1[rows] = g1
            h2[rows] = g2
    return h1, h2
