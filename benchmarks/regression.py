"""Regression suite: a fixed set of simulated scenarios, decoded and scored against the truth.

Each scenario draws clients from a distribution (google/rappor's regression
distributions: Zipf, exponential, Gaussian, uniform), encodes them with the batch
encoder, decodes against a candidate list (with decoys, some with true strings removed)
and prints accuracy metrics and times, so accuracy and speed can be tracked from
change to change.  Seeds are fixed: two runs of the same code print the same metrics.

    python benchmarks/regression.py [--quick] [--only NAME] [--correction fdr|lfdr|...]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from rappor import Decoder, Params
from rappor.analysis import evaluate_result
from rappor.simulation import Population, candidate_strings, simulate

SMALL = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
CHROME = Params(num_bloombits=128, num_hashes=2, num_cohorts=128, prob_p=0.5, prob_q=0.75, prob_f=0.5)
STRICT = Params(num_bloombits=32, num_hashes=1, num_cohorts=64, prob_p=0.35, prob_q=0.65, prob_f=0.75)


@dataclass(frozen=True)
class Case:
    name: str
    params: Params
    dist: str
    unique: int
    clients: int
    decoys: int = 0
    remove_every: int = 0
    reports_per_client: int = 1


CASES = [
    Case("zipf1-small", SMALL, "zipf", 100, 100_000),
    Case("zipf1-decoys", SMALL, "zipf", 100, 100_000, decoys=100),
    Case("zipf1-missing", SMALL, "zipf", 100, 100_000, remove_every=10),
    Case("exp-small", SMALL, "exponential", 100, 100_000),
    Case("gauss-small", SMALL, "gaussian", 100, 100_000),
    Case("unif-small", SMALL, "uniform", 50, 100_000),
    Case("zipf1-chrome", CHROME, "zipf", 1000, 1_000_000, decoys=1000),
    Case("exp-chrome-4reports", CHROME, "exponential", 1000, 250_000, reports_per_client=4),
    Case("zipf1.5-strict", STRICT, "zipf", 200, 500_000, decoys=200, remove_every=20),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the clients")
    parser.add_argument("--only", default=None, help="run only the case with this name")
    parser.add_argument("--correction", default=None,
                        help="Decoder correction (fdr, lfdr, bonferroni, ...) [default: the Decoder's]")
    args = parser.parse_args()
    header = (f"{'case':<22}{'clients':>10}{'cands':>7}{'det':>5}{'FP':>4}{'FN':>5}{'TV':>8}{'alloc':>7}"
              f"{'unexpl':>8}{'true_un':>8}{'cover':>7}{'min_det':>8}{'max_mis':>8}{'sim_s':>7}{'dec_s':>7}{'met_s':>7}")
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for i, case in enumerate(CASES):
        if args.only and case.name != args.only:
            continue
        n = case.clients // 10 if args.quick else case.clients
        population = Population.make(case.dist, case.unique, 1.5 if case.name.startswith("zipf1.5") else None)
        t0 = time.perf_counter()
        sim = simulate(case.params, population, n, reports_per_client=case.reports_per_client, rng=1000 + i)
        candidates = candidate_strings(population, decoys=case.decoys, remove_every=case.remove_every)
        cmap = sim.candidate_map(candidates)  # hashing the candidates counts as simulation
        t1 = time.perf_counter()
        options = {} if args.correction is None else {"correction": args.correction}
        decoder = Decoder(**options)
        result = sim.decode(cmap, decoder=decoder)
        t2 = time.perf_counter()
        m = evaluate_result(result, sim.truth)
        t3 = time.perf_counter()
        print(f"{case.name:<22}{n:>10,}{m.n_candidates:>7}{m.n_detected:>5}{m.false_positives:>4}"
              f"{m.false_negatives:>5}{m.total_variation:>8.4f}{m.allocated_mass:>7.3f}"
              f"{m.unexplained_mass:>8.3f}{m.true_unexplained_mass:>8.3f}{m.coverage:>7.3f}"
              f"{m.smallest_detected:>8.4f}{m.largest_missed:>8.4f}{t1 - t0:>7.2f}{t2 - t1:>7.2f}{t3 - t2:>7.2f}",
              flush=True)
    print(f"total {time.perf_counter() - start:.1f} s (sim_s: simulate and hash the candidates; dec_s: decode; "
          f"met_s: metrics)")


if __name__ == "__main__":
    main()
