"""The constrained fit (private): shares >= 0 summing to at most 1, their errors and tests.

This module owns the least-squares solution of a :class:`~._problem.WeightedProblem`:

* :func:`nonneg_fit`, an exact active-set quadratic program for ``w >= 0``,
  ``sum(w) <= 1`` on the Gram system (:func:`_active_set_qp`);
* :func:`fit_support`: that fit on a set of columns, the covariance on its positive
  support, Wald statistics on it and score statistics off it (:class:`Fit`);
* :func:`closed_form_fit`, the orthogonal case (every row holds exactly one candidate);
* the Frisch-Waugh-Lovell helpers :func:`orthogonal_part`, :func:`in_span` and
  :func:`free_column_coefficient` (the unconstrained unexplained mass), and the
  residuals of the final fit (:func:`whitened_residuals`, :func:`max_std_residual`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ._problem import (Array, WeightedProblem, column_range, column_sq_norms, columns_times, cross_product, is_dense,
                       scale_rows)

if TYPE_CHECKING:
    import scipy.sparse as sp
    import scipy.sparse.linalg as sparse_linalg
    from scipy import linalg
else:  # imported on first use: keeps `import rappor` and CLI start-up light
    sp = lazy_module("scipy.sparse")
    sparse_linalg = lazy_module("scipy.sparse.linalg")
    linalg = lazy_module("scipy.linalg")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Fit:
    """A fitted support: estimates, covariance, score statistics for every column."""

    support: npt.NDArray[np.int64]      # columns with a positive estimate
    coef: Array                         # (S,) estimates, zero off the support
    cov: Array                          # (|support|, |support|) covariance
    z: Array                            # (S,) z statistic: Wald on the support, score off it
    se: Array                           # (S,) standard error (off support: if the column were added)
    rss: float
    dof: int
    dispersion: float

    def one_minus_sum(self) -> tuple[float, float]:
        """``1 - sum(coef)`` and its standard error from the covariance of the support."""
        total = float(self.coef.sum())
        var = float(self.cov.sum()) if self.cov.size else 0.0
        return 1.0 - total, math.sqrt(max(var, 0.0))


def fit_coefficients(a: sp.csc_matrix, b: Array, selected: npt.NDArray[np.int64], *,
                     max_sum: float | None) -> tuple[Array, npt.NDArray[np.int64]]:
    """The bounded least-squares estimates on ``selected`` (zero elsewhere) and their positive support.

    :func:`fit_support` without its statistics: what a residual needs (the random-string
    null refits the detected candidates only for their residual).
    """
    w_sel = nonneg_fit(a[:, selected], b, max_sum=max_sum)
    support = selected[w_sel > 0]
    coef = np.zeros(a.shape[1])
    coef[support] = w_sel[w_sel > 0]
    return coef, support


def fit_support(a: sp.csc_matrix, b: Array, selected: npt.NDArray[np.int64], *, max_sum: float | None,
                use_dispersion: bool, col_sq_norms: Array | None = None) -> Fit:
    """Bounded least squares on ``selected``, covariance on its positive support, and tests.

    On the positive support ``P`` the bounded solution solves the normal equations, so its
    covariance is ``phi (A_P' A_P)^-1`` (``phi`` = 1 for known variances, or the Pearson
    dispersion ``RSS / dof`` when larger and ``use_dispersion``).  A column ``j`` outside
    ``P`` gets the score statistic of adding it to ``P``: with ``r`` the residual and
    ``A_j^perp`` its part orthogonal to ``A_P`` (Frisch-Waugh-Lovell),
    ``z_j = A_j' r / ||A_j^perp||``, which is exactly the Wald z it would have in the
    enlarged model.  ``col_sq_norms`` (:func:`column_sq_norms` of ``a``) may be passed
    when ``a`` is fitted repeatedly.  No column subset of ``a`` beyond the support is
    copied: the statistics are computed for all columns and the support's overwritten.
    """
    n, s = a.shape
    coef, support = fit_coefficients(a, b, selected, max_sum=max_sum)
    a_p = a[:, support]
    resid = b - (a_p.toarray() if is_dense(a_p) else a_p) @ coef[support]
    rss = float(resid @ resid)
    dof = max(n - len(support), 1)
    dispersion = max(1.0, rss / dof) if use_dispersion else 1.0
    gram = cross_product(a_p, a_p)
    gram_inv = np.asarray(np.linalg.pinv(gram), dtype=np.float64) if len(support) else np.zeros((0, 0))
    cov = dispersion * gram_inv
    se = np.full(s, np.inf)
    z = np.zeros(s)
    if len(support):
        se_p = np.sqrt(np.maximum(np.diag(cov), 0.0))
        se[support] = se_p
        z[support] = np.divide(coef[support], se_p, out=np.full(len(support), np.inf), where=se_p > 0)
    # Score statistics for every other column.
    off_support = np.ones(s, dtype=bool)
    off_support[support] = False
    other = np.flatnonzero(off_support)  # (a mask: np.setdiff1d sorts all s columns)
    if len(other):
        score = (a.T @ resid)[other]
        full2 = (column_sq_norms(a) if col_sq_norms is None else np.asarray(col_sq_norms))[other]
        norm2 = full2.copy()
        if len(support):
            norm2 -= _explained_sq_norms(a, a_p, gram_inv, other)
        perp = np.sqrt(np.maximum(norm2, 0.0))
        ok = perp > 1e-9 * np.sqrt(np.maximum(full2, 1e-300))
        se_o = np.full(len(other), np.inf)
        se_o[ok] = math.sqrt(dispersion) / perp[ok]
        z_o = np.zeros(len(other))
        z_o[ok] = score[ok] / (perp[ok] * math.sqrt(dispersion))
        se[other] = se_o
        z[other] = z_o
    return Fit(support=support, coef=coef, cov=cov, z=z, se=se, rss=rss, dof=dof, dispersion=dispersion)


#: Columns of ``a`` per block in :func:`_explained_sq_norms` (bounds its (block, |P|) temporaries).
_CROSS_BLOCK = 1 << 16


def _explained_sq_norms(a: sp.csc_matrix, a_p: sp.csc_matrix, gram_inv: Array, other: npt.NDArray[np.int64]) -> Array:
    """``c_j' G^-1 c_j`` with ``c_j = A_P' a_j`` for the columns ``other`` (sorted) of ``a``.

    The squared norm of column ``j``'s projection on the support's span.  ``A' A_P`` is
    formed a block of columns of ``a`` at a time (the block a view of ``a``'s arrays), so
    the temporaries are (block, |P|), never (s, |P|) (80 MB at 1 M candidates and a
    support of 10).  Each row of ``A' A_P`` is the same sum in the same order as in one
    product of the whole matrix.
    """
    right = a_p.toarray() if is_dense(a_p) else a_p
    out = np.empty(len(other))
    cuts = np.searchsorted(other, np.arange(0, a.shape[1] + _CROSS_BLOCK, _CROSS_BLOCK))
    for i, lo in enumerate(range(0, a.shape[1], _CROSS_BLOCK)):
        first, last = int(cuts[i]), int(cuts[i + 1])
        if first == last:
            continue
        cross_block = column_range(a, lo, min(lo + _CROSS_BLOCK, a.shape[1]), transposed=True) @ right
        cross = np.asarray(cross_block.toarray() if sp.issparse(cross_block) else cross_block)[other[first:last] - lo]
        out[first:last] = np.sum((cross @ gram_inv) * cross, axis=1)  # (BLAS; einsum was 10x slower)
    return out


def nonneg_fit(a: sp.csc_matrix | Array, b: Array, *, max_sum: float | None = None) -> Array:
    """Least squares with ``w >= 0`` (and ``sum(w) <= max_sum``) on the Gram system.

    Solves ``min ||a w - b||^2`` subject to ``w >= 0`` and, when ``max_sum`` is given,
    ``sum(w) <= max_sum``.  The objective equals ``w' G w - 2 c' w + b'b`` with
    ``G = a'a`` and ``c = a'b``, so only the ``s``-by-``s`` Gram matrix is formed (from the
    sparse ``a`` directly) and the tall ``n``-by-``s`` matrix is never densified; the
    quadratic program is solved exactly by :func:`_active_set_qp`.  With no columns the
    answer is the empty vector (``scipy.optimize.nnls`` is avoided: in scipy 1.17 it aborts
    the process on matrices without columns).
    """
    s = a.shape[1]
    if s == 0:
        return np.zeros(0)
    gram: _DenseGram | _SparseGram
    if sp.issparse(a):
        a = sp.csc_matrix(a)
        # Up to a few thousand columns the whole Gram matrix is cheap and fastest; beyond,
        # only what the active set touches is formed (10,000 columns at k = 128: the whole
        # matrix took 8 s and 0.8 GB).
        gram = _DenseGram((a.T @ a).toarray()) if s <= _DENSE_GRAM_MAX else _SparseGram(a)
    else:
        a = np.asarray(a, dtype=float)
        gram = _DenseGram(a.T @ a)
    c = np.asarray(a.T @ b, dtype=float).ravel()
    total = math.inf if max_sum is None else float(max_sum)
    return _active_set_qp(gram, c, total)


#: Most columns for which :func:`nonneg_fit` forms the whole Gram matrix.
_DENSE_GRAM_MAX = 2048


class _DenseGram:
    """The Gram matrix ``G = A'A``, stored."""

    def __init__(self, gram: Array) -> None:
        self.gram = gram

    def diag(self) -> Array:
        out: Array = np.diag(self.gram)
        return out

    def block(self, rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64]) -> Array:
        out: Array = self.gram[np.ix_(rows, cols)]
        return out

    def combine(self, rows: npt.NDArray[np.int64], weights: Array) -> Array:
        """``weights @ G[rows]``: the gradient part ``G w`` for ``w`` zero off ``rows``."""
        out: Array = weights @ self.gram[rows]
        return out


