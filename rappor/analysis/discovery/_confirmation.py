"""The exact chance law of a value's confirming evidence: how high a value nobody holds can score.

A value found in slot ``f`` is *confirmed* by the later slots (other clients, other
hash seeds).  In each confirming slot ``s`` its evidence is the count-mean-sketch
estimate read off the *residual* debiased Bloom counts, once the strongest fragments
of the slot are fitted and subtracted (:meth:`SlotOracle.explain`), plus the value's
own fitted count if it is one of them::

    x_s(v) = w_s (sum_c mean_i u_c[J_ci(v)] + fitted_s(v)),
    u_cj = (t_cj - beta b_c) / (1 - beta),

with ``t_cj`` the residual debiased count of bit ``j`` in cohort ``c`` and ``b_c`` the
cohort's unexplained reports (:mod:`rappor.analysis.discovery`), ``J_ci(v)`` the value's
``h`` bits and ``w_s = n_s / sigma_s**2`` (``n_s`` reports, ``sigma_s**2`` the variance
below): inverse-variance weights of the slots' shares.  The statistic is ``S(v) =
sum_s x_s(v)`` over the slots after ``f``.

For a value nobody holds, the bits ``J_ci(v)`` are independent and uniform over the
``k`` bits of each cohort (different cohorts are different hash seeds; the split hash
of :mod:`rappor.analysis.discovery` keeps pairs of fragments apart with probability ``1 -
1/k``), *whatever the data and the fit* (both are made without its bits):
conditionally on the residual counts, ``S`` is a sum of independent draws, one per
(slot, cohort), from the cohorts' own ``k`` values.  (Fitted fragments have a trimmed
z-score at or above the slot's fit level, where 0.001 absent candidates are expected
(:func:`rappor.analysis.discovery._search._explain_cuts`); an absent one that is fitted is not
covered, and its rareness is what the fit level buys.)  Its law is their
convolution, computed here exactly up to a grid (linear interpolation on a step of
1/64 of the smallest slot's standard deviation, which keeps every mean), so the
p-value ``P(S_null >= S(v))`` holds however heavy the collisions are (a value landing
on a frequent value's bits gets its count: that is in the law) and however few the
reports (the counts are discrete and skewed at small ``n``).  For ``h > 1`` the ``h``
bits of a cohort are drawn with replacement (they are distinct hash functions, and
coincide with probability ``1/k``).

Values are dropped during the search when their evidence falls back; the p-value
is that of the statistic the value would have had if scored to the end, so the
Bonferroni bound over every value pooled (:func:`rappor.analysis.discovery.discover`) holds:
a dropped value can only lose rejections.

**Which tests count.**  Only pooled values get a p-value, and whether a value is pooled
depends on the slots up to the one that found it (its prefix's slots, the byte prior
learnt from them, provisional prefixes): other clients than its confirming slots', so the
selection leaves its confirming law unchanged and the Bonferroni count is the number
pooled, however many prefixes and tails the search scored to choose them.

**Two false values in one run.**  Two distinct values nobody holds land on independent
bits in every confirming slot, even when one begins the other or they share a prefix with
a frequent value (another head or another tail, each hashed with the cohort's seed; tested
in ``tests/analysis/discovery/test_discovery_confirmation.py``).  Given the counts, their
p-values are then independent, so with ``n`` values tested at the cutoff ``c``
``P(two or more false) <= (n c)**2 / 2``: ``alpha**2 / 2`` (0.00125 at 0.05) at the
default cutoff ``alpha / n``, against ``alpha`` for one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ._oracle import SlotOracle

__all__ = ["ConfirmationNull", "tilted_tail_probability"]

Array = npt.NDArray[np.float64]

#: Grid steps per standard deviation of the smallest slot's statistic.
_STEPS_PER_SD = 64
#: Most grid points of the whole law (64 MB of float64); the step grows past it.
_MAX_POINTS = 1 << 23


def _convolve(a: tuple[int, Array], b: tuple[int, Array]) -> tuple[int, Array]:
    """Law of the sum of two independent grid laws ``(offset, probabilities)``."""
    from scipy import signal

    p = signal.fftconvolve(a[1], b[1]) if min(a[1].size, b[1].size) > 64 else np.convolve(a[1], b[1])
    p = np.clip(p, 0.0, None)
    return a[0] + b[0], p / p.sum()


def _draw_law(values: Array, step: float, h: int) -> tuple[int, Array]:
    """Law of the mean of ``h`` uniform draws from ``values``, on the grid ``step * i``."""
    pos = values / (h * step)
    lo = np.floor(pos).astype(np.int64)
    frac = pos - lo
    offset = int(lo.min())
    size = int(lo.max()) - offset + 2
    p = (np.bincount(lo - offset, weights=1.0 - frac, minlength=size)
         + np.bincount(lo - offset + 1, weights=frac, minlength=size)) / values.size
    law = (offset, p)
    for _ in range(h - 1):
        law = _convolve(law, (offset, p))
    return law


class ConfirmationNull:
    """Per-slot terms of the confirming statistic and its exact chance law (module docstring)."""

    def __init__(self, num_hashes: int) -> None:
        self.h = num_hashes
        self.terms: dict[int, Array] = {}
        self.sd: dict[int, float] = {}

        self.weight: dict[int, float] = {}

    def add_slot(self, oracle: SlotOracle) -> None:
        """Record ``w_s u_cj`` of ``oracle``'s slot, after its fits are subtracted."""
        u = (oracle.t - oracle.beta * oracle.background[:, None]) / (1.0 - oracle.beta)
        var = float(u.var(axis=1).sum()) / self.h
        if not (var > 0.0 and math.isfinite(var)):
            return
        weight = oracle.n_reports / var
        self.terms[oracle.slot] = u * weight
        self.weight[oracle.slot] = weight
        self.sd[oracle.slot] = weight * math.sqrt(var)

    def statistic(self, slot: int, bits: npt.NDArray[np.integer], fitted: Array) -> Array:
        """``x_s`` of fragments given by their bits in ``slot``, shape ``(F, m, h)``, and their fitted
        counts (0 when not fitted); zeros if the slot is not recorded."""
        terms = self.terms.get(slot)
        if terms is None:
            return np.zeros(bits.shape[0])
        md, k = terms.shape
        flat = bits.astype(np.intp, copy=False) + (np.arange(md, dtype=np.intp) * k)[None, :, None]
        out: Array = np.take(terms, flat).mean(axis=2).sum(axis=1) + self.weight[slot] * fitted
        return out

    def pvalues(self, stats: Array, first_slot: npt.NDArray[np.integer]) -> Array:
        """``P(S_null >= stats[i])`` for the sum over the recorded slots after ``first_slot[i]``."""
        out = np.ones(stats.size)
        if not self.terms or stats.size == 0:
            return out
        slots = sorted(self.terms)
        step = min(self.sd.values()) / _STEPS_PER_SD
        span = sum(float(np.ptp(self.terms[s], axis=1).sum()) for s in slots) / step
        if span > _MAX_POINTS:
            step *= span / _MAX_POINTS
        laws: dict[int, tuple[int, Array]] = {}
        for s in slots:
            law = (0, np.ones(1))
            for row in self.terms[s]:
                law = _convolve(law, _draw_law(row, step, self.h))
            laws[s] = law
        # Suffix laws: the sum over the recorded slots after f, for every f that occurs.
        needed = sorted(set(first_slot.tolist()), reverse=True)
        suffix: tuple[int, Array] = (0, np.ones(1))
        remaining = sorted(slots, reverse=True)
        for f in needed:
            while remaining and remaining[0] > f:
                suffix = _convolve(suffix, laws[remaining.pop(0)])
            if not any(s > f for s in slots):
                continue  # no confirming slot: no evidence against chance (p = 1)
            offset, p = suffix
            tail = np.cumsum(p[::-1])[::-1]  # tail[i] = P(S >= (offset + i) step)
            sel = np.flatnonzero(first_slot == f)
            idx = np.ceil(stats[sel] / step - 1e-9).astype(np.int64) - offset
            inside = (idx >= 0) & (idx < p.size)
            res = np.where(idx < 0, 1.0, 0.0)
            res[inside] = tail[idx[inside]]
            out[sel] = np.minimum(res, 1.0)
        return out


