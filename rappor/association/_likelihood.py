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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._bits import unpack_bits
from ..design import CandidateMap
from ..params import Params
from ..reports import ReportBatch

__all__ = ["Patterns", "bit_index_table", "group_reports", "log_likelihoods", "normalized_likelihoods"]

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
    """

    cohorts: npt.NDArray[np.int64]
    words: tuple[npt.NDArray[np.uint64], ...]
    counts: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.cohorts.shape[0])

    def select(self, keep: npt.NDArray[np.bool_]) -> Patterns:
        """The patterns where ``keep`` is true."""
        return Patterns(self.cohorts[keep], tuple(w[keep] for w in self.words), self.counts[keep])


def group_reports(batches: Sequence[ReportBatch]) -> Patterns:
    """Group the report tuples ``(cohort, batches[0][i], batches[1][i], ...)`` that are identical.

    The batches must have the same length and the same cohorts (checked by the caller).
    """
    cohorts = batches[0].cohorts
    n = cohorts.shape[0]
    widths = [b.words.shape[1] for b in batches]
    key = np.empty((n, 1 + sum(widths)), dtype=np.uint64)
    key[:, 0] = cohorts.astype(np.uint64)
    col = 1
    for b, w in zip(batches, widths):
        key[:, col:col + w] = b.words
        col += w
    total_bits = sum(b.params.num_bloombits for b in batches)
    cohort_bits = max(1, int(batches[0].params.num_cohorts - 1).bit_length())
    if total_bits + cohort_bits <= 64:
        # One integer per report: cohort in the high bits, then each variable's bits.
        flat = cohorts.astype(np.uint64) << np.uint64(total_bits)
        shift = 0
        for b in batches:
            k = b.params.num_bloombits
            flat |= b.words[:, 0] << np.uint64(shift)
            shift += k
        _, first, counts = np.unique(flat, return_index=True, return_counts=True)
    else:
        rows = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1] * 8))).reshape(n)
        _, first, counts = np.unique(rows, return_index=True, return_counts=True)
    order = np.argsort(cohorts[first], kind="stable")
    first, counts = first[order], counts[order]
    return Patterns(cohorts[first].astype(np.int64), tuple(b.words[first] for b in batches),
                    counts.astype(np.int64))


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
    from scipy.special import xlogy

    k = params.num_bloombits
    n1 = np.arange(k + 1, dtype=np.float64)[:, None, None]
    t = np.arange(width + 1, dtype=np.float64)[None, :, None]
    hx = np.arange(width + 1, dtype=np.float64)[None, None, :]
    p11, p01 = params.p11, params.p01
    with np.errstate(invalid="ignore"):
        table = (xlogy(n1 - t, p01) + xlogy(k - hx - n1 + t, 1.0 - p01)
                 + xlogy(t, p11) + xlogy(hx - t, 1.0 - p11))
    # Combinations that cannot occur (t > n1, t > h_x, ...) are never looked up.
    out: npt.NDArray[np.float64] = np.nan_to_num(table, nan=-np.inf)
    return out


def _safe_log(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        out = np.log(p)
    return np.maximum(out, _LOG_ZERO)


def log_likelihoods(params: Params, cohorts: npt.NDArray[np.int64], words: npt.NDArray[np.uint64],
                    index: npt.NDArray[np.int64], num_bits: npt.NDArray[np.int64],
                    other: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
    """``log P(report | category)`` for each pattern (rows) and category (columns).

    Parameters
    ----------
    params : Params
        The variable's parameters.
    cohorts : ndarray of int64, shape (G,)
        Sorted (patterns come sorted by cohort).
    words : ndarray of uint64, shape (G, W)
    index, num_bits :
        From :func:`bit_index_table`.
    other : ndarray of float64, shape (m, k), or None
        Probability of a 1 in each (cohort, bit) for a report of the "other" category;
        ``None`` leaves the category out.

    Returns
    -------
    ndarray of float64, shape (G, X) or (G, X + 1)
        Candidates in ``index`` order, then "other".  ``-inf`` (or below ``-1e29``) where
        the report is impossible for the category.
    """
    k = params.num_bloombits
    g_count = cohorts.shape[0]
    x_count, width = index.shape[1], index.shape[2]
    out = np.empty((g_count, x_count + (other is not None)), dtype=np.float64)
    table = _candidate_table(params, width).reshape(-1)
    stride_t, stride_n = width + 1, (width + 1) ** 2
    if other is not None:
        log1, log0 = _safe_log(other), _safe_log(1.0 - other)
    bounds = np.flatnonzero(np.diff(cohorts)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    stops = np.concatenate((bounds, [g_count])).tolist()
    for start, stop in zip(starts, stops):
        if start == stop:
            continue
        c = int(cohorts[start])
        idx, hx = index[c], num_bits[c]
        for lo in range(start, stop, CHUNK_ROWS):
            hi = min(lo + CHUNK_ROWS, stop)
            bits = np.zeros((hi - lo, k + 1), dtype=np.uint8)
            bits[:, :k] = unpack_bits(words[lo:hi], k)
            n1 = bits.sum(axis=1, dtype=np.int64)
            if width <= 8:
                t = np.take(bits, idx, axis=1).sum(axis=2, dtype=np.int64)
            else:
                dense = np.zeros((k + 1, x_count), dtype=np.float32)
                np.add.at(dense, (idx, np.arange(x_count)[:, None]), 1.0)
                dense[k] = 0.0
                dense = np.minimum(dense, 1.0)
                t = (bits.astype(np.float32) @ dense).astype(np.int64)
            code = (n1[:, None] * stride_n) + t * stride_t + hx[None, :]
            out[lo:hi, :x_count] = table[code]
            if other is not None:
                fbits = bits[:, :k].astype(np.float64)
                out[lo:hi, x_count] = fbits @ log1[c] + (1.0 - fbits) @ log0[c]
    return out


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
