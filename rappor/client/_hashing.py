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
from collections.abc import Iterator, Sequence
from typing import Any

import mmh3
import numpy as np
import numpy.typing as npt

from ._murmur import murmur3_x64_128
from .._util.validation import check_cohort, check_cohorts
from ..exceptions import InvalidParameterError
from ..params import Params

__all__ = ["bloom_bit_indices", "bloom_bits", "bloom_bits_table", "bloom_filter", "bloom_indices_of_rows", "bloom_matrix",
           "raise_not_utf8", "reduce_words", "split_bit_indices", "split_hash_words", "utf8_problem", "value_bytes"]

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


def bloom_bit_indices(value: str | bytes, cohort: int, *, num_bloombits: int, num_hashes: int) -> tuple[int, ...]:
    """The ``num_hashes`` Bloom bit indices of ``value`` in ``cohort`` (with repeats, in hash order).

    Examples
    --------
    >>> bloom_bit_indices("v1", 0, num_bloombits=16, num_hashes=2)  # both hashes land on bit 7
    (7, 7)
    >>> bloom_bit_indices("v2", 0, num_bloombits=16, num_hashes=2)
    (1, 11)
    """
    return tuple(_indices(value_bytes(value), int(cohort), num_bloombits, num_hashes))


def bloom_bits(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.int64]:
    """Bloom bit indices of ``value`` in ``cohort`` as an int64 array of shape ``(h,)``."""
    c = check_cohort(cohort, params.num_cohorts, "bloom_bits")
    return np.asarray(_indices(value_bytes(value), c, params.num_bloombits, params.num_hashes), dtype=np.int64)


def bloom_filter(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.uint8]:
    """The Bloom filter of ``value`` in ``cohort``: a 0/1 uint8 array of shape ``(k,)``, index = bit."""
    out = np.zeros(params.num_bloombits, dtype=np.uint8)
    out[bloom_bits(value, cohort, params)] = 1
    return out


def bloom_bits_table(values: Sequence[str | bytes], params: Params, *,
                     cohorts: npt.ArrayLike | None = None) -> npt.NDArray[np.int32]:
    """Bloom bit indices of every value in every cohort (or in the cohorts given).

    Parameters
    ----------
    values : sequence of str or bytes
        The candidate strings (``S`` of them).
    params : Params
    cohorts : array-like of int, optional
        Hash only in these cohorts (``M`` of them, each in ``[0, num_cohorts)``), in
        this order; by default every cohort, ``0 .. num_cohorts - 1``.

    Returns
    -------
    ndarray of shape (S, M, num_hashes), dtype int32
        ``out[s, c, i]`` is the index of hash ``i`` of ``values[s]`` in cohort
        ``cohorts[c]`` (cohort ``c`` by default).
    """
    k, h = params.num_bloombits, params.num_hashes
    seeds = np.arange(params.num_cohorts) if cohorts is None else check_cohorts(cohorts, params.num_cohorts,
                                                                                 "bloom_bits_table")
    encoded = _encoded(values)
    out = np.empty((len(values), seeds.size, h), dtype=np.int64 if k > 2**31 - 1 else np.int32)
    for start, words in _hash_words(encoded, seeds, h):
        out[:, :, start:start + len(words)] = np.moveaxis(reduce_words(words, k), 0, -1)
    return out


def _encoded(values: Sequence[str | bytes]) -> list[bytes]:
    """:func:`value_bytes` of every value; a list of str is encoded in one pass (the
    per-value checks run only when one cannot be encoded, to raise its error)."""
    if all(type(v) is str for v in values):
        try:
            return [v.encode("utf-8") for v in values]  # type: ignore[union-attr]
        except UnicodeEncodeError:
            pass
    return [value_bytes(v) for v in values]


#: At most this many (key, seed) pairs are hashed by mmh3's C function one pair at a time
#: (about 0.2 us each) rather than by the vectorized MurmurHash3 (about 100 us a call, whatever
#: its size): one candidate with h = k = 10**6 took 52 s, one vectorized call per hash pair.
_SMALL_PAIRS = 64
#: Hash words computed (and reduced) per batch: bounds the temporary arrays.
_WORDS_PER_BATCH = 1 << 20


