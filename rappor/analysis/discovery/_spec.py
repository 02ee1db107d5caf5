"""What a discovery report carries: prefix fragments, slots and the wire parameters.

A discovery collection runs beside the ordinary full-string collection.  A client
taking part sends, for its value ``v`` (the UTF-8 bytes of a ``str``), **one** report
of a *fragment* of ``v``: its prefix at the client's *slot*.  The slot is fixed for the
client's lifetime (derived from its secret, see :mod:`rappor.analysis.discovery`).
Specification (``docs/discovery.md`` has the rationale and the measurements):

``levels``
    ``L = ceil(max_length / segment) + 1`` slots, ``0 .. L - 1``; slot ``s`` holds
    prefixes of ``n_s = min((s + 1) * segment, max_length)`` bytes.  The last slot
    repeats ``n = max_length``: it is the *confirmation slot*, where every value that
    can be discovered is whole, so that every value found has its count measured
    again by clients that took no part in finding it (``confirmation=False`` drops it,
    for the PEM baseline).
``fragment(v, s)``
    ``b"\\x01" || v`` when ``len(v) <= n_s`` (the whole value: *complete*), otherwise
    ``b"\\x00" || v[:n_s]`` (a proper prefix).  The leading byte makes the map from
    (prefix, complete) to bytes injective.  Values longer than ``max_length`` are never
    complete, so they cannot be discovered (they are still counted in the slot totals).
``wire cohort``
    ``s * m + c`` where ``c`` is the client's cohort among the ``m`` cohorts of
    ``params``.  Discovery reports are therefore ordinary RAPPOR reports under the
    *wire parameters* ``params`` with ``num_cohorts = L * m``: ``rappor encode``-style
    files, ``rappor sum-bits``, merges and the Dask/Spark engines handle them unchanged,
    and the per-(slot, cohort) bit counts are a ``counts.csv`` with ``L * m`` rows.
``Bloom filter``
    the fragment is split into a *head*, ``v[:n_{s-1}]`` (``n_{-1} = 0``), and a *tail*,
    the marker byte followed by ``v[n_{s-1}:n_s]``, and hashed in its wire cohort with
    :func:`rappor.client.split_hash_words`: bit ``(floor(H_i k / 2**64) + floor(T_i k /
    2**64)) mod k`` for hash ``i``.  A server extending prefixes by every tail of the
    alphabet hashes each prefix once and each tail once per slot, and the additive
    index turns the scoring of all the extensions into one sparse matrix product.
``PRR and IRR``
    as for full strings, with a separate PRR domain (``docs/discovery.md``).
"""

from __future__ import annotations

import bisect
import itertools
import math
import string
from dataclasses import dataclass
from typing import Any

from ..._util.validation import check_int
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ...exceptions import InvalidParameterError
from ...client._hashing import reduce_words, split_hash_words
from ...params import Params

__all__ = ["ALPHABETS", "DiscoverySpec", "alphabet_bytes"]

#: Named alphabets for the server's search (``bytes``: every byte value).
ALPHABETS: dict[str, bytes] = {
    "bytes": bytes(range(256)),
    "printable": bytes(range(0x20, 0x7F)),
    "lowercase": string.ascii_lowercase.encode("ascii"),
    "alnum": (string.ascii_lowercase + string.digits).encode("ascii"),
    "hostname": (string.ascii_lowercase + string.digits + ".-").encode("ascii"),
    "url": (string.ascii_lowercase + string.digits + ".-/_:?=&%~+#").encode("ascii"),
}

COMPLETE = b"\x01"
PARTIAL = b"\x00"


def scale_words(words: npt.NDArray[np.uint64], size: int) -> npt.NDArray[np.int64]:
    """``floor(word * size / 2**64)`` of every 64-bit word, exactly, for ``1 <= size < 2**31``.

    With ``word = hi 2**32 + lo`` the quotient is ``floor((hi size + floor(lo size / 2**32)) / 2**32)``
    (``floor(y / c) = floor(floor(y) / c)`` for an integer ``c``), every term below ``2**64``.
    """
    if not 1 <= size < 2**31:
        raise InvalidParameterError(f"scale_words: size must be in [1, 2**31). Got {size!r}.")
    w = np.asarray(words, dtype=np.uint64)
    n = np.uint64(size)
    low = (w & np.uint64(0xFFFFFFFF)) * n >> np.uint64(32)
    out: npt.NDArray[np.int64] = (((w >> np.uint64(32)) * n + low) >> np.uint64(32)).astype(np.int64)
    return out


