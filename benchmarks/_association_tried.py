"""Data-driven estimators of string x string tables tried against the default (for ``association_oracle.py``).

All of them work in the quadratic model of the log-likelihood around its signed maximum ``x``
(``AssociationResult.signed_maximum``; its covariance ``V``, ``signed_covariance``): ``x ~ N(pi,
V)``, precision ``Q = V^+ + rho 1 1' / n`` (``V`` is singular along the sum; ``rho`` the mean of
``V^+``'s diagonal gives the sum a precision of the cells' order, and every estimate is normalized
at the end).  The quadratic model's constrained maximum reproduces the default's table to a few
1e-4 of TV (``quad`` against ``default``).  For three variables the string pair's shares are
estimated (``x`` and ``V`` summed over the boolean) and the default's splits of the boolean kept.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from rappor.analysis.association import total_variation

#: Grid of a conditional: 0 and 80 points from 1e-3 to 1 (geometric); of a cell's share: from 1e-5.
GRID = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, 80)])
CELL_GRID = np.concatenate([[0.0], np.geomspace(1e-5, 1.0, 100)])
#: Gibbs sweeps a chain (the first BURN dropped) and chains averaged: the chains mix slowly (one chain of
#: 150 sweeps: TV 0.158-0.177 over four chains on one collection), four of 300 keep that spread to about 0.005.
SWEEPS, BURN, CHAINS = 300, 60, 4
#: A cell is in the true support when its realized share is above this.
SUPPORT = 1e-4


def pair_view(res) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(x, V, table, split)``: the string pair's signed maximum, covariance, default table, the boolean's splits."""
    shape = res.proportion.shape
    x, cov = res.signed_maximum.reshape(-1), res.signed_covariance
    if len(shape) == 2:
        return x, cov, res.proportion, None
    summed = np.kron(np.eye(shape[0] * shape[1]), np.ones((1, shape[2])))
    pair = res.proportion.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        split = np.where(pair[..., None] > 0, res.proportion / pair[..., None], 0.5)
    return summed @ x, summed @ cov @ summed.T, pair, split


def precision(cov: np.ndarray) -> np.ndarray:
    q = np.linalg.pinv(cov)
    return q + np.mean(np.diag(q)) * np.ones_like(q) / q.shape[0]


def quadratic_fit(x: np.ndarray, q: np.ndarray, support: np.ndarray) -> np.ndarray:
    """``argmin (p - x)' Q (p - x)`` over ``p >= 0``, ``p = 0`` off ``support``, ``sum p = 1`` (NNLS; normalized)."""
    n = x.size
    qp = q + 1e3 * np.mean(np.diag(q)) * np.ones((n, n))  # pins sum p to sum x = 1
    idx = np.flatnonzero(support)
    qs = qp[np.ix_(idx, idx)]
    chol = np.linalg.cholesky(qs + 1e-12 * np.trace(qs) / idx.size * np.eye(idx.size))
    y, _ = optimize.nnls(chol.T, np.linalg.solve(chol, qp[idx, :] @ x), maxiter=50 * idx.size)
    out = np.zeros(n)
    out[idx] = y
    return out / out.sum()


