"""rappor.analysis.association._shrinkage: the empirical-Bayes split of a boolean given one or two strings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rappor import Params
from rappor.analysis.association import AssociationDecoder, example_joint, simulate_association, total_variation
from rappor.analysis.association._shrinkage import (
    nested_split_posterior,
    random_effects,
    shrink_boolean_split,
    shrink_nested_boolean_split,
)

PARAMS = Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)


def test_shrink_boolean_split_keeps_shares_and_moves_noisy_splits_most() -> None:
    table = np.array([[0.30, 0.10], [0.05, 0.15], [0.02, 0.08], [0.20, 0.10]])
    # independent cells: category 2's split (mass 0.1) is far noisier than category 0's (mass 0.4)
    cov = np.diag(np.array([1e-5, 1e-5, 4e-4, 4e-4, 4e-3, 4e-3, 1e-5, 1e-5]))
    shrunk, factor = shrink_boolean_split(table, cov, 0)
    np.testing.assert_allclose(shrunk.sum(axis=1), table.sum(axis=1), rtol=1e-12)
    assert np.all((factor >= 0) & (factor <= 1))
    assert factor[2] < factor[1] < factor[0]
    overall = table[:, 0].sum()
    split, old = shrunk[:, 0] / shrunk.sum(axis=1), table[:, 0] / table.sum(axis=1)
    # each split moves towards the overall share, never past it
    assert np.all(np.abs(split - overall) <= np.abs(old - overall) + 1e-12)
    np.testing.assert_array_equal(shrink_boolean_split(table.T, None, 1)[0], table.T)


def test_shrink_boolean_split_transposed_is_the_same() -> None:
    rng = np.random.default_rng(7)
    table = rng.dirichlet(np.ones(10)).reshape(5, 2)
    a = rng.normal(size=(10, 10)) * 1e-3
    cov = a @ a.T
    perm = np.array([0, 2, 4, 6, 8, 1, 3, 5, 7, 9])  # C order of the (2, 5) transpose
    shrunk, _ = shrink_boolean_split(table, cov, 0)
    shrunk_t, _ = shrink_boolean_split(table.T, cov[np.ix_(perm, perm)], 1)
    np.testing.assert_allclose(shrunk_t, shrunk.T, rtol=1e-12)


def _nested_table(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(4, 3, 2): the boolean's split depends on the first string only, plus noise; its covariance."""
    pairs = rng.dirichlet(np.ones(12) * 3).reshape(4, 3)
    split = np.array([0.1, 0.4, 0.6, 0.9])[:, None] + rng.normal(0, 0.05, size=(4, 3))
    table = np.stack([pairs * split, pairs * (1 - split)], axis=2)
    a = rng.normal(size=(24, 24)) * 2e-3
    return table, a @ a.T + np.eye(24) * 1e-4


def test_nested_split_keeps_pair_shares_picks_the_varying_parent_and_is_order_free() -> None:
    table, cov = _nested_table(np.random.default_rng(3))
    shrunk, parent = shrink_nested_boolean_split(table, cov, 2)
    assert parent == 0  # the splits vary with the first string (0.1 .. 0.9), not the second
    np.testing.assert_allclose(shrunk.sum(axis=2), table.sum(axis=2), rtol=1e-12)
    assert np.all((shrunk >= 0) & np.isfinite(shrunk))
    # the same table with the boolean first and the strings swapped: the same result, transposed
    order = (2, 1, 0)
    index = np.transpose(np.arange(24).reshape(4, 3, 2), order).reshape(-1)
    moved, parent_m = shrink_nested_boolean_split(np.transpose(table, order), cov[np.ix_(index, index)], 0)
    assert parent_m == 2
    np.testing.assert_allclose(moved, np.transpose(shrunk, order), rtol=1e-10, atol=1e-15)
    assert shrink_nested_boolean_split(table, None, 2) == (table, None)


