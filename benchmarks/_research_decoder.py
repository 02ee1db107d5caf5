"""Research prototype for issue 14: a default decoder that gives two products (private).

Not part of the package: phase 1 of issue 14 prototypes the new default here, on top of the
current decoder's internals (``rappor._estimation``), and measures it with
``python benchmarks/accuracy.py --research``.  The implementation proper goes into
``rappor/decoder/`` in phase 2.

Two products, as issue 14 asks:

* ``detected``: the strings we can vouch for -- the current default's test (random-string
  null, Benjamini-Hochberg), whose false detections stay controlled;
* ``proportion`` for *every* candidate: an empirical-Bayes estimate of its share, made for the
  total variation distance of the whole distribution (what a google/rappor-style reader of
  results.csv computes from the rows).

Statistics (:func:`working_statistics`).  The empirical-Bayes model needs, for every
candidate, a statistic ``z_j ~ N(share_j / SE_j, 1)``.  The current decoder's z-scores are
not: they come from the *non-negative* fit, where a candidate at the bound has a score
``<= 0`` by the Karush-Kuhn-Tucker conditions, so real strings with small shares pile up below
0 (issue 4's 100 real strings: 29-54 negative z-scores, mean z 0.43-0.95 against a true mean
effect of 1.0).  Here the shares of a *working model* ``M`` (every candidate when there are at
most ``0.8`` x rows of them, as decode.R's rule; else the Lasso-screened and detected ones),
with the non-candidate column, are fitted *without* sign constraints: the Wald z of ``j in M``
is then exactly ``N(share_j / SE_j, 1)`` under the Gaussian approximation of the counts (its SE
is 2-4% above the constrained fit's).  A candidate outside ``M`` gets the score statistic of
adding it to ``M`` (the z it would have).

Prior (:func:`fit_prior`).  A Kiefer-Wolfowitz NPMLE of the effects ``mu = share / SE`` on
``{0} U geomspace(grid_low, max z + 1)``, fitted by EM (as ``rappor._estimation``).
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
from rappor import _estimation as est  # noqa: E402

Array = npt.NDArray[np.float64]

#: Screen (working model = Lasso-selected + detected) above this share of rows, as decode.R.
SCREEN_RATIO = 0.8


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
                       significance: float = 0.05, rng: int = 0) -> Working:
    """Unconstrained working-model statistics (see the module docstring)."""
    params = aggregate.params
    res = rappor.Decoder(significance_level=significance).decode(aggregate, cmap)
    k, h = params.num_bloombits, params.num_hashes
    deb = est.debias(aggregate.counts, params.p11, params.p01)
    x = est.select_rows(cmap.matrix, deb.rows)
    s = x.shape[1]
    rep, zero = est.column_groups(x)
    is_zero = np.zeros(s, dtype=bool)
    is_zero[zero] = True
    uniq = np.flatnonzero((rep == np.arange(s)) & ~is_zero)
    xu = x[:, uniq]
    n_rows, s_u = xu.shape
    weight = 1.0 / np.sqrt(deb.var)
    b = weight * deb.y
    hbar = k * (1.0 - (1.0 - 1.0 / k) ** h)
    background = weight * (hbar / k)
    a_full = est.weighted_design(xu, weight, background)
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

    pos = np.full(s, -1, dtype=np.int64)
    pos[uniq] = np.arange(s_u)
    idx = pos[rep]
    valid = idx >= 0

    def spread(values: npt.NDArray, fill: float) -> npt.NDArray:
        out = np.full(s, fill, dtype=values.dtype if values.dtype == bool else np.float64)
        out[valid] = values[idx[valid]]
        return out

    return Working(share=spread(share_u, math.nan), se=spread(se_u, math.nan), z=spread(z_u, 0.0),
                   z_cal=spread(z_cal_u, 0.0), in_model=spread(in_model_u, False).astype(bool),
                   unexplained=float(coef[-1]), unexplained_se=float(math.sqrt(gram_inv[-1, -1] * disp)),
                   dispersion=disp, detected=np.asarray(res.detected, dtype=bool),
                   ls_share=np.nan_to_num(res.proportion), screened=bool(screened))


# --- empirical Bayes -----------------------------------------------------------------------------

def fit_prior(z: Array, *, grid_low: float = 0.1, n_grid: int = 80, n_iter: int = 2000) -> tuple[Array, Array]:
    """NPMLE of the prior of ``mu`` given ``z ~ N(mu, 1)`` on ``{0} U geomspace(grid_low, max z + 1)``."""
    z = np.clip(z, -est.Z_CLIP, est.Z_CLIP)
    top = max(float(np.max(z)), 2 * grid_low) + 1.0
    grid = np.concatenate([[0.0], np.geomspace(grid_low, top, n_grid)])
    zb, counts = np.unique(np.round(z, 2), return_counts=True)
    loglik = -0.5 * (zb[:, None] - grid[None, :]) ** 2
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    w = np.full(len(grid), 1.0 / len(grid))
    frac = counts / counts.sum()
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
