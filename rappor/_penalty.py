"""Cross-validated penalty of the decoder's screening Lasso (private).

The screening Lasso of :func:`rappor._estimation.lasso_screen` minimizes

    ||b - A w||^2 / (2 n) + alpha ||w||_1,   w >= 0,

on the whitened design ``A`` with unit-norm columns (``n`` rows, one per (cohort, bit)),
plus a practically unpenalized column for the mass of the non-candidate strings.  Its
default penalty is a plug-in constant (the Bonferroni level of the noise).  This module
chooses ``alpha`` from the data instead, by K-fold cross-validation in which the folds
are made of whole *cohorts*: the shares being estimated are the same in every cohort,
cohorts hold disjoint sets of reports (independent), and the ``k`` bits of one cohort
come from the same reports, so a cohort's rows are held out together.

:func:`cv_lasso` returns the whole cross-validation curve (:class:`LassoCV`);
:func:`cv_lasso_alpha` only the chosen penalty, on the scale ``lasso_screen`` (and
``rappor.Decoder(lasso_alpha=...)``) uses.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from ._estimation import FREE_SCALE, standardize_columns
from ._lazy import lazy_module
from ._validation import check_int, check_options, check_real, check_rng
from .exceptions import InvalidParameterError

if TYPE_CHECKING:
    import scipy.sparse as sp
else:  # imported on first use: keeps `import rappor` light
    sp = lazy_module("scipy.sparse")

__all__ = ["LassoCV", "bic_lasso_alpha", "cv_lasso", "cv_lasso_alpha", "cohort_folds", "standardize_design"]

Array = npt.NDArray[np.float64]

#: Seed of the fold assignment when ``rng`` is None (the decoder stays deterministic).
DEFAULT_SEED = 0
_RULES = ("min", "1se")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LassoCV:
    """Cross-validation curve of the screening Lasso's penalty.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
        The penalties tried, decreasing (scikit-learn's ``alpha``, on the whitened
        unit-norm scale of :func:`rappor._estimation.lasso_screen`).
    cv_mean : ndarray of shape (n_alphas,)
        Held-out mean squared whitened residual per row, pooled over the folds
        (weighted by the rows each fold holds out).
    cv_se : ndarray of shape (n_alphas,)
        Standard error of ``cv_mean`` from the spread of the per-fold errors.
    n_selected : ndarray of int, shape (n_alphas,)
        Candidates with a positive coefficient when the Lasso is fitted on all rows at
        each penalty.
    alpha_min, alpha_1se : float
        The penalty with the smallest ``cv_mean`` and the largest penalty whose
        ``cv_mean`` is within one standard error of that minimum.
    fold_of_cohort : dict of int to int
        Fold (``0 .. n_folds - 1``) of every cohort.
    """

    alphas: Array
    cv_mean: Array
    cv_se: Array
    n_selected: npt.NDArray[np.int64]
    alpha_min: float
    alpha_1se: float
    fold_of_cohort: dict[int, int]

    def __post_init__(self) -> None:
        for name in ("alphas", "cv_mean", "cv_se", "n_selected"):
            arr = np.array(getattr(self, name), copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def alpha(self, rule: Literal["min", "1se"] = "min") -> float:
        """The penalty chosen by ``rule`` (``"min"`` or ``"1se"``)."""
        check_options(rule, "rule", "LassoCV.alpha", _RULES)
        return self.alpha_min if rule == "min" else self.alpha_1se


def standardize_design(a: sp.spmatrix, free: Array | None = None) -> sp.csc_matrix:
    """Columns of ``a`` scaled to unit norm, then ``free`` appended with norm ``FREE_SCALE``.

    This is the design :func:`rappor._estimation.lasso_screen` fits: unit-norm candidate
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