class _SparseGram:
    """``G = A'A`` for a sparse ``A``, formed only where used: blocks among a few columns,
    and ``G w = A'(A w)`` by two sparse products."""

    def __init__(self, a: sp.csc_matrix) -> None:
        self.a = a

    def diag(self) -> Array:
        return column_sq_norms(self.a)

    def block(self, rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64]) -> Array:
        out: Array = np.asarray((self.a[:, rows].T @ self.a[:, cols]).toarray(), dtype=np.float64)
        return out

    def combine(self, rows: npt.NDArray[np.int64], weights: Array) -> Array:
        out: Array = np.asarray(self.a.T @ (self.a[:, rows] @ weights), dtype=np.float64)
        return out


def _active_set_qp(gram: _DenseGram | _SparseGram, c: Array, total: float) -> Array:
    """``min w'Gw/2 - c'w`` subject to ``w >= 0`` and ``sum(w) <= total`` (exact).

    A primal active-set method (Lawson and Hanson 1974, *Solving Least Squares Problems*,
    Ch. 23, the NNLS algorithm, run on the normal equations as in Bro and De Jong 1997,
    J. Chemometrics 11:393) extended by the one constraint ``sum(w) <= total`` (Nocedal and
    Wright 2006, *Numerical Optimization*, Algorithm 16.3).  From ``w = 0`` it frees the
    variable with the most negative multiplier ``lambda_j = (G w - c)_j + mu``, solves the
    equality-constrained subproblem on the free set ``P`` (with ``sum(w_P) = total`` while
    the cap is in the working set, ``mu`` its multiplier), and steps back to the first
    constraint the step would violate.  It stops when the KKT conditions hold:
    ``w >= 0``, ``sum(w) <= total``, ``lambda >= 0`` off ``P``, ``lambda = 0`` on ``P``,
    ``mu >= 0``.  Every linear solve is at most ``|P| + 1`` square.

    Why not :func:`scipy.optimize.lsq_linear`: it takes bounds on each variable but cannot
    cap their sum.  Before this solver the cap was a 40-step bisection on its multiplier,
    each step a BVLS solve of a dense square root of the Gram matrix: the same optimum,
    measured at 0.196 s against 0.022 s here with 101 columns (k=16, m=64) and 6.9 s
    against 0.12 s with 1,001 columns (k=128, m=32; one BLAS thread, shared machine).
    """
    s = len(c)
    w = np.zeros(s)
    if total <= 0 or not np.any(c > 0):
        return w  # w = 0 satisfies the KKT conditions: lambda = -c + mu >= 0 with mu = max(c)+ >= 0
    diag = gram.diag()
    scale = max(float(np.max(np.abs(c))), float(np.max(np.abs(diag))) * (1.0 if math.isinf(total) else total))
    tol = 1e-11 * scale
    free = np.zeros(s, dtype=bool)
    order = np.zeros(0, dtype=np.int64)  # the free set in the order it entered
    chol: Array | None = np.zeros((0, 0))  # upper Cholesky factor of G[order, order] (None: singular)
    fresh = True                         # whether ``chol`` belongs to the current ``order``
    capped = False
    entered = blocked = -1  # ``blocked``: a variable that could not enter (no numerical descent)
    for _ in range(10 * s + 100):
        mu = 0.0
        # Inner loop: step toward the subproblem's optimum until that optimum is feasible.
        while len(order):
            if not fresh:
                chol, fresh = _cholesky(gram.block(order, order)), True
            z_p, mu = _equality_qp(chol, gram, order, c[order], total if capped else None)
            w_p = w[order]
            alpha, first, cap_hit = 1.0, -1, False
            hit = np.flatnonzero(z_p <= 0)
            if len(hit):
                ratios = w_p[hit] / (w_p[hit] - z_p[hit])
                first = int(hit[np.argmin(ratios)])
                alpha = float(ratios.min())
            if not capped and z_p.sum() > total:
                alpha_cap = (total - w_p.sum()) / (z_p.sum() - w_p.sum())
                if alpha_cap < alpha:
                    alpha, cap_hit = alpha_cap, True
            if alpha >= 1.0 and not cap_hit:
                w[order] = z_p
                break
            w_p = w_p + alpha * (z_p - w_p)
            gone = w_p <= 0
            if not cap_hit:
                gone[first] = True
                gone |= w_p <= 1e-14 * w_p.max(initial=0.0)
            capped = capped or cap_hit
            w_p[gone] = 0.0
            w[order] = w_p
            if gone.any():
                free[order[gone]] = False
                order, fresh = order[~gone], False
            if entered >= 0 and not free[entered] and alpha <= 0:
                blocked = entered
        # Optimality: multipliers of the bounds off the free set, and of the cap.
        if capped and mu < -tol:
            capped = False
            continue
        lam = gram.combine(order, w[order]) - c + (mu if capped else 0.0)  # w is zero off the free set
        lam[free] = np.inf
        if blocked >= 0:
            lam[blocked] = np.inf
        entered = int(np.argmin(lam))
        if lam[entered] >= -tol:
            break
        if fresh and chol is not None:
            chol = _cholesky_append(chol, gram.block(order, np.array([entered]))[:, 0], float(diag[entered]))
        free[entered] = True
        order = np.append(order, entered)
        if entered != blocked:
            blocked = -1
    return np.maximum(w, 0.0)


