"""Result types shared by several modules (private; re-exported where they are public).

* :class:`ConfidenceInterval`, the ``(low, high)`` of every interval;
* :func:`record_table`, the one type every ``table()`` returns: a numpy structured
  array, one row per item, named columns (select and sort it like a data frame;
  ``pandas.DataFrame(t)`` makes one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ConfidenceInterval", "record_table"]


class ConfidenceInterval(NamedTuple):
    """Lower and upper bounds of a confidence interval (SciPy's field names ``low``, ``high``).

    Each bound is a float or an ndarray, matching the estimate it brackets.
    """

    low: Any
    high: Any


def record_table(columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]]) -> np.ndarray:
    """``rows`` as a numpy structured array with the named ``columns``: what every ``table()`` returns.

    Parameters
    ----------
    columns : sequence of (name, kind)
        ``kind`` is a numpy type code: ``"U"`` for text (as wide as the longest value),
        ``"f8"``, ``"i8"``, ``"?"``.
    rows : iterable of sequences
        One value per column each.

    Returns
    -------
    numpy.ndarray
        Structured, shape ``(len(rows),)``: ``t["name"]`` is a column, ``t[i]`` a row.
    """
    records = [tuple(row) for row in rows]
    dtype = [(name, f"U{max((len(str(r[i])) for r in records), default=1) or 1}" if kind == "U" else kind)
             for i, (name, kind) in enumerate(columns)]
    return np.array(records, dtype=dtype)
