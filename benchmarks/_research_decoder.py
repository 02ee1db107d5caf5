"""Research prototype for issue 14: a default decoder that gives two products (private).

Not part of the package: phase 1 of issue 14 prototypes the new default here, on top of the
decoder's internals (``rappor.analysis.decoder._problem`` etc.), and measures it with
``python benchmarks/accuracy.py --research``; the findings and the proposed specification are
in ``docs/notes/decoder-rounds.md`` ("Issue 14, phase 1").  The implementation proper goes into
``rappor/decoder/`` in phase 2.

Two products, as issue 14 asks:

* ``detected``: the strings we can vouch for -- the current default's test (random-string
  null, Benjamini-Hochberg), whose false detections stay controlled;
* a share for *every* candidate: an empirical-Bayes estimate made for the total variation
  distance of the whole distribution (what a google/rappor-style reader of results.csv
  computes from the rows).

The proposed default is mode ``bag-veb``: :func:`fixed_unexplained` (the unexplained mass,
fixed), :func:`veb` (empirical-Bayes regression: coordinate ascent with a fitted discrete
non-negative prior; its one-at-a-time statistics have the genie's SE and nearly independent
errors) and :func:`bagged_shares` (NPMLE priors of the final z-scores and of bootstrap
resamples; posterior mean where the posterior median is positive, kept when at least half the
priors report it).  The other modes are the steps that led there, kept for the measurements
the docs quote: ``r2-*`` / ``r-*`` (:func:`working_statistics`: unconstrained working-model
z-scores -- well specified, but with correlated errors), ``veb-*`` (the regression without
bagging; free or fixed unexplained mass), ``bag-working``, ``bag-veb-mean``/``-cal``/``+lfdr``
(bagging by the mean, calibrated z-scores, local-fdr detections), and two bounds that use the
truth (``bound:genie-u``, ``bound:oracle-prior``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402

try:  # the decoder's internals: the decoder package (rappor/decoder/), or the older single module
    from types import SimpleNamespace

    from rappor.analysis.decoder import _bayes
    from rappor.analysis.decoder import _null
    from rappor.analysis.decoder import _problem
    from rappor.analysis.decoder import _screen

    est = SimpleNamespace(Z_CLIP=_bayes.Z_CLIP, column_groups=_problem.column_groups,
                          column_sq_norms=_problem.column_sq_norms, debias=_problem.debias,
                          lasso_screen=_screen.lasso_screen, leading_columns=_problem.leading_columns,
                          random_string_null=_null.random_string_null, scale_rows=_problem.scale_rows,
                          row_scaled_likelihood=_bayes.row_scaled_likelihood,
                          select_rows=_problem.select_rows, weighted_design=_problem.weighted_design)
except ImportError:  # pragma: no cover - before the decoder package
    from rappor import _estimation as est  # type: ignore[no-redef]

    est.row_scaled_likelihood = est._row_scaled_likelihood


def _diag(res: rappor.DecodeResult, name: str) -> float:
    """A diagnostic of a decode (a dict before the decoder package, an object after)."""
    d = res.diagnostics
    return float(d[name] if isinstance(d, dict) else getattr(d, name))

Array = npt.NDArray[np.float64]

#: Screen (working model = Lasso-selected + detected) above this share of rows, as decode.R.
SCREEN_RATIO = 0.8


@dataclass(frozen=True)
class Design:
    """The whitened problem of a collection, distinct candidates only (as the decoder builds it)."""

    x_u: object          # (rows, s_u) 0/1 map of the distinct candidates (sparse)
    a: object            # the same, whitened (rows scaled by ``weight``), CSC with sorted indices
    b: Array             # whitened debiased shares
    c: Array             # whitened non-candidate column
    weight: Array        # 1 / SD of each row
    rep: npt.NDArray[np.int64]
    uniq: npt.NDArray[np.int64]
    s_all: int
    k: int
    h: int


def _design(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap) -> Design:
    params = aggregate.params
    k, h = params.num_bloombits, params.num_hashes
    deb = est.debias(aggregate.counts, params.p11, params.p01)
    x = est.select_rows(cmap.matrix, deb.rows)
    s_all = x.shape[1]
    rep, zero = est.column_groups(x)
    is_zero = np.zeros(s_all, dtype=bool)
    is_zero[zero] = True
    uniq = np.flatnonzero((rep == np.arange(s_all)) & ~is_zero)
    weight = 1.0 / np.sqrt(deb.var)
    x_u = x if len(uniq) == s_all else x[:, uniq]
    a = est.scale_rows(x_u, weight).tocsc()
    a.sort_indices()
    hbar = k * (1.0 - (1.0 - 1.0 / k) ** h)
    return Design(x_u=x_u, a=a, b=weight * deb.y, c=weight * (hbar / k), weight=weight, rep=rep, uniq=uniq,
                  s_all=s_all, k=k, h=h)


def _spread(values: Array, rep, uniq, s_all: int, fill: float) -> Array:  # type: ignore[no-untyped-def]
    pos = np.full(s_all, -1, dtype=np.int64)
    pos[uniq] = np.arange(len(uniq))
    idx = pos[rep]
    valid = idx >= 0
    out = np.full(s_all, fill)
    out[valid] = values[idx[valid]]
    return out


@dataclass(frozen=True)
class Working:
    """Per-candidate statistics of the unconstrained working model (candidate order)."""

    share: Array        # unconstrained share (Wald in M, one-step off M); nan: no bit in any cohort
    se: Array           # its standard error (with the Pearson dispersion when > 1)
    z: Array            # share / se
    z_cal: Array        # Phi^-1(1 - p) with p from the random-string null
    in_model: npt.NDArray[np.bool_]
    unexplained: float  # the non-candidate column's coefficient
    unexplained_se: float
    dispersion: float
    detected: npt.NDArray[np.bool_]   # the current default's detections
    ls_share: Array     # the current default's (constrained) shares
    screened: bool


def working_statistics(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap, *,
                       significance: float = 0.05, rng: int = 0, clip_unexplained: bool = True) -> Working:
    """Unconstrained working-model statistics of every candidate.

    The empirical-Bayes model needs, for every candidate, a statistic ``z_j ~ N(share_j / SE_j,
    1)``.  The current decoder's z-scores are not: they come from the *non-negative* fit, where a
    candidate at the bound has a score ``<= 0`` by the Karush-Kuhn-Tucker conditions, so real
    strings with small shares pile up below 0 (issue 4's 100 real strings: 29-54 negative
    z-scores, mean z 0.43-0.95 against a true mean effect of 1.0).  Here the shares of a working
    model ``M`` (every candidate when there are at most ``0.8`` x rows of them, as decode.R's
    rule; else the Lasso-screened and detected ones), with the non-candidate column, are fitted
    *without* sign constraints: the Wald z of ``j in M`` is then ``N(share_j / SE_j, 1)`` under
    the Gaussian approximation of the counts (its SE is 2-4% above the constrained fit's).  A
    candidate outside ``M`` gets the score statistic of adding it to ``M``.  Their errors are
    correlated (common modes: the unexplained mass, sums over decoys), which :func:`veb` avoids.
    """
    res = rappor.Decoder(significance_level=significance, shares="detected").decode(aggregate, cmap)
    d = _design(aggregate, cmap)
    k, h, s, rep, uniq, weight, b, background = d.k, d.h, d.s_all, d.rep, d.uniq, d.weight, d.b, d.c
    n_rows, s_u = d.a.shape
    a_full = est.weighted_design(d.x_u, weight, background)
    a_u = est.leading_columns(a_full, s_u)
    norms2 = est.column_sq_norms(a_full)[:s_u]
    screened = s_u > SCREEN_RATIO * n_rows
    detected_u = np.asarray(res.detected, dtype=bool)[uniq]
    if screened:
        selected, _ = est.lasso_screen(a_full, b, significance=significance, n_tests=s_u, lasso_alpha=None,
                                       free_last=True, col_sq_norms=est.column_sq_norms(a_full))
        model = np.union1d(selected, np.flatnonzero(detected_u))
    else:
        model = np.arange(s_u)
    a_m = np.column_stack([a_u[:, model].toarray(), background])
    gram = a_m.T @ a_m
    gram_inv = np.linalg.pinv(gram)
    coef = gram_inv @ (a_m.T @ b)
    if coef[-1] < 0 and clip_unexplained:
        # The unexplained mass is >= 0.  Unconstrained, it is poorly determined when the
        # candidates' columns nearly span the evenly spread one (100 candidates: SE 0.10-0.15),
        # and a negative estimate lifts every candidate's z alike (mixed-small, seed 2: -0.41,
        # decoys' mean z +0.2, 0.44 of the mass put on decoys).  Fix it at 0 instead: the
        # column stays (shape) with coefficient 0, i.e. the fit of the candidates alone.
        a_c = a_m[:, :-1]
        g_c = np.linalg.pinv(a_c.T @ a_c)
        coef = np.append(g_c @ (a_c.T @ b), 0.0)
        gram_inv = np.zeros_like(gram_inv)
        gram_inv[:-1, :-1] = g_c
        a_m = np.column_stack([a_c, np.zeros(n_rows)])
    resid = b - a_m @ coef
    dof = max(n_rows - a_m.shape[1], 1)
    disp = max(1.0, float(resid @ resid) / dof)
    share_u = np.zeros(s_u)
    se_u = np.zeros(s_u)
    share_u[model] = coef[:-1]
    se_u[model] = np.sqrt(np.maximum(np.diag(gram_inv)[:-1], 0.0) * disp)
    other = np.setdiff1d(np.arange(s_u), model)
    if len(other):
        a_o = a_u[:, other]
        score = np.asarray(a_o.T @ resid).ravel()
        cross = np.asarray((a_o.T @ a_m))
        perp2 = norms2[other] - np.sum((cross @ gram_inv) * cross, axis=1)
        perp = np.sqrt(np.maximum(perp2, 1e-300))
        se_u[other] = math.sqrt(disp) / perp
        share_u[other] = score / perp**2
    z_u = np.divide(share_u, se_u, out=np.zeros(s_u), where=se_u > 0)
    # Calibration: the same statistic on the score scale against a random string's law.
    null = est.random_string_null(weight * resid * math.sqrt(n_rows / dof), k, h, np.random.default_rng(rng))
    x_stat = z_u * math.sqrt(disp) * np.divide(math.sqrt(disp), se_u, out=np.zeros(s_u), where=se_u > 0)
    p_u = null.sf(x_stat)
    z_cal_u = stats.norm.isf(np.clip(p_u, 1e-300, 1.0))
    in_model_u = np.zeros(s_u, dtype=bool)
    in_model_u[model] = True

    def spread(values: npt.NDArray, fill: float) -> Array:
        return _spread(np.asarray(values, dtype=np.float64), rep, uniq, s, fill)

    return Working(share=spread(share_u, math.nan), se=spread(se_u, math.nan), z=spread(z_u, 0.0),
                   z_cal=spread(z_cal_u, 0.0), in_model=spread(in_model_u, 0.0) > 0.5,
                   unexplained=float(coef[-1]), unexplained_se=float(math.sqrt(gram_inv[-1, -1] * disp)),
                   dispersion=disp, detected=np.asarray(res.detected, dtype=bool),
                   ls_share=np.nan_to_num(res.proportion), screened=bool(screened))


# --- empirical Bayes -----------------------------------------------------------------------------

def fit_prior(z: Array, *, grid_low: float = 0.1, n_grid: int = 80, n_iter: int = 2000) -> tuple[Array, Array]:
    """NPMLE of the prior of ``mu`` given ``z ~ N(mu, 1)`` on ``{0} U geomspace(grid_low, max z + 1)``.

    The decoder's ``_npmle_prior`` with the grid's start and size as parameters and a stopping rule.
    """
    z = np.clip(z, -est.Z_CLIP, est.Z_CLIP)
    top = max(float(np.max(z)), 2 * grid_low) + 1.0
    grid = np.concatenate([[0.0], np.geomspace(grid_low, top, n_grid)])
    zb, counts = np.unique(np.round(z, 2), return_counts=True)
    lik = est.row_scaled_likelihood(zb, grid)
    frac = counts / counts.sum()
    w = np.full(len(grid), 1.0 / len(grid))
    for _ in range(n_iter):
        post = lik * w
        post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
        new = frac @ post
        done = float(np.max(np.abs(new - w))) < 1e-10
        w = new
        if done:
            break
    return grid, w


def posterior(z: Array, grid: Array, w: Array) -> Array:
    """Posterior probabilities of the grid points, one row per z."""
    z = np.clip(z, -est.Z_CLIP, est.Z_CLIP)
    loglik = -0.5 * (z[:, None] - grid[None, :]) ** 2
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True)) * w
    out: Array = post / np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
    return out


def posterior_median(post: Array, grid: Array) -> Array:
    """Posterior median on the grid (the first grid point whose CDF reaches 1/2)."""
    j = np.argmax(np.cumsum(post, axis=1) >= 0.5 - 1e-12, axis=1)
    out: Array = grid[j]
    return out


# --- research modes ------------------------------------------------------------------------------

def eb_z(w: Working, use_cal: bool | str) -> Array:
    """The z-scores the prior is fitted to: Wald, calibrated, or calibrated below 8 (``"blend"``).

    The calibrated z saturates far out (p-values clipped at 1e-300; the null's tabulated
    tail ends): at k=128, v1's Wald z of 51 reads 22.6.  ``"blend"`` keeps the calibration
    where it decides presence and the Wald scale for the magnitude of clear strings.
    """
    if use_cal == "blend":
        return np.where(np.maximum(w.z, w.z_cal) < 8.0, w.z_cal, w.z)
    return w.z_cal if use_cal else w.z


#: Effects are shrunk by the prior below this z; clear strings (z >= CLEAR_Z + 2) keep their
#: Wald estimate, with a linear blend between (the NPMLE's far atoms are few and EM converges
#: slowly there: at k=128 a z of 51 was pulled to 41).
CLEAR_Z = 6.0
ACTIVE_SET = False  # measured: the active set stopped early in a worse optimum (mixed-small seed 4: TV 0.32 vs 0.20)


def eb_shares(w: Working, *, use_cal: bool | str, grid_low: float, rule: str, clear_z: float = CLEAR_Z) -> Array:
    """Shares of every candidate from the NPMLE posterior of ``w``'s z-scores.

    ``rule``: ``"mean"`` (posterior mean), ``"median"`` (posterior median), ``"mean|median"``
    (posterior mean where the median is positive, else 0).
    """
    finite = np.isfinite(w.se) & (w.se > 0)
    z = eb_z(w, use_cal)[finite]
    zfit = np.minimum(z, clear_z + 4.0)
    grid, prior = fit_prior(zfit, grid_low=grid_low)
    post = posterior(zfit, grid, prior)
    mean = post @ grid
    med = posterior_median(post, grid)
    mu = {"mean": mean, "median": med, "mean|median": np.where(med > 0, mean, 0.0)}[rule]
    t = np.clip((w.z[finite] - clear_z) / 2.0, 0.0, 1.0)
    mu = (1.0 - t) * mu + t * w.z[finite]
    out = np.zeros(len(w.se))
    out[finite] = mu * w.se[finite]
    return out


def research_mode(**kwargs: object):  # type: ignore[no-untyped-def]
    def run(col):  # type: ignore[no-untyped-def]
        w = working_statistics(col.aggregate, col.candidate_map)
        return eb_shares(w, **kwargs), w.detected  # type: ignore[arg-type]
    return run


RESEARCH_MODES = {
    "r2-blend-.5": research_mode(use_cal="blend", grid_low=0.5, rule="mean|median"),
    "r2-z-.5": research_mode(use_cal=False, grid_low=0.5, rule="mean|median"),
    "r2-blend-.5-med": research_mode(use_cal="blend", grid_low=0.5, rule="median"),
    "r-mean|med-z-.1": research_mode(use_cal=False, grid_low=0.1, rule="mean|median"),
    "r-mean|med-cal-.1": research_mode(use_cal=True, grid_low=0.1, rule="mean|median"),
    "r-median-cal-.1": research_mode(use_cal=True, grid_low=0.1, rule="median"),
    "r-mean|med-cal-.5": research_mode(use_cal=True, grid_low=0.5, rule="mean|median"),
}


# --- bounds (use the truth; not decoders) --------------------------------------------------------

def _genie(col):  # type: ignore[no-untyped-def]
    """genie-u of ``benchmarks/oracle_bound.py``: each share's SE with every other share known
    (the non-candidate mass unknown), one fresh ``z ~ N(share / SE, 1)`` per candidate and the
    posterior median under the true prior.  A lower bound on any decoder's mean TV."""
    from oracle_bound import genie_standard_errors

    share = col.true_share
    se = genie_standard_errors(col.aggregate, col.candidate_map, unexplained_unknown=True)
    rng = np.random.default_rng([col.seed, 7])
    atoms, counts = np.unique(share, return_counts=True)
    z = share / se + rng.standard_normal(len(share))
    loglik = -0.5 * (z[:, None] - atoms[None, :] / se[:, None]) ** 2 + np.log(counts / counts.sum())
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    cdf = np.cumsum(post, axis=1) / post.sum(axis=1, keepdims=True)
    median = atoms[np.argmax(cdf >= 0.5, axis=1)]
    return median, np.zeros(len(share), dtype=bool)


def _oracle_prior(col):  # type: ignore[no-untyped-def]
    """The working model's z-scores with the *true* prior (posterior median): what prior
    estimation costs."""
    w = working_statistics(col.aggregate, col.candidate_map)
    finite = np.isfinite(w.se) & (w.se > 0)
    mu = col.true_share[finite] / w.se[finite]
    atoms, counts = np.unique(np.round(mu, 2), return_counts=True)
    post = posterior(w.z[finite], atoms, counts / counts.sum())
    out = np.zeros(len(w.se))
    out[finite] = posterior_median(post, atoms) * w.se[finite]
    return out, w.detected


RESEARCH_MODES["bound:genie-u"] = _genie
RESEARCH_MODES["bound:oracle-prior"] = _oracle_prior


# --- variational empirical Bayes regression (mr.ash-style) ---------------------------------------

@dataclass(frozen=True)
class VebFit:
    """Result of :func:`veb`, per candidate (input order)."""

    mean: Array          # posterior mean share
    median: Array        # posterior median share
    lfdr: Array          # posterior probability of share 0
    b: Array             # final one-at-a-time statistic (others at their posterior means)
    s: Array             # its standard error
    unexplained: float
    grid: Array
    prior: Array
    sweeps: int
    dispersion: float
    z_cal: Array | None = None  # Phi^-1(1 - p), p from the random-string null against the final residual


def veb(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap, *, grid_low: float = 0.5, n_grid: int = 60,
        max_sweeps: int = 300, tol: float = 1e-4, init: Array | None = None, fix_dispersion: bool = False,
        fixed_unexplained: float | None = None, working_z: float | None = None) -> VebFit:
    """Empirical-Bayes regression with a fitted non-negative prior on every candidate's share.

    Model: whitened ``b = A beta + c u + e``, ``e ~ N(0, phi I)``; ``beta_j ~ G`` i.i.d., ``G``
    a discrete prior on ``{0} U s0 * geomspace(grid_low, top)`` (``s0`` the median one-at-a-time
    SE) fitted by maximum (variational) likelihood; ``u >= 0`` the unexplained mass, free.
    Coordinate ascent on the fully factorized variational posterior (Carbonetto & Stephens
    2012; Kim, Wang, Carbonetto & Stephens 2022, "mr.ash"): for each candidate the
    statistic ``b_j = a_j' r_j / ||a_j||^2`` against the residual with the *other* candidates at
    their posterior means, ``b_j ~ N(beta_j, phi / ||a_j||^2)``, gives its posterior on the grid;
    ``G``'s weights are then the average posterior (an EM step).
    """
    d = _design(aggregate, cmap)
    a, bvec, c, weight, k, h = d.a, d.b, d.c, d.weight, d.k, d.h
    rep, uniq, s_all = d.rep, d.uniq, d.s_all
    n_rows, s_u = a.shape  # type: ignore[attr-defined]
    norms2 = est.column_sq_norms(a)
    indptr, indices, data = a.indptr, a.indices, a.data
    beta = np.zeros(s_u) if init is None else np.asarray(init, dtype=np.float64)[uniq].copy()
    r = bvec - a @ beta
    u = max(float(c @ r) / float(c @ c), 0.0) if fixed_unexplained is None else fixed_unexplained
    r -= c * u
    phi = 1.0
    s_j = np.sqrt(phi / norms2)
    s0 = float(np.median(s_j))
    bstat = beta + (a.T @ r) / norms2
    top = max(float(np.max(bstat / s_j)), 2 * grid_low) + 1.0
    grid = np.concatenate([[0.0], s0 * np.geomspace(grid_low, top, n_grid)])
    # Start G from the NPMLE of the initial one-at-a-time z-scores.
    _, w = fit_prior(bstat / s_j, grid_low=grid_low, n_grid=n_grid)
    w = np.maximum(w, 1e-12)
    w /= w.sum()
    lfdr = np.zeros(s_u)
    sweeps = 0
    post_all = np.zeros((s_u, len(grid)))
    active = np.arange(s_u)
    idle_cache: list = [np.zeros(0, dtype=np.int64), None]
    # Working set: with many candidates (screened lists), only those whose starting one-at-a-time
    # z exceeds ``working_z`` (or with a positive starting share) are ever moved; the others stay
    # at 0, and their posteriors (for the prior's weights) are refreshed at once each sweep.
    movable = np.ones(s_u, dtype=bool)
    if working_z is not None and s_u > SCREEN_RATIO * n_rows:
        movable = (bstat / s_j > working_z) | (beta > 0)
    for sweeps in range(1, max_sweeps + 1):
        max_change = 0.0
        logw = np.log(w)
        # Active set: candidates all but surely absent (posterior mass at 0 above 0.995) are
        # revisited every 10th sweep only; their posterior rows are kept from their last visit.
        full = sweeps % 10 == 1 or not ACTIVE_SET
        active = np.flatnonzero(movable) if full else np.flatnonzero(movable & (lfdr < 0.995))
        for j in active.tolist():
            lo, hi = indptr[j], indptr[j + 1]
            rows, vals = indices[lo:hi], data[lo:hi]
            old = beta[j]
            bj = old + float(vals @ r[rows]) / norms2[j]
            ll = logw - 0.5 * ((bj - grid) / s_j[j]) ** 2
            p = np.exp(ll - ll.max())
            p /= p.sum()
            new = float(p @ grid)
            post_all[j] = p
            lfdr[j] = p[0]
            if new != old:
                r[rows] -= vals * (new - old)
                beta[j] = new
                max_change = max(max_change, abs(new - old) / s_j[j])
        if fixed_unexplained is None:
            r += c * u
            u = max(float(c @ r) / float(c @ c), 0.0)
            r -= c * u
        if not full or not movable.all():
            # The skipped candidates' posteriors, refreshed at once from the current residual
            # (their means are not moved until the next full sweep).
            idle = np.setdiff1d(np.arange(s_u), active)
            if len(idle):
                if not np.array_equal(idle, idle_cache[0]):
                    idle_cache[:] = [idle, a[:, idle].T.tocsr()]
                b_idle = beta[idle] + (idle_cache[1] @ r) / norms2[idle]
                ll_i = logw[None, :] - 0.5 * ((b_idle[:, None] - grid[None, :]) / s_j[idle, None]) ** 2
                p_i = np.exp(ll_i - ll_i.max(axis=1, keepdims=True))
                post_all[idle] = p_i / p_i.sum(axis=1, keepdims=True)
        w = np.maximum(post_all.mean(axis=0), 1e-300)
        if not fix_dispersion:
            phi = max(1.0, float(r @ r) / max(n_rows - 1, 1))
            s_j = np.sqrt(phi / norms2)
        if full and max_change < tol and sweeps > 10:
            break
    # Final summaries from the last statistics.
    bfin = beta + (a.T @ r) / norms2
    # Calibration: candidate j's statistic on the score scale, a_j' r_(-j) = ||a_j||^2 b_j, against
    # the law of a random string's score a_v' r (rappor's random-string null; r rescaled as the
    # decoder does, by sqrt(n / dof) with the candidates given a share counted as fitted).
    dof = max(n_rows - int(np.count_nonzero(beta > 1e-12 * s0)), 1)
    null = est.random_string_null(weight * r * math.sqrt(n_rows / dof), k, h, np.random.default_rng(0))
    z_cal_u = stats.norm.isf(np.clip(null.sf(norms2 * bfin), 1e-300, 1.0))
    ll = np.log(w)[None, :] - 0.5 * ((bfin[:, None] - grid[None, :]) / s_j[:, None]) ** 2
    post = np.exp(ll - ll.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    median = posterior_median(post, grid)

    def spread(values: Array, fill: float) -> Array:
        return _spread(values, rep, uniq, s_all, fill)

    return VebFit(mean=spread(beta, 0.0), median=spread(median, 0.0), lfdr=spread(post[:, 0], 1.0),
                  b=spread(bfin, 0.0), s=spread(s_j, math.nan), unexplained=u, grid=grid, prior=w, sweeps=sweeps,
                  dispersion=phi, z_cal=spread(z_cal_u, 0.0))


def veb_mode(rule: str = "mean|median", fix_u: bool | float = False, **kwargs: object):  # type: ignore[no-untyped-def]
    """``fix_u``: False (u free, fitted), True (the decoder's unexplained mass), or a number
    ``q``: that estimate less ``q`` standard errors, floored at 0 (a lower confidence bound)."""
    def run(col):  # type: ignore[no-untyped-def]
        res = rappor.Decoder(shares="detected").decode(col.aggregate, col.candidate_map)
        fixed = None
        if fix_u is True:
            fixed = _diag(res, "unexplained_mass")
        elif fix_u is not False:
            fixed = max(_diag(res, "unexplained_mass_unclipped") - float(fix_u) * _diag(res, "unexplained_std_error"), 0.0)
        fit = veb(col.aggregate, col.candidate_map, init=np.nan_to_num(res.proportion), fixed_unexplained=fixed,
                  **kwargs)  # type: ignore[arg-type]
        shares = {"mean": fit.mean, "median": fit.median,
                  "mean|median": np.where(fit.median > 0, fit.mean, 0.0)}[rule]
        return shares, np.asarray(res.detected, dtype=bool)
    return run


RESEARCH_MODES["veb-.5"] = veb_mode(grid_low=0.5)
RESEARCH_MODES["veb-.5-u"] = veb_mode(grid_low=0.5, fix_u=True)
RESEARCH_MODES["veb-.5-u2"] = veb_mode(grid_low=0.5, fix_u=2.0)
RESEARCH_MODES["veb-.5-u2-mean"] = veb_mode(rule="mean", grid_low=0.5, fix_u=2.0)
RESEARCH_MODES["veb-.5-mean"] = veb_mode(rule="mean", grid_low=0.5)
RESEARCH_MODES["veb-.1"] = veb_mode(grid_low=0.1)


# --- bagged prior: average the shares over bootstrap refits of the NPMLE -------------------------

def bagged_shares(z: Array, se: Array, wald_z: Array, *, grid_low: float = 0.5, n_boot: int = 30,
                  rng: int = 0, clear_z: float = CLEAR_Z, agg: str = "majority") -> Array:
    """Posterior mean where the posterior median is positive, bagged over ``n_boot`` priors.

    Each prior is the NPMLE of a bootstrap resample of the z-scores (candidates drawn with
    replacement; the first is the sample itself).  Where the data cannot tell "many nulls and
    a few effects near 1" from "few nulls and many effects near 0.5" (issue 4, high privacy:
    the fitted mass at 0 ranges 0.1-0.6 from seed to seed), one fit reports 30 strings and
    another 200.  ``agg``: ``"mean"`` averages the per-prior shares (ambiguous strings get a
    fraction); ``"majority"`` (default) does the same but gives 0 to a candidate that fewer
    than half of the priors report (measured, 6 seeds: decoys given a share in mixed-small
    74.5 -> 5.7 per decode, TV 0.198 -> 0.188; all-real lists +0.003); ``"median"`` takes
    the median over the priors.
    """
    finite = np.isfinite(se) & (se > 0)
    zf = np.minimum(z[finite], clear_z + 4.0)
    gen = np.random.default_rng(rng)
    vals = np.zeros((n_boot, int(finite.sum())))
    for i in range(n_boot):
        sample = zf if i == 0 else zf[gen.integers(0, len(zf), len(zf))]
        grid, prior = fit_prior(sample, grid_low=grid_low, n_iter=500)
        post = posterior(zf, grid, prior)
        med = posterior_median(post, grid)
        vals[i] = np.where(med > 0, post @ grid, 0.0)
    if agg == "mean":
        mu = vals.mean(axis=0)
    elif agg == "median":
        mu = np.median(vals, axis=0)
    else:
        mu = np.where((vals > 0).mean(axis=0) >= 0.5, vals.mean(axis=0), 0.0)
    t = np.clip((wald_z[finite] - clear_z) / 2.0, 0.0, 1.0)
    mu = (1.0 - t) * mu + t * wald_z[finite]
    out = np.zeros(len(se))
    out[finite] = mu * se[finite]
    return out


_VEB_CACHE: dict[tuple[str, int], tuple[VebFit, object]] = {}

#: How the unexplained mass is fixed for the empirical-Bayes regression: "ramp" (default) or
#: "lower" (the 2-SE lower confidence bound; measured: at 1 M reports with only decoys it left
#: 0.03 of the mass -- many SEs of a candidate -- in the residual, and every decoy got a share).
U_RULE = "ramp"


def fixed_unexplained(res: rappor.DecodeResult, rule: str | None = None) -> float:
    """The unexplained mass the shares are fitted with.

    ``"ramp"``: ``u_hat`` clipped to [0, 1], weighted by ``clip((z_u - 1) / 2, 0, 1)`` with
    ``z_u = u_hat / SE``: 0 unless the data show mass outside the list (z_u <= 1), all of it
    when they clearly do (z_u >= 3), and a ramp between (no jump from seed to seed).
    ``"lower"``: ``max(u_hat - 2 SE, 0)``.
    """
    u = _diag(res, "unexplained_mass_unclipped")
    se = _diag(res, "unexplained_std_error")
    if (rule or U_RULE) == "lower":
        return max(u - 2.0 * se, 0.0)
    if not (math.isfinite(u) and math.isfinite(se) and se > 0):
        return min(max(u, 0.0), 1.0) if math.isfinite(u) else 0.0
    return min(max(u, 0.0), 1.0) * min(max((u / se - 1.0) / 2.0, 0.0), 1.0)


def _veb_for(col, working_z: float | None):  # type: ignore[no-untyped-def]
    """The default decode and the empirical-Bayes regression of a collection (cached per process)."""
    key = (col.scenario.name, col.seed, working_z)
    if key not in _VEB_CACHE:
        res = rappor.Decoder(shares="detected").decode(col.aggregate, col.candidate_map)
        fit = veb(col.aggregate, col.candidate_map, init=np.nan_to_num(res.proportion),
                  fixed_unexplained=fixed_unexplained(res), working_z=working_z)
        _VEB_CACHE.clear()  # one collection at a time
        _VEB_CACHE[key] = (fit, res)
    return _VEB_CACHE[key]


def lfdr_detections(z: Array, level: float = 0.05, grid_low: float = 0.5) -> npt.NDArray[np.bool_]:
    """The largest set whose mean local fdr (NPMLE prior of ``z``) is at most ``level`` (Efron)."""
    grid, prior = fit_prior(np.minimum(z, CLEAR_Z + 4.0), grid_low=grid_low)
    lfdr = posterior(np.minimum(z, CLEAR_Z + 4.0), grid, prior)[:, 0]
    order = np.argsort(lfdr, kind="stable")
    q = np.cumsum(lfdr[order]) / np.arange(1, len(z) + 1)
    k = int(np.flatnonzero(q <= level).max() + 1) if np.any(q <= level) else 0
    out = np.zeros(len(z), dtype=bool)
    out[order[:k]] = True
    return out


def bagged_mode(source: str = "working", working_z: float | None = 1.0, detect: str = "default",
                calibrated: bool = False, **kwargs: object):  # type: ignore[no-untyped-def]
    def run(col):  # type: ignore[no-untyped-def]
        if source == "working":
            w = working_statistics(col.aggregate, col.candidate_map)
            return bagged_shares(eb_z(w, "blend"), w.se, w.z, **kwargs), w.detected  # type: ignore[arg-type]
        fit, res = _veb_for(col, working_z)
        z = np.nan_to_num(fit.b / fit.s)
        wald = z
        if calibrated and fit.z_cal is not None:
            # Calibrated where presence is decided, Wald scale for clear strings (as eb_z "blend").
            z = np.where(np.maximum(z, fit.z_cal) < 8.0, fit.z_cal, z)
        detected = np.asarray(res.detected, dtype=bool)
        if detect == "lfdr":
            detected = lfdr_detections(z) & np.isfinite(fit.s)
        shares = bagged_shares(z, fit.s, wald, **kwargs)  # type: ignore[arg-type]
        return _cap(shares, 1.0 - fit.unexplained), detected
    return run


def _cap(shares: Array, total: float) -> Array:
    """Shares scaled down in proportion when they add up to more than ``total`` (a safeguard:
    the fit does not constrain the sum; measured, it never binds in the classes once the
    unexplained mass is fixed by the ramp)."""
    s = float(np.sum(shares))
    return shares * (max(total, 0.0) / s) if s > max(total, 0.0) > 0.0 or (s > 0 and total <= 0) else shares


RESEARCH_MODES["bag-working"] = bagged_mode("working")
RESEARCH_MODES["bag-veb"] = bagged_mode("veb")
RESEARCH_MODES["bag-veb-cal"] = bagged_mode("veb", calibrated=True)
RESEARCH_MODES["bag-veb-mean"] = bagged_mode("veb", agg="mean")
RESEARCH_MODES["bag-veb+lfdr"] = bagged_mode("veb", detect="lfdr")
