"""Where a client's randomness comes from: cohorts, PRR words, client secrets, the OS CSPRNG, golden vectors.

Statistical tests use fixed secrets and ``scipy.stats`` tests at a significance of 1e-6
(Bonferroni-split where several are combined): each fails by chance with probability at
most 1e-6.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

import rappor.client._derivations as derivations
from rappor import Encoder, InvalidParameterError, Params, encode_clients
from rappor._util.bits import bits_to_bitstrings
from rappor.client import client_secret, derive_cohort, prr_uniforms
from rappor.client._hashing import bloom_filter

GOLDEN = Path(__file__).parents[2] / "data" / "golden"
SECRET = bytes(range(32))
ALPHA = 1e-6


def _params(k: int = 32, h: int = 2, m: int = 8, p: float = 0.25, q: float = 0.75, f: float = 0.5) -> Params:
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


def _bitstring_to_list(s: str) -> list[int]:
    return [int(ch) for ch in reversed(s)]  # character 0 is bit k-1


def _rows(name: str) -> list[dict[str, str]]:
    with (GOLDEN / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_golden_client_vectors_match_library_and_reference(reference: SimpleNamespace) -> None:
    rows = _rows("client_vectors.csv")
    assert len(rows) > 50
    for row in rows:
        key, secret, m = bytes.fromhex(row["key_hex"]), bytes.fromhex(row["secret_hex"]), int(row["m"])
        assert client_secret(key, row["client_id"]) == secret
        assert hmac.new(key, b"rappor/client/" + row["client_id"].encode(), hashlib.sha256).digest() == secret
        assert derive_cohort(secret, m) == reference.cohort(secret, m) == int(row["cohort"])


def test_golden_prr_vectors_match_library_and_reference(reference: SimpleNamespace) -> None:
    rows = _rows("prr_vectors.csv")
    assert len(rows) > 100
    assert any(r["bloom"] != r["prr"] for r in rows)
    for row in rows:
        secret, value = bytes.fromhex(row["secret_hex"]), bytes.fromhex(row["value_hex"])
        k, h, m, f, cohort = int(row["k"]), int(row["h"]), int(row["m"]), float(row["f"]), int(row["cohort"])
        params = _params(k=k, h=h, m=m, f=f)
        bloom = bloom_filter(value, cohort, params)
        assert bits_to_bitstrings(bloom)[0] == row["bloom"]
        trace = Encoder(params, secret, cohort=cohort, rng=0).trace(value)
        assert bits_to_bitstrings(trace.prr)[0] == row["prr"], row
        assert reference.prr(secret, cohort, value, _bitstring_to_list(row["bloom"]), f, h) == _bitstring_to_list(row["prr"])


def test_golden_f_zero_prr_equals_bloom() -> None:
    rows = [r for r in _rows("prr_vectors.csv") if float(r["f"]) == 0.0]
    assert rows
    assert all(r["prr"] == r["bloom"] for r in rows)


def test_prr_depends_on_secret_value_cohort_and_parameters() -> None:
    params = _params(k=64, h=2, m=8, f=0.5)
    base = prr_uniforms(SECRET, 0, "v", params)
    assert base.shape == (64,)
    assert not np.array_equal(base, prr_uniforms(SECRET, 1, "v", params))
    assert not np.array_equal(base, prr_uniforms(SECRET, 0, "w", params))
    assert not np.array_equal(base, prr_uniforms(bytes(range(1, 33)), 0, "v", params))
    # Found by a tester: with v2's words shared across parameter sets, one secret's PRRs under f = 0.5 and
    # f = 0.25 (or k = 16 and 32) together gave away Bloom bits.  Every parameter that makes the PRR from
    # the words now changes them: k, h, f (not p, q, m, which the words do not meet).
    for changed in (dict(k=32), dict(h=1), dict(f=0.25)):
        other = prr_uniforms(SECRET, 0, "v", _params(**{**dict(k=64, h=2, m=8, f=0.5), **changed}))
        assert not np.array_equal(base[:other.size], other[:base.size])
    np.testing.assert_array_equal(prr_uniforms(SECRET, 0, "v", _params(k=64, h=2, m=16, f=0.5, p=0.1)), base)


def test_prr_uniforms_uniform_and_independent_across_clients() -> None:
    # u of 8000 clients (same value, same cohort), k=40: the SHAKE-256 output spans two
    # squeezes (rate 136 bytes; word 34 starts the second).  Words 0, 7, 34 and 39 are
    # uniform (KS); word 0 is independent of another client's word 0 and of the same
    # client's word 34 (2x2 "below 1/2" contingency).  Combined false failure <= 6e-6.
    secrets = [hashlib.sha256(b"client" + i.to_bytes(4, "big")).digest() for i in range(8000)]
    u = np.array([prr_uniforms(s, 0, "v", _params(k=40, h=2, m=1, f=0.5)) for s in secrets], dtype=np.float64) / 2**32
    for j in (0, 7, 34, 39):
        assert stats.kstest(u[:, j], "uniform").pvalue > ALPHA
    for a, b in ((u[:4000, 0] < 0.5, u[4000:, 0] < 0.5), (u[:, 0] < 0.5, u[:, 34] < 0.5)):
        table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
        assert stats.chi2_contingency(table).pvalue > ALPHA


@pytest.mark.parametrize("m", [7, 64])
def test_cohorts_uniform(m: int) -> None:
    # 100 clients per cohort on average; chi-square goodness of fit, false failure 1e-6.
    key = b"k" * 32
    cohorts = [derive_cohort(client_secret(key, f"client-{i}"), m) for i in range(100 * m)]
    counts = np.bincount(cohorts, minlength=m)
    assert counts.shape == (m,)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_default_irr_uses_os_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.urandom

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(derivations.os, "urandom", spy)
    enc = Encoder(_params(k=24), SECRET)
    enc.encode("v")
    assert calls == [4 * 24]
    enc.encode_batch(["a", "b"])
    assert calls[-1] == 4 * 24 * 2
    encode_clients(_params(k=24), SECRET, ["a", "b", "c"], ["x", "y", "z"])
    assert calls[-1] == 4 * 24 * 3


def test_default_irr_bits_come_from_os_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    # All-zero "random" words make every IRR bit 1 (v = 0 < round(p 2**32) and < round(q 2**32));
    # all-0xFF words make every bit 0: the output really is driven by os.urandom.
    enc = Encoder(_params(k=24), SECRET)
    monkeypatch.setattr(derivations.os, "urandom", lambda n: bytes(n))
    assert enc.encode("v").bits.tolist() == [1] * 24
    monkeypatch.setattr(derivations.os, "urandom", lambda n: b"\xff" * n)
    assert enc.encode("v").bits.tolist() == [0] * 24


def test_default_irr_never_uses_numpy_random(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("numpy randomness used on the default path")

    for name in ("default_rng", "random", "randint", "rand", "bytes", "seed"):
        monkeypatch.setattr(np.random, name, boom)
    monkeypatch.setattr(derivations, "check_rng", boom)
    enc = Encoder(_params(), SECRET)
    enc.encode("v")
    enc.encode_batch(["v", "w"])
    encode_clients(_params(), SECRET, ["a"], ["v"])


def test_rng_given_does_not_call_os_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = Encoder(_params(), SECRET, rng=np.random.default_rng(0))
    monkeypatch.setattr(derivations.os, "urandom", lambda n: pytest.fail("os.urandom called"))
    enc.encode("v")


def test_client_secret_is_hmac() -> None:
    key = b"0123456789abcdef"
    got = client_secret(key, "alice")
    assert got == hmac.new(key, b"rappor/client/alice", hashlib.sha256).digest()
    assert len(got) == 32
    assert client_secret(key, "bob") != got


def test_client_secret_fail_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="'key' parameter of client_secret"):
        client_secret(b"short", "a")
    with pytest.raises(InvalidParameterError, match="'client_id' parameter of client_secret must be a str"):
        client_secret(SECRET, b"a")  # type: ignore[arg-type]


def test_long_secret_is_hashed_as_hmac_requires(reference: SimpleNamespace) -> None:
    long_secret = bytes(range(100))  # > 64 bytes: HMAC hashes the key first (RFC 2104)
    assert derive_cohort(long_secret, 1000) == reference.cohort(long_secret, 1000)


def test_derive_cohort_fail_bad_num_cohorts() -> None:
    with pytest.raises(InvalidParameterError, match="'num_cohorts' parameter of derive_cohort"):
        derive_cohort(SECRET, 0)


def test_worked_example_in_docs_client_md() -> None:
    # The numbers printed in docs/client.md, "Worked example".
    secret = client_secret(bytes(range(32)), "alice")
    assert secret.hex() == "68ddf4f5278b3969b2c24fe62ea45ea8022a1640c025ebee9b8898a29085d81f"
    assert derive_cohort(secret, 8) == 2
    params = _params(k=16, h=2, m=8, p=0.25, q=0.75, f=0.5)
    trace = Encoder(params, secret, rng=0).trace("v1")
    assert bits_to_bitstrings(trace.bloom)[0] == "0000010000000010"
    assert bits_to_bitstrings(trace.prr)[0] == "0010110001000010"
    assert prr_uniforms(secret, 2, "v1", params)[[0, 7, 15]].tolist() == [0xC43E587E, 0x45131D33, 0xFFCB664D]
    text = (Path(__file__).parents[2] / "docs" / "client.md").read_text()
    assert secret.hex() in text and "0010110001000010" in text
    for word in ("c43e587e", "45131d33", "ffcb664d"):
        assert word in text


def test_one_secret_under_two_parameter_sets_gives_independent_prrs() -> None:
    # Found by a tester (the v2 words did not depend on the parameters): with one secret at f = 0.5 and
    # then f = 0.25, "PRR 0 then PRR 1" never happened where the Bloom bit is 0 and happened at 0.25 where it
    # is 1, so the pair gave the bit away.  Independent PRRs give (1 - f/2) * f'/2 = 0.75 * 0.125 = 0.094
    # where the bit is 0 and 0.25 * 0.875 = 0.219 where it is 1.  Over 3,000 secrets x 16 bits (about 42,000
    # zero bits: SE 0.0014) both rates are within 6 SE of those (false failure below 1e-8).
    from rappor import Encoder

    rng = np.random.default_rng(5)
    old, new = _params(k=16, h=2, m=1, f=0.5), _params(k=16, h=2, m=1, f=0.25)
    hits, totals = np.zeros(2), np.zeros(2)
    for _ in range(3000):
        secret = rng.bytes(32)
        a, b = Encoder(old, secret).trace("v1"), Encoder(new, secret).trace("v1")
        pattern = (a.prr == 0) & (b.prr == 1)
        for bit in (0, 1):
            hits[bit] += pattern[a.bloom == bit].sum()
            totals[bit] += (a.bloom == bit).sum()
    rate = hits / totals
    for bit, expected in ((0, 0.75 * 0.125), (1, 0.25 * 0.875)):
        assert abs(rate[bit] - expected) < 6 * np.sqrt(expected * (1 - expected) / totals[bit])
