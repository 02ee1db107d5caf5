"""Bloom hashing: golden vectors, an independent implementation of the spec, uniformity."""

from __future__ import annotations

import csv
import struct
from pathlib import Path

import mmh3
import numpy as np
import pytest
from scipy import stats

from rappor import InvalidParameterError, Params
from rappor._util.bits import bits_to_bitstrings
from rappor.client._hashing import bloom_bit_indices, bloom_bits, bloom_bits_table, bloom_filter, value_bytes

GOLDEN = Path(__file__).parents[2] / "data" / "golden" / "hashing_vectors.csv"

# --- An independent MurmurHash3_x64_128, written from Austin Appleby's MurmurHash3.cpp -------------
# (pure Python integers, no numpy, no mmh3) to show the spec can be implemented elsewhere.
_M64 = (1 << 64) - 1
_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    return k ^ (k >> 33)


def murmur3_x64_128_reference(data: bytes, seed: int) -> tuple[int, int]:
    """MurmurHash3_x64_128(data, seed) as two unsigned 64-bit words (h1, h2)."""
    h1 = h2 = seed & 0xFFFFFFFF
    nblocks = len(data) // 16
    for i in range(nblocks):
        k1 = int.from_bytes(data[16 * i : 16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8 : 16 * i + 16], "little")
        h1 ^= (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
        h1 = ((_rotl(h1, 27) + h2) * 5 + 0x52DCE729) & _M64
        h2 ^= (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
        h2 = ((_rotl(h2, 31) + h1) * 5 + 0x38495AB5) & _M64
    tail = data[16 * nblocks :]
    if len(tail) > 8:
        h2 ^= (_rotl((int.from_bytes(tail[8:], "little") * _C2) & _M64, 33) * _C1) & _M64
    if tail:
        h1 ^= (_rotl((int.from_bytes(tail[:8], "little") * _C1) & _M64, 31) * _C2) & _M64
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return h1, h2


def spec_indices(data: bytes, cohort: int, k: int, h: int) -> list[int]:
    """docs/hashing.md, step by step, on top of the reference MurmurHash3."""
    words: list[int] = []
    for block in range((h + 1) // 2):
        words.extend(murmur3_x64_128_reference(struct.pack("<I", block) + data, cohort))
    return [(w * k) >> 64 for w in words[:h]]


def _golden_rows() -> list[dict[str, str]]:
    with GOLDEN.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- The reference itself ------------------------------------------------------------------------


def test_reference_murmur_known_vector() -> None:
    # SMHasher's verification value for MurmurHash3_x64_128 is 0x6384BA69: hash the keys
    # {}, {0}, {0,1}, ..., {0..254} with seed 256 - len, concatenate the 16-byte digests,
    # hash that with seed 0 and read the first 4 bytes little-endian.
    digests = b"".join(
        b"".join(w.to_bytes(8, "little") for w in murmur3_x64_128_reference(bytes(range(n)), 256 - n))
        for n in range(256)
    )
    final = murmur3_x64_128_reference(digests, 0)[0].to_bytes(8, "little")
    assert int.from_bytes(final[:4], "little") == 0x6384BA69
    assert murmur3_x64_128_reference(b"foo", 42) == mmh3.mmh3_x64_128_utupledigest(b"foo", 42)
    # The empty key with seed 0 hashes to (0, 0) (every mixing step maps 0 to 0).
    assert murmur3_x64_128_reference(b"", 0) == (0, 0)


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1, 2**31, 2**32 - 1])
def test_reference_murmur_matches_mmh3_every_length(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in list(range(50)) + [64, 100, 257]:
        data = rng.bytes(n)
        assert murmur3_x64_128_reference(data, seed) == mmh3.mmh3_x64_128_utupledigest(data, seed), n


# --- Golden vectors ------------------------------------------------------------------------------


def test_golden_vectors_file_covers_the_cases() -> None:
    rows = _golden_rows()
    assert len(rows) >= 100
    assert {int(r["k"]) for r in rows} >= {8, 100, 4096}
    assert max(int(r["h"]) for r in rows) >= 16
    assert max(int(r["cohort"]) for r in rows) == 2**32 - 1


def test_golden_vectors_match_library() -> None:
    for row in _golden_rows():
        k, h, m, cohort = int(row["k"]), int(row["h"]), int(row["m"]), int(row["cohort"])
        value = bytes.fromhex(row["value_hex"])
        params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)
        want = [int(x) for x in row["indices"].split()]
        assert list(bloom_bit_indices(value, cohort, num_bloombits=k, num_hashes=h)) == want, row
        assert bloom_bits(value, cohort, params).tolist() == want
        assert bits_to_bitstrings(bloom_filter(value, cohort, params))[0] == row["bloom"]


def test_golden_vectors_match_independent_implementation() -> None:
    for row in _golden_rows():
        k, h, cohort = int(row["k"]), int(row["h"]), int(row["cohort"])
        got = spec_indices(bytes.fromhex(row["value_hex"]), cohort, k, h)
        assert got == [int(x) for x in row["indices"].split()], row
        # The bit string, built by hand: character 0 is bit k-1.
        chars = ["0"] * k
        for j in got:
            chars[k - 1 - j] = "1"
        assert "".join(chars) == row["bloom"]


def test_golden_str_values_are_utf8() -> None:
    rows = _golden_rows()
    hexes = {r["value_hex"] for r in rows}
    assert "héllo wörld".encode().hex() in hexes
    row = next(r for r in rows if r["value_hex"] == "héllo wörld".encode().hex())
    got = bloom_bit_indices("héllo wörld", int(row["cohort"]), num_bloombits=int(row["k"]), num_hashes=int(row["h"]))
    assert list(got) == [int(x) for x in row["indices"].split()]


# --- Agreement between the scalar and the table paths --------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_bloom_bits_table_matches_bloom_bits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, h, m = int(rng.integers(1, 300)), 0, int(rng.integers(1, 9))
    h = int(rng.integers(1, min(k, 16) + 1))
    params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    values = [rng.bytes(int(n)) for n in rng.integers(0, 40, 25)]
    table = bloom_bits_table(values, params)
    for s, value in enumerate(values):
        for c in range(m):
            assert table[s, c].tolist() == bloom_bits(value, c, params).tolist()


@pytest.mark.parametrize(("n_values", "m", "h", "batch"), [(1, 1, 7, 4), (3, 5, 40, 6), (64, 1, 3, 1 << 20),
                                                           (65, 1, 3, 1 << 20), (200, 3, 9, 700), (2, 2, 1, 1)])
def test_bloom_bits_table_every_path_and_batch_matches_bloom_bits(n_values: int, m: int, h: int, batch: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Few (value, cohort) pairs are hashed by mmh3 one pair at a time, many by the vectorized
    # MurmurHash3; words come in batches of hashes (odd h: the last block gives one word).
    import rappor.client._hashing as hashing

    monkeypatch.setattr(hashing, "_WORDS_PER_BATCH", batch)
    params = Params(num_bloombits=97, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    values = [f"v{i}" for i in range(n_values)]
    table = bloom_bits_table(values, params)
    assert table.shape == (n_values, m, h)
    for s, value in enumerate(values):
        for c in range(m):
            assert table[s, c].tolist() == list(bloom_bit_indices(value, c, num_bloombits=97, num_hashes=h))
    from rappor.client._hashing import split_hash_words

    words = split_hash_words([b"ab", b"c"], [0, 1], h, tail=True)
    expected = [[list(_words_of(b"rappor/discovery/tail\x00" + part, c, h)) for c in (0, 1)] for part in (b"ab", b"c")]
    assert words.tolist() == expected


def _words_of(data: bytes, seed: int, h: int) -> list[int]:
    """Words w_0 .. w_{h-1} of the module docstring, straight from mmh3."""
    words: list[int] = []
    for block in range((h + 1) // 2):
        words.extend(mmh3.mmh3_x64_128_utupledigest(struct.pack("<I", block) + data, seed))
    return words[:h]


def test_bloom_bits_table_many_hashes_of_one_value_is_fast(tmp_path: Path) -> None:
    # One candidate with h = k = 10**6 took 52 s: one vectorized MurmurHash3 call (about 100 us
    # whatever its size) per pair of hashes, and one reduction per hash. Now about 1 s. Run in a
    # child with a 30 s limit (a hang guard, not a benchmark); its map row is checked against mmh3.
    import os
    import subprocess
    import sys

    code = (
        "from rappor import Params, hash_candidates\n"
        "from rappor.formats._map import write_map\n"
        "import sys\n"
        "p = Params(num_bloombits=10**6, num_hashes=10**6, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)\n"
        "write_map(hash_candidates(['onlyone'], p), sys.argv[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    try:
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "map.csv")], check=True, timeout=30, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("hashing one candidate with h = k = 10**6 took more than 30 s")
    row = (tmp_path / "map.csv").read_text().rstrip("\n").split(",")
    bits = {(w * 10**6) >> 64 for w in _words_of(b"onlyone", 0, 10**6)}
    assert row[0] == "onlyone" and set(map(int, row[1:])) == {b + 1 for b in bits}


# --- Uniformity and independence (chi-square; false-failure probability 1e-6 per test) -----------


def _indices_table(k: int, h: int, m: int, n_values: int) -> np.ndarray:
    params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    values = [f"value-{i}" for i in range(n_values)]
    return bloom_bits_table(values, params)  # (S, m, h)


@pytest.mark.parametrize(("k", "h", "n_values"), [(4096, 16, 8192), (1000, 2, 30000), (3, 1, 30000)])
def test_bit_indices_uniform(k: int, h: int, n_values: int) -> None:
    # Every index is an independent uniform draw from [0, k) under the spec; expected count per
    # cell >= 32, so the chi-square approximation holds.  P(false failure) = 1e-6.
    idx = _indices_table(k, h, 1, n_values)[:, 0, :]
    counts = np.bincount(idx.ravel(), minlength=k)
    assert stats.chisquare(counts).pvalue > 1e-6
    # Each hash function on its own is uniform too (k=4096 would leave 2 per cell: pool by 64).
    for i in range(h):
        col = np.bincount(idx[:, i], minlength=k)
        if k > 1000:
            col = col.reshape(64, -1).sum(axis=1)
        assert stats.chisquare(col).pvalue > 1e-6 / h


def test_uniformity_check_has_power_against_modulo_bias() -> None:
    # The same chi-square check rejects a biased reduction of the same hash words: taking the
    # low 12 bits mod 3000 doubles the weight of indices below 1096 (what "no modulo bias"
    # rules out).  Shows the test above can fail.
    words = [mmh3.mmh3_x64_128_utupledigest(f"value-{i}".encode(), 0)[0] for i in range(60000)]
    biased = np.array([(w & 0xFFF) % 3000 for w in words])
    assert stats.chisquare(np.bincount(biased, minlength=3000)).pvalue < 1e-6
    unbiased = np.array([(w * 3000) >> 64 for w in words])
    assert stats.chisquare(np.bincount(unbiased, minlength=3000)).pvalue > 1e-6


def test_bit_indices_independent_across_cohorts() -> None:
    # Index of hash 0 in cohort 0 vs cohort 1 for the same values: a 16 x 16 contingency table
    # (expected 78 per cell) with no dependence.  P(false failure) = 1e-6.
    idx = _indices_table(16, 1, 2, 20000)
    table = np.zeros((16, 16), dtype=np.int64)
    np.add.at(table, (idx[:, 0, 0], idx[:, 1, 0]), 1)
    assert stats.chi2_contingency(table).pvalue > 1e-6
    # Equal indices happen with probability 1/16 only (binomial test).
    same = int((idx[:, 0, 0] == idx[:, 1, 0]).sum())
    assert stats.binomtest(same, len(idx), 1 / 16).pvalue > 1e-6


def test_bit_indices_independent_between_hashes() -> None:
    # Hash 0 and hash 1 (the two words of one MurmurHash3 call) are independent.
    idx = _indices_table(16, 2, 1, 20000)[:, 0, :]
    table = np.zeros((16, 16), dtype=np.int64)
    np.add.at(table, (idx[:, 0], idx[:, 1]), 1)
    assert stats.chi2_contingency(table).pvalue > 1e-6


# --- Bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cohort", [-1, 4, 1.0, "0", True, None])
def test_bloom_bits_fail_bad_cohort(params: Params, cohort: object) -> None:
    with pytest.raises(InvalidParameterError, match="'cohort' parameter"):
        bloom_bits("v", cohort, params)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1, None, 1.5, ["a"]])
def test_value_bytes_fail_not_str_or_bytes(value: object) -> None:
    with pytest.raises(InvalidParameterError, match="must be str or bytes"):
        value_bytes(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["\ud800", "ab\udfff", "\udc80x"])
def test_value_bytes_fail_lone_surrogate(value: str, params: Params) -> None:
    """UTF-8 has no form for a lone surrogate: the package's error, never UnicodeEncodeError."""
    with pytest.raises(InvalidParameterError, match=f"lone surrogate U\\+{ord(value.strip('abx')):04X}"):
        value_bytes(value)
    with pytest.raises(InvalidParameterError, match="encodable as UTF-8"):
        bloom_bits_table(["fine", value], params)


def test_value_bytes_exact_no_normalization() -> None:
    assert value_bytes("A ") == b"A "
    assert value_bytes("é") == b"\xc3\xa9"
    assert value_bytes(bytearray(b"\xff")) == b"\xff"


def test_worked_example_in_docs_hashing_md() -> None:
    # The numbers printed in docs/hashing.md, "Worked example".
    assert mmh3.mmh3_x64_128_utupledigest(b"\x00\x00\x00\x00v1", 0) == (0x7E359E9DFBCFA484, 0x71CAF577223F8E54)
    assert bloom_bit_indices("v1", 0, num_bloombits=16, num_hashes=2) == (7, 7)
    assert bloom_bit_indices("v1", 1, num_bloombits=16, num_hashes=2) == (4, 15)
    assert bloom_bit_indices("v1", 2, num_bloombits=16, num_hashes=2) == (1, 10)
