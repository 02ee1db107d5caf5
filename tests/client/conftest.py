"""Fixtures of the client's tests: a plain reference of ``docs/client.md``."""

from __future__ import annotations

import hashlib
import hmac
import struct
from types import SimpleNamespace

import pytest


def _ref_cohort(secret: bytes, m: int) -> int:
    word = int.from_bytes(hmac.new(secret, b"rappor/cohort", hashlib.sha256).digest()[:8], "big")
    return (word * m) >> 64


def _ref_prr(secret: bytes, cohort: int, value: bytes, bloom: list[int], f: float, h: int) -> list[int]:
    t = min(round(f * 2**31), 2**31)
    tag = struct.pack(">Q", len(bloom)) + struct.pack(">Q", h) + struct.pack(">I", t)  # k, h, t
    msg = b"rappor/prr/v3:" + tag + struct.pack(">I", len(secret)) + secret + struct.pack(">I", cohort) + value
    out = []
    for j, b in enumerate(bloom):
        stream = hashlib.shake_256(msg).digest(4 * (j + 1))  # an XOF: shorter outputs are prefixes
        u = struct.unpack(">I", stream[4 * j : 4 * j + 4])[0]
        out.append(1 if u < t else 0 if u < 2 * t else b)
    return out


@pytest.fixture(scope="session")
def reference() -> SimpleNamespace:
    """Independent implementations of ``docs/client.md`` (plain hmac/hashlib/struct, one bit at a time):
    ``cohort(secret, m)`` and ``prr(secret, cohort, value, bloom, f, h)`` (bloom and result as lists of bits)."""
    return SimpleNamespace(cohort=_ref_cohort, prr=_ref_prr)
