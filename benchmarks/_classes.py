"""Scenario classes of issue 14, simulated with google/rappor's hashing and encoding rules (private).

Each :class:`ScenarioClass` is a population of true strings, a number of reports (one per
client), RAPPOR parameters and the analyst's candidate list.  :func:`collection` draws one
collection of it: aggregated counts as google/rappor's own client would produce them, the
candidate map as its ``hash_candidates.py`` would write it, and the truth.

Encoding rules (google/rappor ``client/python/rappor.py``; :mod:`rappor.collect`): the Bloom
filter of value ``v`` in cohort ``c`` sets bits ``MD5(uint32_be(c) || v)[j] mod k``; the
permanent randomized response keeps a bit with probability ``1 - f_eff`` and otherwise draws
it uniformly, with ``f_eff = ceil(128 f) / 128`` (:func:`rappor.collect.google_effective_prob_f`:
its mask compares 7 random bits); the instantaneous one reports a 1 with probability ``q``
where the PRR is 1 and ``p`` elsewhere.  With one report per client (a fresh secret each)
the report bits of a client are independent given its Bloom filter, with
``P(1 | bit set) = p11 = q (1 - f_eff / 2) + p f_eff / 2`` and
``P(1 | bit clear) = p01 = p (1 - f_eff / 2) + q f_eff / 2`` (Erlingsson, Pihur and Korolova
2014, Section 3), so the ones of each (cohort, bit) are exactly
``Binomial(n1, p11) + Binomial(N_c - n1, p01)`` (``n1``: clients of cohort ``c`` whose filter
sets the bit), independent across (cohort, bit).  That is what :func:`collection` samples:
the same law as encoding every client, in a few vectorized draws.

Classes with several reports per client (``reports_per_client > 1``) are drawn client by
client, as google/rappor's simulator makes them: each client holds one value (``repeat =
"same"``: it reports it every day under one memoized PRR, ``rappor simulate
--reports-per-client``) or draws its values independently (``repeat = "independent"``:
google/rappor's ``regtest.sh`` demos, ``gen_true_values.R``, where a value the client draws
twice is reported under the same PRR).  Each (client, value) pair gets one PRR: a set Bloom
bit is 1 with probability ``1 - f_eff / 2``, a clear one with ``f_eff / 2``; each of its
``r`` reports sends a 1 with probability ``q`` where the PRR is 1 and ``p`` elsewhere.  So
over the ``n`` pairs of one (cohort, value, r), the PRR ones of a bit are
``Binomial(n, .)`` and the reported ones ``Binomial(r x PRR ones, q) + Binomial(r x PRR
zeros, p)``, independent across bits and groups: :func:`draw_repeated_counts`.

``params.csv`` carries the nominal ``f`` (what an analyst of google/rappor data writes), so
with ``f = 0.45`` the decoders see 0.45 while the data were made with 58/128 = 0.453.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

import rappor
from rappor.collect import google_bloom_bits_table, google_effective_prob_f, hash_candidates_google
from rappor.simulation import Population
from rappor.testing import draw_counts as exact_counts

__all__ = ["CLASSES", "SLOW_CLASSES", "Collection", "ScenarioClass", "clients", "collection", "draw_counts",
           "draw_repeated_counts", "export_collection"]

#: Issue 4's public scenario parameters (also the default of most classes).
ISSUE4 = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@dataclass(frozen=True)
class ScenarioClass:
    """A scenario class: who reports what, with which parameters, against which candidates.

    ``n_reports`` is the number of clients; each sends ``reports_per_client`` reports, of one
    value under one PRR (``repeat="same"``) or of values drawn independently
    (``repeat="independent"``; see the module docstring).  ``candidates(population)`` builds
    the candidate list from the population's strings; ``kind`` is ``"distribution"`` (scored
    by total variation) or ``"null"`` (every candidate absent: scored by the share of
    decodes with any detection).
    """

    name: str
    description: str
    params: rappor.Params
    population: Population
    n_reports: int
    candidates: Callable[[Population], list[str]]
    kind: str = "distribution"
    reports_per_client: int = 1
    repeat: str = "same"


def _all_real(pop: Population) -> list[str]:
    return list(pop.strings)


def _with_decoys(n_decoys: int) -> Callable[[Population], list[str]]:
    def build(pop: Population) -> list[str]:
        return rappor.simulation.candidate_strings(pop, decoys=n_decoys)
    return build


def _even_ranks_plus_decoys(n_decoys: int) -> Callable[[Population], list[str]]:
    """The strings of even rank (v2, v4, ...) plus decoys: the odd ranks' mass is missing."""
    def build(pop: Population) -> list[str]:
        kept = [s for i, s in enumerate(pop.strings, start=1) if i % 2 == 0]
        return kept + [f"decoy{i}" for i in range(1, n_decoys + 1)]
    return build


