"""The z-scores the search's extensions need: one level per slot, or one per tail by a prior.

A slot's search keeps, per prefix, the extensions whose z-score passes a level set by the
expected number of absent children kept (:mod:`._search`); with a prior over the tails
(:mod:`._prior`) each budget ``r`` is spread as ``1 - Phi(z_t) = r pi_t`` (weighted
Bonferroni; Genovese, Roeder and Wasserman, Biometrika 93, 2006), which keeps the same
expected number of absent children per prefix.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ..._util.validation import check_real
from ._spec import PARTIAL, DiscoverySpec

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

Array = npt.NDArray[np.float64]


def _tails(symbols: bytes, length: int) -> list[bytes]:
    out = [b""]
    for _ in range(length):
        out = [t + bytes([c]) for t in out for c in symbols]
    return out


def _normal_sf(z: Array) -> Array:
    out: Array = 0.5 * special.erfc(z / math.sqrt(2.0))
    return out


def _normal_isf(p: float) -> float:
    return float(math.sqrt(2.0) * special.erfcinv(2.0 * p))


@dataclass(frozen=True)
class _Thresholds:
    extend: float  # partial extensions kept as prefixes
    reserve: float  # partial extensions of a regular prefix kept as reserve prefixes
    pending: float  # complete extensions pooled


#: :func:`discover`'s defaults of ``false_children``, ``reserve``, ``pending`` and ``prior_mix`` (the
#: planner, :func:`rappor.analysis.discovery.discovery_frequency`, models the same search).
DEFAULT_FALSE_CHILDREN, DEFAULT_RESERVE, DEFAULT_PENDING, DEFAULT_PRIOR_MIX = 0.25, 2.0, 100.0, 0.1


def _thresholds(spec: DiscoverySpec, false_children: float, reserve: float, pending: float,
                z_extend: float | None) -> _Thresholds:
    """The z-scores extensions need, from the expected absent children kept per prefix."""
    symbols = spec.symbols
    n_partial = len(symbols) ** spec.segment
    n_complete = sum(len(symbols) ** i for i in range(1, spec.segment + 1))
    r = check_real(false_children, "false_children", "discover", low=0.0, low_open=True)
    extra = check_real(reserve, "reserve", "discover", low=0.0)
    wait = check_real(pending, "pending", "discover", low=0.0, low_open=True)
    if z_extend is None:
        extend = _normal_isf(min(r / n_partial, 0.5))
        low = _normal_isf(min((r + extra) / n_partial, 0.5))
    else:
        extend = check_real(z_extend, "z_extend", "discover")
        low = extend - (_normal_isf(min(r / n_partial, 0.5)) - _normal_isf(min((r + extra) / n_partial, 0.5)))
    return _Thresholds(extend=float(extend), reserve=float(min(low, extend)),
                       pending=float(min(_normal_isf(min(wait / n_complete, 0.5)), extend)))


#: ``log10`` of the tail probabilities of :func:`_isf_table`'s grid.
_ISF_LOG_Q = np.linspace(-40.0, math.log10(0.5), 8193)


@functools.cache
def _isf_grid() -> Array:
    out: Array = np.sqrt(2.0) * special.erfcinv(2.0 * 10.0 ** _ISF_LOG_Q)
    return out


def _isf_table(q: Array) -> Array:
    """``z`` with ``1 - Phi(z) = q``, interpolated in ``log10 q`` on a fine grid (within 2e-5 of
    :func:`_normal_isf` for ``1e-40 <= q <= 1/2``: the levels of a slot's 131,328 tails at a
    fraction of erfcinv's cost)."""
    with np.errstate(divide="ignore"):
        out: Array = np.interp(np.log10(q), _ISF_LOG_Q, _isf_grid())
    return out


def _tail_budgets(tails: list[bytes], weights: Array) -> tuple[npt.NDArray[np.bool_], Array]:
    """Whether each tail is partial, and its share of a unit budget (:func:`_tail_levels`): a partial
    tail's prior weight, a complete tail's weight times its length group's share of the complete tails."""
    partial = np.array([t[:1] == PARTIAL for t in tails], dtype=bool)
    lengths = np.array([len(t) for t in tails], dtype=np.int64)
    budget = np.where(partial, weights, 0.0)
    complete = ~partial
    n_complete = int(complete.sum())
    for length in np.unique(lengths[complete]).tolist():
        group = complete & (lengths == length)
        budget[group] = weights[group] * (group.sum() / max(n_complete, 1))
    return partial, budget


def _tail_levels(tails: list[bytes], weights: Array, th: _Thresholds, false_children: float, reserve: float,
                 pending: float) -> tuple[Array, Array, Array]:
    """Per-tail ``(extend, reserve, pending)`` levels spreading each budget by the prior ``weights``.

    ``weights`` sum to one over each (marker, length) group of ``tails``
    (:meth:`TailPrior.weights`).  A partial tail's levels solve ``1 - Phi(z) = r w`` for
    ``r`` = ``false_children`` and ``false_children + reserve``; a complete tail's
    ``1 - Phi(z) = pending w n_group / n_complete`` (every length's budget in proportion
    to its tails, as with one level).  With uniform weights they are the scalar levels.
    Levels of the other kind are ``inf``.
    """
    partial, budget = _tail_budgets(tails, weights)
    complete = ~partial
    z = _isf_table(np.minimum(np.outer((false_children, false_children + reserve, pending), budget), 0.5))
    extend = np.where(partial, z[0], np.inf)
    low = np.where(partial, np.minimum(z[1], extend), np.inf)
    wait = np.where(complete, np.minimum(z[2], th.extend), np.inf)
    return extend, low, wait


def _likely_tails(tails: list[bytes], weights: Array, count: int) -> tuple[npt.NDArray[np.int64], Array]:
    """The ``count`` tails of largest prior weight in each (marker, length) group of ``tails``, and
    their weights renormalized to sum to one over each group's chosen tails.

    Spreading a budget over these alone (weight 0 on the others) is still weighted Bonferroni:
    the chosen tails' levels spend the whole budget, so the expected absent children kept
    per prefix is the budget, whatever the prior (which comes from other clients' reports).
    """
    keys = np.array([len(t) * 2 + (t[:1] == PARTIAL) for t in tails], dtype=np.int64)
    chosen: list[npt.NDArray[np.int64]] = []
    for key in np.unique(keys).tolist():
        members = np.flatnonzero(keys == key)
        chosen.append(members[np.argsort(-weights[members], kind="stable")[:count]])
    idx = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    out = weights[idx].copy()
    for key in np.unique(keys[idx]).tolist():
        group = keys[idx] == key
        out[group] /= out[group].sum()
    return idx, out
