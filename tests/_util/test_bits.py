"""Bit layouts (rappor._util.bits): google/rappor bit strings, packed words and bytes."""

from __future__ import annotations

import numpy as np
import pytest

from rappor._util.bits import (
    BitStringError,
    bits_to_bitstrings,
    bitstring_codes_to_bits,
    bitstrings_to_bits,
    num_words,
    pack_bits,
    pack_bytes,
    unpack_bits,
    unpack_bytes,
)

KS = [1, 7, 8, 9, 16, 63, 64, 65, 127, 128, 130, 4096]


@pytest.mark.parametrize("k", KS)
def test_pack_unpack_round_trip(k: int) -> None:
    bits = np.random.default_rng(k).integers(0, 2, size=(37, k), dtype=np.uint8)
    words = pack_bits(bits)
    assert words.shape == (37, num_words(k)) and words.dtype == np.uint64
    np.testing.assert_array_equal(unpack_bits(words, k), bits)
    np.testing.assert_array_equal(pack_bits(bits[3]), words[3])  # 1-d form
    np.testing.assert_array_equal(unpack_bits(words[3], k), bits[3])


@pytest.mark.parametrize("k", KS)
def test_packed_word_layout(k: int) -> None:
    # Bit j lives in word j // 64 at position j % 64; nothing above bit k-1 is set.
    for j in {0, k // 2, k - 1}:
        bits = np.zeros(k, dtype=np.uint8)
        bits[j] = 1
        words = pack_bits(bits)
        expected = np.zeros(num_words(k), dtype=np.uint64)
        expected[j // 64] = np.uint64(1) << np.uint64(j % 64)
        np.testing.assert_array_equal(words, expected)
    if k % 64:
        top = pack_bits(np.ones(k, dtype=np.uint8))[-1]
        assert int(top) == (1 << (k % 64)) - 1


def test_bitstring_order_char0_is_bit_k_minus_1() -> None:
    bits = np.zeros((1, 16), dtype=np.uint8)
    bits[0, 0] = 1  # bit 0 is the last character
    bits[0, 15] = 1  # bit 15 is the first character (google/rappor sum_bits.py)
    bits[0, 3] = 1
    assert bits_to_bitstrings(bits) == ["1000000000001001"]
    np.testing.assert_array_equal(bitstrings_to_bits(["1000000000001001"], 16), bits)


@pytest.mark.parametrize("k", KS)
def test_bitstrings_round_trip(k: int) -> None:
    bits = np.random.default_rng(k + 1).integers(0, 2, size=(20, k), dtype=np.uint8)
    strings = bits_to_bitstrings(bits)
    assert all(len(s) == k for s in strings)
    assert strings[0] == "".join(str(b) for b in bits[0][::-1])
    np.testing.assert_array_equal(bitstrings_to_bits(strings, k), bits)


def test_bitstrings_empty() -> None:
    assert bitstrings_to_bits([], 5).shape == (0, 5)
    assert bits_to_bitstrings(np.zeros((0, 5), dtype=np.uint8)) == []


@pytest.mark.parametrize(
    ("strings", "index", "message"),
    [
        (["0101", "011"], 1, "of 4 characters, found 3"),
        (["0101", "01010"], 1, "found 5"),
        (["0101", "0121"], 1, "found '2'"),
        (["01 1", "0101"], 0, "found ' '"),
        (["0101", "01é1"], 1, "found 'é'"),
    ],
)
def test_bitstrings_fail_names_the_bad_string(strings: list[str], index: int, message: str) -> None:
    with pytest.raises(BitStringError, match=message) as err:
        bitstrings_to_bits(strings, 4)
    assert err.value.index == index
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("k", KS)
def test_pack_bytes_round_trip_and_layout(k: int) -> None:
    bits = np.random.default_rng(k + 2).integers(0, 2, size=k, dtype=np.uint8)
    data = pack_bytes(bits)
    assert len(data) == (k + 7) // 8
    for j in (0, k - 1):
        assert (data[j // 8] >> (j % 8)) & 1 == bits[j]
    np.testing.assert_array_equal(unpack_bytes(data, k), bits)
    # The bytes are the low bytes of the little-endian words.
    assert pack_bits(bits).astype("<u8").tobytes()[: len(data)] == data


def test_unpack_bytes_fail_wrong_length_or_stray_bits() -> None:
    with pytest.raises(ValueError, match="expected 2 bytes for 9 bits, found 1"):
        unpack_bytes(b"\x01", 9)
    with pytest.raises(ValueError, match="bits above bit 8 are set"):
        unpack_bytes(b"\x00\x02", 9)


@pytest.mark.parametrize("k", [1, 64, 65])
def test_pack_unpack_empty(k: int) -> None:
    words = pack_bits(np.zeros((0, k), dtype=np.uint8))
    assert words.shape == (0, num_words(k))
    assert unpack_bits(words, k).shape == (0, k)


@pytest.mark.parametrize("k", [1, 7, 64, 65, 1000])
def test_bitstring_codes_to_bits_is_the_bit_string_order(k: int) -> None:
    # The vectorized reader converts byte codes with this; it must agree with bitstrings_to_bits.
    rng = np.random.default_rng(k)
    strings = ["".join(rng.choice(["0", "1"], k)) for _ in range(5)]
    codes = np.frombuffer("".join(strings).encode(), dtype=np.uint8).reshape(5, k)
    assert np.array_equal(bitstring_codes_to_bits(codes), bitstrings_to_bits(strings, k))
    assert (bitstring_codes_to_bits(np.full((1, k), ord("x"), dtype=np.uint8)) > 1).all()
