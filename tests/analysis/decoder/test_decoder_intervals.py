"""Tests of rappor.analysis.decoder._intervals: the truncated-normal (selective) interval."""

from __future__ import annotations

import numpy as np

from rappor.analysis.decoder._intervals import truncated_normal_interval


def test_truncated_normal_interval_covers_conditionally():
    """Draws of N(mu, 1) kept only above the cutoff: the conditional interval covers mu 95% of the time.

    4,000 kept draws per mu: the coverage's SE is sqrt(0.95 x 0.05 / 4000) = 0.0034; we allow
    4 SE (0.014), a false failure below 1e-4 per mu.  Far above the cutoff it is the Wald interval.
    """
    rng = np.random.default_rng(7)
    cutoff = 2.0
    for mu in (0.0, 1.5, 3.0, 6.0):
        z = rng.normal(mu, 1.0, size=400_000)
        z = z[z > cutoff][:4000]
        assert len(z) == 4000
        low, high = truncated_normal_interval(z, cutoff, 0.95)
        assert np.all(low <= high)
        assert abs(np.mean((low <= mu) & (mu <= high)) - 0.95) < 0.014
    low, high = truncated_normal_interval(np.array([15.0]), cutoff, 0.95)
    np.testing.assert_allclose([low[0], high[0]], [15.0 - 1.959964, 15.0 + 1.959964], atol=1e-4)