def tilted_tail_probability(x: Array, s: float, rng: np.random.Generator, *,
                            draws: int = 200_000) -> tuple[float, float]:
    """``P(S >= s)`` for ``S`` the sum of one uniform draw from each row of ``x``, by importance sampling.

    An independent check of :class:`ConfirmationNull`'s tail where plain simulation
    cannot reach (1e-5 .. 1e-10): each row's draw is taken from its values tilted by
    ``exp(theta x)``, ``theta`` putting the tilted mean at ``s``, and weighted by the
    likelihood ratio ``exp(-theta S) prod_c M_c(theta)`` (Siegmund 1976, Ann. Statist.
    4(4); Asmussen and Glynn, *Stochastic Simulation*, 2007, ch. VI): unbiased, with a
    relative error of a few percent from tens of thousands of draws
    (``tests/analysis/discovery/test_discovery_confirmation.py``, ``benchmarks/discovery_pvalues.py --tilt``).

    Returns
    -------
    estimate, std_error : float
    """
    from scipy import optimize

    scale = float(np.sqrt(x.var(axis=1).sum()))
    xs = x / scale
    top = xs.max(axis=1, keepdims=True)

    def tilted(theta: float) -> tuple[Array, float]:
        w = np.exp(theta * (xs - top))
        return w / w.sum(axis=1, keepdims=True), float((np.log(w.mean(axis=1)) + theta * top[:, 0]).sum())

    theta = optimize.brentq(lambda th: float((tilted(th)[0] * x).sum()) - s, 0.0, 100.0)
    w, log_m = tilted(theta)
    cum = np.cumsum(w, axis=1)
    u = rng.random((x.shape[0], draws))
    idx = np.minimum(np.stack([np.searchsorted(cum[c], u[c]) for c in range(x.shape[0])]), x.shape[1] - 1)
    total = np.take_along_axis(x, idx, axis=1).sum(axis=0)
    terms = np.exp(log_m - theta * total / scale) * (total >= s)
    return float(terms.mean()), float(terms.std() / math.sqrt(draws))