def _cholesky(g: Array) -> Array | None:
    """Upper Cholesky factor of ``g``, or None when ``g`` is numerically singular."""
    if len(g) == 0:
        return np.zeros((0, 0))
    try:
        r = linalg.cholesky(g, lower=False, check_finite=False)
    except linalg.LinAlgError:
        return None
    diag = np.abs(np.diag(r))
    return r if diag.min() > 1e-7 * diag.max() else None


def _cholesky_append(r: Array, col: Array, corner: float) -> Array | None:
    """Factor of ``[[G, col], [col', corner]]`` from the factor ``r`` of ``G`` in O(p^2).

    With ``R'R = G`` the new column is ``x = R^-T col`` and the new diagonal entry
    ``sqrt(corner - x'x)`` (Golub and Van Loan 2013, *Matrix Computations*, Sec. 6.5.4).
    None when the enlarged matrix is numerically singular (same test as :func:`_cholesky`).
    """
    p = len(r)
    x = linalg.solve_triangular(r, col, trans="T", check_finite=False) if p else np.zeros(0)
    d2 = corner - float(x @ x)
    diag = np.append(np.abs(np.diag(r)), math.sqrt(max(d2, 0.0)))
    if d2 <= 0 or diag.min() <= 1e-7 * diag.max():
        return None
    out = np.zeros((p + 1, p + 1))
    out[:p, :p] = r
    out[:p, p] = x
    out[p, p] = diag[p]
    return out


