"""The exact chance law of the confirming statistic (rappor.analysis.discovery._confirmation)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from rappor import Params
from rappor.analysis.discovery import DiscoverySpec, discover, simulate_discovery
from rappor.analysis.discovery._confirmation import ConfirmationNull, tilted_tail_probability
from rappor.simulation import Population
from rappor.testing import discovery_settings


def _slot(slot: int, gen: np.random.Generator, md: int = 8, k: int = 32) -> SimpleNamespace:
    """A slot's debiased counts with heavy collisions: noise plus three frequent values' bits."""
    n = np.full(md, 200.0)
    t = gen.normal(0.0, 6.0, size=(md, k)).round()  # discrete, as real counts are
    heavy = gen.integers(0, k, size=(md, 3))
    for c in range(md):
        t[c, heavy[c]] += [90.0, 40.0, 25.0]
    return SimpleNamespace(t=t, beta=1.0 / k, background=n, n_cohort=n, n_reports=float(n.sum()), slot=slot)


@pytest.mark.parametrize("h", [1, 2])
def test_pvalues_of_random_bit_patterns_match_their_tail(h: int) -> None:
    """P(S >= s) from the convolution matches the share of 200,000 random bit patterns scoring s or more.

    The statistic of a value nobody holds is a sum of uniform draws from the cohorts' bits,
    so the computed tail at the empirical quantiles q (1e-1 .. 1e-4) must be within 4
    binomial standard errors of q (plus the grid's half-step).
    """
    gen = np.random.default_rng(3)
    null = ConfirmationNull(h)
    slots = [_slot(s, gen) for s in (2, 3, 4)]
    for o in slots:
        null.add_slot(o)  # type: ignore[arg-type]
    draws = 200_000
    stats = np.zeros(draws)
    for o in slots[1:]:  # a value found in slot 2 is confirmed by slots 3 and 4
        bits = gen.integers(0, 32, size=(draws, 8, h))
        stats += null.statistic(o.slot, bits, np.zeros(draws))
    for q in (1e-1, 1e-2, 1e-3, 1e-4):
        s = float(np.quantile(stats, 1.0 - q))
        empirical = float(np.mean(stats >= s))
        p = float(null.pvalues(np.array([s]), np.array([2]))[0])
        se = np.sqrt(empirical * (1.0 - empirical) / draws)
        assert abs(p - empirical) <= 4.0 * se + 0.02 * empirical, (q, p, empirical)


def test_pvalues_use_only_the_slots_after_the_first() -> None:
    gen = np.random.default_rng(4)
    null = ConfirmationNull(1)
    for s in (0, 1):
        null.add_slot(_slot(s, gen))  # type: ignore[arg-type]
    # Found in the last slot: no confirming slot, so no evidence against chance.
    assert null.pvalues(np.array([1e9]), np.array([1]))[0] == 1.0
    # Far beyond the largest possible sum: probability 0; far below: 1.
    assert null.pvalues(np.array([1e12, -1e12]), np.array([0, 0])).tolist() == [0.0, 1.0]


def test_far_tail_matches_exponentially_tilted_monte_carlo() -> None:
    """P(S >= s) at 1e-5 .. 1e-8, where plain simulation cannot reach, against importance sampling.

    :func:`tilted_tail_probability` (exponential tilting: an unbiased estimate of the tail
    with a relative error of a few percent from 40,000 draws).  Bonferroni over every value
    pooled puts the decisions at 1e-6 .. 1e-7 (issue 18), so that is where the FFT grid's
    tail must hold: within 4 standard errors of the estimate plus 2% (the grid).
    """
    gen = np.random.default_rng(7)
    null = ConfirmationNull(1)
    slots = [_slot(s, gen) for s in range(5)]
    for o in slots:
        null.add_slot(o)  # type: ignore[arg-type]
    x = np.concatenate([null.terms[s] for s in (1, 2, 3, 4)])  # confirming slots of a value found in 0
    scale = float(np.sqrt(x.var(axis=1).sum()))
    for q in (1e-5, 1e-6, 1e-7, 1e-8):
        lo, hi = float(x.mean(axis=1).sum()), float(x.mean(axis=1).sum() + 12 * scale)
        for _ in range(60):  # the FFT law's own q-quantile, by bisection
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if null.pvalues(np.array([mid]), np.array([0]))[0] > q else (lo, mid)
        s = hi
        p = float(null.pvalues(np.array([s]), np.array([0]))[0])
        estimate, se = tilted_tail_probability(x, s, gen, draws=40_000)
        assert abs(p - estimate) <= 4.0 * se + 0.02 * estimate, (q, p, estimate, se)


def _eps4_params(k: int, m: int) -> Params:
    f = 2.0 / (1.0 + math.exp(2.0))  # h = 1: epsilon_inf = 4
    return Params(num_bloombits=k, num_hashes=1, num_cohorts=m, prob_p=0.0, prob_q=1.0, prob_f=f)


def test_absent_values_sharing_a_strong_values_prefix_are_not_confirmed_beyond_chance() -> None:
    """A strong value's absent extensions and prefix-mates get no evidence from its clients.

    Three values hold 60% of the clients; the search pools thousands of absent values that
    share their first six bytes (``healthha``, ``healthhack.co``, ``www.examplf``, ...).  Their
    confirming slots hold other clients, and their fragments there are hashed apart from the
    strong values' (another head or another tail), so their p-values are uniform: the counts
    at or below 0.1 and 0.01 are within 4 Poisson standard errors of the pooled mates times
    the level (false failure below 1e-4 each), and none is significant.  Counting the
    selection slot in the confirmation, or hashing a complete value by its prefix alone,
    would give them many times that.
    """
    strong = ["healthhack.com", "healthy.org/a", "www.example.jp"]
    rare = [f"r{i:04d}.example.net" for i in range(400)]
    pop = Population(strings=tuple(strong + rare), probabilities=np.array([0.3, 0.2, 0.1] + [0.4 / 400] * 400))
    spec = DiscoverySpec(params=_eps4_params(64, 8), max_length=16, segment=2)
    sim = simulate_discovery(_eps4_params(64, 8), spec, pop, 100_000, discovery_share=1.0, rng=11)
    with discovery_settings(keep_every_value=True):
        res = discover(sim.discovery, spec)
    heads = {s.encode()[:6] for s in strong}
    mates = np.array([sim.truth.get(s, 0) == 0 and v[:6] in heads for v, s in zip(res.values, res.strings)])
    assert mates.sum() > 1000
    for level in (0.1, 0.01):
        expected = mates.sum() * level
        assert abs(int((res.pvalue[mates] <= level).sum()) - expected) <= 4.0 * math.sqrt(expected), level
    assert sorted(s for s, keep in zip(res.strings, res.significant) if keep) == sorted(strong)


def test_fragments_sharing_a_head_or_tail_land_on_independent_bits() -> None:
    """Distinct fragments coincide in a cohort with probability 1/k, however alike they are.

    The confirming p-values of two absent values are independent given the counts (so two
    false values in one run have chance about alpha**2 / 2) only if their bits are: an
    8-byte complete value and a longer value it begins (slot 4: the same head, tails
    ``\x01`` and ``\x01xy``; slot 5: other heads, the same tail ``\x01``).  Over 2,000
    such pairs (each with its own ``xy``) and 32 cohorts a slot, the share of coinciding
    bits is 1/k within 4 binomial standard errors; hashing a complete value by its head
    alone would make it 1.
    """
    k = 64
    spec = DiscoverySpec(params=_eps4_params(k, 32), max_length=16, segment=2)
    gen = np.random.default_rng(5)
    base = [bytes(row) for row in gen.integers(97, 123, size=(2000, 10), dtype=np.uint8)]
    pairs = [(v[:8], v) for v in base]
    for slot in (4, 5):
        a = spec.bloom_bits([p[0] for p in pairs], slot)
        b = spec.bloom_bits([p[1] for p in pairs], slot)
        share = float((a == b).mean())
        assert abs(share - 1.0 / k) <= 4.0 * math.sqrt((1.0 / k) * (1.0 - 1.0 / k) / a.size), (slot, share)
