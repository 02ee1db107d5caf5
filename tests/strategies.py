"""Hypothesis strategies shared by the property tests (one module, as in attrs' ``tests/strategies.py``)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from rappor import Aggregate, Params, ReportBatch

__all__ = ["aggregates", "candidate_lists", "mutated", "params", "report_batches", "same_params_aggregates"]

_PROBS = st.sampled_from([0.0, 0.1, 0.25, 0.3333333333333333, 0.5, 0.75, 0.9, 1.0])


@st.composite
def params(draw: st.DrawFn, max_k: int = 70, max_m: int = 6) -> Params:
    """Valid parameters: ``(1 - f)(q - p) != 0``; odd k and k > 64 included (partial words)."""
    k = draw(st.integers(1, max_k))
    h = draw(st.integers(1, min(k, 4)))
    m = draw(st.integers(1, max_m))
    p = draw(st.one_of(_PROBS, st.floats(0, 1)))
    q = draw(st.one_of(_PROBS, st.floats(0, 1)).filter(lambda x: x != p))
    f = draw(st.one_of(_PROBS, st.floats(0, 1)).filter(lambda x: x != 1.0))
    assume((1.0 - f) * (q - p) != 0.0)  # otherwise Params refuses them (no information)
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


@st.composite
def report_batches(draw: st.DrawFn, p: Params, max_n: int = 40) -> ReportBatch:
    """Random reports (any bits) for ``p``."""
    n = draw(st.integers(0, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=(n, p.num_bloombits))
    return ReportBatch.from_bits(p, rng.integers(0, p.num_cohorts, size=n), bits)


@st.composite
def aggregates(draw: st.DrawFn, p: Params, max_reports: int = 2**60) -> Aggregate:
    """Aggregates with up to ``max_reports`` reports in all (so three of them still fit in int64)."""
    m, k = p.num_cohorts, p.num_bloombits
    seed = draw(st.integers(0, 2**32 - 1))
    big = draw(st.booleans())
    rng = np.random.default_rng(seed)
    n = rng.integers(0, max_reports // m if big else 50, size=m, dtype=np.int64, endpoint=True)
    ones = (rng.random((m, k)) * (n[:, None] + 1)).astype(np.int64)
    ones = np.minimum(ones, n[:, None])
    return Aggregate(params=p, counts=np.column_stack([n, ones]))


@st.composite
def same_params_aggregates(draw: st.DrawFn, count: int = 3) -> tuple[Aggregate, ...]:
    """``count`` aggregates sharing one set of parameters."""
    p = draw(params(max_k=20, max_m=4))
    return tuple(draw(aggregates(p)) for _ in range(count))


_CANDIDATE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\ufeff"),
    min_size=1, max_size=12,
).filter(lambda s: s.strip() != "")


def candidate_lists(max_size: int = 12) -> st.SearchStrategy[list[str]]:
    """Distinct, non-blank candidate strings without line breaks (commas, quotes, spaces allowed)."""
    return st.lists(_CANDIDATE_TEXT, min_size=1, max_size=max_size, unique=True)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few random byte edits (replace, insert, delete, truncate)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(out), 1) - 1)) if out else 0
        byte = draw(st.sampled_from([0, 9, 10, 13, 34, 44, 45, 46, 48, 49, 50, 59, 0x80, 0xC3, 0xEF, 0xFF]))
        if op == "replace" and out:
            out[pos] = byte
        elif op == "insert":
            out.insert(pos, byte)
        elif op == "delete" and out:
            del out[pos]
        elif op == "truncate":
            del out[pos:]
    return bytes(out)
