"""Sums of many candidates' likelihoods over the reports from bit and bit-pair sums (private).

With ``0 < p01, p11 < 1`` a candidate ``x`` setting the distinct bits ``B_c(x)`` of cohort
``c`` (``h_x`` of them) has the likelihood ``L_x(r) = exp(a t + b h_x)`` relative to an
all-zero Bloom filter, where ``t`` counts the report's ones on ``B_c(x)``
(``rappor.analysis.association._likelihood``).  For a bit ``r_j`` in ``{0, 1}``,
``exp(a r_j) = 1 + alpha r_j`` with ``alpha = exp(a) - 1``, so for at most two bits

    L_x(r) = exp(b h_x) (1 + alpha (r_j1 + r_j2) + alpha^2 r_j1 r_j2)

(a missing bit is the always-0 bit ``k``).  The sum ``sum_i m_i L_x(r_i)`` over the
reports of a cohort is then ``exp(b h_x) (S0 + alpha (S1[j1] + S1[j2]) + alpha^2 S2[j1,
j2])`` with ``S0 = sum_i m_i``, ``S1 = R' m`` and ``S2 = R' diag(m) R`` (``R`` the
cohort's reports' bits): ``(k + 1)^2`` products per report whatever the number of
candidates, against one per candidate for the coded likelihoods expanded block by block.
With thousands of candidates (every candidate of a large map in the table) the
certificate's gradient over every cell is several times cheaper this way.
"""

from __future__ import annotations

import math
import numpy as np
import numpy.typing as npt

__all__ = ["PairSums", "pays"]

Array = npt.NDArray[np.float64]

#: Fewest candidates for which the bit-pair sums are kept (below, expanding is cheaper).
WIDE = 256


class PairSums:
    """``sum_i L_i (x) m_i`` over the candidates (rows of ``index``) from per-cohort bit sums.

    Parameters
    ----------
    cohorts : ndarray of int64, shape (G,)
        Each pattern's cohort, sorted.
    ones : ndarray of uint8, shape (G, k + 1)
        Each pattern's bits, and a last column of zeros (the padding bit ``k``).
    index : ndarray of int64, shape (m, X, 2)
        :func:`~rappor.analysis.association._likelihood.bit_index_table` (width at most 2).
    num_bits : ndarray of int64, shape (m, X)
    a, b : float
        ``log L_x(r) = a t + b h_x``.
    """

    def __init__(self, cohorts: npt.NDArray[np.int64], ones: npt.NDArray[np.uint8], index: npt.NDArray[np.int64],
                 num_bits: npt.NDArray[np.int64], a: float, b: float) -> None:
        if index.shape[2] > 2:
            raise ValueError("bit-pair sums need candidates of at most two distinct bits per cohort")
        self.cohorts = cohorts
        self.ones = ones
        self.index = index
        self.num_bits = num_bits
        self.a, self.b = a, b
        self.n_candidates = int(index.shape[1])

    def select(self, keep: npt.NDArray[np.bool_]) -> PairSums:
        """The patterns where ``keep`` is true."""
        return PairSums(self.cohorts[keep], self.ones[keep], self.index, self.num_bits, self.a, self.b)

    def columns(self, keep: npt.NDArray[np.intp]) -> PairSums | None:
        """The candidates ``keep`` only (``None`` when too few for the sums to pay)."""
        if not pays(self.index[:, keep]):
            return None
        return PairSums(self.cohorts, self.ones, self.index[:, keep], self.num_bits[:, keep], self.a, self.b)

    def transpose_product(self, m: Array) -> Array:
        """``sum_i L_x(r_i) m_i`` for every candidate ``x``: shape (X, R) for ``m`` of shape (G, R)."""
        alpha = math.expm1(self.a)
        out = np.zeros((self.n_candidates, m.shape[1]))
        bounds = np.flatnonzero(np.diff(self.cohorts)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        stops = np.concatenate((bounds, [self.cohorts.shape[0]])).tolist()
        for start, stop in zip(starts, stops):
            if start == stop:
                continue
            c = int(self.cohorts[start])
            bits = self.ones[start:stop].astype(np.float64)
            weights = m[start:stop]
            j1 = self.index[c, :, 0]
            s1 = bits.T @ weights  # (k + 1, R)
            terms = weights.sum(axis=0)[None, :] + alpha * s1[j1]
            if self.index.shape[2] == 2:
                j2 = self.index[c, :, 1]
                pairs = np.stack([(bits * weights[:, [r]]).T @ bits for r in range(weights.shape[1])])
                terms = terms + alpha * s1[j2] + alpha * alpha * pairs[:, j1, j2].T
            out += np.exp(self.b * self.num_bits[c])[:, None] * terms
        return out


def pays(index: npt.NDArray[np.int64]) -> bool:
    """Whether :class:`PairSums` pay for these candidates: at least :data:`WIDE` of at most two bits each."""
    return bool(index.shape[1] >= WIDE and index.shape[2] <= 2)
