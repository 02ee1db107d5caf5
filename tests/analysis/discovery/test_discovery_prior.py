"""The search's learnt prior over tails (rappor.analysis.discovery._prior) and its per-tail levels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from rappor.analysis.discovery._prior import TailPrior
from rappor.analysis.discovery._levels import _tail_levels, _tails, _thresholds
from rappor.analysis.discovery._spec import COMPLETE, PARTIAL, DiscoverySpec
from rappor import Params


def _slot_tails(symbols: bytes) -> list[bytes]:
    return ([PARTIAL + t for t in _tails(symbols, 2)]
            + [COMPLETE + t for i in (1, 2) for t in _tails(symbols, i)])


def _sf(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * special.erfc(z / np.sqrt(2.0)))


def _spec() -> DiscoverySpec:
    params = Params(num_bloombits=256, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0, prob_f=0.24)
    return DiscoverySpec(params=params, max_length=30, segment=2)


def test_prior_is_uniform_until_it_has_seen_enough_bytes() -> None:
    prior = TailPrior(bytes(range(256)))
    tails = _slot_tails(bytes(range(256)))
    prior.learn([b"ab"] * 10)  # 20 bytes: not enough
    assert not prior.active
    w = prior.weights(tails)
    assert np.allclose(w[:65536], 1 / 65536) and np.allclose(w[-65536:], 1 / 65536)


def test_prior_weights_sum_to_one_per_group_and_keep_the_uniform_share() -> None:
    symbols = bytes(range(256))
    prior = TailPrior(symbols, mix=0.1)
    prior.learn([b"the", b"search", b"engine", b"news.com", b"mail."] * 20)
    assert prior.active and prior.perplexity() < 20
    tails = _slot_tails(symbols)
    w = prior.weights(tails)
    partial = w[:65536]
    one, two = w[65536:65536 + 256], w[65536 + 256:]
    for group in (partial, one, two):
        assert group.sum() == pytest.approx(1.0, rel=1e-9)
    # Every tail keeps at least mix times its uniform share; seen bytes get far more.
    assert partial.min() >= 0.1 / 65536 * (1 - 1e-12)
    assert partial[tails.index(PARTIAL + b"ne")] > 100 / 65536
    assert prior.bits_per_byte([b"the"]) < 8.0 < prior.bits_per_byte([b"\xfe\xff"])


def test_tail_levels_spend_each_budget_exactly() -> None:
    # Weighted Bonferroni: sum over a slot's partial tails of 1 - Phi(z_t) is false_children
    # (and false_children + reserve for the reserve levels), over its complete tails pending,
    # whatever the prior, wherever no level is clipped at 0 (levels interpolated within 2e-5 in z:
    # relative 1e-4 in 1 - Phi at z <= 5).
    spec = _spec()
    th = _thresholds(spec, 0.25, 2.0, 100.0, None)
    symbols = bytes(range(256))
    tails = _slot_tails(symbols)
    uniform = TailPrior(symbols).weights(tails)
    ext, low, wait = _tail_levels(tails, uniform, th, 0.25, 2.0, 100.0)
    assert np.allclose(ext[:65536], th.extend, atol=1e-4) and np.allclose(low[:65536], th.reserve, atol=1e-4)
    assert np.allclose(wait[65536:], th.pending, atol=1e-4)
    prior = TailPrior(symbols, mix=0.1)
    prior.learn([b"the", b"search", b"engine", b"news.com", b"mail."] * 20)
    ext, low, wait = _tail_levels(tails, prior.weights(tails), th, 0.25, 2.0, 100.0)
    assert _sf(ext[:65536]).sum() == pytest.approx(0.25, rel=1e-3)
    assert _sf(low[:65536]).sum() == pytest.approx(2.25, rel=1e-3)
    assert np.isinf(ext[65536:]).all() and np.isinf(wait[:65536]).all()
    # Complete levels are capped at the uniform z_extend and at z = 0 (a share above 1/2):
    # the budget spent is at most pending.
    assert _sf(wait[65536:]).sum() <= 100.0 * (1 + 1e-9)
    assert ext[tails.index(PARTIAL + b"ne")] < th.extend - 1.0
    assert ext[tails.index(PARTIAL + b"\xfe\xff")] > th.extend


def test_discover_checks_prior_mix_and_reports_the_prior() -> None:
    from rappor.analysis.discovery import discover, realistic_population, simulate_discovery
    from rappor.exceptions import InvalidParameterError

    params = Params(num_bloombits=128, num_hashes=1, num_cohorts=16, prob_p=0.0, prob_q=1.0, prob_f=0.1)
    spec = DiscoverySpec(params=params, max_length=10, segment=2)
    sim = simulate_discovery(params, spec, realistic_population(200, max_length=10, rng=0), 60_000,
                             discovery_share=1.0, rng=0)
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(InvalidParameterError, match="prior_mix"):
            discover(sim.discovery, spec, prior_mix=bad)
    slots = discover(sim.discovery, spec).diagnostics["slots"]
    # Slot 0 has no prior; once fragments were fitted, the later slots use one (perplexity of q,
    # far below the 256 bytes of the alphabet for these host- and word-like values).
    assert "prior_perplexity" not in slots[0]
    used = [row["prior_perplexity"] for row in slots if "prior_perplexity" in row]
    assert used and max(used) < 64
    # With prior_mix=1 every tail has one level, as before the prior.
    alike = discover(sim.discovery, spec, prior_mix=1.0).diagnostics["slots"]
    assert all("prior_perplexity" not in row for row in alike)


def test_discover_learns_its_prior_from_known_values_before_slot_0() -> None:
    from rappor.analysis.discovery import discover, realistic_population, simulate_discovery

    params = Params(num_bloombits=128, num_hashes=1, num_cohorts=16, prob_p=0.0, prob_q=1.0, prob_f=0.1)
    spec = DiscoverySpec(params=params, max_length=10, segment=2)
    sim = simulate_discovery(params, spec, realistic_population(200, max_length=10, rng=0), 60_000,
                             discovery_share=1.0, rng=0)
    known = ["www.news.com", "shop.de/cart", "mail93.org", "vidéo.fr"]
    slots = discover(sim.discovery, spec, prior_values=known).diagnostics["slots"]
    # Slot 0 uses the prior learnt from the known values alone (without them it has none): the
    # same perplexity as a TailPrior that learnt their UTF-8 bytes; str and bytes alike.
    expected = TailPrior(bytes(range(256)))
    expected.learn(v.encode("utf-8") for v in known)
    assert slots[0]["prior_perplexity"] == pytest.approx(expected.perplexity(), rel=1e-12)
    as_bytes = discover(sim.discovery, spec, prior_values=[v.encode("utf-8") for v in known]).diagnostics["slots"]
    assert [row.get("prior_perplexity") for row in as_bytes] == [row.get("prior_perplexity") for row in slots]
    # The later slots learn the fitted fragments on top of the known values.
    assert slots[1]["prior_perplexity"] != pytest.approx(expected.perplexity(), rel=1e-6)
    assert "prior_perplexity" not in discover(sim.discovery, spec).diagnostics["slots"][0]


def test_known_values_lower_the_levels_of_their_rare_bytes() -> None:
    # The measured case (notes 6.18): fragments of a flat population's first bytes leave a digit or
    # '/' at the uniform floor; a list of values of the same kind gives them their share, so a
    # tail such as 't9' or '/n' needs a lower z than with the first bytes alone, and a tail of bytes
    # neither holds a higher one (weighted Bonferroni: the budget is moved, not added).
    spec = _spec()
    th = _thresholds(spec, 0.25, 2.0, 100.0, None)
    symbols = bytes(range(256))
    tails = _slot_tails(symbols)
    first = [b"ww", b"ne", b"sh", b"ma", b"bl", b"ap", b"st", b"go", b"le", b"mo"] * 3
    alone = TailPrior(symbols)
    alone.learn(first)
    with_list = TailPrior(symbols)
    with_list.learn(first + [b"hit93.org", b"go.fr/news", b"net15.de", b"shop.io/cart", b"www.fast36.com"] * 4)
    ext_alone = _tail_levels(tails, alone.weights(tails), th, 0.25, 2.0, 100.0)[0]
    ext_list = _tail_levels(tails, with_list.weights(tails), th, 0.25, 2.0, 100.0)[0]
    for tail in (b"t9", b"/n", b"o/"):
        assert ext_list[tails.index(PARTIAL + tail)] < ext_alone[tails.index(PARTIAL + tail)] - 0.3
    assert ext_list[tails.index(PARTIAL + b"\xfe\xff")] > ext_alone[tails.index(PARTIAL + b"\xfe\xff")]
    assert _sf(ext_list[:65536]).sum() == pytest.approx(0.25, rel=1e-3)


@pytest.mark.slow
def test_discover_with_known_values_on_noise_holds_its_level() -> None:
    # The worst list for the control: the very values clients hold, none of them frequent (20,000
    # values of 1/20,000 each).  The known values hold no report, so every level still spends its
    # budget on tails independent of the slot it tests, and 'significant' stays Bonferroni at 0.05
    # over the values pooled: each run has at most a 5% chance of a false value, and over 6 seeds 3
    # or more runs with one have probability below 0.003 (binomial).
    from rappor.analysis.discovery import discover, simulate_discovery
    from rappor.simulation import Population

    f = 2.0 / (1.0 + np.exp(2.0))
    params = Params(num_bloombits=128, num_hashes=1, num_cohorts=16, prob_p=0.0, prob_q=1.0, prob_f=f)
    spec = DiscoverySpec(params=params, max_length=8, segment=2)
    sim_params = Params(num_bloombits=64, num_hashes=1, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=f)
    uniform = Population(strings=tuple(f"u{i:05d}" for i in range(20_000)), probabilities=np.ones(20_000))
    runs_with_false = 0
    for seed in range(6):
        sim = simulate_discovery(sim_params, spec, uniform, 100_000, discovery_share=1.0, rng=seed)
        res = discover(sim.discovery, spec, prior_values=uniform.strings)
        assert res.diagnostics["slots"][0]["prior_perplexity"] < 12  # 'u' and the ten digits
        runs_with_false += bool(res.significant.any())
    assert runs_with_false <= 2
