"""Tests of rappor.analysis.decoder._fit, the constrained fit: ``min ||A w - b||^2`` with ``w >= 0`` and ``sum(w) <= total``.

The solver is checked against an independent reference (SLSQP on the same objective) and
against the KKT conditions, which characterise the optimum of this convex program.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import optimize

from rappor.analysis.decoder import _fit
from rappor.analysis.decoder._fit import nonneg_fit


def _objective(a, b, w):
    r = a @ w - b
    return float(r @ r)


def _reference(a, b, total):
    """SLSQP from a feasible start: an independent solver of the same convex program."""
    s = a.shape[1]
    cons = [] if total is None else [{"type": "ineq", "fun": lambda x: total - x.sum(),
                                      "jac": lambda x: -np.ones(s)}]
    start = np.full(s, 0.0 if total is None else min(total, 1.0) / (2 * s))
    res = optimize.minimize(lambda x: _objective(a, b, x), start, jac=lambda x: 2 * a.T @ (a @ x - b),
                            bounds=[(0.0, None)] * s, constraints=cons, method="SLSQP",
                            options={"ftol": 1e-15, "maxiter": 2000})
    # SLSQP may end slightly outside the feasible set (the cap exceeded by 1e-8 relative, seen with one
    # BLAS thread on one machine: a lower objective than any feasible point); the comparison needs a
    # feasible point, so clip and scale it back in.
    x = np.clip(res.x, 0.0, None)
    if total is not None and x.sum() > total:
        x = x * (total / x.sum())
    return x


def _check_kkt(a, b, w, total, rtol=1e-8):
    """``w >= 0``, ``sum(w) <= total``, ``g + mu >= 0`` with equality where ``w > 0``, ``mu >= 0``."""
    scale = max(1.0, float(np.abs(a.T @ b).max()), float(np.abs(a).max()) ** 2)
    tol = rtol * scale
    g = a.T @ (a @ w - b)  # half the gradient
    assert np.all(w >= 0)
    free = w > 1e-10 * max(1.0, w.max(initial=0.0))
    binding = total is not None and w.sum() >= total - 1e-9 * max(1.0, total)
    if total is not None:
        assert w.sum() <= total * (1 + 1e-12) + 1e-12
    mu = float(-np.mean(g[free])) if binding and free.any() else 0.0
    assert mu >= -tol
    lam = g + mu
    assert np.all(lam >= -tol)
    assert np.all(np.abs(lam[free]) <= tol)


def _random_problem(rng, n, s, kind):
    a = rng.normal(size=(n, s))
    if kind == "zero" and s > 1:
        a[:, rng.integers(s)] = 0.0
    elif kind == "sum" and s > 2:
        a[:, 0] = a[:, 1] + a[:, 2]         # exactly rank deficient
    elif kind == "double" and s > 1:
        a[:, -1] = 2.0 * a[:, 0]            # under the cap the doubled column is cheaper
    elif kind == "wide":
        a = rng.normal(size=(max(2, s // 2), s))  # more columns than rows
    b = a @ rng.exponential(size=a.shape[1]) + 0.3 * rng.normal(size=a.shape[0])
    return a, b


@pytest.mark.parametrize("kind", ["full", "zero", "sum", "double", "wide"])
@pytest.mark.parametrize("cap", ["none", "active", "inactive"])
@pytest.mark.parametrize("gram", ["dense", "sparse-lazy"])
def test_matches_reference_and_kkt(kind, cap, gram, monkeypatch):
    """Both Gram representations: stored, and formed lazily from a sparse design (large maps)."""
    if gram == "sparse-lazy":
        monkeypatch.setattr(_fit, "_DENSE_GRAM_MAX", 0)

    def fit(a, b, max_sum=None):
        return nonneg_fit(sp.csc_matrix(a) if gram == "sparse-lazy" else a, b, max_sum=max_sum)

    rng = np.random.default_rng([sum(map(ord, kind)), sum(map(ord, cap))])
    for _ in range(15):
        a, b = _random_problem(rng, int(rng.integers(4, 25)), int(rng.integers(1, 12)), kind)
        uncapped = fit(a, b)
        total = {"none": None, "active": 0.5 * uncapped.sum(), "inactive": 2.0 * uncapped.sum() + 1.0}[cap]
        w = fit(a, b, max_sum=total)
        _check_kkt(a, b, w, total)
        ref = _reference(a, b, total)
        # Same optimum value (the minimiser itself is not unique for rank-deficient a).
        assert _objective(a, b, w) <= _objective(a, b, ref) + 1e-9 * max(1.0, _objective(a, b, ref))
        if cap == "active":
            assert w.sum() == pytest.approx(total, rel=1e-10)
        if cap == "inactive":
            np.testing.assert_allclose(w, uncapped, rtol=0, atol=1e-12)


def test_unique_minimiser_matches_bvls():
    # A full-column-rank design: the minimiser is unique, so the weights themselves agree.
    rng = np.random.default_rng(7)
    a, b = _random_problem(rng, 60, 20, "full")
    ref = optimize.lsq_linear(a, b, bounds=(0.0, np.inf), method="bvls", tol=1e-14).x
    np.testing.assert_allclose(nonneg_fit(a, b), ref, rtol=0, atol=1e-9)


def test_capped_uses_columns_outside_uncapped_support():
    # Column 1 is twice column 0: uncapped, only the sum a0 w0 + a1 w1 matters; under a tight
    # cap all the weight must go to the cheaper column 1.
    rng = np.random.default_rng(3)
    a0 = rng.normal(size=30)
    a = np.column_stack([a0, 2.0 * a0, rng.normal(size=30)])
    b = 3.0 * a0
    w = nonneg_fit(a, b, max_sum=1.0)
    _check_kkt(a, b, w, 1.0)
    np.testing.assert_allclose(w, [0.0, 1.0, 0.0], atol=1e-10)


@pytest.mark.parametrize("dense_gram_max", [2048, 0])
def test_sparse_input_same_as_dense(dense_gram_max, monkeypatch):
    monkeypatch.setattr(_fit, "_DENSE_GRAM_MAX", dense_gram_max)  # 0: the lazy Gram
    rng = np.random.default_rng(11)
    a = rng.normal(size=(40, 15)) * (rng.random((40, 15)) < 0.3)
    b = a @ rng.exponential(size=15) + 0.1 * rng.normal(size=40)
    for total in (None, 1.0):
        np.testing.assert_allclose(nonneg_fit(sp.csc_matrix(a), b, max_sum=total),
                                   nonneg_fit(a, b, max_sum=total), rtol=0, atol=1e-12)


def test_degenerate_inputs():
    rng = np.random.default_rng(5)
    assert nonneg_fit(np.zeros((5, 0)), np.ones(5), max_sum=1.0).shape == (0,)
    np.testing.assert_array_equal(nonneg_fit(np.zeros((6, 3)), rng.normal(size=6)), np.zeros(3))
    a = rng.normal(size=(6, 3))
    np.testing.assert_array_equal(nonneg_fit(a, np.zeros(6), max_sum=1.0), np.zeros(3))
    np.testing.assert_array_equal(nonneg_fit(a, a @ np.ones(3), max_sum=0.0), np.zeros(3))
    # b pointing away from every column: the optimum is w = 0.
    np.testing.assert_array_equal(nonneg_fit(np.abs(a), -np.ones(6)), np.zeros(3))

def test_nonneg_fit_no_columns():
    assert _fit.nonneg_fit(np.zeros((5, 0)), np.ones(5)).shape == (0,)



@pytest.mark.parametrize("iterations", [2000, 1])
def test_orthogonal_part_in_span_and_free_coefficient(monkeypatch: pytest.MonkeyPatch, iterations: int) -> None:
    """LSQR (and, when it stops early, the normal-equation fallback) against a dense reference."""
    monkeypatch.setattr(_fit, "_LSQR_ITERATIONS", iterations)
    rng = np.random.default_rng(13)
    dense = (rng.random((60, 25)) < 0.2) * rng.uniform(0.5, 2.0, size=(60, 25))
    a = sp.csc_matrix(dense)
    v = rng.normal(size=60)
    beta = np.linalg.lstsq(dense, v, rcond=None)[0]
    np.testing.assert_allclose(_fit.orthogonal_part(a, v), v - dense @ beta, atol=1e-8)
    assert _fit.in_span(a, dense @ rng.normal(size=25)) and not _fit.in_span(a, v)
    # The free column's coefficient is the last unconstrained least-squares coefficient.
    b = dense @ rng.normal(size=25) + 0.7 * v + 0.1 * rng.normal(size=60)
    full = np.column_stack([dense, v])
    coef = np.linalg.lstsq(full, b, rcond=None)[0]
    se = math.sqrt(2.0 * np.linalg.inv(full.T @ full)[-1, -1])
    got = _fit.free_column_coefficient(a, v, b, dispersion=2.0)
    assert got is not None
    np.testing.assert_allclose(got, [coef[-1], se], rtol=1e-8)
    assert _fit.free_column_coefficient(a, dense[:, 3] + dense[:, 7], b) is None  # in the span


@pytest.mark.parametrize("density", [0.3, 0.02])  # the support's product dense, then sparse (is_dense)
@pytest.mark.parametrize("block", [1, 5, 1 << 16])
def test_explained_sq_norms_blockwise_equals_whole(monkeypatch, block, density):
    # Blocks of columns give each column's c_j' G^-1 c_j as the whole product does.
    monkeypatch.setattr(_fit, "_CROSS_BLOCK", block)
    rng = np.random.default_rng(block)
    a = sp.csc_matrix((rng.random((400, 23)) < density) * rng.random((400, 23)))
    support = np.array([2, 7, 11])
    a_p = a[:, support]
    gram_inv = np.linalg.pinv((a_p.T @ a_p).toarray())
    other = np.setdiff1d(np.arange(23), support)
    cross = (a.T @ a_p).toarray()[other]
    want = np.sum((cross @ gram_inv) * cross, axis=1)
    np.testing.assert_allclose(_fit._explained_sq_norms(a, a_p, gram_inv, other), want, rtol=1e-12, atol=1e-14)
