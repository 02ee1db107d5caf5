"""What a decode returns (private; public through :mod:`rappor.analysis.decoder`).

This module owns :class:`DecodeResult` (per-candidate estimates, tests and intervals,
the table, ``results.csv`` and the summary) and :class:`DecodeDiagnostics` (the
fit's diagnostics: unexplained mass, residual check, screening, null law, time).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..._util import tails
from ..._util.lazy import import_optional
from ..._util.results import ConfidenceInterval
from ..._util.table import TextTable, labelled_table
from ..._util.validation import check_options, check_probability
from ...params import Params
from ._intervals import (detection_cutoffs, fcr_critical_value, selective_interval, truncated_normal_mean_inverse,
                         wald_interval)
from ._problem import Array, IntArray

#: The columns of :meth:`DecodeResult.table_array`: google/rappor's results.csv columns with
#: ``fitted_proportion`` (the test's least-squares share, which ``std_error``, ``prop_std_error``,
#: the interval and the p-values are about) after ``proportion``, then the test's answers.
_TABLE_COLUMNS = ("string", "estimate", "std_error", "proportion", "fitted_proportion", "prop_std_error",
                  "prop_low_95", "prop_high_95", "pvalue", "adjusted_pvalue", "significant", "detected")
#: What ``proportion`` is, by ``shares``.
SHARE_ESTIMATORS = {"all": "empirical-Bayes", "detected": "least-squares"}
_ADJUST = ("none", "fcr", "selective")
#: Candidates named in ``repr(DecodeResult)``.
_REPR_SHOWN = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeDiagnostics:
    """How the fit went: unexplained mass, residuals, screening, null law and its floor, time.

    Every field has a "not known" default (``nan`` or ``None``), which is what a
    :class:`DecodeResult` built by hand carries.

    Attributes
    ----------
    cohorts_used : int or None
        Cohorts with at least one report (the others give no rows).
    distinguishable : int or None
        Candidates that set a bit and differ from every other candidate in some cohort
        with reports: the number of tests.
    unexplained_mass, unexplained_std_error : float
        Share of the reports whose value the candidates do not explain, clipped to
        ``[0, 1]``, and its standard error (see :meth:`DecodeResult.summary`).
    unexplained_mass_unclipped : float
        The same before clipping.
    modelled_unexplained : bool
        Whether the fit had the non-candidate column (``Decoder(model_unexplained=True)``
        and the column not in the span of the candidates').
    chi2, dof, chi2_pvalue : float, int or None, float
        Residual sum of squares of the whitened fit, its degrees of freedom (rows less
        fitted parameters) and the chi-square tail probability of the fit.
    dispersion : float
        Pearson dispersion ``max(1, chi2 / dof)``, the factor applied to the variances.
    max_abs_std_residual : float
        Largest absolute whitened residual (about 3-4 when the model fits).
    residuals : ndarray of shape (num_cohorts, num_bloombits) or None
        Whitened residual of every (cohort, bit) under the final least-squares fit
        (every candidate's share and the non-candidate column's coefficient): the
        debiased share less the fitted one, divided by its standard deviation.  Their
        sum of squares is ``chi2``; each is about N(0, 1) when the model fits, and a
        cohort's bits far above +3 point at strings missing from the candidate list.
        ``nan`` for cohorts without reports; read-only.  The same figure as
        :func:`rappor.analysis.fit_residuals` computes from the public result.
    residual_skewness, residual_skewness_se : float
        Skewness of the finite ``residuals`` and its standard error ``sqrt(6 / n)``
        (positive when strings are missing from the list; nan below 3 residuals).
    weight_rates : ndarray of shape (num_cohorts, num_bloombits) or None
        The report rate at which each row's binomial variance (its weight) was taken: the
        rate of its cohort's other bits, or the first fit's where that moves a variance by
        more than 5% (``docs/decoder.md``, Method 1).  ``nan`` for cohorts without reports;
        read-only.
    pvalue_floor : float or None
        The smallest p-value the random-string null can give on this decode (None for
        the normal null): no random string scores beyond about the top score of every
        cohort, reached with probability about ``(h! / k^h)^m``, so candidates beyond
        it all get this p-value and tie (``docs/decoder.md``, Method 8, "Its floor").
        A p-value equal to it means "beyond any random string", not equal evidence.
    screened : bool or None
        Whether the Lasso screened the candidates.
    lasso_alpha : float or None
        Its penalty, on the whitened unit-norm scale (None without screening).
    selected : int or None
        Candidates in the final model (all distinguishable ones without screening).
    refits : int or None
        Rounds of adding significant left-out candidates and refitting.
    null_law : str or None
        Law of the test statistics: ``"random-strings"`` or ``"normal"`` (orthogonal
        designs are always tested against the normal).
    null_mean, null_sd, null_skewness : float or None
        Mean, standard deviation and skewness of a random string's score (random-string
        null only).
    null_exact : bool or None
        Whether the random-string null enumerated every hash pattern (``k**h <= 4096``).
    seconds : float
        Wall time of :meth:`Decoder.decode`, first-use imports of SciPy and scikit-learn
        included.
    """

    cohorts_used: int | None = None
    distinguishable: int | None = None
    unexplained_mass: float = math.nan
    unexplained_std_error: float = math.nan
    unexplained_mass_unclipped: float = math.nan
    modelled_unexplained: bool = False
    chi2: float = math.nan
    dof: int | None = None
    chi2_pvalue: float = math.nan
    dispersion: float = math.nan
    max_abs_std_residual: float = math.nan
    screened: bool | None = None
    lasso_alpha: float | None = None
    selected: int | None = None
    refits: int | None = None
    null_law: str | None = None
    null_mean: float | None = None
    null_sd: float | None = None
    null_skewness: float | None = None
    null_exact: bool | None = None
    seconds: float = math.nan
    residuals: Array | None = field(default=None, compare=False)
    pvalue_floor: float | None = None
    residual_skewness: float = math.nan
    residual_skewness_se: float = math.nan
    weight_rates: Array | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("residuals", "weight_rates"):
            if getattr(self, name) is not None:
                arr = np.array(getattr(self, name), dtype=np.float64, copy=True)
                arr.flags.writeable = False
                object.__setattr__(self, name, arr)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class DecodeResult:
    """Estimated frequencies of the candidate strings (one entry per candidate, input order).

    Every array attribute, :meth:`confidence_interval` and :meth:`table` are indexed
    the same way: entry ``i`` is candidate ``strings[i]``.  ``results.csv``
    (:func:`rappor.formats.write_results`) lists the rows of :meth:`ranking` instead, largest estimate first:
    with ``shares="all"`` (default) every candidate with a positive share (or detected)
    and a ``detected`` column, so that its ``proportion`` column sums to the estimated
    distribution; with ``shares="detected"`` the detected strings, as google/rappor's
    decoder does.

    Attributes
    ----------
    strings : tuple of str
        The candidates.
    estimate, std_error : ndarray of shape (n_candidates,)
        Estimated number of reports of each string and its standard error
        (``proportion * n_reports``).
    proportion, prop_std_error : ndarray of shape (n_candidates,)
        Estimated share of reports and the standard error of the test's least-squares
        share.  With ``shares="all"`` (default) the empirical-Bayes share of every
        candidate (:mod:`rappor.analysis.decoder._shares`), made for the total variation of the
        whole distribution; with ``shares="detected"`` the least-squares share
        (:attr:`fitted_proportion`), where candidates outside the fitted support have
        share 0 and the standard error they would have if added.
        ``nan`` for a candidate that sets no bit of any cohort with reports; ``inf``
        where the counts cannot tell a candidate's share apart from the others' (e.g.
        a single report).
    pvalue : ndarray of shape (n_candidates,)
        One-sided p-value of "share > 0", before the multiple-testing adjustment, under
        the decoder's ``null`` (by default the random-string null).
    adjusted_pvalue : ndarray of shape (n_candidates,)
        After the adjustment named by ``correction``.
    significant : ndarray of bool, shape (n_candidates,)
        The test's answer: ``adjusted_pvalue <= significance_level``.  Its errors are
        controlled: with ``correction="fdr"`` (default) the expected share of absent
        strings among them is at most ``significance_level``.
    detected : ndarray of bool, shape (n_candidates,)
        The candidates reported as present: the same as :attr:`significant` for the
        decoder's results (the removed ``estimator="empirical-bayes"`` made it a
        posterior-median rule instead, whose count swung from 5 to 100 strings over 20
        seeds of the decoder benchmark's scenario: ``docs/notes/decoder-rounds.md``, "Empirical Bayes, removed").
    group : ndarray of int, shape (n_candidates,)
        Index of the first candidate with exactly the same bits in every cohort (its own
        index when unique).  Members of a group share one estimate: that of the group.
    n_reports : int
        Reports decoded.
    params : Params
    significance_level, correction, estimator, shares :
        The test configuration, estimator and shares used.
    fitted_proportion : ndarray of shape (n_candidates,)
        The least-squares shares of the test's fit, which the p-values and the
        confidence intervals are about (``proportion`` itself with ``shares="detected"``).
    diagnostics : DecodeDiagnostics
        Unexplained mass and its standard error, residual chi-square, dispersion,
        screening, null law and timing (see :meth:`summary`).
    """

    strings: tuple[str, ...]
    estimate: Array
    std_error: Array
    proportion: Array
    prop_std_error: Array
    pvalue: Array
    adjusted_pvalue: Array
    significant: npt.NDArray[np.bool_]
    group: IntArray
    n_reports: int
    params: Params
    significance_level: float
    correction: str
    diagnostics: DecodeDiagnostics = field(default_factory=DecodeDiagnostics)
    detected: npt.NDArray[np.bool_] = None  # type: ignore[assignment]  # None -> significant
    estimator: str = "least-squares"
    shares: str = "detected"
    fitted_proportion: Array = None  # type: ignore[assignment]  # None -> proportion

    def __post_init__(self) -> None:
        if self.detected is None:
            object.__setattr__(self, "detected", self.significant)
        if self.fitted_proportion is None:
            object.__setattr__(self, "fitted_proportion", self.proportion)
        for name in ("estimate", "std_error", "proportion", "prop_std_error", "pvalue", "adjusted_pvalue",
                     "significant", "detected", "group", "fitted_proportion"):
            arr = np.array(getattr(self, name), copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.strings)

    def __repr__(self) -> str:
        top = self.ranking()[:_REPR_SHOWN].tolist()
        shown = ", ".join(f"{_short(self.strings[i])}: {self.proportion[i]:.4g}" for i in top)
        n_rows = len(self.ranking())
        more = f", ... {n_rows - len(top)} more" if n_rows > len(top) else ""
        return (f"DecodeResult({len(self.strings):,} candidates, {int(self.detected.sum()):,} detected, "
                f"{self.n_reports:,} reports;\n"
                f"             estimator={self.estimator!r}, correction={self.correction!r}, "
                f"significance_level={self.significance_level:g};\n"
                f"             largest {'detected ' if self.shares == 'detected' else ''}shares {{{shown}{more}}})")

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        """Candidates that cannot be told apart (groups of two or more), in input order."""
        out: dict[int, list[str]] = {}
        for i, g in enumerate(self.group.tolist()):
            out.setdefault(g, []).append(self.strings[i])
        return tuple(tuple(v) for v in out.values() if len(v) > 1)

    @property
    def share_estimator(self) -> str:
        """What :attr:`proportion` holds: ``"empirical-Bayes"`` (``shares="all"``) or ``"least-squares"``.

        :attr:`estimator` is that of the test (:attr:`fitted_proportion`, the p-values,
        the standard errors and the intervals), least squares in both cases.
        """
        return SHARE_ESTIMATORS.get(self.shares, self.estimator)

    @property
    def table_interval(self) -> Literal["selective", "fcr"]:
        """The ``adjust`` of the ``prop_*_95`` columns by default: ``"selective"`` (every
        result holds least-squares estimates since the empirical-Bayes estimator was removed)."""
        return "selective"

    def confidence_interval(self, confidence_level: float = 0.95, *,
                            kind: Literal["proportion", "count"] = "proportion",
                            adjust: Literal["none", "fcr", "selective"] = "none") -> ConfidenceInterval:
        """Two-sided Wald interval ``estimate ± z * std_error``, clipped to ``[0, 1]`` (or ``[0, N]``).

        The interval is that of the test's least-squares share (:attr:`fitted_proportion`);
        with ``shares="all"`` the reported share, shrunk towards 0, usually lies inside it.

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
            having been detected (:func:`rappor.analysis.decoder._intervals.selective_interval`:
            the truncated-normal pivot of the Wald z-score ``share / SE`` with the
            selection threshold between the largest detected and the smallest
            undetected p-value): about the Wald width for strong strings, much wider
            only near the detection threshold; a detected string within 0.1 SE of the
            threshold, or with share 0, gets the FCR interval; least-squares estimates
            only.  Undetected candidates keep the marginal interval.

        Returns
        -------
        ConfidenceInterval
            ``low`` and ``high``, arrays of shape (n_candidates,), in input order.
        """
        owner = "DecodeResult.confidence_interval"
        level = check_probability(confidence_level, "confidence_level", owner, open_low=True, open_high=True)
        check_options(kind, "kind", owner, ("proportion", "count"))
        check_options(adjust, "adjust", owner, _ADJUST)
        if adjust == "selective":
            low, high = selective_interval(self.fitted_proportion, self.prop_std_error, self.pvalue, self.detected,
                                           _first_of_group(self.group), level, self._fcr_critical_value(level))
        else:
            z = np.full(len(self.strings), tails.two_sided_z(level))
            if adjust == "fcr":
                z[self.detected] = self._fcr_critical_value(level)
            low, high = wald_interval(self.fitted_proportion, self.prop_std_error, z)
        if kind == "count":
            low, high = low * self.n_reports, high * self.n_reports
        return ConfidenceInterval(low=low, high=high)

    def selection_excess(self) -> Array:
        """How far each detected candidate's least-squares share is expected to exceed its true share, given its detection.

        A candidate is detected when its estimate is high, so a detected one near the
        threshold was probably lucky: its share overstates the truth (the "winner's curse").
        Read, as for the selective intervals, as ``z = share / se`` observed given ``z > c``
        (:func:`~rappor.analysis.decoder._intervals.detection_cutoffs`), the excess is
        ``se (z - mu)`` with ``mu >= 0`` the effect whose truncated normal law has mean ``z``
        (:func:`~rappor.analysis.decoder._intervals.truncated_normal_mean_inverse`): about 0
        far above the threshold, up to the whole share at it.  Candidates are taken one at a
        time (their estimates' correlations are ignored).

        Returns
        -------
        ndarray of shape (n_candidates,)
            ``fitted_proportion`` units; 0 for the candidates that were not detected (and
            for those without a finite Wald z).
        """
        share = np.asarray(self.fitted_proportion, dtype=np.float64)
        se = np.asarray(self.prop_std_error, dtype=np.float64)
        cutoff = detection_cutoffs(share, se, np.asarray(self.pvalue, dtype=np.float64), self.detected,
                                   _first_of_group(self.group))
        out = np.zeros(share.shape)
        sel = np.isfinite(cutoff)
        if sel.any():
            z = share[sel] / se[sel]
            out[sel] = se[sel] * (z - truncated_normal_mean_inverse(z, cutoff[sel]))
        return out

    def _fcr_critical_value(self, level: float) -> float:
        n_tests = self.diagnostics.distinguishable
        n_sel = int(np.count_nonzero(self.detected[_first_of_group(self.group)]))
        return fcr_critical_value(level, n_sel, len(self.strings) if n_tests is None else n_tests)

    def ranking(self, all: bool = False) -> IntArray:  # noqa: A002
        """Indices of the rows of ``results.csv``, largest estimate first.

        The rows are the candidates with a positive share or detected with
        ``shares="all"`` (default: a detected string whose share is 0 still has its row),
        the detected candidates with ``shares="detected"``.  Ties keep input
        order; a ``nan`` estimate comes last.  ``result.table_array()[result.ranking()]`` is the
        table as ``results.csv`` lists it.

        Parameters
        ----------
        all : bool, default=False
            Every candidate instead.
        """
        rows = self.detected if self.shares == "detected" else (np.nan_to_num(self.proportion) > 0) | self.detected
        idx = np.arange(len(self.strings)) if all else np.flatnonzero(rows)
        key = np.where(np.isnan(self.estimate[idx]), -np.inf, self.estimate[idx])
        out: IntArray = idx[np.lexsort((idx, -key))]
        return out

    def table(self, *, adjust: Literal["fcr", "none", "selective"] | None = None) -> Any:
        """Every candidate, in input order, as a labelled table: a :class:`pandas.DataFrame` where
        pandas is installed, else a :class:`~rappor._util.table.TextTable` (which prints aligned).

        The columns and rows of :meth:`table_array` (see there); ``table()`` is for reading
        and display, :meth:`table_array` the structured array for code.  In a notebook the
        result itself shows the rows of ``results.csv`` (``_repr_html_``).
        """
        return labelled_table(self.table_array(adjust=adjust))

    def _repr_html_(self) -> str:
        """The result in a notebook: its one-line description and the first rows of ``results.csv``."""
        head = html.escape(repr(self).split(";")[0] + ")")
        return f"<p>{head}</p>\n" + TextTable(self.table_array()[self.ranking()])._repr_html_()

    def table_array(self, *, adjust: Literal["fcr", "none", "selective"] | None = None) -> np.ndarray:
        """Every candidate, in input order, as a numpy structured array (one row per candidate).

        Row ``i`` is ``strings[i]``, as in every array attribute and in
        :meth:`confidence_interval`.  Columns: google/rappor's ``string, estimate,
        std_error, proportion``, then ``fitted_proportion`` (the test's least-squares
        share: ``proportion`` itself with ``shares="detected"``), google/rappor's
        ``prop_std_error, prop_low_95, prop_high_95`` (of ``fitted_proportion``), then
        ``pvalue`` (unadjusted), ``adjusted_pvalue``, ``significant`` and ``detected``.
        Select and sort it like a data frame: ``t[t["detected"]]``,
        ``t[result.ranking()]`` (the rows of ``results.csv``), ``t["proportion"]``;
        :meth:`table` or :meth:`to_pandas` makes a pandas data frame.

        Parameters
        ----------
        adjust : {"selective", "fcr", "none"} or None, default=None
            Interval of the ``prop_*_95`` columns (see :meth:`confidence_interval`):
            conditional on detection, false-coverage-rate adjusted, or the plain
            marginal Wald interval.  Both adjusted kinds cover the truth of detected
            strings about 95% of the time even though they were selected for being
            large; the selective one is about half as wide with many candidates
            (measured in ``docs/decoder.md``).  ``None``: :attr:`table_interval`.
        """
        ci = self.confidence_interval(0.95, adjust=self.table_interval if adjust is None else adjust)
        width = max((len(s) for s in self.strings), default=1)
        dtype = [("string", f"U{max(width, 1)}")]
        dtype += [(name, "f8") for name in _TABLE_COLUMNS[1:-2]] + [("significant", "?"), ("detected", "?")]
        out = np.empty(len(self.strings), dtype=dtype)
        out["string"] = self.strings
        for name in ("estimate", "std_error", "proportion", "fitted_proportion", "prop_std_error", "pvalue",
                     "adjusted_pvalue", "significant", "detected"):
            out[name] = getattr(self, name)
        out["prop_low_95"] = ci.low
        out["prop_high_95"] = ci.high
        return out

    def to_pandas(self, *, adjust: Literal["fcr", "none", "selective"] | None = None) -> Any:
        """:meth:`table` as a :class:`pandas.DataFrame` (needs pandas, which rappor does not install)."""
        pd = import_optional("pandas", "DecodeResult.to_pandas", note=" (or use DecodeResult.table())")
        return pd.DataFrame(self.table_array(adjust=adjust))

    def summary(self, all: bool = False) -> dict[str, Any]:  # noqa: A002
        """A JSON-ready summary: counts, masses, residual diagnostics, privacy and timing.

        ``all``: the rows are every candidate, as ``results.csv`` written with ``all=True``
        (``rappor decode --all``).

        Keys: ``candidates``, ``detected``, ``rows`` (rows of ``results.csv``: with
        ``shares="all"`` the candidates with a positive share or detected), ``reports``,
        ``allocated_mass`` (sum of the ``proportion`` column over
        those rows, a group of indistinguishable candidates once), ``unexplained_mass`` and ``unexplained_std_error`` (share of
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
        ``estimator`` (of the test), ``shares``, ``share_estimator`` (of ``proportion``:
        :attr:`share_estimator`), ``null`` (law of the test statistics and, for the random-string
        null, the mean, sd and skewness of a random string's score, whether its
        patterns were enumerated exactly and ``pvalue_floor``, the smallest p-value it
        can give), ``screening``, ``seconds``.  The per-bit residuals are in
        :attr:`diagnostics` (``residuals``), not in the summary.
        """
        d = self.diagnostics
        rows = np.zeros(len(self.strings), dtype=bool)
        rows[self.ranking(all)] = True
        allocated = float(np.nansum(np.where(rows, self.proportion, 0.0)[_first_of_group(self.group)]))
        return {
            "candidates": len(self.strings),
            "detected": int(self.detected.sum()),
            "rows": int(rows.sum()),
            "reports": int(self.n_reports),
            "allocated_mass": allocated,
            "unexplained_mass": d.unexplained_mass,
            "unexplained_std_error": d.unexplained_std_error,
            "unexplained_mass_unclipped": d.unexplained_mass_unclipped,
            "groups": [list(g) for g in self.groups],
            "residual": {"chi2": d.chi2, "dof": math.nan if d.dof is None else d.dof, "chi2_pvalue": d.chi2_pvalue,
                         "dispersion": d.dispersion, "max_abs_std_residual": d.max_abs_std_residual},
            "cohorts_used": d.cohorts_used,
            "epsilon_one": _json_float(self.params.epsilon_one),
            "epsilon_inf": _json_float(self.params.epsilon_inf),
            "params": self.params.as_dict(),
            "significance_level": self.significance_level,
            "correction": self.correction,
            "estimator": self.estimator,
            "shares": self.shares,
            "share_estimator": self.share_estimator,
            "null": {"law": d.null_law, "mean": d.null_mean, "sd": d.null_sd, "skewness": d.null_skewness,
                     "exact": d.null_exact, "pvalue_floor": d.pvalue_floor},
            "screening": {"screened": d.screened, "lasso_alpha": d.lasso_alpha, "selected": d.selected,
                          "refits": d.refits},
            "seconds": d.seconds,
        }


def _short(text: str, width: int = 32) -> str:
    """``repr(text)``, cut to about ``width`` characters."""
    return repr(text) if len(text) <= width else repr(text[: width - 3] + "...")


def _json_float(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _first_of_group(group: IntArray) -> npt.NDArray[np.bool_]:
    first: npt.NDArray[np.bool_] = group == np.arange(len(group))
    return first