def _google_demo_candidates(pop: Population) -> list[str]:
    """google/rappor's demo candidates: ``v1 .. v2U`` without the strings ending in 9 (regex ``v[0-9]*9$``)."""
    n = len(pop.strings)
    return [f"v{i}" for i in range(1, 2 * n + 1) if i % 10 != 9]


def _decoys_only(n_decoys: int) -> Callable[[Population], list[str]]:
    def build(pop: Population) -> list[str]:
        return [f"decoy{i}" for i in range(1, n_decoys + 1)]
    return build


def _params(k: int, h: int, m: int, p: float, q: float, f: float) -> rappor.Params:
    return rappor.Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


CLASSES: tuple[ScenarioClass, ...] = (
    ScenarioClass("decoys-1k", "Zipf(1) over 100, 100k reports, 100 real + 900 decoys", ISSUE4,
                  Population.zipf(100), 100_000, _with_decoys(900)),
    ScenarioClass("decoys-10k", "Zipf(1) over 100, 100k reports, 100 real + 9,900 decoys", ISSUE4,
                  Population.zipf(100), 100_000, _with_decoys(9_900)),
    ScenarioClass("missing-half", "Zipf(1) over 100, 100k reports; candidates v2, v4, .., v100 (57% of the mass "
                  "missing) + 950 decoys", ISSUE4, Population.zipf(100), 100_000, _even_ranks_plus_decoys(950)),
    ScenarioClass("k128-5k", "k=128 h=2 m=32, Zipf(1) over 500, 1M reports, 500 real + 4,500 decoys",
                  _params(128, 2, 32, 0.5, 0.75, 0.5), Population.zipf(500), 1_000_000, _with_decoys(4_500)),
    ScenarioClass("high-privacy", "f=0.75 k=16 h=2 m=64, Zipf(1) over 200, 1M reports, all 200 real",
                  _params(16, 2, 64, 0.5, 0.75, 0.75), Population.zipf(200), 1_000_000, _all_real),
    ScenarioClass("pq-close", "p=0.45 q=0.55 f=0.5 k=16 h=2 m=64, Zipf(1) over 200, 1M reports, all real",
                  _params(16, 2, 64, 0.45, 0.55, 0.5), Population.zipf(200), 1_000_000, _all_real),
    ScenarioClass("issue4", "issue 4's public scenario: Zipf(1) over 100, 100k reports, all 100 real", ISSUE4,
                  Population.zipf(100), 100_000, _all_real),
    ScenarioClass("uniform-100", "uniform over 100, 100k reports, all real", ISSUE4, Population.uniform(100),
                  100_000, _all_real),
    ScenarioClass("zipf-k8", "k=8 h=2 m=128 p=0.39 q=0.61 f=0.45, Zipf(1) over 100, 1M reports, all real",
                  _params(8, 2, 128, 0.39, 0.61, 0.45), Population.zipf(100), 1_000_000, _all_real),
    ScenarioClass("gauss-200", "Gaussian over 200, 1M reports, all real", ISSUE4, Population.gaussian(200),
                  1_000_000, _all_real),
    ScenarioClass("mixed-small", "Zipf(1) over 30, 100k reports, 30 real + 170 decoys (not screened)", ISSUE4,
                  Population.zipf(30), 100_000, _with_decoys(170)),
    ScenarioClass("hp-decoys", "f=0.75 k=16 h=2 m=64, Zipf(1) over 200, 1M reports, 200 real + 800 decoys",
                  _params(16, 2, 64, 0.5, 0.75, 0.75), Population.zipf(200), 1_000_000, _with_decoys(800)),
    # Collections shaped like real deployments (added after issue 14's twelve).
    ScenarioClass("repeat-10", "Zipf(1) over 100, 100k clients x 10 reports of one value under one PRR, "
                  "100 real + 100 decoys", ISSUE4, Population.zipf(100), 100_000, _with_decoys(100),
                  reports_per_client=10),
    ScenarioClass("repeat-30", "Zipf(1) over 100, 100k clients x 30 reports of one value under one PRR, "
                  "100 real + 100 decoys", ISSUE4, Population.zipf(100), 100_000, _with_decoys(100),
                  reports_per_client=30),
    ScenarioClass("flat-missing", "google/rappor's demo3: exponential over 100 (4.9% .. 0.04%), 100k clients x 10 "
                  "values, k=32 h=1 m=64 p=.25 q=.75; candidates v1..v200 without v*9 (8.3% missing, 100 decoys)",
                  _params(32, 1, 64, 0.25, 0.75, 0.5), Population.exponential(100, rate=5.0), 100_000,
                  _google_demo_candidates, reports_per_client=10, repeat="independent"),
    ScenarioClass("flat-missing-1M", "demo3's list and parameters, 1M clients x 1 report",
                  _params(32, 1, 64, 0.25, 0.75, 0.5), Population.exponential(100, rate=5.0), 1_000_000,
                  _google_demo_candidates),
    ScenarioClass("h1", "k=16 h=1 m=64, Zipf(1) over 200, 1M reports, 200 real + 300 decoys",
                  _params(16, 1, 64, 0.5, 0.75, 0.5), Population.zipf(200), 1_000_000, _with_decoys(300)),
    ScenarioClass("f75-flat", "f=0.75 k=32 h=1 m=64 p=.25 q=.75, exponential over 100, 1M reports; candidates "
                  "v1..v200 without v*9", _params(32, 1, 64, 0.25, 0.75, 0.75), Population.exponential(100, rate=5.0),
                  1_000_000, _google_demo_candidates),
    ScenarioClass("f85", "f=0.85 k=16 h=2 m=64, Zipf(1) over 200, 1M reports, 200 real + 200 decoys",
                  _params(16, 2, 64, 0.5, 0.75, 0.85), Population.zipf(200), 1_000_000, _with_decoys(200)),
    ScenarioClass("pq-near", "p=0.45 q=0.55 f=0.25 k=32 h=2 m=64, Zipf(1) over 100, 1M reports, 100 real + 400 "
                  "decoys", _params(32, 2, 64, 0.45, 0.55, 0.25), Population.zipf(100), 1_000_000, _with_decoys(400)),
    ScenarioClass("decoys-only", "data Zipf(1) over 100, 100k reports; 1,000 candidates, all decoys", ISSUE4,
                  Population.zipf(100), 100_000, _decoys_only(1_000), kind="null"),
    ScenarioClass("decoys-only-1M", "data Zipf(1) over 100, 1M reports; 1,000 candidates, all decoys", ISSUE4,
                  Population.zipf(100), 1_000_000, _decoys_only(1_000), kind="null"),
)


