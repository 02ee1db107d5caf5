"""Simulate a two-variable collection with a known joint distribution, decode it and compare.

Draws N clients from a joint distribution, encodes one report per variable for each
(same cohort, independent permanent responses; with --reports-per-client R, R reports
of each variable under one permanent response, as a client that reports daily),
decodes the joint table with the association decoder (a client's reports together, by
its id: their exact likelihood under one permanent response) and compares it with the
clients' true joint (the realized shares of the N clients drawn).  Writes into DIR,
as one set: params.csv, reports.csv (client,cohort,<var1>,<var2>), map1.csv (and
map2.csv), truth.csv (the joint law the clients are drawn from, which the realized
shares scatter around), assoc-results.csv, metrics.json and report.html (heat maps
of the estimate beside the truth), and prints a summary.

Joint distributions (--pair):
  string-bool    v1..vU, Zipf(1); P(TRUE | v_i) = 0.2 + 0.1 (i mod 7)
  string-string  a1..aU, Zipf(1); b given a_i: Poisson(1) over
                 b1..bU2 shifted by i mod U2

Without --params: k=16 h=2 m=64 p=0.5 q=0.75 f=0.5.  --remove-every R leaves every R-th
value of each string variable out of its candidate list (strings outside the candidates).

Example:
    rappor simulate-assoc --out demo --clients 200000 --remove-every 5
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from typing import Any

from ._common import CommandFiles, add_params_argument, add_seed_argument, integer, json_text, remove_every

NAME = "simulate-assoc"
USAGE = ("%(prog)s --out DIR [--params PATH] [--pair KIND]\n"
         "       [--clients N] [--reports-per-client R] [--unique U] [OPTIONS]")
HELP = "simulate a two-variable collection, decode the joint distribution, write a report"
ORDER = 61


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor simulate-assoc``."""
    add_params_argument(parser, required=False, default="k=16 h=2 m=64 p=0.5 q=0.75 f=0.5")
    parser.add_argument("--pair", choices=("string-bool", "string-string"), default="string-bool",
                        help="kinds of the two variables [default: string-bool]")
    parser.add_argument("--clients", type=integer(1), default=100_000, metavar="N",
                        help="number of clients [default: 100000]")
    parser.add_argument("--reports-per-client", dest="reports_per_client", type=integer(1), default=1, metavar="R",
                        help="report tuples a client sends, its permanent responses memoized [default: 1]")
    parser.add_argument("--unique", type=integer(1), default=100, metavar="U",
                        help="values of the first variable [default: 100]")
    parser.add_argument("--unique2", type=integer(1), default=10, metavar="U2",
                        help="values of the second variable (string-string) [default: 10]")
    parser.add_argument("--remove-every", type=remove_every, default=0, metavar="R",
                        help="leave every R-th value out of the candidates (0: keep all; 1 would leave no candidate) "
                             "[default: 0]")
    parser.add_argument("--categories", choices=("detected", "all"), default="detected",
                        help="categories of a string variable: detected candidates, or all [default: detected]")
    parser.add_argument("--other", choices=("undetected", "shrunk", "reference", "none"), default="undetected",
                        help="the Other category (see rappor decode-assoc --help) [default: undetected]")
    add_seed_argument(parser, default=0, help_text="random seed")
    parser.add_argument("--no-report", action="store_true", help="skip report.html (no matplotlib needed)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")


#: The files a run writes into --out.
OUTPUT_NAMES = ("params.csv", "reports.csv", "map1.csv", "map2.csv", "truth.csv", "assoc-results.csv", "metrics.json",
                "report.html")


def _coverage_text(coverage: float | None, shape: tuple[int, ...]) -> str:
    """The intervals' coverage, or why there is none (tables above the covariance's size get no standard errors)."""
    if coverage is not None:
        return f"{coverage:.3f}"
    return f"n/a ({math.prod(shape):,} cells: too many for standard errors)"


