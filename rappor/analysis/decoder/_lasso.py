"""The non-negative Lasso of the screening step, solved exactly (private).

The screening (:mod:`._screen`) needs the minimizer of

    F(w) = ||b - A w||^2 / (2 n) + alpha sum_j w_j,   w >= 0,

(on ``w >= 0``, ``alpha ||w||_1`` is the linear ``alpha sum_j w_j``, so this is a smooth
convex quadratic over the non-negative orthant).  Its Karush-Kuhn-Tucker conditions
decide the solution: with ``c_j = A_j' (b - A w) / n``,

    c_j = alpha  where w_j > 0,      c_j <= alpha  where w_j = 0.

:func:`nonnegative_lasso` meets them with a working-set method: the columns that violate
the second condition (one sparse product ``A' r`` over all columns) join a small working set,
and the problem restricted to it is solved exactly by the active-set method of Lawson and
Hanson (1974, *Solving Least Squares Problems*, Ch. 23; on the Gram matrix as in Bro and
De Jong 1997, J. Chemometrics 11(5), "fast NNLS") until no column outside violates them.
The screened lists select a handful of candidates among thousands, so the working set stays
small and every linear solve is a dense one of its size.  scikit-learn's coordinate descent
(:class:`~sklearn.linear_model.Lasso` with ``positive=True``) reaches the same minimizer to
its stopping rule; this solver exists because importing scikit-learn costs more CPU than a
whole decode of 10,000 candidates (``tests/analysis/decoder/test_decoder_lasso.py`` checks
the two against each other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._problem import Array

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Relative tolerance of the KKT conditions (of ``alpha``): a column enters when
#: ``c_j > alpha (1 + KKT_RTOL)``.  Rounding in ``c_j`` is about ``1e-16 ||b|| / n``, far below.
KKT_RTOL = 1e-9
#: Columns added to the working set per pass, at least (the most violating first).
MIN_ADD = 8


def nonnegative_lasso(a: sp.csc_matrix, b: Array, alpha: float, *, scale: Array | None = None,
                      max_passes: int = 200) -> Array:
    """Minimizer of ``||b - A w||^2 / (2 n) + alpha sum(w)`` over ``w >= 0`` (see the module).

    Parameters
    ----------
    a : scipy.sparse.csc_matrix of shape (n, p)
    b : ndarray of shape (n,)
    alpha : float
        The penalty, > 0 (scikit-learn's ``alpha``: the objective divides the squares by ``n``).
    scale : ndarray of shape (p,), optional
        Solve for the design ``A diag(scale)`` without forming it (the screening's unit-norm
        columns: no copy of a large design); the coefficients returned are on that scale.
    max_passes : int, default=200
        Bound on the passes over all columns (each adds the most violating columns to the
        working set, at least 8 or as many as it holds, so a few passes suffice).

    Returns
    -------
    ndarray of shape (p,)
        The coefficients; exactly zero outside the support.

    Raises
    ------
    ValueError
        If ``alpha`` is not positive.
    RuntimeError
        If ``max_passes`` passes did not meet the KKT conditions (not seen in practice).
    """
    if not alpha > 0:
        raise ValueError(f"nonnegative_lasso needs a positive penalty. Got {alpha!r} instead.")
    n, p = a.shape
    b = np.asarray(b, dtype=np.float64)
    tol = KKT_RTOL * alpha
    w = np.zeros(p)
    work = np.zeros(0, dtype=np.int64)
    w_work = np.zeros(0)
    r = b.copy()
    d = np.ones(p) if scale is None else np.asarray(scale, dtype=np.float64)
    for _ in range(max_passes):
        excess = d * np.asarray(a.T @ r).ravel() / n - alpha
        excess[work] = -np.inf  # the working set's own conditions hold (solved exactly below)
        violators = np.flatnonzero(excess > tol)
        if violators.size == 0:
            w[work] = w_work
            return w
        n_add = max(MIN_ADD, work.size)
        if violators.size > n_add:
            violators = violators[np.argpartition(-excess[violators], n_add - 1)[:n_add]]
        work = np.concatenate([work, violators])
        w_work = np.concatenate([w_work, np.zeros(violators.size)])
        a_work, d_work = a[:, work], d[work]
        gram = np.asarray((a_work.T @ a_work).toarray()) * np.outer(d_work, d_work) / n
        linear = d_work * np.asarray(a_work.T @ b).ravel() / n - alpha
        w_work = nonnegative_qp(gram, linear, w_work, tol=tol)
        r = b - np.asarray(a_work @ (d_work * w_work)).ravel()
    msg = f"nonnegative_lasso: the KKT conditions were not met in {max_passes} passes"
    raise RuntimeError(msg)


def nonnegative_qp(gram: Array, linear: Array, start: Array, *, tol: float) -> Array:
    """Minimizer of ``w' G w / 2 - q' w`` over ``w >= 0`` (Lawson-Hanson active set on the Gram matrix).

    ``G`` (``gram``) is symmetric positive semi-definite; ``start`` is a feasible warm start
    (its positive entries form the first passive set).  Returns ``w`` with ``q - G w = 0`` on
    its positive entries and ``<= tol`` on its zeros.
    """
    k = linear.size
    passive = np.asarray(start > 0)
    w = np.where(passive, start, 0.0)
    barred = np.zeros(k, dtype=bool)  # entered and dropped at once: degenerate (a duplicate column)
    enter = -1
    for _ in range(10 * k + 10):
        w, passive = _feasible_solve(gram, linear, w, passive)
        if enter >= 0 and not passive[enter]:
            barred[enter] = True
        grad = linear - gram @ w
        grad[passive | barred] = -np.inf
        enter = int(np.argmax(grad)) if k else 0
        if k == 0 or not grad[enter] > tol:
            return w
        passive[enter] = True
    msg = "nonnegative_qp: the active-set iterations did not end"
    raise RuntimeError(msg)


def _feasible_solve(gram: Array, linear: Array, w: Array,
                    passive: npt.NDArray[np.bool_]) -> tuple[Array, npt.NDArray[np.bool_]]:
    """Lawson-Hanson's inner loop: solve on the passive set, stepping back while a variable would go negative."""
    while passive.any():
        idx = np.flatnonzero(passive)
        z = np.zeros_like(w)
        z[idx] = _solve_spd(gram[np.ix_(idx, idx)], linear[idx])
        bad = passive & (z <= 0)
        if not bad.any():
            return z, passive
        # Largest step from w toward z that keeps every passive variable >= 0; the variable
        # that blocks it (and any rounding to <= 0) leaves the passive set.
        bad_idx = np.flatnonzero(bad)
        ratio = w[bad_idx] / (w[bad_idx] - z[bad_idx])
        block = int(bad_idx[np.argmin(ratio)])
        w = w + float(ratio.min()) * (z - w)
        w[block] = 0.0
        passive = passive & (w > 0)
        w[~passive] = 0.0
    return np.zeros_like(w), passive


def _solve_spd(gram: Array, rhs: Array) -> Array:
    """``gram^-1 rhs`` with the diagonal equilibrated (the non-candidate column's is 1e8 times the others')."""
    d = 1.0 / np.sqrt(np.maximum(np.diag(gram), 1e-300))
    scaled = gram * d[:, None] * d[None, :]
    try:
        y = np.linalg.solve(scaled, rhs * d)
    except np.linalg.LinAlgError:  # singular: duplicate columns among the passive set
        y = np.linalg.lstsq(scaled, rhs * d, rcond=None)[0]
    out: Array = y * d
    return out