def _path(a_std: sp.csc_matrix, b: Array, alphas: Array, *, keep: int | None = None) -> Array:
    """Coefficients of the positive Lasso along decreasing ``alphas``, shape (p, n_alphas).

    Warm-started coordinate descent (scikit-learn :class:`~sklearn.linear_model.Lasso`)
    on the columns that the sequential strong rule keeps (Tibshirani, Bien, Friedman,
    Hastie, Simon, Taylor and Tibshirani 2012, JRSS-B 74(2), eq. 4, one-sided for
    ``w >= 0``): column ``j`` is left out at ``alpha`` when ``A_j' r / n < 2 alpha -
    alpha_prev`` with ``r`` the residual at the previous penalty.  The rule can be wrong,
    so every solution is checked against the KKT conditions on all columns
    (``A_j' r / n <= alpha`` where ``w_j = 0``) and refitted with the violators added
    until none is left: the path is the exact positive-Lasso path (to the solver's
    tolerance) at a fraction of the cost, because the supports stay small.  Column
    ``keep`` (the non-candidate column) is always in the fit.
    """
    from sklearn.linear_model import Lasso

    n, p = a_std.shape
    a_t = sp.csr_matrix(a_std.T)
    b = np.asarray(b, dtype=np.float64)
    coefs = np.zeros((p, len(alphas)))
    w = np.zeros(p)
    resid = b.copy()
    always = np.zeros(p, dtype=bool)
    if keep is not None:
        always[keep] = True
    grad = np.asarray(a_t @ resid).ravel() / n
    prev = max(float(alphas[0]), float(grad.max(initial=0.0)))
    model = Lasso(alpha=1.0, fit_intercept=False, positive=True, precompute=False, max_iter=5000, tol=1e-4,
                  warm_start=True, selection="cyclic")
    for i, alpha in enumerate(alphas):
        cols = always | (w > 0) | (grad >= 2.0 * alpha - prev)
        for _ in range(p + 1):
            idx = np.flatnonzero(cols)
            start = w[idx]  # warm start: the previous penalty's (or the last round's) solution
            w = np.zeros(p)
            if len(idx):
                model.set_params(alpha=float(alpha))
                model.coef_ = start.copy()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # ConvergenceWarning: the KKT check below guards
                    model.fit(a_std[:, idx], b)
                w[idx] = np.maximum(model.coef_, 0.0)
            resid = b - np.asarray(a_std @ w).ravel()
            grad = np.asarray(a_t @ resid).ravel() / n
            violators = ~cols & (grad > alpha * (1.0 + 1e-6))
            if not violators.any():
                break
            cols |= violators
        coefs[:, i] = w
        prev = float(alpha)
    return coefs


