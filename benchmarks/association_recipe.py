"""Association: ``rappor decode-assoc``'s default against google/rappor's full recipe, per scenario class.

The full recipe is what ``bin/decode_assoc.R`` runs: marginal decode (``Decode``: Lasso/lsei,
five fits), support plus "Other" (``GetOtherProbs``), EM over their product from the
uniform table to its stopping rule (no cell moves by 1e-6, at most 1000 steps),
re-implemented in ``benchmarks/_google_recipe.py`` from the R code (cross-checked against
R itself: ``benchmarks/association_recipe_r.py``).  Both decode the same collections, encoded by google/rappor's
client rules (MD5 Bloom bits, HMAC PRR keyed by the client id, fresh IRR; a boolean as one
bit) with maps from its hashing, over evaluation seeds (``--first-seed``, default 9000) that
no design choice was made on.

Classes (``--classes``, comma-separated names of :data:`CLASSES`): string x boolean,
string x string and three variables (string x string x boolean: ``ssb``, the boolean depending on
the first string only; ``ssbx``, on both strings, an interaction), with and without strings
outside the candidates (every 5th value of each string variable left out of its
candidate list), 100k to 1M clients (string x string and three variables at 200k and 1M), low
and high privacy (``low``: k=32 h=2 m=32 p=0.25 q=0.75 f=0.5, the issue's; ``high``: the same with
f=0.75).  String x boolean also at 10M clients (``sb100-10m-*``, not in ``all``: the simulation takes
minutes, and the recipe's EM about 80 minutes and 8 GB a run).

Scored on every cell of each decoder's own table: total variation (TV) to the clients'
realized joint over (its categories, with every string that is not one of them in
"Other"); ours' 95% intervals' coverage, pooled and by band of true share.  A recipe run
whose marginal decode reports nothing (``decode_assoc.R`` stops: "ComputeDistributionEM
failed.") is counted in ``failed`` and scored with the table that puts everything in
Other (the product of the boolean's marginal with it).

Usage::

    python benchmarks/association_recipe.py [--classes sb50-100k-low,...] [--seeds 3] [--first-seed 9000]
        [--json FILE] [--recipe-from FILE ...]
    python benchmarks/association_recipe.py --no-recipe [--classes ...] [--seeds 10] [--first-seed 9002] [--json FILE]
    python benchmarks/association_recipe.py --summarize FILE [FILE ...]
    python benchmarks/association_recipe.py --no-recipe --baseline-shrinkage boolean-split ...   # paired, ours twice
    python benchmarks/association_recipe.py --reports-per-client 10 [--baseline-no-clients] ...  # daily reports
    python benchmarks/association_recipe.py --reports-per-client 30 --clients 200000 ...  # the class's clients, 30 each

``--no-recipe`` simulates the same collections and decodes them with ours only (seconds a collection
where the recipe takes minutes to an hour): it prints ours' TV and coverage, pooled over the seeds and
per band of true share with each band's binomial standard error and number of cells, and one line per
seed.  ``--summarize`` prints the same coverage table for stored runs.

Prints one row per class: ours' TV, the recipe's TV, their ratio (of the means), ours'
coverage (pooled; lowest band), seconds.  BLAS threads are pinned to 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402

import rappor  # noqa: E402
from rappor.analysis.association import AssociationDecoder, example_joint, total_variation  # noqa: E402

PRIVACY = {
    "low": rappor.Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5),
    "high": rappor.Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.75),
}


@dataclass(frozen=True)
class Case:
    """A scenario class: variables, strings per variable, outside strings, clients, privacy."""

    kind: str  # "sb", "ss", "ssb" or "ssbx" (three variables, the boolean depending on both strings)
    strings: tuple[int, ...]
    outside: bool
    n: int
    privacy: str


def _classes() -> dict[str, Case]:
    out = {}
    for privacy in ("low", "high"):
        for outside in (False, True):
            tag = "-out" if outside else ""
            out[f"sb50-100k-{privacy}{tag}"] = Case("sb", (50,), outside, 100_000, privacy)
            out[f"ss20x10-200k-{privacy}{tag}"] = Case("ss", (20, 10), outside, 200_000, privacy)
            out[f"ssb20x10-200k-{privacy}{tag}"] = Case("ssb", (20, 10), outside, 200_000, privacy)
            out[f"ssbx20x10-200k-{privacy}{tag}"] = Case("ssbx", (20, 10), outside, 200_000, privacy)
            out[f"sb100-1m-{privacy}{tag}"] = Case("sb", (100,), outside, 1_000_000, privacy)
            out[f"ss20x10-1m-{privacy}{tag}"] = Case("ss", (20, 10), outside, 1_000_000, privacy)
            out[f"ssb20x10-1m-{privacy}{tag}"] = Case("ssb", (20, 10), outside, 1_000_000, privacy)
    for privacy in ("low", "high"):  # not in "all": the recipe's EM takes about 80 minutes and 8 GB a run
        for outside in (False, True):
            out[f"sb100-10m-{privacy}{'-out' if outside else ''}"] = Case("sb", (100,), outside, 10_000_000, privacy)
    return out


CLASSES = _classes()


def _scenario(case: Case) -> tuple[np.ndarray, list, list]:
    remove = 5 if case.outside else 0
    if case.kind == "sb":
        return example_joint("string-bool", case.strings[0], remove_every=remove)
    joint, values, cands = example_joint("string-string", case.strings[0], case.strings[1], remove_every=remove)
    if case.kind == "ss":
        return joint, values, cands
    a = np.arange(case.strings[0])[:, None]
    if case.kind == "ssb":  # three variables: the boolean depends on the first string as in string x boolean
        p_true = np.broadcast_to(0.2 + 0.1 * (a % 7), joint.shape)
    else:  # "ssbx": an interaction, the boolean depends on both strings
        b = np.arange(case.strings[1])[None, :]
        p_true = np.clip(0.2 + 0.1 * (a % 7) + 0.2 * ((b % 3) - 1), 0.02, 0.98)
    joint3 = joint[:, :, None] * np.stack([p_true, 1 - p_true], axis=2)
    return joint3, values + [None], cands + [None]


BANDS = [(0, 0.001), (0.001, 0.005), (0.005, 0.02), (0.02, 1.0)]


def _covered(res, truth: np.ndarray) -> list:
    """Per cell (flat), whether the result's 95% interval holds the truth."""
    ci = res.confidence_interval()
    inside = (ci.low <= truth) & (truth <= ci.high) & np.isfinite(ci.low) & np.isfinite(ci.high)
    return inside.reshape(-1).astype(int).tolist()