def _equality_qp(chol: Array | None, gram: _DenseGram | _SparseGram, idx: npt.NDArray[np.int64], c: Array,
                 total: float | None) -> tuple[Array, float]:
    """``argmin z'gz/2 - c'z`` (subject to ``sum(z) = total`` when given) and its multiplier.

    Here ``g = gram[idx, idx]`` and ``chol`` its upper Cholesky factor (None if singular).
    The KKT system is ``g z + mu 1 = c``, ``1'z = total``.  With the factor it is solved as
    ``z = u - mu v`` with ``u = g^-1 c``, ``v = g^-1 1`` and ``mu = (1'u - total) / 1'v``;
    otherwise (a rank-deficient free set) by minimum-norm least squares on the bordered
    system.
    """
    p = len(c)
    if p == 0:
        return np.zeros(0), 0.0
    if chol is not None:
        u = linalg.cho_solve((chol, False), c, check_finite=False)
        if total is None:
            return u, 0.0
        v = linalg.cho_solve((chol, False), np.ones(p), check_finite=False)
        mu = (u.sum() - total) / v.sum()
        return u - mu * v, float(mu)
    g = gram.block(idx, idx)
    if total is None:
        z = np.asarray(np.linalg.lstsq(g, c, rcond=None)[0], dtype=np.float64)
        return z, 0.0
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = g
    kkt[:p, p] = kkt[p, :p] = 1.0
    sol, *_ = np.linalg.lstsq(kkt, np.append(c, total), rcond=None)
    return sol[:p], float(sol[p])


