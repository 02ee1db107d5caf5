"""Tests of rappor.decoder._bayes: NPMLE prior, local fdr, posterior effects, capped simplex."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rappor.decoder import _bayes
from rappor.decoder._adjust import adjust_pvalues


def test_local_fdr_all_null_puts_prior_mass_at_zero():
    """Pure N(0, 1) z-scores: the NPMLE puts most prior mass at 0 and no q-value passes 0.05.

    5,000 null z-scores; the largest is about 3.7, where a N(0,1) tail leaves no room for
    an effect: the fitted prior mass at 0 is >= 0.9 (measured 0.99+) and the estimated FDR
    of any set stays above 0.05.
    """
    rng = np.random.default_rng(3)
    p = stats.norm.sf(rng.normal(size=5000))
    lfdr, grid, w = _bayes.local_fdr(stats.norm.isf(p))
    assert grid[0] == 0.0 and w[0] >= 0.9 and np.all((lfdr >= 0) & (lfdr <= 1))
    assert np.min(adjust_pvalues(p, "lfdr")) > 0.05



def test_local_fdr_detects_clear_effects():
    """200 effects at 5 sd among 4,800 nulls: nearly all found, estimated FDR honest.

    At z = 5 - 1.64 (the 5% lower tail) the local fdr is still tiny, so >= 180 of the 200
    effects pass at 0.05; false detections are at most 5% of the rejections plus
    sampling slack (binomial sd of ~1.7 on ~190): we allow 20.
    """
    rng = np.random.default_rng(4)
    z = rng.normal(size=5000)
    z[:200] += 5.0
    rejected = adjust_pvalues(stats.norm.sf(z), "lfdr") <= 0.05
    assert rejected[:200].sum() >= 180 and rejected[200:].sum() <= 20



def test_posterior_effects_properties():
    """Median is 0 exactly when the local fdr is >= 1/2, nondecreasing in z, near z for clear effects."""
    rng = np.random.default_rng(5)
    z = rng.normal(size=3000)
    z[:300] += rng.uniform(0.0, 8.0, size=300)
    lfdr, median, mean = _bayes.posterior_effects(z)
    assert np.all(median >= 0)
    np.testing.assert_array_equal(median > 0, lfdr < 0.5)
    order = np.argsort(z)
    assert np.all(np.diff(median[order]) >= -1e-9)
    # Far beyond any null z (the max of 2,700 N(0,1) is about 3.6) the posterior is that of
    # the effects alone: its median stays within about one sd of z (more only at the edge of
    # the prior's support, effects <= 8, where z up to ~10 is shrunk towards it: measured
    # shrinkage 0.15-2.2, mean 0.58).
    clear = z > 6
    assert clear.any() and np.all((median[clear] > z[clear] - 3.0) & (median[clear] < z[clear] + 1.0))
    assert np.mean(np.abs(median[clear] - z[clear])) < 0.7
    assert np.all(mean >= 0) and np.all(np.diff(mean[order]) >= -1e-9)
    assert all(x.size == 0 for x in _bayes.posterior_effects(np.zeros(0)))



def test_posterior_effects_blockwise_equals_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Posteriors summarized a block of rows at a time (large lists) equal the one-block result."""
    rng = np.random.default_rng(8)
    z = np.concatenate([rng.normal(size=500), rng.normal(size=40) + 4.0])
    whole = _bayes.posterior_effects(z)
    monkeypatch.setattr(_bayes, "_POSTERIOR_BLOCK", 7)
    for got, want in zip(_bayes.posterior_effects(z), whole):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)  # (BLAS rounding differs by block)
    np.testing.assert_allclose(_bayes.local_fdr(z)[0], whole[0], rtol=1e-12, atol=1e-15)



def test_posterior_effects_far_below_zero_is_absent():
    """A p-value of 1 is z = -inf: its posterior sits on mu = 0, not on the prior's top atom.

    Regression: the likelihoods underflowed to 0 for the whole row and the fallback put the
    posterior on the largest grid point, so a candidate with p = 1 got the largest effect.
    """
    rng = np.random.default_rng(6)
    z = np.concatenate([rng.normal(size=200), [6.0, 7.0, -np.inf, -60.0, np.inf]])
    lfdr, median, mean = _bayes.posterior_effects(z)
    assert np.all(np.isfinite(lfdr)) and np.all(np.isfinite(median)) and np.all(np.isfinite(mean))
    np.testing.assert_array_equal(median[-3:-1], [0.0, 0.0])
    np.testing.assert_allclose(lfdr[-3:-1], 1.0)
    assert np.all(mean[-3:-1] < 1e-6)
    assert median[-1] > 6.0 and median[-1] >= median[-4]  # +inf: clipped, the largest effect



def test_project_capped_simplex():
    from rappor.decoder._bayes import project_capped_simplex

    rng = np.random.default_rng(6)
    for _ in range(20):
        w = rng.exponential(size=rng.integers(1, 30)) * rng.uniform(0.01, 0.2)
        cap = rng.uniform(0.0, 1.0)
        x = project_capped_simplex(w, cap)
        assert np.all(x >= 0) and x.sum() <= cap + 1e-12
        if w.sum() <= cap:
            np.testing.assert_array_equal(x, w)
        else:  # KKT: x = max(w - tau, 0) with one tau >= 0 and the cap active
            tau = (w - x)[x > 0]
            assert np.isclose(x.sum(), cap) and (tau.size == 0 or np.ptp(tau) < 1e-12)
            assert np.all(w[x == 0] <= (tau[0] if tau.size else np.inf) + 1e-12)

