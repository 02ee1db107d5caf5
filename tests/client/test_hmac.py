"""The batched HMAC-SHA256 of the clients equals the standard library's."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from rappor.client._hmac import hmac_sha256_many, keyed_hmac_sha256
from rappor.exceptions import InvalidParameterError

KEYS = [hashlib.sha256(str(i).encode()).digest() for i in range(50)] + [b"\x00" * 32, b"\xff" * 32]
MESSAGES = [b"", b"rappor/discovery/client", b"m" * 200, bytes(range(256))]


def test_many_keys_equal_hmac_digest() -> None:
    for message in MESSAGES:
        assert hmac_sha256_many(KEYS, message) == [hmac.digest(k, message, "sha256") for k in KEYS]
    assert hmac_sha256_many([], b"x") == []


def test_many_keys_refuse_keys_of_another_length() -> None:
    with pytest.raises(InvalidParameterError, match="32 bytes"):
        hmac_sha256_many([b"short"], b"x")
    with pytest.raises(InvalidParameterError, match="32 bytes"):
        hmac_sha256_many([b"a" * 31, b"b" * 33], b"x")  # right total, wrong lengths


@pytest.mark.parametrize("key", [b"k" * 16, b"k" * 32, b"k" * 64, b"k" * 65, b"\x36" * 100, b""])
@pytest.mark.parametrize("prefix", [b"", b"rappor/client/v1"])
def test_one_key_equals_hmac_digest(key: bytes, prefix: bytes) -> None:
    mac = keyed_hmac_sha256(key, prefix)
    for message in MESSAGES:
        assert mac(message) == hmac.digest(key, prefix + message, "sha256")
