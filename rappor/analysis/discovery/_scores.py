"""Every fragment a slot's search scores: the frontier's extensions, the pooled values and the fitted ones.

:func:`rappor.analysis.discovery.discover` scores, in each slot, the extensions of the
frontier's prefixes by the slot's tails, the values pooled so far (scored again in every
later slot) and the fragments fitted and subtracted (:meth:`SlotOracle.explain`), whose
fitted count is added back to their estimate.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ._oracle import SlotOracle

Array = npt.NDArray[np.float64]


class _SlotScores:
    """Every scored fragment of one slot: extensions of the frontier and the pooled values."""

    def __init__(self, oracle: SlotOracle, frontier: list[bytes], head_z: list[float], tails: list[bytes],
                 known: list[bytes]) -> None:
        self.oracle = oracle
        self.frontier = frontier
        self.head_z = np.asarray(head_z, dtype=np.float64)
        self.tails = tails
        self.known = known
        self.known_pairs = [oracle.spec.split(v, oracle.slot) for v in known]
        self.known_bits = oracle.spec.fragment_bits(self.known_pairs, oracle.slot)
        self._known_set = set(self.known_pairs)
        self.fitted: dict[tuple[bytes, bytes], float] = {}

    def above(self, z_floor: float | Array, head_floor: float = -math.inf, *, robust: bool = False,
              ) -> dict[tuple[bytes, bytes], tuple[float, float]]:
        """``(head, tail) -> (estimate, std_error)`` for the extensions with ``z >= z_floor`` (one level,
        or one per tail) of the prefixes whose own z-score was ``>= head_floor``, the pooled values and the fitted
        fragments (their fitted count added back); ``robust``: trimmed estimates."""
        out: dict[tuple[bytes, bytes], tuple[float, float]] = {}
        heads = [self.frontier[i] for i in np.flatnonzero(self.head_z >= head_floor).tolist()]
        hi, ti, est, se = self.oracle.extensions_above(heads, self.tails, z_floor, robust=robust)
        for i, j, e, s in zip(hi.tolist(), ti.tolist(), est.tolist(), se.tolist()):
            out[(heads[i], self.tails[j])] = (e, s)
        est_k, se_k = self.oracle.score_bits(self.known_bits, robust=robust)
        for pair, e, s in zip(self.known_pairs, est_k.tolist(), se_k.tolist()):
            out[pair] = (e + self.fitted.get(pair, 0.0), s)
        others = [pair for pair in self.fitted if pair not in self._known_set]
        if others:
            bits = self.oracle.spec.fragment_bits(others, self.oracle.slot)
            est_p, se_p = self.oracle.score_bits(bits, robust=robust)
            for pair, e, s in zip(others, est_p.tolist(), se_p.tolist()):
                out[pair] = (e + self.fitted[pair], s)
        return out

    def explain(self, scores: dict[tuple[bytes, bytes], tuple[float, float]], cut: float, budget: int) -> None:
        """Fit (jointly) and subtract the strongest fragments with ``z >= cut`` not fitted yet."""
        ranked = sorted(((e / s, pair) for pair, (e, s) in scores.items()
                         if s > 0 and e >= cut * s and pair not in self.fitted), key=lambda zp: -zp[0])
        strong = [pair for _, pair in ranked[:max(budget - len(self.fitted), 0)]]
        if strong:
            self.fitted.update(zip(strong, self.oracle.explain(strong).tolist()))


def _uniform_weights(tails: list[bytes]) -> Array:
    """Weight ``1 / n`` for each tail of a (marker, length) group of ``n`` tails (no prior)."""
    sizes: dict[tuple[bytes, int], int] = {}
    for t in tails:
        sizes[(t[:1], len(t))] = sizes.get((t[:1], len(t)), 0) + 1
    return np.array([1.0 / sizes[(t[:1], len(t))] for t in tails], dtype=np.float64)