def _hash_words(keys: Sequence[bytes], seeds: npt.NDArray[np.int64], num_hashes: int,
                ) -> Iterator[tuple[int, npt.NDArray[np.uint64]]]:
    """Words ``w_i`` (step 2 of the module docstring) of every key under every seed, in batches.

    Yields ``(start, words)``: ``words[j]`` of shape ``(len(keys), len(seeds))`` holds
    word ``w_{start + j}``; the batches cover ``i = 0 .. num_hashes - 1`` in order, at
    most :data:`_WORDS_PER_BATCH` words each (but at least one block of two hashes).
    """
    n_keys, n_seeds = len(keys), seeds.size
    pairs = n_keys * n_seeds
    blocks = (num_hashes + 1) // 2
    per_batch = max(1, _WORDS_PER_BATCH // (2 * max(pairs, 1)))  # blocks of two hashes per batch
    seed_list = [int(s) for s in seeds] if pairs <= _SMALL_PAIRS else None
    for b0 in range(0, blocks, per_batch):
        b1 = min(blocks, b0 + per_batch)
        if seed_list is not None:
            flat = [w for b in range(b0, b1) for prefix in (_prefix(b),) for d in keys for c in seed_list
                    for w in _murmur(prefix + d, c)]
            by_block = np.array(flat, dtype=np.uint64).reshape(b1 - b0, n_keys, n_seeds, 2)
            words = np.moveaxis(by_block, 3, 1).reshape(2 * (b1 - b0), n_keys, n_seeds)
        elif b1 - b0 == 1:  # a large batch of one block: its two words as they come, not copied
            # Vectorized MurmurHash3_x64_128 over all keys and all cohorts (seeds); bit-identical to mmh3.
            h1, h2 = murmur3_x64_128(keys, seeds, prefix=_prefix(b0))
            yield 2 * b0, h1[None]
            if 2 * b0 + 1 < num_hashes:
                yield 2 * b0 + 1, h2[None]
            continue
        else:
            words = np.empty((2 * (b1 - b0), n_keys, n_seeds), dtype=np.uint64)
            for b in range(b0, b1):
                words[2 * (b - b0)], words[2 * (b - b0) + 1] = murmur3_x64_128(keys, seeds, prefix=_prefix(b))
        yield 2 * b0, words[:min(num_hashes, 2 * b1) - 2 * b0]


def reduce_words(words: npt.NDArray[np.uint64], num_bloombits: int) -> npt.NDArray[np.uint64]:
    """``floor(w * k / 2**64)`` for every 64-bit word ``w`` (step 3 of the module docstring).

    ``words`` is overwritten (it holds the result, as uint64).
    """
    k = num_bloombits
    if k == 1:
        words[...] = 0
        return words
    if k & (k - 1) == 0:
        # k = 2**b: floor(w * 2**b / 2**64) is the top b bits of w (one shift, same result).
        words >>= np.uint64(64 - (k.bit_length() - 1))
        return words
    if k < 2**32:
        kk = np.uint64(k)
        # floor(w * k / 2**64) without overflow, in place: split w into 32-bit halves;
        # hi*k < 2**64 and (lo*k) >> 32 < 2**32, so the sum fits in 64 bits.
        lo = words & np.uint64(0xFFFFFFFF)
        lo *= kk
        lo >>= np.uint64(32)
        words >>= np.uint64(32)
        words *= kk
        words += lo
        words >>= np.uint64(32)
        return words
    out = np.array([(int(w) * k) >> 64 for w in words.reshape(-1)], dtype=np.uint64)  # pragma: no cover
    return out.reshape(words.shape)  # pragma: no cover


_HEAD_TAG = b"rappor/discovery/head\x00"
_TAIL_TAG = b"rappor/discovery/tail\x00"


def split_hash_words(parts: Sequence[bytes], seeds: npt.ArrayLike, num_hashes: int, *,
                     tail: bool) -> npt.NDArray[np.uint64]:
    """The 64-bit words of the *split* hash used by discovery reports, one part at a time.

    A discovery fragment is hashed in two parts, a *head* and a *tail*
    (:mod:`rappor.analysis.discovery` says which): hash ``i`` of the fragment in cohort
    ``c`` has the bit index ``(floor(H_i k / 2**64) + floor(T_i k / 2**64)) mod k``
    where ``H_i`` is word ``i`` (steps 1-2 of the module docstring) of the key
    ``b"rappor/discovery/head\\x00" || head`` and ``T_i`` that of
    ``b"rappor/discovery/tail\\x00" || tail``, both with seed ``c``.  Two fragments
    that differ in their head or their tail get indices that coincide with
    probability ``1/k`` (the sum modulo ``k`` of a fixed and a uniform index is
    uniform), and the index is *additive*: a server scores every tail of an alphabet
    after many heads at once as one sparse matrix product
    (:class:`rappor.analysis.discovery._oracle.SlotOracle`).

    Parameters
    ----------
    parts : sequence of bytes
        Heads (``tail=False``) or tails (``tail=True``).
    seeds : array-like of int
        Cohorts (hash seeds).
    num_hashes : int
    tail : bool

    Returns
    -------
    ndarray of shape (len(parts), len(seeds), num_hashes), dtype uint64
        Reduce a head's and a tail's words with :func:`reduce_words` and add the two
        indices modulo ``k``.
    """
    tag = _TAIL_TAG if tail else _HEAD_TAG
    seed_arr = np.asarray(seeds, dtype=np.int64).reshape(-1)
    out = np.empty((len(parts), seed_arr.size, num_hashes), dtype=np.uint64)
    keys = [tag + p if type(p) is bytes else tag + value_bytes(p) for p in parts]
    for start, words in _hash_words(keys, seed_arr, num_hashes):
        out[:, :, start:start + len(words)] = np.moveaxis(words, 0, -1)
    return out


def split_bit_indices(heads: Sequence[bytes], tails: Sequence[bytes], seeds: Sequence[int], *, num_bloombits: int,
                      num_hashes: int) -> npt.NDArray[np.int64]:
    """Bit indices of the split hash (:func:`split_hash_words`) of one ``(head, tail)`` per seed: the client's view.

    Row ``r`` is hashed only under ``seeds[r]`` (a client's wire cohort), one MurmurHash3
    call per block and part, where :func:`split_hash_words` hashes every part under every
    seed (the server's view); the indices are the same.

    Returns
    -------
    ndarray of shape (len(heads), num_hashes), dtype int64
        ``(floor(H_i k / 2**64) + floor(T_i k / 2**64)) mod k``.
    """
    k, h = num_bloombits, num_hashes
    blocks = [_prefix(b) for b in range((h + 1) // 2)]
    murmur = _murmur
    if h == 1:  # the discovery design: one word of one block per part
        head_key, tail_key = blocks[0] + _HEAD_TAG, blocks[0] + _TAIL_TAG
        one = [((murmur(head_key + head, seed)[0] * k) >> 64) + ((murmur(tail_key + tail, seed)[0] * k) >> 64)
               for head, tail, seed in zip(heads, tails, seeds)]
        single = np.array(one, dtype=np.int64).reshape(len(heads), 1)
        single %= k
        return single

    def words(head: bytes, tail: bytes, seed: int) -> list[int]:
        out = []
        for prefix in blocks:
            hw, tw = murmur(prefix + _HEAD_TAG + head, seed), murmur(prefix + _TAIL_TAG + tail, seed)
            out += [((hw[0] * k) >> 64) + ((tw[0] * k) >> 64), ((hw[1] * k) >> 64) + ((tw[1] * k) >> 64)]
        return out[:h]

    flat = [w for head, tail, seed in zip(heads, tails, seeds) for w in words(head, tail, seed)]
    out = np.array(flat, dtype=np.int64).reshape(len(heads), h)
    out %= k
    return out


def raise_not_utf8(items: Sequence[Any], name: str, owner: str) -> None:
    """Raise the error of the first str in ``items`` that UTF-8 cannot encode (if any)."""
    for position, item in enumerate(items):
        problem = utf8_problem(item) if isinstance(item, str) else ""
        if problem:
            msg = (f"The {name!r} parameter of {owner} must hold str encodable as UTF-8. "
                   f"Got {name}[{position}], {problem}, instead.")
            raise InvalidParameterError(msg)


def bloom_matrix(indices: npt.NDArray[np.int64], num_bloombits: int) -> npt.NDArray[np.uint8]:
    """``(n, h)`` Bloom bit indices -> ``(n, k)`` 0/1 Bloom filters."""
    n = indices.shape[0]
    bloom = np.zeros((n, num_bloombits), dtype=np.uint8)
    bloom[np.arange(n)[:, np.newaxis], indices] = 1
    return bloom


def bloom_indices_of_rows(datas: list[bytes], cohorts: npt.NDArray[np.int64], params: Params) -> npt.NDArray[np.int64]:
    """Bloom bit indices, shape ``(n, h)``, of ``datas[i]`` in cohort ``cohorts[i]``.

    When the distinct values times the cohorts are few compared with the rows, one
    vectorized :func:`~rappor.client.bloom_bits_table` call hashes every pair;
    otherwise each distinct ``(value, cohort)`` pair is hashed once.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    n = len(datas)
    unique: dict[bytes, int] = {}
    rows = np.array([unique.setdefault(d, len(unique)) for d in datas], dtype=np.int64)
    if n and len(unique) * m <= 4 * n:
        table = bloom_bits_table(list(unique), params)
        return table[rows, cohorts].astype(np.int64)
    cache: dict[tuple[bytes, int], tuple[int, ...]] = {}
    out: list[tuple[int, ...]] = []
    for key in zip(datas, cohorts.tolist()):
        bits = cache.get(key)
        if bits is None:
            bits = cache[key] = bloom_bit_indices(key[0], key[1], num_bloombits=k, num_hashes=h)
        out.append(bits)
    return np.array(out, dtype=np.int64).reshape(n, h)
