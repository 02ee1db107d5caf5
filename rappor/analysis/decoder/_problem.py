"""The weighted least-squares problem a decode solves (private): debiased, whitened rows.

This module owns everything between the counts and the matrices the fit sees:
debiasing each (cohort, bit) count and its variance, dropping empty cohorts, grouping
candidates that set the same bits (:func:`column_groups`), the whitened problem
(:class:`WeightedProblem`) and its design with the non-candidate column
(:class:`WeightedDesign`), and the sparse helpers they need.

Model (Erlingsson, Pihur and Korolova 2014, arXiv:1407.6981, Section 4; google/rappor
``analysis/R/decode.R``, ``EstimateBloomCounts``): with ``N_c`` reports in cohort ``c``
and ``y_cb`` of them with bit ``b`` set,

    t_cb = (y_cb - p01 N_c) / (p11 - p01)

is an unbiased estimate of the number of clients of cohort ``c`` whose Bloom filter has
bit ``b`` set, and ``E[t_cb / N_c] = sum_s X[cb, s] pi_s`` where ``X`` is the candidate
map and ``pi_s`` the share of string ``s``.  Rows are weighted by the inverse of
``Var(t_cb / N_c) = r (1 - r) / ((p11 - p01)^2 N_c)`` (decode.R uses the same binomial
variance), with ``r`` not the row's own observed rate: weights from the observed counts
(Neyman's minimum chi-square) favour the rows that came out low, which biases every share
down by about ``(1 - 2 r) / N_c`` of a rate per row (Berkson 1980, Ann. Statist. 8(3)); with
a few hundred reports a cohort (``rappor plan``'s k=256 h=1 m=256 at 37,500 reports, 146 a
cohort) that put the mass outside the list at 0 for a truth of 0.42 (z = -49) and the top
shares 14% low.  ``r`` is the rate of the cohort's other bits (:func:`background_rates`),
then, where the rates the first fit predicts give variances more than :data:`REWEIGHT` apart
from those, the fitted rates (:func:`fitted_rates`: one step of iteratively reweighted least
squares).  The
estimand is the share among the reports received, so the random spread of clients over
cohorts is not counted as noise (it cancels when cohorts are pooled; adding it made the
boolean SE 22% too large at f=0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util import pages
from ..._util.lazy import lazy_module
from ...params import Params
from ...client._randomizer import debias as debias_rate, debiased_variance

if TYPE_CHECKING:
    import scipy.sparse as sp
else:  # imported on first use: keeps `import rappor` and CLI start-up light
    sp = lazy_module("scipy.sparse")

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class WeightedProblem:
    """A decode as weighted least squares: ``b = X pi + e`` with unit-variance rows ``e``.

    Built by :func:`weighted_problem`.  Only the cohorts with reports give rows, and only
    the *distinguishable* candidates give columns: the first of each group of candidates
    with the same bits, leaving out those that set no bit at all.

    Attributes
    ----------
    params : Params
    rows : ndarray of int, shape (n_rows,)
        The (cohort, bit) rows kept, ``c * k + b``.
    weight : ndarray of shape (n_rows,)
        Inverse standard deviation of each row's debiased share.
    b : ndarray of shape (n_rows,)
        The whitened debiased shares, ``weight * t_cb / N_c``.
    design : scipy.sparse.csc_matrix of shape (n_rows, n_distinct)
        The 0/1 columns of the distinguishable candidates (not weighted).
    distinct : ndarray of int, shape (n_distinct,)
        Index among the candidates of each column of ``design``.
    group : ndarray of int, shape (n_candidates,)
        First candidate with exactly the same bits (the candidate itself when unique or
        when it sets no bit).
    slot : ndarray of int, shape (n_candidates,)
        Column of ``design`` that estimates each candidate (its group's), ``-1`` for a
        candidate that sets no bit of any cohort with reports.
    orthogonal : bool
        Every row holds exactly one candidate (booleans, one-hot maps): the fit has a
        closed form.  (A row with none would need the non-candidate column, which the
        closed form does not fit.)
    rate : ndarray of shape (n_rows,)
        The report rate at which each row's binomial variance (its weight) was taken.
    n_c : ndarray of shape (n_rows,)
        The reports of each row's cohort.
    """

    params: Params
    rows: IntArray
    weight: Array
    b: Array
    design: sp.csc_matrix
    distinct: IntArray
    group: IntArray
    slot: IntArray
    orthogonal: bool
    rate: Array
    n_c: Array

    @property
    def n_rows(self) -> int:
        """Rows of the problem: (cohort, bit) pairs of the cohorts with reports."""
        return len(self.b)

    @property
    def n_distinct(self) -> int:
        """Columns of the problem: distinguishable candidates."""
        return len(self.distinct)

    @property
    def cohort_of_row(self) -> IntArray:
        """Cohort of every row."""
        out: IntArray = self.rows // self.params.num_bloombits
        return out

    @property
    def background(self) -> Array:
        """The whitened non-candidate column: ``h̄ / k`` on every row, ``h̄ = k (1 - (1 - 1/k)^h)``.

        A string outside the candidate list sets ``h̄`` distinct bits of a cohort on
        average, spread evenly over the ``k`` bits, so its share adds ``share * h̄ / k``
        to every row; the coefficient of this column is the unexplained mass.
        """
        k, h = self.params.num_bloombits, self.params.num_hashes
        hbar = k * (1.0 - (1.0 - 1.0 / k) ** h)  # expected distinct bits of a non-candidate
        out: Array = self.weight * (hbar / k)
        return out

    def weighted_design(self) -> WeightedDesign:
        """The whitened design of the constrained fit (see :class:`WeightedDesign`)."""
        background = self.background
        # One weighted copy of the design, with the non-candidate column last; the candidates'
        # columns are a view of it (large maps: one copy instead of three).
        a = weighted_design(self.design, self.weight, background)
        return WeightedDesign(a=a, candidates=leading_columns(a, self.n_distinct), background=background,
                              col_sq_norms=_weighted_sq_norms(a, self.design, self.weight))

    def spread(self, values: Array, fill: float) -> Array:
        """Per-distinct-candidate ``values`` given to every candidate (``fill`` where none applies)."""
        out = np.full(len(self.slot), fill, dtype=np.float64)
        valid = self.slot >= 0
        if self.n_distinct:
            out[valid] = values[self.slot[valid]]
        return out


def _weighted_sq_norms(a: sp.csc_matrix, design: sp.csc_matrix, weight: Array) -> Array:
    """:func:`column_sq_norms` of ``a = [diag(weight) design | column]`` (:func:`weighted_design`).

    When the design's values are all 1 (a candidate map's), the stored values of ``a``'s
    candidate columns are ``weight[row]``, so ``a' weight`` sums the same squares in the
    same order as :func:`column_sq_norms`, in one sparse product (0.2 s instead of 1.1 s
    at 1 M candidates); the last column's is computed alone.
    """
    data = design.data
    ones = bool(data.size == 0 or (data[0] == 1.0 if one_stored_value(data) else np.all(data == 1.0)))
    if not ones:
        return column_sq_norms(a)
    out: Array = np.asarray(a.T @ weight, dtype=np.float64)
    out[-1:] = column_sq_norms(column_range(a, a.shape[1] - 1, a.shape[1]))
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class WeightedDesign:
    """The constrained fit's design: ``[diag(w) X | background]``, one sparse matrix.

    ``candidates`` is a view of the first ``n_distinct`` columns of ``a`` (no copy);
    ``col_sq_norms`` the squared norms of all of ``a``'s columns.
    """

    a: sp.csc_matrix
    candidates: sp.csc_matrix
    background: Array
    col_sq_norms: Array

    @property
    def n_distinct(self) -> int:
        """Candidate columns (the non-candidate column is column ``n_distinct``)."""
        return int(self.candidates.shape[1])


def weighted_problem(counts: npt.NDArray[np.int64], matrix: sp.csc_matrix, params: Params) -> WeightedProblem:
    """Debias ``counts``, keep the cohorts with reports and merge indistinguishable candidates.

    ``counts`` is an :class:`~rappor.collect.Aggregate`'s table (shape (m, k + 1)),
    ``matrix`` a :class:`~rappor.collect.CandidateMap`'s (shape (m k, n_candidates)).  Each
    row's variance is taken at :func:`background_rates` (:func:`reweighted` changes them).
    """
    deb = debias(counts, params.p11, params.p01)
    rate = background_rates(deb, params)
    x = select_rows(matrix, deb.rows)
    rep, zero = column_groups(x)
    s = x.shape[1]
    is_zero = np.zeros(s, dtype=bool)
    is_zero[zero] = True
    uniq = np.flatnonzero((rep == np.arange(s)) & ~is_zero)
    xu = x if len(uniq) == s else contiguous_values(x)[:, uniq]  # usually every column: no copy
    weight = 1.0 / np.sqrt(debiased_variance(rate, deb.n_c, params.p11 - params.p01))
    pos = np.full(s, -1, dtype=np.int64)
    pos[uniq] = np.arange(len(uniq))
    # The closed form fits no non-candidate column, so it is taken only where no row is free of
    # candidates (a one-hot map, a boolean's bit): elsewhere mass outside the list lands on the
    # candidates' rows (a single absent candidate came out at 0.11, p = 1e-33).
    orthogonal = bool(len(uniq) == 0 or (max_entries_per_row(xu) <= 1 and _every_row_held(xu)))
    return WeightedProblem(params=params, rows=deb.rows, weight=weight, b=weight * deb.y, design=xu,
                           distinct=uniq.astype(np.int64), group=np.where(is_zero, np.arange(s), rep).astype(np.int64),
                           slot=pos[rep], orthogonal=orthogonal, rate=rate, n_c=deb.n_c)


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


#: A first fit's rates replace the background rates when some row's variance moves by more than this.
REWEIGHT = 0.05


def background_rates(deb: Debiased, params: Params) -> Array:
    """Each row's report rate from its cohort's *other* bits (the other cohorts' when ``k = 1``), smoothed.

    The mean debiased share of the other bits, as a report rate ``p01 + (p11 - p01) y``, then
    ``(r N + 1/2) / (N + 1)`` as :func:`debias` smooths, strictly inside ``(0, 1)``.  A row's
    own count does not enter it, so weights from it do not follow the row's noise (the module
    docstring); it ignores what the candidates add to their own bits, which
    :func:`fitted_rates` puts back where that matters.
    """
    k = params.num_bloombits
    y = deb.y.reshape(-1, k)
    if k > 1:
        other: Array = (y.sum(axis=1, keepdims=True) - y) / (k - 1)
    elif y.shape[0] > 1:  # one bit: the other cohorts', all of which estimate the same share
        other = (y.sum() - y) / (y.shape[0] - 1)
    else:
        other = y
    rate = np.clip(params.p01 + (params.p11 - params.p01) * other.ravel(), 0.0, 1.0)
    out: Array = (rate * deb.n_c + 0.5) / (deb.n_c + 1.0)
    return out


def fitted_rates(problem: WeightedProblem, whitened_residual: Array) -> Array | None:
    """The report rates a fit of ``problem`` predicts, where they move some row's variance by more than :data:`REWEIGHT`.

    The fitted share of row ``r`` is ``(b_r - e_r) / w_r`` (``e`` the fit's whitened
    residual), as a rate ``p01 + (p11 - p01) y``, smoothed as :func:`background_rates`.  The
    decoder refits once with them: one step of iteratively reweighted least squares of a
    binomial model (McCullagh and Nelder 1989, *Generalized Linear Models*, 2nd ed., section
    2.5).  ``None`` when every row's variance stays within :data:`REWEIGHT` of the one it
    had: with instantaneous noise the rates stay near 1/2 and the variance barely moves (k=16
    p=0.5 q=0.75 f=0.5: 1.6% for a share of 0.2); without it (``rappor plan --no-irr``) a
    string's own bits can have twice the background's variance.
    """
    params = problem.params
    gap = params.p11 - params.p01
    y = (problem.b - whitened_residual) / problem.weight
    rate = np.clip(params.p01 + gap * y, 0.0, 1.0)
    rate = (rate * problem.n_c + 0.5) / (problem.n_c + 1.0)
    ratio = rate * (1.0 - rate) / (problem.rate * (1.0 - problem.rate))
    return rate if float(np.max(np.abs(ratio - 1.0), initial=0.0)) > REWEIGHT else None


def reweighted(problem: WeightedProblem, rates: Array) -> WeightedProblem:
    """``problem`` with each row's variance taken at ``rates`` (its rows, design and groups unchanged)."""
    params = problem.params
    weight = 1.0 / np.sqrt(debiased_variance(rates, problem.n_c, params.p11 - params.p01))
    return dataclasses.replace(problem, weight=weight, b=weight * (problem.b / problem.weight), rate=rates)