@pytest.mark.parametrize("seed", [11, 12])
def test_default_decode_is_closer_than_maximum_likelihood_and_inside_its_interval(seed: int) -> None:
    # 50 Zipf strings x boolean at 50,000 clients: most categories' splits have standard errors of
    # 0.1-0.3, so Stein's estimator is closer to the truth (0.10-0.12 against 0.15-0.18 at 100,000
    # on the design collections; here required only to be closer on each seed).
    joint, values, cands = example_joint("string-bool", 50)
    sim = simulate_association(PARAMS, joint, values, 50_000, candidates=cands, rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder(other_share="fit").decode(sim.reports, sim.variables)  # the shrinkage alone
    assert res.maximum_likelihood is not None
    truth = sim.truth(res.categories)
    assert total_variation(res.proportion, truth) < total_variation(res.maximum_likelihood, truth)
    np.testing.assert_allclose(res.proportion.sum(axis=1), res.maximum_likelihood.sum(axis=1), atol=1e-12)
    ci = res.confidence_interval()
    assert np.all((ci.low <= res.proportion + 1e-15) & (res.proportion <= ci.high + 1e-15))


def test_string_by_string_tables_are_not_shrunk_by_the_boolean_split() -> None:
    joint, values, cands = example_joint("string-string", 6, 3)
    sim = simulate_association(PARAMS, joint, values, 5000, candidates=cands, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder(independence_test=False, shrinkage="boolean-split",
                                 other_share="fit").decode(sim.reports, sim.variables)
    assert res.maximum_likelihood is None


def test_decode_reports_each_stage_to_progress_in_order() -> None:
    from rappor.analysis.association._decoder import STAGES

    joint, values, cands = example_joint("string-bool", 6)
    sim = simulate_association(PARAMS, joint, values, 3000, candidates=cands, rng=1)
    seen: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        AssociationDecoder().decode(sim.reports, sim.variables, progress=seen.append)
    assert tuple(seen) == STAGES


def _two_level_model() -> tuple:
    """True splits: the first string's 0.1 .. 0.9 plus sd 0.03 a pair; tables seen with noise sd 0.01 a cell."""
    rng = np.random.default_rng(0)
    pairs = rng.dirichlet(np.ones(12) * 3).reshape(4, 3)
    split = np.array([0.1, 0.4, 0.6, 0.9])[:, None] + rng.normal(0, 0.03, size=(4, 3))
    truth = np.stack([pairs * split, pairs * (1 - split)], axis=2)

    def noisy_tables(count: int):
        for _ in range(count):
            yield np.clip(truth + rng.normal(0, 1e-2, size=truth.shape), 1e-6, None)

    return rng, split, noisy_tables


def test_nested_split_lowers_the_splits_error_against_the_truth() -> None:
    # The point of the two-level model: pairs whose true split is their first string's (0.1 .. 0.9)
    # up to small deviations, seen through independent noise (sd 0.01 a cell, pair masses about
    # 0.08): the shrunk pair splits are far nearer the truth than the noisy ones, on average over
    # 200 draws (measured ratio 0.14-0.37 over seeds 0-5; asserted below 0.6).
    rng, split, noisy_tables = _two_level_model()
    cov = np.eye(24) * 1e-4
    noisy_error = shrunk_error = 0.0
    parents = []
    for noisy in noisy_tables(200):
        shrunk, parent = shrink_nested_boolean_split(noisy, cov, 2)
        parents.append(parent)
        noisy_error += float(((noisy[..., 0] / noisy.sum(axis=2) - split) ** 2).sum())
        shrunk_error += float(((shrunk[..., 0] / shrunk.sum(axis=2) - split) ** 2).sum())
    assert shrunk_error < 0.6 * noisy_error
    assert parents.count(0) >= 190  # the string the splits vary with


def test_nested_split_posterior_intervals_cover_the_true_splits() -> None:
    # The two-level model of the test above (true splits: the first string's 0.1 .. 0.9 plus sd 0.03
    # per pair; cell noise sd 0.01): split +- 1.96 std must hold the true split about 95% of the time.
    # Empirical Bayes plugs in the estimated spreads and ignores their own noise, so its intervals run
    # a little short (Morris 1983, JASA 78(381)); measured 0.917-0.955 over seeds 0-3 (3,600 pair
    # splits each), asserted within 0.90-0.99.
    rng, split, noisy_tables = _two_level_model()
    cov = np.eye(24) * 1e-4
    inside = []
    for noisy in noisy_tables(300):
        posterior = nested_split_posterior(noisy, cov, 2, pairs="shrink")
        assert posterior is not None and posterior.parent == 0
        inside.append(np.abs(posterior.split - split) <= 1.96 * posterior.std)
    assert 0.90 <= np.mean(inside) <= 0.99


def test_nested_split_posterior_leaves_an_unmeasured_pair_as_uncertain_as_any() -> None:
    table, cov = _nested_table(np.random.default_rng(3))
    table[1, 2] = 0.0  # no mass: the pair's split is its parent's, with the parent's and the pairs' spread
    table /= table.sum()
    posterior = nested_split_posterior(table, cov, 2, pairs="shrink")
    assert posterior is not None and posterior.parent == 0
    measured = np.delete(posterior.std.reshape(-1), 5)
    assert posterior.std[1, 2] >= measured.max() - 1e-15
    shrunk, _ = shrink_nested_boolean_split(table, cov, 2)
    assert np.all(shrunk[1, 2] == 0)


def test_a_category_with_almost_no_mass_does_not_pool_every_split() -> None:
    # A category at 1e-17 (an Other whose mass the marginal decode moved out) has a delta-method
    # split variance of about 1e30; under the share-weighted moments used until session 13 it set the
    # spread's estimate (0) and pooled every split to one value.  Now its variance is capped at 1/4 and
    # the random-effects estimate weights it by its precision: it counts as one split measured with
    # variance 1/4, and the others' shrunk splits may move a little (measured 0.007), not collapse
    # (their range 0.1 .. 0.9 becomes 0 when pooled).  A guard against the collapse coming back.
    rng = np.random.default_rng(4)
    shares = rng.dirichlet(np.ones(6) * 4)
    split = np.array([0.1, 0.3, 0.5, 0.6, 0.8, 0.9])
    table = np.stack([shares * split, shares * (1 - split)], axis=1)
    alone, _ = shrink_boolean_split(table, np.eye(12) * 1e-4, 0)
    with_tiny, _ = shrink_boolean_split(np.vstack([table, [[1e-17, 1e-17]]]), np.eye(14) * 1e-4, 0)
    kept = alone[:, 0] / alone.sum(axis=1)
    np.testing.assert_allclose(with_tiny[:6, 0] / with_tiny[:6].sum(axis=1), kept, atol=0.03)
    assert np.ptp(kept) > 0.5  # the splits were not pooled in the first place


def test_random_effects_recovers_the_mean_and_spread_and_solves_its_equation() -> None:
    # c_i ~ N(0.45, 0.02 + v_i), 40 values, v_i in [0.002, 0.05], 400 replications: the Paule-Mandel
    # estimates average to the truth within 4 standard errors of their mean (sd over the
    # replications / 20; measured tau^2 0.0197-0.0203, sd 0.009-0.010, over seeds 0-2).
    rng = np.random.default_rng(0)
    estimates = []
    for _ in range(400):
        v = rng.uniform(0.002, 0.05, size=40)
        c = 0.45 + rng.normal(0, np.sqrt(0.02), 40) + rng.normal(0, np.sqrt(v))
        mu, tau2 = random_effects(c, v)
        w = 1 / (tau2 + v)
        if tau2 > 0:  # the defining equation holds at the root (bisection to 2^-60)
            assert abs(np.sum(w * (c - mu) ** 2) - 39) < 1e-6
        estimates.append((mu, tau2))
    est = np.array(estimates)
    for column, truth in ((0, 0.45), (1, 0.02)):
        assert abs(est[:, column].mean() - truth) < 4 * est[:, column].std() / 20
    # no spread beyond the noise: 0 whenever the weighted squares are at most n - 1
    v = np.full(10, 0.01)
    c = 0.5 + 0.05 * np.array([1, -1] * 5)  # sum of w (c - mu)^2 = 10 * 0.0025 / 0.01 = 2.5 <= 9
    mu, tau2 = random_effects(c, v)
    assert tau2 == 0.0 and abs(mu - 0.5) < 1e-12


def test_a_pair_with_almost_no_mass_does_not_pool_the_pairs() -> None:
    # The level-2 spread's moment estimate weights each pair by its share: a pair at 1e-17 with an
    # uncapped variance (1e30) made it 0, and every pair took its parent's split.  Capped at 1/4, its
    # term is negligible, and pairs that differ from their parent by sd 0.15, measured to about 0.03,
    # keep most of it.
    rng = np.random.default_rng(1)
    pairs = rng.dirichlet(np.ones(12) * 3).reshape(4, 3)
    split = np.clip(np.array([0.1, 0.4, 0.6, 0.9])[:, None] + rng.normal(0, 0.15, size=(4, 3)), 0.05, 0.95)
    table = np.stack([pairs * split, pairs * (1 - split)], axis=2) + rng.normal(0, 1e-3, size=(4, 3, 2))
    table[1, 2] = 1e-17
    posterior = nested_split_posterior(np.clip(table, 1e-9, None), np.eye(24) * 1e-6, 2, pairs="shrink")
    pooled = nested_split_posterior(np.clip(table, 1e-9, None), np.eye(24) * 1e-6, 2, pairs="pool")
    assert posterior is not None and pooled is not None
    measured = np.ones((4, 3), dtype=bool)
    measured[1, 2] = False
    shrunk_error = np.abs(posterior.split - split)[measured].sum()
    pooled_error = np.abs(pooled.split - split)[measured].sum()
    assert shrunk_error < 0.5 * pooled_error, (shrunk_error, pooled_error)  # measured 0.10 against 0.69


def test_pooled_pairs_take_their_parents_split_and_uncertainty() -> None:
    table, cov = _nested_table(np.random.default_rng(3))
    pooled = nested_split_posterior(table, cov, 2, pairs="pool")
    shrunk = nested_split_posterior(table, cov, 2)
    assert pooled is not None and shrunk is not None and pooled.parent == shrunk.parent == 0
    # every pair of a first-string category has one split and one std: the category's
    assert np.ptp(pooled.split, axis=1).max() == 0 and np.ptp(pooled.std, axis=1).max() == 0
    assert np.ptp(pooled.split[:, 0]) > 0.3  # the categories' splits differ (0.1 .. 0.9)
    with pytest.raises(ValueError, match="pairs"):
        nested_split_posterior(table, cov, 2, pairs="partial")


def test_random_effects_with_a_held_mean_recovers_the_spread_and_solves_its_equation() -> None:
    # c_i ~ N(0, 0.02 + v_i), 40 values, the mean held at 0 (effects around a mean fitted elsewhere):
    # sum_i w_i c_i^2 = n at the root (no degree of freedom spent on the mean), and the estimates of
    # tau^2 average to the truth within 4 standard errors of their mean over 400 replications.
    rng = np.random.default_rng(5)
    estimates = []
    for _ in range(400):
        v = rng.uniform(0.002, 0.05, size=40)
        c = rng.normal(0, np.sqrt(0.02), 40) + rng.normal(0, np.sqrt(v))
        mu, tau2 = random_effects(c, v, mean=0.0)
        assert mu == 0.0
        if tau2 > 0:
            assert abs(np.sum(c**2 / (tau2 + v)) - 40) < 1e-6
        estimates.append(tau2)
    est = np.array(estimates)
    assert abs(est.mean() - 0.02) < 4 * est.std() / 20


def _two_way_model(second: np.ndarray, seed: int = 6):
    """True splits: the first string's 0.2 .. 0.8 plus ``second`` (the second string's effect) plus sd 0.02 a pair."""
    rng = np.random.default_rng(seed)
    pairs = rng.dirichlet(np.ones(30) * 3).reshape(6, 5)
    split = np.linspace(0.2, 0.8, 6)[:, None] + second[None, :] + rng.normal(0, 0.02, size=(6, 5))
    truth = np.stack([pairs * split, pairs * (1 - split)], axis=2)

    def error(effects: bool, count: int = 200) -> float:
        """The mean share-weighted absolute error of the splits over ``count`` noisy tables (the same for every call)."""
        noise = np.random.default_rng(seed + 1)
        total = 0.0
        for _ in range(count):
            noisy = np.clip(truth + noise.normal(0, 4e-3, size=truth.shape), 1e-6, None)
            posterior = nested_split_posterior(noisy, np.eye(60) * 1.6e-5, 2, effects=effects)
            assert posterior is not None
            total += float(np.sum(pairs * np.abs(posterior.split - split)))
        return total / count

    return error


def test_nested_split_models_the_other_strings_effect() -> None:
    # The boolean depends on both strings, P(TRUE | a, b) = 0.2 .. 0.8 (a) + -0.15 .. 0.15 (b), and the
    # pairs' splits are measured with sd about 0.1 (cell noise 4e-3, pair shares about 0.033): the
    # prior with the second string's shrunk effect brings the splits nearer the truth (share-weighted
    # absolute error over the same 200 noisy tables; measured 0.69-0.78 of it over seeds 6-9, asserted
    # below 0.85).
    error = _two_way_model(np.linspace(-0.15, 0.15, 5))
    assert error(True) < 0.85 * error(False)


def test_nested_split_without_the_other_strings_effect_is_as_before() -> None:
    # The boolean depends on the first string only: the effects' spread comes out at or near 0 and
    # the splits are as close to the truth as without the effects (the same 200 noisy tables; measured
    # ratio 1.000-1.007 over seeds 6-9, asserted below 1.03).
    error = _two_way_model(np.zeros(5))
    assert error(True) < 1.03 * error(False)
