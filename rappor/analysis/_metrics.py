"""Accuracy of a decoded collection against the truth (simulations and regression tests).

The metrics are those of google/rappor's regression suite (``tests/compare_dist.R``,
``tests/regtest.sh``), defined over proportions of reports:

* **total variation distance** ``TV = 1/2 sum_s |e_s - t_s|`` over every true string and
  every candidate, where ``t_s`` is the true share of string ``s`` (0 for decoys) and
  ``e_s`` the estimated share if ``s`` is a row of results.csv (by default every candidate with a
  share; ``evaluate``'s ``rows``, else the detected ones), else 0 ("missing = 0");
* **detected**, **false positives** (detected, never reported) and **false negatives**
  (reported, in the candidate list, not detected);
* **allocated mass**, the sum of those estimated shares, and the **unallocated
  mass** ``1 - allocated``;
* the **unexplained mass**: the decoder's own estimate of the share of reports the
  candidates do not explain (``DecodeResult.summary()["unexplained_mass"]``, the same
  name and number everywhere: ``rappor simulate``'s printout, ``metrics.json``, the HTML
  report), with its standard error, against the **true unexplained mass**, the true
  share of reports whose value is not a candidate at all;
* **interval coverage**: the fraction of candidates whose confidence interval for the
  share contains the true share;
* the **smallest detected** and the **largest missed** true share (missed among the
  candidates), which bracket the detection threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..collect._aggregate import Aggregate
from ..collect._design import CandidateMap
from ..exceptions import IncompatibleParamsError, InvalidParameterError

__all__ = ["METRIC_MEANINGS", "FitResiduals", "Metrics", "bit_residuals", "evaluate", "evaluate_result",
           "fit_residuals"]

#: One line per :class:`Metrics` field: what it means (the HTML report shows them beside the values).
METRIC_MEANINGS = {
    "total_variation": "1/2 sum |estimated - true share| over every string; undetected strings count as 0",
    "n_true": "distinct strings reported at least once",
    "n_candidates": "candidates decoded",
    "n_detected": "candidates reported as present",
    "true_positives": "detected and reported",
    "false_positives": "detected but never reported",
    "false_negatives": "reported, in the candidate list, not detected",
    "missing_candidates": "reported strings absent from the candidate list",
    "allocated_mass": "sum of results.csv's proportion column (its rows: by default every candidate with a share; "
                      "candidates that cannot be told apart share one estimate, counted once)",
    "unallocated_mass": "1 - allocated_mass (undetected candidates included)",
    "unexplained_mass": "the decoder's estimate of the share the candidates do not explain "
                        "(summary()['unexplained_mass'])",
    "unexplained_std_error": "standard error of unexplained_mass",
    "true_unexplained_mass": "true share of reports whose value is not a candidate",
    "coverage": "share of candidates whose 95% interval (results.csv's prop_low_95 to prop_high_95) holds the "
                "true share",
    "smallest_detected": "smallest true share among detected strings",
    "largest_missed": "largest true share among candidates reported but not detected",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Metrics:
    """How well a decode recovered the true distribution (see :func:`evaluate`).

    Attributes
    ----------
    total_variation : float
        ``1/2 sum |e_s - t_s|`` in ``[0, 1]``, undetected strings estimated as 0.
    n_true : int
        Distinct strings reported at least once.
    n_candidates : int
        Candidates decoded.
    n_detected : int
        Candidates the decoder flagged as detected (significant).
    true_positives, false_positives, false_negatives : int
        Detected and reported; detected but never reported; reported, a candidate, not detected.
    missing_candidates : int
        Reported strings absent from the candidate list (undetectable).
    allocated_mass : float
        Sum of the estimated shares of the rows (``rows``; default: the detected strings).
    unallocated_mass : float
        ``1 - allocated_mass``: the share no detected string accounts for (undetected
        candidates included).
    unexplained_mass, unexplained_std_error : float
        The decoder's estimate of the share of reports the candidates do not explain,
        and its standard error (``DecodeResult.summary()["unexplained_mass"]`` and
        ``["unexplained_std_error"]``, i.e. ``DecodeResult.diagnostics.unexplained_mass``;
        nan if not given).
    true_unexplained_mass : float
        True share of reports whose value is not a candidate.
    coverage : float
        Fraction of candidates whose interval contains the true share (nan without intervals).
    smallest_detected : float
        Smallest true share among detected strings (nan if none).
    largest_missed : float
        Largest true share among candidates that were reported but not detected (nan if none).
    """

    total_variation: float
    n_true: int
    n_candidates: int
    n_detected: int
    true_positives: int
    false_positives: int
    false_negatives: int
    missing_candidates: int
    allocated_mass: float
    unallocated_mass: float
    unexplained_mass: float
    unexplained_std_error: float
    true_unexplained_mass: float
    coverage: float
    smallest_detected: float
    largest_missed: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (``nan`` becomes ``None``)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if isinstance(value, float) and math.isnan(value):
                value = None
            out[key] = value
        return out


def _float_array(values: npt.ArrayLike, name: str, size: int) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape != (size,):
        msg = f"The {name!r} parameter of evaluate must have one entry per candidate ({size}). Got {arr.shape[0]} instead."
        raise InvalidParameterError(msg)
    return arr


def evaluate(truth: Mapping[str, int], strings: Sequence[str], proportion: npt.ArrayLike, *,
             detected: npt.ArrayLike, low: npt.ArrayLike | None = None, high: npt.ArrayLike | None = None,
             unexplained_mass: float = math.nan, unexplained_std_error: float = math.nan,
             rows: npt.ArrayLike | None = None) -> Metrics:
    """Score estimated shares of candidate strings against the true report counts.

    Parameters
    ----------
    truth : mapping of str to int
        True number of reports of each string (strings with 0 may be left out).
    strings : sequence of str
        The decoded candidates.
    proportion : array-like of float, shape (len(strings),)
        Estimated share of reports of each candidate.
    detected : array-like of bool, shape (len(strings),)
        Which candidates the decoder reports as present.
    low, high : array-like of float, shape (len(strings),), optional
        Confidence interval for each share; without them ``coverage`` is nan.
    unexplained_mass, unexplained_std_error : float, default=nan
        The decoder's estimate of the mass the candidates do not explain and its standard
        error, reported alongside the truth.
    rows : array-like of bool, shape (len(strings),), optional
        The candidates whose shares make the estimated distribution (the total variation
        and the allocated mass), the others counting as 0: the rows of ``results.csv``.
        Default: the detected ones.

    Returns
    -------
    Metrics

    Examples
    --------
    >>> m = evaluate({"a": 60, "b": 30, "c": 10}, ["a", "b", "x"], [0.58, 0.33, 0.02],
    ...              detected=[True, True, False])
    >>> round(m.total_variation, 3), m.false_negatives, m.missing_candidates
    (0.075, 0, 1)
    """
    names = list(strings)
    s = len(names)
    est = _float_array(proportion, "proportion", s)
    det = np.asarray(detected, dtype=bool).reshape(-1)
    if det.shape != (s,):
        msg = f"The 'detected' parameter of evaluate must have one entry per candidate ({s}). Got {det.shape[0]} instead."
        raise InvalidParameterError(msg)
    counts = {key: int(value) for key, value in truth.items()}
    if any(value < 0 for value in counts.values()):
        raise InvalidParameterError("The 'truth' parameter of evaluate must hold counts >= 0.")
    total = sum(counts.values())
    if total <= 0:
        raise InvalidParameterError("The 'truth' parameter of evaluate must hold at least one report.")
    true_share = np.array([counts.get(name, 0) / total for name in names], dtype=np.float64)
    reported = true_share > 0
    candidate_set = set(names)
    missing = {key: c for key, c in counts.items() if c > 0 and key not in candidate_set}
    missing_mass = sum(missing.values()) / total

    kept = det if rows is None else np.asarray(rows, dtype=bool).reshape(-1)
    if kept.shape != (s,):
        msg = f"The 'rows' parameter of evaluate must have one entry per candidate ({s}). Got {kept.shape[0]} instead."
        raise InvalidParameterError(msg)
    estimate = np.where(kept, est, 0.0)
    tv = 0.5 * (float(np.abs(estimate - true_share).sum()) + missing_mass)
    allocated = float(estimate.sum())

    coverage = math.nan
    if low is not None and high is not None:
        lo, hi = _float_array(low, "low", s), _float_array(high, "high", s)
        if s:
            coverage = float(np.mean((lo <= true_share) & (true_share <= hi)))

    hits = det & reported
    misses = ~det & reported
    return Metrics(
        total_variation=tv,
        n_true=sum(1 for c in counts.values() if c > 0),
        n_candidates=s,
        n_detected=int(det.sum()),
        true_positives=int(hits.sum()),
        false_positives=int((det & ~reported).sum()),
        false_negatives=int(misses.sum()),
        missing_candidates=len(missing),
        allocated_mass=allocated,
        unallocated_mass=1.0 - allocated,
        unexplained_mass=float(unexplained_mass),
        unexplained_std_error=float(unexplained_std_error),
        true_unexplained_mass=missing_mass,
        coverage=coverage,
        smallest_detected=float(true_share[hits].min()) if hits.any() else math.nan,
        largest_missed=float(true_share[misses].max()) if misses.any() else math.nan,
    )


def _detected_mask(result: Any) -> npt.NDArray[np.bool_]:
    for name in ("detected", "significant"):
        value = getattr(result, name, None)
        if value is not None and not callable(value):
            return np.asarray(value, dtype=bool)
    msg = "The 'result' parameter of evaluate_result must have a 'detected' or 'significant' attribute."
    raise InvalidParameterError(msg)


def _diagnostic(result: Any, name: str, default: Any = None) -> Any:
    """``result.diagnostics.<name>`` (a :class:`~rappor.analysis.decoder.DecodeDiagnostics`), or the key of a
    diagnostics mapping (duck-typed results), or ``default``."""
    diagnostics = getattr(result, "diagnostics", None)
    if isinstance(diagnostics, Mapping):
        return diagnostics.get(name, default)
    return getattr(diagnostics, name, default)


def evaluate_result(result: Any, truth: Mapping[str, int], *, confidence_level: float = 0.95) -> Metrics:
    """:func:`evaluate` a :class:`~rappor.analysis.decoder.DecodeResult` (or any object with its fields).

    Uses ``result.strings``, ``result.proportion``, ``result.detected`` (or
    ``result.significant``), the rows of its ``results.csv`` (``result.ranking()``, when
    it has one: the distribution is that of every candidate with a positive share by
    default, ``shares="all"``; a group of candidates that cannot be told apart, which
    share one estimate, counts once, as in ``summary()["allocated_mass"]``), the unexplained mass and its standard error of
    ``result.diagnostics`` (those of ``result.summary()``) and, when available, the
    share interval of ``result.confidence_interval(confidence_level)``, scaled to
    shares when it is given in reports (``result.n_reports``).
    """
    strings = list(result.strings)
    proportion = np.asarray(result.proportion, dtype=np.float64)
    low = high = None
    interval = getattr(result, "confidence_interval", None)
    if callable(interval):
        ci = _share_interval(result, confidence_level)
        if ci is not None:
            low, high = ci
    def number(key: str) -> float:
        value = _diagnostic(result, key)
        return math.nan if value is None else float(value)

    rows = None
    ranking = getattr(result, "ranking", None)
    if callable(ranking):
        rows = np.zeros(len(strings), dtype=bool)
        rows[np.asarray(ranking(), dtype=np.int64)] = True
        group = getattr(result, "group", None)
        if group is not None:  # a group of indistinguishable candidates has one estimate: counted once
            rows &= np.asarray(group) == np.arange(len(strings))
    return evaluate(truth, strings, proportion, detected=_detected_mask(result), low=low, high=high,
                    unexplained_mass=number("unexplained_mass"), unexplained_std_error=number("unexplained_std_error"),
                    rows=rows)


def _share_interval(result: Any, confidence_level: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """The interval of each share: that of ``results.csv`` (``result.table_interval``'s adjustment,
    when the result has one), from ``prop_low``/``prop_high`` style fields or the count interval."""
    try:
        adjust = getattr(result, "table_interval", None)
        extra = {} if adjust is None else {"adjust": adjust}
        ci = result.confidence_interval(confidence_level=confidence_level, kind="proportion", **extra)
    except TypeError:
        ci = result.confidence_interval(confidence_level=confidence_level)
        lo, hi = np.asarray(ci.low, dtype=np.float64), np.asarray(ci.high, dtype=np.float64)
        n = float(np.sum(getattr(result, "n_reports", 0)))
        estimate = np.asarray(getattr(result, "estimate", lo), dtype=np.float64)
        proportion = np.asarray(result.proportion, dtype=np.float64)
        # If the interval is on the count scale (it brackets `estimate`, not `proportion`), rescale.
        if n > 0 and np.allclose(estimate, proportion * n) and np.nanmax(np.abs(hi)) > 1.0:
            lo, hi = lo / n, hi / n
        return lo, hi
    return np.asarray(ci.low, dtype=np.float64), np.asarray(ci.high, dtype=np.float64)


def bit_residuals(aggregate: Aggregate, candidate_map: CandidateMap, proportion: npt.ArrayLike,
                  ) -> npt.NDArray[np.float64]:
    """Standardized residuals of the bit counts under the fitted shares, per (cohort, bit).

    Parameters
    ----------
    aggregate : Aggregate
        The observed counts.
    candidate_map : CandidateMap
        The design matrix (rows ``cohort * k + bit``).
    proportion : array-like of float, shape (len(candidate_map),)
        Fitted share of each candidate (0 for those left out of the fit).

    Returns
    -------
    ndarray of shape (num_cohorts, num_bloombits)
        ``(y_cb - N_c r_cb) / sqrt(N_c r_cb (1 - r_cb))`` with the modelled report rate
        ``r_cb = p01 + (p11 - p01) sum_s X[cb, s] pi_s`` clipped to ``[1e-9, 1 - 1e-9]``;
        nan for empty cohorts.  Values far outside +-3 point at strings missing from the
        candidate list or at a poor fit.  :func:`fit_residuals` gives those of a decode's
        own model instead (non-candidate column included, the decoder's weights).

    Notes
    -----
    The report model is RAPPOR's (Erlingsson, Pihur and Korolova 2014, Sec. 4;
    google/rappor ``decode.R``): a report bit is 1 with probability ``p11`` where the
    client's Bloom bit is 1 and ``p01`` where it is 0.
    """
    pi = _float_array(proportion, "proportion", len(candidate_map))
    rate = _report_rate(aggregate, candidate_map, pi, 0.0)
    return _standardized(aggregate, rate, np.clip(rate, 1e-9, 1 - 1e-9))


def _report_rate(aggregate: Aggregate, candidate_map: CandidateMap, shares: npt.NDArray[np.float64],
                 unexplained: float) -> npt.NDArray[np.float64]:
    """``p01 + (p11 - p01) t_cb``: ``t`` from the candidates' shares and the evenly spread unexplained mass."""
    params = aggregate.params
    if candidate_map.params != params:
        raise IncompatibleParamsError("The candidate map was made with different parameters than the aggregate.")
    m, k = params.num_cohorts, params.num_bloombits
    true_ones = np.asarray(candidate_map.matrix @ shares, dtype=np.float64).reshape(m, k)
    true_ones += unexplained * _spread_bits(params.num_bloombits, params.num_hashes) / k
    return params.p01 + (params.p11 - params.p01) * true_ones