def debias(counts: npt.NDArray[np.int64], p11: float, p01: float) -> Debiased:
    """Debias ``counts`` (shape (m, k+1)) and give each (cohort, bit) its variance.

    Empty cohorts are left out.  The variance uses the row's own smoothed rate
    ``r = (y + 1/2) / (N + 1)``, strictly inside ``(0, 1)`` (the plug-in; a decode takes it at
    :func:`background_rates` instead, which do not follow the row's own noise).
    """
    m, k1 = counts.shape
    k = k1 - 1
    n = counts[:, 0].astype(np.float64)
    keep = np.flatnonzero(n > 0)
    rows = (keep[:, None] * k + np.arange(k)[None, :]).ravel()
    n_c = np.repeat(n[keep], k)
    ones = counts[keep, 1:].astype(np.float64).ravel()
    gap = p11 - p01
    y = debias_rate(ones / n_c, p01, gap)
    r = (ones + 0.5) / (n_c + 1.0)  # smoothed rate: keeps the variance positive at 0 or n ones
    var = debiased_variance(r, n_c, gap)
    return Debiased(rows=rows.astype(np.int64), y=y, var=var, n_c=n_c)



def max_entries_per_row(matrix: sp.csc_matrix, *, stop_above: int = 1) -> int:
    """Most non-zero entries in one row of a CSC matrix, ``(matrix != 0).sum(axis=1).max()``.

    Counted over blocks of stored entries (no copy of the matrix); the count stops as soon as
    it exceeds ``stop_above`` (the decoder asks only whether a row holds two candidates, which
    a large map answers in its first block).
    """
    n_rows = matrix.shape[0]
    counts = np.zeros(n_rows, dtype=np.int64)
    for lo in range(0, matrix.nnz, _ROW_COUNT_BLOCK):
        rows = matrix.indices[lo:lo + _ROW_COUNT_BLOCK]
        values = matrix.data[lo:lo + _ROW_COUNT_BLOCK]
        counts += np.bincount(rows if np.all(values != 0) else rows[values != 0], minlength=n_rows)
        if counts.max(initial=0) > stop_above:
            break
    return int(counts.max(initial=0))


