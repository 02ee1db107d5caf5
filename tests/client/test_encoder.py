"""The Encoder: one client's reports, its parameters, secrets that never leak, and the rates of each stage.

Statistical tests use fixed seeds (or fixed secrets) and ``scipy.stats`` tests at a
significance of 1e-6 (Bonferroni-split where several are combined): each such test
fails by chance with probability at most 1e-6.
"""

from __future__ import annotations

import hashlib
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from rappor import Encoder, InvalidParameterError, Params, Report, ReportBatch, encode_clients
from rappor.client import EncodeTrace, client_secret, derive_cohort
from rappor.client._hashing import bloom_filter

SECRET = bytes(range(32))
ALPHA = 1e-6


def _params(k: int = 32, h: int = 2, m: int = 8, p: float = 0.25, q: float = 0.75, f: float = 0.5) -> Params:
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


def _secrets(n: int, tag: bytes = b"client") -> list[bytes]:
    return [hashlib.sha256(tag + i.to_bytes(4, "big")).digest() for i in range(n)]


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


def test_encoder_derived_cohort_matches_derive_cohort(reference: SimpleNamespace) -> None:
    for secret in _secrets(20):
        assert Encoder(_params(m=7), secret).cohort == derive_cohort(secret, 7) == reference.cohort(secret, 7)


def test_encode_fail_value_not_str_or_bytes() -> None:
    with pytest.raises(InvalidParameterError, match="must be str or bytes"):
        Encoder(_params(), SECRET).encode(3)  # type: ignore[arg-type]


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


def test_seeded_rng_is_reproducible_and_fresh_per_report() -> None:
    a = Encoder(_params(k=64), SECRET, rng=3).encode_batch(["v"] * 5).bits()
    b = Encoder(_params(k=64), SECRET, rng=3).encode_batch(["v"] * 5).bits()
    np.testing.assert_array_equal(a, b)
    assert len({row.tobytes() for row in a}) > 1  # IRRs of repeated reports differ


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
