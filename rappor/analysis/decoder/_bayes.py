"""Empirical Bayes on the calibrated z-scores (private): the local fdr.

This module owns the nonparametric prior of the candidates' effects (a Kiefer-Wolfowitz
NPMLE fitted by EM to the calibrated z-scores ``Phi^-1(1 - p)``) and what is read from
it: each candidate's local false discovery rate (:func:`local_fdr`, and the q-values of
``correction="lfdr"``: :func:`local_fdr_qvalues`).  (The posterior shares of the removed
``estimator="empirical-bayes"`` were read from the same prior: ``docs/decoder.md``,
"Empirical Bayes, removed".)
"""

from __future__ import annotations

import numpy as np

from ..._util import tails
from ._problem import Array
from ._shares import GRID_LOW, npmle_prior, row_scaled_likelihood


#: Smallest positive effect (in standard errors) of the NPMLE grid (:data:`._shares.GRID_LOW`):
#: smaller effects cannot be told from 0 and an atom there would only steal prior mass from the null.
LFDR_GRID_LOW = GRID_LOW

#: Positive points of the local fdr's NPMLE grid.
LFDR_GRID_SIZE = 60


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
    grid, w = npmle_prior(z, n_grid=LFDR_GRID_SIZE, n_iter=n_iter)
    return _posterior_lfdr(z, grid, w), grid, w


#: Largest |z| used by the empirical-Bayes fits (p-values are clipped to 1e-300: z <= 37).
Z_CLIP = 40.0


#: z-scores per block when posteriors are summarized (bounds the (block x grid) temporaries).
_POSTERIOR_BLOCK = 1 << 16


def _posterior_lfdr(z: Array, grid: Array, weights: Array) -> Array:
    """Posterior probability of ``mu = 0`` of each (clipped) z, a block of rows at a time
    (bounds the (block x grid) temporaries)."""
    lfdr = np.empty(len(z))
    for lo in range(0, len(z), _POSTERIOR_BLOCK):
        hi = min(lo + _POSTERIOR_BLOCK, len(z))
        lfdr[lo:hi] = _grid_posterior(z[lo:hi], grid, weights)[:, 0]
    return lfdr


def _grid_posterior(z: Array, grid: Array, weights: Array) -> Array:
    """Posterior probabilities of the grid points for each (clipped) z, rows summing to 1."""
    lik = row_scaled_likelihood(z, grid)
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
    lfdr, _, _ = local_fdr(tails.norm_isf(p))
    order = np.argsort(lfdr, kind="stable")
    q = np.cumsum(lfdr[order]) / np.arange(1, p.size + 1)
    q = np.minimum.accumulate(q[::-1])[::-1]
    out = np.empty(p.size)
    out[order] = np.minimum(q, 1.0)
    return out
