"""Tests of rappor.analysis.decoder._bayes: NPMLE prior and local fdr."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rappor.analysis.decoder import _bayes
from rappor.analysis.decoder._adjust import adjust_pvalues


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



def test_local_fdr_blockwise_equals_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Posteriors read a block of rows at a time (large lists) equal the one-block result."""
    rng = np.random.default_rng(8)
    z = np.concatenate([rng.normal(size=500), rng.normal(size=40) + 4.0])
    whole = _bayes.local_fdr(z)[0]
    monkeypatch.setattr(_bayes, "_POSTERIOR_BLOCK", 7)
    np.testing.assert_allclose(_bayes.local_fdr(z)[0], whole, rtol=1e-12, atol=1e-15)  # (BLAS rounding differs)


def test_local_fdr_far_below_zero_is_absent():
    """A p-value of 1 is z = -inf: its posterior sits on mu = 0, not on the prior's top atom.

    Regression: the likelihoods underflowed to 0 for the whole row and the fallback put the
    posterior on the largest grid point, so a candidate with p = 1 looked present.
    """
    rng = np.random.default_rng(6)
    z = np.concatenate([rng.normal(size=200), [6.0, 7.0, -np.inf, -60.0, np.inf]])
    lfdr = _bayes.local_fdr(z)[0]
    assert np.all(np.isfinite(lfdr))
    np.testing.assert_allclose(lfdr[-3:-1], 1.0)
    assert lfdr[-1] < 1e-6  # +inf: clipped, surely present
