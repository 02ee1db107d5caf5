"""Collections the discovery tests share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rappor import Params
from rappor.analysis.discovery import DiscoverySpec, discover, simulate_discovery
from rappor.analysis.discovery._levels import _tails
from rappor.analysis.discovery._spec import COMPLETE, PARTIAL
from rappor.simulation import Population

EPS4_F = 2.0 / (1.0 + math.exp(2.0))  # h = 1: epsilon_inf = 4


@pytest.fixture
def absent_heads() -> Callable[[int], tuple[DiscoverySpec, Any, list[bytes], list[bytes], np.random.Generator]]:
    """``make(seed)``: 200,000 clients holding 400 random 8-letter strings (k=256 h=1 m=32, lowercase
    search, epsilon 4), about 1,400 random 4-letter prefixes none of them begins with, and a slot's
    tails (two-letter partial, one- and two-letter complete): children of heads nobody holds;
    and the generator, for the test's own draws."""

    def make(seed: int) -> tuple[DiscoverySpec, Any, list[bytes], list[bytes], np.random.Generator]:
        params = Params(num_bloombits=256, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0, prob_f=EPS4_F)
        spec = DiscoverySpec(params=params, max_length=8, segment=2, alphabet="lowercase")
        rng = np.random.default_rng(seed)
        strings = tuple("".join(chr(97 + c) for c in rng.integers(0, 26, size=8)) for _ in range(400))
        pop = Population(strings=strings, probabilities=np.full(400, 1.0 / 400))
        sim = simulate_discovery(params, spec, pop, 200_000, discovery_share=1.0, rng=seed)
        heads = sorted({bytes(rng.integers(97, 123, size=4).astype(np.uint8)) for _ in range(1500)}
                       - {s[:4].encode() for s in strings})
        tails = ([PARTIAL + t for t in _tails(spec.symbols, 2)]
                 + [COMPLETE + t for i in (1, 2) for t in _tails(spec.symbols, i)])
        return spec, sim, heads, tails, rng

    return make


@pytest.fixture
def quickfox() -> Callable[[int, tuple[int, ...]], tuple[DiscoverySpec, Any]]:
    """``make(seed, slot_weights)``: 105,000 clients, 'quickfox' 2%, 'lazydog' and 'brownbear' 10%
    each, 300 random 5-10 letter strings the rest (k=128 h=1 m=16, epsilon 4, max_length 10,
    lowercase search, six slots of the given weights): a value whose weak slot the test picks."""

    def make(seed: int, slot_weights: tuple[int, ...]) -> tuple[DiscoverySpec, Any]:
        params = Params(num_bloombits=128, num_hashes=1, num_cohorts=16, prob_p=0.0, prob_q=1.0, prob_f=EPS4_F)
        spec = DiscoverySpec(params=params, max_length=10, segment=2, alphabet="lowercase", slot_weights=slot_weights)
        rng = np.random.default_rng(0)
        fill = tuple("".join(chr(97 + c) for c in rng.integers(0, 26, size=rng.integers(5, 11))) for _ in range(300))
        pop = Population(strings=("quickfox", "lazydog", "brownbear") + fill,
                         probabilities=np.array([0.02, 0.1, 0.1] + [0.78 / 300] * 300))
        return spec, simulate_discovery(params, spec, pop, 105_000, discovery_share=1.0, rng=seed)

    return make


@pytest.fixture
def quickfox_found(quickfox: Any) -> Callable[..., dict[str, int]]:
    """``count(seeds, slot_weights, off={...}, on={...})``: on how many of the ``quickfox`` collections
    ``discover`` with each set of options finds 'quickfox' significant; every significant value must be
    one clients hold."""

    def count(seeds: range, slot_weights: tuple[int, ...], **options: dict[str, Any]) -> dict[str, int]:
        found = dict.fromkeys(options, 0)
        for seed in seeds:
            spec, sim = quickfox(seed, slot_weights)
            for name, kwargs in options.items():
                res = discover(sim.discovery, spec, **kwargs)
                significant = {s for s, keep in zip(res.strings, res.significant) if keep}
                found[name] += "quickfox" in significant
                assert significant <= set(sim.truth)
        return found

    return count
