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
    undetected_bit_probabilities,
)


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
            sel = AssociationDecoder()._categories(sim.reports[0], sim.variables[0], rappor.Decoder())
        assert len(sel[1]) == len(sel[0]) + 1  # Other is a category either way
        assert other_pools_outside_strings(sel) is outside
