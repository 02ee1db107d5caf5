"""Batch (simulation) encoding speed: reports/s of :func:`rappor.simulation.simulate_reports`.

Measures, on one core, the packed-bit encoder (PRR + IRR, the same law as the real
client) at k = 32 and k = 128, for dyadic probabilities (p=0.5, q=0.75, f=0.5: few
random words per 64 bits) and for non-dyadic ones (p=0.35, q=0.65, f=0.4: every digit
of the 32-bit thresholds), with and without PRR reuse (4 reports per PRR), and the
same figure for a naive numpy encoder that draws one float per bit, as a ratio.

Targets (issue 7): >= 3 million reports/s at k = 32 and >= 1 million at k = 128.

    python benchmarks/simulate_reports.py [--reports N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from rappor import Params  # noqa: E402
from rappor import ReportBatch  # noqa: E402
from rappor.simulation import Population  # noqa: E402
from rappor.testing import bloom_table, encode_rows  # noqa: E402


def naive(params: Params, bloom_bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One float per bit for the PRR and one for the IRR, then np.packbits (the obvious numpy code)."""
    u = rng.random(bloom_bits.shape)
    prr = np.where(u < params.f / 2, 1, np.where(u < params.f, 0, bloom_bits))
    irr = rng.random(bloom_bits.shape) < np.where(prr == 1, params.q, params.p)
    return np.packbits(irr, axis=1, bitorder="little")


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.reports
    rng = np.random.default_rng(0)
    pop = Population.zipf(1000)
    print(f"{'k':>4} {'p,q,f':<15} {'PRR reuse':<10} {'reports/s':>14} {'naive/s':>12} {'speed-up':>9}")
    for k in (32, 128):
        for probs in ((0.5, 0.75, 0.5), (0.35, 0.65, 0.4)):
            params = Params(num_bloombits=k, num_hashes=2, num_cohorts=64, prob_p=probs[0], prob_q=probs[1],
                            prob_f=probs[2])
            values = pop.sample(n, rng=rng)
            cohorts = rng.integers(0, 64, size=n)
            table, rows = bloom_table(params, pop.strings, values, cohorts)  # hashing: set-up, not timed
            for reuse in (False, True):
                if reuse:
                    units = np.arange(n) // 4  # 4 reports per PRR
                    unit_rows = rows[::4]
                    fn = lambda: encode_rows(params, table, unit_rows, units, rng)  # noqa: E731
                else:
                    fn = lambda: encode_rows(params, table, rows, None, rng)  # noqa: E731
                words = fn()
                ReportBatch(params=params, cohorts=cohorts, words=words)  # valid output
                rate = n / best_of(fn, args.repeat)
                naive_rate = ""
                ratio = ""
                if not reuse:
                    m = min(n, 500_000)
                    bits = np.unpackbits(table[rows[:m]], axis=1, bitorder="little")[:, :k]
                    nr = m / best_of(lambda: naive(params, bits, rng), 1)
                    naive_rate, ratio = f"{nr:>12,.0f}", f"{rate / nr:>8.1f}x"
                print(f"{k:>4} {','.join(f'{x:g}' for x in probs):<15} {'4/PRR' if reuse else 'no':<10} "
                      f"{rate:>14,.0f} {naive_rate:>12} {ratio:>9}")


if __name__ == "__main__":
    main()
