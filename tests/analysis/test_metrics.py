"""Tests for rappor.analysis._metrics on hand-made cases (every expected value worked out by hand)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from rappor.exceptions import InvalidParameterError
from rappor.analysis._metrics import Metrics, evaluate, evaluate_result

TRUTH = {"a": 50, "b": 30, "c": 15, "d": 5}  # shares .5 .3 .15 .05


def test_evaluate_perfect_recovery():
    m = evaluate(TRUTH, ["a", "b", "c", "d"], [0.5, 0.3, 0.15, 0.05], detected=[True] * 4)
    assert m.total_variation == pytest.approx(0.0)
    assert (m.n_detected, m.true_positives, m.false_positives, m.false_negatives) == (4, 4, 0, 0)
    assert m.allocated_mass == pytest.approx(1.0)
    assert m.unallocated_mass == pytest.approx(0.0)
    assert math.isnan(m.unexplained_mass) and math.isnan(m.unexplained_std_error)  # no decoder estimate given
    assert m.smallest_detected == pytest.approx(0.05)
    assert math.isnan(m.largest_missed)
    assert math.isnan(m.coverage)


def test_evaluate_missing_counts_as_zero():
    # d is a candidate but not detected (its estimate is ignored), c is not a candidate,
    # x is a decoy falsely detected at 0.02.
    m = evaluate(TRUTH, ["a", "b", "d", "x"], [0.48, 0.33, 0.9, 0.02], detected=[True, True, False, True])
    # TV = 1/2 (|.48-.5| + |.33-.3| + |0-.05| + |.02-0| + .15 (c, missing)) = 1/2 (.02+.03+.05+.02+.15)
    assert m.total_variation == pytest.approx(0.135)
    assert m.false_positives == 1 and m.true_positives == 2
    assert m.false_negatives == 1  # d
    assert m.missing_candidates == 1  # c
    assert m.true_unexplained_mass == pytest.approx(0.15)
    assert m.allocated_mass == pytest.approx(0.48 + 0.33 + 0.02)
    assert m.unallocated_mass == pytest.approx(1 - 0.83)
    assert m.smallest_detected == pytest.approx(0.3)
    assert m.largest_missed == pytest.approx(0.05)
    assert (m.n_true, m.n_candidates, m.n_detected) == (4, 4, 3)


def test_evaluate_total_variation_is_one_when_disjoint():
    m = evaluate({"a": 1}, ["b"], [1.0], detected=[True])
    assert m.total_variation == pytest.approx(1.0)


def test_evaluate_coverage():
    m = evaluate(TRUTH, ["a", "b", "x"], [0.5, 0.2, 0.0], detected=[True, True, False],
                 low=[0.45, 0.1, -0.01], high=[0.55, 0.25, 0.01])
    # a covers .5, b misses .3, decoy x covers 0
    assert m.coverage == pytest.approx(2 / 3)


def test_evaluate_zero_counts_in_truth_are_ignored():
    m = evaluate({"a": 10, "z": 0}, ["a", "z"], [1.0, 0.1], detected=[True, True])
    assert m.n_true == 1 and m.false_positives == 1


def test_metrics_as_dict_json_ready():
    m = evaluate(TRUTH, ["a"], [0.5], detected=[False])
    d = m.as_dict()
    assert d["smallest_detected"] is None and d["largest_missed"] == pytest.approx(0.5)
    assert set(d) == set(Metrics.__dataclass_fields__)


def test_every_metric_has_a_meaning():
    from rappor.analysis._metrics import METRIC_MEANINGS

    assert list(METRIC_MEANINGS) == list(Metrics.__dataclass_fields__)


def test_evaluate_result_unexplained_mass_is_the_summary_s():
    """One name, one meaning: Metrics.unexplained_mass is DecodeResult.summary()["unexplained_mass"] (the
    decoder's estimate), not 1 - allocated mass (that is unallocated_mass)."""
    from rappor import Decoder, Params
    from rappor.simulation import Population, candidate_strings, simulate

    params = Params(k=16, h=2, m=16, p=0.5, q=0.75, f=0.5)
    sim = simulate(params, Population.zipf(20), 20_000, rng=3)
    result = Decoder().decode(sim.aggregate, sim.candidate_map(candidate_strings(sim.population, remove_every=4)))
    m = evaluate_result(result, sim.truth)
    summary = result.summary()
    assert m.unexplained_mass == summary["unexplained_mass"]
    assert m.unexplained_std_error == summary["unexplained_std_error"]
    assert m.allocated_mass == pytest.approx(summary["allocated_mass"])
    assert m.unallocated_mass == pytest.approx(1 - summary["allocated_mass"])


def test_evaluate_fail_length_mismatch():
    with pytest.raises(InvalidParameterError, match="proportion"):
        evaluate(TRUTH, ["a", "b"], [0.5], detected=[True, True])


def test_evaluate_fail_empty_truth():
    with pytest.raises(InvalidParameterError, match="at least one report"):
        evaluate({}, ["a"], [0.5], detected=[True])


def test_evaluate_result_duck_typed():
    interval = SimpleNamespace(low=np.array([0.4, 0.0]), high=np.array([0.6, 0.1]))
    result = SimpleNamespace(strings=("a", "x"), proportion=np.array([0.5, 0.05]), significant=np.array([True, False]),
                             confidence_interval=lambda confidence_level=0.95, kind="proportion": interval)
    m = evaluate_result(result, TRUTH)
    assert m.true_positives == 1 and m.coverage == pytest.approx(1.0)


def test_bit_residuals_standard_normal_under_the_model(rng):
    # Simulated counts from the exact model: residuals are ~N(0, 1); with 4*8 = 32 cells,
    # |r| < 5 everywhere fails with probability about 32 * 5.7e-7 < 2e-5.
    from rappor import Params, hash_candidates
    from rappor.analysis._metrics import bit_residuals
    from rappor.simulation import Population, simulate

    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    pop = Population.zipf(3)
    sim = simulate(params, pop, 20_000, rng=rng)
    cmap = hash_candidates(list(pop.strings), params)
    res = bit_residuals(sim.aggregate, cmap, pop.probabilities)
    assert res.shape == (4, 8)
    assert np.abs(res).max() < 5
    # A wrong fit (all mass on the least frequent string) is visible.
    wrong = bit_residuals(sim.aggregate, cmap, [0.0, 0.0, 1.0])
    assert np.abs(wrong).max() > 10


def _decoded(n_values, decoys, remove_every, params=None, n=100_000, seed=0):
    from rappor import Decoder, Params
    from rappor.simulation import Population, candidate_strings, simulate

    params = params or Params(k=16, h=2, m=64, p=0.5, q=0.75, f=0.5)
    pop = Population.zipf(n_values)
    sim = simulate(params, pop, n, rng=seed)
    cmap = sim.candidate_map(candidate_strings(pop, decoys=decoys, remove_every=remove_every))
    return sim, cmap, Decoder().decode(sim.aggregate, cmap)


@pytest.mark.parametrize(("n_values", "decoys", "remove_every"), [
    (100, 0, 0),      # issue 4's 100 candidates: every share in the fit
    (100, 900, 0),    # 1,000 candidates, not screened
    (100, 9900, 0),   # 10,000 candidates: Lasso screening, the fit holds the selected ones
    (100, 20, 10),    # strings missing from the list: the non-candidate column matters
])
def test_fit_residuals_are_the_summary_s_chi_square(n_values, decoys, remove_every):
    """The residuals are those of the model the summary tests: their sum of squares is its chi-square
    (to rounding), and they average about 0 where the detected strings alone leave them positive."""
    from rappor.analysis._metrics import bit_residuals, fit_residuals

    sim, cmap, result = _decoded(n_values, decoys, remove_every)
    fit = fit_residuals(result, sim.aggregate, cmap)
    assert "the model the summary's chi-square tests" in fit.model
    assert fit.chi2 == pytest.approx(result.summary()["residual"]["chi2"], rel=1e-9)
    assert np.nanmax(np.abs(fit.residuals)) == pytest.approx(result.diagnostics.max_abs_std_residual, rel=1e-9)
    # 1,024 residuals of a fitting model: mean 0 with SE 1/32; 4 SE is 0.125.
    assert abs(np.nanmean(fit.residuals)) < 0.125
    detected_only = bit_residuals(sim.aggregate, cmap, np.where(result.detected, result.proportion, 0.0))
    assert np.nanmean(detected_only) > 0.4  # the heat map the report used to draw (issue 16: +0.60)


def test_fit_residuals_few_cohorts_groups_and_identity_map(data_dir):
    """data/sample (4 cohorts), indistinguishable candidates counted once, and a closed-form identity map."""
    from rappor import (
        Aggregate,
        Decoder,
        IndistinguishableCandidatesWarning,
        Params,
        hash_candidates,
    )
    from rappor.formats import read_counts, read_params
    from rappor.collect._design import CandidateMap
    from rappor.analysis._metrics import fit_residuals

    sample = data_dir.parent.parent / "data" / "sample"
    params = read_params(sample / "params.csv")
    agg = read_counts(sample / "counts.csv", params)
    cmap = hash_candidates((sample / "candidates.txt").read_text().split(), params)
    result = Decoder().decode(agg, cmap)
    assert fit_residuals(result, agg, cmap).chi2 == pytest.approx(result.summary()["residual"]["chi2"], rel=1e-9)

    from rappor.simulation import Population, simulate

    small = Params(k=4, h=1, m=2, p=0.5, q=0.75, f=0.5)  # 12 strings on 4 bits x 2 cohorts: some collide
    cmap_small = hash_candidates([f"v{i}" for i in range(1, 13)], small)
    sim = simulate(small, Population.zipf(12), 5_000, rng=1)
    with pytest.warns(IndistinguishableCandidatesWarning):
        grouped = Decoder().decode(sim.aggregate, cmap_small)
    assert len(grouped.groups) > 0
    fit = fit_residuals(grouped, sim.aggregate, cmap_small)
    assert fit.chi2 == pytest.approx(grouped.summary()["residual"]["chi2"], rel=1e-9)

    identity = Params(k=4, h=1, m=1, p=0.25, q=0.75, f=0.0)
    imap = CandidateMap.from_indices(identity, ["a", "b", "c", "d"], [[0], [1], [2], [3]])
    agg = Aggregate(params=identity, counts=np.array([[1000, 700, 270, 260, 240]]))
    exact = Decoder().decode(agg, imap)
    fit = fit_residuals(exact, agg, imap)
    assert fit.unexplained_mass == 0.0 and fit.chi2 == pytest.approx(exact.summary()["residual"]["chi2"], abs=1e-9)
