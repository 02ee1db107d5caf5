"""Every candidate's share by an empirical-Bayes regression (private): the default ``proportion``.

This module owns the second product of a decode: a share for *every* candidate,
made for the total variation distance of the whole distribution, next to the detections of
the test (the first product, unchanged, in :mod:`._estimate`).  Three steps, each with the
measured reason in ``docs/decoder.md`` (its section on the shares):

1. :func:`fixed_unexplained`: the unexplained mass is fixed (a ramp on its z-score, helped by
   the residuals' skewness) instead of fitted, as it is confounded with the many small candidates;
2. :func:`coordinate_ascent`: mean-field coordinate ascent on the whitened regression
   ``b = A beta + c u* + e``, ``e ~ N(0, phi I)``, with ``beta_j`` i.i.d. from a discrete
   prior fitted jointly (Carbonetto and Stephens 2012, Bayesian Anal. 7(1); Kim, Wang,
   Carbonetto and Stephens 2022, "mr.ash", arXiv:2208.10910): each candidate's statistic
   with every other candidate at its posterior mean has the genie's standard error and
   nearly independent errors;
3. :func:`bagged_shares`: the posterior mean where the posterior median is positive, under
   Kiefer-Wolfowitz NPMLE priors (Kiefer and Wolfowitz 1956; EM on a grid as Jiang and
   Zhang 2009, Koenker and Mizera 2014, JASA 109(506)) of the final z-scores and of
   bootstrap resamples of them (Efron 2014, JASA 109(507), "Estimation and accuracy after
   model selection": bagging smooths a decision that jumps), kept where at least half of
   the priors give a share; clear strings are not shrunk.

:func:`regression_shares` runs the three on a decode's weighted problem.  It is
deterministic (a fixed internal seed) and does not depend on the order of the candidates:
the coordinate updates visit them by decreasing starting z and the bootstrap resamples are
drawn as counts over rounded z-scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
import numpy.typing as npt

from ._problem import Array, cross_product

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Smallest positive effect of the priors' grids, in standard errors ("the zero assumption":
#: smaller effects count as absent; the prior cannot be identified below it, docs/decoder.md).
GRID_LOW = 0.5
#: Points of the regression's prior grid (besides 0) and of the bagged priors' grids.
REGRESSION_GRID = 60
BAGGING_GRID = 80
#: Bootstrap priors of :func:`bagged_shares` (the first is the sample's own NPMLE).
N_PRIORS = 30
#: Clear strings: shrunk below this z, kept at their statistic from ``KEPT_Z`` (a linear
#: blend between); the priors are fitted to z-scores capped at ``PRIOR_CAP_Z``.
CLEAR_Z = 6.0
KEPT_Z = CLEAR_Z + 2.0
PRIOR_CAP_Z = CLEAR_Z + 4.0
#: Screened lists: only candidates whose starting z exceeds this (or whose starting share is
#: positive) are moved by the coordinate ascent; the others stay at 0.
WORKING_Z = 1.0
#: At most this many candidates are moved (their dense Gram matrix is held in memory:
#: 3,000 columns take 72 MB); beyond it the ones with the largest starting z.
MAX_WORKING = 3000
#: Idle candidates (screened lists) whose posteriors enter the prior's update; beyond it an
#: evenly spaced sample by starting z (100,000 candidates: 97,000 idle posteriors per sweep
#: would cost more than the rest of the decode).  2,000 (from 20,000, the shares' speed pass):
#: decoys-10k's 8,300 idle posteriors and their sparse products were a third of the shares'
#: time, and the sample of 2,000 moved the TV by at most 0.002 (decoys-10k, k128-5k, seeds
#: 0-2; ``docs/notes/decoder-rounds.md``, "Speed").
MAX_IDLE = 2_000
#: Candidates per block when the bagged posteriors are formed (bounds the temporaries).
BLOCK = 1 << 15
#: Coordinate ascent: stop when no posterior mean moves by more than ``TOL`` standard errors
#: (after at least ``MIN_SWEEPS`` sweeps), or after ``MAX_SWEEPS``.
TOL = 1e-4
MIN_SWEEPS = 10
MAX_SWEEPS = 150
#: Active set (the shares' speed pass): every ``FULL_EVERY`` sweeps (and the first) visit every
#: moved candidate; the sweeps between visit only those that, after the last full sweep, had
#: a posterior mass off 0 above ``ACTIVE_MASS`` or moved by more than ``ACTIVE_MOVE`` SEs.
#: The others keep their mean; their statistics are refreshed (``q`` is kept for every moved
#: candidate) and enter ``G``'s update.  Skipping candidates for good stopped early in a
#: worse optimum (phase 1, ``docs/decoder.md``); between full sweeps it does not.
FULL_EVERY = 3
ACTIVE_MASS = 1e-3
ACTIVE_MOVE = 1e-3
#: Over-relaxation of the prior's EM step after each sweep: ``w <- w (w_EM / w)^RELAX``,
#: normalized (an extrapolation in log space; EM on mixture weights is slow).  Measured over
#: 8 classes x 3 seeds: 2 with 150 sweeps gives the TV of plain EM (1) with 300 to within
#: 0.003, in about half the time; 3 diverged.
RELAX = 2.0
#: Seed of the bootstrap resamples: the shares are deterministic.
SEED = 0
#: The bagged priors are fitted to the z-scores rounded to ``1 / ROUND`` (weighted by counts):
#: the EM then costs O(distinct values x grid); 0.05 is 1/20 of the z-scores' SD (measured:
#: no change of TV against 0.01, five times faster).
ROUND = 20
#: Coordinate ascent: a candidate whose statistic is at least this many standard errors above
#: 0 takes its statistic as its mean, not the grid posterior's.  The prior's grid is geometric
#: (60 points up to the largest z, ``docs/decoder.md`` on the shares): near z = 300 its
#: points are 11% apart, i.e. 30 standard errors, so the posterior collapses on the nearest
#: point and the mean of a large string was off by up to 5% of its share (measured: 10 M
#: reports, 20,000 candidates, the top string at 0.1399 for a truth of 0.1455 and a
#: least-squares 0.1456; the residual went to its colliding candidates).  Under any prior
#: smooth on the scale of one standard error the posterior mean of such a statistic is the
#: statistic to within ``O(1/z)`` standard errors.  The bound is the larger of
#: ``PRIOR_CAP_Z`` (where the bagged priors' z-scores are capped) and the z at which the
#: grid's spacing reaches ``EXACT_SPACING`` standard errors: below it the grid resolves the
#: likelihood and the posterior mean stands.  Measured (20 seeds of the accuracy classes, ``benchmarks/_classes.py``):
#: with a spacing of 3 every class's mean TV is within 0.0002 of before (zipf-k8 0.1008 for
#: 0.1006); a bound of 10 alone moved zipf-k8 to 0.1038 and one mixed-small decode gave a
#: share to 19 decoys (11 before), a spacing of 2 zipf-k8 to 0.1020.
EXACT_Z = PRIOR_CAP_Z
EXACT_SPACING = 3.0


def fixed_unexplained(u_hat: float, se: float, *, skewness_z: float = 0.0) -> float:
    """The unexplained mass the shares are fitted with: ``1 - (1 - u) x ramp((1 - u_hat) / SE)``.

    ``u_hat`` and ``se`` are the decode's (unconstrained) unexplained mass and its standard
    error; ``ramp(z) = clip((z - 1) / 2, 0, 1)`` is 0 up to ``z = 1``, 1 from ``z = 3`` and
    linear between, so the fixed value does not jump from one collection to the next.
    ``u = clip(u_hat, 0, 1) x ramp(e)``: 0 unless the data show mass outside the list, with
    ``e`` the evidence that they do: ``u_hat / SE``, or, when larger, its Stouffer
    combination ``(u_hat / SE + skewness_z) / sqrt(2)`` with the residuals' skewness over its
    standard error (:func:`._dispersion.residual_skewness`; strings outside the list skew the
    residuals, an independent mark of the same mass).  Fitted freely, the mass absorbed the
    small candidates on some seeds (high privacy, seed 0: 0.235 for a truth of 0); a lower
    confidence bound ``u - 2 SE`` left mass in the residual with only decoys, which then got
    shares (measured in ``docs/decoder.md``); on the flat lists with strings missing, the ramp
    on ``u_hat / SE`` alone (2.5 for 8.3% missing) kept 0.047 of it on average and the rest
    went to decoys (``docs/notes/decoder-rounds.md``, "collections shaped like real
    deployments").  The same ramp on the
    candidates' mass ``1 - u_hat`` leaves them none unless the data show they hold some: with
    only decoys at 1 M reports, ``u_hat`` 0.993 +- 0.020 left 0.007 for 5 decoys.
    """
    if not math.isfinite(u_hat):
        return 0.0
    u = min(max(u_hat, 0.0), 1.0)
    if not (math.isfinite(se) and se > 0):
        return u
    evidence = u_hat / se
    if math.isfinite(skewness_z):
        evidence = max(evidence, (evidence + skewness_z) / math.sqrt(2.0))
    u *= _ramp(evidence)
    return 1.0 - (1.0 - u) * _ramp((1.0 - u_hat) / se)


def _ramp(z: float) -> float:
    return min(max((z - 1.0) / 2.0, 0.0), 1.0)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RegressionFit:
    """The end state of :func:`coordinate_ascent`, per distinguishable candidate.

    ``statistic`` is ``b_j = beta_j + a_j' r / ||a_j||^2`` (the statistic of candidate ``j``
    with every other at its posterior mean), ``std_error`` its ``sqrt(phi) / ||a_j||``,
    ``mean`` the posterior mean share; ``sweeps`` the sweeps run.
    """

    mean: Array
    statistic: Array
    std_error: Array
    dispersion: float
    sweeps: int


def coordinate_ascent(a: sp.csc_matrix, b: Array, col_sq_norms: Array, start: Array, *,
                      offset: Array | None = None, screened: bool = False,
                      max_dispersion: float = math.inf) -> RegressionFit:
    """Mean-field coordinate ascent of the regression with a fitted discrete prior (mr.ash).

    Model: ``b = A beta + offset + e`` with ``e ~ N(0, phi I)`` and ``beta_j`` i.i.d. from a
    prior ``G`` on ``{0} U s0 geomspace(0.5, max z + 1, 60)`` (``s0`` the median standard
    error).  For each candidate in turn, ``b_j = beta_j + a_j' r / ||a_j||^2`` against the
    residual with the other candidates at their posterior means is ``N(beta_j, phi /
    ||a_j||^2)``: its posterior on the grid gives the new mean (Carbonetto and Stephens
    2012, Sec. 2; Kim et al. 2022, Algorithm 1).  After each sweep ``G``'s weights are the
    candidates' mean posterior (one EM step, over-relaxed by :data:`RELAX`) and
    ``phi = max(1, RSS / (n - 1))``.

    Parameters
    ----------
    a : scipy.sparse.csc_matrix of shape (n_rows, n_candidates)
        Whitened design of the candidates.
    b : ndarray of shape (n_rows,)
        Whitened debiased shares.
    col_sq_norms : ndarray of shape (n_candidates,)
        ``||a_j||^2``.
    start : ndarray of shape (n_candidates,)
        Starting shares (the least-squares fit's); ``G`` starts as the NPMLE of the
        starting one-at-a-time z-scores.
    offset : ndarray of shape (n_rows,), optional
        A fixed part of the fit (the non-candidate column times the fixed unexplained mass).
    screened : bool, default=False
        Move only the candidates whose starting z exceeds :data:`WORKING_Z` or whose
        starting share is positive (long, screened lists); the others stay at 0 and enter
        ``G``'s update with their posteriors.
    max_dispersion : float, default=inf
        Upper bound of ``phi`` (the least-squares fit's dispersion): shrinking a clear
        string inflates the residual, which would inflate ``phi`` and shrink it further
        (measured: 3 candidates, exact counts of one of them, its share 0.60 for a truth
        of 1).

    Notes
    -----
    The sweep runs on the Gram matrix of the moved candidates, ``Q = A_M' A_M``: with
    ``q = A_M' r`` kept up to date (``q -= Q_j delta_j``), a coordinate update costs
    ``O(|M|)`` and no sparse product.  Every :data:`FULL_EVERY`-th sweep visits every moved
    candidate, the others only the active set (:data:`ACTIVE_MASS`): on a list of decoys
    most moved candidates have their posterior at 0 and do not move.
    """
    n_rows, s = a.shape
    target = b if offset is None else b - offset
    beta = np.maximum(np.asarray(start, dtype=np.float64), 0.0).copy()
    norms2 = np.asarray(col_sq_norms, dtype=np.float64)
    resid = target - a @ beta
    stat = beta + (a.T @ resid) / norms2
    z0 = stat * np.sqrt(norms2)  # finite: every column has a bit; not clipped, the grid must reach it
    movable = (z0 > WORKING_Z) | (beta > 0) if screened else np.ones(s, dtype=bool)
    if np.count_nonzero(movable) > MAX_WORKING:
        keep = np.argsort(-np.where(movable, z0, -np.inf), kind="stable")[:MAX_WORKING]
        movable = np.zeros(s, dtype=bool)
        movable[keep] = True
    # Visit order: largest starting z first (ties: input order), so that the result does not
    # depend on the order of the candidates (the ascent stops before full convergence).
    moved = np.flatnonzero(movable)
    moved = moved[np.argsort(-z0[moved], kind="stable")]
    idle = np.flatnonzero(~movable)
    beta[idle] = 0.0
    resid = target - a @ beta
    a_m = a[:, moved]
    gram = cross_product(a_m, a_m)  # dense or sparse by the design's density
    q = np.asarray(a_m.T @ resid).ravel()
    # The idle candidates enter G's update with their posteriors; beyond MAX_IDLE of them, an
    # evenly spaced sample of them sorted by starting z (order-free) stands for them all.
    idle_weight = 1.0
    if len(idle) > MAX_IDLE:
        by_z = idle[np.argsort(z0[idle], kind="stable")]
        sample = by_z[np.linspace(0, len(idle) - 1, MAX_IDLE).round().astype(np.int64)]
        idle_weight = len(idle) / MAX_IDLE
        idle = sample
    a_idle_t = a[:, idle].T.tocsr() if len(idle) else None
    zgrid, w = npmle_prior(z0, n_grid=REGRESSION_GRID, n_iter=2000, tol=1e-10)
    phi = 1.0
    std_error = np.sqrt(phi / norms2)
    grid = float(np.median(std_error)) * zgrid
    exact_z = max(EXACT_Z, EXACT_SPACING / (zgrid[-1] / zgrid[-2] - 1.0))
    w = np.maximum(w, 1e-12)
    w /= w.sum()
    sums_idle = np.zeros(len(grid))
    n_total = len(moved) + idle_weight * len(idle)
    beta_m = beta[moved].copy()
    stat_m = np.zeros(len(moved))
    norms_m = norms2[moved]
    target_sq = float(target @ target)
    a_m_target = np.asarray(a_m.T @ target).ravel()
    stat_idle = np.zeros(len(idle))
    every = np.arange(len(moved))
    half_sq_grid = 0.5 * np.square(grid)
    base = np.empty((len(moved), len(grid)))  # refilled in place every sweep (see below)
    visit = every
    sweeps = 0
    for sweeps in range(1, MAX_SWEEPS + 1):
        full = (sweeps - 1) % FULL_EVERY == 0
        inv_var = norms2 / phi  # 1 / s_j^2
        # log prior - grid^2 / (2 s_j^2): with the b_j grid / s_j^2 term, the log posterior up
        # to a constant per candidate.  Written in place, the same numbers: a new (moved x grid)
        # array every sweep cost four times the arithmetic (timed alone: 0.61 against 0.15 ms
        # at 1,650 x 61).
        np.multiply(inv_var[moved, None], half_sq_grid, out=base)
        np.subtract(np.log(w), base, out=base)
        scale = inv_var[moved]
        change = np.zeros(len(moved))
        stat_m = beta_m + q / norms_m  # the statistics of the candidates not visited
        _sweep(every if full else visit, beta_m, q, gram, norms_m, base, scale, grid, np.sqrt(phi / norms_m),
               stat_m, change, exact_z)
        max_change = float(change.max(initial=0.0))
        beta[moved] = beta_m
        if a_idle_t is not None:
            if full:  # between full sweeps the idle statistics lag by at most two sweeps
                stat_idle = (a_idle_t @ (target - a_m @ beta_m)) / norms2[idle]
            sums_idle = _posterior_sums(stat_idle, grid, w, inv_var[idle])
        sums, zero_mass = _posterior_sums(stat_m, grid, w, scale, zero_mass=True)
        if full:
            visit = np.flatnonzero((zero_mass < 1.0 - ACTIVE_MASS) | (change > ACTIVE_MOVE))
        w_em = np.maximum((sums + idle_weight * sums_idle) / n_total, 1e-300)
        w = _relaxed(w, w_em, RELAX)
        # RSS = t't - beta_M' (A_M' t + q), with q = A_M' r: no product with the design.
        rss = target_sq - float(beta_m @ (a_m_target + q))
        phi = min(max(1.0, rss / max(n_rows - 1, 1)), max_dispersion)
        if full and max_change < TOL and sweeps >= MIN_SWEEPS:
            break
    resid = target - a @ beta
    stat = beta + (a.T @ resid) / norms2
    return RegressionFit(mean=beta, statistic=stat, std_error=np.sqrt(phi / norms2), dispersion=phi, sweeps=sweeps)


def _sweep(visit: npt.NDArray[np.intp], beta: Array, q: Array, gram: Array, norms2: Array, base: Array, scale: Array,
           grid: Array, std_error: Array, stat: Array, change: Array, exact_z: float = math.inf) -> None:
    """One Gauss-Seidel sweep over the moved candidates ``visit`` (in that order).

    ``beta``, ``q`` (``A_M' r``), the statistics ``stat`` and ``change`` (each move in SEs)
    are updated in place.
    ``base[j] + (grid - b_j / 2) b_j / s_j^2`` is the log of prior x likelihood less
    ``b_j^2 / 2 s_j^2``, at most 0 and 0 at ``b_j``: it underflows only when ``b_j`` lies
    far (38 SE) from every grid point, where the maximum is subtracted instead.

    The loop is the cost of the shares (one update per moved candidate per sweep), so each
    update is a few level-1 BLAS calls on preallocated vectors (``dcopy``, ``daxpy``,
    ``ddot``: about 0.3 us each against 1-3 us for the equivalent NumPy expressions) and
    scalar arithmetic on Python floats; the posteriors are formed afterwards, vectorized,
    from ``stat`` (:func:`_posterior_sums`).
    """
    from scipy.linalg.blas import daxpy, dcopy, ddot

    n_grid, n_moved = len(grid), len(q)
    ones = np.ones(n_grid)
    buf = np.empty(n_grid)
    beta_l = beta.tolist()
    norms_l = norms2.tolist()
    scale_l = scale.tolist()
    se_l = std_error.tolist()
    exp = np.exp
    # daxpy's length and factor are passed by position: keyword parsing was a third of its cost.
    for j in visit.tolist():
        old = beta_l[j]
        bj = old + q.item(j) / norms_l[j]
        stat[j] = bj
        if bj >= exact_z * se_l[j]:  # beyond the grid's resolution: the statistic (EXACT_Z)
            new = bj
        else:
            t = bj * scale_l[j]
            dcopy(base[j], buf)
            daxpy(grid, buf, n_grid, t)
            daxpy(ones, buf, n_grid, -0.5 * bj * t)
            exp(buf, buf)
            tot = ddot(buf, ones)
            if not tot > 1e-250:
                dcopy(base[j], buf)
                daxpy(grid, buf, n_grid, t)
                buf -= buf.max()
                exp(buf, buf)
                tot = ddot(buf, ones)
            new = ddot(buf, grid) / tot
        delta = new - old
        if delta != 0.0:
            daxpy(gram[j], q, n_moved, -delta)
            beta_l[j] = new
            change[j] = abs(delta) / se_l[j]
    beta[:] = beta_l


def _relaxed(w: Array, w_em: Array, omega: float) -> Array:
    """``w (w_em / w)^omega``, normalized: the EM step ``w -> w_em`` extrapolated in log space."""
    out = w * np.exp(omega * (np.log(w_em) - np.log(w)))
    relaxed: Array = np.maximum(out / out.sum(), 1e-300)
    return relaxed


@overload
def _posterior_sums(stat: Array, grid: Array, w: Array, inv_var: Array) -> Array: ...


@overload
def _posterior_sums(stat: Array, grid: Array, w: Array, inv_var: Array, *,
                    zero_mass: Literal[True]) -> tuple[Array, Array]: ...


def _posterior_sums(stat: Array, grid: Array, w: Array, inv_var: Array, *,
                    zero_mass: bool = False) -> Array | tuple[Array, Array]:
    """Sum over ``j`` of the posterior probabilities on ``grid`` of ``N(stat_j; beta, 1 / inv_var_j)`` under prior ``w``.

    The log posterior ``log w_g + stat_j grid_g / s_j^2 - grid_g^2 / 2 s_j^2`` (up to a
    constant per candidate) is one matrix product of three columns by three rows; the
    columns are normalized in the final product (``P @ (1 / column sums)``), so the
    posteriors themselves are never divided.  With ``zero_mass``, also each candidate's
    posterior probability of ``grid[0]``.

    The array is (grid points x candidates): the maximum over the grid is then a maximum
    of rows, not of 61-element rows of a long array (measured: five times faster); and
    the log posteriors more than 708.4 below their maximum are set to ``-inf`` before the
    exponential (posteriors below ``2.2e-308`` of the largest, flushed to 0): their
    subnormal values made every operation on them slow (measured: 2,000 candidates x 61
    points, 0.72-0.88 ms per call before, 0.27-0.30 ms after, both changes together) and
    cannot change a sum of probabilities of which at least one is 1.
    """
    if len(stat) == 0:
        return (np.zeros(len(grid)), np.zeros(0)) if zero_mass else np.zeros(len(grid))
    ll = np.vstack([grid, np.square(grid), np.log(w)]).T @ np.vstack([stat * inv_var, -0.5 * inv_var,
                                                                      np.ones(len(stat))])
    ll -= ll.max(axis=0)
    ll[ll < _LOG_TINY] = -np.inf
    np.exp(ll, out=ll)
    inv_tot = 1.0 / (np.ones(len(grid)) @ ll)
    sums: Array = ll @ inv_tot
    return (sums, ll[0] * inv_tot) if zero_mass else sums


#: The smallest positive normal float64 (``2.2e-308``) and its log: smaller numbers are
#: subnormal, and arithmetic on them is microcoded (tens of times slower).
_TINY = float(np.finfo(np.float64).tiny)
_LOG_TINY = math.log(_TINY)

#: Largest |z| of the fits (as :data:`._bayes.Z_CLIP`).
_Z_CLIP = 40.0


def npmle_prior(z: Array, *, n_grid: int, n_iter: int, tol: float = 0.0) -> tuple[Array, Array]:
    """NPMLE of the prior of ``mu >= 0`` given finite ``z ~ N(mu, 1)``, on ``{0} U geomspace(0.5, max z + 1)``.

    Kiefer-Wolfowitz NPMLE by EM on a fixed grid (Jiang and Zhang 2009, Ann. Stat. 37(4)),
    on the z-scores rounded to 0.01 (weighted by counts); stops when no weight moves by
    more than ``tol``.  Returns ``(grid, weights)``.
    """
    zc = np.asarray(z, dtype=np.float64)
    grid = _grid(float(np.max(zc)) if zc.size else 0.0, n_grid)
    values, counts = np.unique(np.round(zc, 2), return_counts=True)
    lik = row_scaled_likelihood(values, grid)
    w = _em(lik, (counts / counts.sum())[None, :], np.full((1, len(grid)), 1.0 / len(grid)), n_iter, tol)
    return grid, w[0]


def _grid(top_z: float, n_grid: int) -> Array:
    return np.concatenate([[0.0], np.geomspace(GRID_LOW, max(top_z, 2.0 * GRID_LOW) + 1.0, n_grid)])


def row_scaled_likelihood(z: Array, grid: Array) -> Array:
    """``phi(z_i - grid_g)`` over its row maximum (the constant cancels in the EM)."""
    ll = -0.5 * np.square(z[:, None] - grid[None, :])
    out: Array = np.exp(ll - ll.max(axis=1, keepdims=True))
    return out


def _em(lik: Array, frac: Array, w: Array, n_iter: int, tol: float) -> Array:
    """EM for several NPMLEs at once: ``frac`` (priors x values) weights the rows of ``lik``.

    ``w_g <- w_g sum_i frac_i lik_ig / sum_g' lik_ig' w_g'`` for every prior (row of ``w``).

    Subnormal numbers (below ``2.2e-308``) in ``lik`` and in the weights are set to 0 (flush
    to zero): a weight that decays through them made every product with it a slow
    microcoded operation (measured: one subnormal weight made ``lik @ w`` ten times slower,
    decode-10k's NPMLE two to three times slower).  Neither can move a density: ``lik`` is
    at most 1 and the weights sum to 1, so the at most 81 terms flushed change a density (at
    least ``1e-300``, the floor) by less than ``2e-306`` -- far less than one rounding step
    of any density the EM meets.
    One prior (the usual case) runs on vectors with preallocated outputs (the same BLAS
    products, ``dgemv``: the same iterates).
    """
    lik = _flush_subnormal(lik.copy())
    if w.shape[0] == 1:
        return _em_one(lik, frac[0], w[0], n_iter, tol)[None, :]
    for _ in range(n_iter):
        dens = np.maximum(lik @ w.T, 1e-300)  # (values, priors)
        new = _flush_subnormal(w * ((frac / dens.T) @ lik))
        done = float(np.max(np.abs(new - w))) <= tol
        w = new
        if done:
            break
    return w


def _em_one(lik: Array, frac: Array, w: Array, n_iter: int, tol: float) -> Array:
    """:func:`_em` for one prior: ``frac`` and ``w`` are vectors."""
    w = np.array(w, dtype=np.float64)
    new = np.empty_like(w)
    diff = np.empty_like(w)
    dens = np.empty(lik.shape[0])
    for _ in range(n_iter):
        np.dot(lik, w, out=dens)
        np.maximum(dens, 1e-300, out=dens)
        np.divide(frac, dens, out=dens)
        np.dot(dens, lik, out=new)
        new *= w
        _flush_subnormal(new)
        np.subtract(new, w, out=diff)
        done = float(np.abs(diff, out=diff).max()) <= tol
        w, new = new, w
        if done:
            break
    return w


def _flush_subnormal(x: Array) -> Array:
    """Non-negative ``x`` with its subnormal entries (``0 < x < 2.2e-308``) set to 0, in place; returns ``x``."""
    x[x < _TINY] = 0.0
    return x


def bagged_shares(z: Array, std_error: Array) -> Array:
    """Shares from the posterior under bagged NPMLE priors of the z-scores ``z`` (majority rule).

    :data:`N_PRIORS` priors: the NPMLE (grid ``{0} U geomspace(0.5, max z + 1, 80)``, z
    capped at ``PRIOR_CAP_Z``, 500 EM iterations) of the z-scores and of bootstrap
    resamples of them (drawn as multinomial counts over the rounded values, so the
    resamples do not depend on the candidates' order; seeded).  Under each prior a
    candidate's effect is its posterior mean if its posterior median is positive (the
    Bayes rule for absolute error sets the rest to 0), else 0; the share is ``SE x`` the
    mean over the priors, or 0 when fewer than half the priors give a positive effect.
    Where the prior near 0 is not identified ("many absent and a few effects near 1" or
    "few absent and many near 0.5"), one prior reports 30 strings and the next 200:
    averaging gives an ambiguous string a fraction of its share, and the majority keeps
    decoys that a few priors favour at 0.  Clear strings (``z >= KEPT_Z``) keep their
    statistic, with a linear blend from ``CLEAR_Z``.
    """
    zf = np.minimum(np.clip(z, -_Z_CLIP, _Z_CLIP), PRIOR_CAP_Z)
    if zf.size == 0:
        return np.zeros(0)
    grid = _grid(float(np.max(zf)), BAGGING_GRID)
    values, counts = np.unique(np.round(zf * ROUND) / ROUND, return_counts=True)
    n = int(counts.sum())
    gen = np.random.default_rng(SEED)
    frac = np.vstack([counts / n, gen.multinomial(n, counts / n, size=N_PRIORS - 1) / n])
    lik_values = row_scaled_likelihood(values, grid)
    priors = _em(lik_values, frac, np.full((N_PRIORS, len(grid)), 1.0 / len(grid)), 500, 0.0)
    mu, todo = np.zeros(len(zf)), _posterior_candidates(zf, priors)
    for lo in range(0, len(todo), BLOCK):
        rows = todo[lo:lo + BLOCK]
        lik = row_scaled_likelihood(zf[rows], grid)
        dens = np.maximum(lik @ priors.T, 1e-300)       # (candidates, priors)
        mean = (lik @ (priors * grid).T) / dens
        at_zero = lik[:, :1] * priors[:, 0][None, :] / dens
        effect = np.where(at_zero < 0.5 - 1e-12, mean, 0.0)
        positive = (effect > 0).mean(axis=1) >= 0.5
        mu[rows] = np.where(positive, effect.mean(axis=1), 0.0)
    blend = np.clip((z - CLEAR_Z) / (KEPT_Z - CLEAR_Z), 0.0, 1.0)
    out: Array = ((1.0 - blend) * mu + blend * z) * std_error
    return out


def _posterior_candidates(zf: Array, priors: Array) -> npt.NDArray[np.int64]:
    """The candidates whose effect :func:`bagged_shares` must compute; the others' is 0.

    With ``z <= 0`` (or nan) the likelihood of ``z`` is largest at the grid's 0 (its
    scaled value exactly 1, the others at most 1), so the posterior mass at 0 is at least
    the prior's, ``w_0 / sum(w)``, up to rounding (81 terms: below ``1e-13`` relative).
    When every prior puts more than ``1/2 + 1e-9`` there, such a candidate's posterior
    median is 0 under every prior and its effect 0: its rows are not computed (about half
    of a million-candidate list of decoys).
    """
    everyone = np.arange(len(zf))
    if not np.all(priors[:, 0] >= (0.5 + 1e-9) * priors.sum(axis=1)):
        return everyone
    return everyone[zf > 0]


def regression_shares(a: sp.csc_matrix, b: Array, col_sq_norms: Array, start: Array, *,
                      background: Array | None, unexplained: float, screened: bool,
                      dispersion: float = math.inf) -> Array:
    """Every distinguishable candidate's share: the three steps of the module on a weighted problem.

    Parameters
    ----------
    a, b, col_sq_norms :
        The whitened candidates' design, shares and squared column norms.
    start : ndarray
        The least-squares shares of the decode's fit (the starting point).
    background : ndarray or None
        The whitened non-candidate column (None when the fit had none).
    unexplained : float
        The fixed unexplained mass (:func:`fixed_unexplained`; 0 without ``background``).
    screened : bool
        Whether the decode screened the list (see :func:`coordinate_ascent`).
    dispersion : float, default=inf
        The least-squares fit's dispersion, an upper bound of the regression's.

    Returns
    -------
    ndarray
        Shares ``>= 0`` summing to at most ``1 - unexplained`` (scaled down in proportion
        when they would exceed it: a safeguard, the fit does not constrain the sum).
    """
    offset = None if background is None or unexplained <= 0 else background * unexplained
    fit = coordinate_ascent(a, b, col_sq_norms, start, offset=offset, screened=screened, max_dispersion=dispersion)
    z = fit.statistic / fit.std_error
    shares = np.maximum(bagged_shares(z, fit.std_error), 0.0)
    return _capped(shares, z >= KEPT_Z, max(1.0 - unexplained, 0.0))


def _capped(shares: Array, clear: npt.NDArray[np.bool_], cap: float) -> Array:
    """Shares summing to at most ``cap``: the excess is taken from the shares of the strings that are not clear.

    The cap ``1 - u`` comes from the unexplained mass, whose standard error is 0.01-0.1 and
    which absorbs the mass of the many small candidates (:func:`fixed_unexplained`); a clear
    string's share (``z >= KEPT_Z``, kept at its statistic by :func:`bagged_shares`) is
    known far better.  Scaling every share in proportion moved them all: 10 M reports,
    epsilon 2, a stale list (`benchmarks/discovery.py` seed 0), the top string 0.1223 for a
    truth of 0.1455 and a statistic of 0.1445 (22 standard errors).  Only when the clear
    strings alone exceed the cap are they scaled too.
    """
    total = float(shares.sum())
    if total <= cap or total <= 0:
        return shares
    fixed, rest = float(shares[clear].sum()), float(shares[~clear].sum())
    if fixed >= cap or rest <= 0:
        return shares * (cap / total)
    out = shares.copy()
    out[~clear] *= (cap - fixed) / rest
    return out
