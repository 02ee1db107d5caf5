"""Tests of rappor.analysis.decoder._result: DecodeResult and DecodeDiagnostics."""

from __future__ import annotations

import csv
import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from rappor import Aggregate, Decoder, IndistinguishableCandidatesWarning, Params, hash_candidates
from rappor.analysis.decoder import DecodeDiagnostics, DecodeResult
from rappor.formats import write_results


def _three_detected(third: float) -> DecodeResult:
    """Five candidates (SE 0.01): a strong one, one at share 0 and ``third`` detected (p 1e-4); two undetected."""
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    prop = np.array([0.2, 0.0, third, 0.0, 0.001])
    se = np.full(5, 0.01)
    pv = np.array([1e-80, 1e-5, 1e-4, 0.3, 0.5])
    sig = np.array([True, True, True, False, False])
    return DecodeResult(strings=tuple("abcde"), estimate=prop * 1e5, std_error=se * 1e5, proportion=prop,
                        prop_std_error=se, pvalue=pv, adjusted_pvalue=np.minimum(pv * 5, 1.0), significant=sig,
                        group=np.arange(5), n_reports=100_000, params=params, significance_level=0.05,
                        correction="fdr")


def test_selective_interval_of_detected_zero_share_is_not_degenerate():
    """A detected candidate whose least-squares share is 0 has no Wald z for the pivot.

    Regression: its selective interval was [0, 0] (a point, covering nothing but 0); it now
    gets the FCR interval, as does a string barely above the detection cutoff.  Strong
    strings keep the Wald interval (far above the cutoff the pivot is the Wald interval).
    """
    res = _three_detected(0.031)
    sel = res.confidence_interval(0.95, adjust="selective")
    fcr = res.confidence_interval(0.95, adjust="fcr")
    z_fcr = stats.norm.isf(3 / 5 * 0.05 / 2)  # 3 detected of 5 tests (Benjamini-Yekutieli)
    assert sel.low[1] == 0.0 and sel.high[1] == pytest.approx(z_fcr * 0.01)
    assert (sel.low[1], sel.high[1]) == (fcr.low[1], fcr.high[1])
    np.testing.assert_allclose([sel.low[0], sel.high[0]], [0.2 - 1.959964 * 0.01, 0.2 + 1.959964 * 0.01],
                               atol=1e-6)
    assert sel.low[2] <= 0.031 <= sel.high[2] and sel.high[2] > sel.low[2]


def test_selection_excess_is_the_truncated_normal_excess_of_the_detected():
    """Detected strings: ``se (z - mu)`` with ``mu`` the truncated normal's mean inverse at the detection cutoff.

    The cutoff lies between the largest detected p-value (1e-4) and the smallest undetected
    one (0.3): calibrated z = isf(sqrt(1e-4 x 0.3)) = 3.43, carried to each Wald scale by
    ``z_wald / z_calibrated``.  A string 20 SE above it has excess 0 (to 1e-12 SE); one just
    above it nearly its whole share; undetected ones 0.
    """
    res = _three_detected(0.036)
    excess = res.selection_excess()
    assert excess[0] == pytest.approx(0.0, abs=1e-14)
    assert excess[1] == 0.0  # share 0: no Wald z to read
    assert (excess[3:] == 0.0).all()
    cut = stats.norm.isf(math.sqrt(1e-4 * 0.3)) * 3.6 / stats.norm.isf(1e-4)
    mu = 0.0 if stats.truncnorm.mean(cut, np.inf) >= 3.6 else optimize.brentq(
        lambda m: stats.truncnorm.mean(cut - m, np.inf, loc=m) - 3.6, 0.0, 20.0)
    assert excess[2] == pytest.approx(0.01 * (3.6 - mu), abs=1e-9)
    assert 0.0 < excess[2] <= 0.036



# --- a decode whose standard errors are infinite ------------------------------------------

