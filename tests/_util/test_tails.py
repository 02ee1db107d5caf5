"""The tail functions equal scipy.stats' to the last bit (they evaluate the same expressions)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rappor._util.tails import chi2_sf, norm_isf, norm_logpdf, norm_logsf, norm_sf

X = np.concatenate([[-np.inf, -40.0, -8.5, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.96, 8.0, 38.5, 40.0, np.inf, np.nan],
                    np.random.default_rng(0).normal(scale=6.0, size=500)])
Q = np.concatenate([[0.0, 1e-300, 1e-20, 0.025, 0.5, 0.975, 1.0 - 1e-16, 1.0, -0.1, 1.1, np.nan],
                    np.random.default_rng(1).random(500), 10.0 ** -np.arange(1, 300, 7)])


@pytest.mark.parametrize(("ours", "theirs", "grid"), [
    (norm_sf, stats.norm.sf, X),
    (norm_logsf, stats.norm.logsf, X),
    (norm_logpdf, stats.norm.logpdf, X),
    (norm_isf, stats.norm.isf, Q),
])
def test_normal_tails_equal_scipy_stats(ours: object, theirs: object, grid: np.ndarray) -> None:
    got, want = ours(grid), theirs(grid)  # type: ignore[operator]
    np.testing.assert_array_equal(got, want)
    for value in grid[:12]:  # scalars come back as NumPy scalars, as from scipy.stats
        one, ref = ours(value), theirs(value)  # type: ignore[operator]
        assert np.shape(one) == () and (one == ref or (np.isnan(one) and np.isnan(ref)))


@pytest.mark.parametrize("df", [1, 2, 7, 63, 1000.5, 200_000])
def test_chi2_sf_equals_scipy_stats(df: float) -> None:
    for x in [-1.0, 0.0, 1e-9, 0.5, df / 2, df, df + 3 * np.sqrt(2 * df), 10 * df, 1e7, np.inf, np.nan]:
        want = float(stats.chi2.sf(x, df))
        got = chi2_sf(x, df)
        assert got == want or (np.isnan(got) and np.isnan(want)), (x, df, got, want)


def test_chi2_sf_bad_degrees_of_freedom_is_nan() -> None:
    assert np.isnan(chi2_sf(3.0, 0)) and np.isnan(float(stats.chi2.sf(3.0, 0)))
