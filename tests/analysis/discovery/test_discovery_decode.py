"""rappor.analysis.discovery: discover_and_decode (``rappor decode --discover``) and evaluate_discovery
(``rappor simulate --discover``) compose the library's steps, and say what each step gave."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rappor import Decoder, InvalidParameterError, Params, hash_candidates
from rappor.analysis.discovery import DiscoverySpec, discover, discover_and_decode, evaluate_discovery, simulate_discovery
from rappor.simulation import Population

EPS4_F = 2.0 / (1.0 + math.exp(2.0))  # epsilon_inf = 4 with one hash (RAPPOR Theorem 1)
PARAMS = Params(num_bloombits=64, num_hashes=1, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=EPS4_F)
SPEC = DiscoverySpec(params=Params(num_bloombits=128, num_hashes=1, num_cohorts=16, prob_p=0.0, prob_q=1.0,
                                   prob_f=EPS4_F), max_length=20, segment=2)
STRINGS = ("www.alpha.com", "beta", "gamma.org/login", "delta-epsilon.net", "zeta")
POPULATION = Population(strings=STRINGS + tuple(f"rare{i}.example.org" for i in range(200)),
                        probabilities=np.array([0.3, 0.2, 0.15, 0.1, 0.05] + [0.2 / 200] * 200))


@pytest.fixture(scope="module")
def sim():  # type: ignore[no-untyped-def]
    # 300,000 clients, 3/4 of them discovery: the five frequent strings are found (as in test_discovery.py)
    return simulate_discovery(PARAMS, SPEC, POPULATION, 300_000, discovery_share=0.75, rng=5)


def test_discover_and_decode_appends_the_values_found_to_the_candidates(sim) -> None:  # type: ignore[no-untyped-def]
    candidates = hash_candidates(["beta", "not-held"], PARAMS)
    decoder = Decoder()
    out = discover_and_decode(sim.full, candidates, sim.discovery, SPEC, decoder=decoder)
    found = discover(sim.discovery, SPEC)
    significant = {s for s, keep in zip(found.strings, found.significant) if keep}
    assert set(out.new_strings) == significant - {"beta"} and set(STRINGS) - {"beta"} <= set(out.new_strings)
    assert out.candidate_map.strings == ("beta", "not-held", *out.new_strings)
    assert out.result.strings == out.candidate_map.strings
    np.testing.assert_array_equal(out.result.estimate, decoder.decode(sim.full, out.candidate_map).estimate)
    assert out.without is not None and out.without.strings == ("beta", "not-held")
    assert 0.0 < out.detection_floor < 0.05  # values found hold 5% of the clients or more


def test_discover_and_decode_without_candidates_decodes_the_values_found(sim) -> None:  # type: ignore[no-untyped-def]
    out = discover_and_decode(sim.full, None, sim.discovery, SPEC)
    assert out.without is None and out.candidate_map.strings == out.new_strings
    assert set(STRINGS) <= set(out.result.strings)


def test_discover_and_decode_fail_nothing_to_decode() -> None:
    empty = simulate_discovery(PARAMS, SPEC, POPULATION, 50, discovery_share=0.5, rng=0)  # too few to find anything
    with pytest.raises(InvalidParameterError, match="nothing to decode"):
        discover_and_decode(empty.full, None, empty.discovery, SPEC)


def test_evaluate_discovery_scores_both_decodes() -> None:
    ev = evaluate_discovery(PARAMS, SPEC, POPULATION, 300_000, candidates=["beta", "zeta"], rng=5)
    assert set(ev.results) == {"without discovery", "with discovery"}
    assert ev.results["without discovery"].strings == ("beta", "zeta")
    assert ev.results["with discovery"].strings == tuple(dict.fromkeys(("beta", "zeta", *ev.listed)))
    without, with_ = ev.scores["without discovery"], ev.scores["with discovery"]
    assert without["candidates"] == 2 and with_["candidates"] == len(ev.results["with discovery"].strings)
    # the discovered strings hold most of the clients the short list left out
    assert with_["true_share_outside_list"] < without["true_share_outside_list"] - 0.4
    assert with_["total_variation"] < without["total_variation"]
    assert ev.discovery_scores["false"] == 0


def test_plan_with_discovery_plans_the_full_string_clients_then_the_discovery() -> None:
    from rappor.analysis.discovery import plan_discovery, plan_with_discovery
    from rappor.privacy import plan

    result, discovery = plan_with_discovery(100_000, 500, discovery_share=0.75, epsilon_inf=4.0, rng=0)
    alone = plan(25_000, 500, epsilon_inf=4.0, rng=0)  # the full-string design sees a quarter of the clients
    assert result.best.params == alone.best.params
    assert discovery.n_clients == 100_000 and discovery.n_full_reports == 25_000
    assert discovery.spec == plan_discovery(alone.best.params, 100_000, discovery_share=0.75).spec
