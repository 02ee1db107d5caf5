"""Tests of rappor.analysis.decoder._problem: debiasing and the grouping of identical candidate columns."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rappor.analysis.decoder import _problem


def test_column_groups_matches_brute_force():
    rng = np.random.default_rng(11)
    dense = (rng.random((30, 40)) < 0.2).astype(float)
    dense[:, 5] = dense[:, 2]
    dense[:, 17] = dense[:, 2]
    dense[:, 9] = 0.0
    rep, zero = _problem.column_groups(sp.csc_matrix(dense))
    expected = [next(i for i in range(40) if np.array_equal(dense[:, i], dense[:, j])) for j in range(40)]
    assert rep.tolist() == expected
    assert 9 in zero.tolist() and rep[17] == 2



@pytest.mark.parametrize("collide", [False, True])
def test_column_groups_weighted_blocks_and_key_collisions(monkeypatch: pytest.MonkeyPatch, collide: bool) -> None:
    """Values count (not only the pattern), blocks of columns, and keys that all collide.

    With every key forced equal the exact comparison alone must give the right groups.
    """
    rng = np.random.default_rng(12)
    dense = (rng.random((25, 60)) < 0.3) * rng.choice([1.0, 2.5], size=(25, 60))
    dense[:, 7] = dense[:, 3]
    dense[:, 40] = dense[:, 3]
    dense[:, 8] = 2.0 * (dense[:, 3] != 0)  # same pattern as column 3, other values: not equal
    dense[:, [11, 12]] = 0.0
    monkeypatch.setattr(_problem, "_GROUP_BLOCK_NNZ", 16)  # a few columns per block
    if collide:
        monkeypatch.setattr(_problem, "_wrapping_sums", lambda words, cols, n: np.zeros(n, dtype=np.uint64))
    rep, zero = _problem.column_groups(sp.csc_matrix(dense))
    expected = [next(i for i in range(60) if np.array_equal(dense[:, i], dense[:, j])) for j in range(60)]
    assert rep.tolist() == expected and rep[40] == 3 and rep[8] == 8
    assert zero.tolist() == [11, 12]



@pytest.mark.parametrize("block", [1, 3, 1 << 20])
def test_max_entries_per_row_counts_nonzeros(monkeypatch, block):
    monkeypatch.setattr(_problem, "_ROW_COUNT_BLOCK", block)
    rng = np.random.default_rng(block)
    dense = (rng.random((12, 9)) < 0.3) * rng.integers(1, 3, size=(12, 9)).astype(float)
    m = sp.csc_matrix(dense)
    m.data[::4] = 0.0  # stored zeros are not entries
    want = int((m.toarray() != 0).sum(axis=1).max())
    assert _problem.max_entries_per_row(m, stop_above=100) == want
    assert (_problem.max_entries_per_row(m) <= 1) == (want <= 1)
    assert _problem.max_entries_per_row(sp.csc_matrix((5, 3))) == 0
    assert _problem.max_entries_per_row(sp.csc_matrix(np.eye(4))) == 1


def test_weighted_design_shares_a_hashed_maps_indices():
    # hash_candidates leaves the row numbers after the map's indices, so the design does not copy
    # them; the matrix is the same as the copying path's.
    from rappor import Params, hash_candidates

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    matrix = hash_candidates([f"s{i}" for i in range(300)], params).matrix
    rng = np.random.default_rng(0)
    weight, column = rng.random(128), rng.random(128)
    shared = _problem.weighted_design(matrix, weight, column)
    copied = _problem.weighted_design(sp.csc_matrix(matrix, copy=True), weight, column)
    assert np.shares_memory(shared.indices, matrix.indices)
    assert not np.shares_memory(copied.indices, matrix.indices)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(shared, name), getattr(copied, name))
    np.testing.assert_array_equal(shared.toarray(), np.column_stack([weight[:, None] * matrix.toarray(), column]))
    np.testing.assert_array_equal(matrix.toarray(), hash_candidates([f"s{i}" for i in range(300)], params).matrix.toarray())
