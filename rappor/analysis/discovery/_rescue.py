"""Provisional prefixes (the search's dip rescue): which to keep, and what their children need.

From slot 1 on the search (:mod:`._search`) keeps, besides its regular and reserve
prefixes, the partial children of a regular prefix whose z-score fell below the reserve
level but above a deeper one (the budget ``false_children + reserve + rescue`` absent
children per prefix, spread over the tails by the byte prior), at most
:data:`_RESCUE_BEAM` a slot, smallest ``(1 - Phi(z)) / pi_t`` first.  In the next slot such
a *provisional* prefix ``j`` is extended by its most likely tails only, and a child is kept
(or pooled) only when its own z-score passes a strong level: ``1 - Phi(z) <= b_j w_u`` for
tail ``u`` of prior weight ``w_u`` among the tails scored (:func:`_provisional_children`).

**The budgets ``b_j``.**  The provisional prefixes and their budgets are chosen from the
slots up to ``s``; their children are scored in slot ``s + 1``, other clients.  So, given
what was chosen, an absent child passes with chance at most ``b_j w_u`` whatever rule set
the ``b_j``, and the provisional prefixes leave at most ``sum_j b_j`` absent regular
prefixes on average (weighted Bonferroni with weights from independent data; Genovese,
Roeder and Wasserman, Biometrika 93, 2006).  The search allows ``rescue_false`` of them
per regular prefix that could have a provisional child (:func:`provisional_budgets`).
The default (``discover(rescue_split="even")``) gives each provisional prefix
``rescue_false / rescue``, which spends the whole only when ``rescue`` provisional prefixes
per regular prefix are kept: with the beam binding (1,000 kept of 1,500-2,500 above the deep
level at 10 M clients) it spends a third to a half of it.  ``rescue_split="evidence"``
spends all of ``rescue_false x F`` (``F`` such regular prefixes), in proportion to each
provisional prefix's own evidence ``pi_t / (1 - Phi(z_j))``, its ranking key inverted: the
child passes when ``p_j p_child / (pi_t w_u)`` is small, the product of the two links'
p-values (Fisher's combination), so a link just under the reserve level carries a weaker
next link than one just over the deep level.  Measured at 10 M clients (notes, 6.17): two
more top-10 values over 24 design seeds (+0.008, SE 0.006), one fewer over the 20 new seeds
380-399 (-0.005, SE 0.005), for 13-15% more CPU time: not the default.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._levels import _isf_table, _likely_tails, _tail_budgets
from ._oracle import SlotOracle
from ._spec import PARTIAL

Array = npt.NDArray[np.float64]

#: Tails of each kind scored for a provisional prefix (the most likely by the prior).
_LIKELY_TAILS = 4096

#: Most provisional prefixes kept per slot.
_RESCUE_BEAM = 1000

#: :func:`discover`'s defaults of ``rescue`` and ``rescue_false``.
DEFAULT_RESCUE, DEFAULT_RESCUE_FALSE = 16.0, 0.1


def provisional_budgets(ranks: Array, regular: int, rescue_false: float, split: str = "evidence",
                        rescue: float = DEFAULT_RESCUE) -> Array:
    """Expected absent partial children each provisional prefix may leave in the next slot.

    Parameters
    ----------
    ranks : ndarray of shape (n,)
        ``(1 - Phi(z_j)) / pi_t`` of the provisional prefixes kept (their first link's
        p-value over its tail's prior weight; positive).
    regular : int
        Regular prefixes of the slot that could have provisional children.
    rescue_false : float
        Expected absent regular prefixes left per regular prefix (:func:`discover`).
    split : {"evidence", "even"}
        ``"evidence"``: ``b_j = rescue_false x regular x (1 / r_j) / sum_i (1 / r_i)``, the
        whole budget spread by the first link's evidence (module docstring); ``"even"``:
        ``rescue_false / rescue`` each, the whole budget only when ``rescue`` provisional
        prefixes per regular prefix are kept.
    rescue : float
        Expected absent provisional prefixes per regular prefix (``"even"`` only).

    Returns
    -------
    ndarray of shape (n,)
    """
    r = np.asarray(ranks, dtype=np.float64)
    if r.size == 0:
        return np.zeros(0)
    if split == "even":
        return np.full(r.size, rescue_false / rescue)
    inv = 1.0 / np.maximum(r, np.finfo(np.float64).tiny)
    return np.asarray(rescue_false * regular * inv / inv.sum(), dtype=np.float64)


def _provisional_children(oracle: SlotOracle, heads: list[bytes], budgets: Array, pending_ratio: float,
                          tails: list[bytes], weights: Array, cap: float,
                          ) -> list[tuple[bytes, bool, float, float, float]]:
    """Children of provisional prefixes that pass their (strong) levels: ``(value, partial, estimate, std_error,
    level)``.

    Only the :data:`_LIKELY_TAILS` most likely tails of each kind (by the prior) are
    scored, each head's budget spread over them alone (:func:`_likely_tails`): head ``j``
    leaves on average ``budgets[j]`` absent partial children and ``pending_ratio x
    budgets[j]`` absent complete ones (whose level is at most ``cap``, the regular extension
    level, as for the children of regular prefixes).
    """
    idx, sub = _likely_tails(tails, weights, _LIKELY_TAILS)
    chosen = [tails[i] for i in idx.tolist()]
    partial, unit = _tail_budgets(chosen, sub)
    unit = np.where(partial, unit, pending_ratio * unit)
    b = np.asarray(budgets, dtype=np.float64)
    top = np.where(partial, np.inf, cap)
    floors = np.minimum(_isf_table(np.minimum(float(b.max()) * unit, 0.5)), top)  # the loosest head's, then each's
    hi, ti, est, se = oracle.extensions_above(heads, chosen, floors, robust=True)
    level = np.minimum(_isf_table(np.minimum(b[hi] * unit[ti], 0.5)), top[ti])
    keep = est >= level * se
    return [(heads[h] + chosen[t][1:], chosen[t][:1] == PARTIAL, e, s, lv)
            for h, t, e, s, lv in zip(hi[keep].tolist(), ti[keep].tolist(), est[keep].tolist(), se[keep].tolist(),
                                      level[keep].tolist())]
