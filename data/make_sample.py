"""Regenerate the example data in data/ (deterministic: fixed seeds).  See data/README.md.

Run from the repository root:  python data/make_sample.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rappor import Params
from rappor.formats import write_candidates, write_counts, write_params, write_reports
from rappor.simulation import Population, candidate_strings, simulate

HERE = Path(__file__).parent


def main() -> None:
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    population = Population.zipf(20, exponent=1.5)
    sim = simulate(params, population, 20_000, method="client", rng=20240101)
    sample = HERE / "sample"
    sample.mkdir(exist_ok=True)
    write_params(params, sample / "params.csv")
    write_reports(sample / "reports.csv", sim.reports, [f"client{i}" for i in sim.report_clients])
    write_counts(sim.aggregate, sample / "counts.csv")
    (sample / "truth.csv").write_text(sim.truth_csv(), encoding="utf-8")
    write_candidates(candidate_strings(population, decoys=10), sample / "candidates.txt")
    write_candidates(candidate_strings(Population.zipf(100), decoys=20), HERE / "candidates_v100.txt")
    write_candidates(candidate_strings(Population.zipf(100), decoys=20, remove_every=10),
                     HERE / "candidates_v100_missing.txt")
    quickstart()


def quickstart() -> None:
    """The README's CLI quick start: values to encode, two earlier days of counts, candidates."""
    params = Params(k=16, h=2, m=16, p=0.5, q=0.75, f=0.5)
    population = Population.zipf(20, exponent=1.5)
    out = HERE / "quickstart"
    out.mkdir(exist_ok=True)
    write_params(params, out / "params.csv")
    values = population.sample(3_000, rng=np.random.default_rng(20240103))
    (out / "values.csv").write_text("client,value\n" + "".join(
        f"client{i:04d},{population.strings[v]}\n" for i, v in enumerate(values.tolist())), encoding="utf-8")
    for day, seed in (("day1", 20240101), ("day2", 20240102)):
        write_counts(simulate(params, population, 20_000, rng=seed).aggregate, out / f"{day}.csv")
    write_candidates(candidate_strings(population, decoys=5), out / "candidates.txt")


if __name__ == "__main__":
    main()