#: Classes too slow for the default runs (``benchmarks/accuracy.py --slow``).
SLOW_CLASSES: tuple[ScenarioClass, ...] = (
    ScenarioClass("10M-20k", "k=32 h=2 m=64, Zipf(1) over 2,000, 10M reports, 2,000 real + 18,000 decoys",
                  _params(32, 2, 64, 0.5, 0.75, 0.5), Population.zipf(2_000), 10_000_000, _with_decoys(18_000)),
)


@dataclass(frozen=True)
class Collection:
    """One simulated collection of a class: counts, candidate map and truth."""

    scenario: ScenarioClass
    seed: int
    aggregate: rappor.Aggregate
    candidate_map: rappor.CandidateMap
    truth: dict[str, int]

    @property
    def true_share(self) -> npt.NDArray[np.float64]:
        """True share of every candidate (0 for decoys), in candidate order."""
        n = sum(self.truth.values())
        return np.array([self.truth.get(s, 0) / n for s in self.candidate_map.strings])


@lru_cache(maxsize=32)
def _bloom(strings: tuple[str, ...], params: rappor.Params) -> npt.NDArray[np.int64]:
    """``bloom[v, c, b]``: whether value ``v`` sets bit ``b`` in cohort ``c`` (google/rappor MD5)."""
    table = google_bloom_bits_table(list(strings), params)  # (U, m, h)
    u, m, h = table.shape
    out = np.zeros((u, m, params.num_bloombits), dtype=np.int64)
    out[np.repeat(np.arange(u), m * h), np.tile(np.repeat(np.arange(m), h), u), table.reshape(-1)] = 1
    return out


@lru_cache(maxsize=32)
def _candidate_map(scenario_name: str) -> rappor.CandidateMap:
    sc = _by_name(scenario_name)
    return hash_candidates_google(sc.candidates(sc.population), sc.params)


def _by_name(name: str) -> ScenarioClass:
    for sc in CLASSES + SLOW_CLASSES:
        if sc.name == name:
            return sc
    raise KeyError(name)