def _one_report_result(one_report) -> DecodeResult:
    params, counts, candidates = one_report
    agg = Aggregate(params=params, counts=np.array(counts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndistinguishableCandidatesWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 in the solver's step on a degenerate problem
        return Decoder().decode(agg, hash_candidates(candidates, params))


def test_results_csv_writes_infinite_and_missing_values(tmp_path, one_report):
    """Regression: an infinite standard error raised OverflowError in the float formatter.

    results.csv now writes R's spellings ``Inf`` / ``-Inf`` / ``NA`` (what google/rappor's
    ``write.csv`` writes and ``read.csv`` reads), which Python's ``float`` reads back too.
    """
    res = _one_report_result(one_report)
    assert np.isinf(res.prop_std_error).any()  # the case of the issue
    path = tmp_path / "results.csv"
    write_results(res, path, all=True)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(one_report[2])
    by_string = {row["string"]: row for row in rows}
    for i, s in enumerate(res.strings):
        for column in ("estimate", "std_error", "proportion", "prop_std_error", "prop_low_95", "prop_high_95",
                       "pvalue"):
            want = float(res.table()[column][i])
            got = by_string[s][column]
            assert (got == "NA") if math.isnan(want) else float(got) == want
    assert any(row["std_error"] == "Inf" for row in rows)
    # Every special value, written directly.
    res = DecodeResult(strings=("a", "b", "c"), estimate=np.array([math.nan, 1.0, 2.5]),
                       std_error=np.array([math.inf, -math.inf, 0.0]), proportion=np.array([math.nan, 0.1, 0.25]),
                       prop_std_error=np.array([math.inf, -math.inf, 0.0]), pvalue=np.array([1.0, 0.5, 1e-300]),
                       adjusted_pvalue=np.ones(3), significant=np.array([True, True, True]), group=np.arange(3),
                       n_reports=10, params=one_report[0], significance_level=0.05, correction="fdr")
    write_results(res, path, adjust="none")
    lines = path.read_text().splitlines()
    assert lines[1:] == ["c,2.5,0,0.25,0,0.25,0.25,1e-300", "b,1,-Inf,0.1,-Inf,1,0,0.5", "a,NA,Inf,NA,Inf,NA,NA,1"]


def test_repr_is_short_whatever_the_number_of_candidates(params):
    """Regression: the dataclass repr printed every array (14,000 characters at 100 candidates)."""
    n = 10_000
    rng = np.random.default_rng(0)
    prop = rng.random(n) / n
    res = DecodeResult(strings=tuple(f"https://example.com/a/rather/long/candidate/string/{i}" for i in range(n)),
                       estimate=prop * 1e6, std_error=np.full(n, 1.0), proportion=prop,
                       prop_std_error=np.full(n, 1e-6), pvalue=rng.random(n), adjusted_pvalue=rng.random(n),
                       significant=rng.random(n) < 0.5, group=np.arange(n), n_reports=10**6, params=params,
                       significance_level=0.05, correction="fdr")
    text = repr(res)
    assert len(text.splitlines()) <= 4 and len(text) < 400
    assert text.startswith("DecodeResult(10,000 candidates, ") and "more}" in text
    top = int(res.ranking()[0])
    assert repr(res.strings[top][:29] + "...") in text  # the largest detected share, shortened


def test_diagnostics_are_typed_and_frozen(one_report):
    res = _one_report_result(one_report)
    assert isinstance(res.diagnostics, DecodeDiagnostics)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.diagnostics.unexplained_mass = 0.5  # type: ignore[misc]
    assert res.summary()["unexplained_mass"] == res.diagnostics.unexplained_mass
    assert res.summary()["screening"]["screened"] is res.diagnostics.screened
    # A result built by hand carries "not known" diagnostics.
    blank = DecodeDiagnostics()
    assert math.isnan(blank.unexplained_mass) and blank.screened is None and blank.dof is None


def test_to_pandas_is_the_table(one_report):
    pd = pytest.importorskip("pandas")
    res = _one_report_result(one_report)
    frame = res.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    table = res.table_array()
    assert list(frame.columns) == list(table.dtype.names)
    assert frame["string"].tolist() == list(res.strings)
    np.testing.assert_array_equal(frame["prop_std_error"].to_numpy(), table["prop_std_error"])


# --- diagnostics: residuals and the null's p-value floor (issue 14) --------------------------

def _few_cohorts_decode(empty_cohort: bool = False, **options) -> tuple[DecodeResult, Aggregate, object]:
    """Zipf over 10 strings, 100,000 reports, k=16 h=2 m=4: the strongest strings tie at the null's floor."""
    from rappor import simulation

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    sc = simulation.zipf_scenario(params, n_reports=100_000, n_values=10, rng=0)
    counts = np.array(sc.aggregate.counts)
    if empty_cohort:
        counts[2] = 0
    agg = Aggregate(params=params, counts=counts)
    cmap = hash_candidates(list(sc.values) + ["decoy1", "decoy2"], params)
    return Decoder(**options).decode(agg, cmap), agg, cmap


def test_diagnostics_residuals_are_the_final_fits():
    """DecodeDiagnostics.residuals: per (cohort, bit), read-only, nan for an empty cohort, summing to chi2,
    and equal to what rappor.analysis.fit_residuals recomputes from the counts and the public result."""
    from rappor.analysis._metrics import fit_residuals

    res, agg, cmap = _few_cohorts_decode(empty_cohort=True)
    d = res.diagnostics
    assert d.residuals is not None and d.residuals.shape == (4, 16)
    assert np.isnan(d.residuals[2]).all() and np.isfinite(d.residuals[[0, 1, 3]]).all()
    assert not d.residuals.flags.writeable
    assert np.nansum(d.residuals**2) == pytest.approx(d.chi2, rel=1e-9)
    assert np.nanmax(np.abs(d.residuals)) == d.max_abs_std_residual
    np.testing.assert_allclose(d.residuals, fit_residuals(res, agg, cmap).residuals, rtol=1e-7, atol=1e-9)
    assert d == dataclasses.replace(d)  # diagnostics still compare (the array is left out of ==)
    assert DecodeDiagnostics().residuals is None and DecodeDiagnostics().pvalue_floor is None


def test_diagnostics_pvalue_floor_is_where_the_top_strings_tie():
    """With 4 cohorts the strongest strings' p-values tie at the floor of the random-string null.

    Independent figure: a random string reaches the top score of a cohort with probability
    h!/k^h = 2/256 (its two bits on the cohort's two largest residuals), of every cohort with
    (2/256)^4 = 3.7e-9; the saddlepoint tail gives the same order (measured 2.3e-9; a factor 3
    either way is allowed).  The normal null has no floor.
    """
    res, _, _ = _few_cohorts_decode()
    floor = res.diagnostics.pvalue_floor
    exact = (math.factorial(2) / 16**2) ** 4
    assert floor is not None and exact / 3 <= floor <= exact * 3
    finite = res.pvalue[np.isfinite(res.pvalue)]
    assert finite.min() == floor and np.count_nonzero(finite == floor) >= 2  # the tie
    assert np.all(finite >= floor)
    assert res.summary()["null"]["pvalue_floor"] == floor
    assert _few_cohorts_decode(null="normal")[0].diagnostics.pvalue_floor is None
