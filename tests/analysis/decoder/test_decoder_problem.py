"""Tests of rappor.analysis.decoder._problem: debiasing, the rows' variances and the grouping of identical columns."""

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
        monkeypatch.setattr(_problem, "_wrapping_sums", lambda words, ends: np.zeros(len(ends), dtype=np.uint64))
    rep, zero = _problem.column_groups(sp.csc_matrix(dense))
    expected = [next(i for i in range(60) if np.array_equal(dense[:, i], dense[:, j])) for j in range(60)]
    assert rep.tolist() == expected and rep[40] == 3 and rep[8] == 8
    assert zero.tolist() == [11, 12]



@pytest.mark.parametrize("block", [4, 16, 1 << 22])
def test_column_groups_of_stride0_ones_equal_stored_ones(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    # A hashed map's ones (one value, stride 0) give the groups of the same matrix with stored ones,
    # with empty columns first, between blocks and last.
    rng = np.random.default_rng(13)
    dense = (rng.random((20, 50)) < 0.25).astype(float)
    dense[:, [0, 1, 24, 49]] = 0.0
    dense[:, 30] = dense[:, 6]
    dense[:, 44] = dense[:, 6]
    stored = sp.csc_matrix(dense)
    ones = sp.csc_matrix((np.broadcast_to(np.float64(1.0), (stored.nnz,)), stored.indices, stored.indptr),
                         shape=stored.shape, copy=False)
    monkeypatch.setattr(_problem, "_GROUP_BLOCK_NNZ", block)
    rep, zero = _problem.column_groups(ones)
    want_rep, want_zero = _problem.column_groups(stored)
    assert rep.tolist() == want_rep.tolist() and zero.tolist() == want_zero.tolist() == [0, 1, 24, 49]
    assert rep[30] == rep[44] == 6


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


def _hashed_and_copied_maps(n: int, cohorts: int = 8):
    from rappor import CandidateMap, Params, hash_candidates

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=cohorts, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    hashed = hash_candidates([f"s{i}" for i in range(n)], params)
    copied = CandidateMap(params=params, strings=hashed.strings, matrix=hashed.matrix)  # validating copy
    return params, hashed, copied


def test_hashed_map_stores_its_ones_once():
    # A hashed map's values are one read-only 1.0 of stride 0; contiguous_values gives them memory.
    _, hashed, copied = _hashed_and_copied_maps(200)
    data = hashed.matrix.data
    assert data.strides == (0,) and not data.flags.writeable and data.size == hashed.matrix.nnz
    assert copied.matrix.data.strides == (8,)
    full = _problem.contiguous_values(hashed.matrix)
    assert full.data.strides == (8,) and np.shares_memory(full.indices, hashed.matrix.indices)
    np.testing.assert_array_equal(full.toarray(), copied.matrix.toarray())
    assert np.shares_memory(_problem.contiguous_values(copied.matrix).data, copied.matrix.data)  # no copy


@pytest.mark.parametrize("nonzero", [0, 1, 7, 200])
def test_columns_times_equals_the_full_product_bitwise(nonzero):
    rng = np.random.default_rng(nonzero)
    matrix = sp.random(64, 200, density=0.2, format="csc", random_state=rng)
    coef = np.zeros(200)
    coef[rng.choice(200, nonzero, replace=False)] = rng.normal(size=nonzero)
    np.testing.assert_array_equal(_problem.columns_times(matrix, coef), matrix @ coef)
    _, hashed, copied = _hashed_and_copied_maps(200)
    np.testing.assert_array_equal(_problem.columns_times(hashed.matrix, coef), copied.matrix @ coef)


def test_weighted_problem_of_a_hashed_map_equals_the_copied_maps():
    # Paths that convert the map (a cohort without reports: rows dropped; repeated columns) give
    # the same problem with the stride-0 ones as with stored ones.
    params, hashed, copied = _hashed_and_copied_maps(300)
    counts = np.random.default_rng(1).integers(0, 50, size=(8, 17))
    counts[:, 0] = 100
    counts[3] = 0  # cohort 3 without reports
    for matrix_h, matrix_c in [(hashed.matrix, copied.matrix),
                               (sp.hstack([hashed.matrix, hashed.matrix[:, :5]], format="csc"),
                                sp.hstack([copied.matrix, copied.matrix[:, :5]], format="csc"))]:
        got, want = _problem.weighted_problem(counts, matrix_h, params), _problem.weighted_problem(counts, matrix_c, params)
        np.testing.assert_array_equal(got.design.toarray(), want.design.toarray())
        for name in ("rows", "weight", "b", "distinct", "group", "slot"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


@pytest.mark.parametrize("lo, hi", [(0, 7), (3, 9), (5, 5), (0, 12)])
def test_column_range_is_a_view_of_the_columns(lo, hi):
    rng = np.random.default_rng(lo * 31 + hi)
    matrix = sp.random(15, 12, density=0.3, format="csc", random_state=rng)
    block = _problem.column_range(matrix, lo, hi)
    np.testing.assert_array_equal(block.toarray(), matrix.toarray()[:, lo:hi])
    np.testing.assert_array_equal(_problem.column_range(matrix, lo, hi, transposed=True).toarray(),
                                  matrix.toarray()[:, lo:hi].T)
    if block.nnz:
        assert np.shares_memory(block.data, matrix.data) and np.shares_memory(block.indices, matrix.indices)
    leading = _problem.leading_columns(matrix, hi)  # columns from 0: the indptr shared too
    np.testing.assert_array_equal(leading.toarray(), matrix.toarray()[:, :hi])
    assert np.shares_memory(leading.indptr, matrix.indptr)


@pytest.mark.parametrize("values", ["hashed", "stored ones", "weighted"])
def test_weighted_design_norms_equal_column_sq_norms(values):
    # The shortcut a' weight (0/1 designs) gives column_sq_norms's sums bit for bit; other values take the sums.
    params, hashed, copied = _hashed_and_copied_maps(300)
    design = {"hashed": hashed.matrix, "stored ones": copied.matrix}.get(values)
    if design is None:
        design = copied.matrix.copy()
        design.data = np.random.default_rng(3).random(design.nnz) + 0.5
    rng = np.random.default_rng(4)
    weight = rng.random(128) + 0.5
    problem = _problem.WeightedProblem(params=params, rows=np.arange(128), weight=weight, b=rng.random(128),
                                       design=design, distinct=np.arange(300), group=np.arange(300),
                                       slot=np.arange(300), orthogonal=False, rate=np.full(128, 0.5),
                                       n_c=np.full(128, 100.0))
    wd = problem.weighted_design()
    # Equal to the bit here; a compiler that fuses SciPy's multiply-add (clang on arm64) rounds each
    # product w_i * w_i once instead of twice: a column's at most m h = 16 positive terms then agree
    # within 16 eps relative (3.6e-15).  1e-13 leaves margin and still fails a wrong weight or power.
    np.testing.assert_allclose(wd.col_sq_norms, _problem.column_sq_norms(wd.a), rtol=1e-13, atol=0.0)


def test_background_rates_do_not_follow_a_rows_own_count():
    """A row's background rate is its cohort's other bits': raising its own count leaves it as it was (the
    plug-in variance, at the row's own rate, moves); with one bit, the other cohorts' count."""
    from rappor import Params

    params = Params(num_bloombits=16, num_hashes=1, num_cohorts=4, prob_p=0.0, prob_q=1.0, prob_f=0.25)
    rng = np.random.default_rng(5)
    counts = np.column_stack([np.full(4, 200), rng.binomial(200, 0.2, size=(4, 16))])
    deb = _problem.debias(counts, params.p11, params.p01)
    base = _problem.background_rates(deb, params)
    counts[0, 1 + 3] += 40
    again = _problem.debias(counts, params.p11, params.p01)
    moved = _problem.background_rates(again, params)
    assert moved[3] == pytest.approx(base[3], rel=1e-12) and again.var[3] > 1.2 * deb.var[3]
    assert np.all(moved[4:16] > base[4:16]) and np.array_equal(moved[16:], base[16:])  # its cohort's others only
    one = Params(num_bloombits=1, num_hashes=1, num_cohorts=3, prob_p=0.0, prob_q=1.0, prob_f=0.25)
    c1 = np.array([[100, 30], [100, 50], [100, 70]])
    r1 = _problem.background_rates(_problem.debias(c1, one.p11, one.p01), one)
    assert r1[0] == pytest.approx((0.6 * 100 + 0.5) / 101)  # cohorts 2 and 3: 120 ones in 200 reports


def test_a_decode_weights_rows_at_their_true_rates_without_instantaneous_noise():
    """Without IRR (p=0, q=1) a string's bits have far more variance than the background's (share 0.3:
    0.23 against 0.11 at f=0.25), so the decoder refits once at its first fit's rates.

    Two candidates with 60 and 140 reports in each of 64 cohorts (k=16 h=1): every row's weight
    rate gives a variance within 10% of the binomial one at the row's true rate (the fitted
    shares' error is under 1% of a share here, 4% of a variance at most), where the background
    rates alone miss the strings' bits by half.
    """
    from rappor import Decoder, Params, hash_candidates, simulation

    params = Params(num_bloombits=16, num_hashes=1, num_cohorts=64, prob_p=0.0, prob_q=1.0, prob_f=0.25)
    values = ["a", "b"]
    by_cohort = np.array([[60] * 64, [140] * 64])
    agg = simulation.simulate_counts(params, values, by_cohort, np.random.default_rng(5))
    res = Decoder().decode(agg, hash_candidates(values, params))
    gap = params.p11 - params.p01
    true = params.p01 + gap * (simulation.true_ones(params, values, by_cohort) / 200).ravel()
    got = res.diagnostics.weight_rates.ravel()
    ratio = got * (1 - got) / (true * (1 - true))
    assert np.max(np.abs(ratio - 1)) < 0.1, np.max(np.abs(ratio - 1))
    deb = _problem.debias(agg.counts, params.p11, params.p01)
    first = _problem.background_rates(deb, params)
    assert np.max(np.abs(first * (1 - first) / (true * (1 - true)) - 1)) > 0.4  # what the refit corrects


def test_one_candidate_does_not_take_the_mass_outside_the_list() -> None:
    """Found by a tester: a list whose candidates never share a row took the closed form, which fits no
    non-candidate column, so the other strings' ones landed on the candidates' bits: a string no client
    holds came out at 0.11 with p = 1e-33 (detected in 20 of 20 collections), and v1 at 0.29 for 0.19.

    Now only designs that hold a candidate in every row (one-hot maps, a boolean's bit) take it.  The
    absent string's p-value is one draw of its null (uniform), so the threshold 1e-3 fails with
    probability 1e-3 at most; v1's 95% interval holds its realized share (a 5% event otherwise, and the
    old fit missed it by about 10 of its standard errors).
    """
    import rappor

    params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    sim = rappor.simulate(params, rappor.Population.zipf(100), 100_000, rng=np.random.default_rng(0))
    absent = rappor.Decoder().decode(sim.aggregate, rappor.hash_candidates(["not-a-real-string"], params))
    assert float(absent.pvalue[0]) > 1e-3 and not bool(absent.detected[0])
    v1 = rappor.Decoder().decode(sim.aggregate, rappor.hash_candidates(["v1"], params))
    truth = sim.truth["v1"] / sum(sim.truth.values())
    low, high = v1.confidence_interval()
    assert float(low[0]) <= truth <= float(high[0])
