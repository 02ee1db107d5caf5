"""The accuracy harness of issue 14 (``benchmarks/_classes.py``, ``benchmarks/_reference.py``).

The harness draws aggregated counts directly from their binomial law instead of encoding
every client; these tests check that law against google/rappor's own encoding rules
(:mod:`rappor.collect`), and that the reader of the reference's runs scores them as
:func:`rappor.evaluate` does.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import rappor
from rappor.collect._compat import google_bloom_filter, google_prr_batch
from rappor.simulation import Population

_BENCH = Path(__file__).parent.parent / "benchmarks"


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


classes = _load("_classes")
reference = _load("_reference")


def test_collection_matches_google_encoding_rules() -> None:
    """Per (cohort, bit), the harness's ones have the mean of google/rappor's client's reports.

    The same clients are encoded one by one with google/rappor's MD5 Bloom filter, its
    HMAC-SHA256 PRR (7-bit f: 0.45 acts as 58/128) and a Bernoulli IRR, 40 times, and drawn 40
    times by the harness's shortcut (:func:`draw_counts`).  Each sum of ones over the 40 draws
    has variance at most ``40 N_c / 4``, so each (cohort, bit) difference is within 4 standard
    errors (over the 64 cells a false alarm has probability below 1e-2), and the sum of squared
    z-scores is checked against its chi-square law (conservative, as the variances are bounded).
    Checked to fail with this package's MurmurHash3 Bloom bits in place of MD5, and with the
    PRR left out (f = 0).  (The 7-bit rounding of f, 0.45 -> 58/128, moves a cell by 0.07 SE
    here: below what any affordable number of draws resolves.)
    """
    from scipy import stats

    params = rappor.Params(num_bloombits=8, num_hashes=2, num_cohorts=8, prob_p=0.39, prob_q=0.61, prob_f=0.45)
    sc = classes.ScenarioClass("t", "test", params, Population.zipf(5), 4_000, classes._all_real)
    draws = 40
    by_cohort = classes.clients(sc, np.random.default_rng(0))
    values = np.repeat(np.arange(len(sc.population)), by_cohort.sum(axis=1))
    cohorts = np.concatenate([np.repeat(np.arange(params.num_cohorts), row) for row in by_cohort])
    blooms = np.stack([google_bloom_filter(sc.population.strings[v], c, params) for v, c in zip(values, cohorts)])
    gen = np.random.default_rng(1)
    google = np.zeros((params.num_cohorts, params.num_bloombits))
    ours = np.zeros_like(google)
    for d in range(draws):
        secrets = [f"client{i}-{d}".encode() for i in range(len(values))]
        prr = google_prr_batch(secrets, blooms, params)
        irr = gen.random(prr.shape) < np.where(prr == 1, params.prob_q, params.prob_p)
        np.add.at(google, cohorts, irr)
        agg = classes.draw_counts(params, sc.population.strings, by_cohort, gen)
        assert np.array_equal(agg.counts[:, 0], by_cohort.sum(axis=0))
        ours += agg.counts[:, 1:]
    se = np.sqrt(2 * draws * by_cohort.sum(axis=0)[:, None] / 4.0)
    z = (ours - google) / se
    assert np.abs(z).max() < 4.0
    assert stats.chi2.sf(float((z**2).sum()), z.size) > 1e-4


@pytest.mark.parametrize("repeat", ["same", "independent"])
def test_repeated_reports_match_google_encoding_rules(repeat: str) -> None:
    """Several reports per client: the harness's counts have the mean and the variance of
    google/rappor's client's (one HMAC PRR per client and value, a fresh IRR per report).

    50 clients x 8 reports, k=8 h=1 m=2, 400 collections each way.  The mean of a
    (cohort, bit) count over the collections is within 4 standard errors; its variance, which
    the memoized PRR raises to about 1 + 7 (q - p)^2 / 4 = 2.75 times the binomial one (so a
    draw that ignored the PRR's memo would fail), agrees within 4 standard errors of a
    variance ratio of two samples of 400 (its SE about sqrt(2 / 399) x 1.4: the counts are
    close to normal, the 1.4 covers their excess kurtosis).  Over 16 cells a false alarm has
    probability below 1e-3.
    """
    params = rappor.Params(num_bloombits=8, num_hashes=1, num_cohorts=2, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    sc = classes.ScenarioClass("t", "test", params, Population.zipf(3), 50, classes._all_real,
                               reports_per_client=8, repeat=repeat)
    draws, n, r = 400, sc.n_reports, sc.reports_per_client
    gen = np.random.default_rng(2)
    google = np.zeros((draws, params.num_cohorts, params.num_bloombits))
    ours = np.zeros_like(google)
    for d in range(draws):
        cohort = gen.integers(0, params.num_cohorts, size=n)
        if repeat == "same":
            values = np.repeat(sc.population.sample(n, rng=gen)[:, None], r, axis=1)
        else:
            values = sc.population.sample(n * r, rng=gen).reshape(n, r)
        client = np.repeat(np.arange(n), r)
        blooms = np.stack([google_bloom_filter(sc.population.strings[v], int(cohort[i]), params)
                           for i, v in zip(client, values.ravel())])
        prr = google_prr_batch([f"client{i}-{d}".encode() for i in client], blooms, params)  # HMAC(secret, bloom)
        irr = gen.random(prr.shape) < np.where(prr == 1, params.prob_q, params.prob_p)
        np.add.at(google[d], cohort[client], irr)
        agg, per_value = classes.draw_repeated_counts(sc, gen)
        assert agg.counts[:, 0].sum() == n * r == per_value.sum()
        ours[d] = agg.counts[:, 1:]
    # Cohort sizes vary between collections in both: compare the pooled counts.
    mean_se = np.sqrt((google.var(axis=0, ddof=1) + ours.var(axis=0, ddof=1)) / draws)
    assert np.all(np.abs(ours.mean(axis=0) - google.mean(axis=0)) < 4 * mean_se)
    ratio = ours.var(axis=0, ddof=1) / google.var(axis=0, ddof=1)
    assert np.all(np.abs(np.log(ratio)) < 4 * 1.4 * np.sqrt(2 / (draws - 1)))


def test_reference_runs_scored_like_evaluate(tmp_path: Path) -> None:
    seed_dir = tmp_path / "cls" / "seed3"
    (seed_dir / "run1").mkdir(parents=True)
    (seed_dir / "run2").mkdir()
    (seed_dir / "run3").mkdir()
    (seed_dir / "truth.csv").write_text("string,count\nv1,600\nv2,300\nv3,100\n")
    (seed_dir / "run1" / "results.csv").write_text(
        '"string","estimate","std_error","proportion","prop_std_error","prop_low_95","prop_high_95"\n'
        '"v1",580,10,0.58,0.01,0.56,0.6\n"d7",20,5,0.02,0.005,0.01,0.03\n')
    (seed_dir / "run1" / "seconds").write_text("2.5\n")
    (seed_dir / "run2" / "failed").write_text("")
    (seed_dir / "run2" / "log.txt").write_text("_____ 1.0 FATAL: Analysis returned no strings.\n")
    (seed_dir / "run3" / "failed").write_text("")  # failed for another reason: skipped
    runs = reference.read_reference(tmp_path, "cls", range(5))
    assert [(r.seed, r.run) for r in runs] == [(3, 1), (3, 2)]
    expected = rappor.analysis.evaluate({"v1": 600, "v2": 300, "v3": 100}, ["v1", "d7"], [0.58, 0.02], detected=[True, True])
    assert runs[0].total_variation == pytest.approx(expected.total_variation)
    assert (runs[0].detected, runs[0].false_positives, runs[0].seconds) == (2, 1, 2.5)
    assert (runs[1].total_variation, runs[1].detected) == (pytest.approx(0.5), 0)
