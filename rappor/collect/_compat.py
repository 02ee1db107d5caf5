"""Compatibility with collections made by google/rappor's own client.

google/rappor (``client/python/rappor.py``, commit a13fa96) hashes and randomizes
differently from :mod:`rappor.client` and :mod:`rappor.client`.  This module
reproduces its derivations bit for bit, so an analyst holding reports made by that
client can build the matching candidate map (:func:`hash_candidates_google`, or
``rappor hash-candidates --hashing google``) and check its PRRs (:func:`google_prr`).
Reports and counts need no conversion: their files are the same (see
``docs/collection.md``).

Specification of google/rappor's derivations
--------------------------------------------
Bloom hashing (``get_bloom_bits``)
    ``d = MD5(uint32_be(cohort) || value)`` (16 bytes); hash ``j`` (``0 <= j < h``)
    sets bit ``d[j] mod k``.  So ``h <= 16``; only bits ``< 256`` are reachable and
    the reduction is biased unless ``k`` divides 256.
Permanent randomized response (``get_prr_masks`` and ``Encoder._internal_encode_bits``)
    ``B`` is the Bloom filter as an integer (bit ``j`` = ``2**j``) and
    ``D = HMAC-SHA256(key=secret, msg=uint32_be(B))`` (32 bytes).  For bit ``j < k``:
    ``uniform_j = D[j] & 1`` and ``f_mask_j = (D[j] >> 1) < 128 f``; the PRR is
    ``(B & ~f_mask) | (uniform & f_mask)``.  One digest gives 32 bytes and ``B`` must fit
    in 4 bytes, hence ``k <= 32``.

Differences from this package's own encoding
--------------------------------------------
* MD5 instead of MurmurHash3_x64_128 with Lemire's reduction (``docs/hashing.md``);
* the PRR draws ``f`` with 7 bits, so its effective ``f`` is a multiple of 1/128
  (:func:`google_effective_prob_f`); ours compares 32-bit uniforms, a resolution of
  ``2**-32``;
* the PRR is keyed over the Bloom filter alone (not the cohort or the value), with
  secrets of any length; ours requires secrets of at least 16 bytes.

The IRR is fresh randomness in both (``P(1) = q`` where the PRR is 1, ``p`` elsewhere),
so nothing here reproduces it.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.bits import pack_bits
from .._util.memory import check_design
from .._util.validation import check_cohort
from ._design import CandidateMap, _map_from_bit_tables
from ..exceptions import InvalidParameterError
from ..client._hashing import value_bytes
from ..params import Params
from ..client._randomizer import permanent_response

__all__ = [
    "GOOGLE_MAX_HASHES",
    "GOOGLE_MAX_PRR_BITS",
    "google_bloom_bits",
    "google_bloom_bits_table",
    "google_bloom_filter",
    "google_effective_prob_f",
    "google_prr",
    "google_prr_batch",
    "hash_candidates_google",
]

#: Most hash functions google/rappor's Bloom hashing supports (bytes of one MD5 digest).
GOOGLE_MAX_HASHES = 16
#: Most Bloom bits google/rappor's PRR supports (bytes of one HMAC-SHA256 digest; the
#: Bloom filter is hashed as a 4-byte integer).
GOOGLE_MAX_PRR_BITS = 32


def _check_limited_params(params: Any, owner: str, field: str, limit: int, reason: str) -> Params:
    """``params`` as a :class:`Params` whose ``field`` is at most ``limit`` (google/rappor's format)."""
    if not isinstance(params, Params):
        msg = f"The 'params' parameter of {owner} must be a Params. Got a {type(params).__name__} instead."
        raise InvalidParameterError(msg)
    value = getattr(params, field)
    if value > limit:
        msg = f"The 'params' parameter of {owner} must have {field} <= {limit} ({reason}). Got {field}={value} instead."
        raise InvalidParameterError(msg)
    return params


def _check_hashing_params(params: Any, owner: str) -> Params:
    return _check_limited_params(params, owner, "num_hashes", GOOGLE_MAX_HASHES,
                                 "google/rappor takes one byte of a 16-byte MD5 digest per hash")


def _check_prr_params(params: Any, owner: str) -> Params:
    return _check_limited_params(params, owner, "num_bloombits", GOOGLE_MAX_PRR_BITS,
                                 "google/rappor's PRR uses one byte of a 32-byte HMAC-SHA256 digest per bit "
                                 "and a 4-byte Bloom integer")


def _check_secret(secret: Any, owner: str) -> bytes:
    """Any bytes-like secret (google/rappor sets no minimum length); never echoed."""
    if isinstance(secret, (bytes, bytearray, memoryview)):
        return bytes(secret)
    msg = (f"The 'secret' parameter of {owner} must be bytes (encode a str secret first, as "
           f"google/rappor's Python 2 client used byte strings). Got a {type(secret).__name__} instead.")
    raise InvalidParameterError(msg)


def _md5_digests(encoded: Sequence[bytes], cohort: int) -> bytes:
    """Concatenated MD5 digests of ``uint32_be(cohort) || value`` for every value."""
    prefix = struct.pack(">I", cohort)
    md5 = hashlib.md5
    return b"".join([md5(prefix + data).digest() for data in encoded])


def google_bloom_bits(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.int64]:
    """google/rappor's Bloom bit indices of ``value`` in ``cohort`` (``get_bloom_bits``).

    Parameters
    ----------
    value : str or bytes
        A ``str`` is hashed as UTF-8.
    cohort : int
        In ``[0, num_cohorts)``.
    params : Params
        ``num_hashes`` must be at most 16.

    Returns
    -------
    ndarray of shape (num_hashes,), dtype int64
        Hash ``j``'s bit, ``MD5(uint32_be(cohort) || value)[j] mod num_bloombits``, in
        hash order (indices may repeat).

    Examples
    --------
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> google_bloom_bits("v1", 0, params)  # map.csv of google/rappor: v1,9,11,...
    array([ 8, 10])
    """
    params = _check_hashing_params(params, "google_bloom_bits")
    c = check_cohort(cohort, params.num_cohorts, "google_bloom_bits")
    digest = np.frombuffer(_md5_digests([value_bytes(value)], c), dtype=np.uint8)
    return digest[: params.num_hashes].astype(np.int64) % params.num_bloombits  # (k >= 256: only bits < 256)


def google_bloom_filter(value: str | bytes, cohort: int, params: Params) -> npt.NDArray[np.uint8]:
    """google/rappor's Bloom filter of ``value`` in ``cohort``: 0/1 uint8 of shape ``(k,)``, index = bit."""
    out = np.zeros(params.num_bloombits, dtype=np.uint8)
    out[google_bloom_bits(value, cohort, params)] = 1
    return out


def google_bloom_bits_table(values: Sequence[str | bytes], params: Params) -> npt.NDArray[np.int32]:
    """google/rappor's Bloom bit indices of every value in every cohort.

    The counterpart of :func:`rappor.client.bloom_bits_table` for MD5 hashing: one
    ``hashlib`` call per (value, cohort), the rest in numpy.

    Parameters
    ----------
    values : sequence of str or bytes
        The candidate strings (``S`` of them).
    params : Params
        ``num_hashes`` must be at most 16.

    Returns
    -------
    ndarray of shape (S, num_cohorts, num_hashes), dtype int32
        ``out[s, c, j]`` is the bit of hash ``j`` of ``values[s]`` in cohort ``c``.
    """
    params = _check_hashing_params(params, "google_bloom_bits_table")
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    encoded = [value_bytes(v) for v in values]
    out = np.empty((len(encoded), m, h), dtype=np.int32)
    for c in range(m):
        digests = np.frombuffer(_md5_digests(encoded, c), dtype=np.uint8).reshape(len(encoded), 16)
        out[:, c, :] = digests[:, :h].astype(np.int32) % k  # a byte mod k: with k >= 256, the byte itself
    return out


def hash_candidates_google(strings: Sequence[str], params: Params) -> CandidateMap:
    """Hash candidate strings into a :class:`~rappor.collect.CandidateMap` the way google/rappor does.

    Use it (or ``rappor hash-candidates --hashing google``) to decode reports made by
    google/rappor's client; it reproduces that project's ``hash_candidates.py``.

    Parameters
    ----------
    strings : sequence of str
        Distinct candidate strings.
    params : Params
        ``num_hashes`` must be at most 16.

    Returns
    -------
    CandidateMap

    See Also
    --------
    rappor.collect.hash_candidates : the same with this package's MurmurHash3 hashing.
    """
    strings = tuple(strings)
    params = _check_hashing_params(params, "hash_candidates_google")
    check_design(params, len(strings))  # the (S, m, h) table below is part of the estimate
    return _map_from_bit_tables(params, strings, [google_bloom_bits_table(strings, params)])  # (S, m, h)


def google_effective_prob_f(prob_f: float) -> float:
    """The ``f`` that google/rappor's PRR actually applies for a nominal ``prob_f``.

    Its mask bit is ``r < 128 * prob_f`` for a uniform 7-bit ``r``, so the effective
    probability is ``#{r in 0..127 : r < 128 f} / 128 = ceil(128 f) / 128``: equal to
    ``prob_f`` only for multiples of 1/128 (e.g. 0.5, 0.25), otherwise rounded up by
    less than 1/128.  This package's encoder uses 32-bit thresholds (resolution
    ``2**-32``).

    Examples
    --------
    >>> google_effective_prob_f(0.5)
    0.5
    >>> google_effective_prob_f(0.3)  # 39 / 128
    0.3046875
    """
    threshold = float(prob_f) * 128
    return int(np.count_nonzero(np.arange(128) < threshold)) / 128


def _bloom_integers(blooms: Any, params: Params, owner: str) -> npt.NDArray[np.uint64]:
    """Bloom filters (ints, or 0/1 rows with index = bit) as an ``(n,)`` uint64 array."""
    k = params.num_bloombits
    arr = np.asarray(blooms)
    if arr.ndim == 2 and arr.shape[1] == k and arr.dtype.kind in "biu":
        if arr.size and not np.isin(arr, (0, 1)).all():
            msg = f"The 'bloom' parameter of {owner} must hold only 0/1 bits. Got other values instead."
            raise InvalidParameterError(msg)
        result: npt.NDArray[np.uint64] = pack_bits(arr)[:, 0]
        return result
    if arr.ndim == 1 and (arr.dtype.kind in "iu" or arr.size == 0):
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= 2**k):
            bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
            msg = f"The 'bloom' parameter of {owner} must be integers in [0, 2**{k}). Got {bad} instead."
            raise InvalidParameterError(msg)
        return arr.astype(np.uint64)
    msg = (f"The 'bloom' parameter of {owner} must be integers in [0, 2**{k}) or 0/1 bit arrays "
           f"with {k} columns (index = bit). Got an array of shape {arr.shape} and dtype {arr.dtype} instead.")
    raise InvalidParameterError(msg)


