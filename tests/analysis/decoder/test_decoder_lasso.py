"""Tests of rappor.analysis.decoder._lasso: the exact non-negative Lasso against its KKT conditions and scikit-learn."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Lasso

from rappor.analysis.decoder._lasso import KKT_RTOL, nonnegative_lasso, nonnegative_qp
from rappor.analysis.decoder._screen import standardize_design


def rappor_problem(seed: int, *, n_cohorts: int = 32, k: int = 16, s: int = 600, n_present: int = 20,
                   duplicate: bool = False) -> tuple[sp.csc_matrix, np.ndarray]:
    """Unit-norm columns of 2 hashed bits per cohort (and the non-candidate column, norm 1e4), Zipf signal + N(0, 1)."""
    rng = np.random.default_rng(seed)
    n = n_cohorts * k
    rows = (np.arange(n_cohorts)[:, None, None] * k + rng.integers(0, k, size=(n_cohorts, s, 2))).transpose(1, 0, 2)
    cols = np.repeat(np.arange(s), n_cohorts * 2)
    a = sp.csc_matrix((np.ones(cols.size), (rows.reshape(-1), cols)), shape=(n, s))
    a.data[:] = 1.0
    if duplicate:  # two candidates with the same bits (degenerate Gram matrix)
        a = sp.hstack([a, a[:, [0]]]).tocsc()
    shares = 40.0 / np.arange(1, n_present + 1)
    b = np.asarray(a[:, :n_present] @ shares).ravel() / np.sqrt(2 * n_cohorts) + 3.0 + rng.normal(size=n)
    return standardize_design(a, np.ones(n)), b


def objective(a: sp.csc_matrix, b: np.ndarray, w: np.ndarray, alpha: float) -> float:
    return float(((b - a @ w) ** 2).sum() / (2 * len(b)) + alpha * w.sum())


@pytest.mark.parametrize(("seed", "z"), list(itertools.product([0, 1, 2], [4.5, 3.0, 1.5, 0.5])))
def test_solution_meets_kkt_and_matches_scikit_learn(seed: int, z: float) -> None:
    a, b = rappor_problem(seed)
    n = a.shape[0]
    alpha = z / n  # z = 4.5 is the plug-in penalty's scale; smaller ones select dozens to hundreds
    w = nonnegative_lasso(a, b, alpha)
    assert np.all(w >= 0)
    c = np.asarray(a.T @ (b - a @ w)).ravel() / n
    support = w > 0
    # KKT: c_j = alpha on the support, c_j <= alpha off it (to the solver's tolerance; the
    # support's equality holds to rounding amplified by the free column's 1e8 Gram entry).
    assert np.all(c[~support] <= alpha * (1 + KKT_RTOL))
    np.testing.assert_allclose(c[support], alpha, rtol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = Lasso(alpha=alpha, fit_intercept=False, positive=True, precompute=False, max_iter=100_000,
                    tol=1e-12).fit(a, b).coef_
    # scikit-learn stops when its duality gap, on the scale of ||b - Aw||^2 / 2 + n alpha |w|_1, is at
    # most tol ||b||^2: so the two objectives (divided by n) differ by at most tol ||b||^2 / n, and
    # ours, exact, is not above scikit-learn's beyond rounding.
    f_ours, f_ref = objective(a, b, w, alpha), objective(a, b, ref, alpha)
    assert f_ours <= f_ref + 1e-12 * abs(f_ref)
    assert f_ref - f_ours <= 1e-12 * float(b @ b) / n
    np.testing.assert_array_equal(np.flatnonzero(support), np.flatnonzero(ref > 0))
    assert support[-1]  # the (practically unpenalized) non-candidate column is always in


def test_large_penalty_selects_only_the_free_column() -> None:
    a, b = rappor_problem(3)
    w = nonnegative_lasso(a, b, 1e3)
    assert np.flatnonzero(w).tolist() == [a.shape[1] - 1]
    # Its value: the least-squares fit of b on the free column, less the penalty's pull.
    f = a[:, [-1]].toarray().ravel()
    np.testing.assert_allclose(w[-1], (f @ b - 1e3 * len(b)) / (f @ f), rtol=1e-12)


def test_duplicate_columns_do_not_stall() -> None:
    a, b = rappor_problem(4, duplicate=True, n_present=3)
    w = nonnegative_lasso(a, b, 1.0 / a.shape[0])
    c = np.asarray(a.T @ (b - a @ w)).ravel() / a.shape[0]
    assert np.all(c <= (1.0 / a.shape[0]) * (1 + KKT_RTOL))


def test_nonpositive_penalty_is_refused() -> None:
    a, b = rappor_problem(5, s=20)
    with pytest.raises(ValueError, match="positive penalty"):
        nonnegative_lasso(a, b, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_qp_matches_enumeration_of_supports(seed: int) -> None:
    # min w'Gw/2 - q'w over w >= 0 on 6 variables: the minimum over all 64 supports of the
    # unconstrained solution restricted to each support, when it is feasible.
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(9, 6))
    gram, q = x.T @ x, rng.normal(size=6) * 3
    best, best_w = np.inf, np.zeros(6)
    for support in itertools.product([False, True], repeat=6):
        idx = np.flatnonzero(support)
        w = np.zeros(6)
        if idx.size:
            w[idx] = np.linalg.solve(gram[np.ix_(idx, idx)], q[idx])
        value = 0.5 * w @ gram @ w - q @ w
        if np.all(w >= 0) and value < best:
            best, best_w = value, w
    got = nonnegative_qp(gram, q, np.zeros(6), tol=1e-12)
    np.testing.assert_allclose(got, best_w, atol=1e-10)
    warm = nonnegative_qp(gram, q, np.abs(rng.normal(size=6)), tol=1e-12)  # any feasible warm start
    np.testing.assert_allclose(warm, best_w, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_column_scale_solves_the_scaled_design(seed: int) -> None:
    # scale=d solves for A diag(d) without forming it: the same solution up to rounding.
    a, b = rappor_problem(seed)
    d = np.random.default_rng(seed).uniform(0.2, 5.0, a.shape[1])
    alpha = 1.5 / a.shape[0]
    want = nonnegative_lasso((a @ sp.diags(d)).tocsc(), b, alpha)
    got = nonnegative_lasso(a, b, alpha, scale=d)
    np.testing.assert_array_equal(np.flatnonzero(got), np.flatnonzero(want))
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
