"""Profile-likelihood intervals for the cells of the joint table (private).

The interval of cell ``c`` at level ``1 - alpha`` is the set of shares ``s`` whose profile
log-likelihood ``l_p(s) = max {l(pi) : pi on the simplex, pi[c] = s}`` is within
``chi2_1(1 - alpha) / 2`` of the maximum (the likelihood-ratio test inverted; e.g. Venzon and
Moolgavkar 1988, "A method for computing profile-likelihood-based confidence intervals",
Appl. Statist. 37(1)).  Unlike ``estimate ± z * std_error`` it follows the likelihood's
shape: in the weakly identified string x string tables the large cells' estimates are
biased low (their mass leaks into the many cells near 0) and their likelihood is skewed
upwards, which the profile sees and a symmetric interval cannot (``docs/association.md``).

Each ``l_p(s)`` is one mixture fit: pinning ``pi[c] = s`` on the cone of the mix-SQP
(``x[c] = s / (1 - s) * sum_{j != c} x[j]``) leaves a mixture problem over the other cells
with likelihood rows ``L_ij + s / (1 - s) L_ic`` (:class:`_PinnedCell`), fitted by
:func:`~rappor.analysis.association._mixture.fit_mixture`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ...exceptions import ConvergenceWarning
from ._mixture import ProductLikelihood, fit_mixture

if TYPE_CHECKING:
    from scipy import optimize, stats
else:  # imported on first use: keeps `import rappor` light
    optimize = lazy_module("scipy.optimize")
    stats = lazy_module("scipy.stats")

__all__ = ["profile_intervals", "profile_log_likelihood"]

Array = npt.NDArray[np.float64]

#: Certified gap of each profile fit: the profile log-likelihood is within this of its
#: maximum, so the likelihood-ratio statistic is within twice it (0.02 against 3.84 at 95%).
PROFILE_TOLERANCE = 0.01


class _PinnedCell(ProductLikelihood):
    """The likelihood of :class:`ProductLikelihood` ``lik`` with cell ``cell`` pinned at share ``share``.

    Variables ``u`` are the other cells; the full table is ``x = A u`` with ``x[cell] =
    share / (1 - share) * sum(u)``, so ``x / sum(x)`` has ``share`` in ``cell`` whatever
    ``u`` (a cone: the mix-SQP's scaling argument still puts the optimum at ``sum(u) = 1``).
    """

    def __init__(self, lik: ProductLikelihood, cell: int, share: float) -> None:  # noqa: D107 - no super().__init__
        self.base = lik
        self.cell = cell
        self.ratio = share / (1.0 - share)
        self.others = np.delete(np.arange(lik.size), cell)
        self.weights = lik.weights
        self.size = lik.size - 1
        self.shape = (self.size,)
        self.rows = lik.rows
        self.total = lik.total
        self._pattern_ids = None
        self._patterns = None

    def full(self, u: Array) -> Array:
        """``A u``: the full table (not normalized)."""
        x = np.empty(self.base.size)
        x[self.others] = u
        x[self.cell] = self.ratio * float(u.sum())
        return x

    def forward(self, table: Array) -> Array:
        return self.base.forward(self.full(table))

    def forward_gradient(self, table: Array, base: Array | None = None) -> tuple[Array, Array]:
        d, g = self.base.forward_gradient(self.full(table), base)
        out: Array = g[self.others] + self.ratio * g[self.cell]
        return d, out

    def gradient(self, v: Array) -> Array:
        g = self.base.gradient(v)
        out: Array = g[self.others] + self.ratio * g[self.cell]
        return out

    def hessian(self, v: Array, rows: npt.NDArray[np.intp] | None = None, scale: float = 1.0) -> Array:
        h = self.base.hessian(v, rows, scale)
        inner = h[np.ix_(self.others, self.others)]
        cross = h[self.others, self.cell]
        out: Array = (inner + self.ratio * (cross[:, None] + cross[None, :])
                      + self.ratio**2 * h[self.cell, self.cell])
        return out

    def hessian_rows(self) -> int:
        return self.base.hessian_rows()


def profile_log_likelihood(lik: ProductLikelihood, table: Array, cell: int, share: float, *,
                           rng: np.random.Generator | None = None) -> float:
    """``max {l(pi) : pi[cell] = share}``, certified within :data:`PROFILE_TOLERANCE`.

    Started from ``table`` with ``cell`` removed and the rest rescaled (5% of the uniform
    table mixed in).
    """
    flat = np.asarray(table, dtype=np.float64).reshape(-1)
    if share >= 1.0:
        x = np.zeros(lik.size)
        x[cell] = 1.0
        return lik.log_likelihood(lik.forward(x))
    pinned = _PinnedCell(lik, cell, share)
    rest = np.delete(flat, cell)
    rest = rest / rest.sum() if rest.sum() > 0 else np.full(rest.size, 1.0 / rest.size)
    start = 0.95 * rest + 0.05 / rest.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = fit_mixture(pinned, tolerance=PROFILE_TOLERANCE, max_iterations=100, start=start, rng=rng)
    x = pinned.full(fit.table)
    return lik.log_likelihood(lik.forward(x / x.sum()))


def profile_intervals(lik: ProductLikelihood, table: Array, std_error: Array, level: float, *,
                      cells: Sequence[int] | None = None, rng: np.random.Generator | None = None,
                      ) -> tuple[Array, Array]:
    """Profile-likelihood intervals of every cell at ``level`` (flat, C order).

    Each end is the root of ``2 (l_max - l_p(s)) = chi2_1(level)`` (Brent's method, to 2% of
    the cell's standard error), bracketed by stepping out from the estimate in multiples of
    its Wald half-width; the lower end is 0 when ``l_p(0)`` is within the threshold.
    About 10 profile fits per cell.

    Parameters
    ----------
    lik : ProductLikelihood
    table : ndarray
        The maximum-likelihood table (flat).
    std_error : ndarray
        Its standard errors (only the search's step sizes; ``nan``/``inf`` allowed).
    level : float
    cells : sequence of int, optional
        Only these cells (flat indices); the others get ``[0, 1]``.

    Returns
    -------
    low, high : ndarray
    """
    flat = np.asarray(table, dtype=np.float64).reshape(-1)
    best = lik.log_likelihood(lik.forward(flat))
    critical = float(stats.chi2.ppf(level, 1))
    low = np.zeros(flat.size)
    high = np.ones(flat.size)

    seen: dict[tuple[int, float], float] = {}   # Brent's method re-evaluates the bracket's ends

    def excess(cell: int, share: float) -> float:
        key = (cell, float(share))
        if key not in seen:
            seen[key] = 2.0 * (best - profile_log_likelihood(lik, flat, cell, share, rng=rng)) - critical
        return seen[key]

    for cell in range(flat.size) if cells is None else cells:
        est = float(flat[cell])
        se = float(std_error.reshape(-1)[cell])
        step = 1.96 * se if math.isfinite(se) and se > 0 else 0.01
        step = max(step, 1e-4)
        xtol = max(0.02 * step / 1.96, 1e-6)
        # Upper end: step out until the likelihood ratio exceeds the threshold.
        lo_share, hi_share = est, min(est + step, 1.0)
        while hi_share < 1.0 and excess(cell, hi_share) <= 0.0:
            lo_share, hi_share = hi_share, min(hi_share + 2.0 * (hi_share - est), 1.0)
        if hi_share < 1.0 or excess(cell, 1.0) > 0.0:
            high[cell] = optimize.brentq(lambda s: excess(cell, s), lo_share, hi_share, xtol=xtol)
        # Lower end.
        if est > 0.0 and excess(cell, 0.0) > 0.0:
            lo_share, hi_share = max(est - step, 0.0), est
            while lo_share > 0.0 and excess(cell, lo_share) <= 0.0:
                lo_share, hi_share = max(lo_share - 2.0 * (est - lo_share), 0.0), lo_share
            low[cell] = optimize.brentq(lambda s: excess(cell, s), lo_share, hi_share, xtol=xtol)
    return low, high
