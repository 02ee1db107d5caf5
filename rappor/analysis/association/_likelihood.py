"""Per-report likelihoods of each category, from packed report bits (private).

A report of a variable, in cohort ``c``, has bits that are independent given the
client's Bloom filter ``B``: bit ``j`` is 1 with probability ``p11`` where ``B_j = 1`` and
``p01`` where ``B_j = 0`` (the combined PRR + IRR rates of :class:`~rappor.Params`;
google/rappor ``association.R`` calls them ``qstar`` and ``pstar``).  For a candidate
``x`` setting the ``h_x`` distinct bits ``B_c(x)``, with ``n1`` ones in the report of
which ``t`` fall in ``B_c(x)``::

    log P(report | x) = (n1 - t) log p01 + (k - h_x - n1 + t) log(1 - p01)
                        + t log p11 + (h_x - t) log(1 - p11)

so it depends on ``(n1, t, h_x)`` only and is read from a small table.  ``t`` comes
from gathering the report's bits at the candidate's indices (no dense ``k x X``
product).  google/rappor's ``GetCondProb`` counts a bit twice when two hashes of a
candidate collide; here each distinct bit counts once.

The "other" category (strings that are not candidates) has its own probability of a 1
in each (cohort, bit), ``o[c, j]`` (:mod:`._other`), and
``log P(report | other) = sum_j r_j log o[c, j] + (1 - r_j) log(1 - o[c, j])``.

Identical reports are grouped first: every function here works on distinct
``(cohort, bits of every variable)`` patterns with their multiplicities.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from ..._util.bits import unpack_bits
from ..._util.lazy import lazy_module
from ...collect._design import CandidateMap
from ...params import Params
from ...client._reports import ReportBatch
from ._pairs import PairSums, pays
from ._variables import Variable
from ._threads import in_ranges

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

__all__ = ["CodedLikelihood", "Factor", "Patterns", "bit_index_table", "group_reports", "likelihood_factors", "likelihoods",
           "log_likelihoods",
           "normalized_likelihoods"]

#: Rows processed at once (bounds the temporaries: about ``CHUNK_ROWS * X * h`` bytes).
CHUNK_ROWS = 1 << 15
#: Log-likelihoods at or below this are impossible reports (a probability of exactly 0).
_IMPOSSIBLE = -1e29
_LOG_ZERO = -1e30


@dataclass(frozen=True, slots=True, eq=False)
class Patterns:
    """Distinct ``(cohort, bits of every variable)`` patterns, sorted by cohort.

    Attributes
    ----------
    cohorts : ndarray of int64, shape (G,)
    words : tuple of ndarray of uint64, shape (G, W_j) each
        Packed bits of each variable (layout of :class:`~rappor.ReportBatch`).
    counts : ndarray of int64, shape (G,)
        Reports with that pattern.
    folds : ndarray of int64, shape (G,), or None
        The fold of the reports with that pattern, when the reports were split into folds
        (:func:`group_reports`); a pattern holds the reports of one fold only.
    reports : ndarray of int64, shape (n_reports,), or None
        The pattern of each report (-1: left out by :meth:`select`), when asked for
        (:func:`group_reports`'s ``index_reports``).
    """

    cohorts: npt.NDArray[np.int64]
    words: tuple[npt.NDArray[np.uint64], ...]
    counts: npt.NDArray[np.int64]
    folds: npt.NDArray[np.int64] | None = None
    reports: npt.NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return int(self.cohorts.shape[0])

    def select(self, keep: npt.NDArray[np.bool_]) -> Patterns:
        """The patterns where ``keep`` is true (the others' reports left out)."""
        reports = None
        if self.reports is not None:
            position = np.where(keep, np.cumsum(keep) - 1, -1)
            reports = np.where(self.reports >= 0, position[np.maximum(self.reports, 0)], -1)
        return Patterns(self.cohorts[keep], tuple(w[keep] for w in self.words), self.counts[keep],
                        None if self.folds is None else self.folds[keep], reports)


def group_reports(batches: Sequence[ReportBatch], folds: npt.NDArray[np.int64] | None = None, *,
                  index_reports: bool = False) -> Patterns:
    """Group the report tuples ``(cohort, batches[0][i], batches[1][i], ...)`` that are identical.

    The batches must have the same length and the same cohorts (checked by the caller).  The
    patterns come sorted by cohort.  With ``folds`` (one small non-negative integer per report),
    reports of different folds are never grouped together, each pattern keeps its fold, and
    within a cohort the patterns are sorted by fold.  With ``index_reports`` the patterns keep
    each report's pattern (:attr:`Patterns.reports`: which reports a client's are).
    """
    cohorts = batches[0].cohorts
    n = cohorts.shape[0]
    widths = [b.words.shape[1] for b in batches]
    key = np.empty((n, 1 + sum(widths)), dtype=np.uint64)
    # The fold rides above the cohort in the same key (cohorts and folds are both small).
    fold_shift = max(1, int(batches[0].params.num_cohorts - 1).bit_length())
    with_fold = cohorts.astype(np.uint64)
    if folds is not None:
        with_fold |= np.asarray(folds, dtype=np.uint64) << np.uint64(fold_shift)
    key[:, 0] = with_fold
    col = 1
    for b, w in zip(batches, widths):
        key[:, col:col + w] = b.words
        col += w
    total_bits = sum(b.params.num_bloombits for b in batches)
    cohort_bits = fold_shift
    if folds is not None:
        cohort_bits += max(1, int(np.max(folds, initial=0)).bit_length())
    if total_bits + cohort_bits <= 64:
        # One integer per report: fold and cohort in the high bits, then each variable's bits.
        flat = with_fold << np.uint64(total_bits)
        shift = 0
        for b in batches:
            k = b.params.num_bloombits
            flat |= b.words[:, 0] << np.uint64(shift)
            shift += k
        first, inverse, counts = _distinct(flat, index_reports)
    else:
        rows = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1] * 8))).reshape(n)
        first, inverse, counts = _distinct(rows, index_reports)
    # Sorted by cohort (and by fold within a cohort): each (fold, cohort) is one run of patterns.
    order = np.argsort(cohorts[first], kind="stable") if folds is None else np.lexsort((folds[first], cohorts[first]))
    first, counts = first[order], counts[order]
    reports = None
    if index_reports:
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        assert inverse is not None
        reports = rank[inverse.reshape(-1)]
    return Patterns(cohorts[first].astype(np.int64), tuple(b.words[first] for b in batches),
                    counts.astype(np.int64), None if folds is None else np.asarray(folds, dtype=np.int64)[first],
                    reports)


