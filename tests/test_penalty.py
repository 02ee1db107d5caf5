"""Tests of rappor._penalty: the cross-validated penalty of the screening Lasso."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rappor import _estimation as est
from rappor._penalty import bic_lasso_alpha, cohort_folds, cv_lasso, cv_lasso_alpha, standardize_design
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
    norms = np.sqrt(est.column_sq_norms(a))
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
    assert res.n_selected[0] <= 1  # the grid starts where (almost) nothing enters
    assert cv_lasso_alpha(a, b, cohorts, free=free, rule="1se", n_alphas=GRID, rng=seed) == res.alpha_1se
    for rule in ("min", "1se"):
        alpha = res.alpha(rule)  # type: ignore[arg-type]
        selected, used = est.lasso_screen(a, b, significance=0.05, n_tests=a.shape[1], lasso_alpha=alpha, free=free)
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
    assert res.n_selected[i_1se] <= res.n_selected[i_min]


def test_standardize_design_matches_unit_norm_and_free_scale() -> None:
    a, _, _, _ = planted_problem(5)
    free = np.full(a.shape[0], 3.0)
    std = standardize_design(a * 2.5, free)
    norms = np.sqrt(est.column_sq_norms(std))
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


@pytest.mark.parametrize("with_free", [False, True])
def test_strong_rule_path_matches_lasso_path(with_free: bool) -> None:
    """The screened path solves the same problems as scikit-learn's full path (objective within 1e-5)."""
    import warnings

    from sklearn.linear_model import lasso_path

    from rappor._penalty import _alpha_max, _path

    a, b, _, free = planted_problem(7, with_free=with_free)
    std = standardize_design(a, free)
    s = a.shape[1]
    grid = np.geomspace(_alpha_max(std, b, s, with_free), 1e-3, 15)
    ours = _path(std, b, grid, keep=s if with_free else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ref, _ = lasso_path(std, b, alphas=grid, positive=True, max_iter=10_000, tol=1e-8)
    n = len(b)

    def objective(w: np.ndarray, alpha: float) -> float:
        return float(np.sum((b - std @ w) ** 2) / (2 * n) + alpha * np.sum(w))

    for i, alpha in enumerate(grid):
        assert np.all(ours[:, i] >= 0)
        assert objective(ours[:, i], alpha) <= objective(ref[:, i], alpha) * (1 + 1e-5)


@pytest.mark.parametrize(("seed", "with_free"), [(20, False), (21, True)])
def test_bic_alpha_keeps_planted_support_and_is_deterministic(seed: int, with_free: bool) -> None:
    """BIC = RSS + log(n) df along the path (known unit noise): the planted columns stay in.

    The planted effects are about 6-8 noise units, far above the log(n) = 5.5 price of a
    column, so the BIC penalty keeps them; the criterion has no randomness.
    """
    a, b, cohorts, free = planted_problem(seed, with_free=with_free)
    alpha = bic_lasso_alpha(a, b, free=free, n_alphas=GRID)
    assert alpha == bic_lasso_alpha(a, b, free=free, n_alphas=GRID)
    grid = cv_lasso(a, b, cohorts, free=free, n_alphas=GRID, rng=0).alphas
    assert np.isclose(grid, alpha).any()  # same grid as the cross-validation
    selected, _ = est.lasso_screen(a, b, significance=0.05, n_tests=a.shape[1], lasso_alpha=alpha, free=free)
    assert set(PLANTED.tolist()) <= set(selected.tolist())
    # A larger noise variance makes every column dearer: the penalty cannot go down.
    assert bic_lasso_alpha(a, b, free=free, n_alphas=GRID, noise_variance=4.0) >= alpha


def test_bic_bad_input() -> None:
    a, b, _, _ = planted_problem(0)
    with pytest.raises(InvalidParameterError, match="one entry per row"):
        bic_lasso_alpha(a, b[:-1])
    with pytest.raises(InvalidParameterError, match="noise_variance"):
        bic_lasso_alpha(a, b, noise_variance=0.0)
