"""Calibration of discovery's confirmation p-values in the far tail (docs/discovery.md, section 7).

For each seed: simulate the benchmark's collection (``benchmarks/discovery.py``: Zipf(1.1)
population of 20,000 strings, h = 1, discovery k = 256, m = 32, segment 2, max_length 30,
share 0.75; ``--population long-rare --slot-weights ...`` for the long values), run :func:`rappor.analysis.discovery.discover` with pruning and the z >= 3 display
filter turned off (so every pooled value keeps its p-value; the search itself is unchanged),
and count the pooled values *nobody holds* with p <= 1e-3 .. 1e-7 against the count
expected of exact p-values (pooled values times the level).  ``--trim light`` trims one
cohort at each end instead of ``m // 8`` (the trial of section 7).

``--synthetic N`` also scores N random absent values (random bytes of the length found
in the slot with the most pooled values) against the same law, through the real hashes
and residual counts; ``--tilt`` compares the FFT law's tail with an exponentially tilted
Monte Carlo on the same slots (tests/analysis/discovery/test_discovery_confirmation.py does this on synthetic
counts).

Run:  python benchmarks/discovery_pvalues.py --seeds 0 1 2 --trim light
      python benchmarks/discovery_pvalues.py --seeds 10 --trim light --synthetic 2000000 --slot 4 --prefix fexfoo --tilt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rappor.analysis.discovery import DiscoverySpec, discover, simulate_discovery
from rappor.testing import ConfirmationNull, discovery_settings, tilted_tail_probability

sys.path.insert(0, str(Path(__file__).resolve().parent))
from discovery import POPULATIONS, _params  # noqa: E402  (the collections of benchmarks/discovery.py)

LEVELS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def run_seed(n: int, eps: float, seed: int, synthetic: int, tilt: bool, prefix: bytes = b"",
             slot: int | None = None, population: str = "realistic",
             slot_weights: tuple[int, ...] | None = None) -> np.ndarray:
    spec = DiscoverySpec(params=_params(eps, 256, 32), max_length=30, segment=2, alphabet="bytes",
                         slot_weights=slot_weights)
    pop = POPULATIONS[population](seed)
    sim = simulate_discovery(_params(eps, 128, 64), spec, pop, n, discovery_share=0.75, rng=seed)
    captured: dict[str, ConfirmationNull] = {}
    original = ConfirmationNull.pvalues

    def pvalues(self: ConfirmationNull, stats: np.ndarray, first: np.ndarray) -> np.ndarray:
        captured["null"] = self
        return original(self, stats, first)

    ConfirmationNull.pvalues = pvalues  # type: ignore[method-assign]
    try:
        res = discover(sim.discovery, spec)
    finally:
        ConfirmationNull.pvalues = original  # type: ignore[method-assign]
    truth = sim.truth  # a property: built once
    absent = np.array([truth.get(s, 0) == 0 for s in res.strings])
    p = res.pvalue[absent]
    counts = np.array([res.n_tested] + [int((p <= q).sum()) for q in LEVELS], dtype=np.float64)
    top = set(sim.top(10))
    found = set(res.candidates())
    false = int((res.significant & absent).sum())
    smallest = ", ".join(f"{q:.2g}" for q in np.sort(p)[:3])
    print(f"seed {seed}: pooled {res.n_tested:,}; absent with p <= " +
          ", ".join(f"{q:g}: {int(c)} ({res.n_tested * q:.2g})" for q, c in zip(LEVELS, counts[1:])) +
          f"; smallest absent p {smallest}; significant {int(res.significant.sum())}, false {false}, "
          f"recall@10 {sum(s in found for s in top) / 10:.1f}", flush=True)
    # The absent values by kind: a prefix of 4+ bytes some client holds (the children of true
    # prefixes), or not (an absent branch); valid UTF-8 or not (bytes no client's text has).
    prefixes = {v.encode("utf-8")[:i] for v in truth for i in range(4, 31)}
    values = [v for v, a in zip(res.values, absent) if a]
    kinds = {"true 4+ byte prefix": np.array([v[:max(4, len(v) - 2)] in prefixes for v in values], dtype=bool)}
    kinds["absent branch"] = ~kinds["true 4+ byte prefix"]
    kinds["not UTF-8"] = np.array([not _is_utf8(v) for v in values], dtype=bool)
    for name, mask in kinds.items():
        print(f"  {name}: {int(mask.sum()):,} absent; p <= " +
              ", ".join(f"{q:g}: {int((p[mask] <= q).sum())} ({mask.sum() * q:.2g})" for q in LEVELS[:4]), flush=True)
    null = captured["null"]
    if synthetic or tilt:
        first = int(np.bincount(res.first_slot).argmax()) if slot is None else slot
        if synthetic:
            gen = np.random.default_rng(seed)
            length = spec.prefix_length(int(first))
            ps = []
            for start in range(0, synthetic, 200_000):
                size = min(200_000, synthetic - start)
                rows = gen.integers(0, 256, size=(size, length - len(prefix)), dtype=np.uint8)
                vals = [prefix + bytes(r) for r in rows]
                stat = np.zeros(size)
                for s in sorted(null.terms):
                    if s > first:
                        stat += null.statistic(s, spec.bloom_bits(vals, s), np.zeros(size))
                ps.append(null.pvalues(stat, np.full(size, first)))
            sp = np.concatenate(ps)
            print(f"  {synthetic:,} random absent values of {length} bytes starting {prefix!r} "
                  f"(found in slot {first}): p <= " +
                  ", ".join(f"{q:g}: {int((sp <= q).sum())} ({synthetic * q:.3g})" for q in LEVELS[:4]), flush=True)
        if tilt:
            gen = np.random.default_rng(seed + 1)
            x = np.concatenate([null.terms[s] for s in sorted(null.terms) if s > first])
            mean, sd = float(x.mean(axis=1).sum()), float(np.sqrt(x.var(axis=1).sum()))
            for q in (1e-5, 1e-7, 1e-9):
                lo, hi = mean, mean + 12 * sd
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if null.pvalues(np.array([mid]), np.array([first]))[0] > q else (lo, mid)
                p_fft = float(null.pvalues(np.array([hi]), np.array([first]))[0])
                est, se = tilted_tail_probability(x, hi, gen)
                print(f"  law after slot {first} at z {(hi - mean) / sd:.2f}: FFT {p_fft:.4g}, tilted Monte Carlo "
                      f"{est:.4g} +- {se:.2g}", flush=True)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, default=1_000_000)
    ap.add_argument("--eps", type=float, default=4.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--trim", choices=("default", "light"), default="default")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N")
    ap.add_argument("--prefix", default="", help="with --synthetic: the random values start with these (UTF-8) bytes")
    ap.add_argument("--slot", type=int, help="with --synthetic/--tilt: the slot the values are found in "
                    "(default: the one with the most pooled values)")
    ap.add_argument("--tilt", action="store_true")
    ap.add_argument("--population", choices=sorted(POPULATIONS), default="realistic",
                    help="benchmarks/discovery.py's populations (long-rare: the 10 M case)")
    ap.add_argument("--slot-weights", default=None, help="W0,W1,...: one integer per slot (rappor discover)")
    args = ap.parse_args()
    weights = tuple(int(w) for w in args.slot_weights.split(",")) if args.slot_weights else None
    # Every pooled value keeps its p-value (pruning drops values whose evidence fell back,
    # and the result lists z >= 3 only; neither changes the search nor the p-values).  The
    # light trim cuts one cohort at each end (the section 7 trial) instead of m // 8.
    total = np.zeros(1 + len(LEVELS))
    with discovery_settings(keep_every_value=True, trim=1 if args.trim == "light" else None):
        for seed in args.seeds:
            total += run_seed(args.clients, args.eps, seed, args.synthetic, args.tilt, args.prefix.encode(),
                              args.slot, args.population, weights)
    print(f"all seeds: pooled {int(total[0]):,}; absent with p <= " +
          ", ".join(f"{q:g}: {int(c)} ({total[0] * q:.3g} expected)" for q, c in zip(LEVELS, total[1:])))


if __name__ == "__main__":
    main()