#: LSQR iterations before :func:`orthogonal_part` falls back to the normal equations (the
#: decoder's designs converge in about 20-250).
_LSQR_ITERATIONS = 2000


def orthogonal_part(a: sp.csc_matrix, v: Array) -> Array:
    """``v`` minus its least-squares projection on the column span of ``a``.

    By LSQR (Paige and Saunders 1982, ACM TOMS 8(1)) on the sparse ``a``: O(nnz) per
    iteration and no Gram matrix (10,000 columns at k = 128: 0.8 s, against 13 s for the
    normal equations).  Should LSQR stop without converging (ill conditioning or its
    iteration limit), the normal equations are solved densely instead.
    """
    v = np.asarray(v, dtype=np.float64)
    if a.shape[1] == 0:
        return v.copy()
    beta, istop = sparse_linalg.lsqr(a, v, atol=1e-12, btol=1e-12, iter_lim=_LSQR_ITERATIONS)[:2]
    if istop in (3, 6, 7):  # not converged: fall back to the (exact, slower) normal equations
        gram = (a.T @ a).toarray()
        rhs = a.T @ v
        beta = None
        try:  # Cholesky when the Gram matrix is well conditioned: fast
            factor = linalg.cho_factor(gram, check_finite=False)
            diag = np.abs(np.diag(factor[0]))
            if diag.min() > 1e-6 * diag.max():  # condition number of the Gram matrix below ~1e12
                beta = linalg.cho_solve(factor, rhs, check_finite=False)
        except linalg.LinAlgError:
            pass
        if beta is None:  # rank deficient or ill conditioned: a complete orthogonal factorization
            beta = linalg.lstsq(gram, rhs, lapack_driver="gelsy", check_finite=False)[0]
    out: Array = v - a @ beta
    return out


