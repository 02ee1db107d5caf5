"""Association: width and coverage of the signed and the projected intervals, per band of true share.

Small collections (tens of thousands of clients) at k=16 h=2 m=16 p=0.25 q=0.75 f=0.5 by default,
with the joint laws of ``association_recipe.py``'s classes (``sb``: 50 strings x boolean; ``ss``:
20 x 10 strings; ``ssb``: 20 x 10 strings x boolean), encoded by google/rappor's client rules.
Each collection is decoded twice, ``AssociationDecoder(intervals="signed")`` (the default) and
``intervals="projected"``; the point estimates are the same, the intervals differ.

Usage::

    python benchmarks/association_interval_width.py --kind ssb --clients 20000 --seeds 8
    python benchmarks/association_interval_width.py --kind sb --clients 100000 --seeds 6 --k 32

Prints, per kind of interval, the pooled coverage, the number of cells at ``[0, 1]`` and per band of
true share the cells, their coverage and median width (``docs/association.md``, *Where the signed
intervals say little*).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402
import association_recipe as classes  # noqa: E402

import rappor  # noqa: E402
from rappor.analysis.association import AssociationDecoder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("sb", "ss", "ssb"), default="ssb")
    parser.add_argument("--clients", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--k", type=int, default=16, help="Bloom bits and cohorts [default: 16]")
    args = parser.parse_args()
    params = rappor.Params(num_bloombits=args.k, num_hashes=2, num_cohorts=args.k, prob_p=0.25, prob_q=0.75,
                           prob_f=0.5)
    strings = (50,) if args.kind == "sb" else (20, 10)
    joint, values, cands = classes._scenario(classes.Case(args.kind, strings, False, args.clients, "low"))
    rows: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {"signed": [], "projected": []}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        sim = recipe.simulate_google(params, joint, values, args.clients, candidates=cands, rng=seed)
        for kind, kept in rows.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = AssociationDecoder(intervals=kind).decode(sim.reports, sim.variables,
                                                                clients=sim.report_clients)
            truth = sim.truth(res.categories)
            ci = res.confidence_interval()
            kept.append((truth.ravel(), ((ci.low <= truth) & (truth <= ci.high)).ravel(), (ci.high - ci.low).ravel()))
    for kind, kept in rows.items():
        truth = np.concatenate([r[0] for r in kept])
        covered = np.concatenate([r[1] for r in kept])
        width = np.concatenate([r[2] for r in kept])
        bands = []
        for lo, hi in classes.BANDS:
            band = (truth >= lo) & (truth < hi)
            if band.any():
                bands.append(f"[{lo:g}, {hi:g}) {int(band.sum())} cells: coverage {covered[band].mean():.3f}, "
                             f"median width {np.median(width[band]):.3f}")
        print(f"{args.kind} {args.clients:,} clients, {kind}: pooled coverage {covered.mean():.3f}, "
              f"{int((width > 0.99).sum())} cells at [0, 1]")
        for line in bands:
            print("    " + line)


if __name__ == "__main__":
    main()
