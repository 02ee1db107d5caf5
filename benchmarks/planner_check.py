"""Check the planner's detection prediction against a binomial-count simulation.

For a few designs, predict the frequency detected with probability 0.5 and 0.9
(rappor.privacy.detection_frequency, Bonferroni over S candidates) and the one-bit
reference z(1 - alpha) sd / N, then simulate (rappor.privacy.simulate_detection) and
print predicted vs observed detection rates.

    python benchmarks/planner_check.py [--reps 300]
"""

from __future__ import annotations

import argparse

from rappor import Params
from rappor.privacy import detection_frequency, simulate_detection

DESIGNS = [
    (Params(num_bloombits=32, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.25), 200_000, 60),
    (Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5), 100_000, 40),
    (Params(num_bloombits=64, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0, prob_f=0.24), 1_000_000, 300),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    print(f"{'k':>4} {'h':>2} {'m':>4} {'N':>8} {'S':>4}  {'target':>8} {'frequency':>10} {'predicted':>9} {'observed':>8}")
    for params, n, s in DESIGNS:
        for power in (0.5, 0.9):
            pred = detection_frequency(params, n, s, power=power, rng=1)
            hits = simulate_detection(params, n, s, pred.frequency, critical_z=pred.critical_z, reps=args.reps,
                                      rng=args.seed)
            print(f"{params.k:>4} {params.h:>2} {params.m:>4} {n:>8} {s:>4}  {'GLS':>8} {pred.frequency:>10.5f} "
                  f"{power:>9.2f} {hits / args.reps:>8.3f}")
        ref = detection_frequency(params, n, s, rng=1).reference_frequency
        hits = simulate_detection(params, n, s, ref, critical_z=pred.critical_z, reps=args.reps, rng=args.seed)
        print(f"{params.k:>4} {params.h:>2} {params.m:>4} {n:>8} {s:>4}  {'ref.':>8} {ref:>10.5f} "
              f"{0.5:>9.2f} {hits / args.reps:>8.3f}")


if __name__ == "__main__":
    main()
