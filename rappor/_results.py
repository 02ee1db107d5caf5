"""Result types shared by several modules (private; re-exported where they are public)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ConfidenceInterval"]


class ConfidenceInterval(NamedTuple):
    """Lower and upper bounds of a confidence interval (SciPy's field names ``low``, ``high``).

    Each bound is a float or an ndarray, matching the estimate it brackets.
    """

    low: Any
    high: Any
