"""The Other category's bit rates (rappor.analysis.association._other): cross-fitted shares."""

from __future__ import annotations

import dataclasses
import types
import warnings

import numpy as np
import pytest

import rappor
from rappor import Params
from rappor.analysis.association import AssociationDecoder, AssociationSimulation, example_joint, simulate_association
from rappor.analysis.association._other import (
    cross_fitted_proportions,
    other_pools_outside_strings,
    outside_bit_rates,
    report_folds,
    undetected_bit_probabilities,
    undetected_other_probabilities,
)
from rappor.client._reports import ReportBatch
from rappor.collect._design import CandidateMap, hash_candidates


def _collection(seed: int, n: int) -> AssociationSimulation:
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    joint, values, cands = example_joint("string-bool", 20)
    return simulate_association(params, joint, values, n, candidates=cands, rng=seed)


def test_cross_fitted_shares_do_not_see_their_own_cohorts_reports() -> None:
    # Fold f's shares are decoded from the cohorts outside f: replacing the reports of fold 0's
    # cohorts (by another collection's) leaves fold 0's shares exactly as they were and moves fold 1's.
    sim, other = _collection(1, 20000), _collection(2, 20000)
    cmap = sim.variables[0].candidate_map
    agg = rappor.Aggregate.from_reports(sim.reports[0])
    shares, fold_of = cross_fitted_proportions(agg, cmap, rappor.Decoder())
    assert shares.shape == (2, len(cmap.strings))
    np.testing.assert_array_equal(fold_of, np.arange(8) % 2)
    counts = np.asarray(agg.counts).copy()
    counts[fold_of == 0] = np.asarray(rappor.Aggregate.from_reports(other.reports[0]).counts)[fold_of == 0]
    moved, _ = cross_fitted_proportions(dataclasses.replace(agg, counts=counts), cmap, rappor.Decoder())
    np.testing.assert_array_equal(moved[0], shares[0])
    assert np.abs(moved[1] - shares[1]).max() > 1e-3
    # Each cohort's rates are those of its fold's shares.
    columns = np.array([0, 1, 2])
    rates = undetected_bit_probabilities(cmap, columns, shares, fold_of)
    for f in (0, 1):
        np.testing.assert_array_equal(rates[fold_of == f], undetected_bit_probabilities(cmap, columns, shares[f])[fold_of == f])


def test_cross_fitting_needs_reports_in_two_folds() -> None:
    sim = _collection(3, 2000)
    agg = rappor.Aggregate.from_reports(sim.reports[0])
    counts = np.asarray(agg.counts).copy()
    counts[1::2] = 0  # every report in fold 0: no fold-1 shares to give fold 0
    assert cross_fitted_proportions(dataclasses.replace(agg, counts=counts), sim.variables[0].candidate_map,
                                    rappor.Decoder()) is None


class _Fixed:
    """The default marginal decode with its detected candidates replaced by a fixed choice."""

    def __init__(self, detected: np.ndarray) -> None:
        self.detected = detected

    def decode(self, aggregate: rappor.Aggregate, cmap: rappor.CandidateMap) -> rappor.DecodeResult:
        return dataclasses.replace(rappor.Decoder().decode(aggregate, cmap), detected=self.detected)


