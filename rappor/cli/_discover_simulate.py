"""``rappor simulate --discover``: a collection with discovery, scored against the truth (private)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .._util.outputs import output_directory
from ..exceptions import InvalidParameterError
from ..params import Params
from .._util.progress import progress
from ._common import json_text, real


#: The files ``rappor simulate --discover`` writes into --out DIR.
OUTPUT_NAMES = ("params.csv", "discovery-params.csv", "counts.csv", "discovery-counts.csv", "found.csv", "found.txt",
                "candidates.txt", "results.csv", "truth.csv", "metrics.json")


def configure(parser: argparse.ArgumentParser) -> None:
    """The options ``rappor simulate`` gains for ``--discover``."""
    from ._discover import add_spec_arguments

    group = parser.add_argument_group("discovery (with --discover)")
    group.add_argument("--discover", action="store_true",
                       help="also send discovery reports, find strings outside the candidate list and report "
                            "precision/recall of the top 10/50 and the TV with and without discovery")
    group.add_argument("--discovery-share", type=real(0.0, 1.0, low_open=True, high_open=True), default=0.75,
                       metavar="S",
                       help="share of clients sending a discovery report instead of a full-string one, in (0, 1): "
                            "at 0 nothing is discovered, at 1 nothing is left to decode "
                            "(measured choice, docs/discovery.md) [default: 0.75]")
    group.add_argument("--discovery-params", metavar="PATH", default=None,
                       help="parameters of one discovery slot [default: k=256, h=1, m=32, p=0, q=1 and f giving "
                            "the epsilon_inf of --params]")
    add_spec_arguments(group)  # type: ignore[arg-type]


def _refuse_options(args: argparse.Namespace) -> None:
    """Refuse the options of ``rappor simulate`` that a discovery simulation cannot honour."""
    refused = [(args.method != "batch", f"--method {args.method}",
                "the counts are drawn from their exact law; to run the real keyed client, encode a values file "
                "with 'rappor encode --discovery-params' and follow docs/discovery.md"),
               (args.reports_per_client != 1, f"--reports-per-client {args.reports_per_client}",
                "each client sends one report (a discovery report or its full-string one)"),
               (args.values_per_client != 1, f"--values-per-client {args.values_per_client}",
                "each client holds one value"),
               (args.dist != "zipf", f"--dist {args.dist}",
                "the population is Zipf over realistic strings (--dist-param sets its exponent; --population "
                "reads another)")]
    for bad, option, why in refused:
        if bad:
            raise InvalidParameterError(f"{option} does not go with --discover: {why}.")


def run(args: argparse.Namespace, params: Params) -> int:
    from .._util.csv_text import csv_text_field
    from .._util.outputs import atomic_output, outputs_together
    from ..analysis.decoder import Decoder
    from ..analysis.discovery import discovery_params, evaluate_discovery, realistic_population
    from ..formats import (read_discovery_params, read_population, write_candidates, write_counts,
                           write_discovery_params, write_found, write_params, write_results)
    from ..simulation import candidate_strings
    from ._discover import layout_spec

    _refuse_options(args)
    started = time.perf_counter()
    layout: dict[str, Any] = {}
    if args.discovery_params is not None:
        dparams, layout = read_discovery_params(args.discovery_params)
    else:  # the full-string reports' epsilon_inf, one hash, no instantaneous noise
        f = discovery_params(params.epsilon_inf)[1]
        dparams = Params(num_bloombits=256, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0, prob_f=f)
    spec = layout_spec(args, dparams, layout, f"{args.discovery_params} (--discovery-params)", args.alphabet)
    if args.population is not None:
        population = read_population(args.population)
    else:
        population = realistic_population(args.unique, exponent=1.1 if args.dist_param is None else args.dist_param,
                                          max_length=max(5, spec.max_length), rng=args.seed)
    out = output_directory(args.out)
    known = candidate_strings(population, decoys=args.decoys, remove_every=args.remove_every)
    with progress(2 * spec.levels + 2, desc="simulate --discover", unit="step", quiet=args.quiet) as update:
        ev = evaluate_discovery(params, spec, population, args.clients, candidates=known,
                                discovery_share=args.discovery_share, decoder=Decoder(estimator=args.estimator),
                                rng=args.seed, progress=update)
    sim, found, listed, results, rows, disc_scores = (ev.simulation, ev.found, list(ev.listed), ev.results,
                                                      ev.scores, ev.discovery_scores)
    sig = found.significant
    with outputs_together():  # the whole set or none of it
        write_params(params, out / "params.csv")
        write_discovery_params(spec, out / "discovery-params.csv")
        write_counts(sim.full, out / "counts.csv")
        write_counts(sim.discovery, out / "discovery-counts.csv")
        write_found(found, out / "found.csv")
        write_candidates(listed, out / "found.txt")  # empty when nothing is significant
        write_candidates(known, out / "candidates.txt")
        write_results(results["with discovery"], out / "results.csv")
        with atomic_output(out / "truth.csv") as fh:
            # Every client's value, and how many of its holders sent their full-string report
            # (the truth the final decode estimates; the others sent a discovery report).
            fh.write("string,clients,full_string_clients\n")
            full_of = sim.full_truth
            for s, c in sorted(sim.truth.items(), key=lambda kv: -kv[1]):
                fh.write(f"{csv_text_field(s)},{c},{full_of.get(s, 0)}\n")
        summary = {"params": params.as_dict(), "discovery": spec.as_dict(), "clients": sim.n_clients,
                   "discovery_share": args.discovery_share, "seed": args.seed, "discovery_scores": disc_scores,
                   "final": rows, "seconds": round(time.perf_counter() - started, 2)}
        with atomic_output(out / "metrics.json") as fh:
            fh.write(json_text(summary))
    w = sys.stdout.write
    w(f"simulated {sim.n_clients:,} clients ({population.name}, {len(population)} strings): "
      f"{sim.full.total_reports:,} full-string and {sim.discovery.total_reports:,} discovery reports\n")
    w(f"discovery: {int(sig.sum())} significant values; top-10 recall {disc_scores['recall@10']:.2f} "
      f"precision {disc_scores['precision@10']:.2f}; top-50 recall {disc_scores['recall@50']:.2f} "
      f"precision {disc_scores['precision@50']:.2f}; {int(disc_scores['false'])} false\n")
    if int(sig.sum()) < 50:  # found by a tester: with 5 true values found, "precision 0.50" read as half wrong
        w(f"  (precision@K is over K places: with {int(sig.sum())} significant values, the empty places count "
          f"as misses; 'false' counts the wrong ones)\n")
    header = f"{'':<20}{'cands':>8}{'TV':>8}{'R@10':>7}{'P@10':>7}{'R@50':>7}{'P@50':>7}{'false':>7}" \
             f"{'unexplained':>12}{'outside':>9}\n"
    w(header)
    for name, r in rows.items():
        w(f"{name:<20}{r['candidates']:>8}{r['total_variation']:>8.4f}{r['recall@10']:>7.2f}{r['precision@10']:>7.2f}"
          f"{r['recall@50']:>7.2f}{r['precision@50']:>7.2f}{int(r['false']):>7}{r['unexplained_mass']:>12.4f}"
          f"{r['true_share_outside_list']:>9.4f}\n")
    w(f"wrote {out}/{{params,discovery-params,counts,discovery-counts,found,truth,results}}.csv, found.txt, "
      f"candidates.txt, metrics.json in {time.perf_counter() - started:.1f} s\n")
    return 0
