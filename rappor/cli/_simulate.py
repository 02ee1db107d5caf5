"""Simulate a collection end to end and write every file of the pipeline plus a report.

Draws N clients from a distribution over U strings (or from a string,count file),
encodes their reports, sums the bits, decodes against a candidate list (optionally
with decoys and with every R-th true string removed) and compares with the truth.
Writes into DIR: params.csv, counts.csv, map.csv, candidates.txt, truth.csv,
results.csv, metrics.json and report.html (each file atomically), and prints the
detected strings, what a decode of this size can be expected to find (the planner's smallest
detectable share and expected number of detections, as 'rappor plan' computes them, next to
what was found; metrics.json's detection_outlook) and a summary: accuracy against the truth, the masses (allocated: the
sum of results.csv's proportion column; unallocated: one minus allocated; unexplained: the decoder's estimate of the
share the candidates do not explain, as in metrics.json and summary.json) and the time
of the simulation, of the decode and of the whole command.  With few cohorts the top
strings' p-values can tie at the floor of the random-string null; a note says so (see
'rappor decode --help').

Without --params the parameters are k=16 h=2 m=64 p=0.5 q=0.75 f=0.5; without other
options: 100,000 clients, Zipf (s=1) over 100 strings, seed 0.

Example:
    rappor simulate --out demo
    rappor simulate --params params.csv --clients 1000000 --dist exponential \\
        --unique 1000 --decoys 100 --remove-every 10 --seed 1 --out run1
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from .._util.outputs import output_directory
from ..exceptions import InvalidParameterError
from ..formats import read_params, write_params
from ..params import Params
from .._util.progress import steps
from ._common import (CommandFiles, add_estimator_argument, add_params_argument, add_quiet_argument, add_seed_argument,
                      integer, json_text, real, remove_every)

NAME = "simulate"
USAGE = "%(prog)s --out DIR [--params PATH] [--clients N] [--unique U]\n       [--decoys D] [OPTIONS]"
HELP = "simulate a collection, decode it and write a report"
ORDER = 60

#: The parameters used without --params (a small, readable configuration).
DEFAULT_PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)


#: The files written into --out DIR (with --discover: ``_discover_simulate.OUTPUT_NAMES``).
OUTPUT_NAMES = ("params.csv", "counts.csv", "map.csv", "candidates.txt", "truth.csv", "results.csv", "metrics.json",
                "report.html")


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params``, ``--population`` (and ``--discovery-params``) in; the files of DIR out.

    An input inside DIR must not be one of the files the run replaces there.
    """
    from ._discover_simulate import OUTPUT_NAMES as DISCOVERY_OUTPUT_NAMES

    named = (("--params", args.params), ("--population", args.population),
             ("--discovery-params", getattr(args, "discovery_params", None)))
    names = DISCOVERY_OUTPUT_NAMES if getattr(args, "discover", False) else OUTPUT_NAMES
    return CommandFiles(inputs=[(option, path) for option, path in named if path is not None],
                        outputs=[("--out", os.path.join(args.out, name)) for name in names])


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor simulate``."""
    add_params_argument(parser, required=False, default="k=16 h=2 m=64 p=0.5 q=0.75 f=0.5")
    parser.add_argument("--clients", type=integer(1), default=100_000, metavar="N",
                        help="number of clients [default: 100000]")
    parser.add_argument("--dist", default="zipf", choices=("zipf", "exponential", "gaussian", "uniform"),
                        help="distribution of values over v1..vU [default: zipf]")
    parser.add_argument("--dist-param", type=real(0.0), default=None, metavar="X",
                        help="Zipf exponent, exponential rate or Gaussian std (not for uniform) "
                             "[default: 1, U/5 and U/6]")
    parser.add_argument("--unique", type=integer(1), default=100, metavar="U",
                        help="number of distinct values [default: 100]")
    parser.add_argument("--population", metavar="PATH", default=None,
                        help="read the distribution from a string,count CSV instead of --dist/--unique "
                             "[default: none]")
    parser.add_argument("--decoys", type=integer(0), default=0, metavar="D",
                        help="candidates no client holds [default: 0]")
    parser.add_argument("--remove-every", type=remove_every, default=None, metavar="R",
                        help="leave every R-th true string out of the candidates, 0 to keep all [default: 0; "
                             "2 with --discover, a stale list for the discovered values to complete]")
    parser.add_argument("--reports-per-client", type=integer(1), default=1, metavar="R",
                        help="reports per client [default: 1]")
    parser.add_argument("--values-per-client", type=integer(1), default=1, metavar="V",
                        help="distinct values per client; reports of one value share its PRR [default: 1]")
    parser.add_argument("--method", choices=("batch", "client"), default="batch",
                        help="batch: fast numpy encoder; client: the real keyed client (slow) [default: batch]")
    add_estimator_argument(parser, help_text="decoder estimator (see rappor decode --help; empirical-bayes "
                           "was removed)")
    add_seed_argument(parser, default=0, help_text="random seed of the simulation")
    parser.add_argument("--no-report", action="store_true", help="skip report.html (no matplotlib needed)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    add_quiet_argument(parser, what="")
    from ._discover_simulate import configure as configure_discovery

    configure_discovery(parser)


def run(args: argparse.Namespace) -> int:
    """Simulate, aggregate, decode, score and write the files."""
    from ..analysis import evaluate_result
    from ..formats import read_population, write_candidates, write_counts, write_map
    from ..simulation import Population, candidate_strings, simulate

    from ..analysis.decoder import check_estimator

    check_estimator(args.estimator, cli=True)
    started = time.perf_counter()  # the command's own work (imports and start-up before run() excluded)
    params = DEFAULT_PARAMS if args.params is None else read_params(args.params)
    if args.remove_every is None:
        args.remove_every = 2 if args.discover else 0
    if args.discover:
        from ._discover_simulate import run as run_discovery

        return run_discovery(args, params)
    if args.dist_param is not None and args.population is None:
        if args.dist == "uniform":
            raise InvalidParameterError("--dist-param has no meaning with --dist uniform")
        if args.dist != "zipf" and args.dist_param == 0:
            name = "rate" if args.dist == "exponential" else "standard deviation"
            raise InvalidParameterError(f"--dist-param is the {name} of --dist {args.dist}: expected a number > 0, "
                                        "got 0")
    if args.population is not None:
        population = read_population(args.population)
    else:
        population = Population.make(args.dist, args.unique, args.dist_param)
    out = output_directory(args.out)

    names = ["simulate", "decode", *([] if args.no_report else ["report"]), "write"]
    with steps(names, desc="simulate", quiet=args.quiet) as step:
        step.start("simulate")
        sim = simulate(params, population, args.clients, reports_per_client=args.reports_per_client,
                       values_per_client=args.values_per_client, method=args.method, rng=args.seed)
        t_sim = time.perf_counter()
        step.start("decode")
        candidates = candidate_strings(population, decoys=args.decoys, remove_every=args.remove_every)
        cmap = sim.candidate_map(candidates)
        from ..analysis.decoder import Decoder

        result = sim.decode(cmap, decoder=Decoder(estimator=args.estimator))
        t_dec = time.perf_counter()
        metrics = evaluate_result(result, sim.truth)
        outlook = _outlook(params, sim, cmap.strings, result.significance_level)

        details = {
            "population": population.name,
            "distinct values": len(population),
            "clients": sim.n_clients,
            "reports": sim.n_reports,
            "reports per client": args.reports_per_client,
            "values per client": args.values_per_client,
            "candidates": len(candidates),
            "decoys": args.decoys,
            "remove every": args.remove_every,
            "encoder": args.method,
            "estimator": args.estimator,  # of the test (summary.json's "estimator")
            "share_estimator": result.share_estimator,  # of results.csv's proportion column
            "seed": args.seed,
            "simulation seconds": round(t_sim - started, 3),  # drawing clients, encoding, counting
            "decode seconds": round(t_dec - t_sim, 3),  # candidate map and Decoder.decode
        }
        page = None
        if not args.no_report:
            step.start("report")  # render before writing anything, so a failure leaves no partial set
            from ..report import render_report

            page = render_report(params=params, result=result, truth=sim.truth, metrics=metrics,
                                 aggregate=sim.aggregate, candidate_map=cmap, details=details, outlook=outlook,
                                 title=f"RAPPOR simulation: {population.name}, {sim.n_clients:,} clients")

        step.start("write")
        from .._util.outputs import atomic_output, outputs_together
        from ..formats import write_results

        def write_text(name: str, text: str) -> None:
            with atomic_output(out / name) as fh:
                fh.write(text)

        writers: dict[str, Callable[[Path], None]] = {
            "params.csv": lambda path: write_params(params, path),
            "counts.csv": lambda path: write_counts(sim.aggregate, path),
            "map.csv": lambda path: write_map(cmap, path),
            "candidates.txt": lambda path: write_candidates(candidates, path),
            "truth.csv": lambda path: write_text(path.name, sim.truth_csv()),
            "results.csv": lambda path: write_results(result, path),
            "metrics.json": lambda path: write_text(path.name, json_text(
                {"params": params.as_dict(), "simulation": details, "metrics": metrics.as_dict(),
                 "detection_outlook": outlook.as_dict()})),
        }
        if page is not None:
            writers["report.html"] = lambda path: write_text(path.name, page)
        with outputs_together():  # the whole set or none of it
            for name, write in writers.items():
                write(out / name)
    _print_results(result, sim, outlook)
    _print_summary(sim, metrics, details, outlook, time.perf_counter() - started)
    sys.stdout.write(f"wrote {out}{os.sep}: {', '.join(writers)}\n")
    return 0


def _outlook(params: Params, sim: Any, strings: Any, level: float) -> Any:
    """The planner's outlook for this decode: what a decode of its size finds among the true candidates."""
    from ..privacy import detection_outlook

    total = max(sum(sim.truth.values()), 1)
    shares = [sim.truth.get(s, 0) / total for s in strings]
    return detection_outlook(params, sim.n_reports, shares, n_candidates=len(strings), significance_level=level)


