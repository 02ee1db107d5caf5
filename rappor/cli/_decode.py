"""Estimate the frequency of candidate strings from aggregated counts.

Reads google/rappor's params.csv and counts.csv and either a map.csv (from 'rappor
hash-candidates' or google/rappor's hash_candidates.py) or a candidate list (one string
per line, hashed here).  Writes results.csv with google/rappor's columns string,
estimate, std_error, proportion, prop_std_error, prop_low_95, prop_high_95, plus pvalue
(one-sided, unadjusted) and 'detected', sorted by estimate.  Two products in one file: by
default a row for every candidate with a positive share -- the best estimate of the whole
distribution, from an empirical-Bayes regression (summing 'proportion' gives it) -- and the
'detected' column, the strings the test vouches for (false detections controlled).
--shares detected writes the detected strings only, with their least-squares shares
(google/rappor's layout, the decoder before every candidate had a share); --all lists every candidate.  The
intervals are those of the least-squares fit, adjusted for selection for detected
strings (see --intervals).  --summary writes a JSON summary
(detected, allocated and unexplained mass, residual test, epsilons, time).

A candidate is detected when its p-value, adjusted by --correction, is at most --level.
Combinations of options that are not sound are refused with a message saying why: --null
normal with --correction lfdr (an empirical-Bayes prior needs calibrated z-scores; with
decoys it reported up to every decoy).  --estimator empirical-bayes was removed (its
detections swung from 5 to 100 strings over 20 seeds of one scenario); the default shares
are its stable empirical-Bayes replacement.

P-values come from the law of a random string's score given the residuals.  That law has
a floor: a random string reaches the top score in every cohort with probability about
(h!/k^h)^m, and no p-value falls below it.  With few cohorts (k=16 h=2 m=4: a few 1e-9)
the strongest strings all sit at the floor and tie: the tie means 'beyond any random
string', not equal evidence, and their estimates still rank them.  A note on stderr names
them when it happens.  See docs/decoder.md.

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

from .._util.outputs import atomic_output
from . import _discover_decode
from ._common import (CommandFiles, add_estimator_argument, add_level_argument, add_output_argument,
                      add_params_argument, add_seed_argument, json_text, load_params)

NAME = "decode"
HELP = "estimate candidate frequencies (counts.csv + map.csv -> results.csv)"
ORDER = 50


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_argument(parser)
    parser.add_argument("--counts", required=True, metavar="PATH", help="counts file (google/rappor counts.csv)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--map", metavar="PATH", help="candidate map (google/rappor map.csv); one of --map, --candidates, --discover "
                        "is required [default: none]")
    source.add_argument("--candidates", metavar="PATH", help="candidate strings, one per line (hashed here) [default: none]")
    add_output_argument(parser, help_text="results CSV")
    parser.add_argument("--summary", metavar="PATH", help="also write a JSON summary [default: none]")
    add_level_argument(parser, help_text="significance level of the detection tests, compared with the adjusted "
                       "p-values")
    parser.add_argument("--correction", choices=["fdr", "lfdr", "adaptive-fdr", "storey", "bonferroni", "none"],
                        default="fdr", metavar="METHOD", help="multiple-testing correction: fdr (Benjamini-Hochberg), adaptive-fdr "
                        "(Benjamini-Krieger-Yekutieli two-stage), storey (Storey's pi0), lfdr (empirical-Bayes local fdr), "
                        "bonferroni, none [default: fdr]")
    parser.add_argument("--null", choices=["random-strings", "normal"], default="random-strings",
                        help="null law of the test statistics: that of random strings given the residuals, or "
                        "the standard normal (refused with --correction lfdr, whose prior needs calibrated z-scores) "
                        "[default: random-strings]")
    parser.add_argument("--lasso-alpha", type=_penalty, default=None, metavar="ALPHA|cv",
                        help="penalty of the screening Lasso: a number > 0 or 'cv' (cross-validation over "
                        "cohorts, one-standard-error rule) [default: the plug-in z_(1-level/S)/n]")
    add_estimator_argument(parser, help_text="least-squares: the only estimator (the test's fit decides "
                           "'detected'); empirical-bayes was removed: its detections were unstable, and "
                           "--shares all (the default) is its stable empirical-Bayes replacement")
    parser.add_argument("--shares", choices=["all", "detected"], default="all",
                        help="all: a share for every candidate (empirical-Bayes regression; rows = candidates with "
                        "a positive share, 'detected' column = the test's list); detected: least-squares shares "
                        "of the detected strings only [default: all]")
    parser.add_argument("--intervals", choices=["auto", "selective", "fcr", "wald"], default="auto",
                        help="prop_low_95/prop_high_95 of detected strings: conditional on detection (selective), "
                        "false-coverage-rate adjusted (Benjamini-Yekutieli 2005) or plain Wald; auto: selective "
                        "[default: auto]")
    add_seed_argument(parser, help_text="seed of the random-string null's sampled bit patterns (drawn when "
                      "k^h > 4096)", shown="a fixed seed: decoding is deterministic")
    parser.add_argument("--all", action="store_true", help="list every candidate, with a 'detected' column")
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
    params = load_params(args)
    aggregate = read_counts(args.counts, params)
    cmap = None
    if args.map is not None:
        cmap = read_map(args.map, params)
    elif args.candidates is not None:
        cmap = hash_candidates(read_candidates(args.candidates), params)
    decoder = Decoder(significance_level=args.level, correction=args.correction, null=args.null,
                      estimator=args.estimator, lasso_alpha=args.lasso_alpha, rng=args.seed,
                      shares=args.shares)
    found = None
    if args.discover is not None:
        combined = _discover_decode.discover_and_decode(args, aggregate, cmap, decoder)
        result, found = combined.result, combined.found
        sys.stderr.write(_discover_decode.unexplained_report(combined))
    elif cmap is None:  # pragma: no cover - _discover_decode.check refuses it
        raise AssertionError("internal error: no candidates")
    else:
        result = decoder.decode(aggregate, cmap)
    tie = floor_tie(result)
    if tie is not None:
        sys.stderr.write(f"rappor: note: {tie.text}\n")
    diag = result.diagnostics
    spread = explain_dispersion(aggregate.counts, params, diag.residuals, diag.dispersion, diag.chi2_pvalue,
                                diag.unexplained_mass)
    if spread is not None:
        sys.stderr.write(f"rappor: note: {spread.text}\n")
    # Open --found and the summary first: a bad path must not leave a results file behind.
    with _discover_decode.found_output(args, found) as found_out:
        if found_out is not None and found is not None:
            found.write_csv(found_out)
        if args.summary is None:
            write_results(result, args.output, all=args.all, adjust=_ADJUST[args.intervals])
            return 0
        with atomic_output(args.summary) as out:
            write_results(result, args.output, all=args.all, adjust=_ADJUST[args.intervals])
            summary = result.summary()
            if spread is not None:  # what the dispersion points to (repeats, missing strings, parameters)
                summary["residual"]["explanation"] = spread.as_dict()
            out.write(json_text(summary))
    return 0
