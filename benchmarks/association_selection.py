"""Association: how far choosing the categories on the same reports moves the table (the winner's curse).

A string variable's categories are the candidates its marginal decode detects, on the reports
the joint table is then fitted to.  This script decodes google/rappor-encoded collections
(``association_recipe.py``'s classes and simulator) three ways, the decode otherwise the default:

``same``
    the categories detected on the same reports (the default decode);
``indep``
    the categories detected on an independent collection of the same population (seed + 50,000);
``truth``
    the candidates whose true share is at least 0.005.

and prints, per seed and mode, the summed error of the detected candidates' cells of true share
below 0.02 ("small") in the signed maximum, that sum's standard error from the signed covariance
and their ratio (``z small``), the same ratio for Other's cells (``z Other``), Other's and the
larger cells' summed errors, the table's cells, TV and 95% coverage; then each mode's means over
the seeds.  A finite-sample bias of the maximum falls like ``1/sqrt(N)`` in standard errors:
``--n`` decodes the same population at another number of clients.

Usage::

    python benchmarks/association_selection.py [--classes sb100-1m-high] [--seeds 100-109]
        [--modes same,indep,truth] [--n N]

Design seeds only (100-109): the evaluation seeds (9000+) are ``association_recipe.py``'s.
BLAS threads are pinned to 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402
import association_recipe as classes  # noqa: E402

import rappor  # noqa: E402
from rappor.analysis.association import AssociationDecoder  # noqa: E402


class _Chosen:
    """The default marginal decode, with its ``detected`` replaced by a given choice of candidates."""

    def __init__(self, detected: np.ndarray) -> None:
        self.detected = np.asarray(detected, dtype=bool)

    def decode(self, aggregate: rappor.Aggregate, cmap: rappor.CandidateMap) -> rappor.DecodeResult:
        return dataclasses.replace(rappor.Decoder().decode(aggregate, cmap), detected=self.detected)


def _scores(res, sim) -> dict:
    truth = sim.truth(res.categories).reshape(-1)
    rows = np.indices(res.proportion.shape)[0].reshape(-1)
    other = np.array([res.categories[0][i] == "Other" for i in rows])
    small = (truth < 0.02) & ~other
    err = res.signed_maximum.reshape(-1) - truth
    cov = res.signed_covariance
    a, o = small.astype(float), other.astype(float)
    ci = res.confidence_interval()
    covered = (ci.low.reshape(-1) <= truth) & (truth <= ci.high.reshape(-1))
    return {"cells": int(truth.size), "small_error": float(a @ err), "small_se": float(np.sqrt(a @ cov @ a)),
            "z_small": float(a @ err / np.sqrt(a @ cov @ a)), "other_error": float(o @ err),
            "z_other": float(o @ err / np.sqrt(o @ cov @ o)), "large_error": float(err[~small & ~other].sum()),
            "tv": float(0.5 * np.abs(res.proportion.reshape(-1) - truth).sum()), "coverage": float(covered.mean())}


def run(args: argparse.Namespace) -> None:
    lo, hi = map(int, args.seeds.split("-"))
    case = classes.CLASSES[args.classes]
    n = args.n or case.n
    joint, values, cands = classes._scenario(case)
    params = classes.PRIVACY[case.privacy]
    out: dict[str, list[dict]] = {}
    for seed in range(lo, hi + 1):
        sim = recipe.simulate_google(params, joint, values, n, candidates=cands, rng=seed)
        var = sim.variables[0]
        for mode in args.modes.split(","):
            if mode == "same":
                decoder = None
            elif mode == "indep":
                other = recipe.simulate_google(params, joint, values, n, candidates=cands, rng=seed + 50_000)
                decoder = _Chosen(rappor.Decoder().decode(rappor.Aggregate.from_reports(other.reports[0]),
                                                          var.candidate_map).detected)
            else:
                shares = sim.truth([list(var.candidate_map.strings), ["TRUE", "FALSE"]]).sum(axis=1)
                decoder = _Chosen(shares >= 0.005)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = AssociationDecoder(decoder=decoder).decode(sim.reports, sim.variables)
            row = {"class": args.classes, "n": n, "seed": seed, "mode": mode, **_scores(res, sim)}
            out.setdefault(mode, []).append(row)
            print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    print(f"{args.classes}, {n:,} clients, seeds {lo}-{hi}: means (sd) over the seeds")
    for mode, rows in out.items():
        col = {k: np.array([r[k] for r in rows]) for k in rows[0] if isinstance(rows[0][k], float)}
        sd = (lambda v: v.std(ddof=1) if v.size > 1 else 0.0)
        print(f"  {mode:<6} small error {col['small_error'].mean():+.4f}  z small {col['z_small'].mean():+.2f} "
              f"({sd(col['z_small']):.2f})  z Other {col['z_other'].mean():+.2f} ({sd(col['z_other']):.2f})  "
              f"Other error {col['other_error'].mean():+.4f}  large error {col['large_error'].mean():+.4f}  "
              f"cells {np.mean([r['cells'] for r in rows]):.0f}  TV {col['tv'].mean():.4f}  "
              f"coverage {col['coverage'].mean():.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", default="sb100-1m-high", help="one string x boolean class of association_recipe.py")
    parser.add_argument("--seeds", default="100-109", help="first-last design seed")
    parser.add_argument("--modes", default="same,indep,truth")
    parser.add_argument("--n", type=int, default=None, help="clients (default: the class's)")
    args = parser.parse_args()
    import scipy.linalg  # noqa: F401  (scipy's BLAS loaded first, so that the limit covers it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        run(args)


if __name__ == "__main__":
    main()
