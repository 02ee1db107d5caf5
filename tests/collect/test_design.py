"""rappor.collect._design: candidate maps built by hashing."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rappor import CandidateMap, InvalidParameterError, Params, hash_candidates
from rappor.collect import _design as design
from rappor.client._hashing import bloom_bits


def _reference_matrix(strings: list[str], params: Params) -> sp.csc_matrix:
    """The map from its definition: a 1 at row ``c * k + bit`` for every hash of every cohort."""
    k, m = params.num_bloombits, params.num_cohorts
    dense = np.zeros((m * k, len(strings)))
    for j, s in enumerate(strings):
        for c in range(m):
            dense[c * k + bloom_bits(s, c, params), j] = 1.0
    return sp.csc_matrix(dense)


@pytest.mark.parametrize("block", [1, 7, 8192])
def test_hash_candidates_matches_definition(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Blocks of any size, and hashes that collide on one bit (k=4, h=3: most cohorts)."""
    monkeypatch.setattr(design, "_HASH_BLOCK", block)
    params = Params(num_bloombits=4, num_hashes=3, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    strings = [f"s{i}" for i in range(23)] + ["", "é ünïcode"]
    cmap = hash_candidates(strings, params)
    ref = _reference_matrix(strings, params)
    got = cmap.matrix
    assert got.format == "csc" and got.dtype == np.float64 and got.has_canonical_format
    assert (got != ref).nnz == 0
    assert np.all(got.data == 1.0)
    lengths = np.diff(got.indptr)
    assert lengths.min() >= params.num_cohorts and lengths.max() <= params.num_cohorts * params.num_hashes
    assert lengths.min() < params.num_cohorts * params.num_hashes  # collisions happened and were merged


def test_hash_candidates_equals_validated_constructor() -> None:
    """The copy-free path gives the same map as the public, validating constructor."""
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    strings = [f"v{i}" for i in range(100)]
    fast = hash_candidates(strings, params)
    slow = CandidateMap(params=params, strings=strings, matrix=_reference_matrix(strings, params))
    assert fast.strings == slow.strings and (fast.matrix != slow.matrix).nnz == 0


def test_hash_candidates_empty_and_duplicates() -> None:
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    empty = hash_candidates([], params)
    assert empty.matrix.shape == (16, 0) and len(empty) == 0
    with pytest.raises(InvalidParameterError, match="'b' is repeated"):
        hash_candidates(["a", "b", "b"], params)


def test_hash_candidates_str_and_its_utf8_bytes_are_one_candidate() -> None:
    """``"a"`` and ``b"a"`` set the same bits: a repeat (an error, as for ``["a", "a"]``), not two columns."""
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError,
                       match=r"'a' \(index 0\) and b'a' \(index 1\) are the same candidate \(a str is hashed as"):
        hash_candidates(["a", b"a"], params)  # type: ignore[list-item]
    with pytest.raises(InvalidParameterError, match=r"'é' \(index 1\) and b'\\xc3\\xa9' \(index 2\)"):
        hash_candidates(["x", "é", "é".encode()], params)  # type: ignore[list-item]
    with pytest.raises(InvalidParameterError, match="b'z' is repeated"):
        hash_candidates([b"z", "y", b"z"], params)  # type: ignore[list-item]
    assert len(hash_candidates(["a", b"b"], params)) == 2  # type: ignore[list-item]


def test_hash_candidates_fail_lone_surrogate() -> None:
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="lone surrogate U\\+D800 at character 1"):
        hash_candidates(["ok", "a\ud800"], params)


@pytest.mark.parametrize("h", [1, 2, 3])
def test_sort_last_axis_equals_numpy_sort(h: int) -> None:
    table = np.random.default_rng(h).integers(0, 8, size=(50, 7, h)).astype(np.int32)
    want = np.sort(table, axis=2)
    design._sort_last_axis(table)
    np.testing.assert_array_equal(table, want)
