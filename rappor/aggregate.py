"""Aggregation: per-cohort report counts and bit sums, the table the decoder reads.

The table has shape ``(num_cohorts, num_bloombits + 1)``: column 0 is the number of
reports of the cohort, column ``1 + j`` the number of reports with bit ``j`` set
(google/rappor ``counts.csv``).  Aggregates form a commutative monoid under
:meth:`Aggregate.merge` (exact int64 addition) with :meth:`Aggregate.empty` as identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._bits import unpack_bits
from .exceptions import IncompatibleParamsError, InvalidParameterError
from .params import Params
from .reports import ReportBatch

__all__ = ["Aggregate"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Aggregate:
    """Per-cohort counts of reports and of set bits.

    Parameters
    ----------
    params : Params
    counts : array-like of int, shape (num_cohorts, num_bloombits + 1)
        ``counts[c, 0]`` reports in cohort ``c``; ``counts[c, 1 + j]`` of them with bit ``j`` set.
        Stored as a read-only int64 array; every entry must satisfy ``0 <= counts[c, 1 + j] <= counts[c, 0]``.
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
        arr.flags.writeable = False
        object.__setattr__(self, "counts", arr)

    @classmethod
    def empty(cls, params: Params) -> Aggregate:
        """The identity of :meth:`merge`: no reports."""
        return cls(params=params, counts=np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64))

    @classmethod
    def from_reports(cls, reports: ReportBatch) -> Aggregate:
        """Count a batch of reports."""
        params = reports.params
        m, k = params.num_cohorts, params.num_bloombits
        counts = np.zeros((m, k + 1), dtype=np.int64)
        counts[:, 0] = np.bincount(reports.cohorts, minlength=m)
        bits = unpack_bits(reports.words, k)
        for c in np.flatnonzero(counts[:, 0]):
            counts[c, 1:] = bits[reports.cohorts == c].sum(axis=0, dtype=np.int64)
        return cls(params=params, counts=counts)

    def merge(self, other: Aggregate) -> Aggregate:
        """Exact sum of two aggregates made with the same parameters."""
        if self.params != other.params:
            msg = f"Cannot merge aggregates made with different parameters: {self.params!r} and {other.params!r}."
            raise IncompatibleParamsError(msg)
        return Aggregate(params=self.params, counts=self.counts + other.counts)

    @property
    def n_reports(self) -> npt.NDArray[np.int64]:
        """Reports per cohort, shape ``(num_cohorts,)``."""
        return self.counts[:, 0]

    @property
    def bit_counts(self) -> npt.NDArray[np.int64]:
        """Ones per (cohort, bit), shape ``(num_cohorts, num_bloombits)``."""
        return self.counts[:, 1:]

    @property
    def total_reports(self) -> int:
        """Total number of reports."""
        return int(self.counts[:, 0].sum())

    def __repr__(self) -> str:
        return f"Aggregate(total_reports={self.total_reports}, params={self.params!r})"