def _pvalue_text(pvalue: float | None, shape: tuple[int, ...]) -> str:
    """The independence p-value, or why there is none (a table with one row or column has no test)."""
    if pvalue is not None and pvalue == pvalue:
        return f"{pvalue:.3g}"
    return "none (1 row)" if min(shape) < 2 else "none"


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` in; the files of DIR out."""
    return CommandFiles(inputs=[("--params", args.params)] if args.params is not None else [],
                        outputs=[("--out", os.path.join(args.out, name)) for name in OUTPUT_NAMES])


def run(args: argparse.Namespace) -> int:
    """Simulate, decode, score and write the files."""
    import numpy as np

    from .._util.outputs import atomic_output, check_output_directory, output_directory, outputs_together
    from ..analysis.association import AssociationDecoder, example_joint, simulate_association, total_variation
    from ..formats import read_params, write_assoc_reports, write_assoc_results, write_map, write_params
    from ._simulate import DEFAULT_PARAMS

    started = time.perf_counter()
    params = DEFAULT_PARAMS if args.params is None else read_params(args.params)
    out = check_output_directory(args.out)  # before the work; created when the outputs are written
    joint, values, candidates = example_joint(args.pair, args.unique, args.unique2, remove_every=args.remove_every)
    names = ["value", "flag"] if args.pair == "string-bool" else ["first", "second"]
    sim = simulate_association(params, joint, values, args.clients, candidates=candidates, names=names,
                               reports_per_client=args.reports_per_client, rng=args.seed)
    whose = np.arange(sim.n_clients) if sim.report_clients is None else sim.report_clients
    t_sim = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = AssociationDecoder(candidates=args.categories, other=args.other).decode(sim.reports, sim.variables,
                                                                                         clients=whose)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    t_dec = time.perf_counter()
    truth = sim.truth(result.categories)
    ci = result.confidence_interval()
    covered = (ci.low <= truth) & (truth <= ci.high)
    has_interval = np.isfinite(ci.low) & np.isfinite(ci.high)  # none above the covariance's size limit
    metrics = {
        "total_variation": total_variation(result.proportion, truth),
        "interval_coverage": float(covered[has_interval].mean()) if has_interval.any() else None,
        "true_other_mass": _other_mass(truth, result.categories),
        "independence_pvalue": None if result.independence is None else result.independence.pvalue,
    }
    kinds = [v.kind for v in sim.variables]
    details = {"pair": args.pair, "clients": args.clients, "reports per client": args.reports_per_client, "values": " x ".join(str(len(v)) for v in sim.values),
               "candidates": " x ".join(str(len(v.candidate_map)) for v in sim.variables),
               "remove every": args.remove_every, "categories": args.categories, "other": args.other,
               "seed": args.seed, "simulate seconds": round(t_sim - started, 3),
               "decode seconds": round(t_dec - t_sim, 3)}
    page = None
    if not args.no_report:  # rendered first: a failure leaves no partial set of files
        from ..report import render_association_report

        page = render_association_report(result=result, params=params, kinds=kinds, truth=truth, metrics=metrics,
                                         details=details, title=f"RAPPOR association simulation: {args.pair}, "
                                                                f"{args.clients:,} clients")
    output_directory(out)
    with outputs_together():  # the whole set or none of it
        write_params(params, out / "params.csv")
        write_assoc_reports(out / "reports.csv", sim.reports, names, [f"client{i}" for i in whose.tolist()])
        for j, var in enumerate(sim.variables):
            if var.kind == "string":
                write_map(var.candidate_map, out / f"map{j + 1}.csv")
        with atomic_output(out / "truth.csv") as fh:
            fh.write(",".join(names) + ",proportion\n")
            for idx in np.ndindex(*sim.joint.shape):
                fh.write(",".join(sim.values[a][i] for a, i in enumerate(idx)) + f",{sim.joint[idx]:.10g}\n")
        write_assoc_results(result, out / "assoc-results.csv")
        with atomic_output(out / "metrics.json") as fh:
            fh.write(json_text({"params": params.as_dict(), "simulation": details, "metrics": metrics,
                                "fit": {k: v for k, v in result.summary().items() if k not in ("categories",)}}))
        if page is not None:
            with atomic_output(out / "report.html") as fh:
                fh.write(page)
    lines = [
        f"simulated {args.clients:,} clients"
        + (f" x {args.reports_per_client} reports" if args.reports_per_client > 1 else "")
        + f" ({args.pair}, {' x '.join(str(len(v)) for v in sim.values)} values) and decoded them:"
        f" {time.perf_counter() - started:.1f} s in all",
        f"{'table':<26}{' x '.join(str(c) for c in result.shape):>12}",
        f"{'total variation':<26}{metrics['total_variation']:>12.4f}",
        f"{'interval coverage (95%)':<26}{_coverage_text(metrics['interval_coverage'], result.shape):>12}",
        f"{'true Other mass':<26}{metrics['true_other_mass']:>12.4f}",
        f"{'independence p-value':<26}{_pvalue_text(metrics['independence_pvalue'], result.shape):>12}",
        f"{'fit':<26}{result.method + ', ' + str(result.iterations) + ' iterations':>12}",
        f"wrote {out}/{{params,reports,truth,assoc-results}}.csv, map*.csv, metrics.json"
        + (", report.html" if page is not None else ""),
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _other_mass(truth: Any, categories: Any) -> float:
    """Share of clients with at least one value in an "Other" category."""
    import numpy as np

    mask = np.zeros(truth.shape, dtype=bool)
    for axis, cats in enumerate(categories):
        if cats and cats[-1] == "Other":
            index: list[Any] = [slice(None)] * truth.ndim
            index[axis] = len(cats) - 1
            mask[tuple(index)] = True
    return float(truth[mask].sum())
