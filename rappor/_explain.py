"""Plain-language notes on a decode, shared by ``rappor decode``, ``rappor simulate`` and the HTML report.

Two things a reader of a results table cannot see from the numbers alone:

* **what decided "detected"**: the significance level, the multiple-testing correction
  and, since every correction here keeps the order of the p-values, the p-value
  threshold it comes to on this data (:func:`detection_rule`);
* **ties at the floor of the random-string null**: the null law of a candidate's score
  is that of a random string given the residuals (``docs/decoder.md``, "Null law").  A
  random string reaches the top score of every cohort with probability about
  ``(h! / k^h)^m``, and no smaller p-value can come out of that law: with few cohorts
  (``m = 4``, ``k = 16``, ``h = 2``: a few 1e-9) the strongest strings all get that floor
  and tie, whatever their estimates (:func:`floor_tie`).

Only public fields of the result are read (``pvalue``, ``adjusted_pvalue``,
``significant``, ``detected``, ``group``, ``significance_level``, ``correction``,
``estimator``, ``diagnostics``: a DecodeDiagnostics or a mapping), so duck-typed results
work too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .metrics import _diagnostic

__all__ = ["CORRECTION_NAMES", "DetectionRule", "FloorTie", "detection_rule", "floor_tie"]

#: What each ``correction`` of :class:`rappor.Decoder` is, in words.
CORRECTION_NAMES = {
    "fdr": "Benjamini-Hochberg (false discovery rate)",
    "adaptive-fdr": "Benjamini-Krieger-Yekutieli two-stage adaptive false discovery rate",
    "storey": "Storey's adaptive false discovery rate (estimated share of absent candidates)",
    "lfdr": "empirical-Bayes local false discovery rate (mean local fdr of the detected)",
    "bonferroni": "Bonferroni (family-wise error rate)",
    "none": "no correction (each candidate at the level on its own)",
}


def _distinct(result: Any) -> npt.NDArray[np.bool_]:
    """One entry per group of indistinguishable candidates (members copy their group's numbers)."""
    n = len(result.strings)
    group = getattr(result, "group", None)
    return np.ones(n, dtype=bool) if group is None else np.asarray(group) == np.arange(n)


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectionRule:
    """How the decode decided which candidates are detected (see :func:`detection_rule`).

    Attributes
    ----------
    level : float
        The significance level the adjusted p-values are compared with.
    correction : str
        The multiple-testing correction's name (``fdr``, ``bonferroni``, ...).
    n_tests : int
        Distinguishable candidates tested.
    n_significant : int
        Candidates whose adjusted p-value is at most ``level``.
    pvalue_threshold : float
        The largest (unadjusted) p-value that passed: every candidate at or below it is
        significant (nan when none passed).
    next_pvalue : float
        The smallest p-value that did not pass (nan when all passed).
    by_posterior : bool
        True when "detected" is the empirical-Bayes rule (posterior median share > 0)
        rather than the test.
    text : str
        The rule in one paragraph.
    """

    level: float
    correction: str
    n_tests: int
    n_significant: int
    pvalue_threshold: float
    next_pvalue: float
    by_posterior: bool
    text: str


def detection_rule(result: Any) -> DetectionRule:
    """The rule that decided "detected" and the p-value threshold it comes to on this decode."""
    level = float(result.significance_level)
    correction = str(result.correction)
    distinct = _distinct(result)
    pvalue = np.asarray(result.pvalue, dtype=np.float64)
    significant = np.asarray(result.significant, dtype=bool)
    tested = distinct & np.isfinite(pvalue)
    n_tests = int(_diagnostic(result, "distinguishable") or tested.sum())
    passed, failed = pvalue[tested & significant], pvalue[tested & ~significant]
    threshold = float(passed.max()) if passed.size else math.nan
    next_p = float(failed.min()) if failed.size else math.nan
    n_significant = int(np.count_nonzero(significant & distinct))
    test = (f"adjusted p-value <= {level:g} (the significance level), adjusted by "
            f"{CORRECTION_NAMES.get(correction, correction)} over {n_tests:,} distinguishable candidates")
    if passed.size:
        cut = f"here that is a p-value <= {threshold:.3g} (the largest that passed"
        cut += f"; the smallest that did not is {next_p:.3g})" if failed.size else ")"
    elif failed.size:
        adjusted = np.asarray(getattr(result, "adjusted_pvalue", pvalue), dtype=np.float64)[tested & ~significant]
        cut = f"no candidate passed: the smallest p-value, {next_p:.3g}, adjusts to {float(np.nanmin(adjusted)):.3g}"
    else:
        cut = "no candidate was tested"
    by_posterior = getattr(result, "estimator", "least-squares") == "empirical-bayes"
    if by_posterior:
        n_detected = int(np.count_nonzero(np.asarray(result.detected, dtype=bool) & distinct))
        text = (f"Detected ({n_detected}): posterior median share > 0 (empirical-Bayes estimator: more likely "
                f"present than absent). Significant ({n_significant}): {test}; {cut}.")
    else:
        text = f"Detected ({n_significant}): {test}; {cut}."
    return DetectionRule(level=level, correction=correction, n_tests=n_tests, n_significant=n_significant,
                         pvalue_threshold=threshold, next_pvalue=next_p, by_posterior=by_posterior, text=text)


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorTie:
    """Candidates tied at the smallest p-value of the random-string null (see :func:`floor_tie`)."""

    pvalue: float
    strings: tuple[str, ...]
    cohorts: int
    text: str


def floor_tie(result: Any) -> FloorTie | None:
    """The candidates sharing the smallest p-value when the null is the random-string law.

    Returns None unless two or more distinguishable candidates share it exactly.  Such a
    tie is the floor of the null (module docstring): it says those strings score beyond
    any random string, not that the evidence for them is equal.
    """
    if (_diagnostic(result, "null_law") or "random-strings") != "random-strings":
        return None
    pvalue = np.asarray(result.pvalue, dtype=np.float64)
    candidates = np.flatnonzero(_distinct(result) & np.isfinite(pvalue))
    if candidates.size < 2:
        return None
    lowest = float(pvalue[candidates].min())
    tied = candidates[pvalue[candidates] == lowest]
    if tied.size < 2:
        return None
    strings = tuple(result.strings[i] for i in tied)
    cohorts = int(_diagnostic(result, "cohorts_used") or getattr(getattr(result, "params", None), "num_cohorts", 0))
    shown = ", ".join(strings[:5]) + (f" and {len(strings) - 5} more" if len(strings) > 5 else "")
    text = (f"{shown} share the p-value {lowest:.3g}: the floor of the random-string null with {cohorts} "
            "cohorts (no random string scores higher), so these p-values tie and do not rank the strings; "
            "their estimates do. More cohorts lower the floor.")
    return FloorTie(pvalue=lowest, strings=strings, cohorts=cohorts, text=text)