def _ours(sim, shrinkage: str | None = None, clients: bool = True) -> dict:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoder = AssociationDecoder() if shrinkage is None else AssociationDecoder(shrinkage=shrinkage)
        res = decoder.decode(sim.reports, sim.variables, clients=sim.report_clients if clients else None)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    # The process's peak resident size (kB on Linux) before and after the decode: the decode's own
    # peak is the second when it is larger than the first (the simulation's is the first).
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    truth = sim.truth(res.categories)
    ci = res.confidence_interval()
    inside = (ci.low <= truth) & (truth <= ci.high) & np.isfinite(ci.low) & np.isfinite(ci.high)
    other = [i for i, c in enumerate(res.categories) if c and c[-1] == "Other"]
    other_mass = float(sum(np.take(res.proportion, -1, axis=i).sum() for i in other))
    return {"tv": total_variation(res.proportion, truth), "seconds": seconds, "cpu_seconds": cpu,
            "peak_mb_before": rss_before / 1024, "peak_mb_after": rss_after / 1024, "cells": int(truth.size),
            "cell_truth": truth.reshape(-1).tolist(), "cell_covered": inside.reshape(-1).astype(int).tolist(),
            "cell_width": (ci.high - ci.low).reshape(-1).tolist(), "other": other_mass,
            "cell_covered_unshifted": _covered(dataclasses.replace(res, selection_shift=None), truth),
            "cell_estimate": res.proportion.reshape(-1).tolist(),
            "cell_signed": None if res.signed_maximum is None else res.signed_maximum.reshape(-1).tolist()}


def _recipe(sim, seed: int) -> dict:
    started = time.perf_counter()
    fit = recipe.full_recipe(sim.reports, sim.variables, rng=np.random.default_rng(seed))
    seconds = time.perf_counter() - started
    if fit is None:  # everything in Other: the other variables' tables are unknown, so uniform
        cats = [["Other"] if v.kind == "string" else ["TRUE", "FALSE"] for v in sim.variables]
        truth = sim.truth(cats)
        table = np.full(truth.shape, 1.0 / truth.size)
        return {"tv": total_variation(table, truth), "seconds": seconds, "failed": 1, "iterations": 0, "cells": 0}
    truth = sim.truth(fit.categories)
    return {"tv": total_variation(fit.table, truth), "seconds": seconds, "failed": 0,
            "iterations": fit.iterations, "cells": int(truth.size)}


