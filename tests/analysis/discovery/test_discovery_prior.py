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