def _spread_bits(k: int, h: int) -> float:
    """``k (1 - (1 - 1/k)^h)``: expected distinct bits of a string outside the candidates (the
    decoder's non-candidate column is this divided by ``k`` on every row)."""
    return k * (1.0 - (1.0 - 1.0 / k) ** h)


def _weight_rates(result: Any, aggregate: Aggregate) -> npt.NDArray[np.float64]:
    """The report rates of the decoder's row weights: the result's (``diagnostics.weight_rates``), else the
    background rates a decode starts from (``_problem.background_rates``); nan for empty cohorts."""
    given = getattr(getattr(result, "diagnostics", None), "weight_rates", None)
    if given is not None:
        return np.asarray(given, dtype=np.float64)
    from .decoder import _problem

    params = aggregate.params
    deb = _problem.debias(aggregate.counts, params.p11, params.p01)
    out = np.full(aggregate.bit_counts.shape, np.nan)
    out.reshape(-1)[deb.rows] = _problem.background_rates(deb, params)
    return out


def _standardized(aggregate: Aggregate, rate: npt.NDArray[np.float64],
                  var_rate: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    n_c = aggregate.reports_per_cohort.astype(np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        res = (aggregate.bit_counts - n_c * rate) / np.sqrt(n_c * var_rate * (1 - var_rate))
    res[aggregate.reports_per_cohort == 0, :] = np.nan
    return np.asarray(res, dtype=np.float64)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FitResiduals:
    """Standardized residuals of a decode's model per (cohort, bit) (see :func:`fit_residuals`).

    Attributes
    ----------
    residuals : ndarray of shape (num_cohorts, num_bloombits)
        nan for cohorts without reports.
    unexplained_mass : float
        Coefficient of the non-candidate column in this model (0 when the decode did not
        model it).
    chi2 : float
        Sum of the squared residuals: the summary's ``residual["chi2"]``.
    model : str
        What the residuals are of, in words (the report's figure title).
    """

    residuals: npt.NDArray[np.float64]
    unexplained_mass: float
    chi2: float
    model: str


def fit_residuals(result: Any, aggregate: Aggregate, candidate_map: CandidateMap) -> FitResiduals:
    """Residuals of a decode's own model: every candidate's share plus the unexplained mass.

    Parameters
    ----------
    result : DecodeResult
        The decode of ``aggregate`` against ``candidate_map``.
    aggregate : Aggregate
    candidate_map : CandidateMap

    Returns
    -------
    FitResiduals
        ``(y_cb - N_c r_cb) / sqrt(N_c r^_cb (1 - r^_cb))``: the modelled rate ``r_cb`` of
        :func:`bit_residuals` with the non-candidate column added, over the decoder's
        weights: ``r^`` the report rate of the row's weight (the result's
        ``diagnostics.weight_rates``; for a result without them, the rate of the row's
        cohort's other bits).  These are the
        whitened residuals of the decoder's final fit, whose sum of squares is the
        summary's ``residual["chi2"]``.

    Notes
    -----
    Reads only the result's public fields.  Every candidate's share counts, detected or
    not (the fit holds them all; members of a group of indistinguishable candidates
    count once).  The coefficient of the non-candidate column (``h_bar / k`` on every
    row, ``docs/decoder.md`` step 3) is not among them -- the reported unexplained mass
    is a different, unconstrained estimate -- so it is recomputed: given the other
    shares, the fit's coefficient is the one-dimensional least-squares solution clipped
    to ``[0, 1 - sum of shares]`` (the fit is convex, so each coordinate of its optimum
    is optimal given the others).  Without the column in the model
    (``diagnostics.modelled_unexplained`` false: orthogonal designs) it is 0.
    """
    s = len(candidate_map)
    fitted = getattr(result, "fitted_proportion", None)  # the test's fit when the shares differ from it
    shares = np.nan_to_num(_float_array(result.proportion if fitted is None else fitted, "proportion", s))
    group = getattr(result, "group", None)
    if group is not None:
        shares[np.asarray(group) != np.arange(s)] = 0.0  # a group's share, counted once
    observed = _weight_rates(result, aggregate)
    rate = _report_rate(aggregate, candidate_map, shares, 0.0)
    unexplained = 0.0
    if _diagnostic(result, "modelled_unexplained", False):
        params = aggregate.params
        base = _standardized(aggregate, rate, observed)
        direction = _standardized(aggregate, rate - (params.p11 - params.p01)
                                  * _spread_bits(params.num_bloombits, params.num_hashes) / params.num_bloombits,
                                  observed) - base  # the column's whitened values
        used = np.isfinite(base) & np.isfinite(direction)
        norm2 = float(np.sum(direction[used] ** 2))
        if norm2 > 0:
            best = float(np.sum(direction[used] * base[used])) / norm2
            unexplained = min(max(best, 0.0), max(1.0 - float(shares.sum()), 0.0))
        rate = _report_rate(aggregate, candidate_map, shares, unexplained)
    res = _standardized(aggregate, rate, observed)
    model = ("the least-squares fit (every candidate's share + unexplained mass), the model the summary's "
             "chi-square tests")
    return FitResiduals(residuals=res, unexplained_mass=unexplained, chi2=float(np.nansum(res**2)), model=model)
