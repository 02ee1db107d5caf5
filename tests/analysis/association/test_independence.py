"""The independence test's null law when some categories' marginal shares sit at 0.

Under independence the table is a product of *distributions*: the null's fit cannot give a
category a negative share.  The simulated law of the statistic must keep that bound, or it is
too small wherever the marginal fit holds categories at 0 (``--categories all`` with many
candidates nobody reports), and independent data are rejected.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize

from rappor import Params
from rappor.analysis.association import AssociationDecoder, simulate_association
from rappor.analysis.association._inference import _bounded_null_residual, _independence_directions


def test_bounded_null_residual_is_the_bounded_least_squares_minimum() -> None:
    # Each row's residual against scipy's bounded least squares (BVLS) on the same problem; both
    # solve a strictly convex program, so they agree to the solvers' tolerance.
    rng = np.random.default_rng(0)
    directions = rng.standard_normal((30, 8))
    lower = np.array([0.0, 0.0, 0.0, -0.3, -0.5, -1.0, -2.0, -0.1])
    noise = rng.standard_normal((40, 30))
    got = _bounded_null_residual(directions, lower, noise)
    for e, value in zip(noise, got):
        fit = optimize.lsq_linear(directions, e, bounds=(lower, np.inf), method="bvls", tol=1e-12)
        np.testing.assert_allclose(value, 2.0 * fit.cost, rtol=1e-8, atol=1e-10)
    # Without bounds that bind, the residual is that of the unconstrained least squares.
    free = _bounded_null_residual(directions, np.full(8, -1e9), noise)
    coef, *_ = np.linalg.lstsq(directions, noise.T, rcond=None)
    np.testing.assert_allclose(free, ((noise.T - directions @ coef) ** 2).sum(axis=0), rtol=1e-8)
    assert (got >= free - 1e-9).all()


def test_independence_directions_move_one_category_against_the_largest() -> None:
    marginals = [np.array([0.2, 0.0, 0.8]), np.array([0.6, 0.4])]
    tangent, lower = _independence_directions(marginals)
    assert tangent.shape == (6, 3)
    np.testing.assert_allclose(tangent.sum(axis=0), 0.0, atol=1e-15)  # every direction keeps the total
    # The first marginal's categories 0 and 1 against category 2 (its largest), then the second's 1 against 0.
    np.testing.assert_allclose(tangent[:, 0].reshape(3, 2), np.outer([1, 0, -1], [0.6, 0.4]))
    np.testing.assert_allclose(tangent[:, 2].reshape(3, 2), np.outer([0.2, 0.0, 0.8], [-1, 1]))
    np.testing.assert_allclose(lower, [-0.2, -0.0, -0.4])


def test_independence_p_values_are_uniform_when_marginal_categories_sit_at_zero() -> None:
    # 40 Zipf candidates x an independent boolean, 20,000 clients at weak parameters, every
    # candidate a category: the marginal fit holds 10-13 of them at 0.  A calibrated test's
    # p-values are uniform: the mean of 10 is 0.5 with SE 0.091, so within 4 SE of it (false
    # failure about 1e-4).  When the null's draws let those shares go negative, every p-value
    # was 0.005-0.009 (measured), the mean far below 0.14.
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    shares = 1.0 / np.arange(1, 41)
    joint = np.outer(shares / shares.sum(), [0.5, 0.5])
    values = [[f"v{i}" for i in range(40)], None]
    dec = AssociationDecoder(candidates="all", std_errors=False)
    pvalues, zeros = [], []
    for seed in range(10):
        sim = simulate_association(params, joint, values, 20_000, rng=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dec.decode(sim.reports, sim.variables)
        assert res.independence is not None and "boundary-aware" in res.independence.method
        pvalues.append(res.independence.pvalue)
        zeros.append(int((res.proportion.sum(axis=1) < 1e-9).sum()))
    assert min(zeros) >= 5  # the case this guards: categories at 0
    assert abs(np.mean(pvalues) - 0.5) < 4 * np.sqrt(1 / 12 / 10)
