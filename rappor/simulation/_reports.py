"""Fast simulated reports and counts: the client's law, drawn with numpy (private helpers for every simulation).

:func:`simulate_reports` encodes clients' values into reports; :func:`simulate_counts` and
:func:`true_ones` draw the aggregated counts exactly from their binomial law without encoding
any report.

Simulated reports and the real client
-------------------------------------
:func:`simulate_reports` draws exactly the distribution of :class:`rappor.Encoder`:
both apply the rules of :mod:`rappor.client`, with its 32-bit integer
thresholds: the permanent response replaces each Bloom bit with probability
``2t / 2**32`` (``t`` of :func:`~rappor.client.prr_threshold`) by a fair coin;
the instantaneous response is 1 with probability ``round(q 2**32) / 2**32`` where
the PRR bit is 1 and ``round(p 2**32) / 2**32`` where it is 0 (``docs/client.md``).
What differs is only
where the PRR's randomness comes from: the real client derives it from
a SHAKE-256 stream keyed by the client secret so that it is memoized without storage;
the simulation draws it from the generator once per (client, value) and reuses it for
every report of that value.  Use ``method="client"`` in :func:`simulate` to run the
real client (keyed PRR, one secret per client) instead; it is about 100 times slower
(measured at k = 32: 84,000 against 9 million reports per second).

Bits are generated packed, 64 at a time: a Bernoulli(``T / 2**b``) word is the
bit-sliced comparison ``U < T`` of uniform random words, one word per binary digit of
``T`` (so ``p = 0.5`` costs one random word per 64 bits); for thresholds with many
digits the comparison stops after 8 digits and resolves the rare ties (probability
``2**-8`` per bit) recursively on the remaining digits, exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.memory import check_memory
from .._util.validation import RngLike, check_cohorts, check_rng
from ..client._hashing import bloom_bit_indices, bloom_bits_table
from ..client._randomizer import instantaneous_response, irr_thresholds, permanent_response, prr_threshold
from ..client._reports import ReportBatch
from ..collect._aggregate import Aggregate
from ..exceptions import InvalidParameterError
from ..params import Params

__all__ = ["simulate_counts", "simulate_reports", "true_ones"]

_TIE_DIGITS = 8  # digits compared before ties are resolved recursively


_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _random_words(rng: np.random.Generator, n: int) -> npt.NDArray[np.uint64]:
    return rng.integers(0, _ALL_ONES, size=n, dtype=np.uint64, endpoint=True)


def _bernoulli_words(rng: np.random.Generator, threshold: int, digits: int, n: int) -> npt.NDArray[np.uint64]:
    """``n`` words of independent bits, each 1 with probability ``threshold / 2**digits`` exactly.

    Bit-sliced comparison ``U < T`` of a uniform ``digits``-bit ``U`` with ``T``, from the
    least significant digit up: where ``T``'s digit is 1, ``less = R | less``, where it is
    0, ``less = R & less``, with ``R`` (playing ``~U``'s digit) a fresh random word.  Long
    thresholds compare their top :data:`_TIE_DIGITS` digits and resolve ties recursively.
    """
    if threshold <= 0 or n == 0:
        return np.zeros(n, dtype=np.uint64)
    if threshold >= 1 << digits:
        return np.full(n, _ALL_ONES, dtype=np.uint64)
    while not threshold & 1:  # strip trailing zero digits: same probability
        threshold >>= 1
        digits -= 1
    if digits <= _TIE_DIGITS:
        less = np.zeros(n, dtype=np.uint64)
        for i in range(digits):  # least significant digit first
            r = _random_words(rng, n)
            if (threshold >> i) & 1:
                less |= r
            else:
                less &= r
        return less
    low_digits = digits - _TIE_DIGITS
    high, low = threshold >> low_digits, threshold & ((1 << low_digits) - 1)
    less = np.zeros(n, dtype=np.uint64)
    tie = np.full(n, _ALL_ONES, dtype=np.uint64)
    for i in range(_TIE_DIGITS):
        r = _random_words(rng, n)
        if (high >> i) & 1:
            less |= r
            tie &= ~r  # U's digit (= ~r) equals T's digit 1
        else:
            less &= r
            tie &= r
    where = np.flatnonzero(tie)
    if where.size:
        less[where] |= tie[where] & _bernoulli_words(rng, low, low_digits, where.size)
    return less


def _bytes_to_words(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """A flat uint8 array (length a multiple of 8) seen as little-endian uint64 words."""
    return data.view("<u8").view(np.uint64)


def _padded(num_bytes: int) -> int:
    return -(-num_bytes // 8) * 8


def _permanent_bytes(params: Params, bloom: npt.NDArray[np.uint8], rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """PRR of ``(n, B)`` packed Bloom bytes: ``(B & ~F) | (C & F)`` (google/rappor ``get_prr_masks``)."""
    n, nb = bloom.shape
    flat = np.zeros(_padded(n * nb), dtype=np.uint8)
    flat[: n * nb] = bloom.reshape(-1)
    words = _bytes_to_words(flat)
    # A word u < 2t replaces the Bloom bit (t of prr_threshold), u < t with a 1: a replacement
    # mask of probability 2t / 2**32 and a fair coin, as the client's single-word rule.
    replace = _bernoulli_words(rng, 2 * prr_threshold(params.prob_f), 32, words.size)
    coin = _random_words(rng, words.size)
    prr = permanent_response(words, replace, coin)
    return prr.view(np.uint8)[: n * nb].reshape(n, nb)


def _instantaneous_words(params: Params, prr: npt.NDArray[np.uint8], rng: np.random.Generator,
                         ) -> npt.NDArray[np.uint64]:
    """IRR of ``(n, B)`` packed PRR bytes -> ``(n, W)`` report words (bits >= k cleared)."""
    n, nb = prr.shape
    k = params.num_bloombits
    flat = np.zeros(_padded(n * nb), dtype=np.uint8)
    flat[: n * nb] = prr.reshape(-1)
    words = _bytes_to_words(flat)
    tp, tq = irr_thresholds(params.prob_p, params.prob_q)
    p_bits = _bernoulli_words(rng, tp, 32, words.size)
    q_bits = _bernoulli_words(rng, tq, 32, words.size)
    irr = instantaneous_response(words, p_bits, q_bits).view(np.uint8)[: n * nb].reshape(n, nb)
    w = params.num_words
    if nb == 8 * w and k % 8 == 0:
        return np.ascontiguousarray(irr).view("<u8").view(np.uint64).reshape(n, w)
    out = np.zeros((n, 8 * w), dtype=np.uint8)
    out[:, :nb] = irr
    if k % 8:
        out[:, nb - 1] &= np.uint8((1 << (k % 8)) - 1)
    return out.view("<u8").view(np.uint64).reshape(n, w)


def _bloom_bytes(indices: npt.NDArray[np.integer[Any]], num_bloombits: int) -> npt.NDArray[np.uint8]:
    """``(R, h)`` Bloom bit indices -> ``(R, ceil(k/8))`` packed bytes (bit ``j`` in byte ``j // 8``)."""
    r = indices.shape[0]
    bits = np.zeros((r, num_bloombits), dtype=np.uint8)
    bits[np.arange(r)[:, None], indices] = 1
    return np.packbits(bits, axis=1, bitorder="little")


def _bloom_table(params: Params, strings: Sequence[str], values: npt.NDArray[np.int64],
                 cohorts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Packed Bloom bytes for each (value, cohort) pair used, and each pair's row."""
    m = params.num_cohorts
    pair = values * m + cohorts
    if len(strings) * m <= max(4 * pair.size, 1 << 16):
        table = bloom_bits_table(list(strings), params).reshape(len(strings) * m, params.num_hashes)
        return _bloom_bytes(table, params.num_bloombits), pair
    used, rows = np.unique(pair, return_inverse=True)
    k, h = params.num_bloombits, params.num_hashes
    idx = np.array([bloom_bit_indices(strings[int(p // m)], int(p % m), num_bloombits=k, num_hashes=h)
                    for p in used], dtype=np.int64).reshape(used.size, h)
    return _bloom_bytes(idx, k), rows.reshape(-1).astype(np.int64)


def simulate_reports(params: Params, strings: Sequence[str], values: npt.ArrayLike, cohorts: npt.ArrayLike, *,
                     prr_units: npt.ArrayLike | None = None, rng: RngLike = None) -> ReportBatch:
    """Encode many reports at once with numpy's generator (simulation only).

    Parameters
    ----------
    params : Params
    strings : sequence of str
        The distinct values; ``values`` indexes into it.
    values : array-like of int, shape (n,)
        The value of each report, as an index into ``strings``.
    cohorts : array-like of int, shape (n,)
        The cohort of each report's client, in ``[0, num_cohorts)``.
    prr_units : array-like of int, shape (n,), optional
        Reports with the same unit share one permanent response (one unit per
        (client, value)); they must have the same value and cohort.  By default every
        report has its own.
    rng : numpy.random.Generator, int or None, default=None

    Returns
    -------
    ReportBatch
        The instantaneous responses, in input order.

    Notes
    -----
    Same distribution as :class:`rappor.Encoder` (RAPPOR Sec. 3; 32-bit thresholds of
    ``docs/client.md``): P(bit 1 | Bloom bit 1) = ``p11`` and P(bit 1 | Bloom bit 0) =
    ``p01`` up to 2**-32, with the PRR drawn once per unit.  numpy's generator is not a
    CSPRNG: never use this to protect real users.

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> batch = simulate_reports(params, ["a", "b"], [0, 1, 1], [0, 3, 3], rng=0)
    >>> len(batch), batch.cohorts.tolist()
    (3, [0, 3, 3])
    """
    gen = check_rng(rng)
    codes = np.asarray(values, dtype=np.int64).reshape(-1)
    coh = np.asarray(cohorts, dtype=np.int64).reshape(-1)
    if codes.shape != coh.shape:
        msg = f"The 'values' and 'cohorts' parameters of simulate_reports must have the same length. Got {codes.size} and {coh.size}."
        raise InvalidParameterError(msg)
    if codes.size and (codes.min() < 0 or codes.max() >= len(strings)):
        msg = f"The 'values' parameter of simulate_reports must hold indices in [0, {len(strings) - 1}]."
        raise InvalidParameterError(msg)
    check_cohorts(coh, params.num_cohorts, "simulate_reports")
    if prr_units is None:
        first, inverse = None, None
    else:
        units = np.asarray(prr_units).reshape(-1)
        if units.shape != codes.shape:
            raise InvalidParameterError("The 'prr_units' parameter of simulate_reports must have one entry per report.")
        _, first, inverse = np.unique(units, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if not (np.array_equal(codes[first][inverse], codes) and np.array_equal(coh[first][inverse], coh)):
            raise InvalidParameterError("Reports sharing a PRR unit must have the same value and cohort.")
    unit_codes = codes if first is None else codes[first]
    unit_cohorts = coh if first is None else coh[first]
    table, rows = _bloom_table(params, strings, unit_codes, unit_cohorts)
    words = _encode_rows(params, table, rows, inverse, gen)
    return ReportBatch(params=params, cohorts=coh, words=words)


def _encode_rows(params: Params, table: npt.NDArray[np.uint8], rows: npt.NDArray[np.int64],
                 report_unit: npt.NDArray[np.int64] | None, rng: np.random.Generator) -> npt.NDArray[np.uint64]:
    """The fast core: Bloom bytes of each unit (``table[rows]``) -> PRR per unit -> IRR per report."""
    prr = _permanent_bytes(params, table[rows], rng)
    if report_unit is not None:
        prr = prr[report_unit]
    return _instantaneous_words(params, prr, rng)


def _set_bit_counts(bits: npt.NDArray[np.integer[Any]], clients: npt.NDArray[np.int64],
                    num_bloombits: int) -> npt.NDArray[np.int64]:
    """Clients whose Bloom filter sets each bit, per cohort: ``(M, k)`` from ``(V, M, h)`` bits and ``(V, M)`` clients.

    ``bits[v, c]`` are the Bloom bit indices of value ``v`` in cohort ``c`` and
    ``clients[v, c]`` the clients holding it there; a bit two hashes of one value share
    is counted once.
    """
    k = num_bloombits
    v, mm, h = bits.shape
    # Checked before allocating: the (m, k) tables here and in _draw_counts (float64 bincount,
    # its rounding, the int64 counts, two binomial draws and the counts table: 48 bytes a cell).
    check_memory(_SIMULATED_BYTES_PER_CELL * mm * k, f"simulated counts of m = {mm} cohorts x k = {k} bits")
    flat_bits = bits.astype(np.int64)
    keep = np.ones(flat_bits.shape, dtype=bool)
    if h > 1:
        flat_bits = np.sort(flat_bits, axis=2)
        keep[:, :, 1:] = flat_bits[:, :, 1:] != flat_bits[:, :, :-1]
    rows = np.arange(mm)[None, :, None] * k + flat_bits
    weights = np.broadcast_to(np.asarray(clients)[:, :, None], flat_bits.shape)
    out = np.bincount(rows[keep], weights=weights[keep], minlength=mm * k)
    return np.rint(out).astype(np.int64).reshape(mm, k)


#: Peak bytes per (cohort, bit) cell of :func:`_set_bit_counts` and :func:`_draw_counts` together.
_SIMULATED_BYTES_PER_CELL = 48


def _draw_counts(params: Params, clients_per_cohort: npt.NDArray[np.int64], set_bits: npt.NDArray[np.int64],
                 rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """A counts table ``(m, k + 1)`` drawn from its exact law given the Bloom filters.

    With one report per client, reports of different clients are independent and,
    given a client's Bloom filter, its report bits are independent: a set Bloom bit is
    reported as 1 with probability ``p11`` and a clear one with ``p01`` (Erlingsson,
    Pihur and Korolova 2014, Sec. 3-4; google/rappor ``decode.R``).  So the ones of bit
    ``b`` in cohort ``c`` are exactly ``Binomial(B_cb, p11) + Binomial(N_c - B_cb, p01)``,
    independent over (cohort, bit), where ``B_cb`` (``set_bits``) of the ``N_c`` clients
    (``clients_per_cohort``) set the bit.
    """
    ones = rng.binomial(set_bits, params.p11) + rng.binomial(clients_per_cohort[:, None] - set_bits, params.p01)
    counts = np.empty((clients_per_cohort.size, params.num_bloombits + 1), dtype=np.int64)
    counts[:, 0] = clients_per_cohort
    counts[:, 1:] = ones
    return counts


def true_ones(params: Params, values: Sequence[str], counts_by_cohort: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``n1[c, b]``: clients of cohort ``c`` whose Bloom filter sets bit ``b``, shape ``(m, k)``.

    Parameters
    ----------
    params : Params
    values : sequence of str
        The true values (``U`` of them).
    counts_by_cohort : array-like of int, shape (U, num_cohorts)
        Clients holding each value in each cohort.
    """
    by_cohort = np.asarray(counts_by_cohort, dtype=np.int64)
    return _set_bit_counts(bloom_bits_table(list(values), params), by_cohort, params.num_bloombits)


def simulate_counts(params: Params, values: Sequence[str], counts_by_cohort: npt.ArrayLike,
                    rng: RngLike = None) -> Aggregate:
    """The aggregated counts of one report per client, drawn exactly from their law (no report is encoded).

    Parameters
    ----------
    params, values, counts_by_cohort :
        As in :func:`true_ones`: who holds which value in which cohort.
    rng : numpy.random.Generator, int or None, default=None

    Returns
    -------
    Aggregate
        Distributed as :meth:`Aggregate.from_reports` of encoding every client
        (:func:`_draw_counts` gives the law), at a cost independent of the number of
        clients.
    """
    by_cohort = np.asarray(counts_by_cohort, dtype=np.int64)
    counts = _draw_counts(params, by_cohort.sum(axis=0), true_ones(params, values, by_cohort), check_rng(rng))
    return Aggregate(params=params, counts=counts)
