"""The client: cohorts, memoized PRR, IRR, golden vectors and the statistics of each stage.

Statistical tests use fixed seeds (or fixed secrets) and ``scipy.stats`` tests at a
significance of 1e-6 (Bonferroni-split where several are combined): each such test
fails by chance with probability at most 1e-6.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import rappor.client._encoder as encoder_module
from rappor import (
    Encoder,
    InvalidParameterError,
    Params,
    Report,
    ReportBatch,
    encode_clients,
)
from rappor.client._encoder import EncodeTrace, client_secret, derive_cohort, prr_uniforms
from rappor._util.bits import bits_to_bitstrings
from rappor.client._hashing import bloom_filter

GOLDEN = Path(__file__).parents[2] / "data" / "golden"
SECRET = bytes(range(32))
ALPHA = 1e-6


def _params(k: int = 32, h: int = 2, m: int = 8, p: float = 0.25, q: float = 0.75, f: float = 0.5) -> Params:
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


def _secrets(n: int, tag: bytes = b"client") -> list[bytes]:
    return [hashlib.sha256(tag + i.to_bytes(4, "big")).digest() for i in range(n)]


# --- Independent implementations of docs/client.md (plain hmac/hashlib/struct, one bit at a time)


def ref_cohort(secret: bytes, m: int) -> int:
    word = int.from_bytes(hmac.new(secret, b"rappor/cohort", hashlib.sha256).digest()[:8], "big")
    return (word * m) >> 64


def ref_prr(secret: bytes, cohort: int, value: bytes, bloom: list[int], f: float) -> list[int]:
    t = min(round(f * 2**31), 2**31)
    msg = b"rappor/prr/v2" + struct.pack(">I", len(secret)) + secret + struct.pack(">I", cohort) + value
    out = []
    for j, b in enumerate(bloom):
        stream = hashlib.shake_256(msg).digest(4 * (j + 1))  # an XOF: shorter outputs are prefixes
        u = struct.unpack(">I", stream[4 * j : 4 * j + 4])[0]
        out.append(1 if u < t else 0 if u < 2 * t else b)
    return out


def _bitstring_to_list(s: str) -> list[int]:
    return [int(ch) for ch in reversed(s)]  # character 0 is bit k-1


# --- Golden vectors ------------------------------------------------------------------------------


def _rows(name: str) -> list[dict[str, str]]:
    with (GOLDEN / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_golden_client_vectors_match_library_and_reference() -> None:
    rows = _rows("client_vectors.csv")
    assert len(rows) > 50
    for row in rows:
        key, secret, m = bytes.fromhex(row["key_hex"]), bytes.fromhex(row["secret_hex"]), int(row["m"])
        assert client_secret(key, row["client_id"]) == secret
        assert hmac.new(key, b"rappor/client/" + row["client_id"].encode(), hashlib.sha256).digest() == secret
        assert derive_cohort(secret, m) == ref_cohort(secret, m) == int(row["cohort"])


def test_golden_prr_vectors_match_library_and_reference() -> None:
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
        assert ref_prr(secret, cohort, value, _bitstring_to_list(row["bloom"]), f) == _bitstring_to_list(row["prr"])


def test_golden_f_zero_prr_equals_bloom() -> None:
    rows = [r for r in _rows("prr_vectors.csv") if float(r["f"]) == 0.0]
    assert rows
    assert all(r["prr"] == r["bloom"] for r in rows)


# --- Secrets never leak --------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [b"", b"short", bytes(15), "a string secret long enough", None, 12345])
def test_encoder_fail_bad_secret(secret: object) -> None:
    with pytest.raises(InvalidParameterError, match="'secret' parameter of Encoder must be bytes of length >= 16") as err:
        Encoder(_params(), secret)  # type: ignore[arg-type]
    if isinstance(secret, (bytes, str)) and secret:
        assert str(secret) not in str(err.value)
        assert repr(secret) not in str(err.value)


def test_encoder_secret_not_in_repr_or_str() -> None:
    secret = b"TOP-SECRET-0123456789"
    enc = Encoder(_params(), secret)
    for text in (repr(enc), str(enc)):
        assert "TOP-SECRET" not in text
        assert secret.hex() not in text
        assert "<hidden>" in text


def test_encoder_cannot_be_pickled() -> None:
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Encoder(_params(), SECRET))


def test_encoder_accepts_bytearray_secret() -> None:
    assert Encoder(_params(), bytearray(SECRET)).cohort == Encoder(_params(), SECRET).cohort


# --- Parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cohort", [-1, 8, True, 1.0, "0"])
def test_encoder_fail_bad_cohort(cohort: object) -> None:
    with pytest.raises(InvalidParameterError, match=r"'cohort' parameter of Encoder must be an int in the range \[0, 7\]"):
        Encoder(_params(m=8), SECRET, cohort=cohort)  # type: ignore[arg-type]


def test_encoder_fail_params_not_params() -> None:
    with pytest.raises(InvalidParameterError, match="'params' parameter of Encoder must be a Params"):
        Encoder({"k": 16}, SECRET)  # type: ignore[arg-type]


def test_encoder_fail_bad_rng() -> None:
    with pytest.raises(InvalidParameterError, match="rng"):
        Encoder(_params(), SECRET, rng="seed")


def test_encoder_given_cohort_is_used() -> None:
    enc = Encoder(_params(m=8), SECRET, cohort=5)
    assert enc.cohort == 5
    assert enc.encode("v").cohort == 5


def test_encoder_derived_cohort_matches_derive_cohort() -> None:
    for secret in _secrets(20):
        assert Encoder(_params(m=7), secret).cohort == derive_cohort(secret, 7) == ref_cohort(secret, 7)


def test_encode_fail_value_not_str_or_bytes() -> None:
    with pytest.raises(InvalidParameterError, match="must be str or bytes"):
        Encoder(_params(), SECRET).encode(3)  # type: ignore[arg-type]


# --- Shapes and types ----------------------------------------------------------------------------


def test_encode_returns_report() -> None:
    rep = Encoder(_params(k=20), SECRET, rng=1).encode("v")
    assert isinstance(rep, Report)
    assert rep.num_bloombits == 20


def test_trace_is_frozen_and_readonly() -> None:
    trace = Encoder(_params(k=20), SECRET, rng=1).trace(b"v")
    assert isinstance(trace, EncodeTrace)
    for arr in (trace.bloom, trace.prr, trace.irr):
        assert arr.shape == (20,)
        assert arr.dtype == np.uint8
        assert not arr.flags.writeable
    with pytest.raises(AttributeError):
        trace.irr = trace.prr  # type: ignore[misc]
    assert "Only the cohort and" in (EncodeTrace.__doc__ or "")


def test_trace_bloom_is_the_hashing_modules() -> None:
    params = _params(k=64, h=4, m=16)
    enc = Encoder(params, SECRET)
    for value in ["a", "héllo", b"\xff"]:
        np.testing.assert_array_equal(enc.trace(value).bloom, bloom_filter(value, enc.cohort, params))


def test_str_value_is_utf8_bytes() -> None:
    enc = Encoder(_params(p=0.0, q=1.0), SECRET)
    np.testing.assert_array_equal(enc.trace("héllo").prr, enc.trace("héllo".encode()).prr)


def test_encode_batch_shape_and_cohort() -> None:
    params = _params(k=70, m=8)
    enc = Encoder(params, SECRET, cohort=3, rng=2)
    batch = enc.encode_batch(["a", "b", "a"])
    assert isinstance(batch, ReportBatch)
    assert len(batch) == 3
    assert batch.cohorts.tolist() == [3, 3, 3]
    assert batch.bits().shape == (3, 70)
    assert len(enc.encode_batch([])) == 0


# --- PRR memoization -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_prr_memoized_same_secret_and_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = _params(k=int(rng.integers(1, 200)), h=1, f=float(rng.uniform(0.05, 0.95)))
    secret, value = rng.bytes(32), rng.bytes(int(rng.integers(0, 30)))
    a = Encoder(params, secret, rng=seed).trace(value).prr
    b = Encoder(params, secret, rng=seed + 1).trace(value).prr  # new object, other IRR randomness
    c = Encoder(params, secret).trace(value).prr  # default randomness
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    batch_prr = Encoder(_params(k=params.k, h=1, p=0.0, q=1.0, f=params.f), secret).encode_batch([value] * 3).bits()
    np.testing.assert_array_equal(batch_prr, np.tile(a, (3, 1)))


def test_prr_depends_on_secret_value_and_cohort() -> None:
    k = 64
    base = prr_uniforms(SECRET, 0, "v", k)
    assert not np.array_equal(base, prr_uniforms(SECRET, 1, "v", k))
    assert not np.array_equal(base, prr_uniforms(SECRET, 0, "w", k))
    assert not np.array_equal(base, prr_uniforms(bytes(32), 0, "v", k))
    # k is a prefix: the first words do not depend on k.
    np.testing.assert_array_equal(prr_uniforms(SECRET, 0, "v", 10), base[:10])


def test_prr_uniforms_uniform_and_independent_across_clients() -> None:
    # u of 8000 clients (same value, same cohort), k=40: the SHAKE-256 output spans two
    # squeezes (rate 136 bytes; word 34 starts the second).  Words 0, 7, 34 and 39 are
    # uniform (KS); word 0 is independent of another client's word 0 and of the same
    # client's word 34 (2x2 "below 1/2" contingency).  Combined false failure <= 6e-6.
    secrets = _secrets(8000)
    u = np.array([prr_uniforms(s, 0, "v", 40) for s in secrets], dtype=np.float64) / 2**32
    for j in (0, 7, 34, 39):
        assert stats.kstest(u[:, j], "uniform").pvalue > ALPHA
    for a, b in ((u[:4000, 0] < 0.5, u[4000:, 0] < 0.5), (u[:, 0] < 0.5, u[:, 34] < 0.5)):
        table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
        assert stats.chi2_contingency(table).pvalue > ALPHA


# --- PRR, IRR and combined rates (many clients) --------------------------------------------------


@pytest.fixture(scope="module")
def traces() -> tuple[Params, np.ndarray, np.ndarray, np.ndarray]:
    """3000 clients encode "v" once: (params, bloom, prr, irr), each of shape (3000, 32)."""
    params = _params(k=32, h=2, m=8, p=0.2, q=0.7, f=0.4)
    out = [Encoder(params, s, rng=i).trace("v") for i, s in enumerate(_secrets(3000))]
    return params, np.array([t.bloom for t in out]), np.array([t.prr for t in out]), np.array([t.irr for t in out])


def test_prr_rates_given_bloom(traces: tuple[Params, np.ndarray, np.ndarray, np.ndarray]) -> None:
    # P(PRR=1 | B=1) = 1 - f/2 and P(PRR=1 | B=0) = f/2 (RAPPOR Sec. 3, step 2).
    params, bloom, prr, _ = traces
    on, off = bloom == 1, bloom == 0
    assert on.sum() > 3000  # h=2 bits per client
    assert stats.binomtest(int(prr[on].sum()), int(on.sum()), 1 - params.f / 2).pvalue > ALPHA
    assert stats.binomtest(int(prr[off].sum()), int(off.sum()), params.f / 2).pvalue > ALPHA


def test_irr_rates_given_prr(traces: tuple[Params, np.ndarray, np.ndarray, np.ndarray]) -> None:
    # P(IRR=1 | PRR=1) = q, P(IRR=1 | PRR=0) = p (RAPPOR Sec. 3, step 3).
    params, _, prr, irr = traces
    one, zero = prr == 1, prr == 0
    assert stats.binomtest(int(irr[one].sum()), int(one.sum()), params.q).pvalue > ALPHA
    assert stats.binomtest(int(irr[zero].sum()), int(zero.sum()), params.p).pvalue > ALPHA


def test_rate_checks_have_power(traces: tuple[Params, np.ndarray, np.ndarray, np.ndarray]) -> None:
    # The same tests reject a wrong rate (an encoder that swapped p and q, or ignored f).
    params, bloom, prr, irr = traces
    one = prr == 1
    assert stats.binomtest(int(irr[one].sum()), int(one.sum()), params.p).pvalue < ALPHA
    on = bloom == 1
    assert stats.binomtest(int(prr[on].sum()), int(on.sum()), 1.0).pvalue < ALPHA


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


def test_repeated_reports_average_to_prr_not_bloom() -> None:
    # One client reports one value 3000 times: bit j is 1 at rate q where PRR_j = 1 and p where
    # PRR_j = 0, whatever the Bloom bit (the PRR is fixed, so averaging cannot reveal B).
    params = _params(k=32, h=4, p=0.25, q=0.75, f=0.5)
    enc = Encoder(params, SECRET, rng=11)
    trace = enc.trace("repeated value")
    differ = np.flatnonzero(trace.prr != trace.bloom)
    assert differ.size > 0  # this secret's PRR differs from the Bloom filter on some bits
    n = 3000
    counts = enc.encode_batch(["repeated value"] * n).bits().sum(axis=0)
    for j in range(params.k):
        expected = params.q if trace.prr[j] else params.p
        assert stats.binomtest(int(counts[j]), n, expected).pvalue > ALPHA / params.k
    for j in differ:  # ... and not at the rate the Bloom bit would give
        wrong = params.q if trace.bloom[j] else params.p
        assert stats.binomtest(int(counts[j]), n, wrong).pvalue < ALPHA


@pytest.mark.parametrize("m", [7, 64])
def test_cohorts_uniform(m: int) -> None:
    # 100 clients per cohort on average; chi-square goodness of fit, false failure 1e-6.
    key = b"k" * 32
    cohorts = [derive_cohort(client_secret(key, f"client-{i}"), m) for i in range(100 * m)]
    counts = np.bincount(cohorts, minlength=m)
    assert counts.shape == (m,)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_cohort_fast_path_matches_encoder() -> None:
    params = _params(m=64)
    key = os.urandom(32)
    ids = [f"id{i}" for i in range(200)]
    batch = encode_clients(params, key, ids, ["x"] * 200, rng=0)
    assert batch.cohorts.tolist() == [Encoder(params, client_secret(key, i)).cohort for i in ids]


# --- Randomness: the default path uses the OS CSPRNG ----------------------------------------------


def test_default_irr_uses_os_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.urandom

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(encoder_module.os, "urandom", spy)
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
    monkeypatch.setattr(encoder_module.os, "urandom", lambda n: bytes(n))
    assert enc.encode("v").bits.tolist() == [1] * 24
    monkeypatch.setattr(encoder_module.os, "urandom", lambda n: b"\xff" * n)
    assert enc.encode("v").bits.tolist() == [0] * 24


def test_default_irr_never_uses_numpy_random(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("numpy randomness used on the default path")

    for name in ("default_rng", "random", "randint", "rand", "bytes", "seed"):
        monkeypatch.setattr(np.random, name, boom)
    monkeypatch.setattr(encoder_module, "check_rng", boom)
    enc = Encoder(_params(), SECRET)
    enc.encode("v")
    enc.encode_batch(["v", "w"])
    encode_clients(_params(), SECRET, ["a"], ["v"])


def test_rng_given_does_not_call_os_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = Encoder(_params(), SECRET, rng=np.random.default_rng(0))
    monkeypatch.setattr(encoder_module.os, "urandom", lambda n: pytest.fail("os.urandom called"))
    enc.encode("v")


def test_seeded_rng_is_reproducible_and_fresh_per_report() -> None:
    a = Encoder(_params(k=64), SECRET, rng=3).encode_batch(["v"] * 5).bits()
    b = Encoder(_params(k=64), SECRET, rng=3).encode_batch(["v"] * 5).bits()
    np.testing.assert_array_equal(a, b)
    assert len({row.tobytes() for row in a}) > 1  # IRRs of repeated reports differ


# --- Fast path == Encoder ------------------------------------------------------------------------


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
def test_encode_clients_matches_reference(m: int) -> None:
    # The inlined derivations of the fast path against the plain hmac/hashlib reference,
    # for 120 reports of 50 clients (repeats included) and values of every kind.
    params = _params(k=33, h=2, m=m, p=0.0, q=1.0, f=0.7)
    key = b"reference key 0123456789"
    ids = [f"c{(i * 7) % 50}" for i in range(120)]
    values: list[str | bytes] = [f"v{i % 9}" if i % 4 else bytes([i]) * (i % 5) for i in range(120)]
    batch = encode_clients(params, key, ids, values)
    for i, (cid, value) in enumerate(zip(ids, values)):
        secret = hmac.new(key, b"rappor/client/" + cid.encode(), hashlib.sha256).digest()
        cohort = ref_cohort(secret, m)
        assert batch.cohorts[i] == cohort
        data = value.encode() if isinstance(value, str) else value
        bloom = bloom_filter(data, cohort, params).tolist()
        assert batch.bits()[i].tolist() == ref_prr(secret, cohort, data, bloom, params.f)


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


# --- Client secrets and key files ----------------------------------------------------------------


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


def test_long_secret_is_hashed_as_hmac_requires() -> None:
    long_secret = bytes(range(100))  # > 64 bytes: HMAC hashes the key first (RFC 2104)
    assert derive_cohort(long_secret, 1000) == ref_cohort(long_secret, 1000)


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
    assert bits_to_bitstrings(trace.prr)[0] == "0100010000100010"
    assert prr_uniforms(secret, 2, "v1", 16)[[0, 7, 15]].tolist() == [0x9CDE5BA9, 0x5A90F25F, 0x92BC7297]
    text = (Path(__file__).parents[2] / "docs" / "client.md").read_text()
    assert secret.hex() in text and "0100010000100010" in text
    for word in ("9cde5ba9", "5a90f25f", "92bc7297"):
        assert word in text


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


def test_encoder_fail_lone_surrogates_in_values_and_ids() -> None:
    """Lone surrogates (no UTF-8 form) raise InvalidParameterError naming where, not UnicodeEncodeError."""
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    key = bytes(range(32))
    enc = Encoder(params, key, rng=0)
    for call in (lambda: enc.encode("a\ud800"), lambda: enc.encode_batch(["ok", "\udfff"]),
                 lambda: enc.trace("\ud800")):
        with pytest.raises(InvalidParameterError, match="lone surrogate U\\+D[8F]"):
            call()
    with pytest.raises(InvalidParameterError,
                       match=r"'client_id' parameter of client_secret .* lone surrogate U\+D800 at character 2"):
        client_secret(key, "ab\ud800")
    with pytest.raises(InvalidParameterError, match=r"Got client_ids\[1\], a str holding the lone surrogate U\+DC80"):
        encode_clients(params, key, ["a", "b\udc80"], ["x", "y"], rng=0)
    with pytest.raises(InvalidParameterError, match=r"Got values\[2\], a str holding the lone surrogate U\+D800"):
        encode_clients(params, key, ["a", "b", "c"], ["x", b"y", "\ud800"], rng=0)
