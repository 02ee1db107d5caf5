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

And, for a simulation whose truth is known, **what a decode of this size can find**: the
planner's smallest detectable share and the number of true candidates expected to be
detected (:func:`outlook_text`), with a plain warning when that share is large (high
privacy or few reports: :func:`detectable_share_note`, also under ``rappor plan``).

Only public fields of the result are read (``pvalue``, ``adjusted_pvalue``,
``significant``, ``detected``, ``group``, ``significance_level``, ``correction``,
``estimator``, ``diagnostics``: a DecodeDiagnostics or a mapping), so duck-typed results
work too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..analysis._metrics import _diagnostic
from ..params import Params

if TYPE_CHECKING:
    from ..privacy._detection import DetectionOutlook

__all__ = ["CORRECTION_NAMES", "DetectionRule", "FloorTie", "detectable_share_note", "detection_rule", "floor_tie",
           "outlook_text"]

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
    text : str
        The rule in one paragraph.
    """

    level: float
    correction: str
    n_tests: int
    n_significant: int
    pvalue_threshold: float
    next_pvalue: float
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
    text = f"Detected ({n_significant}): {test}; {cut}."
    return DetectionRule(level=level, correction=correction, n_tests=n_tests, n_significant=n_significant,
                         pvalue_threshold=threshold, next_pvalue=next_p, text=text)


def detectable_share_note(frequency: float, n_reports: int, params: Params | None = None) -> str | None:
    """A plain warning when the smallest detectable share is large (high privacy, few reports), else None.

    ``frequency`` is the planner's smallest share detected with probability 1/2
    (:func:`rappor.privacy.detection_frequency`) at ``n_reports``.  At or above
    :data:`rappor.privacy._detection.LARGE_DETECTION_FREQUENCY` at most ``floor(1 / frequency)``
    strings can be that frequent, so a decode lists only a handful of strings whatever
    the data; above 1 no string can be detected at all.  Either way it says how many
    reports would help (:func:`rappor.privacy.reports_for_frequency`).
    """
    from ..privacy._detection import LARGE_DETECTION_FREQUENCY, reports_for_frequency

    if not math.isfinite(frequency):
        return ("No string can be detected: the candidates cannot be told apart with these parameters "
                "(more Bloom bits or cohorts are needed).")
    if frequency < LARGE_DETECTION_FREQUENCY:
        return None
    privacy = ""
    if params is not None:
        privacy = (f" at these privacy parameters (f={params.f:.4g}, p={params.p:.4g}, q={params.q:.4g}: "
                   f"epsilon_inf {params.epsilon_inf:.3g}, epsilon_one {params.epsilon_one:.3g})")
    if frequency >= 1.0:
        return (f"No string can be detected with {n_reports:,} reports{privacy}: even a string every client "
                f"holds is detected with probability below 1/2 (smallest detectable share {frequency:.3g}). "
                f"About {_rounded(reports_for_frequency(frequency, n_reports, 0.1)):,} reports would make a share of 0.1 "
                "detectable.")
    return (f"The smallest detectable share is large ({frequency:.3g}){privacy}: at most {int(1.0 / frequency)} "
            f"strings can be that frequent, so a decode of {n_reports:,} reports lists only a handful of "
            "strings whatever the data, and the mass of the rarer ones stays undetected. About "
            f"{_rounded(reports_for_frequency(frequency, n_reports, 0.01)):,} reports would bring it down to 0.01.")


def _rounded(n: int) -> int:
    """``n`` to two significant figures (a planning figure, not a count)."""
    return n if n < 100 else int(round(n, 1 - int(math.floor(math.log10(n)))))


def outlook_text(outlook: DetectionOutlook, params: Params, *, found: int | None = None) -> str:
    """What a decode of this size can be expected to find, in words (``rappor simulate``, the HTML report).

    ``outlook`` is :func:`rappor.privacy.detection_outlook` of the true candidates'
    shares; ``found``, when given, the number the decode detected.
    """
    size = (f"{outlook.n_reports:,} reports, {outlook.n_candidates:,} candidates, "
            f"k={params.k} h={params.h} m={params.m}")
    if not math.isfinite(outlook.frequency):  # more candidates than Bloom bits in all cohorts
        found_text = f" Found {found}." if found is not None else ""
        return (f"At this size ({size}) there are more candidates than bits: no string can be detected with "
                f"probability 1/2 (planner), whatever its share; more Bloom bits or cohorts are needed.{found_text}")
    text = (f"A decode of this size ({size}) detects a string with probability 1/2 when its share is "
            f"{outlook.frequency:.3g} (the planner's prediction, as 'rappor plan' makes it: a z-test Bonferroni-"
            "corrected over the candidates; the default Benjamini-Hochberg test finds a few more). "
            f"{outlook.above} of the {outlook.n_strings:,} true candidates have a share at least that large "
            f"({outlook.mass_above:.2f} of the reports): expect about {outlook.expected:.1f} detected")
    text += f"; found {found}." if found is not None else "."
    note = detectable_share_note(outlook.frequency, outlook.n_reports, params)
    return text if note is None else f"{text} {note}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorTie:
    """Candidates tied at the smallest p-value of the random-string null (see :func:`floor_tie`)."""

    pvalue: float
    strings: tuple[str, ...]
    cohorts: int
    text: str


def floor_tie(result: Any) -> FloorTie | None:
    """The candidates sharing the smallest p-value when the null is the random-string law.

    Returns None unless two or more distinguishable candidates share it exactly and it is the
    null's floor (``diagnostics.pvalue_floor``, when known).  Such a tie is the floor of the null (module docstring): it says those strings score beyond
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
    floor = _diagnostic(result, "pvalue_floor")
    if tied.size < 2 or (floor is not None and lowest > floor * (1.0 + 1e-9)):
        return None  # a tie elsewhere (e.g. every candidate at p = 1) is not the floor
    strings = tuple(result.strings[i] for i in tied)
    cohorts = int(_diagnostic(result, "cohorts_used") or getattr(getattr(result, "params", None), "num_cohorts", 0))
    shown = ", ".join(strings[:5]) + (f" and {len(strings) - 5} more" if len(strings) > 5 else "")
    text = (f"{shown} share the p-value {lowest:.3g}: the floor of the random-string null with {cohorts} "
            "cohorts (no random string scores higher), so these p-values tie and do not rank the strings; "
            "their estimates do. More cohorts lower the floor.")
    return FloorTie(pvalue=lowest, strings=strings, cohorts=cohorts, text=text)
