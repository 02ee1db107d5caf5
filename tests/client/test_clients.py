"""Many clients at once: :func:`rappor.client.encode_clients` against the Encoder, the reference and the rates.

Statistical tests use fixed seeds and ``scipy.stats`` tests at a significance of 1e-6
(Bonferroni-split where several are combined).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from rappor import Encoder, InvalidParameterError, Params, encode_clients
from rappor.client import client_secret
from rappor.client._hashing import bloom_filter

SECRET = bytes(range(32))
ALPHA = 1e-6


def _params(k: int = 32, h: int = 2, m: int = 8, p: float = 0.25, q: float = 0.75, f: float = 0.5) -> Params:
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


@pytest.mark.parametrize(("p", "q", "f"), [(0.5, 0.75, 0.5), (0.1, 0.9, 0.2), (0.35, 0.65, 0.0)])
def test_combined_rates_p11_p01(p: float, q: float, f: float) -> None:
    # Through the fast path: P(report 1 | Bloom 1) = p11, P(report 1 | Bloom 0) = p01.
    params = _params(k=16, h=2, m=4, p=p, q=q, f=f)
    key = bytes(range(16, 48))
    n = 6000
    ids = [f"c{i}" for i in range(n)]
    values = [f"v{i % 5}" for i in range(n)]
    batch = encode_clients(params, key, ids, values, rng=7)
    bits = batch.bits()
    bloom = np.array([bloom_filter(v, int(c), params) for v, c in zip(values, batch.cohorts)])
    on, off = bloom == 1, bloom == 0
    assert stats.binomtest(int(bits[on].sum()), int(on.sum()), params.p11).pvalue > ALPHA / 3
    assert stats.binomtest(int(bits[off].sum()), int(off.sum()), params.p01).pvalue > ALPHA / 3


def test_cohort_fast_path_matches_encoder() -> None:
    params = _params(m=64)
    key = os.urandom(32)
    ids = [f"id{i}" for i in range(200)]
    batch = encode_clients(params, key, ids, ["x"] * 200, rng=0)
    assert batch.cohorts.tolist() == [Encoder(params, client_secret(key, i)).cohort for i in ids]


def test_encode_clients_prr_matches_encoder() -> None:
    # With p=0, q=1 the IRR equals the PRR, so the fast path can be compared bit for bit.
    params = _params(k=40, h=3, m=16, p=0.0, q=1.0, f=0.6)
    key = bytes(range(40))
    ids = ["a", "b", "a", "ü", "c"]
    values = ["x", "y", "x", b"\x00", ""]
    batch = encode_clients(params, key, ids, values)
    for i, (cid, value) in enumerate(zip(ids, values)):
        trace = Encoder(params, client_secret(key, cid)).trace(value)
        np.testing.assert_array_equal(batch.bits()[i], trace.prr)
        np.testing.assert_array_equal(batch.bits()[i], trace.irr)
        assert batch.cohorts[i] == Encoder(params, client_secret(key, cid)).cohort


@pytest.mark.parametrize("m", [1, 7, 64, 2**32])
def test_encode_clients_matches_reference(m: int, reference: SimpleNamespace) -> None:
    # The inlined derivations of the fast path against the plain hmac/hashlib reference,
    # for 120 reports of 50 clients (repeats included) and values of every kind.
    params = _params(k=33, h=2, m=m, p=0.0, q=1.0, f=0.7)
    key = b"reference key 0123456789"
    ids = [f"c{(i * 7) % 50}" for i in range(120)]
    values: list[str | bytes] = [f"v{i % 9}" if i % 4 else bytes([i]) * (i % 5) for i in range(120)]
    batch = encode_clients(params, key, ids, values)
    for i, (cid, value) in enumerate(zip(ids, values)):
        secret = hmac.new(key, b"rappor/client/" + cid.encode(), hashlib.sha256).digest()
        cohort = reference.cohort(secret, m)
        assert batch.cohorts[i] == cohort
        data = value.encode() if isinstance(value, str) else value
        bloom = bloom_filter(data, cohort, params).tolist()
        assert batch.bits()[i].tolist() == reference.prr(secret, cohort, data, bloom, params.f, params.h)


def test_encode_clients_fail_client_id_names_index() -> None:
    with pytest.raises(InvalidParameterError, match="Got a bytes at index 2"):
        encode_clients(_params(), SECRET, ["a", "b", b"c", "a"], ["x"] * 4)  # type: ignore[list-item]


def test_encode_clients_fail_length_mismatch() -> None:
    with pytest.raises(InvalidParameterError, match="'values' parameter of encode_clients"):
        encode_clients(_params(), SECRET, ["a", "b"], ["x"])


def test_encode_clients_fail_client_id_not_str() -> None:
    with pytest.raises(InvalidParameterError, match="'client_ids' parameter of encode_clients must hold str"):
        encode_clients(_params(), SECRET, [1], ["x"])  # type: ignore[list-item]


def test_encode_clients_fail_short_key() -> None:
    with pytest.raises(InvalidParameterError, match="'key' parameter of encode_clients"):
        encode_clients(_params(), b"short", ["a"], ["x"])


def test_encode_clients_empty() -> None:
    assert len(encode_clients(_params(), SECRET, [], [])) == 0


@pytest.mark.parametrize("n_values", [3, 400])  # few values: one hashing table; many: per-pair hashing
def test_encode_clients_bloom_paths_agree_with_hashing(n_values: int) -> None:
    # With p=0, q=1, f=0 the report is the Bloom filter itself.
    params = _params(k=24, h=3, m=8, p=0.0, q=1.0, f=0.0)
    ids = [f"c{i}" for i in range(400)]
    values = [f"v{i % n_values}" for i in range(400)]
    batch = encode_clients(params, SECRET, ids, values)
    want = np.array([bloom_filter(v, int(c), params) for v, c in zip(values, batch.cohorts)])
    np.testing.assert_array_equal(batch.bits(), want)


@pytest.mark.slow
def test_combined_rates_per_bit_large() -> None:
    # 100,000 clients, 200 values, k=128, h=4, m=32: the report rate of every bit, pooled over
    # reports where its Bloom bit is 1 (resp. 0), is p11 (resp. p01).  Bonferroni over
    # 2 * 128 binomial tests at 1e-6 in total.
    params = _params(k=128, h=4, m=32, p=0.3, q=0.6, f=0.35)
    n = 100_000
    ids = [f"client-{i}" for i in range(n)]
    values = [f"value-{i % 200}" for i in range(n)]
    batch = encode_clients(params, b"slow test key 0123456789", ids, values, rng=2024)
    bits = batch.bits().astype(bool)
    table = {(v, c): bloom_filter(v, c, params).astype(bool) for v in set(values) for c in range(params.m)}
    bloom = np.array([table[(v, int(c))] for v, c in zip(values, batch.cohorts)])
    for j in range(params.k):
        on = bloom[:, j]
        assert stats.binomtest(int(bits[on, j].sum()), int(on.sum()), params.p11).pvalue > ALPHA / 256
        assert stats.binomtest(int(bits[~on, j].sum()), int((~on).sum()), params.p01).pvalue > ALPHA / 256
