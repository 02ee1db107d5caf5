"""Multiple-testing adjustment of the candidates' p-values (private).

This module owns what turns p-values into detections: :func:`adjust_pvalues` (one
function per correction, chosen from :data:`CORRECTIONS`) and :class:`DetectionRule`,
the null, correction and level a decode tests with.  Benjamini-Hochberg computes what
SciPy's :func:`scipy.stats.false_discovery_control` does, step for step (without importing
``scipy.stats``: a test checks the two agree); Storey's and the two-stage adaptive
procedures are built on it here (tests check them against statsmodels); the
empirical-Bayes ``"lfdr"`` lives in :mod:`._bayes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._bayes import local_fdr_qvalues
from ._problem import Array


def _none(p: Array, level: float) -> Array:
    return p.copy()


def _bonferroni(p: Array, level: float) -> Array:
    out: Array = np.minimum(p * p.size, 1.0)
    return out


def _benjamini_hochberg(p: Array, level: float) -> Array:
    # scipy.stats.false_discovery_control(p, method="bh") step for step (same values, without
    # importing scipy.stats): sort, scale p_(i) by n / i, running minimum from the largest, unsort.
    _check_unit(p)
    if p.size <= 1:
        return p.copy()  # (scipy returns its input; every other correction here returns a new array)
    order = np.argsort(p)
    ranked = _step_up(p[order], p.size)
    out: Array = np.empty_like(ranked)
    out[order] = ranked
    return np.clip(out, 0.0, 1.0)


def _check_unit(p: Array) -> None:
    if not np.all(p == np.clip(p, 0.0, 1.0)):
        raise ValueError("Benjamini-Hochberg needs p-values between 0 and 1.")


def _step_up(smallest: Array, n: int) -> Array:
    """The ``i``-th smallest of ``n`` p-values (``smallest``, sorted) times ``n / i``, then the
    running minimum from the largest: Benjamini-Hochberg's adjusted values, before clipping."""
    ranked: Array = smallest * (n / np.arange(1, smallest.size + 1, dtype=smallest.dtype))
    np.minimum.accumulate(ranked[::-1], out=ranked[::-1])
    return ranked


def _storey(p: Array, level: float) -> Array:
    pi0 = min(1.0, (1.0 + np.count_nonzero(p > 0.5)) / (0.5 * p.size))
    out: Array = np.where(p <= 0.5, np.minimum(pi0 * _benjamini_hochberg(p, level), 1.0), 1.0)
    return out


def _two_stage(p: Array, level: float) -> Array:
    n = p.size
    bh = _benjamini_hochberg(p, level)
    r1 = int(np.count_nonzero(bh <= level / (1.0 + level)))
    if r1 == n:
        return np.minimum(bh, 1.0)  # every hypothesis rejected at stage 1
    out: Array = np.minimum(bh * (n - r1) / n * (1.0 + level), 1.0)
    return out


def _local_fdr(p: Array, level: float) -> Array:
    return local_fdr_qvalues(p)


#: Adjustment of each correction, ``(p-values, level) -> adjusted p-values``.
_ADJUSTMENTS: dict[str, Callable[[Array, float], Array]] = {
    "adaptive-fdr": _two_stage,
    "bonferroni": _bonferroni,
    "fdr": _benjamini_hochberg,
    "lfdr": _local_fdr,
    "none": _none,
    "storey": _storey,
}
#: The corrections :func:`adjust_pvalues` knows.
CORRECTIONS = tuple(_ADJUSTMENTS)


def adjust_pvalues(pvalues: Array, method: str, level: float = 0.05) -> Array:
    """Multiple-testing adjustment; a hypothesis is rejected when its adjusted p-value is ``<= level``.

    ``"none"``; ``"bonferroni"``; ``"fdr"``: Benjamini-Hochberg 1995 (JRSS-B 57(1)),
    ``p_(i) n / i`` made monotone (:func:`scipy.stats.false_discovery_control`);
    ``"storey"``: the BH adjustment times Storey's estimate of the share of true nulls
    ``pi0 = (1 + #{p > 1/2}) / (n / 2)`` (capped at 1; Storey, Taylor and Siegmund 2004,
    JRSS-B 66(1), Theorem 3: finite-sample FDR control for independent p-values,
    rejecting only p <= 1/2); ``"adaptive-fdr"``: the two-stage procedure of Benjamini,
    Krieger and Yekutieli 2006 (Biometrika 93(3), Definition 6): BH at
    ``q' = level / (1 + level)`` gives ``r1`` rejections; ``m0 = n - r1``; then BH at
    ``q' n / m0``.  Its adjusted p-values are ``BH(p) m0 / n * (1 + level)`` (they depend
    on ``level`` through ``m0``; rejection is ``<= level`` as for the others);
    ``"lfdr"``: empirical-Bayes local false discovery rates
    (:func:`._bayes.local_fdr_qvalues`).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    try:
        adjust = _ADJUSTMENTS[method]
    except KeyError:
        msg = f"Unknown multiple-testing correction {method!r}."
        raise ValueError(msg) from None
    if p.size == 0:
        return p.copy()
    return adjust(p, level)


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectionRule:
    """How a decode decides that a candidate is present: null law, correction and level."""

    null: str
    correction: str
    level: float

    def adjust(self, pvalues: Array) -> Array:
        """``pvalues`` adjusted by the correction (:func:`adjust_pvalues`)."""
        return adjust_pvalues(pvalues, self.correction, self.level)

    def detected(self, pvalues: Array) -> npt.NDArray[np.bool_]:
        """Whether each adjusted p-value is at most the level.

        For ``"fdr"`` only the p-values at most the level are sorted (:func:`_bh_rejected`):
        the same answer without sorting a million candidates' p-values at every refit.
        """
        if self.correction == "fdr":
            return _bh_rejected(np.asarray(pvalues, dtype=np.float64), self.level)
        out: npt.NDArray[np.bool_] = self.adjust(pvalues) <= self.level
        return out


def _bh_rejected(p: Array, level: float) -> npt.NDArray[np.bool_]:
    """``_benjamini_hochberg(p, level) <= level``, sorting only the p-values ``<= level``.

    Those are the smallest, so their ranks among all ``n`` are their ranks among
    themselves and :func:`_benjamini_hochberg` gives them the same ``p_(i) n / i``.  A
    p-value above the level has an adjusted value above it (``p_(j) n / j >= p_(j)``), so
    the running minimum from the largest changes none of the kept values that are at most
    the level, and it leaves the others above it: the comparison is the same for every
    p-value (ties among equal p-values get equal adjusted values in either order).
    """
    _check_unit(p)
    out = np.zeros(p.size, dtype=bool)
    small = np.flatnonzero(p <= level)
    kept = p[small]
    order = np.argsort(kept)
    out[small[order]] = np.clip(_step_up(kept[order], p.size), 0.0, 1.0) <= level
    return out