def _every_row_held(matrix: sp.csc_matrix) -> bool:
    """Whether every row of ``matrix`` has a non-zero entry (asked of designs with at most one a row)."""
    held = matrix.indices[matrix.data != 0]
    return bool(held.size >= matrix.shape[0] and np.bincount(held, minlength=matrix.shape[0]).min() >= 1)


#: Stored entries per block in :func:`max_entries_per_row`.
_ROW_COUNT_BLOCK = 1 << 20


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
    data = pages.empty(nnz + n, np.float64)  # written once: small pages (rappor._util.pages)
    for lo in range(0, nnz, _NORM_BLOCK_NNZ):  # blocks: take() would copy all int32 indices to int64 at once
        hi = min(lo + _NORM_BLOCK_NNZ, nnz)
        np.take(weight, matrix.indices[lo:hi], out=data[lo:hi], mode="clip")  # valid indices; "raise" buffers
        data[lo:hi] *= matrix.data[lo:hi]
    data[nnz:] = column
    indices = _indices_with_row_tail(matrix, index_dtype)
    if indices is None:
        indices = np.empty(nnz + n, dtype=index_dtype)
        indices[:nnz] = matrix.indices
        indices[nnz:] = np.arange(n)
    indptr = np.empty(s + 2, dtype=index_dtype)
    indptr[: s + 1] = matrix.indptr
    indptr[s + 1] = nnz + n
    out = sp.csc_matrix((data, indices, indptr), shape=(n, s + 1), copy=False)
    out.has_sorted_indices = matrix.has_sorted_indices
    return out


