"""Aggregation: :class:`Aggregate`, per-cohort report counts and bit sums, the table the decoder reads.

The table has shape ``(num_cohorts, num_bloombits + 1)``: column 0 is the number of
reports of the cohort, column ``1 + j`` the number of reports with bit ``j`` set
(google/rappor ``counts.csv``, read and written by :mod:`rappor.formats`).
Aggregates form a commutative monoid under :meth:`Aggregate.merge` (exact int64
addition) with :meth:`Aggregate.empty` as identity.

Every count, and the total number of reports over all cohorts, fits in int64: a table
whose total would exceed ``2**63 - 1`` is refused (when read, merged or built) rather
than wrapped around to a negative number
(:class:`~rappor.exceptions.CountOverflowError`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._util.bits import unpack_bits
from .._util.memory import check_counts_table
from ..exceptions import CountOverflowError, IncompatibleParamsError, InvalidParameterError, UnbalancedCohortsWarning
from ..params import Params, check_same_params
from ..client._reports import ReportBatch

__all__ = ["Aggregate", "check_cohort_balance"]

# _BYTE_BITS[v, i] is bit i of the byte value v, in the packed-byte order of rappor._util.bits.
_BYTE_BITS = unpack_bits(np.arange(256, dtype=np.uint64)[:, None], 8).astype(np.int64)

#: Largest exact count (int64).
INT64_MAX = int(np.iinfo(np.int64).max)


def zero_counts(params: Params) -> npt.NDArray[np.int64]:
    """A zero ``(num_cohorts, num_bloombits + 1)`` int64 table, refused before allocation when
    it cannot fit in memory (:class:`~rappor.exceptions.InsufficientMemoryError`)."""
    check_counts_table(params)
    return np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)


def exact_total(column: npt.NDArray[np.int64]) -> int:
    """The exact sum of non-negative int64 counts (numpy's int64 sum would wrap around)."""
    if float(np.sum(column, dtype=np.float64)) < 2.0**62:  # far from 2**63: the int64 sum is exact
        return int(np.sum(column))
    return sum(column.tolist())


def add_counts(total: npt.NDArray[np.int64], part: npt.NDArray[np.int64]) -> None:
    """``total += part`` for non-negative int64 tables, refusing a sum beyond ``2**63 - 1``.

    Raises
    ------
    CountOverflowError
        If some entry would wrap around (both are non-negative, so a wrapped sum is
        smaller than ``part``) or the total number of reports would exceed ``2**63 - 1``.
    """
    np.add(total, part, out=total)
    if (total < part).any() or exact_total(total[:, 0]) > INT64_MAX:
        msg = ("Cannot count these reports exactly: a count, or the total number of reports over all cohorts, "
               "would exceed 2**63 - 1 (the int64 range).")
        raise CountOverflowError(msg)


def _exact_reports(counts: npt.NDArray[np.int64]) -> int:
    """Total reports of a counts table, refusing a total beyond ``2**63 - 1``."""
    total = exact_total(counts[:, 0])
    if total > INT64_MAX:
        msg = (f"The 'counts' parameter of Aggregate must hold at most 2**63 - 1 reports over all cohorts (the "
               f"int64 range of every total). Got {total} instead.")
        raise InvalidParameterError(msg)
    return total


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Aggregate:
    """Per-cohort counts of reports and of set bits.

    Parameters
    ----------
    params : Params
    counts : array-like of int, shape (num_cohorts, num_bloombits + 1)
        ``counts[c, 0]`` reports in cohort ``c``; ``counts[c, 1 + j]`` of them with bit ``j`` set.
        Stored as a read-only int64 array; every entry must satisfy ``0 <= counts[c, 1 + j] <= counts[c, 0]``,
        and the total number of reports, ``counts[:, 0].sum()``, must be at most ``2**63 - 1``.
    """

    params: Params
    counts: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        m, k = self.params.num_cohorts, self.params.num_bloombits
        arr = np.asarray(self.counts)
        if arr.shape != (m, k + 1):
            msg = f"The 'counts' parameter of Aggregate must have shape ({m}, {k + 1}). Got {arr.shape} instead."
            raise InvalidParameterError(msg)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                raise InvalidParameterError("The 'counts' parameter of Aggregate must hold integers.")
        arr = arr.astype(np.int64, copy=True)
        if (arr < 0).any():
            raise InvalidParameterError("The 'counts' parameter of Aggregate must be non-negative.")
        if (arr[:, 1:] > arr[:, :1]).any():
            c, j = np.argwhere(arr[:, 1:] > arr[:, :1])[0]
            msg = (f"The 'counts' parameter of Aggregate has more ones than reports: cohort {c}, bit {j} "
                   f"has {arr[c, 1 + j]} ones among {arr[c, 0]} reports.")
            raise InvalidParameterError(msg)
        _exact_reports(arr)
        arr.flags.writeable = False
        object.__setattr__(self, "counts", arr)

    @classmethod
    def empty(cls, params: Params) -> Aggregate:
        """The identity of :meth:`merge`: no reports."""
        return cls(params=params, counts=zero_counts(params))

    @classmethod
    def from_reports(cls, reports: ReportBatch) -> Aggregate:
        """Count a batch of reports.

        Vectorized without a per-bit loop: for each byte position of the packed
        reports, one :func:`numpy.bincount` over ``cohort * 256 + byte`` gives a
        ``(cohorts, 256)`` histogram, and its product with the ``(256, 8)`` table of
        the bits of every byte value gives the bit counts of those 8 bits.
        """
        params = reports.params
        m, k = params.num_cohorts, params.num_bloombits
        counts = zero_counts(params)
        cohorts = reports.cohorts
        n = cohorts.shape[0]
        if n == 0:
            return cls(params=params, counts=counts)
        counts[:, 0] = np.bincount(cohorts, minlength=m)
        present = np.flatnonzero(counts[:, 0])
        if present.size * 256 > 4 * n + (1 << 20):
            # Many cohorts, few reports each: sum unpacked bits over sorted runs instead.
            order = np.argsort(cohorts, kind="stable")
            bits = unpack_bits(reports.words[order], k).astype(np.int64)
            starts = np.searchsorted(cohorts[order], present)
            counts[present, 1:] = np.add.reduceat(bits, starts, axis=0)
            return cls(params=params, counts=counts)
        # Cohorts renumbered densely so the histogram has present.size * 256 bins.
        dense = np.searchsorted(present, cohorts) if present.size < m else cohorts
        base = dense.astype(np.int64) << 8
        n_bytes = (k + 7) // 8
        as_bytes = np.ascontiguousarray(reports.words.astype("<u8", copy=False)).view(np.uint8).reshape(n, -1)
        table = _BYTE_BITS
        for b in range(n_bytes):
            hist = np.bincount(base | as_bytes[:, b], minlength=present.size * 256).reshape(present.size, 256)
            lo, hi = 8 * b, min(8 * b + 8, k)
            counts[present, 1 + lo : 1 + hi] = (hist @ table)[:, : hi - lo]
        return cls(params=params, counts=counts)

    @classmethod
    def from_report_chunks(cls, chunks: Iterable[ReportBatch], params: Params) -> Aggregate:
        """Count reports arriving in chunks (e.g. from :func:`rappor.formats.iter_reports`).

        Parameters
        ----------
        chunks : iterable of ReportBatch
        params : Params
            Every chunk must have been made with these parameters.

        Returns
        -------
        Aggregate

        Raises
        ------
        IncompatibleParamsError
            If a chunk has other parameters.
        CountOverflowError
            If the total would exceed ``2**63 - 1`` reports.
        """
        total = zero_counts(params)
        for chunk in chunks:
            check_same_params(params, chunk.params, "A chunk of reports")
            add_counts(total, cls.from_reports(chunk).counts)
        return cls(params=params, counts=total)

    def merge(self, other: Aggregate) -> Aggregate:
        """Exact sum of two aggregates made with the same parameters.

        Raises
        ------
        IncompatibleParamsError
            If the parameters differ.
        CountOverflowError
            If a count, or the total number of reports, would exceed ``2**63 - 1``.
        """
        if self.params != other.params:
            msg = f"Cannot merge aggregates made with different parameters: {self.params!r} and {other.params!r}."
            raise IncompatibleParamsError(msg)
        total = self.counts + other.counts
        if (total < self.counts).any():  # both are >= 0, so a smaller sum means int64 wrapped around
            raise CountOverflowError("Cannot merge these aggregates exactly: a count would exceed 2**63 - 1.")
        if exact_total(total[:, 0]) > INT64_MAX:
            msg = ("Cannot merge these aggregates exactly: the total number of reports over all cohorts would "
                   "exceed 2**63 - 1.")
            raise CountOverflowError(msg)
        return Aggregate(params=self.params, counts=total)

    @property
    def reports_per_cohort(self) -> npt.NDArray[np.int64]:
        """Reports per cohort, shape ``(num_cohorts,)``; their sum is :attr:`total_reports`."""
        return self.counts[:, 0]

    @property
    def n_reports(self) -> npt.NDArray[np.int64]:
        """Deprecated: :attr:`reports_per_cohort` (an ``n_reports`` is an int everywhere else)."""
        warnings.warn("Aggregate.n_reports is deprecated: use Aggregate.reports_per_cohort (an array) or "
                      "Aggregate.total_reports (an int)", DeprecationWarning, stacklevel=2)
        return self.counts[:, 0]

    @property
    def bit_counts(self) -> npt.NDArray[np.int64]:
        """Ones per (cohort, bit), shape ``(num_cohorts, num_bloombits)``."""
        return self.counts[:, 1:]

    @property
    def total_reports(self) -> int:
        """Total number of reports (exact; at most ``2**63 - 1``)."""
        return exact_total(self.counts[:, 0])

    def __repr__(self) -> str:
        return f"Aggregate(total_reports={self.total_reports}, params={self.params!r})"


#: Chance level of the cohort-balance test: the warning fires in one collection in a million
#: whose clients were assigned their cohorts uniformly at random.
BALANCE_LEVEL = 1e-6


def check_cohort_balance(aggregate: Aggregate, *, stacklevel: int = 2, level: float = BALANCE_LEVEL,
                         expected_shares: npt.ArrayLike | None = None, note: str = "") -> bool:
    """Warn when the cohorts hold more different numbers of reports than chance allows.

    Clients draw their cohorts uniformly, so with ``N`` reports over ``m`` cohorts the
    counts are multinomial with ``N / m`` expected in each.  Pearson's chi-square
    statistic ``X2 = sum_c (n_c - N/m)**2 / (N/m)`` is then about chi-square with
    ``m - 1`` degrees of freedom; the counts are unbalanced when its upper tail
    probability is below ``level``.  (google/rappor's rule, ``max - min > N / m``, fires
    on ordinary random spread: 48 and 13 reports in two of 512 cohorts of 15,000.)
    The decoder still works, but cohorts with few reports add noise, and imbalance
    beyond chance often means lost or duplicated data.

    Parameters
    ----------
    aggregate : Aggregate
    stacklevel : int, default=2
        Passed to :func:`warnings.warn`.
    level : float, default=1e-6
        Chance probability below which the spread is reported.
    expected_shares : array-like of shape (num_cohorts,), optional
        Each cohort's expected share of the reports when they are not equal (discovery
        reports: a slot's weight over its cohorts, :attr:`DiscoverySpec.slot_shares`); the
        statistic is then ``sum_c (n_c - N e_c)**2 / (N e_c)``.
    note : str, default=""
        Appended to the warning's closing question (what the caller knows of the likely cause).

    Returns
    -------
    bool
        ``True`` when balanced (no warning was issued).

    Warns
    -----
    UnbalancedCohortsWarning
        When the chi-square test rejects uniform cohorts at ``level``.

    Notes
    -----
    Pearson (1900); the chi-square approximation needs a few reports per cohort
    (Cochran's rule: ``N / m >= 5``); with fewer it is rough, and ``level`` is far in
    the tail, so only a gross imbalance is reported.
    """
    from scipy import special

    n_per_cohort = aggregate.reports_per_cohort.astype(np.float64)
    total, m = aggregate.total_reports, aggregate.params.num_cohorts
    if total <= 0 or m < 2:
        return True
    if expected_shares is None:
        shares = np.full(m, 1.0 / m)
    else:
        shares = np.asarray(expected_shares, dtype=np.float64)
        if shares.shape != (m,) or not (np.all(shares > 0) and abs(shares.sum() - 1.0) < 1e-9):
            raise InvalidParameterError(f"check_cohort_balance: expected_shares must be {m} positive shares summing "
                                        "to 1.")
    expected = total * shares
    statistic = float(((n_per_cohort - expected) ** 2 / expected).sum())
    pvalue = float(special.chdtrc(m - 1, statistic))
    if pvalue >= level:
        return True
    ratio = n_per_cohort / expected
    lo, hi = int(np.argmin(ratio)), int(np.argmax(ratio))
    each = (f"{expected[0]:.6g} expected in each" if expected_shares is None else
            f"{expected[hi]:.6g} and {expected[lo]:.6g} expected")
    msg = (f"cohorts are unbalanced beyond chance: cohort {hi} has {int(n_per_cohort[hi])} reports and cohort {lo} "
           f"has {int(n_per_cohort[lo])} ({each}); chi-square {statistic:.6g} on {m - 1} "
           f"degrees of freedom, p = {pvalue:.3g} < {level:g} (lost or duplicated reports?{note})")
    warnings.warn(msg, UnbalancedCohortsWarning, stacklevel=stacklevel)
    return False
