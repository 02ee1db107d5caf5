"""Score a discovery run: precision and recall of the true top strings, final total variation.

:func:`evaluate_discovery` runs a whole simulated collection with discovery and scores it
(``rappor simulate --discover``).

Definitions (``docs/discovery.md`` reports them over seeds):

``recall@K``
    share of the true ``K`` most held strings that the method outputs.
``precision@K``
    share of the method's ``K`` largest estimates that are among the true top ``K``
    (fewer than ``K`` outputs count as misses).
``false``
    output strings that no client holds.
``total variation``
    of the final distribution: the full-string reports decoded against the candidate
    list (:func:`rappor.analysis.evaluate_result`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._util.validation import RngLike
from ...collect._design import hash_candidates
from ...params import Params
from ...simulation._populations import Population
from .._metrics import evaluate_result
from ..decoder import DecodeResult, Decoder
from ._decode import listed_strings
from ._search import DiscoveryResult, discover
from ._simulate import DiscoverySimulation, simulate_discovery
from ._spec import DiscoverySpec

__all__ = ["DiscoveryEvaluation", "evaluate_discovery", "topk_scores"]


def topk_scores(truth: Mapping[str, int], strings: Sequence[str], shares: Any, *, ks: Sequence[int] = (10, 50),
                ) -> dict[str, float]:
    """``recall@K``, ``precision@K`` for each ``K`` in ``ks`` and the number of ``false`` strings.

    Parameters
    ----------
    truth : mapping of str to int
        Holders of each string.
    strings : sequence of str
        The method's output.
    shares : array-like of float
        Its estimated share of each output string (for the ranking).
    """
    ranked_truth = sorted(truth, key=lambda s: (-truth[s], s))
    order = np.argsort(-np.asarray(shares, dtype=np.float64), kind="stable")
    ranked_out = [strings[i] for i in order]
    out: dict[str, float] = {"false": float(sum(1 for s in strings if truth.get(s, 0) == 0)),
                             "output": float(len(strings))}
    found = set(strings)
    for k in ks:
        top = set(ranked_truth[:k])
        out[f"recall@{k}"] = len(top & found) / k
        out[f"precision@{k}"] = len(top & set(ranked_out[:k])) / k
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DiscoveryEvaluation:
    """What :func:`evaluate_discovery` returns: a simulated collection, its discovery and both decodes.

    Attributes
    ----------
    simulation : DiscoverySimulation
        The simulated collection (truth and counts of both kinds of report).
    found : DiscoveryResult
        The search on its discovery reports.
    listed : tuple of str
        The significant values found that can be written one per line.
    candidates : tuple of str
        The candidate list known beforehand.
    results : dict of str to DecodeResult
        The full-string counts decoded ``"without discovery"`` (against :attr:`candidates`)
        and ``"with discovery"`` (against the candidates and every significant value found).
    scores : dict of str to dict
        For each decode: ``candidates`` (list length), ``total_variation`` and
        ``unexplained_mass`` (:func:`rappor.analysis.evaluate_result`),
        ``true_share_outside_list`` and the :func:`topk_scores` of its detected strings.
    discovery_scores : dict of str to float
        The :func:`topk_scores` of the search's significant values.
    """

    simulation: DiscoverySimulation
    found: DiscoveryResult
    listed: tuple[str, ...]
    candidates: tuple[str, ...]
    results: dict[str, DecodeResult]
    scores: dict[str, dict[str, float]]
    discovery_scores: dict[str, float]


def evaluate_discovery(params: Params, spec: DiscoverySpec, population: Population, n_clients: int, *,
                       candidates: Sequence[str], discovery_share: float = 0.75, decoder: Decoder | None = None,
                       rng: RngLike = None, progress: Callable[[int], None] | None = None) -> DiscoveryEvaluation:
    """Simulate a collection with discovery, run the search, and decode with and without what it found.

    This is what ``rappor simulate --discover`` runs: ``n_clients`` clients of
    ``population`` (:func:`~rappor.analysis.discovery.simulate_discovery`), the search on
    the discovery reports, then the full-string reports decoded against ``candidates``
    alone and against ``candidates`` plus the values found, each scored against the truth.
    The search's byte prior learns the candidates first (``discover(prior_values=...)``),
    as ``rappor decode --discover`` does.

    Parameters
    ----------
    params : Params
        Parameters of the full-string reports.
    spec : DiscoverySpec
        What the discovery reports carry.
    population : Population
        The truth clients draw their values from.
    n_clients : int
    candidates : sequence of str
        The candidate list known beforehand (e.g. :func:`rappor.simulation.candidate_strings`).
    discovery_share : float, default=0.75
        Share of the clients that send a discovery report instead of a full-string one.
    decoder : Decoder, optional
        Default ``Decoder()``.
    rng : None, int or numpy.random.Generator
    progress : callable, optional
        Called with 1 after each step: the ``spec.levels`` slots simulated, the
        ``spec.levels`` slots searched and the two decodes (``2 * spec.levels + 2`` in all).

    Returns
    -------
    DiscoveryEvaluation
    """
    decoder = Decoder() if decoder is None else decoder
    sim = simulate_discovery(params, spec, population, n_clients, discovery_share=discovery_share, rng=rng,
                             progress=progress)
    known = tuple(candidates)
    found = discover(sim.discovery, spec, progress=progress, prior_values=known)  # as rappor decode --discover
    listed = tuple(listed_strings(found))
    truth = sim.full_truth
    total = max(sum(truth.values()), 1)
    scores: dict[str, dict[str, float]] = {}
    results = {}
    decoded = known + tuple(found.candidates())  # every significant UTF-8 value, those found.txt cannot show too
    for name, cands in (("without discovery", known), ("with discovery", tuple(dict.fromkeys(decoded)))):
        res = decoder.decode(sim.full, hash_candidates(list(cands), params))
        met = evaluate_result(res, truth)
        detected = np.flatnonzero(res.detected)
        listed_set = set(cands)
        scores[name] = {"candidates": len(cands), "total_variation": met.total_variation,
                        "unexplained_mass": met.unexplained_mass,
                        "true_share_outside_list": sum(c for s, c in truth.items() if s not in listed_set) / total,
                        **topk_scores(truth, [res.strings[i] for i in detected], res.proportion[detected])}
        results[name] = res
        if progress is not None:
            progress(1)
    sig = found.significant
    discovery_scores = topk_scores(sim.truth, [s for s, k in zip(found.strings, sig) if k], found.proportion[sig])
    return DiscoveryEvaluation(simulation=sim, found=found, listed=listed, candidates=known, results=results,
                               scores=scores, discovery_scores=discovery_scores)
