"""Association analysis: accuracy against the truth and speed; prints tables.

``accuracy``: simulated collections with a known joint distribution (string x boolean and
string x string), with and without strings outside the candidate lists; for each, the
joint table's total variation to the clients' realized joint and the coverage of its
95% intervals, for

* ``ours``: :class:`rappor.analysis.association.AssociationDecoder` defaults (detected candidates +
  "Other" with the bit rates of the undetected candidates and random strings, mix-SQP to a
  certified gap of 1e-3, projected standard errors);
* ``ours/profile`` (``--profile``): the same estimate with profile-likelihood intervals
  (``AssociationDecoder(profile_level=0.95)``);
* ``ours/shrunk`` (``--shrunk``): the same with Other's rates fitted to the unexplained counts;
* ``ours/ref-other``: the same with google/rappor's ``GetOtherProbs``;
* ``true-marginals product`` (a yardstick, not an estimator): the product of the true
  marginals over the same categories, i.e. what is left when the dependence is not
  estimated at all;
* ``baseline``: google/rappor's EM re-implemented plainly, *without* its Other category -- not
  the full recipe of ``decode_assoc.R`` (marginal decode, ``GetOtherProbs``, EM), which
  ``benchmarks/association_recipe.py`` compares against
  (:func:`rappor.testing.reference_em`): the same detected candidates, no "Other", one
  row per report, EM from the uniform table for at most 1000 iterations (epsilon 1e-6),
  ``ComputeVar`` standard errors.

Total variation is over the cells (detected candidates + Other) x (the other variable's
categories); the truth puts every string that is not a category into Other, and the
baseline's Other cells are 0.  Coverage counts the cells whose interval holds the truth
(the baseline has no Other cells to cover).  Coverage is printed pooled over the seeds'
cells with its standard error across seeds (``sd / sqrt(seeds)`` of the per-seed shares).

``independence``: the level and power of the independence test.  Under the null the
collection is drawn from the product of the scenario's marginals, under the alternative
from the scenario itself; prints the share of p-values below 0.05 (and 0.01) over seeds
with its binomial standard error.

``calibration``: where the intervals miss.  Per cell, ``z = (estimate - truth) /
std_error``, pooled over seeds and grouped by the cell's true share: mean and sd of ``z``,
coverage of the Wald interval (``|z| <= 1.96``) and of the default 95% interval (upper end
raised to the projected law's quantile) (``--exact``: every candidate and no Other, the
exactly specified model; ``--profile``: also the coverage of the profile-likelihood
intervals).  ``accuracy --bands`` prints the same coverage table (without ``z``) beside the
total variation.

``speed``: one string x boolean collection of N report pairs and C candidates (all of them
in the table, plus Other): time and peak memory of each stage of the decode.

Usage::

    python benchmarks/association.py accuracy [--n 100000] [--seeds 10] [--first-seed 0] [--pairs sb,ss]
        [--outside both|yes|no] [--no-baseline] [--no-ref-other] [--shrunk] [--profile] [--bands]
    python benchmarks/association.py independence [--n 100000] [--seeds 40] [--first-seed 0] [--pairs sb,ss]
        [--outside both|yes|no]
    python benchmarks/association.py calibration [--n 100000] [--seeds 6] [--pair ss] [--outside yes|no] [--exact]
        [--profile] [--first-seed 0]
    python benchmarks/association.py speed [--n 1000000] [--candidates 100] [--method sqp] [--no-std-errors]
        [--no-independence] [--params default|issue] [--categories all|detected] [--load N] [--threads]
        [--pass-threads N]

BLAS threads are pinned to 1 (threadpoolctl) unless ``--threads`` (the decoder pins them during the
decode anyway); ``--pass-threads N`` caps the threads of the fit's passes over the data (default: the
cores, at most 4).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time
import warnings

import numpy as np

import rappor
from rappor.analysis.association import AssociationDecoder, example_joint, simulate_association, total_variation
from rappor.testing import association_pass_threads, boundary_interval, reference_conditional_probabilities, reference_em

PARAMS = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _scenario(pair: str, outside: bool) -> tuple[np.ndarray, list, list]:
    """string x bool: v1..v100, Zipf(1), P(TRUE | v_i) = 0.2 + 0.1 (i mod 7); string x string: a1..a30 x b1..b10
    (rappor.analysis.association.example_joint); outside: every 5th value of each string variable is not a candidate."""
    if pair == "sb":
        return example_joint("string-bool", 100, remove_every=5 if outside else 0)
    return example_joint("string-string", 30, 10, remove_every=5 if outside else 0)


def _coverage(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> tuple[int, int]:
    ok = np.isfinite(low) & np.isfinite(high)
    return int(((low <= truth) & (truth <= high) & ok).sum()), int(truth.size)


def _baseline(sim, res) -> dict:
    """association.R plainly: same categories minus Other, per-report EM, ComputeVar."""
    started = time.perf_counter()
    conds = []
    cats = []
    for batch, var, labels in zip(sim.reports, sim.variables, res.categories):
        names = [c for c in labels if c != "Other"]
        index = {s: i for i, s in enumerate(var.candidate_map.strings)}
        conds.append(reference_conditional_probabilities(batch, var, [index[s] for s in names]))
        cats.append(names)
    fit = reference_em(conds, max_em_iters=1000, epsilon=1e-6, estimate_var=True)
    seconds = time.perf_counter() - started
    full_cats = [c + (["Other"] if "Other" in labels else []) for c, labels in zip(cats, res.categories)]
    truth = sim.truth(full_cats)
    est = np.zeros(truth.shape)
    est[tuple(slice(0, len(c)) for c in cats)] = fit.table
    inner = truth[tuple(slice(0, len(c)) for c in cats)]
    z = 1.959963984540054
    cov = _coverage(np.clip(fit.table - z * fit.std_error, 0, 1), np.clip(fit.table + z * fit.std_error, 0, 1), inner)
    return {"tv": total_variation(est, truth), "covered": cov[0], "cells": cov[1], "seconds": seconds,
            "iterations": fit.iterations}


def _ours(sim, other: str, profile: bool = False) -> tuple[dict, object]:
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder(other=other, profile_level=0.95 if profile else None,
                                 independence_test=not profile).decode(sim.reports, sim.variables)
    seconds = time.perf_counter() - started
    truth = sim.truth(res.categories)
    ci = res.confidence_interval()
    cov = _coverage(ci.low, ci.high, truth)
    z = 1.959963984540054
    wald_low = np.clip(res.proportion - z * res.std_error, 0, 1)
    wald_high = np.clip(res.proportion + z * res.std_error, 0, 1)
    inside = (ci.low <= truth) & (truth <= ci.high) & np.isfinite(ci.low) & np.isfinite(ci.high)
    inside_wald = (wald_low <= truth) & (truth <= wald_high) & np.isfinite(wald_low) & np.isfinite(wald_high)
    return {"tv": total_variation(res.proportion, truth), "covered": cov[0], "cells": cov[1], "seconds": seconds,
            "iterations": res.iterations, "pvalue": res.independence.pvalue if res.independence else None,
            "shape": list(res.shape), "converged": res.converged, "covered_wald": int(inside_wald.sum()),
            "cell_truth": truth.reshape(-1).tolist(), "cell_covered": inside.reshape(-1).astype(int).tolist(),
            "cell_covered_wald": inside_wald.reshape(-1).astype(int).tolist()}, res


#: Bands of true share for the coverage tables (``--bands``).
BANDS = [(0, 0.001), (0.001, 0.005), (0.005, 0.02), (0.02, 1.0), (0, 1.0)]


def _coverage_tables(rows: list, pairs: list, cases: tuple) -> None:
    """Coverage of ours' 95% intervals (the default), of its Wald intervals and (``--profile``) of the profile ones,
    by true share, pooled and per seed."""
    columns = {"intervals": lambda r: r["ours"]["cell_covered"], "Wald": lambda r: r["ours"]["cell_covered_wald"]}
    if any("ours/profile" in r for r in rows):
        columns["profile"] = lambda r: r["ours/profile"]["cell_covered"]
    for pair in pairs:
        for outside in cases:
            sel = [r for r in rows if r["pair"] == pair and r["outside"] == outside]
            if not sel:
                continue
            truth = np.concatenate([r["ours"]["cell_truth"] for r in sel])
            covered = {label: np.concatenate([get(r) for r in sel]) for label, get in columns.items()}
            print(f"\n{pair}, strings outside {outside}: coverage of ours' 95% intervals by true share "
                  f"(seeds {', '.join(str(r['seed']) for r in sel)})")
            print(f"{'true share':<16}{'cells':>7}" + "".join(f"{label:>11}" for label in columns))
            for low, high in BANDS:
                band = (truth >= low) & ((truth < high) | (high == 1.0))
                if band.any():
                    name = "all" if (low, high) == (0, 1.0) else f"[{low:g}, {high:g}{']' if high == 1.0 else ')'}"
                    print(f"{name:<16}{band.sum():>7}" + "".join(f"{covered[label][band].mean():>11.3f}" for label in columns))
            for label, get in columns.items():
                shares = np.array([np.mean(get(r)) for r in sel])
                sd = shares.std(ddof=1) / np.sqrt(shares.size) if shares.size > 1 else float("nan")
                print(f"per seed, {label}: {', '.join(f'{v:.3f}' for v in shares)} (sd / sqrt(seeds) {sd:.3f})")


def accuracy(args: argparse.Namespace) -> None:
    rows = []
    cases = {"both": (False, True), "yes": (True,), "no": (False,)}[args.outside]
    for pair in args.pairs.split(","):
        for outside in cases:
            joint, values, cands = _scenario(pair, outside)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                sim = simulate_association(PARAMS, joint, values, args.n, candidates=cands, rng=1000 + seed)
                out = {"pair": pair, "outside": outside, "seed": seed, "n": args.n}
                out["ours"], res = _ours(sim, "undetected")
                truth = sim.truth(res.categories)
                product = np.multiply.outer(truth.sum(axis=1), truth.sum(axis=0))
                out["true-marginals product"] = {"tv": total_variation(product, truth), "covered": 0, "cells": 0,
                                                 "seconds": 0.0, "iterations": 0}
                if args.profile:
                    out["ours/profile"], _ = _ours(sim, "undetected", profile=True)
                if args.shrunk:
                    out["ours/shrunk"], _ = _ours(sim, "shrunk")
                if not args.no_ref_other:
                    out["ours/ref-other"], _ = _ours(sim, "reference")
                if not args.no_baseline:
                    out["baseline"] = _baseline(sim, res)
                rows.append(out)
                brief = {k: ({f: x for f, x in v.items() if not f.startswith("cell_")} if isinstance(v, dict) else v)
                         for k, v in out.items()}
                print(json.dumps(brief), file=sys.stderr, flush=True)
    methods = ["ours", "ours/profile", "ours/shrunk", "ours/ref-other"] + ([] if args.no_baseline else ["baseline"]) + ["true-marginals product"]
    print(f"N = {args.n:,}, seeds {args.first_seed}..{args.first_seed + args.seeds - 1} (rng 1000 + seed), "
          f"params {PARAMS.as_dict()}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'pair':<6}{'outside':<9}{'method':<24}{'TV mean':>9}{'TV sd':>8}{'coverage':>10}{'cov se':>8}{'Wald cov':>10}"
          f"{'cells':>7}{'seconds':>9}{'iters':>7}")
    for pair in args.pairs.split(","):
        for outside in cases:
            sel = [r for r in rows if r["pair"] == pair and r["outside"] == outside]
            for m in methods:
                sel_m = [r for r in sel if m in r]
                if not sel_m:
                    continue
                tv = np.array([r[m]["tv"] for r in sel_m])
                covered = sum(r[m]["covered"] for r in sel_m)
                cells = sum(r[m]["cells"] for r in sel_m)
                secs = np.mean([r[m]["seconds"] for r in sel_m])
                its = np.mean([r[m]["iterations"] for r in sel_m])
                shares = np.array([r[m]["covered"] / r[m]["cells"] for r in sel_m if r[m]["cells"]])
                cov_se = shares.std(ddof=1) / np.sqrt(shares.size) if shares.size > 1 else float("nan")
                wald = (f"{sum(r[m]['covered_wald'] for r in sel_m) / max(cells, 1):>10.3f}"
                        if "covered_wald" in sel_m[0][m] else f"{'':>10}")
                print(f"{pair:<6}{str(outside):<9}{m:<24}{tv.mean():>9.4f}{tv.std(ddof=1) if tv.size > 1 else 0:>8.4f}"
                      f"{covered / max(cells, 1):>10.3f}{cov_se:>8.3f}{wald}{cells / len(sel_m):>7.1f}{secs:>9.2f}{its:>7.0f}")
    if args.bands:
        _coverage_tables(rows, args.pairs.split(","), cases)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


def independence(args: argparse.Namespace) -> None:
    cases = {"both": (False, True), "yes": (True,), "no": (False,)}[args.outside]
    print(f"N = {args.n:,}, {args.seeds} seeds per row, params {PARAMS.as_dict()}")
    print(f"{'pair':<6}{'outside':<9}{'truth':<14}{'P(p<0.05)':>10}{'se':>7}{'P(p<0.01)':>10}{'median p':>10}"
          f"{'mean LR':>9}{'mean df':>9}{'cells':>7}{'seconds':>9}")
    for pair in args.pairs.split(","):
        for outside in cases:
            joint, values, cands = _scenario(pair, outside)
            null = np.multiply.outer(joint.sum(axis=1), joint.sum(axis=0))
            for label, table in (("independent", null), ("dependent", joint)):
                pvalues, cells, secs, lrs, dfs = [], [], [], [], []
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    sim = simulate_association(PARAMS, table, values, args.n, candidates=cands, rng=5000 + seed)
                    started = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = AssociationDecoder().decode(sim.reports, sim.variables)
                    secs.append(time.perf_counter() - started)
                    pvalues.append(res.independence.pvalue)
                    lrs.append(res.independence.statistic)
                    dfs.append(res.independence.df)
                    cells.append(res.proportion.size)
                    print(json.dumps({"pair": pair, "outside": outside, "truth": label, "seed": seed,
                                      "pvalue": pvalues[-1], "method": res.independence.method,
                                      "shape": list(res.shape)}), file=sys.stderr, flush=True)
                p = np.array(pvalues)
                rate = float((p < 0.05).mean())
                print(f"{pair:<6}{str(outside):<9}{label:<14}{rate:>10.3f}{np.sqrt(rate * (1 - rate) / p.size):>7.3f}"
                      f"{float((p < 0.01).mean()):>10.3f}{float(np.median(p)):>10.3f}{np.mean(lrs):>9.2f}"
                      f"{np.mean(dfs):>9.1f}{np.mean(cells):>7.1f}"
                      f"{np.mean(secs):>9.2f}", flush=True)


def calibration(args: argparse.Namespace) -> None:
    joint, values, cands = _scenario(args.pair, args.outside == "yes")
    options: dict = {"candidates": "all", "other": "none"} if args.exact else {}
    if args.profile:
        options["profile_level"] = 0.95
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        sim = simulate_association(PARAMS, joint, values, args.n, candidates=cands, rng=1000 + seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = AssociationDecoder(independence_test=False, **options).decode(sim.reports, sim.variables)
        truth = sim.truth(res.categories).reshape(-1)
        z = (res.proportion.reshape(-1) - truth) / res.std_error.reshape(-1)
        low, high = boundary_interval(res.proportion, res.std_error, res.projected_law, 0.95)   # the default
        inside = (low.reshape(-1) <= truth) & (truth <= high.reshape(-1))
        profile = res.confidence_interval(0.95)   # profile intervals with --profile
        inside_profile = (profile.low.reshape(-1) <= truth) & (truth <= profile.high.reshape(-1))
        rows += [(t, v, c, p) for t, v, c, p in zip(truth, z, inside, inside_profile) if np.isfinite(v)]
        print(json.dumps({"seed": seed, "cells": int(truth.size), "wald": float(np.mean(np.abs(z) <= 1.959963984540054)),
                          "intervals": float(inside.mean()), "profile": float(inside_profile.mean()) if args.profile else None,
                          "seconds": res.diagnostics.get("covariance_seconds")}),
              file=sys.stderr, flush=True)
    truth, z, inside, inside_profile = np.array(rows).T
    print(f"N = {args.n:,}, seeds {args.first_seed}..{args.first_seed + args.seeds - 1}, pair {args.pair}, "
          f"outside {args.outside}, {'every candidate, no Other' if args.exact else 'defaults'}")
    print(f"{'true share':<16}{'cells':>7}{'mean z':>8}{'sd z':>7}{'Wald cov':>10}{'intervals':>11}"
          + (f"{'profile':>9}" if args.profile else ""))
    for low, high in BANDS:
        sel = (truth >= low) & ((truth < high) | (high == 1.0))
        if sel.any():
            name = "all" if (low, high) == (0, 1.0) else f"[{low:g}, {high:g}{']' if high == 1.0 else ')'}"
            print(f"{name:<16}{sel.sum():>7}{z[sel].mean():>+8.2f}{z[sel].std():>7.2f}"
                  f"{np.mean(np.abs(z[sel]) <= 1.959963984540054):>10.3f}{inside[sel].mean():>11.3f}"
                  + (f"{inside_profile[sel].mean():>9.3f}" if args.profile else ""))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: The issue's parameters (k=32 h=2 m=32 p=0.25 q=0.75 f=0.5; ``speed --params issue``).
ISSUE_PARAMS = rappor.Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)


def _busy() -> None:  # pragma: no cover - a competing process of ``speed --load``
    while True:
        pass


def speed(args: argparse.Namespace) -> None:
    import multiprocessing

    params = ISSUE_PARAMS if args.params == "issue" else PARAMS
    joint, values, _ = example_joint("string-bool", args.candidates)
    t0 = time.perf_counter()
    sim = simulate_association(params, joint, values, args.n, rng=0)
    t_sim = time.perf_counter() - t0
    base_mb = _peak_mb()
    dec = AssociationDecoder(candidates=args.categories, method=args.method, max_iterations=args.max_iterations,
                             std_errors=not args.no_std_errors, independence_test=not args.no_independence,
                             intervals=args.intervals)
    # --load N: N busy processes (pure Python loops) compete for the cores during the decode.
    load = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for proc in load:
        proc.start()
    time.sleep(0.5 if load else 0.0)
    t1 = time.perf_counter()
    c1 = time.process_time()
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:
            warnings.simplefilter("ignore")
            if args.pass_threads is not None:
                stack.enter_context(association_pass_threads(args.pass_threads))
            res = dec.decode(sim.reports, sim.variables)
    finally:
        t2 = time.perf_counter()
        c2 = time.process_time()
        for proc in load:
            proc.terminate()
    d = res.diagnostics
    print(f"N = {args.n:,} report pairs, {args.candidates} candidates ({args.categories}; {params}) x boolean: "
          f"{res.proportion.size} cells, {res.n_patterns:,} distinct patterns, method {args.method}, "
          f"{args.load} competing busy process(es), passes on {args.pass_threads or 'default'} thread(s)")
    print(f"simulate            {t_sim:8.2f} s")
    print(f"marginal decode     {d['marginal_seconds']:8.2f} s")
    print(f"group + likelihood  {d['likelihood_seconds']:8.2f} s")
    print(f"fit                 {d['em_elapsed_time']:8.2f} s  ({res.iterations} iterations, gap {res.gap:.2g}, "
          f"converged {res.converged})")
    print(f"covariance          {d['covariance_seconds']:8.2f} s  (intervals: {d['interval_method']}, "
          f"signed maximum in {d['signed_iterations']} Newton steps)")
    print(f"independence test   {d['independence_seconds']:8.2f} s  (marginal fits: {d['independence_iterations']} iterations)")
    print(f"shrinkage           {d['shrinkage_seconds']:8.2f} s")
    print(f"decode total        {t2 - t1:8.2f} s wall, {c2 - c1:.2f} s CPU; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"peak RSS            {_peak_mb():8.0f} MB (after simulating: {base_mb:.0f} MB)")
    truth = sim.truth(res.categories)
    print(f"TV to the truth     {total_variation(res.proportion, truth):8.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    a = sub.add_parser("accuracy")
    a.add_argument("--n", type=int, default=100_000)
    a.add_argument("--seeds", type=int, default=10)
    a.add_argument("--pairs", default="sb,ss")
    a.add_argument("--no-baseline", action="store_true")
    a.add_argument("--no-ref-other", action="store_true", help="skip google's Other rates (slow at 1M x 300 cells)")
    a.add_argument("--outside", choices=("both", "yes", "no"), default="both")
    a.add_argument("--shrunk", action="store_true", help="also Other's rates fitted to the counts ('shrunk')")
    a.add_argument("--profile", action="store_true", help="also profile-likelihood intervals (ours/profile)")
    a.add_argument("--json", default=None)
    a.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    a.add_argument("--bands", action="store_true",
                   help="also ours' coverage (default and Wald intervals) by true share and per seed")
    i = sub.add_parser("independence")
    i.add_argument("--n", type=int, default=100_000)
    i.add_argument("--seeds", type=int, default=40)
    i.add_argument("--pairs", default="sb,ss")
    i.add_argument("--outside", choices=("both", "yes", "no"), default="both")
    i.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1 (rng 5000 + seed)")
    c = sub.add_parser("calibration")
    c.add_argument("--n", type=int, default=100_000)
    c.add_argument("--seeds", type=int, default=6)
    c.add_argument("--pair", choices=("sb", "ss"), default="ss")
    c.add_argument("--outside", choices=("yes", "no"), default="yes")
    c.add_argument("--exact", action="store_true", help="every candidate in the table and no Other")
    c.add_argument("--profile", action="store_true", help="also the coverage of profile-likelihood intervals")
    c.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    s = sub.add_parser("speed")
    s.add_argument("--n", type=int, default=1_000_000)
    s.add_argument("--candidates", type=int, default=100)
    s.add_argument("--method", choices=("sqp", "em"), default="sqp")
    s.add_argument("--max-iterations", type=int, default=1000)
    s.add_argument("--no-std-errors", action="store_true", help="skip the covariance (the fit alone)")
    s.add_argument("--no-independence", action="store_true", help="skip the independence test")
    s.add_argument("--params", choices=("default", "issue"), default="default",
                   help="k=16 h=2 m=64 p=0.5 q=0.75 f=0.5 (default) or k=32 h=2 m=32 p=0.25 q=0.75 f=0.5 (issue)")
    s.add_argument("--categories", choices=("all", "detected"), default="all",
                   help="every candidate in the table (default) or the detected ones (decode-assoc's default)")
    s.add_argument("--intervals", choices=("signed", "projected", "wald"), default="signed",
                   help="the decoder's intervals (signed: one more Newton step or two, each an information matrix)")
    s.add_argument("--load", type=int, default=0, help="run N busy processes during the decode (a loaded machine)")
    s.add_argument("--pass-threads", type=int, default=None,
                   help="most threads of the fit's passes over the data (default: the cores, at most 4)")
    for p in (a, i, c, s):
        p.add_argument("--threads", action="store_true", help="let BLAS use every core")
    args = parser.parse_args()
    if not args.threads:
        try:
            import scipy.linalg  # noqa: F401  (load scipy's own BLAS first, so that the limit covers it)
            from threadpoolctl import threadpool_limits

            threadpool_limits(1)
        except ImportError:  # pragma: no cover
            pass
    {"accuracy": accuracy, "independence": independence, "calibration": calibration, "speed": speed}[args.what](args)


if __name__ == "__main__":
    main()