def _indices_with_row_tail(matrix: sp.csc_matrix, dtype: type[np.integer]) -> npt.NDArray[np.integer] | None:
    """The array that holds ``matrix.indices`` followed by ``0 .. n_rows - 1`` (a view), if there is one.

    A map hashed by :func:`rappor.collect.hash_candidates` or read by
    :func:`rappor.formats.read_map` keeps its indices in such an array (its builder,
    ``rappor.collect._design._map_from_bit_tables``, says why), so the design shares it;
    neither writes to it.
    """
    n, nnz = matrix.shape[0], matrix.nnz
    base = matrix.indices.base
    if (not isinstance(base, np.ndarray) or base.dtype != dtype or base.ndim != 1 or base.size < nnz + n
            or matrix.indices.size != nnz or base.ctypes.data != matrix.indices.ctypes.data):
        return None
    return base[:nnz + n] if np.array_equal(base[nnz:nnz + n], np.arange(n)) else None


def leading_columns(matrix: sp.csc_matrix, n_columns: int) -> sp.csc_matrix:
    """The first ``n_columns`` columns of a CSC matrix, sharing its arrays (no copy)."""
    out: sp.csc_matrix = column_range(matrix, 0, n_columns)
    return out


def column_range(matrix: sp.csc_matrix, lo: int, hi: int, *, transposed: bool = False) -> sp.spmatrix:
    """Columns ``lo .. hi - 1`` of a CSC matrix (or, ``transposed``, their transpose as CSR),
    sharing its values and row indices: a new ``indptr`` only.

    The arrays are set after construction: SciPy's constructors (``.T`` included) copy a view
    of a much larger array (``_prune_array``).
    """
    start, end = int(matrix.indptr[lo]), int(matrix.indptr[hi])
    n_rows = matrix.shape[0]
    out = sp.csr_matrix((hi - lo, n_rows), dtype=matrix.dtype) if transposed else sp.csc_matrix(
        (n_rows, hi - lo), dtype=matrix.dtype)
    out.data, out.indices = matrix.data[start:end], matrix.indices[start:end]
    indptr = matrix.indptr[lo:hi + 1]
    out.indptr = (indptr - start if start else indptr).astype(matrix.indices.dtype, copy=False)
    out.has_sorted_indices = matrix.has_sorted_indices
    return out