def _prr_rows(secrets: Sequence[Any], blooms: Any, params: Any, owner: str) -> npt.NDArray[np.uint8]:
    """Validate, then google/rappor's PRR for each (secret, Bloom filter): ``(n, k)`` 0/1."""
    params = _check_prr_params(params, owner)
    keys = [_check_secret(s, owner) for s in secrets]
    bloom_ints = _bloom_integers(blooms, params, owner)
    if bloom_ints.shape[0] != len(keys):
        msg = (f"The 'blooms' parameter of {owner} must hold one Bloom filter per secret ({len(keys)}). "
               f"Got {bloom_ints.shape[0]} instead.")
        raise InvalidParameterError(msg)
    k = params.num_bloombits
    messages = bloom_ints.astype(">u4").tobytes()
    digest_of = hmac.digest
    raw = b"".join([digest_of(key, messages[4 * i: 4 * i + 4], "sha256") for i, key in enumerate(keys)])
    digests = np.frombuffer(raw, dtype=np.uint8).reshape(len(keys), 32)[:, :k]
    uniform = (digests & np.uint8(1)).astype(bool)
    # 7 random bits against the float 128 f, compared exactly as get_prr_masks does.
    f_mask = (digests >> np.uint8(1)) < params.prob_f * 128
    bloom = ((bloom_ints[:, None] >> np.arange(k, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    prr: npt.NDArray[np.uint8] = permanent_response(bloom, f_mask, uniform).astype(np.uint8)
    return prr


def google_prr(secret: bytes, bloom: int | npt.ArrayLike, params: Params) -> npt.NDArray[np.uint8]:
    """google/rappor's permanent randomized response of one Bloom filter.

    Parameters
    ----------
    secret : bytes
        The client's secret, as google/rappor's ``Encoder(params, cohort, secret, ...)``
        got it (any length; its simulator uses the client id, e.g. ``b"c1"``).
    bloom : int or array-like of shape (num_bloombits,)
        The Bloom filter as an integer (bit ``j`` = ``2**j``) or as 0/1 bits, index =
        bit (as :func:`google_bloom_filter` returns).
    params : Params
        ``num_bloombits`` must be at most 32; ``prob_f`` is applied with 7 bits.

    Returns
    -------
    ndarray of shape (num_bloombits,), dtype uint8
        The PRR bits, index = bit.

    Raises
    ------
    InvalidParameterError
        For ``num_bloombits > 32`` (google/rappor's format limit), a secret that is not
        bytes, or a Bloom filter out of range.

    See Also
    --------
    google_prr_batch : the same for many clients.

    Notes
    -----
    ``D = HMAC-SHA256(secret, uint32_be(bloom))``; bit ``j`` is ``D[j] & 1`` when
    ``(D[j] >> 1) < 128 f`` and the Bloom bit otherwise (google/rappor
    ``get_prr_masks`` and ``Encoder._internal_encode_bits``).  Each bit is therefore
    replaced with probability :func:`google_effective_prob_f` (``ceil(128 f) / 128``),
    by 1 or 0 with probability 1/2 each.  The PRR depends on the secret and the Bloom
    filter only: two values with the same Bloom filter get the same PRR.

    Examples
    --------
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> bits = google_prr(b"c1", 0b0000000010000001, params)
    >>> "".join(map(str, bits[::-1]))  # google/rappor's reports.csv, client c1
    '0001000011010001'
    """
    if isinstance(bloom, (int, np.integer)) and not isinstance(bloom, (bool, np.bool_)):
        k = getattr(params, "num_bloombits", 0)
        if not 0 <= int(bloom) < 2**k:
            msg = f"The 'bloom' parameter of google_prr must be an int in [0, 2**{k}). Got {int(bloom)} instead."
            raise InvalidParameterError(msg)
        blooms: Any = np.array([int(bloom)], dtype=np.int64)
    else:
        blooms = np.asarray(bloom)[np.newaxis, :] if np.ndim(bloom) == 1 else np.asarray(bloom)
    row: npt.NDArray[np.uint8] = _prr_rows([secret], blooms, params, "google_prr")[0]
    return row


def google_prr_batch(secrets: Sequence[bytes], blooms: npt.ArrayLike, params: Params) -> npt.NDArray[np.uint8]:
    """:func:`google_prr` for many clients at once.

    Parameters
    ----------
    secrets : sequence of bytes
        One secret per client.
    blooms : array-like of shape (n,) of int, or of shape (n, num_bloombits) of 0/1
        The Bloom filters, as integers or as bit rows (index = bit).
    params : Params
        ``num_bloombits`` must be at most 32.

    Returns
    -------
    ndarray of shape (n, num_bloombits), dtype uint8
        Row ``i`` is the PRR of ``blooms[i]`` under ``secrets[i]``, index = bit.
    """
    return _prr_rows(secrets, blooms, params, "google_prr_batch")