def _print_results(result: Any, sim: Any, outlook: Any, *, limit: int = 20) -> None:
    """The rows of results.csv: true share, estimated share, 95% interval, p-value and detected; the rule; the outlook."""
    from ..report import detection_rule, floor_tie, outlook_text

    table = result.table_array()[result.ranking()]  # the rows of results.csv, largest estimate first
    truth = sim.truth
    total = max(sum(truth.values()), 1)
    two = result.shares != "detected"  # proportion is then another estimator's than the interval's
    test = f"{'fitted_proportion':>18}" if two else ""
    header = (f"{'string':<16}{'true':>9}{'proportion':>11}{test}{'95% interval':>20}{'pvalue':>11}"
              f"{'detected':>10}")
    lines = [header, "-" * len(header)]
    for row in table[:limit]:
        true_share = truth.get(str(row["string"]), 0) / total
        interval = f"[{row['prop_low_95']:.4f}, {row['prop_high_95']:.4f}]"
        fitted = f"{row['fitted_proportion']:>18.4f}" if two else ""
        lines.append(f"{str(row['string'])[:15]:<16}{true_share:>9.4f}{row['proportion']:>11.4f}{fitted}"
                     f"{interval:>20}{row['pvalue']:>11.2g}{'yes' if row['detected'] else 'no':>10}")
    if len(table) > limit:
        hidden = table[limit:]
        lines.append(f"... and {len(hidden)} more rows in results.csv ({int(hidden['detected'].sum())} of them detected)")
    if len(table) == 0:
        lines.append("(no candidate has a share or is detected)")
    if two:
        lines.append(textwrap.fill(f"proportion: the {result.share_estimator} share of every candidate (the "
                                   "distribution); fitted_proportion: the test's least-squares share, which the 95% "
                                   "interval and the p-value are about (columns of results.csv).", width=100))
    lines.append(textwrap.fill(detection_rule(result).text, width=100))
    tie = floor_tie(result)
    if tie is not None:
        lines.append(textwrap.fill("note: " + tie.text, width=100))
    lines.append(textwrap.fill(outlook_text(outlook, result.params, found=int(result.detected.sum())), width=100))
    sys.stdout.write("\n".join(lines) + "\n\n")