def npmle(x: np.ndarray, s: np.ndarray, grid: np.ndarray, iters: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Kiefer-Wolfowitz NPMLE on ``grid`` of the prior of ``mu`` given ``x_i ~ N(mu_i, s_i^2)`` (EM)."""
    lik = np.exp(-0.5 * ((x[:, None] - grid[None, :]) / s[:, None]) ** 2) / s[:, None]
    w = np.full(grid.size, 1.0 / grid.size)
    for _ in range(iters):
        w = w * (lik / (lik @ w)[:, None]).mean(axis=0)
    return w, lik


def gibbs_mean(x: np.ndarray, q: np.ndarray, grid: np.ndarray, w: np.ndarray, scale: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """Posterior mean of ``p = scale * c`` (normalized) given ``x ~ N(p, Q^-1)`` and ``c_i`` iid ``w`` on ``grid``.

    Single-site Gibbs sampling (``c_i`` given the rest is ``w`` times a normal on the grid), CHAINS chains.
    """
    return np.mean([_gibbs_chain(x, q, grid, w, scale, rng) for _ in range(CHAINS)], axis=0)


def gibbs_zero_and_mean(x: np.ndarray, q: np.ndarray, grid: np.ndarray, w: np.ndarray, scale: np.ndarray,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gibbs_mean` and each cell's posterior probability of being 0, over CHAINS chains."""
    chains = [_gibbs_chain(x, q, grid, w, scale, rng, zeros=True) for _ in range(CHAINS)]
    return np.mean([z for z, _ in chains], axis=0), np.mean([m for _, m in chains], axis=0)


def _gibbs_chain(x: np.ndarray, q: np.ndarray, grid: np.ndarray, w: np.ndarray, scale: np.ndarray,
                 rng: np.random.Generator, zeros: bool = False):
    xc = x / scale
    qc = q * np.outer(scale, scale)
    c = np.clip(xc, 0.0, None)
    resid = qc @ (c - xc)
    logw = np.log(np.maximum(w, 1e-300))
    total = np.zeros(x.size)
    at_zero = np.zeros(x.size)
    for sweep in range(SWEEPS):
        u = rng.random(x.size)
        for i in range(x.size):
            mean = c[i] - resid[i] / qc[i, i]
            lp = logw - 0.5 * qc[i, i] * (grid - mean) ** 2
            cum = np.cumsum(np.exp(lp - lp.max()))
            new = grid[min(int(np.searchsorted(cum, u[i] * cum[-1])), grid.size - 1)]
            if new != c[i]:
                resid += qc[:, i] * (new - c[i])
                c[i] = new
        if sweep >= BURN:
            p = c * scale
            total += p / p.sum()
            at_zero += c == 0
    if zeros:
        return at_zero / (SWEEPS - BURN), total / total.sum()
    return total / total.sum()


def backward_elimination(x: np.ndarray, q: np.ndarray, penalty: float) -> np.ndarray:
    """Drop the cheapest cell while forcing it to 0 costs less than ``penalty`` log-likelihood units."""
    n = x.size
    qp = q + 1e3 * np.mean(np.diag(q)) * np.ones((n, n))
    keep = np.ones(n, dtype=bool)
    p = quadratic_fit(x, q, keep)
    keep &= p > 0
    while keep.sum() > 1:
        idx = np.flatnonzero(keep)
        cost = 0.5 * p[idx] ** 2 / np.diag(np.linalg.inv(qp[np.ix_(idx, idx)]))
        j = int(np.argmin(cost))
        if cost[j] >= penalty:
            break
        keep[idx[j]] = False
        p = quadratic_fit(x, q, keep)
        keep &= p > 0
    return p


NAMES = ("quad", "quad_support", "eb_cells", "eb_cond", "eb_cond_oracle", "aic", "eb_spike", "relaxed")


def tried_estimators(res, truth: np.ndarray, names: tuple[str, ...] = NAMES) -> dict:
    """TV of each tried estimator on the default's result ``res`` against ``truth`` (over ``res``'s cells).

    ``eb_spike``: ``eb_cond`` with the prior's grid ``{0}`` and from the finest standard error of any
    conditional up (values the data cannot tell from 0 are 0: a spike and a slab); ``relaxed``: the
    quadratic model's maximum on the cells whose posterior probability of 0 under that prior is below 1/2.
    """
    if res.signed_maximum is None or sum(len(c) > 2 for c in res.categories) < 2:
        return {}
    x, cov, table, split = pair_view(res)
    pair_truth = truth if split is None else truth.sum(axis=2)
    t = pair_truth.reshape(-1)
    q = precision(cov)
    gen = np.random.default_rng(0)

    def score(p: np.ndarray) -> float:
        p = p.reshape(table.shape)
        return total_variation(p if split is None else p[..., None] * split, truth)

    out = {}
    if "quad" in names:
        out["quad"] = score(quadratic_fit(x, q, np.ones(x.size, dtype=bool)))
    if "quad_support" in names:
        out["quad_support"] = score(quadratic_fit(x, q, t > SUPPORT))
    if "eb_cells" in names:
        w, _ = npmle(x, np.sqrt(np.diag(cov)), CELL_GRID)
        out["eb_cells"] = score(gibbs_mean(x, q, CELL_GRID, w, np.ones(x.size), gen))
    rows = np.maximum(np.repeat(table.sum(axis=1), table.shape[1]), 1e-6)
    s = np.sqrt(np.diag(cov)) / rows
    if "eb_cond" in names:
        w, _ = npmle(x / rows, s, GRID)
        out["eb_cond"] = score(gibbs_mean(x, q, GRID, w, rows, gen))
    if "eb_cond_oracle" in names:
        cond = t / np.maximum(np.repeat(pair_truth.sum(axis=1), table.shape[1]), 1e-12)
        w_true = np.bincount(np.abs(cond[:, None] - GRID[None, :]).argmin(axis=1), minlength=GRID.size) / cond.size
        out["eb_cond_oracle"] = score(gibbs_mean(x, q, GRID, w_true, rows, gen))
    if "aic" in names:
        out["aic"] = score(backward_elimination(x, q, 1.0))
    if "eb_spike" in names or "relaxed" in names:
        grid = np.concatenate([[0.0], np.geomspace(float(s.min()), 1.0, 60)])
        w, _ = npmle(x / rows, s, grid, iters=2000)
        zero, mean = gibbs_zero_and_mean(x, q, grid, w, rows, gen)
        out["eb_spike"] = score(mean)
        out["relaxed"] = score(quadratic_fit(x, q, zero < 0.5))
        out["relaxed_cells"] = int((zero < 0.5).sum())
        out["relaxed_in_support"] = int(((zero < 0.5) & (t > SUPPORT)).sum())
        out["support_cells"] = int((t > SUPPORT).sum())
    return out