def cv_lasso(a: sp.spmatrix | Array, b: npt.ArrayLike, cohort_of_row: npt.ArrayLike, *,
             free: Array | None = None, n_folds: int = 5, alphas: npt.ArrayLike | None = None,
             n_alphas: int = 30, eps: float = 1e-2,
             rng: np.random.Generator | int | None = None) -> LassoCV:
    """K-fold cross-validation, over whole cohorts, of the screening Lasso's penalty.

    Parameters
    ----------
    a : sparse matrix or ndarray of shape (n_rows, n_candidates)
        The whitened design (rows weighted by the inverse noise standard deviation),
        exactly as passed to :func:`rappor._estimation.lasso_screen`; its columns are
        scaled to unit norm here (on all rows) as ``lasso_screen`` does.
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
    LassoCV

    Raises
    ------
    InvalidParameterError
        If the shapes disagree, there are fewer than 2 cohorts, or a parameter is out
        of range.

    Notes
    -----
    For each fold the positive Lasso is fitted on the other folds' rows along the
    penalty grid, warm-started from the largest penalty (coordinate descent of
    scikit-learn's :class:`~sklearn.linear_model.Lasso` with sequential strong rules
    and KKT checks: the same path as :func:`~sklearn.linear_model.lasso_path`, about
    ten times faster with 10,000 candidates), and its squared whitened residuals on the
    held-out rows are summed.  As in ``glmnet``'s ``cv.glmnet`` (Friedman, Hastie and
    Tibshirani 2010, J. Stat. Softw. 33(1), Sec. 2.5), the penalty is on the
    per-row scale (the objective divides by the training rows), the same grid is used
    for every fold, the curve is the fold-size weighted mean of the per-fold mean
    squared errors and its standard error is ``sqrt(weighted variance / (K - 1))``.
    The folds are whole cohorts because the unit of independence is the cohort:
    cross-validation needs held-out data independent of the training data (Hastie,
    Tibshirani and Friedman 2009, *The Elements of Statistical Learning*, 2nd ed.,
    Sec. 7.10; Roberts et al. 2017, Ecography 40(8), on blocked cross-validation).
    ``alpha_1se`` is the one-standard-error rule (ESL Sec. 7.10.1): the most
    parsimonious model whose error is within one standard error of the best.
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

    s = a.shape[1]
    a_std = standardize_design(a if sp.issparse(a) else sp.csc_matrix(np.asarray(a, dtype=np.float64)), free)
    if alphas is None:
        top = _alpha_max(a_std, b, s, free is not None)
        if not top > 0:
            top = 1.0 / n  # no candidate correlates positively: every penalty selects nothing
        grid = np.geomspace(top, top * eps, n_alphas)
    else:
        grid = np.sort(np.asarray(alphas, dtype=np.float64).ravel())[::-1]
        if grid.size == 0 or not np.all(np.isfinite(grid)) or grid[-1] <= 0:
            msg = f"The 'alphas' parameter of {owner} must be a non-empty array of positive floats. Got {alphas!r} instead."
            raise InvalidParameterError(msg)

    keep = s if free is not None else None
    fold_of_row, fold_of_cohort = cohort_folds(cohorts, n_folds, generator)
    a_rows = a_std.tocsr()
    mse = np.empty((n_folds, len(grid)))
    held = np.empty(n_folds)
    for f in range(n_folds):
        test = fold_of_row == f
        coefs = _path(sp.csc_matrix(a_rows[~test]), b[~test], grid, keep=keep)
        resid = b[test][:, None] - np.asarray(a_rows[test] @ coefs)
        held[f] = test.sum()
        mse[f] = (resid**2).mean(axis=0)
    weight = held / held.sum()
    cv_mean = weight @ mse
    cv_se = np.sqrt((weight @ (mse - cv_mean) ** 2) / (n_folds - 1))
    best = int(np.argmin(cv_mean))
    # Largest penalty (grid is decreasing: smallest index) within one SE of the minimum.
    within = np.flatnonzero(cv_mean <= cv_mean[best] + cv_se[best])
    one_se = int(within.min())
    n_selected = (_path(a_std, b, grid, keep=keep)[:s] > 0).sum(axis=0).astype(np.int64)
    return LassoCV(alphas=grid, cv_mean=cv_mean, cv_se=cv_se, n_selected=n_selected,
                   alpha_min=float(grid[best]), alpha_1se=float(grid[one_se]), fold_of_cohort=fold_of_cohort)


def cv_lasso_alpha(a: sp.spmatrix | Array, b: npt.ArrayLike, cohort_of_row: npt.ArrayLike, *,
                   free: Array | None = None, n_folds: int = 5, alphas: npt.ArrayLike | None = None,
                   rule: Literal["min", "1se"] = "min", n_alphas: int = 30, eps: float = 1e-2,
                   rng: np.random.Generator | int | None = None) -> float:
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
        :func:`rappor._estimation.lasso_screen`: pass it as
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



def bic_lasso_alpha(a: sp.spmatrix | Array, b: npt.ArrayLike, *, free: Array | None = None,
                    n_alphas: int = 30, eps: float = 1e-2, noise_variance: float = 1.0) -> float:
    """The screening Lasso's penalty minimizing the Bayesian information criterion.

    Along the positive-Lasso path on all rows (same grid and standardization as
    :func:`cv_lasso`), ``BIC(alpha) = RSS(alpha) / sigma^2 + log(n) df(alpha)`` with
    ``df`` the number of non-zero coefficients, an unbiased estimate of the Lasso's
    degrees of freedom (Zou, Hastie and Tibshirani 2007, Ann. Stat. 35(5), Theorem 1),
    and ``sigma^2`` the noise variance -- known here: the rows are whitened by their
    binomial standard deviations, so ``sigma^2 = 1`` (pass the Pearson dispersion to
    allow for overdispersion).  Unlike cross-validation it needs one path, not one per
    fold, and no random fold assignment.

    Parameters
    ----------
    a, b, free, n_alphas, eps :
        As in :func:`cv_lasso`.
    noise_variance : float, default=1.0

    Returns
    -------
    float
        The penalty, on the scale of :func:`rappor._estimation.lasso_screen`.
    """
    owner = "bic_lasso_alpha"
    b = np.asarray(b, dtype=np.float64).ravel()
    n = len(b)
    if a.shape[0] != n or (free is not None and np.shape(free) != (n,)):
        msg = (f"The design, 'b' and 'free' of {owner} must have one entry per row. "
               f"Got {a.shape[0]}, {n} and {None if free is None else np.shape(free)} instead.")
        raise InvalidParameterError(msg)
    n_alphas = check_int(n_alphas, "n_alphas", owner, low=1)
    eps = check_real(eps, "eps", owner, low=0.0, high=1.0, low_open=True)
    sigma2 = check_real(noise_variance, "noise_variance", owner, low=0.0, low_open=True)
    s = a.shape[1]
    a_std = standardize_design(a if sp.issparse(a) else sp.csc_matrix(np.asarray(a, dtype=np.float64)), free)
    top = _alpha_max(a_std, b, s, free is not None)
    if not top > 0:
        return 1.0 / max(n, 1)  # no candidate correlates positively: every penalty selects nothing
    grid = np.geomspace(top, top * eps, n_alphas)
    coefs = _path(a_std, b, grid, keep=s if free is not None else None)
    resid = b[:, None] - np.asarray(a_std @ coefs)
    df = (coefs > 0).sum(axis=0)
    bic = (resid**2).sum(axis=0) / sigma2 + np.log(n) * df
    return float(grid[int(np.argmin(bic))])
