"""Sums of many candidates' likelihoods from bit-pair sums (``rappor.analysis.association._pairs``)."""

from __future__ import annotations

import numpy as np
import pytest

import rappor.analysis.association._pairs as pairs
from rappor import CandidateMap, Params, ReportBatch
from rappor.analysis.association._likelihood import CodedLikelihood, bit_index_table, likelihoods
from rappor.analysis.association._mixture import ProductLikelihood


def _coded(params: Params, n_cand: int, rows: int, seed: int) -> CodedLikelihood:
    gen = np.random.default_rng(seed)
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    cmap = CandidateMap.from_indices(params, [f"s{i}" for i in range(n_cand)],
                                     [[c * k + int(b) for c in range(m) for b in gen.integers(0, k, h)]
                                      for _ in range(n_cand)])
    # Cohort 1 left empty: a cohort without reports adds nothing.
    cohorts = np.sort(gen.choice(np.array([0, 2, 3]), rows))
    batch = ReportBatch.from_bits(params, cohorts, gen.integers(0, 2, size=(rows, k)))
    index, num_bits = bit_index_table(cmap, np.arange(n_cand))
    assert h == 1 or (num_bits < h).any()  # candidates whose two hashes collide: one bit, padded
    coded, _ = likelihoods(params, batch.cohorts, batch.words, index, num_bits, gen.uniform(0.2, 0.8, (m, k)))
    assert isinstance(coded, CodedLikelihood)
    return coded


@pytest.mark.parametrize("hashes", [1, 2])
def test_pair_sums_equal_the_expanded_likelihoods(monkeypatch: pytest.MonkeyPatch, hashes: int) -> None:
    monkeypatch.setattr(pairs, "WIDE", 20)  # a small map stands for a large one
    params = Params(num_bloombits=8, num_hashes=hashes, num_cohorts=4, prob_p=0.3, prob_q=0.8, prob_f=0.4)
    coded = _coded(params, 30, 900, hashes)
    assert coded.sums is not None
    m = np.random.default_rng(9).random((900, 2))
    # Exact up to rounding: the same sums, grouped by cohort and bit pair instead of by report.
    expected = coded.dense().T @ m
    np.testing.assert_allclose(coded.transpose_product(m), expected, rtol=1e-12)
    keep = np.random.default_rng(1).random(900) < 0.6
    np.testing.assert_allclose(coded.select(keep).transpose_product(m[keep]), coded.dense()[keep].T @ m[keep],
                               rtol=1e-12)
    wide = coded.columns(np.arange(25))  # still wide: keeps the sums (without Other)
    assert wide.sums is not None
    np.testing.assert_allclose(wide.transpose_product(m), expected[:25], rtol=1e-12)
    assert coded.columns(np.array([1, 5, 30])).sums is None  # too few to pay: expanded instead
    # The fit's gradient takes this path for a wide first variable times a boolean.
    flag = np.where(np.random.default_rng(2).random(900)[:, None] < 0.5, [[0.7, 0.3]], [[0.3, 0.7]])
    v = np.random.default_rng(3).random(900)
    lik = ProductLikelihood([coded, flag], np.ones(900))
    full = (coded.dense()[:, :, None] * flag[:, None, :]).reshape(900, -1)
    np.testing.assert_allclose(lik.gradient(v), full.T @ v, rtol=1e-12)


def test_pair_sums_are_kept_only_for_many_candidates_of_at_most_two_bits() -> None:
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.3, prob_q=0.8, prob_f=0.4)
    few = _coded(params, 30, 100, 0)
    assert few.sums is None  # fewer than WIDE candidates
    with pytest.raises(ValueError, match="no bit-pair sums"):
        few.transpose_product(np.ones((100, 1)))
    assert _coded(params, pairs.WIDE, 100, 0).sums is not None
    flipped = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.8, prob_q=0.3, prob_f=0.4)
    assert _coded(flipped, pairs.WIDE, 100, 0).sums is None  # q < p: the sums' terms would cancel
    three = Params(num_bloombits=8, num_hashes=3, num_cohorts=4, prob_p=0.3, prob_q=0.8, prob_f=0.4)
    assert not pairs.pays(np.zeros((4, pairs.WIDE, 3), dtype=np.int64))
    assert pairs.pays(np.zeros((4, pairs.WIDE, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="at most two"):
        pairs.PairSums(np.zeros(1, dtype=np.int64), np.zeros((1, 9), dtype=np.uint8),
                       np.zeros((4, 1, three.num_hashes), dtype=np.int64), np.ones((4, 1), dtype=np.int64), 1.0, -0.5)
