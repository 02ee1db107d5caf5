"""The outside strings' estimated bit rates carried into the table's covariance (_nuisance)."""

from __future__ import annotations

import numpy as np

from rappor import Params
from rappor.analysis.association import example_joint, simulate_association
from rappor.analysis.association._likelihood import group_reports, likelihood_factors
from rappor.analysis.association._mixture import ProductLikelihood
from rappor.analysis.association._nuisance import nuisance_covariance, nuisance_score_products
from rappor.analysis.association._other import OutsideNoise, report_folds

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75, prob_f=0.5)


def _problem(other: np.ndarray) -> tuple[ProductLikelihood, object, list[tuple[object, ...]]]:
    """6 strings x boolean, 5 strings' categories and Other with a row per (fold, cohort)."""
    joint, values, cands = example_joint("string-bool", 6)
    sim = simulate_association(PARAMS, joint, values, 3000, candidates=cands, rng=3)
    folds = report_folds(sim.reports[0].cohorts)
    patterns = group_reports(sim.reports, folds)
    string, boolean = sim.variables
    selections = [(np.arange(5, dtype=np.intp), tuple(string.candidate_map.strings[:5]) + ("Other",), None, other),
                  (np.arange(2, dtype=np.intp), tuple(boolean.candidate_map.strings), None, None)]
    factors, impossible = likelihood_factors(patterns, sim.variables, selections)
    assert not impossible.any()
    return ProductLikelihood(factors, patterns.counts.astype(np.float64)), patterns, selections


def test_the_score_derivative_is_the_change_of_the_gradient_with_other_s_rates() -> None:
    # G[:, (r, j)] = d/d o[r, j] of the log-likelihood's gradient sum_i n_i L_i / (L_i . pi): with
    # Cov(o) a single direction e_(r, j), G Cov(o) G' = g g', against central differences of the
    # gradient (step 1e-6 on a smooth function of o: error ~1e-12 relative, checked at 1e-6).
    rng = np.random.default_rng(0)
    other = rng.uniform(0.2, 0.6, size=(8, 16))
    lik, patterns, _ = _problem(other)
    table = rng.dirichlet(np.ones(lik.size))
    for r, j in ((0, 3), (5, 11)):
        direction = np.zeros((8 * 16, 1))
        direction[r * 16 + j] = 1.0
        products = nuisance_score_products(lik, table, patterns, [(16, 4, other, OutsideNoise(np.zeros(128), direction)), None])

        def gradient(o: np.ndarray) -> np.ndarray:
            moved, _, _ = _problem(o)
            return moved.gradient(moved.weights / moved.forward(table))

        up, down = other.copy(), other.copy()
        up[r, j] += 1e-6
        down[r, j] -= 1e-6
        g = (gradient(up) - gradient(down)) / 2e-6
        assert np.abs(g).max() > 1.0  # the rate matters
        np.testing.assert_allclose(products, np.outer(g, g), rtol=1e-6, atol=1e-6 * np.abs(g).max() ** 2)
        # The binomial part: a variance v at (r, j) gives v g g'.
        variance = np.zeros(128)
        variance[r * 16 + j] = 0.25
        diagonal = nuisance_score_products(lik, table, patterns, [(16, 4, other, OutsideNoise(variance, np.zeros((128, 0)))), None])
        np.testing.assert_allclose(diagonal, 0.25 * products, rtol=1e-12, atol=1e-12 * np.abs(products).max())


def test_the_carried_covariance_adds_c_products_c_and_leaves_infinite_entries() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 4))
    c = a @ a.T
    products = np.diag([1.0, 0.0, 0.0, 2.0])
    np.testing.assert_allclose(nuisance_covariance(c, products), c + c @ products @ c)
    c_inf = c.copy()
    c_inf[2, 2] = np.inf
    out = nuisance_covariance(c_inf, products)
    assert out[2, 2] == np.inf and np.isfinite(out[0, 0])
