"""Numerical core of the decoder (private): debiasing, selection, constrained fit, tests.

Everything here works on whitened, sparse arrays; :mod:`rappor.decoder` wraps it in the
public :class:`~rappor.decoder.Decoder` and :class:`~rappor.decoder.DecodeResult`.

Model (Erlingsson, Pihur and Korolova 2014, arXiv:1407.6981, Section 4; google/rappor
``analysis/R/decode.R``, ``EstimateBloomCounts``): with ``N_c`` reports in cohort ``c``
and ``y_cb`` of them with bit ``b`` set,

    t_cb = (y_cb - p01 N_c) / (p11 - p01)

is an unbiased estimate of the number of clients of cohort ``c`` whose Bloom filter has
bit ``b`` set, and ``E[t_cb / N_c] = sum_s X[cb, s] pi_s`` where ``X`` is the candidate
map and ``pi_s`` the share of string ``s``.  Rows are weighted by the inverse of
``Var(t_cb / N_c) = r (1 - r) / ((p11 - p01)^2 N_c)`` (``r`` the report rate; decode.R
uses the same binomial variance).  The estimand is the share among the reports
received, so the random spread of clients over cohorts is not counted as noise (it
cancels when cohorts are pooled; adding it made the boolean SE 22% too large at f=0).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._lazy import lazy_module

if TYPE_CHECKING:
    import scipy.sparse as sp
    from scipy import linalg, stats
else:  # imported on first use: keeps `import rappor` and CLI start-up light
    sp = lazy_module("scipy.sparse")
    linalg = lazy_module("scipy.linalg")
    stats = lazy_module("scipy.stats")

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Debiased:
    """Debiased per-(cohort, bit) shares of true ones for the cohorts with reports.

    ``rows`` are the stacked row indices ``c * k + b`` kept; ``y`` the estimates
    ``t_cb / N_c``; ``var`` their variances; ``n_c`` the reports of each row's cohort.
    """

    rows: npt.NDArray[np.int64]
    y: Array
    var: Array
    n_c: Array


def debias(counts: npt.NDArray[np.int64], p11: float, p01: float) -> Debiased:
    """Debias ``counts`` (shape (m, k+1)) and give each (cohort, bit) its variance.

    Empty cohorts are left out.  The plug-in rates are smoothed (``(y + 1/2) / (N + 1)``)
    and clamped to ``[0, 1]`` so that no row gets an infinite weight.
    """
    m, k1 = counts.shape
    k = k1 - 1
    n = counts[:, 0].astype(np.float64)
    keep = np.flatnonzero(n > 0)
    rows = (keep[:, None] * k + np.arange(k)[None, :]).ravel()
    n_c = np.repeat(n[keep], k)
    ones = counts[keep, 1:].astype(np.float64).ravel()
    gap = p11 - p01
    y = (ones / n_c - p01) / gap
    r = (ones + 0.5) / (n_c + 1.0)
    var = r * (1.0 - r) / gap**2 / n_c
    return Debiased(rows=rows.astype(np.int64), y=y, var=var, n_c=n_c)


def scale_rows(matrix: sp.spmatrix, weight: Array) -> sp.csc_matrix:
    """``diag(weight) @ matrix`` as CSC, by scaling the stored values (no sparse product)."""
    out = sp.csc_matrix(matrix, copy=True)
    out.data = out.data * weight[out.indices]
    return out


def weighted_design(matrix: sp.csc_matrix, weight: Array, column: Array) -> sp.csc_matrix:
    """``[diag(weight) @ matrix | column]`` as one new CSC matrix, built in a single pass.

    The dense ``column`` (the decoder's non-candidate column) is stored last, so that the
    weighted candidate columns are :func:`leading_columns` of the result without a copy.
    """
    matrix = sp.csc_matrix(matrix)
    n, s = matrix.shape
    nnz = matrix.nnz
    index_dtype = np.int32 if nnz + n < 2**31 else np.int64
    data = np.empty(nnz + n)
    np.take(weight, matrix.indices, out=data[:nnz], mode="clip")  # valid indices; "raise" buffers (10x slower)
    data[:nnz] *= matrix.data
    data[nnz:] = column
    indices = np.empty(nnz + n, dtype=index_dtype)
    indices[:nnz] = matrix.indices
    indices[nnz:] = np.arange(n)
    indptr = np.empty(s + 2, dtype=index_dtype)
    indptr[: s + 1] = matrix.indptr
    indptr[s + 1] = nnz + n
    out = sp.csc_matrix((data, indices, indptr), shape=(n, s + 1), copy=False)
    out.has_sorted_indices = matrix.has_sorted_indices
    return out


def leading_columns(matrix: sp.csc_matrix, n_columns: int) -> sp.csc_matrix:
    """The first ``n_columns`` columns of a CSC matrix, sharing its arrays (no copy)."""
    end = int(matrix.indptr[n_columns])
    out = sp.csc_matrix((matrix.data[:end], matrix.indices[:end], matrix.indptr[: n_columns + 1]),
                        shape=(matrix.shape[0], n_columns), copy=False)
    out.has_sorted_indices = matrix.has_sorted_indices
    return out


#: Stored entries per block in :func:`column_sq_norms` (bounds its temporary arrays).
_NORM_BLOCK_NNZ = 1 << 22


def column_sq_norms(matrix: sp.csc_matrix) -> Array:
    """Squared Euclidean norm of every column of a CSC matrix, in O(nnz) time.

    Blocks of columns at a time, so the temporaries stay small on large designs.
    """
    matrix = sp.csc_matrix(matrix)
    indptr, data = matrix.indptr, matrix.data
    s = matrix.shape[1]
    lengths = np.diff(indptr)
    norms = np.zeros(s)
    block = max(1, _NORM_BLOCK_NNZ // max(int(lengths.max(initial=1)), 1))
    for lo in range(0, s, block):
        hi = min(lo + block, s)
        a, b = int(indptr[lo]), int(indptr[hi])
        values = np.asarray(data[a:b], dtype=np.float64)
        cols = np.repeat(np.arange(hi - lo), lengths[lo:hi])
        norms[lo:hi] = np.bincount(cols, weights=values * values, minlength=hi - lo)
    return norms


def standardize_columns(a: sp.csc_matrix, *, free_last: bool, free_scale: float,
                        col_sq_norms: Array | None = None) -> sp.csc_matrix:
    """Columns of ``a`` scaled to unit norm (the last to norm ``free_scale`` when ``free_last``).

    Only a new value array is allocated; the index arrays are shared with ``a``.
    All-zero columns stay zero.  ``col_sq_norms``: :func:`column_sq_norms` of ``a``, if known.
    """
    a = sp.csc_matrix(a)
    norms = np.sqrt(column_sq_norms(a) if col_sq_norms is None else np.asarray(col_sq_norms, dtype=np.float64))
    scale = np.divide(1.0, norms, out=np.ones_like(norms), where=norms > 0)
    if free_last and len(scale):
        scale[-1] *= free_scale
    data = np.repeat(scale, np.diff(a.indptr))
    data *= a.data
    out = sp.csc_matrix((data, a.indices, a.indptr), shape=a.shape, copy=False)
    out.has_sorted_indices = a.has_sorted_indices
    return out


def select_rows(matrix: sp.spmatrix, rows: npt.NDArray[np.int64]) -> sp.csc_matrix:
    """``matrix[rows]`` as CSC; a no-op copy-free path when every row is kept in order."""
    if len(rows) == matrix.shape[0] and np.array_equal(rows, np.arange(matrix.shape[0])):
        return sp.csc_matrix(matrix)
    return sp.csc_matrix(matrix.tocsr()[rows])


def column_groups(matrix: sp.csc_matrix) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Group identical columns.

    Returns ``(representative, zero)``: ``representative[j]`` is the first column equal to
    column ``j`` (``j`` itself when unique); ``zero`` lists the all-zero columns.

    Each column gets a 64-bit key, the wrapping sum of a fixed random word per stored
    (row, value) pair; equal columns have equal keys, so the groups are read off the
    keys in O(nnz) time and memory proportional to a block of columns.  Columns that
    share a key are then compared entry by entry (a key collision of different
    columns, probability about ``s^2 / 2^64``, only splits the group exactly).
    """
    matrix = sp.csc_matrix(matrix)
    matrix.sum_duplicates()  # canonical: sorted, unique row indices (no-op when already so)
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    n_rows, s = matrix.shape
    lengths = np.diff(indptr).astype(np.int64)
    row_word = np.random.default_rng(0x5EED).integers(0, 2**64, size=n_rows, dtype=np.uint64, endpoint=False)
    value_mult = np.random.default_rng(0x5EEE).integers(1, 2**63, dtype=np.uint64) | np.uint64(1)
    keys = np.zeros(s, dtype=np.uint64)
    block = max(1, _GROUP_BLOCK_NNZ // max(int(lengths.max(initial=1)), 1))
    with np.errstate(over="ignore"):
        for lo in range(0, s, block):
            hi = min(lo + block, s)
            a, b = int(indptr[lo]), int(indptr[hi])
            if a == b:
                continue
            words = row_word[indices[a:b]]
            # The value enters through its bit pattern, so 0/1 maps and weighted columns both work.
            words ^= data[a:b].astype(np.float64).view(np.uint64) * value_mult
            cols = np.repeat(np.arange(hi - lo), lengths[lo:hi])
            keys[lo:hi] = _wrapping_sums(words, cols, hi - lo)
        keys += lengths.astype(np.uint64) * value_mult  # the length too (cheap extra separation)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    rep = np.arange(s, dtype=np.int64)
    sizes = np.diff(np.r_[starts, s])
    for g in np.flatnonzero(sizes > 1):
        members = order[starts[g]:starts[g] + sizes[g]]  # ascending (stable sort), first is smallest
        _split_equal_columns(members, indptr, indices, data, rep)
    zero = np.flatnonzero(lengths == 0)
    return rep, zero


#: Stored entries hashed per block by :func:`column_groups`.
_GROUP_BLOCK_NNZ = 1 << 22


def _wrapping_sums(words: npt.NDArray[np.uint64], cols: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.uint64]:
    """``out[c] = sum(words[cols == c]) mod 2**64`` for sorted ``cols``."""
    csum = np.cumsum(words, dtype=np.uint64)  # wraps modulo 2**64, as intended
    ends = np.searchsorted(cols, np.arange(n), side="right") - 1
    out = np.where(ends >= 0, csum[np.maximum(ends, 0)], np.uint64(0)).astype(np.uint64)
    out[1:] -= out[:-1].copy()
    return out


def _split_equal_columns(members: npt.NDArray[np.int64], indptr: npt.NDArray[np.integer],
                         indices: npt.NDArray[np.integer], data: Array, rep: npt.NDArray[np.int64]) -> None:
    """Set ``rep`` for columns with one key: each to the first member exactly equal to it."""
    heads: list[int] = []
    for j in members.tolist():
        rows_j, vals_j = indices[indptr[j]:indptr[j + 1]], data[indptr[j]:indptr[j + 1]]
        for head in heads:
            if (np.array_equal(rows_j, indices[indptr[head]:indptr[head + 1]])
                    and np.array_equal(vals_j, data[indptr[head]:indptr[head + 1]])):
                rep[j] = head
                break
        else:
            heads.append(j)


def lasso_screen(a: sp.csc_matrix, b: Array, *, significance: float, n_tests: int,
                 lasso_alpha: float | None, free: Array | None = None,
                 free_last: bool = False, col_sq_norms: Array | None = None) -> tuple[npt.NDArray[np.int64], float]:
    """Non-negative Lasso screening on unit-norm columns; returns (selected, penalty).

    The penalty (scikit-learn's ``alpha`` for the objective
    ``||b - A w||^2 / (2 n) + alpha ||w||_1``) defaults to the one-sided Bonferroni
    level ``z_{1 - significance / n_tests} / n``: with whitened unit-variance noise and
    unit-norm columns, ``A_j' eps ~ N(0, 1)``, so when no candidate is present the
    probability that any enters is at most ``significance`` (the "plug-in" penalty of
    Belloni, Chen, Chernozhukov and Hansen 2012, Econometrica 80(6), eq. 2.14).
    A float ``lasso_alpha`` is used on the same (whitened, unit-norm) scale.

    ``free`` is an optional extra column (the non-candidate mass) that is practically
    unpenalized: it enters scaled by ``1e4``, so its penalty is ``1e-4`` of the others'.
    ``free_last=True`` says that column is already ``a``'s last one (built by
    :func:`weighted_design`: no copy of the design is made; ``col_sq_norms`` may then
    give its :func:`column_sq_norms`).  Only indices of the candidate columns are returned.
    """
    from sklearn.linear_model import Lasso

    n = a.shape[0]
    a = sp.csc_matrix(a)
    s = a.shape[1] - (1 if free_last else 0)
    if free is not None:
        if free_last:
            raise ValueError("lasso_screen: pass 'free' or 'free_last', not both")
        a = sp.hstack([a, sp.csc_matrix(np.asarray(free, dtype=np.float64)[:, None])]).tocsc()
        col_sq_norms = None
    a_std = standardize_columns(a, free_last=free is not None or free_last, free_scale=FREE_SCALE,
                                col_sq_norms=col_sq_norms)
    if lasso_alpha is None:
        lasso_alpha = float(stats.norm.isf(significance / max(n_tests, 1))) / n
    model = Lasso(alpha=lasso_alpha, fit_intercept=False, positive=True, precompute=False,
                  max_iter=5000, tol=1e-6, selection="cyclic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: screening only needs the support
        model.fit(a_std, b)
    coef = model.coef_[:s]
    return np.flatnonzero(coef > 0).astype(np.int64), float(lasso_alpha)


#: Norm of the free (non-candidate) column in the screening Lasso: its coefficient is
#: penalized ``1 / FREE_SCALE`` as much as a unit-norm candidate's.
FREE_SCALE = 1e4


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
    from scipy.sparse.linalg import lsqr

    v = np.asarray(v, dtype=np.float64)
    if a.shape[1] == 0:
        return v.copy()
    beta, istop = lsqr(a, v, atol=1e-12, btol=1e-12, iter_lim=_LSQR_ITERATIONS)[:2]
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
    w_sel = nonneg_fit(a[:, selected], b, max_sum=max_sum)
    support = selected[w_sel > 0]
    coef = np.zeros(s)
    coef[support] = w_sel[w_sel > 0]
    a_p = a[:, support].toarray()
    resid = b - a_p @ coef[support]
    rss = float(resid @ resid)
    dof = max(n - len(support), 1)
    dispersion = max(1.0, rss / dof) if use_dispersion else 1.0
    gram = a_p.T @ a_p
    gram_inv = np.linalg.pinv(gram) if len(support) else np.zeros((0, 0))
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
            cross = np.asarray(a.T @ a_p)[other]  # (|other|, |P|)
            norm2 = norm2 - np.sum((cross @ gram_inv) * cross, axis=1)  # (BLAS; einsum was 10x slower)
        perp = np.sqrt(np.maximum(norm2, 0.0))
        ok = perp > 1e-9 * np.sqrt(np.maximum(full2, 1e-300))
        se_o = np.full(len(other), np.inf)
        se_o[ok] = math.sqrt(dispersion) / perp[ok]
        z_o = np.zeros(len(other))
        z_o[ok] = score[ok] / (perp[ok] * math.sqrt(dispersion))
        se[other] = se_o
        z[other] = z_o
    return Fit(support=support, coef=coef, cov=cov, z=z, se=se, rss=rss, dof=dof, dispersion=dispersion)


def adjust_pvalues(pvalues: Array, method: str, level: float = 0.05) -> Array:
    """Multiple-testing adjustment; a hypothesis is rejected when its adjusted p-value is ``<= level``.

    ``"none"``; ``"bonferroni"``; ``"fdr"``: Benjamini-Hochberg 1995 (JRSS-B 57(1)),
    ``p_(i) n / i`` made monotone; ``"storey"``: the BH adjustment times Storey's
    estimate of the share of true nulls ``pi0 = (1 + #{p > 1/2}) / (n / 2)`` (capped at 1;
    Storey, Taylor and Siegmund 2004, JRSS-B 66(1), Theorem 3: finite-sample FDR control
    for independent p-values, rejecting only p <= 1/2); ``"adaptive-fdr"``: the two-stage
    procedure of Benjamini, Krieger and Yekutieli 2006 (Biometrika 93(3), Definition 6):
    BH at ``q' = level / (1 + level)`` gives ``r1`` rejections; ``m0 = n - r1``; then BH at
    ``q' n / m0``.  Its adjusted p-values are ``BH(p) m0 / n * (1 + level)`` (they depend
    on ``level`` through ``m0``; rejection is ``<= level`` as for the others);
    ``"lfdr"``: empirical-Bayes local false discovery rates (:func:`local_fdr_qvalues`).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    n = p.size
    if n == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(p * n, 1.0)
    order = np.argsort(p, kind="stable")
    ranked = p[order] * n / np.arange(1, n + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    bh = np.empty(n)
    bh[order] = np.minimum(ranked, 1.0)
    if method == "fdr":
        return bh
    if method == "storey":
        pi0 = min(1.0, (1.0 + np.count_nonzero(p > 0.5)) / (0.5 * n))
        return np.where(p <= 0.5, np.minimum(pi0 * bh, 1.0), 1.0)
    if method == "lfdr":
        return local_fdr_qvalues(p)
    if method == "adaptive-fdr":
        r1 = int(np.count_nonzero(bh <= level / (1.0 + level)))
        if r1 == n:
            return np.minimum(bh, 1.0)  # every hypothesis rejected at stage 1
        return np.minimum(bh * (n - r1) / n * (1.0 + level), 1.0)
    msg = f"Unknown multiple-testing correction {method!r}."
    raise ValueError(msg)


# --- Empirical null of a random string's score ----------------------------------------------

#: Bit patterns per cohort used for the random-string null: every one of the ``k**h`` hash
#: outcomes when there are at most this many, otherwise this many drawn with the ``rng``.
NULL_PATTERNS = 4096


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RandomStringNull:
    """Saddlepoint tail of the score ``a' r`` of a string outside the model, given ``r``.

    ``x`` (increasing) and ``log_sf`` tabulate ``log P(a' r >= x)`` on a grid of tilts.
    """

    x: Array
    log_sf: Array
    mean: float
    sd: float
    skewness: float
    exact: bool

    def sf(self, x: Array) -> Array:
        """``P(a' r >= x)`` for a random string, interpolated in ``log`` (clamped at the grid ends)."""
        return np.exp(np.interp(np.asarray(x, dtype=np.float64), self.x, self.log_sf))


def random_string_null(weighted_resid: Array, k: int, h: int, rng: np.random.Generator,
                       *, n_patterns: int = NULL_PATTERNS) -> RandomStringNull:
    """Law of ``a_v' r`` over "virtual random strings" ``v``, conditional on the residual ``r``.

    A candidate absent from the data has, under a uniform hash (ours, and google/rappor's
    MD5 map alike), ``h`` independent uniform bits in every cohort, independently across
    cohorts, and its bits are independent of the data.  Given the whitened residual
    ``r`` (``weighted_resid = w * r`` per (cohort, bit) row, cohorts stacked by ``k``),
    its score is therefore ``N = sum_c X_c`` with independent per-cohort terms
    ``X_c = sum_{b in B_c} w_cb r_cb`` over the distinct bits ``B_c`` of a random
    ``h``-tuple: a randomization (permutation-type) null that keeps the residual's
    structure -- e.g. a heavy non-candidate string sitting on two bits per cohort --
    which makes the normal approximation anti-conservative in the right tail.

    The law of ``X_c`` is enumerated exactly over the ``k**h`` tuples (or
    ``n_patterns`` tuples drawn from ``rng`` when there are more), and the tail of
    the sum uses the Lugannani-Rice saddlepoint approximation (Lugannani and Rice 1980,
    Adv. Appl. Prob. 12(2); Butler 2007, "Saddlepoint Approximations with Applications",
    eq. 1.21) with the cumulant generating function ``K(s) = sum_c log E exp(s X_c)``,
    tabulated on a grid of tilts ``s``.
    """
    v = np.asarray(weighted_resid, dtype=np.float64).reshape(-1, k)  # (cohorts, k)
    exact = k**h <= n_patterns
    if exact:
        tuples = np.indices((k,) * h).reshape(h, -1).T
    else:
        # Sampled patterns (shared by the cohorts); fewer per cohort when there are many cohorts.
        n_draw = int(min(n_patterns, max(512, 2**17 // max(len(v), 1))))
        tuples = rng.integers(0, k, size=(n_draw, h))
    # Distinct bits only: a later hash equal to an earlier one sets no new bit.
    distinct = np.ones(tuples.shape, dtype=bool)
    for i in range(1, h):
        distinct[:, i] = ~np.any(tuples[:, :i] == tuples[:, i:i + 1], axis=1)
    xs = (v[:, tuples] * distinct[None]).sum(axis=2)  # (cohorts, T)
    mu_c = xs.mean(axis=1)
    dev = xs - mu_c[:, None]
    var = float((dev**2).mean(axis=1).sum())
    k3 = float((dev**3).mean(axis=1).sum())
    mean = float(mu_c.sum())
    sd = math.sqrt(max(var, 1e-300))
    # Tilts in units of 1/sd: dense near 0, geometric far out (tails to ~1e-300).
    u = np.concatenate([-np.geomspace(40.0, 0.05, 24), np.linspace(0.05, 6.0, 50), np.geomspace(6.3, 400.0, 26)])
    s = u / sd
    n_t = xs.shape[1]
    kk = np.empty(len(s))
    k1 = np.empty(len(s))
    k2 = np.empty(len(s))
    chunk = max(1, 4_000_000 // max(xs.size, 1))
    for lo in range(0, len(s), chunk):
        t = s[lo:lo + chunk, None, None] * dev[None]  # (g, cohorts, T), centred for stability
        top = t.max(axis=2, keepdims=True)
        e = np.exp(t - top)
        z0 = e.sum(axis=2)
        m1 = (e * dev[None]).sum(axis=2) / z0
        m2 = (e * dev[None] ** 2).sum(axis=2) / z0
        kk[lo:lo + chunk] = (np.log(z0 / n_t) + top[..., 0]).sum(axis=1)
        k1[lo:lo + chunk] = m1.sum(axis=1)
        k2[lo:lo + chunk] = (m2 - m1**2).sum(axis=1)
    x_c = k1  # centred score at each tilt
    w = np.sign(s) * np.sqrt(np.maximum(2.0 * (s * x_c - kk), 0.0))
    uu = s * np.sqrt(np.maximum(k2, 1e-300))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Lugannani-Rice, in logs for the far tail: sf = Phi(-w) [1 + phi(w)/Phi(-w) (1/u - 1/w)].
        ratio = np.exp(stats.norm.logpdf(w) - stats.norm.logsf(w))
        log_sf = stats.norm.logsf(w) + np.log(np.clip(1.0 + ratio * (1.0 / uu - 1.0 / w), 1e-300, None))
    ok = np.isfinite(log_sf) & np.isfinite(x_c) & (k2 > 1e-12 * var)
    if not np.any(ok):
        # Degenerate residual (e.g. an exact fit): every random string scores ``mean``.
        eps = 1e-9 * (1.0 + abs(mean))
        return RandomStringNull(x=np.array([mean, mean + eps]), log_sf=np.array([0.0, -745.0]), mean=mean,
                                sd=0.0, skewness=0.0, exact=bool(exact))
    x_c, log_sf = x_c[ok], log_sf[ok]
    # Monotone in x (numerical noise at the extremes): keep increasing x, non-increasing log sf.
    order = np.argsort(x_c, kind="stable")
    x_c, log_sf = x_c[order], np.minimum.accumulate(np.minimum(log_sf[order], 0.0))
    keep = np.concatenate([[True], np.diff(x_c) > 0])
    return RandomStringNull(x=x_c[keep] + mean, log_sf=log_sf[keep], mean=mean, sd=sd,
                            skewness=k3 / sd**3, exact=bool(exact))


# --- Empirical-Bayes local false discovery rates ---------------------------------------------

#: Smallest positive effect (in standard errors) of the NPMLE grid: smaller effects cannot be
#: told from 0 and an atom there would only steal prior mass from the null.
LFDR_GRID_LOW = 0.5


def local_fdr(z: Array, *, n_iter: int = 500) -> tuple[Array, Array, Array]:
    """Local false discovery rates of one-sided z-scores under a fitted prior of effects.

    Model: ``z_i ~ N(mu_i, 1)`` with ``mu_i`` drawn from a prior ``G`` on ``mu >= 0``;
    ``G`` is the Kiefer-Wolfowitz nonparametric maximum-likelihood estimate (Kiefer and
    Wolfowitz 1956, Ann. Math. Stat. 27(4); computed by EM on a fixed grid as in Jiang
    and Zhang 2009, Ann. Stat. 37(4)) on ``{0} U geomspace(0.5, max z + 1)``.  The local
    fdr is the posterior probability of ``mu = 0`` (Efron 2008, Stat. Sci. 23(1),
    eq. 2.3).  The z-scores are rounded to 0.01 for the EM (weighted by counts), which
    makes it cost O(distinct values x grid), not O(candidates x grid).

    Likelihoods are formed in log space and scaled per row before exponentiating, so a
    z-score far below 0 (a p-value of 1 gives ``-inf``; z is clipped to +-``Z_CLIP``)
    has its posterior on ``mu = 0``, not an underflow.

    Returns ``(lfdr, grid, weights)``.
    """
    z = np.clip(np.asarray(z, dtype=np.float64), -Z_CLIP, Z_CLIP)
    grid, w = _npmle_prior(z, n_iter=n_iter)
    return _posterior_summaries(z, grid, w, lfdr_only=True)[0], grid, w


def _npmle_prior(z: Array, *, n_iter: int = 500) -> tuple[Array, Array]:
    """The grid and weights of the NPMLE prior of :func:`local_fdr` (EM on rounded z-scores)."""
    top = float(np.max(z)) if z.size else 0.0
    grid = np.concatenate([[0.0], np.geomspace(LFDR_GRID_LOW, max(top, 2.0 * LFDR_GRID_LOW) + 1.0, 60)])
    zb, counts = np.unique(np.round(z, 2), return_counts=True)
    lik = _row_scaled_likelihood(zb, grid)  # a constant per row does not change the EM
    w = np.full(len(grid), 1.0 / len(grid))
    share = counts / counts.sum()
    for _ in range(n_iter):
        post = lik * w
        post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
        w = share @ post
    return grid, w


#: Largest |z| used by the empirical-Bayes fits (p-values are clipped to 1e-300: z <= 37).
Z_CLIP = 40.0
#: z-scores per block when posteriors are summarized (bounds the (block x grid) temporaries).
_POSTERIOR_BLOCK = 1 << 16


def _row_scaled_likelihood(z: Array, grid: Array) -> Array:
    """``phi(z_i - grid_j)`` divided by its row maximum (in log space: ``-(z - g)^2 / 2``
    less its row maximum; the normal constant cancels)."""
    loglik = -0.5 * np.square(z[:, None] - grid[None, :])
    out: Array = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    return out


def _posterior_summaries(z: Array, grid: Array, weights: Array, *,
                         lfdr_only: bool = False) -> tuple[Array, Array, Array]:
    """``(lfdr, median, mean)`` of each (clipped) z's posterior on the grid, a block of rows at a time.

    The median reads grid point ``j >= 1``'s mass as spread evenly over
    ``(grid[j-1], grid[j]]`` (see :func:`posterior_effects`).  With ``lfdr_only`` the
    other two are left empty.
    """
    n = len(z)
    lfdr = np.empty(n)
    median = np.empty(0 if lfdr_only else n)
    mean = np.empty(0 if lfdr_only else n)
    for lo in range(0, n, _POSTERIOR_BLOCK):
        hi = min(lo + _POSTERIOR_BLOCK, n)
        post = _grid_posterior(z[lo:hi], grid, weights)
        lfdr[lo:hi] = post[:, 0]
        if lfdr_only:
            continue
        cdf = np.cumsum(post, axis=1)
        j = np.minimum(np.argmax(cdf >= 0.5, axis=1), len(grid) - 1)  # first grid point reaching 1/2
        rows = np.arange(hi - lo)
        before = np.where(j > 0, cdf[rows, np.maximum(j - 1, 0)], 0.0)
        mass = np.maximum(post[rows, j], 1e-300)
        low = grid[np.maximum(j - 1, 0)]
        median[lo:hi] = np.where(j > 0, low + np.clip((0.5 - before) / mass, 0.0, 1.0) * (grid[j] - low), 0.0)
        mean[lo:hi] = post @ grid
    return lfdr, median, mean


def _grid_posterior(z: Array, grid: Array, weights: Array) -> Array:
    """Posterior probabilities of the grid points for each (clipped) z, rows summing to 1."""
    lik = _row_scaled_likelihood(z, grid)
    post = lik * weights
    total = post.sum(axis=1, keepdims=True)
    # A row with no prior mass where its likelihood lives (weights 0 there): fall back to the
    # likelihood alone, i.e. the grid point nearest to z.
    out: Array = np.where(total > 0, post / np.where(total > 0, total, 1.0), lik / lik.sum(axis=1, keepdims=True))
    return out


def local_fdr_qvalues(pvalues: Array) -> Array:
    """Efron's estimated FDR of rejecting every hypothesis with a local fdr no larger.

    With calibrated one-sided p-values, ``z = Phi^-1(1 - p)`` is ``N(0, 1)`` for an
    absent candidate; :func:`local_fdr` gives each one's local fdr, and the estimated
    false discovery rate of the set ``{lfdr <= lfdr_i}`` is the mean of its local fdrs
    (Efron 2010, "Large-Scale Inference", Section 5.1; Sun and Cai 2007, JASA 102(479)).
    Rejecting where that is ``<= level`` is the largest set with estimated FDR ``<= level``.
    """
    p = np.clip(np.asarray(pvalues, dtype=np.float64), 1e-300, 1.0)
    if p.size == 0:
        return p.copy()
    lfdr, _, _ = local_fdr(stats.norm.isf(p))
    order = np.argsort(lfdr, kind="stable")
    q = np.cumsum(lfdr[order]) / np.arange(1, p.size + 1)
    q = np.minimum.accumulate(q[::-1])[::-1]
    out = np.empty(p.size)
    out[order] = np.minimum(q, 1.0)
    return out


def posterior_effects(z: Array) -> tuple[Array, Array, Array]:
    """Posterior probability of absence, posterior median and posterior mean of one-sided z-scores' effects.

    Same model and prior as :func:`local_fdr`: ``z_i ~ N(mu_i, 1)``, ``mu_i ~ G`` with
    ``G`` the Kiefer-Wolfowitz NPMLE on ``{0} U geomspace(0.5, max z + 1)``.  The
    posterior median minimizes the expected absolute error (e.g. Lehmann and Casella
    1998, "Theory of Point Estimation", Sec. 4.1) and is 0 exactly when the local fdr
    (the posterior probability of ``mu = 0``) is at least ½; the posterior mean
    minimizes the squared error (Robbins 1956, "An empirical Bayes approach to
    statistics").  To avoid the steps of a discrete prior, the mass of grid point
    ``j >= 1`` is read as spread evenly over ``(grid[j-1], grid[j]]`` when locating the
    median (linear interpolation of the posterior CDF).

    Returns
    -------
    lfdr, median, mean : ndarray
        Shape ``z.shape`` each; ``median >= 0`` and ``mean >= 0``.
    """
    z = np.clip(np.asarray(z, dtype=np.float64), -Z_CLIP, Z_CLIP)
    if z.size == 0:
        return z.copy(), z.copy(), z.copy()
    grid, weights = _npmle_prior(z)
    return _posterior_summaries(z, grid, weights)


def truncated_normal_interval(z: Array, cutoff: Array | float, confidence_level: float) -> tuple[Array, Array]:
    """Confidence interval for ``mu`` from ``z ~ N(mu, 1)`` observed *given* ``z > cutoff``.

    The selection-adjusted ("conditional") interval of Zhong and Prentice 2008
    (Biostatistics 9(4)) and Weinstein, Fithian and Benjamini 2013 (JASA 108(501)):
    with ``F(z; mu) = P(Z <= z | Z > cutoff) = 1 - Q(z - mu) / Q(cutoff - mu)`` (``Q``
    the normal survival function), which decreases in ``mu``, the interval is
    ``{mu : (1 - level) / 2 <= F(z; mu) <= (1 + level) / 2}``.  Far above the cutoff it
    is the Wald interval ``z ± z_(1+level)/2``; just above it, it stretches down (the
    observation may be a small effect that was lucky to be selected).  Solved by
    bisection on log survival functions, vectorized.

    Parameters
    ----------
    z : ndarray
        Observed statistics, each ``> cutoff``.
    cutoff : float or ndarray
        The selection threshold (one, or one per statistic).
    confidence_level : float

    Returns
    -------
    low, high : ndarray
    """
    z = np.asarray(z, dtype=np.float64)
    c = np.broadcast_to(np.asarray(cutoff, dtype=np.float64), z.shape)
    tail = (1.0 - confidence_level) / 2.0

    def solve(ratio: float) -> Array:
        # Q(z - mu) / Q(cutoff - mu) increases from 0 to 1 in mu: find where it equals ``ratio``.
        lo = np.minimum(c, z) - 1000.0  # just above the cutoff the bounds run far down; 0 in shares
        hi = z + 10.0
        target = math.log(ratio)
        for _ in range(90):
            mid = 0.5 * (lo + hi)
            below = stats.norm.logsf(z - mid) - stats.norm.logsf(c - mid) < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        out: Array = 0.5 * (lo + hi)
        return out

    return solve(tail), solve(1.0 - tail)
