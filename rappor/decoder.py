"""The decoder: estimate how common each candidate string is from aggregated reports.

:class:`Decoder` is configured once and applied with :meth:`Decoder.decode` to an
:class:`~rappor.aggregate.Aggregate` and a :class:`~rappor.design.CandidateMap`; it
returns a :class:`DecodeResult` with estimates, standard errors, p-values, confidence
intervals, a table in google/rappor's ``results.csv`` layout and a summary.

The method (details and measurements in ``docs/decoder.md``):

1. debias every (cohort, bit) count and weight it by its inverse variance, leaving out
   cohorts without reports;
2. merge candidates that set the same bits in every cohort into one group (they cannot
   be told apart; :class:`~rappor.exceptions.IndistinguishableCandidatesWarning`);
3. add one column for the strings that are *not* candidates (their ones spread evenly
   over the bits), whose coefficient is the unexplained mass;
4. when there are more candidates than ``0.8`` times the (cohort, bit) rows, screen
   them with a non-negative Lasso whose penalty is the Bonferroni level of the noise;
5. fit non-negative least squares with the total share capped at 1, then test each
   candidate's share > 0 (Wald on the fitted support, score test off it), adding
   candidates that pass to the model until none is left out;
6. compute one-sided p-values against the law of a random string's score given the
   residuals (a randomization null that stays valid when heavy non-candidate strings
   leave structure in them), adjust them (Benjamini-Hochberg by default; Bonferroni,
   adaptive FDR or empirical-Bayes local fdr as options) and flag the candidates below
   the significance level.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from . import _estimation as est
from ._lazy import lazy_module
from ._results import ConfidenceInterval
from ._io import PathLike, atomic_output
from ._validation import check_int, check_options, check_probability, check_real, check_rng
from .aggregate import Aggregate
from .design import CandidateMap
from .exceptions import (
    DecodeError,
    IncompatibleParamsError,
    IndistinguishableCandidatesWarning,
    InvalidParameterError,
)
from .params import Params

if TYPE_CHECKING:
    import scipy.sparse as sp
    from scipy import stats
else:  # imported on first use: keeps `import rappor` and CLI start-up light
    sp = lazy_module("scipy.sparse")
    stats = lazy_module("scipy.stats")

__all__ = ["ConfidenceInterval", "DecodeResult", "Decoder"]

_CORRECTIONS = ("adaptive-fdr", "bonferroni", "fdr", "lfdr", "none", "storey")
_SCREENING = ("auto", "lasso", "none")
_NULLS = ("random-strings", "normal")
_ESTIMATORS = ("least-squares", "empirical-bayes")
#: Selective intervals use the truncated-normal pivot only for Wald z this far (in SE) above
#: the detection cutoff; closer ones get the FCR interval (the pivot degenerates at the cutoff).
_SELECTIVE_MARGIN = 0.1
#: Smallest usable |p11 - p01|: a bit's debiased share has standard error at least
#: 0.5 / (|p11 - p01| sqrt(N)), above 1 for every int64 number of reports N below this.
_MIN_SIGNAL = 0.5 / math.sqrt(2.0**63)
#: Seed of the random-string null when ``rng`` is None (decoding stays deterministic).
_DEFAULT_NULL_SEED = 0
_TABLE_COLUMNS = ("string", "estimate", "std_error", "proportion", "prop_std_error", "prop_low_95",
                  "prop_high_95", "pvalue")
#: Screen with the Lasso when the distinct candidates exceed this share of the rows
#: (google/rappor ``decode.R`` uses the same 0.8).
_SCREEN_RATIO = 0.8


Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DecodeResult:
    """Estimated frequencies of the candidate strings (one entry per candidate, input order).

    Attributes
    ----------
    strings : tuple of str
        The candidates.
    estimate, std_error : ndarray of shape (n_candidates,)
        Estimated number of reports of each string and its standard error
        (``proportion * n_reports``).
    proportion, prop_std_error : ndarray of shape (n_candidates,)
        Estimated share of reports and its standard error.  Candidates outside the
        fitted support have share 0 and the standard error they would have if added.
        ``nan`` for a candidate that sets no bit of any cohort with reports.
    pvalue : ndarray of shape (n_candidates,)
        One-sided p-value of "share > 0", before the multiple-testing adjustment, under
        the decoder's ``null`` (by default the random-string null).
    adjusted_pvalue : ndarray of shape (n_candidates,)
        After the adjustment named by ``correction``.
    significant : ndarray of bool, shape (n_candidates,)
        ``adjusted_pvalue <= significance_level``.
    detected : ndarray of bool, shape (n_candidates,)
        The candidates reported as present (the rows of :meth:`table`).  With the
        least-squares estimator (default) the same as :attr:`significant`; with
        ``estimator="empirical-bayes"`` the candidates whose posterior median share is
        positive (more likely present than absent).
    group : ndarray of int, shape (n_candidates,)
        Index of the first candidate with exactly the same bits in every cohort (its own
        index when unique).  Members of a group share one estimate: that of the group.
    n_reports : int
        Reports decoded.
    params : Params
    significance_level, correction :
        The test configuration used.
    diagnostics : dict
        Unexplained mass and its standard error, residual chi-square, dispersion, screening
        and timing information (see :meth:`summary`).
    """

    strings: tuple[str, ...]
    estimate: Array
    std_error: Array
    proportion: Array
    prop_std_error: Array
    pvalue: Array
    adjusted_pvalue: Array
    significant: npt.NDArray[np.bool_]
    group: npt.NDArray[np.int64]
    n_reports: int
    params: Params
    significance_level: float
    correction: str
    diagnostics: dict[str, Any] = field(default_factory=dict)
    detected: npt.NDArray[np.bool_] = None  # type: ignore[assignment]  # None -> significant
    estimator: str = "least-squares"

    def __post_init__(self) -> None:
        if self.detected is None:
            object.__setattr__(self, "detected", self.significant)
        for name in ("estimate", "std_error", "proportion", "prop_std_error", "pvalue", "adjusted_pvalue",
                     "significant", "detected", "group"):
            arr = np.array(getattr(self, name), copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.strings)

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        """Candidates that cannot be told apart (groups of two or more), in input order."""
        out: dict[int, list[str]] = {}
        for i, g in enumerate(self.group.tolist()):
            out.setdefault(g, []).append(self.strings[i])
        return tuple(tuple(v) for v in out.values() if len(v) > 1)

    def confidence_interval(self, confidence_level: float = 0.95, *,
                            kind: Literal["proportion", "count"] = "proportion",
                            adjust: Literal["none", "fcr", "selective"] = "none") -> ConfidenceInterval:
        """Two-sided Wald interval ``estimate ± z * std_error``, clipped to ``[0, 1]`` (or ``[0, N]``).

        Parameters
        ----------
        confidence_level : float, default=0.95
        kind : {"proportion", "count"}, default="proportion"
            Scale of the interval: shares of reports or numbers of reports.
        adjust : {"none", "fcr", "selective"}, default="none"
            ``"none"``: marginal intervals (each covers its share with probability
            ``confidence_level`` when looked at regardless of the detections).  ``"fcr"``:
            for the detected candidates, false-coverage-rate adjusted intervals of
            Benjamini and Yekutieli 2005 (JASA 100(469), Definition 1): with ``R``
            detected out of ``m`` tests, the level is ``1 - R (1 - confidence_level) / m``,
            so that the expected share of non-covering intervals among the detected is at
            most ``1 - confidence_level`` (the "winner's curse" of selected estimates).
            ``"selective"``: for the detected candidates, the interval conditional on
            having been detected (:func:`rappor._estimation.truncated_normal_interval`
            on the Wald z-score ``share / SE``; the selection threshold is the
            geometric mean of the largest detected and the smallest undetected
            p-value, carried to each candidate's Wald scale by the ratio of its Wald
            and calibrated z-scores): about the Wald width for strong strings, much
            wider only near the detection threshold; a detected string within 0.1 SE
            of the threshold, or with share 0, gets the FCR interval; least-squares
            estimates only.  Undetected
            candidates keep the marginal interval.

        Returns
        -------
        ConfidenceInterval
            ``low`` and ``high``, arrays of shape (n_candidates,).
        """
        level = check_probability(confidence_level, "confidence_level", "DecodeResult.confidence_interval",
                                  open_low=True, open_high=True)
        check_options(kind, "kind", "DecodeResult.confidence_interval", ("proportion", "count"))
        check_options(adjust, "adjust", "DecodeResult.confidence_interval", ("none", "fcr", "selective"))
        z = np.full(len(self.strings), float(stats.norm.isf((1.0 - level) / 2.0)))
        if adjust == "selective":
            low, high = self._selective_interval(level, z)
            if kind == "count":
                low, high = low * self.n_reports, high * self.n_reports
            return ConfidenceInterval(low=low, high=high)
        if adjust == "fcr":
            z[self.detected] = self._fcr_critical_value(level)
        low = np.clip(self.proportion - z * self.prop_std_error, 0.0, 1.0)
        high = np.clip(self.proportion + z * self.prop_std_error, 0.0, 1.0)
        if kind == "count":
            low, high = low * self.n_reports, high * self.n_reports
        return ConfidenceInterval(low=low, high=high)

    def _fcr_critical_value(self, level: float) -> float:
        """``z`` of Benjamini and Yekutieli's FCR-adjusted interval: level ``1 - R (1 - level) / m``."""
        n_tests = int(self.diagnostics.get("distinguishable", len(self.strings)))
        n_sel = int(np.count_nonzero(self.detected[_first_of_group(self.group)]))
        if not (n_sel and n_tests):
            return float(stats.norm.isf((1.0 - level) / 2.0))
        return float(stats.norm.isf(min(n_sel / n_tests, 1.0) * (1.0 - level) / 2.0))

    def _selective_interval(self, level: float, z_wald: Array) -> tuple[Array, Array]:
        if self.estimator != "least-squares":
            msg = (f"Selective intervals need least-squares estimates; this result used the {self.estimator!r} "
                   "estimator. Use adjust='fcr' or 'none'.")
            raise InvalidParameterError(msg)
        low = np.clip(self.proportion - z_wald * self.prop_std_error, 0.0, 1.0)
        high = np.clip(self.proportion + z_wald * self.prop_std_error, 0.0, 1.0)
        se = self.prop_std_error
        sel = self.detected & np.isfinite(self.proportion) & np.isfinite(se) & (se > 0)
        if sel.any():
            # The detection threshold on the p-values lies between the largest detected and the
            # smallest undetected p-value: take their geometric mean, as a calibrated z-score,
            # and carry it to each candidate's Wald scale by the ratio of its two z-scores.
            pv = np.clip(np.nan_to_num(self.pvalue, nan=1.0), 1e-300, 1.0)
            first = _first_of_group(self.group)
            p_in = float(np.max(pv[sel]))
            rest = pv[first & ~self.detected]
            p_out = float(np.min(rest)) if rest.size else 1.0
            cut_cal = float(stats.norm.isf(math.sqrt(p_in * max(p_out, p_in))))
            zw = self.proportion[sel] / se[sel]
            zc = stats.norm.isf(pv[sel])
            cutoff = np.where(zc > 0, zw * cut_cal / np.maximum(zc, 1e-300), cut_cal)
            # The pivot needs z clearly above its cutoff: at or just above it, it says only that
            # the effect may be anything below (and a detected share of 0 has no Wald z at all).
            # Those few get the FCR interval instead.
            pivot = (zw > cutoff + _SELECTIVE_MARGIN) & (self.proportion[sel] > 0)
            idx = np.flatnonzero(sel)
            if pivot.any():
                mu_low, mu_high = est.truncated_normal_interval(zw[pivot], cutoff[pivot], level)
                at = idx[pivot]
                # Near the threshold the conditional interval can lie below the estimate; keep it inside.
                low[at] = np.clip(np.minimum(mu_low * se[at], self.proportion[at]), 0.0, 1.0)
                high[at] = np.clip(np.maximum(mu_high * se[at], self.proportion[at]), 0.0, 1.0)
            if not pivot.all():
                at = idx[~pivot]
                z_fcr = self._fcr_critical_value(level)
                low[at] = np.clip(self.proportion[at] - z_fcr * se[at], 0.0, 1.0)
                high[at] = np.clip(self.proportion[at] + z_fcr * se[at], 0.0, 1.0)
        return low, high

    def _order(self, all: bool) -> npt.NDArray[np.int64]:  # noqa: A002
        idx = np.arange(len(self.strings)) if all else np.flatnonzero(self.detected)
        key = np.where(np.isnan(self.estimate[idx]), -np.inf, self.estimate[idx])
        return idx[np.lexsort((idx, -key))]

    @property
    def table_interval(self) -> Literal["selective", "fcr"]:
        """The ``adjust`` of the ``prop_*_95`` columns by default: ``"selective"`` for
        least-squares results, ``"fcr"`` for empirical-Bayes ones."""
        return "selective" if self.estimator == "least-squares" else "fcr"

    def table(self, all: bool = False, *,  # noqa: A002
              adjust: Literal["fcr", "none", "selective"] | None = None) -> np.ndarray:
        """The results as a numpy structured array, sorted by estimate (descending).

        Columns are google/rappor's ``string, estimate, std_error, proportion,
        prop_std_error, prop_low_95, prop_high_95`` plus ``pvalue`` (unadjusted) and,
        with ``all=True``, ``detected``.  ``proportion`` is the (unbiased, non-negative)
        least-squares estimate.

        Parameters
        ----------
        all : bool, default=False
            Every candidate instead of only the detected ones.
        adjust : {"selective", "fcr", "none"} or None, default=None
            Interval of the ``prop_*_95`` columns (see :meth:`confidence_interval`):
            conditional on detection, false-coverage-rate adjusted, or the plain
            marginal Wald interval.  Both adjusted kinds cover the truth of detected
            strings about 95% of the time even though they were selected for being
            large; the selective one is about half as wide with many candidates
            (measured in ``docs/decoder.md``).  ``None``: :attr:`table_interval`.
        """
        idx = self._order(all)
        ci = self.confidence_interval(0.95, adjust=self.table_interval if adjust is None else adjust)
        width = max((len(self.strings[i]) for i in idx), default=1)
        dtype = [("string", f"U{max(width, 1)}")] + [(name, "f8") for name in _TABLE_COLUMNS[1:]]
        if all:
            dtype.append(("detected", "?"))
        out = np.empty(len(idx), dtype=dtype)
        out["string"] = [self.strings[i] for i in idx]
        out["estimate"] = self.estimate[idx]
        out["std_error"] = self.std_error[idx]
        out["proportion"] = self.proportion[idx]
        out["prop_std_error"] = self.prop_std_error[idx]
        out["prop_low_95"] = ci.low[idx]
        out["prop_high_95"] = ci.high[idx]
        out["pvalue"] = self.pvalue[idx]
        if all:
            out["detected"] = self.detected[idx]
        return out

    def to_csv(self, path: PathLike | None, all: bool = False, *,  # noqa: A002
               adjust: Literal["fcr", "none", "selective"] | None = None) -> None:
        """Write :meth:`table` as ``results.csv`` (atomically; ``"-"`` for standard output)."""
        rows = self.table(all=all, adjust=adjust)
        names = rows.dtype.names or ()
        with atomic_output(path) as out:
            out.write(",".join(names) + "\n")
            for row in rows:
                cells = [_csv_string(str(row["string"]))]
                for name in names[1:]:
                    value = row[name]
                    cells.append(("true" if value else "false") if name == "detected" else _csv_float(float(value)))
                out.write(",".join(cells) + "\n")

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary: counts, masses, residual diagnostics, privacy and timing.

        Keys: ``candidates``, ``detected``, ``reports``, ``allocated_mass`` (sum of the
        detected shares), ``unexplained_mass`` and ``unexplained_std_error`` (share of
        reports whose value the candidates do not explain, from the model's
        non-candidate column: without screening its unconstrained least-squares
        coefficient with every candidate in the model, unbiased however many candidates
        are absent, clipped to [0, 1] -- ``unexplained_mass_unclipped`` is the raw value;
        after Lasso screening the same with the detected candidates in the model: the
        mass the detected strings do not explain, as the others cannot be told from
        non-candidates), ``groups``
        (indistinguishable candidates), ``residual`` (chi-square, degrees of freedom,
        p-value, dispersion, largest standardized residual), ``epsilon_one``,
        ``epsilon_inf``, ``params``, ``significance_level``, ``correction``,
        ``estimator``, ``null`` (law of the test statistics and, for the random-string
        null, the mean, sd and skewness of a random string's score, and whether its
        patterns were enumerated exactly), ``screening``, ``seconds``.
        """
        d = self.diagnostics
        allocated = float(np.nansum(np.where(self.detected, self.proportion, 0.0)[_first_of_group(self.group)]))
        return {
            "candidates": len(self.strings),
            "detected": int(self.detected.sum()),
            "reports": int(self.n_reports),
            "allocated_mass": allocated,
            "unexplained_mass": d.get("unexplained_mass", math.nan),
            "unexplained_std_error": d.get("unexplained_std_error", math.nan),
            "unexplained_mass_unclipped": d.get("unexplained_mass_unclipped", math.nan),
            "groups": [list(g) for g in self.groups],
            "residual": {key: d.get(key, math.nan) for key in
                         ("chi2", "dof", "chi2_pvalue", "dispersion", "max_abs_std_residual")},
            "cohorts_used": d.get("cohorts_used"),
            "epsilon_one": _json_float(self.params.epsilon_one),
            "epsilon_inf": _json_float(self.params.epsilon_inf),
            "params": self.params.as_dict(),
            "significance_level": self.significance_level,
            "correction": self.correction,
            "estimator": self.estimator,
            "null": {key: d.get(f"null_{key}") for key in ("law", "mean", "sd", "skewness", "exact")},
            "screening": {key: d.get(key) for key in ("screened", "lasso_alpha", "selected", "refits")},
            "seconds": d.get("seconds", math.nan),
        }


def _json_float(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _first_of_group(group: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    first: npt.NDArray[np.bool_] = group == np.arange(len(group))
    return first


def _csv_string(text: str) -> str:
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_float(x: float) -> str:
    if math.isnan(x):
        return "NA"
    return repr(x) if x != int(x) or abs(x) >= 1e16 else str(int(x)) if x == x else "NA"


class Decoder:
    """Estimate candidate frequencies from per-cohort bit counts.

    Parameters
    ----------
    significance_level : float, default=0.05
        Level of the one-sided tests of "share > 0", after the multiple-testing correction.
    correction : {"fdr", "lfdr", "adaptive-fdr", "storey", "bonferroni", "none"}, default="fdr"
        ``"fdr"``: Benjamini-Hochberg (expected share of false detections at most
        ``significance_level``); ``"adaptive-fdr"``: the two-stage Benjamini-Krieger-Yekutieli
        procedure and ``"storey"``: BH scaled by Storey's estimate of the share of absent
        candidates -- both control the FDR too and detect more when many candidates are
        present (measured in ``docs/decoder.md``); ``"bonferroni"``: probability of any false
        detection at most ``significance_level``; ``"none"``: per-candidate level;
        ``"lfdr"``: empirical Bayes -- a nonparametric prior of the effects fitted to the
        calibrated z-scores, each candidate's local fdr (posterior probability of being
        absent), and the largest set whose estimated FDR (mean local fdr) is at most
        ``significance_level`` (``adjusted_pvalue`` is then that estimated FDR, a
        q-value).  The number of tests is the number of distinguishable candidates.
    lasso_alpha : float, "cv", "bic" or None, default=None
        Penalty of the screening Lasso on the whitened, unit-norm design (scikit-learn's
        ``alpha``).  ``None`` uses ``z_{1 - significance_level / S} / n`` (S candidates,
        n rows): the level at which pure noise lets no candidate in with probability
        ``1 - significance_level``.  ``"cv"``: 5-fold cross-validation over whole
        cohorts with the one-standard-error rule (:func:`rappor._penalty.cv_lasso_alpha`;
        seeded by ``rng``); measured, it picks about the plug-in value at 5-10 times the
        cost (``docs/penalty.md``).  ``"bic"``: the Bayesian information criterion
        along the path, with the known unit noise of the whitened rows
        (:func:`rappor._penalty.bic_lasso_alpha`).
    screening : {"auto", "lasso", "none"}, default="auto"
        ``"auto"`` screens when the distinguishable candidates exceed 0.8 times the
        (cohort, bit) rows (as ``decode.R``) and the design is not orthogonal.
    model_unexplained : bool, default=True
        Model the reports whose value is not a candidate with one column of evenly spread
        ones (its coefficient is the unexplained mass).  Turning it off reproduces the
        classical model, whose estimates absorb that mass.
    max_refits : int, default=5
        Rounds of adding significant left-out candidates to the model and refitting.
    null : {"random-strings", "normal"}, default="random-strings"
        Law of a candidate's test statistic when it is absent.  ``"random-strings"``:
        the law of the score of a random string (``h`` uniform bits per cohort, which
        is what any candidate outside the data looks like under a uniform hash)
        against the fitted residuals, by exact enumeration and a saddlepoint tail
        (:func:`rappor._estimation.random_string_null`); it keeps the false-positive
        rate at the nominal level when heavy non-candidate strings leave structure in
        the residuals.  ``"normal"``: the standard normal of the Wald/score z.
    estimator : {"least-squares", "empirical-bayes"}, default="least-squares"
        What :attr:`DecodeResult.proportion` holds and which candidates are reported.
        ``"least-squares"``: the constrained weighted least-squares shares, reporting the
        candidates significant after ``correction``.  ``"empirical-bayes"``: empirical
        Bayes -- the NPMLE prior of ``correction="lfdr"`` is fitted to the calibrated
        z-scores; the candidates with a positive posterior median (probability of
        presence above ½: the Bayes rule for absolute error, hence for the total
        variation distance, sets the others to 0) are reported, each with its posterior
        mean share (the least-squares share scaled by ``mean / z``; off the support
        ``mean x SE``).  It recovers the distribution best when most candidates are
        present (issue 4's 100 true candidates: TV 0.22 against 0.29), at the price of
        more false detections among decoys than a test controls (measured in
        ``docs/decoder.md``); ``significant`` and the p-values still give the test's
        answer.
    rng : numpy.random.Generator, int or None, default=None
        Draws the random-string patterns when ``k**h`` exceeds 4096 (otherwise every
        pattern is enumerated and nothing random is drawn).  ``None`` uses a fixed
        seed, so decoding is deterministic either way.

    Examples
    --------
    >>> import numpy as np, rappor
    >>> params = rappor.Params(num_bloombits=8, num_hashes=2, num_cohorts=4,
    ...                        prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> cmap = rappor.hash_candidates(["a", "b", "c"], params)
    >>> rows = np.asarray(cmap.matrix[:, 0].todense()).reshape(4, 8)   # everybody says "a"
    >>> n = 10_000
    >>> ones = np.rint(n * (params.p01 + (params.p11 - params.p01) * rows)).astype(int)
    >>> agg = rappor.Aggregate(params=params, counts=np.column_stack([np.full(4, n), ones]))
    >>> res = rappor.Decoder().decode(agg, cmap)
    >>> res.table()["string"].tolist(), round(float(res.proportion[0]), 2)
    (['a'], 1.0)
    """

    _parameter_constraints: dict[str, str] = {
        "significance_level": "probability_open",
        "correction": "correction",
        "lasso_alpha": "penalty",
        "screening": "screening",
        "model_unexplained": "bool",
        "max_refits": "nonnegative_int",
        "null": "null",
        "estimator": "estimator",
        "rng": "rng",
    }

    def __init__(self, *, significance_level: float = 0.05,
                 correction: Literal["fdr", "adaptive-fdr", "storey", "lfdr", "bonferroni", "none"] = "fdr",
                 lasso_alpha: float | Literal["cv", "bic"] | None = None,
                 screening: Literal["auto", "lasso", "none"] = "auto",
                 model_unexplained: bool = True, max_refits: int = 5,
                 null: Literal["random-strings", "normal"] = "random-strings",
                 estimator: Literal["least-squares", "empirical-bayes"] = "least-squares",
                 rng: np.random.Generator | int | None = None) -> None:
        self.significance_level = significance_level
        self.correction = correction
        self.lasso_alpha = lasso_alpha
        self.screening = screening
        self.model_unexplained = model_unexplained
        self.max_refits = max_refits
        self.null = null
        self.estimator = estimator
        self.rng = rng

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._parameter_constraints)
        return f"Decoder({args})"

    def _validate(self) -> None:
        owner = "Decoder"
        for name, kind in self._parameter_constraints.items():
            value = getattr(self, name)
            if kind == "probability_open":
                check_probability(value, name, owner, open_low=True, open_high=True)
            elif kind == "correction":
                check_options(value, name, owner, _CORRECTIONS)
            elif kind == "screening":
                check_options(value, name, owner, _SCREENING)
            elif kind == "null":
                check_options(value, name, owner, _NULLS)
            elif kind == "estimator":
                check_options(value, name, owner, _ESTIMATORS)
            elif kind == "penalty":
                if value is not None and not (isinstance(value, str) and value in ("cv", "bic")):
                    if isinstance(value, str):
                        msg = (f"The {name!r} parameter of {owner} must be a float > 0, 'cv', 'bic' or None. "
                               f"Got {value!r} instead.")
                        raise InvalidParameterError(msg)
                    check_real(value, name, owner, low=0.0, low_open=True)
            elif kind == "bool":
                if not isinstance(value, (bool, np.bool_)):
                    msg = f"The {name!r} parameter of {owner} must be a bool. Got {value!r} instead."
                    raise InvalidParameterError(msg)
            elif kind == "nonnegative_int":
                check_int(value, name, owner, low=0)
            elif kind == "rng":
                try:
                    check_rng(value)
                except InvalidParameterError:
                    msg = (f"The {name!r} parameter of {owner} must be a numpy.random.Generator, an int seed "
                           f"or None. Got {value!r} instead.")
                    raise InvalidParameterError(msg) from None

    def decode(self, aggregate: Aggregate, candidate_map: CandidateMap) -> DecodeResult:
        """Estimate the share of every candidate in ``aggregate``.

        Parameters
        ----------
        aggregate : Aggregate
            Per-cohort report and bit counts.
        candidate_map : CandidateMap
            The candidates and their bits (same parameters as ``aggregate``).

        Returns
        -------
        DecodeResult

        Raises
        ------
        InvalidParameterError
            If a configuration value or an argument has the wrong type or value.
        IncompatibleParamsError
            If the aggregate and the map were made with different parameters.
        DecodeError
            If there are no reports, or the parameters carry no information.

        Warns
        -----
        IndistinguishableCandidatesWarning
            When candidates set the same bits in every cohort with reports.

        Notes
        -----
        Debiasing follows google/rappor ``decode.R`` (``EstimateBloomCounts``) and
        Erlingsson, Pihur and Korolova 2014, Section 4: ``t = (c - p01 N) / (p11 - p01)``.
        Standard errors are those of the weighted least-squares fit on the final
        support, ``(A_P' W A_P)^-1`` scaled by the Pearson dispersion when it exceeds 1.
        P-values are one-sided normal tail probabilities.  See ``docs/decoder.md``.
        """
        start = time.perf_counter()
        self._validate()
        if not isinstance(aggregate, Aggregate):
            msg = f"The 'aggregate' parameter of Decoder.decode must be an Aggregate. Got {type(aggregate).__name__} instead."
            raise InvalidParameterError(msg)
        if not isinstance(candidate_map, CandidateMap):
            msg = ("The 'candidate_map' parameter of Decoder.decode must be a CandidateMap. "
                   f"Got {type(candidate_map).__name__} instead.")
            raise InvalidParameterError(msg)
        params = aggregate.params
        if candidate_map.params != params:
            msg = (f"The candidate map was made with different parameters than the counts: "
                   f"{candidate_map.params!r} and {params!r}.")
            raise IncompatibleParamsError(msg)
        gap = params.p11 - params.p01
        if not math.isfinite(gap) or abs(gap) < _MIN_SIGNAL:
            raise DecodeError(f"Information is lost (p11 - p01 = {gap:.3g}: below {_MIN_SIGNAL:.2g}, a share's "
                              "standard error exceeds 1 even with 2**63 reports). Cannot decode.")
        n_total = aggregate.total_reports
        if n_total == 0:
            raise DecodeError("The counts hold no reports. Cannot decode.")
        fitted = _decode_arrays(self, aggregate.counts, candidate_map.matrix, params)
        s = len(candidate_map)
        adjusted = fitted.pop("adjusted")
        prop = fitted.pop("proportion")
        prop_se = fitted.pop("prop_std_error")
        pvalue = fitted.pop("pvalue")
        group = fitted.pop("group")
        reported = fitted.pop("reported")
        significant = np.nan_to_num(adjusted, nan=1.0) <= self.significance_level if s else np.zeros(0, bool)
        _warn_groups(group, candidate_map.strings)
        fitted["seconds"] = time.perf_counter() - start
        return DecodeResult(
            strings=candidate_map.strings,
            estimate=prop * n_total,
            std_error=prop_se * n_total,
            proportion=prop,
            prop_std_error=prop_se,
            pvalue=pvalue,
            adjusted_pvalue=adjusted,
            significant=significant,
            group=group,
            n_reports=n_total,
            params=params,
            significance_level=float(self.significance_level),
            correction=self.correction,
            diagnostics=fitted,
            detected=significant if reported is None else np.asarray(reported, dtype=bool),
            estimator=self.estimator,
        )


def _warn_groups(group: npt.NDArray[np.int64], strings: Sequence[str]) -> None:
    shared = np.flatnonzero(group != np.arange(len(group)))  # members that are not their group's first
    if not len(shared):
        return
    members: dict[int, list[str]] = {}
    for i in np.unique(np.concatenate([shared, group[shared]])).tolist():  # every member of a group
        members.setdefault(int(group[i]), []).append(strings[i])
    groups = [v for v in members.values() if len(v) > 1]
    if groups:
        shown = "; ".join(", ".join(repr(s) for s in g[:4]) + (", ..." if len(g) > 4 else "") for g in groups[:5])
        more = f" (and {len(groups) - 5} more groups)" if len(groups) > 5 else ""
        msg = (f"{len(groups)} groups of candidates set the same bits in every cohort and cannot be told apart; "
               f"each member is given the estimate of its whole group: {shown}{more}.")
        warnings.warn(msg, IndistinguishableCandidatesWarning, stacklevel=3)


def _decode_arrays(dec: Decoder, counts: npt.NDArray[np.int64], matrix: sp.csc_matrix,
                   params: Params) -> dict[str, Any]:
    """The estimation proper, on arrays; returns per-candidate arrays and diagnostics."""
    k, h = params.num_bloombits, params.num_hashes
    s = matrix.shape[1]
    deb = est.debias(counts, params.p11, params.p01)
    x = est.select_rows(matrix, deb.rows)
    rep, zero = est.column_groups(x)
    is_zero = np.zeros(s, dtype=bool)
    is_zero[zero] = True
    uniq = np.flatnonzero((rep == np.arange(s)) & ~is_zero)
    xu = x if len(uniq) == s else x[:, uniq]  # usually every column: no copy
    n_rows, s_u = xu.shape
    weight = 1.0 / np.sqrt(deb.var)
    b = weight * deb.y
    diag: dict[str, Any] = {"cohorts_used": int(len(deb.rows) // k), "distinguishable": int(s_u)}
    reported_unexplained: tuple[float, float] | None = None  # when it differs from the fit's own

    orthogonal = bool(s_u == 0 or np.asarray((xu != 0).sum(axis=1)).max() <= 1)
    if orthogonal:
        coef, se_u, z, unexplained, unexplained_se, rss, n_par = _orthogonal_fit(xu, b, weight)
        diag.update(screened=False, lasso_alpha=None, selected=int(s_u), refits=0,
                    null_law="normal")  # closed form: independent normal estimates, no residual structure
    else:
        hbar = k * (1.0 - (1.0 - 1.0 / k) ** h)  # expected distinct bits of a non-candidate
        background = weight * (hbar / k)
        # One weighted copy of the design, with the non-candidate column last; the candidates'
        # columns are a view of it (large maps: one copy instead of three).
        a_full = est.weighted_design(xu, weight, background)
        a_u = est.leading_columns(a_full, s_u)
        norms2 = est.column_sq_norms(a_full)
        screen = dec.screening == "lasso" or (dec.screening == "auto" and s_u > _SCREEN_RATIO * n_rows)
        if screen:
            free = background if dec.model_unexplained else None
            penalty = dec.lasso_alpha
            if penalty == "cv":
                from ._penalty import cv_lasso_alpha

                penalty = cv_lasso_alpha(a_u, b, deb.rows // k, free=free, rule="1se",
                                         rng=check_rng(_DEFAULT_NULL_SEED if dec.rng is None else dec.rng))
            elif penalty == "bic":
                from ._penalty import bic_lasso_alpha

                penalty = bic_lasso_alpha(a_u, b, free=free)
            selected, lasso_alpha = est.lasso_screen(
                a_full if dec.model_unexplained else a_u, b, significance=float(dec.significance_level),
                n_tests=s_u, lasso_alpha=penalty, free_last=dec.model_unexplained,
                col_sq_norms=norms2 if dec.model_unexplained else norms2[:s_u])
        else:
            selected, lasso_alpha = np.arange(s_u), None
        in_model = a_u[:, selected] if screen else a_u  # (not screened: every column, no copy)
        bg_perp = est.orthogonal_part(in_model, background) if dec.model_unexplained else None
        use_bg = dec.model_unexplained and not est.in_span(in_model, background, perp=bg_perp)
        a = a_full  # when not use_bg, the non-candidate column is in no support: its coefficient stays 0
        extra = np.array([s_u], dtype=np.int64) if use_bg else np.zeros(0, np.int64)
        refits = 0
        rng = check_rng(_DEFAULT_NULL_SEED if dec.rng is None else dec.rng)
        while True:
            fit = est.fit_support(a, b, np.union1d(selected, extra), max_sum=1.0, use_dispersion=True,
                                  col_sq_norms=norms2)
            p_u, null = _pvalues(dec, fit, a, b, s_u, extra, weight, params, rng, screened=bool(screen),
                                 col_sq_norms=norms2)
            detected = est.adjust_pvalues(p_u, dec.correction, dec.significance_level) <= dec.significance_level
            new = np.setdiff1d(np.flatnonzero(detected), fit.support)
            # Stop when nothing new is detected, or every new one was in this fit already (its
            # constrained estimate is 0: refitting would give the same answer).
            if len(new) == 0 or refits >= dec.max_refits or np.all(np.isin(new, selected)):
                break
            selected = np.union1d(fit.support[fit.support < s_u], new)
            refits += 1
        coef, se_u, z = fit.coef[:s_u], fit.se[:s_u], fit.z[:s_u]
        diag.update(null_law=dec.null)
        if null is not None:
            diag.update(null_mean=null.mean, null_sd=null.sd, null_skewness=null.skewness, null_exact=null.exact)
        if use_bg:
            unexplained, unexplained_se = float(fit.coef[s_u]), float(fit.se[s_u])
        else:
            unexplained, unexplained_se = _one_minus_sum(fit)
        if use_bg:
            # What is reported is the *unconstrained* coefficient of the non-candidate column
            # with every candidate in the model (after screening: every detected one): unbiased,
            # where the fit's (shares >= 0) lets absent candidates soak up the mass (500 absent
            # candidates: 0.00 for a truth of 1).
            if screen:
                reported_unexplained = est.free_column_coefficient(a_u[:, np.flatnonzero(detected)], background, b,
                                                                   dispersion=fit.dispersion)
            else:
                reported_unexplained = est.free_column_coefficient(a_u, background, b, dispersion=fit.dispersion,
                                                                   perp=bg_perp)
        rss, n_par = fit.rss, len(fit.support)
        diag.update(screened=bool(screen), lasso_alpha=lasso_alpha, selected=int(len(selected)), refits=refits,
                    dispersion=fit.dispersion, modelled_unexplained=bool(use_bg))
    dof = max(n_rows - n_par, 1)
    std_resid_max = _max_std_residual(xu, b, weight, coef, bool(diag.get("modelled_unexplained", False)), params, unexplained)
    raw, raw_se = reported_unexplained or (unexplained, unexplained_se)
    diag.update(
        unexplained_mass=min(max(raw, 0.0), 1.0), unexplained_std_error=raw_se, unexplained_mass_unclipped=raw,
        chi2=float(rss), dof=int(dof), chi2_pvalue=float(stats.chi2.sf(rss, dof)),
        dispersion=float(diag.get("dispersion", max(1.0, rss / dof))), max_abs_std_residual=std_resid_max,
    )
    pvalue_u = p_u if not orthogonal else stats.norm.sf(z)
    adjusted_u = est.adjust_pvalues(pvalue_u, dec.correction, dec.significance_level)
    reported_u: npt.NDArray[np.bool_] | None = None
    if dec.estimator == "empirical-bayes" and s_u:
        coef, reported_u = _empirical_bayes_shares(coef, se_u, pvalue_u, 1.0 - max(unexplained, 0.0))
    # Spread back to every candidate: group members copy their representative.
    pos = np.full(s, -1, dtype=np.int64)
    pos[uniq] = np.arange(s_u)
    idx = pos[rep]
    valid = idx >= 0
    take = np.where(valid, idx, 0)

    def spread(values: Array, fill: float) -> Array:
        out = np.full(s, fill, dtype=np.float64)
        if s_u:
            out[valid] = values[take[valid]]
        return out

    diag.update(
        proportion=spread(coef, math.nan), prop_std_error=spread(se_u, math.nan),
        pvalue=spread(pvalue_u, math.nan), adjusted=spread(adjusted_u, math.nan),
        group=np.where(is_zero, np.arange(s), rep).astype(np.int64),
        reported=None if reported_u is None else spread(reported_u.astype(np.float64), 0.0) > 0.5,
    )
    return diag


def _empirical_bayes_shares(coef: Array, se: Array, pvalue: Array,
                            total_cap: float) -> tuple[Array, npt.NDArray[np.bool_]]:
    """Empirical-Bayes shares: the posterior mean of the candidates whose posterior median is positive.

    The calibrated z-score ``Phi^-1(1 - p)`` of each candidate is N(0, 1) when it is
    absent; :func:`rappor._estimation.posterior_effects` gives the posterior median and
    mean of its effect under the NPMLE prior.  A candidate is reported when its median
    is positive (probability of presence above ½), with effect ``mu`` = its posterior
    mean (measured: lower TV than the median in all six scenarios tried; the median of
    an estimated discrete prior jumps between its atoms).  The share is ``mu`` times the
    share per unit of z: ``coef / z`` where ``z >= 1`` and the least-squares share is
    positive, elsewhere ``kappa x SE`` with ``kappa`` the median ratio of the two over
    the former (the calibrated z and the Wald z differ by the null's scale).  If the
    shares add up to more than ``total_cap`` (1 minus the fitted unexplained mass)
    they are projected onto ``{w >= 0, sum w <= total_cap}`` in the
    Euclidean norm, which subtracts the same amount from each and drops those that
    reach 0 (Duchi et al. 2008, "Efficient projections onto the l1-ball", ICML): the
    excess comes from the many weak candidates that the prior pulls up towards its
    smallest positive atom, so it is taken evenly, not in proportion (measured: scaling
    in proportion took 0.03 off the largest share and raised TV from 0.29 to 0.44 on
    one Zipf collection).
    """
    z = stats.norm.isf(np.clip(np.nan_to_num(pvalue, nan=1.0), 1e-300, 1.0))
    _, median, mean = est.posterior_effects(z)
    mu = np.where(median > 0, mean, 0.0)
    finite = np.isfinite(coef) & np.isfinite(se)
    # Share per unit of z: coef / z where the z-score is well away from 0; elsewhere SE times
    # the typical ratio of the two scales (coef / z is unstable, even unbounded, near z = 0).
    se0 = np.nan_to_num(se)
    sure = finite & (coef > 0) & (z >= 1.0) & (se0 > 0)
    kappa = float(np.median(coef[sure] / (z[sure] * se0[sure]))) if sure.any() else 1.0
    per_z = np.where(sure, np.divide(coef, z, out=np.zeros_like(coef), where=sure), kappa * se0)
    share = mu * per_z
    share = np.where(finite, np.maximum(share, 0.0), coef)
    share[finite] = _project_capped_simplex(share[finite], max(total_cap, 0.0))
    return share, (share > 0) & finite


def _project_capped_simplex(w: Array, cap: float) -> Array:
    """Euclidean projection of ``w >= 0`` onto ``{x >= 0, sum x <= cap}``: ``max(w - tau, 0)``."""
    if w.size == 0 or not math.isfinite(cap) or not np.all(np.isfinite(w)) or float(np.sum(w)) <= cap:
        return w  # nothing to project, or no finite bound to project onto (degenerate counts)
    if cap <= 0.0:
        return np.zeros_like(w)
    u = np.sort(w)[::-1]
    css = np.cumsum(u) - cap
    ranks = np.arange(1, len(u) + 1)
    positive = np.flatnonzero(u - css / ranks > 0)
    rho = int(positive[-1]) if positive.size else 0  # empty only by rounding, when max(w) >> cap
    tau = float(css[rho]) / (rho + 1)
    out: Array = np.maximum(w - tau, 0.0)
    return out


def _pvalues(dec: Decoder, fit: est.Fit, a: sp.csc_matrix, b: Array, s_u: int, extra: npt.NDArray[np.int64],
             weight: Array, params: Params, rng: np.random.Generator,
             screened: bool, col_sq_norms: Array | None = None) -> tuple[Array, est.RandomStringNull | None]:
    """One-sided p-values of the ``s_u`` candidates' shares under the configured null.

    ``"random-strings"``: each candidate's statistic on the score scale,
    ``x_j = z_j phi / se_j`` -- the score ``a_j' r`` against the fitted residual off
    the support and, on it, ``a_j^perp' r_(-j)`` (Frisch-Waugh-Lovell: the score
    against the residual without ``j``) -- is compared with the law of a random
    string's score ``a_v' r`` (see :func:`rappor._estimation.random_string_null`).

    When the Lasso screened the candidates, the residual ``r`` of the null is that of
    the model with only the *detected* candidates (and the non-candidate column),
    iterated until the detections stop changing (at most 4 rounds): absent candidates
    that the screening let in because they overlap heavy non-candidate strings soak up
    the structure those leave in the residual, which makes the null too narrow exactly
    for them (measured: every null false positive at 300,000 reports was such a support
    member).  Without screening every candidate is in the model and ``r`` is the full
    fit's (the detected-only residual would hold the undetected true strings' signal:
    measured, 100 true candidates lost 2 of 7.8 detections).
    """
    z = fit.z[:s_u]
    if dec.null == "normal":
        return stats.norm.sf(z), None
    # Residuals are shorter than the noise by the fitted dimensions (E||r||^2 = (n - p) sigma^2):
    # rescale them as the Pearson dispersion does, so that a random string's score has the
    # variance an absent candidate's has.
    se = fit.se[:s_u]
    finite = np.isfinite(se) & (se > 0)
    x = np.zeros(s_u)
    x[finite] = z[finite] * fit.dispersion / se[finite]
    x[np.isinf(z)] = np.inf
    null_fit, used = fit, np.union1d(fit.support, extra)
    rounds = 4 if screened else 1
    for i in range(rounds):
        resid = (b - a @ null_fit.coef) * math.sqrt(len(b) / null_fit.dof)
        null = est.random_string_null(weight * resid, params.num_bloombits, params.num_hashes, rng)
        pvalue = null.sf(x)
        detected = est.adjust_pvalues(pvalue, dec.correction, dec.significance_level) <= dec.significance_level
        keep = np.union1d(np.flatnonzero(detected), extra)
        if i == rounds - 1 or np.array_equal(keep, used):
            break
        null_fit = est.fit_support(a, b, keep, max_sum=1.0, use_dispersion=False, col_sq_norms=col_sq_norms)
        used = keep
    return pvalue, null


def _orthogonal_fit(xu: sp.csc_matrix, b: Array, weight: Array) -> tuple[Array, Array, Array, float, float, float, int]:
    """Closed form when every row holds at most one candidate (booleans, identity maps).

    Each share is the inverse-variance weighted mean of its rows' debiased shares; it is
    left unclamped (it may be negative, as decode.R's estimates), so it is unbiased.
    The unexplained mass is ``1 - sum`` of the shares.  Standard errors use the known
    binomial variances.
    """
    a = est.scale_rows(xu, weight)
    norm2 = est.column_sq_norms(a)
    coef = (a.T @ b) / norm2
    resid = b - a @ coef
    rss = float(resid @ resid)
    se = np.sqrt(1.0 / norm2)  # known binomial variance (no dispersion: few degrees of freedom)
    z = coef / se
    return coef, se, z, float(1.0 - coef.sum()), float(np.sqrt((se**2).sum())), rss, len(coef)


def _one_minus_sum(fit: est.Fit) -> tuple[float, float]:
    total = float(fit.coef.sum())
    var = float(fit.cov.sum()) if fit.cov.size else 0.0
    return 1.0 - total, math.sqrt(max(var, 0.0))


def _max_std_residual(xu: sp.csc_matrix, b: Array, weight: Array, coef: Array, with_bg: bool, params: Params,
                      unexplained: float) -> float:
    """Largest absolute whitened residual of the final fit (about 3-4 when the model fits)."""
    if len(b) == 0:
        return math.nan
    fitted = weight * (xu @ np.nan_to_num(coef))
    if with_bg:
        k, h = params.num_bloombits, params.num_hashes
        fitted = fitted + weight * unexplained * k * (1.0 - (1.0 - 1.0 / k) ** h) / k
    return float(np.max(np.abs(b - fitted)))