def _print_summary(sim: Any, metrics: Any, details: dict[str, Any], outlook: Any, seconds: float) -> None:
    from ..analysis import METRIC_MEANINGS

    m = metrics
    lines = [
        f"simulated {sim.n_reports:,} reports from {sim.n_clients:,} clients ({sim.population.name}, "
        f"{len(sim.population)} values): simulation {details['simulation seconds']:.3f} s, decode "
        f"{details['decode seconds']:.3f} s (metrics.json), whole command {seconds:.1f} s",
        f"{'candidates':<24}{m.n_candidates:>10}",
        f"{'detected':<24}{m.n_detected:>10}",
        f"{'expected detected':<24}{outlook.expected:>10.1f}   planner: true candidates a decode of this size "
        "finds, on average",
        f"{'false positives':<24}{m.false_positives:>10}",
        f"{'false negatives':<24}{m.false_negatives:>10}",
        f"{'total variation':<24}{m.total_variation:>10.4f}",
        f"{'allocated mass':<24}{m.allocated_mass:>10.4f}   {METRIC_MEANINGS['allocated_mass']}",
        f"{'unallocated mass':<24}{m.unallocated_mass:>10.4f}   1 - allocated mass",
        f"{'unexplained mass':<24}{m.unexplained_mass:>10.4f} ± {m.unexplained_std_error:.4f} (SE)   "
        "estimated share the candidates do not explain",
        f"{'true unexplained mass':<24}{m.true_unexplained_mass:>10.4f}   true share of non-candidate values",
        f"{'interval coverage':<24}{m.coverage:>10.3f}",
        f"{'smallest detectable':<24}{outlook.frequency:>10.4f}   planner: share detected with probability 1/2",
        f"{'smallest detected':<24}{m.smallest_detected:>10.4f}   smallest true share among the detected",
        f"{'largest missed':<24}{m.largest_missed:>10.4f}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