def _distinct(keys: npt.NDArray[Any], with_inverse: bool) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None,
                                                                    npt.NDArray[np.intp]]:
    """``np.unique``'s first index and count of each distinct key, and each key's distinct one when asked."""
    if with_inverse:
        _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        return first, inverse, counts
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return first, None, counts


def bit_index_table(cmap: CandidateMap, columns: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Distinct bits of each selected candidate in each cohort.

    Returns
    -------
    index : ndarray of int64, shape (m, X, h)
        Bit indices, padded with ``k`` (a bit that is always 0) where a candidate sets
        fewer than ``h`` distinct bits in a cohort.
    num_bits : ndarray of int64, shape (m, X)
        ``h_x``, the distinct bits each sets in each cohort.
    """
    params = cmap.params
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    sub = cmap.matrix[:, columns].tocsc()
    sub.sort_indices()
    x_count = len(columns)
    col_of = np.repeat(np.arange(x_count, dtype=np.int64), np.diff(sub.indptr))
    rows = sub.indices.astype(np.int64)
    cohort, bit = rows // k, rows % k
    group = cohort * x_count + col_of  # (cohort, candidate); rows are sorted within each column
    order = np.argsort(group, kind="stable")
    group, bit = group[order], bit[order]
    num_bits = np.bincount(group, minlength=m * x_count).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(num_bits)[:-1]))
    rank = np.arange(group.size, dtype=np.int64) - starts[group]
    width = max(h, int(num_bits.max()) if num_bits.size else 0, 1)
    index = np.full(m * x_count * width, k, dtype=np.int64)
    index[group * width + rank] = bit
    return index.reshape(m, x_count, width), num_bits.reshape(m, x_count)


def _candidate_table(params: Params, width: int) -> npt.NDArray[np.float64]:
    """``log P(report | x)`` indexed by ``[n1, t, h_x]`` (``n1`` ones in the report, ``t`` on ``x``'s bits)."""

    k = params.num_bloombits
    n1 = np.arange(k + 1, dtype=np.float64)[:, None, None]
    t = np.arange(width + 1, dtype=np.float64)[None, :, None]
    hx = np.arange(width + 1, dtype=np.float64)[None, None, :]
    p11, p01 = params.p11, params.p01
    with np.errstate(invalid="ignore"):
        table = (special.xlogy(n1 - t, p01) + special.xlogy(k - hx - n1 + t, 1.0 - p01)
                 + special.xlogy(t, p11) + special.xlogy(hx - t, 1.0 - p11))
    # Combinations that cannot occur (t > n1, t > h_x, ...) are never looked up.
    out: npt.NDArray[np.float64] = np.nan_to_num(table, nan=-np.inf)
    return out


def _safe_log(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        out = np.log(p)
    return np.maximum(out, _LOG_ZERO)


def log_likelihoods(params: Params, cohorts: npt.NDArray[np.int64], words: npt.NDArray[np.uint64],
                    index: npt.NDArray[np.int64], num_bits: npt.NDArray[np.int64],
                    other: npt.NDArray[np.float64] | None,
                    other_rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.float64]:
    """``log P(report | category)`` for each pattern (rows) and category (columns), up to a row constant.

    Parameters
    ----------
    params : Params
        The variable's parameters.
    cohorts : ndarray of int64, shape (G,)
        Sorted (patterns come sorted by cohort).
    words : ndarray of uint64, shape (G, W)
    index, num_bits :
        From :func:`bit_index_table`.
    other : ndarray of float64, shape (m, k) or (R, k), or None
        Probability of a 1 in each (cohort, bit) for a report of the "other" category;
        ``None`` leaves the category out.
    other_rows : ndarray of int64, shape (G,), optional
        The row of ``other`` for each pattern (default: its cohort).

    Returns
    -------
    ndarray of float64, shape (G, X) or (G, X + 1)
        Candidates in ``index`` order, then "other".  ``-inf`` (or below ``-1e29``) where
        the report is impossible for the category.  With ``0 < p01, p11 < 1`` every entry
        is relative to ``log P(report | a Bloom filter of zeros)`` (a constant per row,
        which changes no estimate), so a candidate's entry depends on ``(t, h_x)`` only.
    """
    codes, table = _codes(params, cohorts, words, index, num_bits)
    columns = [table[codes]]
    if other is not None:
        columns.append(_other_log(params, cohorts if other_rows is None else other_rows, words, other)[None, :])
    out: npt.NDArray[np.float64] = np.concatenate(columns).T
    return out


def _relative(params: Params) -> bool:
    return 0.0 < params.p01 < 1.0 and 0.0 < params.p11 < 1.0


def _codes(params: Params, cohorts: npt.NDArray[np.int64], words: npt.NDArray[np.uint64],
           index: npt.NDArray[np.int64], num_bits: npt.NDArray[np.int64],
           ) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.float64]]:
    """Each (candidate, pattern)'s row in a table of log-likelihoods: ``(codes (X, G), table)``.

    With ``0 < p01, p11 < 1`` the code is ``t (h + 1) + h_x`` (uint8 for ``h <= 15``) and the
    table holds the log-likelihood relative to an all-zero Bloom filter; otherwise the
    code also holds ``n1`` and the table the absolute log-likelihood (``-inf`` where 0).
    """
    k = params.num_bloombits
    g_count = cohorts.shape[0]
    x_count, width = index.shape[1], index.shape[2]
    relative = _relative(params)
    stride_t, stride_n = width + 1, (width + 1) ** 2
    if relative:
        a, b = _relative_coefficients(params)
        table = (a * np.arange(width + 1)[:, None] + b * np.arange(width + 1)[None, :]).reshape(-1)
    else:
        table = _candidate_table(params, width).reshape(-1)
    small = relative and width <= 8 and stride_t * stride_t <= 256
    codes = np.empty((x_count, g_count), dtype=np.uint8 if small else np.int32)
    bounds = np.flatnonzero(np.diff(cohorts)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    stops = np.concatenate((bounds, [g_count])).tolist()

    def fill(first: int, last: int) -> None:  # rows first:last, on one of the pass threads
        for start, stop in zip(starts, stops):
            start, stop = max(start, first), min(stop, last)
            if start >= stop:
                continue
            c = int(cohorts[start])
            idx = index[c]
            hx_code = num_bits[c].astype(codes.dtype)[:, None]
            for lo in range(start, stop, CHUNK_ROWS):
                hi = min(lo + CHUNK_ROWS, stop)
                # Bit-major layout: gathering a candidate's bits copies contiguous rows.
                bits_t = np.zeros((k + 1, hi - lo), dtype=np.uint8)
                bits_t[:k] = unpack_bits(words[lo:hi], k).T
                if width <= 8:
                    t = bits_t[idx[:, 0]].astype(codes.dtype)
                    for s in range(1, width):
                        t += bits_t[idx[:, s]]
                else:
                    dense = np.zeros((x_count, k + 1), dtype=np.float32)
                    np.add.at(dense, (np.arange(x_count)[:, None], idx), 1.0)
                    dense[:, k] = 0.0
                    t = (np.minimum(dense, 1.0) @ bits_t.astype(np.float32)).astype(codes.dtype)
                t *= codes.dtype.type(stride_t)
                t += hx_code
                if not relative:
                    t += bits_t.sum(axis=0, dtype=np.int32)[None, :] * stride_n
                codes[:, lo:hi] = t

    in_ranges(fill, g_count, CHUNK_ROWS)
    return codes, table


def _relative_coefficients(params: Params) -> tuple[float, float]:
    """``(a, b)`` of ``log P(r | x) - log P(r | zeros) = a t + b h_x`` (``0 < p01, p11 < 1``)."""
    p11, p01 = params.p11, params.p01
    # a = log(p11 (1 - p01) / (p01 (1 - p11))), b = log((1 - p11) / (1 - p01))
    return math.log(p11 / p01) - math.log((1.0 - p11) / (1.0 - p01)), math.log((1.0 - p11) / (1.0 - p01))


def _other_log(params: Params, rows: npt.NDArray[np.int64], words: npt.NDArray[np.uint64],
               other: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``log P(report | other)`` per pattern (relative to an all-zero Bloom filter when the candidates' are).

    Pattern ``i`` uses row ``rows[i]`` of ``other`` (its cohort, or its (fold, cohort)).
    """
    k = params.num_bloombits
    log1, log0 = _safe_log(other), _safe_log(1.0 - other)
    if _relative(params):
        log1 = log1 - math.log(params.p01)
        log0 = log0 - math.log(1.0 - params.p01)
    out = np.empty(rows.shape[0])

    def fill(first: int, last: int) -> None:  # rows first:last, on one of the pass threads
        for lo in range(first, last, CHUNK_ROWS):
            hi = min(lo + CHUNK_ROWS, last)
            ones = unpack_bits(words[lo:hi], k).astype(np.float64)
            c = rows[lo:hi]
            # Two products, not bits @ (log1 - log0) + sum(log0): a probability of exactly 0
            # or 1 (clamped to exp(-1e30)) would cancel the finite terms.
            out[lo:hi] = np.einsum("ij,ij->i", ones, log1[c]) + np.einsum("ij,ij->i", 1.0 - ones, log0[c])

    in_ranges(fill, rows.shape[0], CHUNK_ROWS)
    return out


class CodedLikelihood:
    """``P(report | category)`` up to a factor per row, stored as one small code per (candidate, pattern).

    The candidates' values are ``values[codes]`` (``values`` = exp of the log-likelihood
    table); "other", when modelled, is one float per pattern.  Blocks of rows are
    expanded on demand into a reusable buffer, so memory is 1 byte per cell instead of 8
    and no pass writes a matrix of the full size.  Each thread has its own buffer, so passes
    can run over disjoint row ranges in parallel.

    Attributes
    ----------
    shape : tuple (G, C)
    """

    def __init__(self, codes: npt.NDArray[np.integer[Any]], values: npt.NDArray[np.float64],
                 other: npt.NDArray[np.float64] | None, scale: npt.NDArray[np.float64] | None,
                 sums: PairSums | None = None) -> None:
        self.codes = codes
        self.values = values
        self.other = other
        self.scale = scale
        self.sums = sums
        self.n_candidates = codes.shape[0]
        self.shape = (codes.shape[1], self.n_candidates + (other is not None))
        self._local = threading.local()

    def _fill(self, out: npt.NDArray[np.float64], codes: npt.NDArray[np.integer[Any]],
              other: npt.NDArray[np.float64] | None, scale: npt.NDArray[np.float64] | None) -> None:
        x = self.n_candidates
        np.take(self.values, codes, out=out[:x], mode="clip")
        if other is not None:
            out[x] = other
        if scale is not None:
            out[:x] *= scale

    def block(self, lo: int, hi: int) -> npt.NDArray[np.float64]:
        """Rows ``lo:hi`` as a (hi - lo, C) array (a view of a buffer reused by the next call)."""
        n = hi - lo
        buffer = getattr(self._local, "buffer", None)
        if buffer is None or buffer.shape[1] < n:
            buffer = self._local.buffer = np.empty((self.shape[1], n))
        out = buffer[:, :n]
        self._fill(out, self.codes[:, lo:hi], None if self.other is None else self.other[lo:hi],
                   None if self.scale is None else self.scale[lo:hi])
        return out.T

    def take(self, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        """The given rows as a new (len(rows), C) array."""
        out = np.empty((self.shape[1], rows.size))
        self._fill(out, self.codes[:, rows], None if self.other is None else self.other[rows],
                   None if self.scale is None else self.scale[rows])
        return out.T

    def select(self, keep: npt.NDArray[np.bool_]) -> CodedLikelihood:
        """The rows where ``keep`` is true."""
        return CodedLikelihood(self.codes[:, keep], self.values, None if self.other is None else self.other[keep],
                               None if self.scale is None else self.scale[keep],
                               None if self.sums is None else self.sums.select(keep))

    def columns(self, columns: npt.NDArray[np.intp]) -> CodedLikelihood:
        """The categories ``columns`` (sorted; index ``n_candidates`` is Other) only."""
        keep = columns[columns < self.n_candidates]
        other = self.other if self.other is not None and self.n_candidates in columns else None
        return CodedLikelihood(self.codes[keep], self.values, other, self.scale,
                               None if self.sums is None else self.sums.columns(keep))

    def transpose_product(self, m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``sum_i L_i (x) m_i`` (shape (C, R) for ``m`` of shape (G, R)) from bit-pair sums
        (:mod:`rappor.analysis.association._pairs`; exact, no block is expanded; only with :attr:`sums`)."""
        if self.sums is None:
            raise ValueError("no bit-pair sums: too few candidates, or more than two bits each")
        if self.scale is not None:
            m = m * self.scale[:, None]
        out = self.sums.transpose_product(m)
        if self.other is not None:
            out = np.concatenate([out, (self.other @ m)[None, :]])
        return out

    def dense(self) -> npt.NDArray[np.float64]:
        """The whole (G, C) matrix."""
        return self.take(np.arange(self.shape[0]))


Factor = Union[npt.NDArray[np.float64], CodedLikelihood]


def likelihoods(params: Params, cohorts: npt.NDArray[np.int64], words: npt.NDArray[np.uint64],
                index: npt.NDArray[np.int64], num_bits: npt.NDArray[np.int64],
                other: npt.NDArray[np.float64] | None,
                other_rows: npt.NDArray[np.int64] | None = None) -> tuple[Factor, npt.NDArray[np.bool_]]:
    """``P(report | category)`` up to a positive factor per row, and the impossible rows.

    Equal to ``normalized_likelihoods(log_likelihoods(...))`` up to row scaling.  When
    ``0 < p01, p11 < 1`` (every report possible for every candidate) the result is a
    :class:`CodedLikelihood`; rows whose "other" value would exceed ``exp(600)`` are
    scaled down.  Otherwise a dense array, normalized by its row maxima.  ``other`` and
    ``other_rows`` as in :func:`log_likelihoods`.
    """
    if not _relative(params):
        return normalized_likelihoods(log_likelihoods(params, cohorts, words, index, num_bits, other, other_rows))
    codes, table = _codes(params, cohorts, words, index, num_bits)
    impossible = np.zeros(cohorts.shape[0], dtype=bool)
    sums = None
    # Only with q > p (alpha > 0): every term of the sums is then positive, while with q < p they
    # alternate in sign and cancel, losing up to (1 + |alpha|)^2 of relative accuracy.
    if pays(index) and params.p11 > params.p01:
        ones = np.zeros((cohorts.shape[0], params.num_bloombits + 1), dtype=np.uint8)
        for lo in range(0, cohorts.shape[0], CHUNK_ROWS):
            ones[lo:lo + CHUNK_ROWS, :-1] = unpack_bits(words[lo:lo + CHUNK_ROWS], params.num_bloombits)
        sums = PairSums(cohorts, ones, index, num_bits, *_relative_coefficients(params))
    if other is None:
        return CodedLikelihood(codes, np.exp(table), None, None, sums), impossible
    log_other = _other_log(params, cohorts if other_rows is None else other_rows, words, other)
    shift = np.where(log_other > 600.0, log_other, 0.0)
    with np.errstate(under="ignore"):
        other_values = np.exp(log_other - shift)
    scale = np.exp(-shift) if shift.any() else None
    return CodedLikelihood(codes, np.exp(table), other_values, scale, sums), impossible


def normalized_likelihoods(log_lik: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """``exp(log_lik - row max)`` in place, and the rows that no category can explain.

    Scaling a row by a constant does not change any estimate (it adds a constant to the
    log-likelihood).  Impossible rows (every category at probability 0) come back as
    zeros, flagged in the mask.
    """
    top = log_lik.max(axis=1)
    impossible = ~(top > _IMPOSSIBLE)
    top[impossible] = 0.0
    log_lik -= top[:, None]
    np.exp(log_lik, out=log_lik)
    log_lik[impossible] = 0.0
    return log_lik, impossible


def likelihood_factors(patterns: Patterns, variables: Sequence[Variable], selections: Sequence[tuple[Any, ...]],
                       ) -> tuple[list[Factor], npt.NDArray[np.bool_]]:
    """Each variable's :func:`likelihoods` over ``patterns``, and the patterns impossible under every category.

    ``selections`` holds each variable's ``(columns, labels, marginal, other)``; an ``other``
    with more rows than cohorts has a row per (fold, cohort), read with ``patterns.folds``.
    """
    factors: list[Factor] = []
    impossible = np.zeros(len(patterns), dtype=bool)
    for j, (var, sel) in enumerate(zip(variables, selections)):
        columns, _, _, probs = sel
        index, num_bits = bit_index_table(var.candidate_map, columns)
        m, folds = var.params.num_cohorts, patterns.folds
        rows = folds * m + patterns.cohorts if probs is not None and probs.shape[0] > m and folds is not None else None
        lik, bad = likelihoods(var.params, patterns.cohorts, patterns.words[j], index, num_bits, probs, rows)
        factors.append(lik)
        impossible |= bad
    return factors, impossible
