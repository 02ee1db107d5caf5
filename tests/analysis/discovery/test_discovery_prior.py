"""The search's learnt prior over tails (rappor.analysis.discovery._prior) and its per-tail levels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from rappor.analysis.discovery._prior import TailPrior
from rappor.analysis.discovery._search import _tail_levels, _tails, _thresholds
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