def run(args: argparse.Namespace) -> None:
    names = [n for n in CLASSES if "-10m-" not in n] if args.classes == "all" else args.classes.split(",")
    stored = {}
    for path in args.recipe_from or []:
        with open(path) as fh:
            for line in fh:
                row = json.loads(line)
                stored[(row["class"], row["seed"])] = row["recipe"]
    rows = []
    repeats = args.reports_per_client
    labels = []
    for base in names:
        case = CLASSES[base]
        # R reports a client: the class's reports from n / R clients (memoized PRRs), named <class>-r<R>;
        # --clients N: N clients whatever R (<class>[-r<R>]-n<N>)
        name = base if repeats == 1 else f"{base}-r{repeats}"
        n_clients = case.n // repeats if args.clients is None else args.clients
        if args.clients is not None:
            name += f"-n{args.clients}"
        labels.append(name)
        joint, values, cands = _scenario(case)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if args.recipe_from and (name, seed) not in stored:
                continue  # only the stored collections
            sim = recipe.simulate_google(PRIVACY[case.privacy], joint, values, n_clients, candidates=cands,
                                         rng=seed, reports_per_client=repeats)
            if args.no_recipe:
                recipe_run = None
            else:
                recipe_run = stored[(name, seed)] if (name, seed) in stored else _recipe(sim, seed)
            out = {"class": name, "seed": seed, "ours": _ours(sim, args.shrinkage), "recipe": recipe_run}
            if args.baseline_shrinkage:
                out["baseline"] = _ours(sim, args.baseline_shrinkage)
            elif args.baseline_no_clients:
                out["baseline"] = _ours(sim, args.shrinkage, clients=False)
            rows.append(out)
            brief = {"class": name, "seed": seed,
                     **{m: {f: v for f, v in out[m].items() if not f.startswith("cell_")}
                        for m in ("ours", "recipe", "baseline") if out.get(m) is not None}}
            print(json.dumps(brief), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(out) + "\n")
    _print_table(rows, labels)
    _print_coverage(rows, labels)
    _print_paired(rows, labels)


def _by_class(rows: list, names: list):
    """``(name, that class's rows by seed)`` for every class of ``names`` with rows."""
    for name in names:
        sel = sorted((r for r in rows if r["class"] == name), key=lambda r: r["seed"])
        if sel:
            yield name, sel


def _print_paired(rows: list, names: list) -> None:
    """Ours against the same decoder with ``--baseline-shrinkage`` (or without client ids) on the same collections: mean TVs, the
    standard error of the mean difference, and both coverages per band."""
    rows = [r for r in rows if r.get("baseline") is not None]
    if not rows:
        return
    print("paired against the baseline (--baseline-shrinkage, or --baseline-no-clients): TV ours / baseline (se of the "
          "mean difference); coverage by band")
    for name, sel in _by_class(rows, names):
        ours = np.array([r["ours"]["tv"] for r in sel])
        base = np.array([r["baseline"]["tv"] for r in sel])
        se = (ours - base).std(ddof=1) / np.sqrt(len(sel)) if len(sel) > 1 else float("nan")
        print(f"{name} ({len(sel)} seeds): TV {ours.mean():.4f} / {base.mean():.4f} ({se:.4f}); ratio {ours.mean() / base.mean():.3f}")
        for m in ("ours", "baseline"):
            truth, covered = _pooled_cells(sel, m)
            bands = "  ".join(f"{label} {c:.3f} [{n}]" for label, n, c, _ in _band_coverage(truth, covered))
            print(f"    {m:<9} {bands}")


def _pooled_cells(sel: list, side: str = "ours") -> tuple[np.ndarray, np.ndarray]:
    """The cells' true shares and whether each was covered, pooled over the runs ``sel`` (one side)."""
    truth = np.concatenate([r[side]["cell_truth"] for r in sel])
    covered = np.concatenate([r[side]["cell_covered"] for r in sel]).astype(float)
    return truth, covered


def _band_coverage(truth: np.ndarray, covered: np.ndarray) -> list[tuple[str, int, float, float]]:
    """Per band of true share (and pooled): (label, cells, coverage, its binomial standard error)."""
    out = []
    for label, sel in [(f"[{lo:g}, {hi:g})", (truth >= lo) & (truth < hi)) for lo, hi in BANDS] + [("pooled", truth >= 0)]:
        n = int(sel.sum())
        c = float(covered[sel].mean()) if n else float("nan")
        out.append((label, n, c, float(np.sqrt(c * (1 - c) / n)) if n else float("nan")))
    return out


def _print_coverage(rows: list, names: list) -> None:
    """Ours' coverage per class and band of true share, pooled over seeds, with binomial SEs; then per seed.

    The binomial standard error treats cells as independent; cells of one collection share their
    errors, so the per-seed spread is the better guide to how noisy a pooled figure is.
    """
    print("ours' 95% coverage by band of true share: coverage (binomial SE) [cells]; per seed: pooled [cells], TV, Other")
    for name, sel in _by_class(rows, names):
        truth, covered = _pooled_cells(sel)
        bands = "  ".join(f"{label} {c:.3f} ({se:.3f}) [{n}]" for label, n, c, se in _band_coverage(truth, covered))
        tv = np.array([r["ours"]["tv"] for r in sel])
        print(f"{name} ({len(sel)} seeds; TV {tv.mean():.4f} sd {tv.std(ddof=1) if tv.size > 1 else 0.0:.4f}): {bands}")
        for r in sel:
            cov = np.asarray(r["ours"]["cell_covered"], dtype=float)
            print(f"    {r['seed']}: {cov.mean():.3f} [{cov.size}]  TV {r['ours']['tv']:.4f}  Other {r['ours']['other']:.3f}")


