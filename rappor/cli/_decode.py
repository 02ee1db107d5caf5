"""Estimate the frequency of candidate strings from aggregated counts.

Examples:
    rappor decode --params params.csv --counts counts.csv --map map.csv \\
        -o results.csv
    rappor decode --params params.csv --counts counts.csv \\
        --candidates candidates.txt -o results.csv --summary summary.json

Reads google/rappor's params.csv and counts.csv, and a map.csv (from 'rappor
hash-candidates' or google/rappor's hash_candidates.py) or a candidate list (one string
per line, hashed here).  Writes results.csv, largest share first, with two products:
a row for every candidate with a share, whose 'proportion' column sums to the estimated
distribution (an empirical-Bayes regression), and the 'detected' column, the strings the
test vouches for (false detections controlled).  'fitted_proportion' is the test's
least-squares share: std_error, prop_std_error, prop_low_95, prop_high_95 and pvalue
(one-sided, unadjusted) are about it.  --shares detected writes google/rappor's layout
(the detected strings with their least-squares shares); --all lists every candidate.

A candidate is detected when its p-value, adjusted by --correction, is at most --level.
Unsound combinations of options are refused with a message saying why.

P-values come from the law of a random string's score given the residuals.  That law has
a floor: a random string reaches the top score in every cohort with probability about
(h!/k^h)^m, and no p-value falls below it.  With few cohorts (k=16 h=2 m=4: a few 1e-9)
the strongest strings all sit at the floor and tie: the tie means 'beyond any random
string', not equal evidence, and their estimates still rank them.  A note on stderr names
them when it happens.  The method: docs/decoder.md.

When the counts vary more than independent reports allow (residual dispersion well above
1: chi-square p-value below 1e-3), a note on stderr (and 'explanation' in the summary's
'residual') says which cause the counts point to: repeated reports of one value under one
memoized PRR (symmetric residuals; the reports per client that would give it), strings
missing from the list (residuals skewed positive, unexplained mass above 0) or parameters
that do not match the counts (debiased ones per report off the bits h hashes set).  The
standard errors are widened by the dispersion's square root either way.

With --discover (discovery counts) and --discovery-params, the values found in the
discovery reports ('rappor discover') join the candidates (--map or --candidates, which
are then optional) before decoding: discover and decode in one command
(docs/discovery.md).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from .._util.outputs import atomic_output, outputs_together
from .._util.paths import display_name
from .._util.progress import steps
from . import _discover_decode
from ._common import (CommandFiles, add_estimator_argument, add_level_argument, add_output_argument,
                      add_params_argument, add_quiet_argument, add_seed_argument, json_text, load_params, shown,
                      tell)

NAME = "decode"
USAGE = ("%(prog)s --params PATH --counts PATH\n"
         "       (--map PATH | --candidates PATH) [-o PATH] [--summary PATH] [OPTIONS]")
HELP = "estimate candidate frequencies (counts.csv + map.csv -> results.csv)"
ORDER = 50


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor decode``: files first, then the test, the shares, the rest."""
    add_params_argument(parser)
    parser.add_argument("--counts", required=True, metavar="PATH", help="counts file (google/rappor counts.csv)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--map", metavar="PATH", help="candidate map (google/rappor map.csv) [default: none; one of "
                        "--map, --candidates, --discover]")
    source.add_argument("--candidates", metavar="PATH", help="candidate strings, one per line (hashed here) "
                        "[default: none]")
    add_output_argument(parser, help_text="results CSV")
    parser.add_argument("--summary", metavar="PATH", help="also write a JSON summary [default: none]")
    add_quiet_argument(parser)
    test = parser.add_argument_group("the detection test")
    add_level_argument(test, help_text="significance level, compared with the adjusted p-values")
    test.add_argument("--correction", choices=["fdr", "lfdr", "adaptive-fdr", "storey", "bonferroni", "none"],
                      default="fdr", metavar="METHOD", help="multiple-testing correction: fdr (Benjamini-Hochberg), "
                      "adaptive-fdr (two-stage), storey, lfdr (local fdr), bonferroni, none [default: fdr]")
    test.add_argument("--null", choices=["random-strings", "normal"], default="random-strings",
                      help="law of the test statistics: random strings given the residuals, or the standard normal "
                      "[default: random-strings]")
    test.add_argument("--lasso-alpha", type=_penalty, default=None, metavar="ALPHA|cv",
                      help="penalty of the screening Lasso: a number > 0 or 'cv' [default: the plug-in "
                      "z_(1-level/S)/n]")
    add_seed_argument(test, help_text="seed of the null's sampled bit patterns (k^h > 4096)",
                      shown="fixed: decoding is deterministic")
    add_estimator_argument(test, help_text="the test's estimator, the only one (empirical-bayes was removed)")
    shares = parser.add_argument_group("shares and intervals")
    shares.add_argument("--shares", choices=["all", "detected"], default="all",
                        help="all: a share for every candidate (empirical Bayes); detected: least-squares shares of "
                        "the detected strings only, google/rappor's layout [default: all]")
    shares.add_argument("--intervals", choices=["auto", "selective", "fcr", "wald"], default="auto",
                        help="prop_low_95/prop_high_95 of detected strings: conditional on detection (selective), "
                        "false-coverage-rate adjusted (fcr) or plain Wald; auto: selective [default: auto]")
    shares.add_argument("--all", action="store_true", help="list every candidate in results.csv")
    _discover_decode.configure(parser)


