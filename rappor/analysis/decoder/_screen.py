"""Screening long candidate lists (private): the non-negative Lasso and its penalty.

When the distinguishable candidates exceed 0.8 times the (cohort, bit) rows (as
google/rappor's ``decode.R``), the decoder keeps only the candidates a non-negative
Lasso selects (:func:`lasso_screen`) before the constrained fit.  The Lasso minimizes

    ||b - A w||^2 / (2 n) + alpha ||w||_1,   w >= 0,

on the whitened design ``A`` with unit-norm columns (``n`` rows, one per (cohort, bit)),
plus a practically unpenalized column for the mass of the non-candidate strings.  Its
default penalty is a plug-in constant (the Bonferroni level of the noise);
:func:`cv_lasso_alpha` chooses it instead by K-fold cross-validation in which the folds
are made of whole *cohorts*: the shares being estimated are the same in every cohort,
cohorts hold disjoint sets of reports (independent), and the ``k`` bits of one cohort
come from the same reports, so a cohort's rows are held out together.
:func:`cv_lasso` returns the whole cross-validation curve (:class:`CVCurve`).  The
screening fit at one penalty is solved exactly here (:mod:`._lasso`: importing
scikit-learn would cost more than the decode); the cross-validation paths are
scikit-learn's (:class:`~sklearn.linear_model.LassoCV`), imported only then.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from ..._util import tails
from ..._util.lazy import lazy_module
from ..._util.validation import RngLike, check_int, check_options, check_real, check_rng
from ...exceptions import InvalidParameterError
from ._lasso import nonnegative_lasso
from ._problem import Array, column_sq_norms

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sklearn import linear_model
else:  # imported on first use: scikit-learn (1-2 s) only when a decode cross-validates its penalty
    sp = lazy_module("scipy.sparse")
    linear_model = lazy_module("sklearn.linear_model")

#: Norm of the free (non-candidate) column in the screening Lasso: its coefficient is
#: penalized ``1 / FREE_SCALE`` as much as a unit-norm candidate's.
FREE_SCALE = 1e4


def lasso_screen(a: sp.csc_matrix, b: Array, *, significance: float, n_tests: int,
                 lasso_alpha: float | None, free: Array | None = None,
                 free_last: bool = False, col_sq_norms: Array | None = None) -> tuple[npt.NDArray[np.int64], float]:
    """Non-negative Lasso screening on unit-norm columns; returns (selected, penalty).

    The penalty (``alpha`` of the objective ``||b - A w||^2 / (2 n) + alpha ||w||_1``, as
    :class:`sklearn.linear_model.Lasso` writes it) defaults to the one-sided Bonferroni
    level ``z_{1 - significance / n_tests} / n``: with whitened unit-variance noise and
    unit-norm columns, ``A_j' eps ~ N(0, 1)``, so when no candidate is present the
    probability that any enters is at most ``significance`` (the "plug-in" penalty of
    Belloni, Chen, Chernozhukov and Hansen 2012, Econometrica 80(6), eq. 2.14).
    A float ``lasso_alpha`` is used on the same (whitened, unit-norm) scale.

    ``free`` is an optional extra column (the non-candidate mass) that is practically
    unpenalized: it enters scaled by ``1e4``, so its penalty is ``1e-4`` of the others'.
    ``free_last=True`` says that column is already ``a``'s last one (built by
    :func:`~._problem.weighted_design`: no copy of the design is made; ``col_sq_norms``
    may then give its :func:`~._problem.column_sq_norms`).  Only indices of the candidate columns are returned.
    The Lasso is solved exactly (:func:`~._lasso.nonnegative_lasso`; scikit-learn's
    coordinate descent selects the same candidates).
    """
    n = a.shape[0]
    s = a.shape[1] - (1 if free_last else 0)
    if free is not None:
        if free_last:
            raise ValueError("lasso_screen: pass 'free' or 'free_last', not both")
        a, scale = standardize_design(a, free), None
    else:  # the unit-norm columns as a column scaling: no scaled copy of the design
        a = sp.csc_matrix(a)
        scale = column_scale(a, free_last=free_last, free_scale=FREE_SCALE, col_sq_norms=col_sq_norms)
    if lasso_alpha is None:
        lasso_alpha = plug_in_penalty(significance, n_tests, n)
    coef = nonnegative_lasso(a, np.asarray(b, dtype=np.float64), float(lasso_alpha), scale=scale)[:s]
    return np.flatnonzero(coef > 0).astype(np.int64), float(lasso_alpha)


def plug_in_penalty(significance: float, n_tests: int, n_rows: int) -> float:
    """The default penalty ``z_{1 - significance / n_tests} / n_rows`` (see :func:`lasso_screen`)."""
    return float(tails.norm_isf(significance / max(n_tests, 1))) / n_rows


def column_scale(a: sp.csc_matrix, *, free_last: bool, free_scale: float, col_sq_norms: Array | None = None) -> Array:
    """The factor of every column of ``a`` that :func:`standardize_columns` applies (1 for an all-zero column)."""
    norms = np.sqrt(column_sq_norms(a) if col_sq_norms is None else np.asarray(col_sq_norms, dtype=np.float64))
    scale = np.divide(1.0, norms, out=np.ones_like(norms), where=norms > 0)
    if free_last and len(scale):
        scale[-1] *= free_scale
    return scale


def standardize_columns(a: sp.csc_matrix, *, free_last: bool, free_scale: float,
                        col_sq_norms: Array | None = None) -> sp.csc_matrix:
    """Columns of ``a`` scaled to unit norm (the last to norm ``free_scale`` when ``free_last``).

    Only a new value array is allocated; the index arrays are shared with ``a``.
    All-zero columns stay zero.  ``col_sq_norms``: :func:`column_sq_norms` of ``a``, if known.
    """
    a = sp.csc_matrix(a)
    scale = column_scale(a, free_last=free_last, free_scale=free_scale, col_sq_norms=col_sq_norms)
    data = np.repeat(scale, np.diff(a.indptr))
    data *= a.data
    out = sp.csc_matrix((data, a.indices, a.indptr), shape=a.shape, copy=False)
    out.has_sorted_indices = a.has_sorted_indices
    return out


#: Seed of the fold assignment when ``rng`` is None (the decoder stays deterministic).
DEFAULT_SEED = 0
_RULES = ("min", "1se")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CVCurve:
    """Cross-validation curve of the screening Lasso's penalty.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
        The penalties tried, decreasing (scikit-learn's ``alpha``, on the whitened
        unit-norm scale of :func:`lasso_screen`).
    cv_mean : ndarray of shape (n_alphas,)
        Held-out mean squared whitened residual per row, pooled over the folds
        (weighted by the rows each fold holds out).
    cv_se : ndarray of shape (n_alphas,)
        Standard error of ``cv_mean`` from the spread of the per-fold errors.
    alpha_min, alpha_1se : float
        The penalty with the smallest ``cv_mean`` and the largest penalty whose
        ``cv_mean`` is within one standard error of that minimum.
    fold_of_cohort : dict of int to int
        Fold (``0 .. n_folds - 1``) of every cohort.
    """

    alphas: Array
    cv_mean: Array
    cv_se: Array
    alpha_min: float
    alpha_1se: float
    fold_of_cohort: dict[int, int]

    def __post_init__(self) -> None:
        for name in ("alphas", "cv_mean", "cv_se"):
            arr = np.array(getattr(self, name), copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def alpha(self, rule: Literal["min", "1se"] = "min") -> float:
        """The penalty chosen by ``rule`` (``"min"`` or ``"1se"``)."""
        check_options(rule, "rule", "CVCurve.alpha", _RULES)
        return self.alpha_min if rule == "min" else self.alpha_1se


def standardize_design(a: sp.spmatrix, free: Array | None = None) -> sp.csc_matrix:
    """Columns of ``a`` scaled to unit norm, then ``free`` appended with norm ``FREE_SCALE``.

    This is the design :func:`lasso_screen` fits: unit-norm candidate
    columns (so one penalty is fair to all of them, whatever their weight) and the
    non-candidate column scaled up so that its penalty is negligible.  All-zero columns
    stay zero.
    """
    a = sp.csc_matrix(a, dtype=np.float64)
    if free is not None:
        a = sp.hstack([a, sp.csc_matrix(np.asarray(free, dtype=np.float64)[:, None])]).tocsc()
    return standardize_columns(a, free_last=free is not None, free_scale=FREE_SCALE)


def cohort_folds(cohort_of_row: npt.ArrayLike, n_folds: int,
                 rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], dict[int, int]]:
    """Assign whole cohorts to ``n_folds`` folds of nearly equal numbers of cohorts.

    The distinct cohorts are shuffled with ``rng`` and dealt into consecutive blocks
    (sizes differ by at most one).  Returns ``(fold_of_row, fold_of_cohort)``.
    """
    cohorts = np.asarray(cohort_of_row, dtype=np.int64).ravel()
    distinct = np.unique(cohorts)
    order = rng.permutation(len(distinct))
    fold = np.empty(len(distinct), dtype=np.int64)
    for f, block in enumerate(np.array_split(order, n_folds)):
        fold[block] = f
    fold_of_row = fold[np.searchsorted(distinct, cohorts)]
    return fold_of_row, {int(c): int(f) for c, f in zip(distinct.tolist(), fold.tolist())}


def _alpha_max(a_std: sp.csc_matrix, b: Array, n_candidates: int, has_free: bool) -> float:
    """Smallest penalty at which no candidate enters.

    With the (practically unpenalized, non-negative) free column fitted first, the
    residual is ``r0 = b - f max(0, f'b / f'f)``, and a candidate ``j`` can enter only when
    ``A_j' r0 / n`` exceeds the penalty (the KKT condition of the positive Lasso).
    """
    n = int(a_std.shape[0])
    r0 = np.asarray(b, dtype=np.float64)
    if has_free:
        f = np.asarray(a_std[:, n_candidates].toarray()).ravel()
        ff = float(f @ f)
        if ff > 0:
            r0 = r0 - f * max(0.0, float(f @ r0) / ff)
    corr = np.asarray(a_std[:, :n_candidates].T @ r0).ravel()
    return float(corr.max(initial=0.0)) / n


def cv_lasso(a: sp.spmatrix | Array, b: npt.ArrayLike, cohort_of_row: npt.ArrayLike, *,
             free: Array | None = None, n_folds: int = 5, alphas: npt.ArrayLike | None = None,
             n_alphas: int = 30, eps: float = 1e-2,
             rng: RngLike = None) -> CVCurve:
    """K-fold cross-validation, over whole cohorts, of the screening Lasso's penalty.

    Parameters
    ----------
    a : sparse matrix or ndarray of shape (n_rows, n_candidates)
        The whitened design (rows weighted by the inverse noise standard deviation),
        exactly as passed to :func:`lasso_screen`; its columns are scaled to unit norm
        here (on all rows) as ``lasso_screen`` does.
    b : array-like of shape (n_rows,)
        The whitened debiased shares.
    cohort_of_row : array-like of int, shape (n_rows,)
        Cohort of every row.  All rows of a cohort go to the same fold.
    free : ndarray of shape (n_rows,), optional
        The non-candidate column (whitened), fitted non-negative and practically
        unpenalized as in ``lasso_screen`` (scaled to norm ``FREE_SCALE``).
    n_folds : int, default=5
        Folds; at most the number of cohorts (fewer folds are used when there are fewer
        cohorts), at least 2.
    alphas : array-like of float, optional
        Penalties to try (sorted decreasing here).  Default: ``n_alphas`` geometrically
        spaced values from ``alpha_max`` (the smallest penalty at which no candidate
        enters, on all rows) down to ``eps * alpha_max``.
    n_alphas : int, default=30
    eps : float, default=1e-2
        Ratio of the smallest to the largest default penalty.
    rng : numpy.random.Generator, int or None, default=None
        Shuffles the cohorts into folds.  ``None`` uses a fixed seed (0), so the result
        is deterministic.

    Returns
    -------
    CVCurve

    Raises
    ------
    InvalidParameterError
        If the shapes disagree, there are fewer than 2 cohorts, or a parameter is out
        of range.

    Notes
    -----
    The paths are scikit-learn's :class:`~sklearn.linear_model.LassoCV` (positive
    coordinate descent, warm-started along the grid) with the cohort folds passed as
    its ``cv`` splits; the curve is computed here from its per-fold errors
    (``mse_path_``).  Measured against the hand-written strong-rule path this module
    had before (the decoder benchmark's scenario, 5 seeds, ``docs/penalty.md``): the same
    ``alpha_min`` and ``alpha_1se`` in every decode, at the same cost with 1,000
    candidates (0.44 s) and about 4 times the cost with 10,000 (11 s against 2.8 s).
    As in ``glmnet``'s ``cv.glmnet`` (Friedman, Hastie and Tibshirani 2010, J. Stat.
    Softw. 33(1), Sec. 2.5), the penalty is on the per-row scale (the objective divides
    by the training rows), the same grid is used for every fold, the curve is the
    fold-size weighted mean of the per-fold mean squared errors and its standard error
    is ``sqrt(weighted variance / (K - 1))``.  The folds are whole cohorts because the
    unit of independence is the cohort: cross-validation needs held-out data
    independent of the training data (Hastie, Tibshirani and Friedman 2009, *The
    Elements of Statistical Learning*, 2nd ed., Sec. 7.10; Roberts et al. 2017,
    Ecography 40(8), on blocked cross-validation).  ``alpha_1se`` is the
    one-standard-error rule (ESL Sec. 7.10.1): the most parsimonious model whose error
    is within one standard error of the best.
    """
    owner = "cv_lasso"
    b = np.asarray(b, dtype=np.float64).ravel()
    cohorts = np.asarray(cohort_of_row).ravel()
    n = len(b)
    if a.shape[0] != n or len(cohorts) != n or (free is not None and np.shape(free) != (n,)):
        msg = (f"The design, 'b', 'cohort_of_row' and 'free' of {owner} must have one entry per row. "
               f"Got {a.shape[0]}, {n}, {len(cohorts)} and {None if free is None else np.shape(free)} instead.")
        raise InvalidParameterError(msg)
    n_folds = check_int(n_folds, "n_folds", owner, low=2)
    n_alphas = check_int(n_alphas, "n_alphas", owner, low=1)
    eps = check_real(eps, "eps", owner, low=0.0, high=1.0, low_open=True)
    n_cohorts = len(np.unique(cohorts))
    if n_cohorts < 2:
        msg = f"Cross-validation over cohorts in {owner} needs at least 2 cohorts. Got {n_cohorts} instead."
        raise InvalidParameterError(msg)
    n_folds = min(n_folds, n_cohorts)
    generator = check_rng(DEFAULT_SEED if rng is None else rng)

    a_std = standardize_design(a if sp.issparse(a) else sp.csc_matrix(np.asarray(a, dtype=np.float64)), free)
    if alphas is None:
        top = _alpha_max(a_std, b, a.shape[1], free is not None)
        if not top > 0:
            top = 1.0 / n  # no candidate correlates positively: every penalty selects nothing
        grid = np.geomspace(top, top * eps, n_alphas)
    else:
        grid = np.sort(np.asarray(alphas, dtype=np.float64).ravel())[::-1]
        if grid.size == 0 or not np.all(np.isfinite(grid)) or grid[-1] <= 0:
            msg = f"The 'alphas' parameter of {owner} must be a non-empty array of positive floats. Got {alphas!r} instead."
            raise InvalidParameterError(msg)

    fold_of_row, fold_of_cohort = cohort_folds(cohorts, n_folds, generator)
    splits = [(np.flatnonzero(fold_of_row != f), np.flatnonzero(fold_of_row == f)) for f in range(n_folds)]
    model = linear_model.LassoCV(alphas=grid, cv=splits, positive=True, fit_intercept=False, precompute=False,
                                 max_iter=5000, tol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: a penalty choice needs no more precision
        model.fit(a_std, b)
    mse = np.asarray(model.mse_path_, dtype=np.float64).T  # (folds, alphas); alphas_ is our (decreasing) grid
    held = np.array([len(test) for _, test in splits], dtype=np.float64)
    weight = held / held.sum()
    cv_mean = weight @ mse
    cv_se = np.sqrt((weight @ (mse - cv_mean) ** 2) / (n_folds - 1))
    best = int(np.argmin(cv_mean))
    # Largest penalty (grid is decreasing: smallest index) within one SE of the minimum.
    within = np.flatnonzero(cv_mean <= cv_mean[best] + cv_se[best])
    one_se = int(within.min())
    return CVCurve(alphas=grid, cv_mean=cv_mean, cv_se=cv_se, alpha_min=float(grid[best]),
                   alpha_1se=float(grid[one_se]), fold_of_cohort=fold_of_cohort)


def cv_lasso_alpha(a: sp.spmatrix | Array, b: npt.ArrayLike, cohort_of_row: npt.ArrayLike, *,
                   free: Array | None = None, n_folds: int = 5, alphas: npt.ArrayLike | None = None,
                   rule: Literal["min", "1se"] = "min", n_alphas: int = 30, eps: float = 1e-2,
                   rng: RngLike = None) -> float:
    """The screening Lasso's penalty chosen by cross-validation over whole cohorts.

    Parameters
    ----------
    a, b, cohort_of_row, free, n_folds, alphas, n_alphas, eps, rng :
        As in :func:`cv_lasso`.
    rule : {"min", "1se"}, default="min"
        ``"min"``: the penalty with the smallest cross-validated error; ``"1se"``: the
        largest penalty whose error is within one standard error of that minimum
        (Hastie, Tibshirani and Friedman 2009, *The Elements of Statistical Learning*,
        2nd ed., Sec. 7.10.1), which selects fewer candidates.

    Returns
    -------
    float
        scikit-learn's ``alpha`` on the whitened, unit-norm scale of
        :func:`lasso_screen`: pass it as
        ``rappor.Decoder(lasso_alpha=...)``.

    References
    ----------
    .. [1] T. Hastie, R. Tibshirani and J. Friedman, *The Elements of Statistical
       Learning*, 2nd ed., Springer 2009, Sections 7.10 (cross-validation) and 7.10.1
       (the one-standard-error rule).
    .. [2] J. Friedman, T. Hastie and R. Tibshirani, "Regularization paths for
       generalized linear models via coordinate descent", J. Stat. Softw. 33(1), 2010.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = (rng.random((80, 40)) < 0.2).astype(float)      # 20 cohorts of 4 rows
    >>> b = a[:, :3] @ np.array([3.0, 2.0, 2.0]) + rng.normal(size=80)
    >>> alpha = cv_lasso_alpha(a, b, np.repeat(np.arange(20), 4), rng=0)
    >>> alpha > 0
    True
    """
    rule = check_options(rule, "rule", "cv_lasso_alpha", _RULES)  # type: ignore[assignment]
    result = cv_lasso(a, b, cohort_of_row, free=free, n_folds=n_folds, alphas=alphas, n_alphas=n_alphas, eps=eps,
                      rng=rng)
    return result.alpha(rule)

