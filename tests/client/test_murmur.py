"""The vectorized MurmurHash3_x64_128 is bit-identical to mmh3."""

from __future__ import annotations

import mmh3
import numpy as np
import pytest

from rappor import Params
from rappor.client._murmur import murmur3_x64_128
from rappor.client._hashing import bloom_bit_indices, bloom_bits_table

SEEDS = [0, 1, 2, 127, 2**31 - 1, 2**31, 2**32 - 1, 0x9747B28C]


def _reference(keys: list[bytes], seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [[mmh3.mmh3_x64_128_utupledigest(key, seed) for seed in seeds] for key in keys]
    arr = np.array(pairs, dtype=np.uint64).reshape(len(keys), len(seeds), 2)
    return arr[:, :, 0], arr[:, :, 1]


@pytest.mark.parametrize("seed", range(5))
def test_murmur_matches_mmh3_every_length(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Every length 0..80 (0, 1..15 tail only, 16 exact block, ... several blocks), plus long keys.
    lengths = list(range(81)) + [127, 128, 129, 1000]
    keys = [rng.bytes(n) for n in lengths]
    seeds = SEEDS + [int(s) for s in rng.integers(0, 2**32, 8)]
    got = murmur3_x64_128(keys, seeds)
    want = _reference(keys, seeds)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_murmur_matches_mmh3_shuffled_lengths_and_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks force several chunks per length group; keys arrive in random length order.
    import rappor.client._murmur as murmur

    monkeypatch.setattr(murmur, "_CHUNK_STATES", 7)
    rng = np.random.default_rng(99)
    keys = [rng.bytes(int(n)) for n in rng.integers(0, 70, 300)]
    seeds = list(range(5))
    got = murmur3_x64_128(keys, seeds)
    want = _reference(keys, seeds)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_murmur_high_bytes_and_known_vector() -> None:
    # All-0xFF bytes exercise sign-extension bugs in the tail; "foo" with seed 0 is mmh3's own doc example.
    keys = [b"\xff" * n for n in range(40)] + [b"foo"]
    got = murmur3_x64_128(keys, [0, 42])
    want = _reference(keys, [0, 42])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_murmur_empty_inputs() -> None:
    h1, h2 = murmur3_x64_128([], [0, 1])
    assert h1.shape == h2.shape == (0, 2)
    h1, h2 = murmur3_x64_128([b"a"], [])
    assert h1.shape == (1, 0)


def test_murmur_fail_seed_out_of_range() -> None:
    with pytest.raises(ValueError, match="seeds"):
        murmur3_x64_128([b"a"], [2**32])
    with pytest.raises(ValueError, match="seeds"):
        murmur3_x64_128([b"a"], [-1])


def test_bloom_bits_table_matches_scalar_hashing() -> None:
    # The vectorized table equals the per-value mmh3 path for odd h (a half-used last block).
    params = Params(num_bloombits=128, num_hashes=3, num_cohorts=16, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    values = ["", "a", "v1", "ünïcödé", "x" * 40, b"\x00\xff"]
    table = bloom_bits_table(values, params)
    for s, value in enumerate(values):
        for c in range(params.num_cohorts):
            expected = bloom_bit_indices(value, c, num_bloombits=128, num_hashes=3)
            assert tuple(table[s, c]) == expected


@pytest.mark.parametrize("prefix", [b"", b"\x00\x00\x00\x00", b"\x01\x00\x00\x00", b"p" * 17])
def test_murmur_prefix_hashes_prefix_plus_key(prefix: bytes) -> None:
    # prefix= gives the digests of prefix + key (the Bloom blocks' uint32 prefix) without those strings.
    rng = np.random.default_rng(len(prefix))
    keys = [rng.bytes(n) for n in list(range(40)) + [100]]
    got = murmur3_x64_128(keys, SEEDS, prefix=prefix)
    want = _reference([prefix + key for key in keys], SEEDS)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
