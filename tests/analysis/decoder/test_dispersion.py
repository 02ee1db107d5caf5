"""What a residual dispersion well above 1 points to (``rappor.analysis.decoder._dispersion``).

Collections of 100,000 clients (Zipf over 50 strings, k=16 h=2 m=32, p=.5 q=.75 f=.5) from
the package's simulator, decoded with the default decoder.  Each cause moves its mark by
far more than the :data:`MARK_Z` = 4 standard errors the rule needs (measured on these
seeds: 10 reports per client give dispersion ~1.4 with skewness within 1 SE; half the mass
missing gives skewness ~+0.3, 5-7 SE; f = 0.5 counts read with f = 0.25 give about 4 bits
per report for 1.94, tens of SEs), so the causes are told apart with fixed seeds.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rappor
from rappor.analysis.decoder._dispersion import bits_per_report, explain_dispersion, residual_skewness
from rappor.simulation import Population, simulate, true_ones

PARAMS = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=32, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _check(agg: rappor.Aggregate, strings: list[str]) -> object:
    cmap = rappor.hash_candidates(strings, agg.params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder().decode(agg, cmap)
    d = res.diagnostics
    # The decode's skewness is that of its residuals, to the bit; handing it over gives the same check.
    assert (d.residual_skewness, d.residual_skewness_se) == residual_skewness(d.residuals)
    se = d.unexplained_std_error  # as rappor decode passes it
    check = explain_dispersion(agg.counts, agg.params, d.residuals, d.dispersion, d.chi2_pvalue, d.unexplained_mass,
                               unexplained_std_error=se)
    given = explain_dispersion(agg.counts, agg.params, d.residuals, d.dispersion, d.chi2_pvalue, d.unexplained_mass,
                               skewness=(d.residual_skewness, d.residual_skewness_se), unexplained_std_error=se)
    assert given == check
    return check


def _collection(reports_per_client: int = 1, seed: int = 0) -> tuple[rappor.Aggregate, list[str]]:
    pop = Population.zipf(50)
    sim = simulate(PARAMS, pop, 100_000, reports_per_client=reports_per_client, rng=seed)
    return sim.aggregate, list(pop.strings)


def test_explain_dispersion_none_when_the_model_fits() -> None:
    agg, strings = _collection()
    assert _check(agg, strings) is None


def test_explain_dispersion_repeated_reports() -> None:
    agg, strings = _collection(reports_per_client=10)
    check = _check(agg, strings)
    assert check is not None and check.cause == "repeated reports"
    # 1 + 9 kappa: the implied reports per client within a factor of 2 of the truth
    # (the value draw adds its own spread: measured 10-14 here).
    assert 5 <= check.reports_per_client <= 20
    assert "memoized PRR" in check.text
    # The low end: the same formula at the dispersion less z sqrt(2 / n), z the normal quantile
    # of the alarm's p-value and n the residuals (the model's chi-square spread over its df).
    n = int(np.isfinite(_residuals(agg, strings)).sum())
    shrunk = check.dispersion - 3.090232306167813 * math.sqrt(2.0 / n)
    kappa = (check.dispersion - 1.0) / (check.reports_per_client - 1.0)
    assert check.reports_per_client_low == pytest.approx(1.0 + (shrunk - 1.0) / kappa, rel=1e-9)
    assert 1.0 < check.reports_per_client_low < check.reports_per_client
    assert f"at least {check.reports_per_client_low:.1f} beyond what chance allows" in check.text


def _residuals(agg: rappor.Aggregate, strings: list[str]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder().decode(agg, rappor.hash_candidates(strings, agg.params))
    return np.asarray(res.diagnostics.residuals)


def test_explain_dispersion_missing_strings() -> None:
    agg, strings = _collection(seed=1)
    check = _check(agg, strings[1::2])  # v2, v4, ...: more than half the mass missing
    assert check is not None and check.cause == "missing strings"
    assert check.skewness > 4 * check.skewness_se


def test_explain_dispersion_parameters_that_do_not_match() -> None:
    agg, strings = _collection(seed=2)
    wrong = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=32, prob_p=0.5, prob_q=0.75, prob_f=0.25)
    check = _check(rappor.Aggregate(params=wrong, counts=agg.counts), strings)
    assert check is not None and check.cause == "parameters"
    assert abs(check.bits_per_report - check.expected_bits) > 4 * check.bits_per_report_se
    assert "p, q, f and h" in check.text


@pytest.mark.parametrize("seed", range(3))
def test_bits_per_report_matches_the_filters(seed: int) -> None:
    """Under the right parameters the debiased ones per report estimate the bits the reports' Bloom
    filters set (counted exactly from the simulated clients), within 4 standard errors."""
    pop = Population.zipf(50)
    sim = simulate(PARAMS, pop, 100_000, rng=seed)
    by_cohort = np.zeros((len(pop), PARAMS.num_cohorts), dtype=np.int64)
    np.add.at(by_cohort, (sim.report_values, sim.client_cohorts[sim.report_clients]), 1)
    exact = float(true_ones(PARAMS, list(pop.strings), by_cohort).sum()) / sim.aggregate.total_reports
    bits, se = bits_per_report(sim.aggregate.counts, PARAMS)
    assert math.isfinite(se) and se > 0
    assert abs(bits - exact) < 4 * se


def test_bits_per_report_without_reports() -> None:
    counts = np.zeros((PARAMS.num_cohorts, PARAMS.num_bloombits + 1), dtype=np.int64)
    assert all(math.isnan(x) for x in bits_per_report(counts, PARAMS))


def test_residual_skewness() -> None:
    """The sample skewness of the finite residuals with SE sqrt(6 / n); 0 when they are all equal, nan below 3."""
    rng = np.random.default_rng(0)
    x = rng.exponential(size=20_000)  # skewness 2
    skew, se = residual_skewness(np.concatenate([x, [np.nan]]))
    assert se == pytest.approx(math.sqrt(6.0 / 20_000))
    assert skew == pytest.approx(2.0, abs=0.3)  # the sample skewness of 20,000 exponentials: SD about 0.1
    normal, _ = residual_skewness(rng.normal(size=20_000))
    assert abs(normal) < 4 * se
    assert residual_skewness(np.zeros(32)) == (0.0, math.sqrt(6.0 / 32))
    assert all(math.isnan(v) for v in residual_skewness([1.0, np.nan]))


def test_explain_dispersion_many_missing_strings_without_skew() -> None:
    """The demo's 100 Zipf strings with only the first listed: 0.7 of the mass outside the list.

    The 99 missing strings spread their ones over every bit, so the residuals are not skewed
    (measured -0.02 +- 0.08 on the demo) and the skewness alone read the dispersion as
    repeated reports ("about 24 reports per client"); the unexplained mass, 0.71 +- 0.009 (80
    of its SEs above 0), says strings are missing.  Without its SE the check reads the skewness
    alone, as the association's warning of unmarked repeats does.
    """
    pop = Population.zipf(100)
    sim = simulate(PARAMS, pop, 100_000, rng=3)
    strings = list(pop.strings[:1])
    check = _check(sim.aggregate, strings)
    assert check is not None and check.cause == "missing strings"
    assert "Here the unexplained mass" in check.text
    d = rappor.Decoder().decode(sim.aggregate, rappor.hash_candidates(strings, PARAMS)).diagnostics
    assert d.unexplained_mass > 4.0 * d.unexplained_std_error
    plain = explain_dispersion(sim.aggregate.counts, PARAMS, d.residuals, d.dispersion, d.chi2_pvalue,
                               d.unexplained_mass)
    assert abs(d.residual_skewness) < 4 * d.residual_skewness_se
    assert plain is not None and plain.cause == "repeated reports"
