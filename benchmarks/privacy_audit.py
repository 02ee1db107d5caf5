"""Print the empirical privacy audit of rappor's encoders (and of a broken one).

    python benchmarks/privacy_audit.py [--samples N] [--pairs P] [--seed S]

For pairs of neighbouring values, every bit pattern's likelihood ratio is estimated
from N encodings per value and compared with e**epsilon_one (one report) and
e**epsilon_inf (permanent response) using Clopper-Pearson bounds; a correct encoder
fails with probability <= 1e-6.  The "never-clearing" encoder (a true Bloom bit is
never cleared, as in a widely installed Python RAPPOR package) must fail.
"""

from __future__ import annotations

import argparse
import time

from rappor import Params
from rappor.privacy import audit_encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configs = [Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5),
               Params(num_bloombits=8, num_hashes=1, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.25)]
    for params in configs:
        for encoder in ("client", "batch", "never-clearing"):
            started = time.perf_counter()
            result = audit_encoder(params, encoder=encoder, n_pairs=args.pairs, n_samples=args.samples,
                                   n_reports=args.samples, rng=args.seed)
            print(result.to_text())
            print(f"({time.perf_counter() - started:.1f} s)\n")


if __name__ == "__main__":
    main()
