"""Held values (the search's second chance for a short value): complete children just under the pooling level.

A value of ``l`` bytes can be formed in one slot only, the first whose prefix length
``n_s`` reaches ``l``: there it is a *complete* child of a frontier prefix, and it is pooled
(:mod:`._search`) when its z-score passes ``z_pending``.  A frequent short value whose one
finding slot is weak is lost for good, although every later slot holds it whole.
Measured at 10 M clients on the design seeds 700-720 (``benchmarks/discovery.py
--trace``): ``fast.jp``, ``redstusbree.com`` and ``slysfing.de/?q=`` missed ``z_pending``
(2.96) in their finding slot (``fast.jp`` at 1.81, ``redstusbree.com`` at 2.05) and were lost.

So each slot from slot 1 on also *holds* complete children of the prefixes it extended
(regular and provisional) that missed ``z_pending``: among the :data:`_LIKELY_TAILS` most
likely complete tails of each length by the byte prior (every tail while the prior is
uniform), the fragments with a plain z-score of at least :data:`_HELD_FLOOR`, ranked by
``(1 - Phi(z)) / pi_t`` (their p-value over the tail's prior weight), ``hold`` per prefix and at
most :data:`_HELD_BEAM`.  The later slots (other clients) score each held value whole
(trimmed, :meth:`SlotOracle.trimmed`) and pool its evidence (inverse-variance weights); once
they hold :data:`_WAIT` of its weight in the holding slot, it is pooled if that evidence's
z-score passes ``z`` with ``1 - Phi(z) = hold_false``, and dropped otherwise.

**Control.**  Given what was held, an absent value's pooled z-score over the later slots is
close to standard normal, so it is pooled with chance ``hold_false`` whatever chose it: the
held values add on average ``hold_false x hold`` absent values per prefix and slot to the pool
(1 with the defaults, against up to ``pending`` = 100 for the regular complete children).
The confirmation (:mod:`._confirmation`) counts them in its Bonferroni family like any other
pooled value; at 10 M clients they add about 3% to the 270,000-610,000 values pooled.  A
held value is *found* in the slot where its wait ends and confirmed by the slots after it.
"""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._levels import _likely_tails, _normal_sf
from ._oracle import SlotOracle
from ._spec import COMPLETE

Array = npt.NDArray[np.float64]

#: :func:`discover`'s defaults of ``hold`` (values held a slot per prefix extended) and ``hold_false``
#: (the chance that an absent held value is pooled).
DEFAULT_HOLD, DEFAULT_HOLD_FALSE = 20.0, 0.05

#: Most values held a slot.
_HELD_BEAM = 20_000

#: Complete tails of each length scored for held values (the most likely by the prior): every
#: one-byte tail, the likeliest 256 of two bytes.  Of the 8 top-10 values held and found at 10 M
#: clients with the likeliest 4,096 (design seeds 700-720, evaluation seeds 1300-1339), 7 ended
#: in a one-byte tail (a two-byte tail competes with 65,536 a prefix): 256 keep those 7 for 12%
#: more CPU time a search instead of 32%.
_LIKELY_TAILS = 256

#: Plain z-score below which no value is held (bounds the fragments scored exactly).
_HELD_FLOOR = 1.5

#: A held value is tested once the slots after it hold this share of its weight (inverse
#: variance) in the slot that held it: the slot after a strong one may be weak (10 M clients:
#: weights 7, 1, 1, 1, 2 in slots 7-11 of the planner's design).
_WAIT = 0.5


@dataclass
class HeldValue:
    """A held value's evidence so far: inverse-variance weight and weighted share over the slots after
    the one that held it, and the weight it waits for."""

    target: float
    weight: float = 0.0
    weighted: float = 0.0

    def add(self, share: float, se: float) -> None:
        if se > 0 and math.isfinite(se):
            self.weight += 1.0 / (se * se)
            self.weighted += share / (se * se)


def held_values(oracle: SlotOracle, heads: list[bytes], tails: list[bytes], weights: Array, hold: float,
                pooled: Container[bytes], *, likely: bool = True) -> dict[bytes, HeldValue]:
    """The ``hold x len(heads)`` (at most :data:`_HELD_BEAM`) complete children of ``heads`` most likely by the
    prior among those with a plain z-score of at least :data:`_HELD_FLOOR`, leaving out values already ``pooled``.

    ``tails`` and ``weights`` are the slot's tails (marker byte first) and their prior weights
    (:meth:`TailPrior.weights`); only the complete ones are used, and with ``likely`` only the
    :data:`_LIKELY_TAILS` heaviest of each length (``False`` while the prior is uniform, which
    would pick them arbitrarily).  Each waits for
    :data:`_WAIT` of its weight in this slot (:func:`score_held`).
    """
    count = min(_HELD_BEAM, int(round(hold * len(heads))))
    if count <= 0:
        return {}
    complete = [i for i, t in enumerate(tails) if t[:1] == COMPLETE]
    if not complete:
        return {}
    sub_tails = [tails[i] for i in complete]
    idx, sub = _likely_tails(sub_tails, weights[complete], _LIKELY_TAILS if likely else len(sub_tails))
    chosen = [sub_tails[i] for i in idx.tolist()]
    hi, ti, est, se = oracle.extensions_above(heads, chosen, _HELD_FLOOR)
    if hi.size == 0:
        return {}
    with np.errstate(divide="ignore"):
        key = np.log(np.maximum(_normal_sf(est / se), 1e-300)) - np.log(sub[ti])
    picked: list[tuple[bytes, float]] = []
    n = max(float(oracle.n_reports), 1.0)
    for j in np.argsort(key, kind="stable").tolist():
        value = heads[int(hi[j])] + chosen[int(ti[j])][1:]
        if value not in pooled:
            picked.append((value, float(se[j]) / n))
            if len(picked) >= count:
                break
    return {v: HeldValue(target=_WAIT / (s * s)) for v, s in picked}


def score_held(oracle: SlotOracle, held: dict[bytes, HeldValue], level: float) -> list[tuple[bytes, float, float]]:
    """Add this slot's (trimmed) evidence to every held value; remove those whose wait is over and return
    the ones whose z-score over the slots since they were held reaches ``level`` (``1 - Phi(level) =
    hold_false``): ``(value, share, std_error)`` over those slots."""
    if not held:
        return []
    spec = oracle.spec
    values = list(held)
    est, se = oracle.trimmed(spec.fragment_bits([spec.split(v, oracle.slot) for v in values], oracle.slot))
    n = max(float(oracle.n_reports), 1.0)
    out: list[tuple[bytes, float, float]] = []
    for v, e, s in zip(values, est.tolist(), se.tolist()):
        entry = held[v]
        entry.add(e / n, s / n)
        if entry.weight >= entry.target:
            del held[v]
            share, std = entry.weighted / entry.weight, 1.0 / math.sqrt(entry.weight)
            if share >= level * std:
                out.append((v, share, std))
    return out
