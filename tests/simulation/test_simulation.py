"""Tests for rappor.simulation: populations, candidate lists, fast reports and counts, scenarios, simulate()."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import rappor.client as encoder
from rappor import Params
from rappor.collect._design import hash_candidates
from rappor.exceptions import InvalidParameterError, ReportFormatError
from rappor.client._hashing import bloom_filter
from rappor.simulation._populations import DISTRIBUTIONS, Population, candidate_strings
from rappor.simulation._reports import _bernoulli_words, simulate_counts, simulate_reports, true_ones
from rappor.simulation._scenarios import zipf_scenario
from rappor.simulation._simulation import Simulation, simulate

# Non-dyadic probabilities exercise every digit of the 32-bit thresholds and the tie path.
ODD = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.3, prob_q=0.8, prob_f=0.3)

# Each binomial / chi-square check below uses pvalue > 1e-6; with fewer than 100 such
# checks in this file the chance of a false failure is below 1e-4.
PMIN = 1e-6


def _ones(words: np.ndarray) -> int:
    return int(np.unpackbits(words.view(np.uint8)).sum())


# --------------------------------------------------------------------------- packed Bernoulli


@pytest.mark.parametrize(("threshold", "digits"), [(1, 1), (5, 3), (3 * 2**30, 32), (round(0.3 * 2**32), 32),
                                                    (round(0.001 * 2**32), 32), (2**20 + 1, 21)])
def test_bernoulli_words_rate(threshold, digits, rng):
    n = 20_000
    words = _bernoulli_words(rng, threshold, digits, n)
    assert words.dtype == np.uint64 and words.shape == (n,)
    result = stats.binomtest(_ones(words), n * 64, threshold / 2**digits)
    assert result.pvalue > PMIN


def test_bernoulli_words_bits_independent(rng):
    # Neighbouring bits of a word must be independent: P(both) = t**2.
    t = round(0.3 * 2**32)
    words = _bernoulli_words(rng, t, 32, 50_000)
    bits = np.unpackbits(words.view(np.uint8)).reshape(-1, 2)
    both = int((bits[:, 0] & bits[:, 1]).sum())
    assert stats.binomtest(both, bits.shape[0], (t / 2**32) ** 2).pvalue > PMIN


@pytest.mark.parametrize(("threshold", "expected"), [(0, 0), (2**32, 2**64 - 1)])
def test_bernoulli_words_degenerate(threshold, expected, rng):
    words = _bernoulli_words(rng, threshold, 32, 10)
    assert (words == np.uint64(expected)).all()


# --------------------------------------------------------------------------- batch encoder vs the real client


def _rates_given_bloom(batch, bloom):
    bits = batch.bits()
    ones = bits.sum(axis=0)
    return ones[bloom == 1].sum(), ones[bloom == 0].sum(), len(batch) * (bloom == 1).sum(), len(batch) * (bloom == 0).sum()


def test_simulate_reports_bit_rates_match_p11_p01(rng):
    n = 20_000
    batch = simulate_reports(ODD, ["x"], np.zeros(n, dtype=np.int64), np.full(n, 2), rng=rng)
    bloom = bloom_filter("x", 2, ODD)
    ones1, ones0, n1, n0 = _rates_given_bloom(batch, bloom)
    assert stats.binomtest(int(ones1), int(n1), ODD.p11).pvalue > PMIN
    assert stats.binomtest(int(ones0), int(n0), ODD.p01).pvalue > PMIN


def test_simulate_reports_same_distribution_as_encoder(rng):
    # The real client (keyed PRR, numpy IRR noise) and the batch encoder: per-bit rates
    # given the Bloom bits must agree (chi-square test of homogeneity per bit class).
    n = 4_000
    key = bytes(range(32))
    ids = [f"c{i}" for i in range(n)]
    real = encoder.encode_clients(ODD, key, ids, ["x"] * n, rng=rng)
    cohorts = real.cohorts
    fast = simulate_reports(ODD, ["x"], np.zeros(n, dtype=np.int64), cohorts, rng=rng)
    real_bits, fast_bits = real.bits(), fast.bits()
    blooms = np.stack([bloom_filter("x", c, ODD) for c in range(ODD.num_cohorts)])[cohorts]
    for bloom_value in (0, 1):
        mask = blooms == bloom_value
        table = [[real_bits[mask].sum(), (1 - real_bits[mask]).sum()],
                 [fast_bits[mask].sum(), (1 - fast_bits[mask]).sum()]]
        assert stats.chi2_contingency(table).pvalue > PMIN
        expected = ODD.p11 if bloom_value else ODD.p01
        assert stats.binomtest(int(fast_bits[mask].sum()), int(mask.sum()), expected).pvalue > PMIN


def test_simulate_reports_prr_reused_across_reports(rng):
    # Two reports of one PRR unit share the PRR: where the Bloom bit is 1,
    # P(both reports 1) = (1 - f/2) q**2 + (f/2) p**2, not p11**2 (RAPPOR Sec. 3).
    n = 20_000
    p, q, f = ODD.p, ODD.q, ODD.f
    units = np.repeat(np.arange(n), 2)
    batch = simulate_reports(ODD, ["x"], np.zeros(2 * n, dtype=np.int64), np.zeros(2 * n, dtype=np.int64),
                         prr_units=units, rng=rng)
    bits = batch.bits().reshape(n, 2, -1)
    bloom = bloom_filter("x", 0, ODD)
    both = (bits[:, 0, :] & bits[:, 1, :])[:, bloom == 1]
    expected = (1 - f / 2) * q**2 + (f / 2) * p**2
    assert stats.binomtest(int(both.sum()), both.size, expected).pvalue > PMIN
    assert abs(expected - ODD.p11**2) > 0.01  # the test can tell reuse from fresh PRRs


def test_encoder_trace_prr_reuse_matches_theory(rng):
    # The same joint law for the real client, so both paths agree on repeated reports.
    p, q, f = ODD.p, ODD.q, ODD.f
    both = total = 0
    for i in range(1_500):
        enc = encoder.Encoder(ODD, i.to_bytes(16, "big"), cohort=0, rng=rng)
        a, b = enc.encode("x").bits, enc.encode("x").bits
        bloom = bloom_filter("x", 0, ODD) == 1
        both += int((a & b)[bloom].sum())
        total += int(bloom.sum())
    expected = (1 - f / 2) * q**2 + (f / 2) * p**2
    assert stats.binomtest(both, total, expected).pvalue > PMIN


@pytest.mark.parametrize("k", [1, 7, 8, 30, 64, 65, 128])
def test_simulate_reports_shapes_and_high_bits_clear(k, rng):
    params = Params(num_bloombits=k, num_hashes=1, num_cohorts=3, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    batch = simulate_reports(params, ["a", "b", "c"], [0, 1, 2, 0, 1], [0, 1, 2, 2, 1], rng=rng)
    assert batch.words.shape == (5, (k + 63) // 64)
    assert batch.cohorts.tolist() == [0, 1, 2, 2, 1]
    assert batch.bits().shape == (5, k)


def test_simulate_reports_seeded_is_reproducible(params):
    a = simulate_reports(params, ["a", "b"], [0, 1, 1], [0, 1, 2], rng=7)
    b = simulate_reports(params, ["a", "b"], [0, 1, 1], [0, 1, 2], rng=7)
    assert np.array_equal(a.words, b.words)


def test_simulate_reports_fail_value_out_of_range(params):
    with pytest.raises(InvalidParameterError, match="values"):
        simulate_reports(params, ["a"], [1], [0], rng=0)


def test_simulate_reports_fail_cohort_out_of_range(params):
    with pytest.raises(InvalidParameterError, match="cohorts"):
        simulate_reports(params, ["a"], [0], [params.num_cohorts], rng=0)


def test_simulate_reports_fail_unit_with_two_values(params):
    with pytest.raises(InvalidParameterError, match="same value and cohort"):
        simulate_reports(params, ["a", "b"], [0, 1], [0, 0], prr_units=[5, 5], rng=0)


# --------------------------------------------------------------------------- populations


def test_population_zipf_probabilities():
    pop = Population.zipf(5, exponent=2.0)
    expected = 1.0 / np.arange(1, 6) ** 2
    np.testing.assert_allclose(pop.probabilities, expected / expected.sum())
    assert pop.strings == ("v1", "v2", "v3", "v4", "v5")


def test_population_exponential_is_geometric():
    pop = Population.exponential(50, rate=10.0)
    ratios = pop.probabilities[1:] / pop.probabilities[:-1]
    np.testing.assert_allclose(ratios, np.exp(-10.0 / 50))
    assert pop.probabilities.sum() == pytest.approx(1.0)


def test_population_gaussian_symmetric_and_peaked():
    pop = Population.gaussian(21)
    np.testing.assert_allclose(pop.probabilities, pop.probabilities[::-1], atol=1e-15)
    assert int(np.argmax(pop.probabilities)) == 10


def test_population_uniform():
    np.testing.assert_allclose(Population.uniform(4).probabilities, 0.25)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_population_make_every_distribution(dist):
    pop = Population.make(dist, 30)
    assert len(pop) == 30 and pop.probabilities.sum() == pytest.approx(1.0)


def test_population_make_fail_unknown_distribution():
    with pytest.raises(InvalidParameterError, match="distribution"):
        Population.make("pareto", 10)


def test_population_sample_frequencies(rng):
    pop = Population.zipf(5)
    n = 50_000
    counts = np.bincount(pop.sample(n, rng=rng), minlength=5)
    assert stats.chisquare(counts, pop.probabilities * n).pvalue > PMIN


def test_population_fail_duplicate_strings():
    with pytest.raises(InvalidParameterError, match="distinct"):
        Population(strings=("a", "a"), probabilities=[1, 1])


def test_population_fail_negative_weight():
    with pytest.raises(InvalidParameterError, match="non-negative"):
        Population(strings=("a", "b"), probabilities=[1, -1])


# --------------------------------------------------------------------------- candidates


def test_candidate_strings_remove_every_and_decoys():
    pop = Population.uniform(6)
    cands = candidate_strings(pop, decoys=2, remove_every=3)
    assert cands == ["v1", "v2", "v4", "v5", "decoy1", "decoy2"]


def test_candidate_strings_decoys_avoid_true_strings():
    cands = candidate_strings(["decoy1", "a"], decoys=1)
    assert cands == ["decoy1", "a", "decoy2"]


# --------------------------------------------------------------------------- simulate


def test_simulate_counts_and_truth(params):
    sim = simulate(params, Population.zipf(20), 2_000, reports_per_client=3, rng=0)
    assert isinstance(sim, Simulation)
    assert sim.n_clients == 2_000 and sim.n_reports == 6_000
    assert sim.aggregate.total_reports == 6_000
    assert sum(sim.truth.values()) == 6_000
    assert np.array_equal(np.bincount(sim.reports.cohorts, minlength=params.m), sim.aggregate.reports_per_cohort)
    # every report of a client is in that client's cohort
    assert np.array_equal(sim.reports.cohorts, sim.client_cohorts[sim.report_clients])


def test_simulate_one_value_per_client_repeats_it(params):
    sim = simulate(params, Population.uniform(50), 500, reports_per_client=4, rng=1)
    values = sim.report_values.reshape(500, 4)
    assert (values == values[:, :1]).all()


def test_simulate_several_values_per_client(params):
    sim = simulate(params, Population.uniform(50), 500, reports_per_client=6, values_per_client=3, rng=1)
    distinct = [len(set(row)) for row in sim.report_values.reshape(500, 6)]
    assert max(distinct) > 1 and max(distinct) <= 3


def test_simulate_seed_reproducible(params):
    a = simulate(params, Population.zipf(10), 300, rng=5)
    b = simulate(params, Population.zipf(10), 300, rng=5)
    assert np.array_equal(a.reports.words, b.reports.words)
    assert np.array_equal(a.aggregate.counts, b.aggregate.counts)


def test_simulate_aggregate_bit_rates(params, rng):
    # Expected ones in each (cohort, bit) = p01 n + (p11 - p01) (#reports whose Bloom bit is 1).
    sim = simulate(params, Population.zipf(5), 20_000, rng=rng)
    blooms = np.stack([[bloom_filter(s, c, params) for c in range(params.m)] for s in sim.population.strings])
    set_counts = np.zeros((params.m, params.k))
    np.add.at(set_counts, sim.reports.cohorts, blooms[sim.report_values, sim.reports.cohorts])
    n_c = sim.aggregate.reports_per_cohort[:, None]
    mean = params.p01 * n_c + (params.p11 - params.p01) * set_counts
    var = n_c * max(params.p11 * (1 - params.p11), params.p01 * (1 - params.p01))
    z = (sim.aggregate.bit_counts - mean) / np.sqrt(var)
    # 32 cells, |z| < 5.5 each: false-failure probability about 1e-6.
    assert np.abs(z).max() < 5.5


def test_simulate_client_method_uses_real_encoder(params):
    sim = simulate(params, Population.zipf(5), 50, reports_per_client=2, method="client", rng=3)
    assert sim.method == "client" and sim.n_reports == 100
    assert np.array_equal(sim.reports.cohorts, sim.client_cohorts[sim.report_clients])


def test_simulate_truth_csv(params):
    sim = simulate(params, Population.from_counts({"a,b": 1, "c": 3}), 100, rng=0)
    lines = sim.truth_csv().splitlines()
    assert lines[0] == "string,count,proportion"
    assert lines[1].startswith("c,") and lines[2].startswith('"a,b",')


@pytest.mark.parametrize(("kwargs", "name"), [({"n_clients": 0}, "n_clients"),
                                              ({"reports_per_client": 0}, "reports_per_client"),
                                              ({"method": "fast"}, "method")])
def test_simulate_fail_bad_arguments(params, kwargs, name):
    args = {"n_clients": 10} | kwargs
    n = args.pop("n_clients")
    with pytest.raises(InvalidParameterError, match=name):
        simulate(params, Population.uniform(3), n, **args)


# --------------------------------------------------------------------------- counts drawn from their exact law


def test_true_ones_counts_clients_per_set_bit(params, rng):
    # Against the candidate map (rows c * k + b, a 1 where the value sets the bit in cohort c):
    # n1[c, b] = sum_s X[c*k + b, s] n[s, c]; repeated hashes of one value count once in both.
    values = [f"s{i}" for i in range(30)]
    by_cohort = rng.integers(0, 50, size=(len(values), params.m))
    design = hash_candidates(values, params).matrix.toarray().reshape(params.m, params.k, len(values))
    expected = np.einsum("cbs,sc->cb", design, by_cohort)
    assert np.array_equal(true_ones(params, values, by_cohort), expected)


def test_simulate_counts_matches_the_binomial_law(params, rng):
    # E[ones_cb] = p01 N_c + (p11 - p01) n1_cb; |z| < 5.5 over 32 cells: false failure about 1e-6.
    values = [f"s{i}" for i in range(10)]
    by_cohort = rng.integers(100, 2_000, size=(len(values), params.m))
    agg = simulate_counts(params, values, by_cohort, rng)
    n_c = by_cohort.sum(axis=0)
    assert agg.reports_per_cohort.tolist() == n_c.tolist()
    n1 = true_ones(params, values, by_cohort)
    mean = params.p01 * n_c[:, None] + (params.p11 - params.p01) * n1
    var = n1 * params.p11 * (1 - params.p11) + (n_c[:, None] - n1) * params.p01 * (1 - params.p01)
    assert np.abs((agg.bit_counts - mean) / np.sqrt(var)).max() < 5.5


def test_zipf_scenario_truth_and_reproducibility(params):
    a = zipf_scenario(params, n_reports=5_000, n_values=20, rng=3)
    b = zipf_scenario(params, n_reports=5_000, n_values=20, rng=3)
    assert np.array_equal(a.aggregate.counts, b.aggregate.counts)
    assert sum(a.truth().values()) == a.aggregate.total_reports == 5_000
    assert a.values[:2] == ("v1", "v2") and a.true_counts[0] >= a.true_counts[-1]
    assert a.true_proportions.sum() == pytest.approx(1.0)