def _print_table(rows: list, names: list) -> None:
    """One row per class: ours' and the recipe's mean TV, their ratio, ours' coverage, seconds."""
    rows = [r for r in rows if r["recipe"] is not None]
    if not rows:
        return
    seeds = sorted({r["seed"] for r in rows})
    print(f"seeds {', '.join(map(str, seeds))}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'class':<26}{'ours TV':>9}{'recipe TV':>11}{'ratio':>7}{'max ratio':>10}{'coverage':>10}{'min band':>10}"
          f"{'ours Other':>11}{'failed':>8}{'seeds':>6}{'ours s':>8}{'recipe s':>10}")
    for name, sel in _by_class(rows, names):
        ours = np.array([r["ours"]["tv"] for r in sel])
        ref = np.array([r["recipe"]["tv"] for r in sel])
        truth, covered = _pooled_cells(sel)
        bands = [covered[(truth >= lo) & (truth < hi)].mean() for lo, hi in BANDS if ((truth >= lo) & (truth < hi)).sum() >= 20]
        print(f"{name:<26}{ours.mean():>9.4f}{ref.mean():>11.4f}{ours.mean() / ref.mean():>7.2f}{(ours / ref).max():>10.2f}"
              f"{covered.mean():>10.3f}{min(bands) if bands else float('nan'):>10.3f}"
              f"{np.mean([r['ours']['other'] for r in sel]):>11.3f}{sum(r['recipe']['failed'] for r in sel):>8}{len(sel):>6}"
              f"{np.mean([r['ours']['seconds'] for r in sel]):>8.1f}{np.mean([r['recipe']['seconds'] for r in sel]):>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", default="all", help=f"comma-separated, of: {', '.join(CLASSES)}; or 'all'")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=9000)
    parser.add_argument("--json", default=None, help="append every run (with per-cell coverage) to this file")
    parser.add_argument("--recipe-from", action="append", default=None, metavar="FILE",
                        help="reuse the recipe's results stored in this --json file (repeatable): the recipe is "
                             "deterministic given the collection and seed, and its EM takes minutes; only the "
                             "collections stored there are decoded")
    parser.add_argument("--shrinkage", default=None, help="ours' AssociationDecoder(shrinkage=...) [default: its default]")
    parser.add_argument("--baseline-shrinkage", default=None, metavar="S",
                        help="also decode each collection with AssociationDecoder(shrinkage=S) and print the paired "
                             "difference (e.g. boolean-split: the default before the conditionals' prior)")
    parser.add_argument("--reports-per-client", type=int, default=1, metavar="R",
                        help="each client sends R report tuples under one PRR (a daily report), the class's reports "
                             "coming from 1/R as many clients; ours is told whose each tuple is; classes named "
                             "<class>-r<R> [default: 1]")
    parser.add_argument("--clients", type=int, default=None, metavar="N",
                        help="the number of clients, whatever --reports-per-client (e.g. the class's own with "
                             "30 reports each, or a single report from as few clients as 30 a client leaves); "
                             "classes named <class>[-r<R>]-n<N> [default: the class's reports over R]")
    parser.add_argument("--baseline-no-clients", action="store_true",
                        help="also decode each collection without the client ids (every tuple its own client) and "
                             "print the paired difference")
    parser.add_argument("--no-recipe", action="store_true",
                        help="decode the collections with ours only (no recipe run, no TV ratio): coverage per band "
                             "pooled over the seeds, with binomial standard errors, and per seed")
    parser.add_argument("--summarize", nargs="+", default=None, metavar="FILE",
                        help="print the table of the runs stored in these --json files (a later line replaces an "
                             "earlier one of the same class and seed) and exit")
    args = parser.parse_args()
    if args.summarize:
        latest = {}
        for path in args.summarize:
            with open(path) as fh:
                for line in fh:
                    row = json.loads(line)
                    latest[(row["class"], row["seed"])] = row
        names = list(dict.fromkeys(c for c, _ in latest))
        _print_table(list(latest.values()), names)
        _print_coverage(list(latest.values()), names)
        _print_paired(list(latest.values()), names)
        return
    import scipy.linalg  # noqa: F401  (scipy's BLAS loaded first, so that the limit covers it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        run(args)


if __name__ == "__main__":
    main()
