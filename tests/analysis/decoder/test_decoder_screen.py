"""Tests of rappor.analysis.decoder._screen: the screening Lasso and its cross-validated penalty."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rappor.analysis.decoder._problem import column_sq_norms
from rappor.analysis.decoder._screen import cohort_folds, cv_lasso, cv_lasso_alpha, lasso_screen, standardize_design
from rappor.exceptions import InvalidParameterError

PLANTED = np.array([0, 1, 2])
#: A short penalty grid keeps every cross-validation here well under a second.
GRID = 12


def planted_problem(seed: int, *, n_cohorts: int = 30, k: int = 8, s: int = 80,
                    with_free: bool = False) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray, np.ndarray | None]:
    """A RAPPOR-like design: every candidate sets 2 of the k bits of each cohort; 3 are present.

    Noise is N(0, 1) per row (the whitened scale); the planted columns have effects of
    about 6 noise units per unit-norm column, so the Lasso at a sensible penalty keeps them.
    """
    rng = np.random.default_rng(seed)
    n = n_cohorts * k
    rows = (np.arange(n_cohorts)[:, None, None] * k + rng.integers(0, k, size=(n_cohorts, s, 2))).transpose(1, 0, 2)
    cols = np.repeat(np.arange(s), n_cohorts * 2)
    a = sp.csc_matrix((np.ones(cols.size), (rows.reshape(-1), cols)), shape=(n, s))
    a.data[:] = 1.0  # duplicate hashes set one bit
    a.sum_duplicates()
    a.data[:] = 1.0
    norms = np.sqrt(column_sq_norms(a))
    b = a[:, PLANTED] @ (np.array([8.0, 6.0, 6.0]) / norms[PLANTED]) + rng.normal(size=n)
    free = None
    if with_free:
        free = np.full(n, 0.2)
        b = b + 5.0 * free
    return a, b, np.repeat(np.arange(n_cohorts), k), free


def test_cohort_folds_keep_cohorts_whole() -> None:
    rng = np.random.default_rng(0)
    cohorts = np.repeat(np.arange(23), rng.integers(1, 6, size=23))  # uneven rows per cohort
    fold_of_row, fold_of_cohort = cohort_folds(cohorts, 5, np.random.default_rng(1))
    for c in np.unique(cohorts):
        assert len(set(fold_of_row[cohorts == c].tolist())) == 1
        assert fold_of_row[cohorts == c][0] == fold_of_cohort[int(c)]
    sizes = np.bincount(list(fold_of_cohort.values()), minlength=5)
    assert np.ptp(sizes) <= 1  # 23 cohorts in 5 folds: 4 or 5 each
    assert set(fold_of_cohort.values()) == set(range(5))


def test_cv_lasso_folds_are_whole_cohorts() -> None:
    a, b, cohorts, _ = planted_problem(0)
    res = cv_lasso(a, b, cohorts, n_folds=4, n_alphas=GRID, rng=2)
    assert sorted(res.fold_of_cohort) == sorted(np.unique(cohorts).tolist())
    sizes = np.bincount(list(res.fold_of_cohort.values()))
    assert len(sizes) == 4 and sorted(sizes.tolist()) == [7, 7, 8, 8]


def test_cv_lasso_deterministic_given_rng() -> None:
    a, b, cohorts, free = planted_problem(1, with_free=True)
    first = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=7)
    again = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=np.random.default_rng(7))
    assert first.fold_of_cohort == again.fold_of_cohort
    np.testing.assert_array_equal(first.cv_mean, again.cv_mean)
    assert first.alpha_min == again.alpha_min and first.alpha_1se == again.alpha_1se
    # rng=None is a fixed seed, not fresh entropy.
    assert (cv_lasso_alpha(a, b, cohorts, free=free, n_alphas=GRID)
            == cv_lasso_alpha(a, b, cohorts, free=free, n_alphas=GRID))
    other = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=8)
    assert other.fold_of_cohort != first.fold_of_cohort


@pytest.mark.parametrize(("seed", "with_free"), [(2, False), (3, True), (4, True)])
def test_cv_alpha_in_grid_and_keeps_planted_support(seed: int, with_free: bool) -> None:
    a, b, cohorts, free = planted_problem(seed, with_free=with_free)
    res = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=seed)
    assert res.alphas[-1] <= res.alpha_1se <= res.alphas[0]
    assert res.alphas[-1] <= res.alpha_min <= res.alphas[0]
    assert np.all(np.diff(res.alphas) < 0)
    assert cv_lasso_alpha(a, b, cohorts, free=free, rule="1se", n_alphas=GRID, rng=seed) == res.alpha_1se
    for rule in ("min", "1se"):
        alpha = res.alpha(rule)  # type: ignore[arg-type]
        selected, used = lasso_screen(a, b, significance=0.05, n_tests=a.shape[1], lasso_alpha=alpha, free=free)
        assert used == alpha
        assert set(PLANTED.tolist()) <= set(selected.tolist())


@pytest.mark.parametrize("seed", range(3))
def test_one_se_alpha_at_least_min_alpha(seed: int) -> None:
    a, b, cohorts, _ = planted_problem(10 + seed)
    res = cv_lasso(a, b, cohorts, n_alphas=GRID, rng=seed)
    assert res.alpha_1se >= res.alpha_min
    i_min = int(np.flatnonzero(res.alphas == res.alpha_min)[0])
    i_1se = int(np.flatnonzero(res.alphas == res.alpha_1se)[0])
    assert res.cv_mean[i_min] == res.cv_mean.min()
    assert res.cv_mean[i_1se] <= res.cv_mean[i_min] + res.cv_se[i_min]
    assert np.all(res.cv_mean[:i_1se] > res.cv_mean[i_min] + res.cv_se[i_min])


def test_standardize_design_matches_unit_norm_and_free_scale() -> None:
    a, _, _, _ = planted_problem(5)
    free = np.full(a.shape[0], 3.0)
    std = standardize_design(a * 2.5, free)
    norms = np.sqrt(column_sq_norms(std))
    np.testing.assert_allclose(norms[:-1], 1.0)
    np.testing.assert_allclose(norms[-1], 1e4)


def test_explicit_alphas_and_bad_input() -> None:
    a, b, cohorts, _ = planted_problem(6)
    res = cv_lasso(a, b, cohorts, alphas=[0.001, 0.1, 0.01], n_folds=3)
    np.testing.assert_array_equal(res.alphas, [0.1, 0.01, 0.001])
    with pytest.raises(InvalidParameterError, match="at least 2 cohorts"):
        cv_lasso(a, b, np.zeros(len(b), dtype=int))
    with pytest.raises(InvalidParameterError, match="one entry per row"):
        cv_lasso(a, b[:-1], cohorts)
    with pytest.raises(InvalidParameterError, match="'n_folds'"):
        cv_lasso(a, b, cohorts, n_folds=1)
    with pytest.raises(InvalidParameterError, match="'rule'"):
        cv_lasso_alpha(a, b, cohorts, rule="max")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="'alphas'"):
        cv_lasso(a, b, cohorts, alphas=[0.1, -1.0])


def test_grid_starts_where_nothing_enters() -> None:
    """At the largest penalty of the default grid no candidate enters (alpha_max is the KKT bound)."""
    a, b, cohorts, free = planted_problem(8, with_free=True)
    res = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=0)
    selected, _ = lasso_screen(a, b, significance=0.05, n_tests=a.shape[1], lasso_alpha=res.alphas[0] * 1.001,
                               free=free)
    assert len(selected) == 0
    selected, _ = lasso_screen(a, b, significance=0.05, n_tests=a.shape[1], lasso_alpha=res.alphas[1], free=free)
    assert len(selected) >= 1


def test_cv_curve_is_scikit_learn_lasso_cv() -> None:
    """The curve is the held-out error of scikit-learn's positive Lasso path on the cohort folds.

    Recomputed here fold by fold with :class:`sklearn.linear_model.Lasso` at each penalty
    (tolerance 1e-8).  The decoder's path stops at scikit-learn's duality-gap tolerance
    1e-4 (relative to ``||b||^2``), so the held-out errors agree to about that: 1e-3 relative.
    """
    import warnings

    from sklearn.linear_model import Lasso

    a, b, cohorts, free = planted_problem(9, with_free=True)
    res = cv_lasso(a, b, cohorts, free=free, n_folds=3, n_alphas=6, rng=4)
    std = standardize_design(a, free).tocsr()
    fold_of_row = np.array([res.fold_of_cohort[int(c)] for c in cohorts])
    mse = np.zeros((3, len(res.alphas)))
    for f in range(3):
        train, test = fold_of_row != f, fold_of_row == f
        for i, alpha in enumerate(res.alphas):
            model = Lasso(alpha=alpha, fit_intercept=False, positive=True, max_iter=100_000, tol=1e-8)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(std[train], b[train])
            mse[f, i] = np.mean((b[test] - std[test] @ model.coef_) ** 2)
    weight = np.bincount(fold_of_row, minlength=3) / len(b)
    np.testing.assert_allclose(res.cv_mean, weight @ mse, rtol=1e-3)


def test_bic_penalty_is_refused() -> None:
    """lasso_alpha="bic" was dropped (docs/penalty.md: it lands on the plug-in's TV; LassoLarsIC needs a dense design)."""
    from rappor import Aggregate, Decoder, InvalidParameterError, Params, hash_candidates

    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="'lasso_alpha' parameter of Decoder must be a float > 0, 'cv' or None"):
        Decoder(lasso_alpha="bic").decode(Aggregate(params=params, counts=np.full((4, 9), 10)),  # type: ignore[arg-type]
                                          hash_candidates(["a"], params))