@pytest.mark.slow
def test_other_share_is_unbiased_when_the_categories_do_not_come_from_the_reports() -> None:
    # Categories fixed by the true shares (>= 0.005), 100 Zipf strings x boolean, f=0.75, 250,000
    # clients: Other's signed estimate minus its truth, over its standard error, averaged over 8
    # collections.  Unbiased, the mean has a standard error of about 1 / sqrt(8) = 0.35; with Other's
    # composition taken from the same reports it was +1.5 on average (design measurements), so the
    # bound is 3 standard errors of the mean.
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.75)
    joint, values, cands = example_joint("string-bool", 100)
    z = []
    for seed in range(8):
        sim = simulate_association(params, joint, values, 250_000, candidates=cands, rng=500 + seed)
        shares = sim.truth([list(sim.variables[0].candidate_map.strings), ["TRUE", "FALSE"]]).sum(axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = AssociationDecoder(decoder=_Fixed(shares >= 0.005)).decode(sim.reports, sim.variables)
        truth = sim.truth(res.categories)
        a = np.zeros(res.proportion.shape)
        a[-1] = 1.0
        a = a.reshape(-1)
        error = a @ (res.signed_maximum.reshape(-1) - truth.reshape(-1))
        z.append(error / np.sqrt(a @ res.signed_covariance @ a))
    assert abs(np.mean(z)) < 3 / np.sqrt(8), z


def _selection(mass: float, se: float, other: bool = True) -> tuple:
    marginal = types.SimpleNamespace(diagnostics=types.SimpleNamespace(
        unexplained_mass_unclipped=mass, unexplained_std_error=se))
    columns = np.arange(3)
    labels = ("a", "b", "c") + (("Other",) if other else ())
    return columns, labels, marginal, None


def test_other_pools_outside_strings_at_the_one_sided_five_percent_level() -> None:
    assert not other_pools_outside_strings(_selection(0.5, 0.01, other=False))  # no Other
    assert other_pools_outside_strings(_selection(0.0329, 0.02))  # z = 1.645
    assert not other_pools_outside_strings(_selection(0.0328, 0.02))  # z = 1.64
    assert not other_pools_outside_strings(_selection(-0.05, 0.02))
    assert other_pools_outside_strings(_selection(float("nan"), 0.02))  # unknown: as evidence
    assert other_pools_outside_strings(_selection(0.01, 0.0))


def test_a_marginal_decode_says_whether_strings_lie_outside_the_candidates() -> None:
    # 6 strings, every 3rd outside the candidates (0.20 of the clients by example_joint's shares):
    # the unexplained mass is many standard errors above 0 (measured 0.190, SE 0.029: z 6.6).  With
    # every string a candidate it is about N(0, 1) in standard errors, so below the one-sided 5%
    # level on 19 seeds of 20; on this seed measured -0.015, SE 0.021: z -0.7.
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    for remove, outside in ((3, True), (0, False)):
        joint, values, cands = example_joint("string-string", 6, 3, remove_every=remove)
        sim = simulate_association(params, joint, values, 100_000, candidates=cands, rng=11)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel, _ = AssociationDecoder()._categories(sim.reports[0], sim.variables[0], rappor.Decoder(), None)
        assert len(sel[1]) == len(sel[0]) + 1  # Other is a category either way
        assert other_pools_outside_strings(sel) is outside


# ----------------------------------------------------------------------------- outside strings' bit rates


def test_report_folds_deal_the_reports_at_random_into_halves() -> None:
    rng = np.random.default_rng(0)
    cohorts = np.sort(rng.integers(0, 16, 5001))
    folds = report_folds(cohorts)
    np.testing.assert_array_equal(folds, report_folds(cohorts))  # a fixed deal
    assert set(np.unique(folds).tolist()) == {0, 1}
    # Halves within 4 binomial SE (sqrt(n) / 2) in every cohort, and not by position: neighbours
    # share a fold about half the time (0 for alternation, 1 for runs); 5,000 pairs, SE 0.007.
    for c in range(16):
        mine = folds[cohorts == c]
        assert abs(mine.sum() - mine.size / 2) <= 2 * np.sqrt(mine.size)
    same = np.mean(folds[1:] == folds[:-1])
    assert 0.47 < same < 0.53


def _exact_counts(params: Params, cmap: CandidateMap, weights: np.ndarray, n_c: float) -> rappor.Aggregate:
    """Bit counts equal to their expectation (as floats) for Bloom-bit mixture ``weights`` of ``cmap``'s strings."""
    m, k = params.num_cohorts, params.num_bloombits
    rate = np.asarray(cmap.matrix @ weights).reshape(m, k)
    counts = np.empty((m, k + 1))
    counts[:, 0] = n_c
    counts[:, 1:] = n_c * (params.p01 + (params.p11 - params.p01) * rate)
    return types.SimpleNamespace(params=params, counts=counts)  # type: ignore[return-value]


def _outside_setting() -> tuple[Params, CandidateMap, np.ndarray]:
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    strings = [f"s{i}" for i in range(8)]
    full = hash_candidates(strings + ["outside"], params)
    return params, full, np.array([0.3, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.02, 0.2])


def test_outside_rates_show_a_heavy_outside_string_and_nothing_without_one() -> None:
    params, full, weights = _outside_setting()
    cmap = hash_candidates(full.strings[:8], params)
    outside_bits = np.asarray(full.matrix[:, 8].toarray()).reshape(4, 32) > 0
    rates, noise = outside_bit_rates(_exact_counts(params, full, weights, 1e6), cmap, weights[:8])
    assert noise is not None and noise.directions.shape == (128, 0)
    # The residual is exactly the outside string's Bloom filter: its bits near 1 (shrunk by a
    # factor tau^2 / (tau^2 + se^2) > 0.99 at 1e6 reports a cohort), every other bit near 0.
    assert rates[outside_bits].min() > 0.99 and rates[~outside_bits].max() < 0.01
    # Without an outside string (the candidates' shares sum to 1) the rates are a random string's.
    flat, none = outside_bit_rates(_exact_counts(params, cmap, weights[:8] / 0.8, 1e6), cmap, weights[:8] / 0.8)
    assert none is None and np.ptp(flat) == 0 and flat[0, 0] == pytest.approx(1 - (31 / 32) ** 2)


def test_outside_rates_move_with_the_shares_as_their_directions_say() -> None:
    # directions[:, x] / se_x is the derivative of the rates in s_x: F (b - B_x) / (1 - S), with F
    # within 1e-9 of 1 at 1e12 reports a cohort (so its own derivative is negligible).  Central
    # differences with step 1e-6 are exact for the quadratic part and leave ~1e-12.
    params, full, weights = _outside_setting()
    cmap = hash_candidates(full.strings[:8], params)
    counts = _exact_counts(params, full, weights, 1e12)
    se = np.full(8, 0.01)
    _, noise = outside_bit_rates(counts, cmap, weights[:8], se)
    assert noise is not None and noise.directions.shape == (128, 8)
    for x in (0, 5):
        step = np.zeros(8)
        step[x] = 1e-6
        up, _ = outside_bit_rates(counts, cmap, weights[:8] + step)
        down, _ = outside_bit_rates(counts, cmap, weights[:8] - step)
        inside = ((up > 0) & (up < 1) & (down > 0) & (down < 1)).reshape(-1)  # away from the clip
        derivative = ((up - down) / 2e-6).reshape(-1)
        np.testing.assert_allclose(derivative[inside], noise.directions[inside, x] / 0.01, rtol=1e-5, atol=1e-6)
    # Errors that are unknown or infinite carry no direction (and no inf into the covariance).
    _, partial = outside_bit_rates(counts, cmap, weights[:8], np.r_[se[:6], np.inf, np.nan])
    assert partial is not None and partial.directions.shape == (128, 6) and np.isfinite(partial.directions).all()


def test_undetected_other_is_cross_fitted_across_report_folds_only_with_outside_strings() -> None:
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    for remove, by_fold in ((3, True), (0, False)):
        joint, values, cands = example_joint("string-bool", 12, remove_every=remove)
        sim = simulate_association(params, joint, values, 200_000, candidates=cands, rng=5)
        batch, cmap = sim.reports[0], sim.variables[0].candidate_map
        agg = rappor.Aggregate.from_reports(batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            marginal = rappor.Decoder().decode(agg, cmap)
        columns = np.flatnonzero(marginal.detected)
        folds = report_folds(batch.cohorts)
        probs, noise = undetected_other_probabilities(batch, agg, cmap, columns, marginal, rappor.Decoder(), folds)
        assert (probs.shape[0] == 16) is by_fold and (noise is not None) is by_fold
        if by_fold:
            assert noise is not None and noise.variance.shape == (16 * 32,) and noise.directions.shape[0] == 16 * 32
            # Fold 0's rows come from fold 1's reports: replacing fold 0's reports leaves them be.
            other = simulate_association(params, joint, values, 200_000, candidates=cands, rng=6).reports[0]
            words = batch.words.copy()
            words[folds == 0] = other.words[: int((folds == 0).sum())]
            mixed = ReportBatch(params=params, cohorts=batch.cohorts, words=words)
            again, _ = undetected_other_probabilities(mixed, agg, cmap, columns, marginal, rappor.Decoder(), folds)
            np.testing.assert_array_equal(again[:8], probs[:8])
            assert np.abs(again[8:] - probs[8:]).max() > 1e-4


def test_intervals_cover_with_a_heavy_string_outside_the_candidates() -> None:
    # 7 candidates and one string outside them holding 0.3 of the clients, with a boolean split
    # (0.9) unlike the candidates'.  Modelled as a random string, Other drew the wrong reports and
    # the intervals covered 0.73 of the cells over seeds 4-7 (0.60-0.78 by seed); with the outside
    # strings' rates estimated from the other half of each cohort's reports, 0.97 (0.87-1.00).
    # Pooled over about 60 cells, 4 binomial standard errors below 0.95 is 0.84.
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    share = np.array([0.25, 0.15, 0.1, 0.08, 0.06, 0.04, 0.02, 0.3])
    split = np.array([0.2, 0.5, 0.8, 0.3, 0.6, 0.4, 0.7, 0.9])
    joint = np.stack([share * split, share * (1 - split)], axis=1)
    strings = [f"s{i}" for i in range(7)]
    covered = []
    for seed in range(4, 8):
        sim = simulate_association(params, joint, [strings + ["outside"], ["TRUE", "FALSE"]], 200_000,
                                   candidates=[strings, ["TRUE", "FALSE"]], rng=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = AssociationDecoder(independence_test=False).decode(sim.reports, sim.variables)
        truth = sim.truth(res.categories)
        ci = res.confidence_interval()
        covered.extend(((ci.low <= truth) & (truth <= ci.high)).reshape(-1).tolist())
    assert len(covered) >= 56
    assert np.mean(covered) >= 0.84