#: Stored entries per block in :func:`column_sq_norms` and :func:`weighted_design` (bounds their temporary arrays).
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


#: Density of a design (stored entries over rows x columns) above which its products are
#: dense BLAS products of the densified columns, and below which sparse products.  Measured
#: (one thread): k=16 m=64 (1,024 rows, 12% of the entries set), 1,650 columns: sparse Gram
#: 0.11 s, dense 0.04 s; k=128 m=32 (4,096 rows, 1.6%), 3,000 columns: sparse 0.12 s, dense
#: 0.41 s; k=256 h=1 m=256 (65,536 rows, 0.4%), 10,000 columns by 400: ``A' A_P`` with a
#: dense ``A_P`` 3.1 s CPU, sparse well under 0.1 s.
DENSE_PRODUCT = 0.05


def is_dense(matrix: sp.spmatrix) -> bool:
    """Whether ``matrix`` is denser than :data:`DENSE_PRODUCT` (its products are then dense)."""
    n_rows, n_cols = matrix.shape
    return bool(matrix.nnz > DENSE_PRODUCT * n_rows * n_cols)


def cross_product(left: sp.spmatrix, right: sp.spmatrix) -> Array:
    """``left' right`` as a dense array, by dense BLAS when ``right`` is dense (:func:`is_dense`), else sparse.

    ``right`` is densified in the first case (it is the narrow one: the moved candidates,
    a fit's support); ``left`` stays sparse.
    """
    if is_dense(right):
        dense = right.toarray()
        out: Array = np.asarray(left.T @ dense) if left is not right else dense.T @ dense
        return out
    return np.asarray((left.T @ right).toarray())


