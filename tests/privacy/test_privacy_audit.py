"""The empirical privacy audit (rappor.privacy._audit): passes on our encoders, fails on broken ones.

False alarms: ``audit_encoder`` bounds the probability that a correct encoder fails by
``significance_level`` (1e-6 here, Clopper-Pearson bounds and a union bound over every
pattern tested), so the tests asserting a pass fail spuriously with probability <= 1e-6.
The tests asserting a failure use encoders whose epsilon exceeds the claim by a wide
margin; with the fixed seeds their outcome is deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rappor import InvalidParameterError, Params
from rappor.privacy._audit import AuditSample, audit_encoder, batch_sampler, client_sampler, never_clearing_sampler
from rappor.client._hashing import bloom_filter

PARAMS = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def test_audit_real_client_passes() -> None:
    result = audit_encoder(PARAMS, encoder="client", n_pairs=1, n_samples=10_000, n_reports=10_000, rng=1)
    assert result.passed, result.to_text()
    assert {r.mechanism for r in result.rows} == {"report", "permanent"}
    assert all(r.differing_bits == 2 * PARAMS.num_hashes for r in result.rows)
    assert result.convergence is not None and result.convergence.prr_differs_at >= 1
    # The estimates land near the claims (the bound is tight for disjoint Bloom filters).
    for r in result.rows:
        assert r.epsilon_lower_bound <= r.epsilon < r.epsilon_estimate + 0.5


def test_audit_batch_encoder_passes() -> None:
    result = audit_encoder(PARAMS, encoder="batch", n_pairs=2, n_samples=40_000, rng=2)
    assert result.passed, result.to_text()
    assert [r.mechanism for r in result.rows] == ["report", "report"]
    assert result.convergence is None  # the packed encoder does not expose its PRR


def test_audit_fails_on_never_clearing_encoder() -> None:
    """A PRR that never clears a true Bloom bit breaks both epsilons; the audit says so."""
    result = audit_encoder(PARAMS, encoder="never-clearing", n_pairs=1, n_samples=10_000, n_reports=2_000, rng=3)
    assert not result.passed
    assert all(not r.passed for r in result.rows), result.to_text()
    report = next(r for r in result.rows if r.mechanism == "report")
    # Its true one-report epsilon: p11 becomes q, so 2 ln(q (1 - p01) / (p01 (1 - q))).
    true_eps = 2 * math.log(0.75 * (1 - PARAMS.p01) / (PARAMS.p01 * 0.25))
    assert report.epsilon < report.epsilon_lower_bound < true_eps
    permanent = next(r for r in result.rows if r.mechanism == "permanent")
    assert permanent.epsilon_lower_bound > PARAMS.epsilon_inf  # true value: infinite
    assert permanent.epsilon_estimate == math.inf
    assert "VIOLATED" in result.to_text() and result.to_text().endswith("FAILED")


def test_audit_fails_when_f_is_smaller_than_claimed() -> None:
    """The batch encoder run with f = 0.2 while the parameters claim f = 0.5."""
    actual = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.2)
    result = audit_encoder(PARAMS, encoder=batch_sampler(actual), n_pairs=1, n_samples=20_000, rng=4)
    assert not result.passed, result.to_text()
    assert result.rows[0].epsilon_lower_bound > PARAMS.epsilon_one


def _bloom_leaking_sampler(params: Params):  # type: ignore[no-untyped-def]
    """A broken client that skips the PRR: its IRR randomizes the Bloom filter directly."""

    def sample(value: str, n: int, rng: np.random.Generator, one_client: bool) -> AuditSample:
        bloom = bloom_filter(value, 0, params)
        u = rng.random((n, params.num_bloombits))
        irr = np.where(bloom == 1, u < params.p11, u < params.p01).astype(np.uint8)
        return AuditSample(bloom=bloom, prr=np.broadcast_to(bloom, irr.shape), irr=irr)

    return sample


def test_audit_fails_when_reports_converge_to_the_bloom_filter() -> None:
    """Fresh noise per report but no permanent response: one report looks fine, many reveal the value."""
    result = audit_encoder(PARAMS, encoder=_bloom_leaking_sampler(PARAMS), n_pairs=1, n_samples=10_000,
                           n_reports=5_000, rng=5)
    report = next(r for r in result.rows if r.mechanism == "report")
    assert report.passed  # same per-report law as RAPPOR: the one-report audit cannot see the flaw
    permanent = next(r for r in result.rows if r.mechanism == "permanent")
    assert not permanent.passed  # the "permanent" response is the Bloom filter itself: epsilon infinite
    assert result.convergence is None or not result.convergence.passed
    assert not result.passed


def test_audit_client_sampler_matches_encoder_law() -> None:
    """The audit's client sampler uses the real encoder: its PRR for one client equals Encoder.trace."""
    sample = client_sampler(PARAMS)("v1", 50, np.random.default_rng(6), True)
    assert sample.prr is not None and (sample.prr == sample.prr[0]).all()
    assert sample.irr.shape == (50, PARAMS.num_bloombits)
    assert never_clearing_sampler(PARAMS)("v1", 5, np.random.default_rng(0), False).irr.shape == (5, 8)


def test_audit_fail_bad_arguments() -> None:
    with pytest.raises(InvalidParameterError, match="'encoder' parameter of audit_encoder"):
        audit_encoder(PARAMS, encoder="nope")
    with pytest.raises(InvalidParameterError, match="'n_samples' parameter of audit_encoder"):
        audit_encoder(PARAMS, n_samples=0)
    narrow = Params(num_bloombits=3, num_hashes=2, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="2 h <= k"):
        audit_encoder(narrow)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "h", "p", "q", "f"), [(16, 2, 0.5, 0.75, 0.5), (8, 1, 0.25, 0.75, 0.25),
                                                      (32, 4, 0.4, 0.6, 0.75)])
def test_audit_large(k: int, h: int, p: float, q: float, f: float) -> None:
    params = Params(num_bloombits=k, num_hashes=h, num_cohorts=8, prob_p=p, prob_q=q, prob_f=f)
    for encoder in ("client", "batch"):
        result = audit_encoder(params, encoder=encoder, n_pairs=3, n_samples=200_000, n_reports=100_000, rng=7)
        assert result.passed, result.to_text()
    broken = audit_encoder(params, encoder="never-clearing", n_pairs=3, n_samples=200_000, rng=8)
    assert not broken.passed, broken.to_text()