_ADJUST: dict[str, Any] = {"auto": None, "selective": "selective", "fcr": "fcr", "wald": "none"}


def _penalty(text: str) -> float | str:
    if text == "cv":
        return text
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'cv', got {text!r}")
    return value


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params``, ``--counts`` and ``--map`` or ``--candidates`` in; ``-o`` and ``--summary`` out."""
    inputs = [("--params", args.params), ("--counts", args.counts)]
    if args.map is not None or args.candidates is not None:
        inputs.append(("--map", args.map) if args.map is not None else ("--candidates", args.candidates))
    outputs = [("-o", args.output)]
    if args.summary is not None:
        outputs.append(("--summary", args.summary))
    found_in, found_out = _discover_decode.files(args)
    return CommandFiles(inputs=inputs + found_in, outputs=outputs + found_out)


def run(args: argparse.Namespace) -> int:
    from ..analysis.decoder import Decoder
    from ..collect import hash_candidates
    from ..formats import read_candidates, read_counts, read_map, write_results
    from ..report import floor_tie

    from ..analysis.decoder import check_combination, check_estimator, explain_dispersion

    check_estimator(args.estimator, cli=True)  # before reading the files
    check_combination(args.null, args.correction, cli=True)
    _discover_decode.check(args)
    with steps(["read counts", "read candidates", "decode", "write"], desc="decode", quiet=args.quiet) as step:
        step.start("read counts")
        params = load_params(args)
        aggregate = read_counts(args.counts, params)
        if aggregate.total_reports == 0:
            from ..exceptions import ReportFormatError

            raise ReportFormatError("expected at least one report, found no reports in any cohort "
                                    "(nothing to decode)", path=display_name(args.counts))
        step.start("read candidates")
        cmap = None
        if args.map is not None:
            cmap = read_map(args.map, params)
        elif args.candidates is not None:
            cmap = hash_candidates(read_candidates(args.candidates), params)
        step.start("decode")
        decoder = Decoder(significance_level=args.level, correction=args.correction, null=args.null,
                          estimator=args.estimator, lasso_alpha=args.lasso_alpha, rng=args.seed,
                          shares=args.shares)
        found = None
        combined = None
        if args.discover is not None:
            combined = _discover_decode.discover_and_decode(args, aggregate, cmap, decoder)
            result, found = combined.result, combined.found
        elif cmap is None:  # pragma: no cover - _discover_decode.check refuses it
            raise AssertionError("internal error: no candidates")
        else:
            result = decoder.decode(aggregate, cmap)
        diag = result.diagnostics
        known = math.isfinite(diag.residual_skewness_se)  # computed by the decode (else left to the check)
        spread = explain_dispersion(aggregate.counts, params, diag.residuals, diag.dispersion, diag.chi2_pvalue,
                                    diag.unexplained_mass, unexplained_std_error=diag.unexplained_std_error,
                                    skewness=(diag.residual_skewness, diag.residual_skewness_se) if known else None)
        # Whatever the dispersion says: counts of other parameters can fit well and still be wrong
        # (h=1 counts read with h=2: dispersion 1.1, shares half the truth; discover and decode-assoc
        # always checked this).
        from ..analysis import check_bit_count

        check = check_bit_count(aggregate)
        step.start("write")
        _write(args, result, found, spread, check)
    if combined is not None:
        sys.stderr.write(_discover_decode.unexplained_report(combined))
    tie = floor_tie(result)
    if tie is not None:
        sys.stderr.write(f"rappor: note: {tie.text}\n")
    if spread is not None:
        sys.stderr.write(f"rappor: note: {spread.text}\n")
    if check is not None and not check.fits:
        sys.stderr.write(f"rappor: warning: {check.warning(f'the counts {display_name(args.counts)}')}\n")
    rows = len(result.ranking(args.all))
    written = [f"{shown(args.output)} ({rows:,} row{'s' if rows != 1 else ''})"]
    written += [shown(path) for path in (args.summary, getattr(args, "found", None)) if path is not None]
    tell(args, f"decoded {result.n_reports:,} reports against {len(result.strings):,} candidates, "
               f"{int(result.detected.sum()):,} detected; wrote {', '.join(written)}")
    return 0


def _write(args: argparse.Namespace, result: Any, found: Any, spread: Any, check: Any) -> None:
    """results.csv, the summary and --found: all of them or none (a bad path, a full disk)."""
    from ..formats import write_found, write_results

    with outputs_together(), _discover_decode.found_output(args, found) as found_out:
        if found_out is not None and found is not None:
            write_found(found, found_out)
        if args.summary is None:
            write_results(result, args.output, all=args.all, adjust=_ADJUST[args.intervals])
            return
        with atomic_output(args.summary) as out:
            write_results(result, args.output, all=args.all, adjust=_ADJUST[args.intervals])
            summary = result.summary(all=args.all)  # its rows and allocated mass are the file's
            if spread is not None:  # what the dispersion points to (repeats, missing strings, parameters)
                summary["residual"]["explanation"] = spread.as_dict()
            summary["parameter_check"] = None if check is None else check.as_dict()
            out.write(json_text(summary))