def select_rows(matrix: sp.spmatrix, rows: npt.NDArray[np.int64]) -> sp.csc_matrix:
    """``matrix[rows]`` as CSC; a no-op copy-free path when every row is kept in order."""
    if len(rows) == matrix.shape[0] and np.array_equal(rows, np.arange(matrix.shape[0])):
        return sp.csc_matrix(matrix)
    return sp.csc_matrix(contiguous_values(matrix).tocsr()[rows])


def one_stored_value(data: npt.NDArray[np.generic]) -> bool:
    """Whether ``data`` holds one value for all its items (stride 0): a hashed map's ones.

    :class:`~rappor.collect.CandidateMap`'s builder stores them so (``rappor.collect._design._ones``).
    """
    return bool(data.ndim == 1 and data.size > 1 and data.strides == (0,))


def contiguous_values(matrix: sp.spmatrix) -> sp.csc_matrix:
    """``matrix`` as CSC with its stored values in memory.

    A hashed :class:`~rappor.collect.CandidateMap` stores its ones as one value of
    stride 0 (``rappor.collect._design._ones``); SciPy's conversions and fancy indexing
    copy such values to a contiguous array at every call, so a path that converts the map
    makes that copy once, here (the copy the map itself used to hold).
    """
    out = sp.csc_matrix(matrix)
    if one_stored_value(out.data):
        out = sp.csc_matrix((np.ascontiguousarray(out.data), out.indices, out.indptr), shape=out.shape, copy=False)
        out.has_sorted_indices = matrix.has_sorted_indices
    return out


def columns_times(matrix: sp.csc_matrix, coef: Array) -> Array:
    """``matrix @ coef`` from the columns with a non-zero ``coef`` only (no pass over the others).

    Equal to the full product to the last bit: the skipped columns add exact zeros, and the
    kept ones are added in the same order.  SciPy's product of the whole map would also copy
    its stride-0 values (:func:`contiguous_values`), 1 GB at 1 M candidates.
    """
    cols = np.flatnonzero(coef)
    starts, lengths = matrix.indptr[cols].astype(np.int64), np.diff(matrix.indptr)[cols].astype(np.int64)
    indptr = np.zeros(len(cols) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    picks = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
    sub = sp.csc_matrix((matrix.data[picks], matrix.indices[picks], indptr), shape=(matrix.shape[0], len(cols)),
                        copy=False)
    out: Array = sub @ coef[cols]
    return out


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
    # One value for every entry (a hashed map's stride-0 ones): its word once, not per entry.
    same_value = one_stored_value(data)
    with np.errstate(over="ignore"):
        value_word = np.asarray(data[:1], dtype=np.float64).view(np.uint64) * value_mult if same_value else None
        for lo in range(0, s, block):
            hi = min(lo + block, s)
            a, b = int(indptr[lo]), int(indptr[hi])
            if a == b:
                continue
            words = row_word[indices[a:b]]
            # The value enters through its bit pattern, so 0/1 maps and weighted columns both work.
            words ^= data[a:b].astype(np.float64).view(np.uint64) * value_mult if value_word is None else value_word
            keys[lo:hi] = _wrapping_sums(words, indptr[lo + 1:hi + 1].astype(np.int64) - (a + 1))
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


def _wrapping_sums(words: npt.NDArray[np.uint64], ends: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """``out[c] = sum(words[ends[c - 1] + 1 : ends[c] + 1]) mod 2**64`` (``ends[-1]`` read as -1).

    ``ends`` (non-decreasing) holds the position of every column's last word: a CSC
    block's ``indptr[1:] - 1`` (an empty column repeats the previous end, -1 before any).
    """
    csum = np.cumsum(words, dtype=np.uint64)  # wraps modulo 2**64, as intended
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