def clients(scenario: ScenarioClass, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Clients per (value, cohort), shape ``(U, m)``: values from the population, cohorts uniform.

    One multinomial over (value, cohort) pairs: the same law as drawing each client's value,
    then its cohort.
    """
    m = scenario.params.num_cohorts
    joint = np.outer(scenario.population.probabilities, np.full(m, 1.0 / m)).ravel()
    out: npt.NDArray[np.int64] = rng.multinomial(scenario.n_reports, joint / joint.sum()).reshape(-1, m)
    return out


def draw_counts(params: rappor.Params, strings: tuple[str, ...], by_cohort: npt.NDArray[np.int64],
                rng: np.random.Generator) -> rappor.Aggregate:
    """Aggregated counts of one google/rappor report per client (the module docstring's law)."""
    bloom = _bloom(strings, params)
    n1 = np.einsum("vc,vcb->cb", by_cohort, bloom)  # clients of cohort c whose filter sets bit b
    # The package's exact draw (rappor.testing.draw_counts), under the f that google/rappor's 7-bit PRR
    # really applies; the aggregate keeps the nominal parameters, as an analyst would write them.
    effective = rappor.Params(k=params.k, h=params.h, m=params.m, p=params.p, q=params.q,
                              f=google_effective_prob_f(params.prob_f))
    counts = exact_counts(effective, by_cohort.sum(axis=0), n1, rng)
    return rappor.Aggregate(params=params, counts=counts)


def draw_repeated_counts(scenario: ScenarioClass, rng: np.random.Generator) -> tuple[rappor.Aggregate,
                                                                                      npt.NDArray[np.int64]]:
    """Counts of ``reports_per_client`` reports per client, and the reports per value (the module docstring's law)."""
    params, pop = scenario.params, scenario.population
    n, r, m, u = scenario.n_reports, scenario.reports_per_client, params.num_cohorts, len(pop.strings)
    cohort = rng.integers(0, m, size=n)
    if scenario.repeat == "same":
        pair_cohort, pair_value = cohort, pop.sample(n, rng=rng)
        reps = np.full(n, r, dtype=np.int64)
    else:  # independent values; a value drawn twice by one client shares its PRR
        values = pop.sample(n * r, rng=rng).reshape(n, r)
        pairs, reps = np.unique(np.arange(n)[:, None] * u + values, return_counts=True)
        pair_cohort, pair_value = cohort[pairs // u], pairs % u
    groups, n_pairs = np.unique((pair_cohort * u + pair_value) * (r + 1) + reps, return_counts=True)
    g_reps, g_cv = groups % (r + 1), groups // (r + 1)
    g_cohort, g_value = g_cv // u, g_cv % u
    bloom = _bloom(pop.strings, params)[g_value, g_cohort]  # (groups, k)
    f = google_effective_prob_f(params.prob_f)
    prr_ones = rng.binomial(n_pairs[:, None], np.where(bloom == 1, 1.0 - f / 2, f / 2))
    ones = (rng.binomial(g_reps[:, None] * prr_ones, params.prob_q)
            + rng.binomial(g_reps[:, None] * (n_pairs[:, None] - prr_ones), params.prob_p))
    counts = np.zeros((m, params.num_bloombits + 1), dtype=np.int64)
    np.add.at(counts[:, 1:], g_cohort, ones)
    np.add.at(counts[:, 0], g_cohort, g_reps * n_pairs)
    per_value = np.bincount(g_value, weights=g_reps * n_pairs, minlength=u).astype(np.int64)
    return rappor.Aggregate(params=params, counts=counts), per_value


def collection(scenario: ScenarioClass, seed: int) -> Collection:
    """Draw one collection of ``scenario`` (deterministic in ``seed``; see the module docstring)."""
    rng = np.random.default_rng([14, seed])
    if scenario.reports_per_client > 1:
        aggregate, per_value = draw_repeated_counts(scenario, rng)
    else:
        by_cohort = clients(scenario, rng)
        aggregate = draw_counts(scenario.params, scenario.population.strings, by_cohort, rng)
        per_value = by_cohort.sum(axis=1)
    truth = {s: int(c) for s, c in zip(scenario.population.strings, per_value) if c > 0}
    return Collection(scenario=scenario, seed=seed, aggregate=aggregate, candidate_map=_candidate_map(scenario.name),
                      truth=truth)


def export_collection(col: Collection, root: str) -> Path:
    """Write ``col`` for google/rappor's ``bin/decode_dist.R``; returns the seed's directory.

    Layout: ``root/<class>/params.csv`` and ``map.csv`` (once per class) and
    ``root/<class>/seed<N>/counts.csv`` and ``truth.csv`` (``string,count``), all written by
    this package's writers.  The reference's runs are expected in
    ``root/<class>/seed<N>/run<R>/results.csv`` (``--output-dir``), as
    :func:`read_reference` reads them.
    """
    base = Path(root) / col.scenario.name
    base.mkdir(parents=True, exist_ok=True)
    if not (base / "params.csv").exists():
        rappor.formats.write_params(col.scenario.params, base / "params.csv")
    if not (base / "map.csv").exists():
        rappor.formats.write_map(col.candidate_map, base / "map.csv")
    out = base / f"seed{col.seed}"
    out.mkdir(exist_ok=True)
    rappor.formats.write_counts(col.aggregate, out / "counts.csv")
    (out / "truth.csv").write_text("string,count\n" + "".join(f"{s},{c}\n" for s, c in col.truth.items()))
    return out
