"""Clients of a collection: a client belongs to one cohort for good (its hash functions are its cohort's)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["cohort_conflict"]


def cohort_conflict(codes: npt.NDArray[np.int64], cohorts: npt.NDArray[np.int64]) -> tuple[int, int] | None:
    """The first report whose client has an earlier report in another cohort, and that earlier report.

    Parameters
    ----------
    codes : ndarray of int64, shape (n,)
        Each report's client as a code in ``[0, C)`` (equal ids, equal codes).
    cohorts : ndarray of int64, shape (n,)
        Each report's cohort.

    Returns
    -------
    (row, earlier) or None
        Indices into the reports: ``row`` the first report in another cohort than its client's
        first report, ``earlier`` that first report; None when every client stays in one cohort.
    """
    if codes.size == 0:
        return None
    first = np.empty(int(codes.max()) + 1, dtype=np.int64)
    first[codes[::-1]] = np.arange(codes.size - 1, -1, -1)  # each client's first report (the last write wins)
    moved = np.flatnonzero(cohorts[first[codes]] != cohorts)
    if not moved.size:
        return None
    row = int(moved[0])
    return row, int(first[codes[row]])