def alphabet_bytes(alphabet: str | bytes) -> bytes:
    """The sorted distinct bytes of ``alphabet``: a name of :data:`ALPHABETS` or the bytes themselves."""
    if isinstance(alphabet, str):
        if alphabet in ALPHABETS:
            return ALPHABETS[alphabet]
        msg = (f"The 'alphabet' parameter must be one of {sorted(ALPHABETS)} or the allowed bytes. "
               f"Got {alphabet!r} instead.")
        raise InvalidParameterError(msg)
    if isinstance(alphabet, (bytes, bytearray)) and len(alphabet) > 0:
        return bytes(sorted(set(alphabet)))
    msg = f"The 'alphabet' parameter must be a name or non-empty bytes. Got {alphabet!r} instead."
    raise InvalidParameterError(msg)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoverySpec:
    """The layout of a discovery collection.

    Parameters
    ----------
    params : Params
        Parameters of one slot: ``num_cohorts`` is the number of cohorts *per slot*.
        The privacy of a discovery report is that of these parameters
        (:func:`rappor.analysis.discovery._privacy.discovery_loss`).
    max_length : int, default=30
        Longest value, in bytes, that can be discovered.
    segment : int, default=2
        Bytes added per slot (``eta`` in PEM, Wang et al. 2017).
    alphabet : str or bytes, default="bytes"
        Bytes the server tries when extending a prefix (a name of :data:`ALPHABETS` or the
        bytes).  Clients are not restricted: a value with other bytes is simply not found.
    confirmation : bool, default=True
        Whether the layout ends with the confirmation slot (module docstring).
    slot_weights : tuple of int, optional
        Positive integer weight of each slot (``levels`` of them): a client falls in slot
        ``s`` with probability ``w_s / W`` (:meth:`slot_of_word`).  None: every slot
        alike.  Clients and server must use the same weights.

    Examples
    --------
    >>> spec = DiscoverySpec(params=Params(num_bloombits=64, num_hashes=1, num_cohorts=8,
    ...                                    prob_p=0.0, prob_q=1.0, prob_f=0.25), max_length=4, segment=1)
    >>> spec.levels, spec.wire_params.num_cohorts, spec.prefix_length(3), spec.prefix_length(4)
    (5, 40, 4, 4)
    >>> spec.fragment(b"abcdef", 1), spec.fragment(b"ab", 1)
    (b'\\x00ab', b'\\x01ab')
    """

    params: Params
    max_length: int = 30
    segment: int = 2
    alphabet: str | bytes = "bytes"
    confirmation: bool = True
    slot_weights: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.params, Params):
            msg = f"The 'params' parameter of DiscoverySpec must be a Params. Got {type(self.params).__name__} instead."
            raise InvalidParameterError(msg)
        check_int(self.max_length, "max_length", "DiscoverySpec", low=1, high=4096)
        check_int(self.segment, "segment", "DiscoverySpec", low=1, high=3)
        alphabet_bytes(self.alphabet)
        if not isinstance(self.confirmation, bool):
            raise InvalidParameterError(f"The 'confirmation' parameter of DiscoverySpec must be a bool. "
                                        f"Got {self.confirmation!r} instead.")
        if self.levels * self.params.num_cohorts > 2**31 - 1:
            raise InvalidParameterError("DiscoverySpec: levels * num_cohorts must be below 2**31.")
        if self.slot_weights is not None:
            weights = self.slot_weights
            if (not isinstance(weights, tuple) or len(weights) != self.levels
                    or not all(isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= 2**20 for w in weights)):
                msg = (f"The 'slot_weights' parameter of DiscoverySpec must be a tuple of {self.levels} integers "
                       f"in [1, 2**20] (one per slot). Got {weights!r} instead.")
                raise InvalidParameterError(msg)

    @property
    def levels(self) -> int:
        """Number of slots ``L = ceil(max_length / segment) + 1`` (no ``+ 1`` without confirmation)."""
        return math.ceil(self.max_length / self.segment) + int(self.confirmation)

    def slots_of_words(self, words: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """:meth:`slot_of_word` of every word of a uint64 array, vectorized (the same slots)."""
        if self.slot_weights is None:
            return scale_words(words, self.levels)
        cumulative = np.cumsum(np.array(self.slot_weights, dtype=np.int64))
        if cumulative[-1] >= 2**31:  # beyond scale_words' exact range: one Python integer at a time
            return np.array([self.slot_of_word(int(w)) for w in np.asarray(words).ravel()], dtype=np.int64)
        out: npt.NDArray[np.int64] = np.searchsorted(cumulative, scale_words(words, int(cumulative[-1])),
                                                     side="right").astype(np.int64)
        return out

    @property
    def slot_shares(self) -> npt.NDArray[np.float64]:
        """Probability of each slot, ``w_s / W`` (``1 / levels`` each without weights)."""
        w = np.ones(self.levels) if self.slot_weights is None else np.array(self.slot_weights, dtype=np.float64)
        out: npt.NDArray[np.float64] = w / w.sum()
        return out

    def slot_of_word(self, word: int) -> int:
        """The slot of a client whose slot word is ``word`` (``U_0`` of :mod:`rappor.discovery.client`).

        ``t = floor(word * W / 2**64)`` with ``W`` the sum of the weights, and the slot is
        the ``s`` with ``w_0 + ... + w_{s-1} <= t < w_0 + ... + w_s``; without weights,
        ``floor(word * levels / 2**64)`` (every weight 1).
        """
        if self.slot_weights is None:
            return (word * self.levels) >> 64
        t = (word * sum(self.slot_weights)) >> 64
        return bisect.bisect_right(list(itertools.accumulate(self.slot_weights)), t)

    @property
    def symbols(self) -> bytes:
        """The alphabet's bytes."""
        return alphabet_bytes(self.alphabet)

    @property
    def wire_params(self) -> Params:
        """The parameters of the report files: ``num_cohorts = levels * params.num_cohorts``."""
        p = self.params
        return Params(num_bloombits=p.num_bloombits, num_hashes=p.num_hashes, num_cohorts=self.levels * p.num_cohorts,
                      prob_p=p.prob_p, prob_q=p.prob_q, prob_f=p.prob_f)

    def prefix_length(self, slot: int) -> int:
        """Bytes of the prefixes reported in ``slot``."""
        return min((slot + 1) * self.segment, self.max_length)

    def fragment(self, value: bytes, slot: int) -> bytes:
        """The bytes a client holding ``value`` hashes in ``slot`` (see the module docstring)."""
        n = self.prefix_length(slot)
        return COMPLETE + value if len(value) <= n else PARTIAL + value[:n]

    def split(self, value: bytes, slot: int) -> tuple[bytes, bytes]:
        """The head and tail of ``value``'s fragment in ``slot`` (see the module docstring)."""
        prev = self.prefix_length(slot - 1) if slot > 0 else 0
        n = self.prefix_length(slot)
        marker = COMPLETE if len(value) <= n else PARTIAL
        return value[:prev], marker + value[prev:n]

    def slot_cohorts(self, slot: int) -> npt.NDArray[np.int64]:
        """The wire cohorts of ``slot``: ``slot * m .. slot * m + m - 1``."""
        m = self.params.num_cohorts
        return np.arange(slot * m, (slot + 1) * m, dtype=np.int64)

    def bloom_bits(self, values: Sequence[bytes], slot: int) -> npt.NDArray[np.int64]:
        """Bloom bit indices of the fragments of ``values`` in every cohort of ``slot``.

        Returns
        -------
        ndarray of shape (len(values), num_cohorts, num_hashes), dtype int64
            ``out[v, c, i]``: hash ``i`` of ``values[v]``'s fragment in wire cohort
            ``slot * num_cohorts + c``.
        """
        return self.fragment_bits([self.split(v, slot) for v in values], slot)

    def part_bits(self, parts: Sequence[bytes], slot: int, *, tail: bool) -> npt.NDArray[np.int64]:
        """Reduced indices of heads (``tail=False``) or tails in every cohort of ``slot``.

        Returns
        -------
        ndarray of shape (len(parts), num_cohorts, num_hashes), dtype int64
            A fragment's bit is ``(head index + tail index) mod num_bloombits``.
        """
        words = split_hash_words(list(parts), self.slot_cohorts(slot), self.params.num_hashes, tail=tail)
        return reduce_words(words, self.params.num_bloombits).astype(np.int64)

    def fragment_bits(self, fragments: Sequence[tuple[bytes, bytes]], slot: int) -> npt.NDArray[np.int64]:
        """Bloom bit indices of ``(head, tail)`` fragments in every cohort of ``slot`` (as :meth:`bloom_bits`)."""
        heads: dict[bytes, int] = {}
        tails: dict[bytes, int] = {}
        hi = np.empty(len(fragments), dtype=np.int64)
        ti = np.empty(len(fragments), dtype=np.int64)
        for j, (head, tail) in enumerate(fragments):
            hi[j] = heads.setdefault(head, len(heads))
            ti[j] = tails.setdefault(tail, len(tails))
        bits = self.part_bits(list(heads), slot, tail=False)[hi]
        bits += self.part_bits(list(tails), slot, tail=True)[ti]
        bits %= self.params.num_bloombits
        return bits

    def wire_cohort(self, slot: int, cohort: int) -> int:
        """Cohort of the report files for a client of ``slot`` in per-slot ``cohort``."""
        return slot * self.params.num_cohorts + cohort

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for JSON summaries)."""
        alpha = self.alphabet if isinstance(self.alphabet, str) else self.alphabet.hex()
        return {"params": self.params.as_dict(), "max_length": self.max_length, "segment": self.segment,
                "alphabet": alpha, "confirmation": self.confirmation, "levels": self.levels,
                "slot_weights": None if self.slot_weights is None else list(self.slot_weights)}