def in_span(a: sp.csc_matrix, v: Array, *, rtol: float = 1e-6, perp: Array | None = None) -> bool:
    """Whether ``v`` lies (numerically) in the column span of ``a``: ``||v - P v|| <= rtol ||v||``.

    ``perp``: :func:`orthogonal_part` of ``v``, when already computed.
    """
    if a.shape[1] == 0:
        return not np.any(v)
    resid = orthogonal_part(a, v) if perp is None else perp
    return bool(float(resid @ resid) <= (rtol * float(np.linalg.norm(v))) ** 2)


def free_column_coefficient(a: sp.csc_matrix, column: Array, b: Array, *, dispersion: float = 1.0,
                            perp: Array | None = None) -> tuple[float, float] | None:
    """Unconstrained least-squares coefficient of ``column`` in ``b ~ [a | column]``, and its SE.

    By Frisch-Waugh-Lovell the coefficient is ``c' b / c' c`` with ``c`` the part of
    ``column`` orthogonal to the span of ``a`` (:func:`orthogonal_part`, or ``perp`` when
    already computed), and its variance ``dispersion / c' c``.  Unlike a fit with
    ``coef >= 0`` it is unbiased when many columns of ``a`` are absent (their
    non-negative estimates would soak up mass).  None when ``column`` lies (numerically)
    in the span of ``a``.
    """
    column = np.asarray(column, dtype=np.float64)
    c = orthogonal_part(a, column) if perp is None else perp
    norm2 = float(c @ c)
    if not norm2 > 1e-10 * float(column @ column):
        return None
    return float(c @ b) / norm2, math.sqrt(dispersion / norm2)

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ClosedFormFit:
    """The fit of an orthogonal design: one independent estimate per column."""

    coef: Array  # (S,) unclamped shares
    se: Array    # (S,) standard errors (known binomial variances)
    z: Array     # (S,) Wald statistics
    rss: float

    @property
    def unexplained(self) -> tuple[float, float]:
        """``1 - sum(coef)`` and its standard error (the estimates are independent)."""
        return float(1.0 - self.coef.sum()), float(np.sqrt((self.se**2).sum()))


def closed_form_fit(problem: WeightedProblem) -> ClosedFormFit:
    """Closed form when every row holds exactly one candidate (booleans, identity maps).

    Each share is the inverse-variance weighted mean of its rows' debiased shares; it is
    left unclamped (it may be negative, as decode.R's estimates), so it is unbiased.
    The unexplained mass is ``1 - sum`` of the shares.  Standard errors use the known
    binomial variances (no dispersion: few degrees of freedom).
    """
    a = scale_rows(problem.design, problem.weight)
    norm2 = column_sq_norms(a)
    coef = (a.T @ problem.b) / norm2
    resid = problem.b - a @ coef
    se = np.sqrt(1.0 / norm2)
    return ClosedFormFit(coef=coef, se=se, z=coef / se, rss=float(resid @ resid))


def whitened_residuals(problem: WeightedProblem, coef: Array, unexplained: float | None) -> Array:
    """Whitened residual ``b - A coef`` of every row of the final fit (the rows of ``problem``).

    ``unexplained``: the coefficient of the non-candidate column, None when the model
    has no such column.  Their sum of squares is the fit's residual sum of squares.
    """
    fitted = problem.weight * columns_times(problem.design, np.nan_to_num(coef))
    if unexplained is not None:
        fitted = fitted + unexplained * problem.background
    out: Array = problem.b - fitted
    return out


def max_std_residual(residuals: Array) -> float:
    """Largest absolute whitened residual of the final fit (about 3-4 when the model fits; nan without rows)."""
    return float(np.max(np.abs(residuals))) if residuals.size else math.nan
