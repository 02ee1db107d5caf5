"""Estimate the joint distribution of two (or three) variables reported by the same clients.

Examples:
    rappor decode-assoc --params params.csv --reports reports.csv \\
        --var1 domain --map1 map.csv --var2 https --bool -o results.csv
    rappor decode-assoc --metric-name m --schema rappor-vars.csv \\
        --params-dir DIR --reports reports.csv --var1 domain \\
        --map1 domain_map.csv --var2 flag..HTTPS --output-dir OUT

The first form (ours) writes a results CSV (-o, default stdout) and, with --summary, a
JSON summary.  The second is google/rappor's (bin/decode_assoc.R): the schema names each
variable's type (string or boolean) and parameters file (DIR/<params>.csv), and
OUT/assoc-results.csv and assoc-metrics.json are written.

The reports file is a CSV with a header: a 'cohort' column and one column per
variable holding its IRR bit string (a boolean: one character); other columns are
ignored (e.g. the output of 'rappor encode' with several value columns), except a
'client' column: rows with the same client id are one client's reports (a client that
reports daily, under one permanent response), decoded with the likelihood of all of
a client's reports together (without the column every row is its own client, and the
intervals of repeated reports are too narrow).  A .parquet file or a directory of them
is read as Parquet.  A blank value is an error unless --remove-bad-rows.

Each string variable's categories are the candidates its marginal decode detects
(--categories all: every candidate) plus "Other" (strings that are not among them).
The joint table is the maximum-likelihood estimate (docs/association.md), with
standard errors, 95% intervals, the conditional distributions P(var1 | var2) and
P(var2 | var1) (columns given_<var>), and a likelihood-ratio test of independence
(in the summary).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

from .._util.paths import display_name
from ..exceptions import InvalidParameterError, ReportFormatError
from ._common import (CommandFiles, add_level_argument, add_quiet_argument, add_seed_argument, integer, json_text, real,
                      shown, tell, terminal_tqdm)

NAME = "decode-assoc"
USAGE = ("%(prog)s --params PATH --reports PATH\n"
         "       --var1 NAME --map1 PATH --var2 NAME --bool [--var3 NAME ...]\n"
         "       [-o PATH] [--summary PATH] [OPTIONS]\n"
         "   or: %(prog)s --schema PATH --params-dir DIR --metric-name NAME\n"
         "       --reports PATH --var1 NAME --var2 NAME [--map1 PATH] [--output-dir DIR]\n"
         "       [OPTIONS]")
HELP = "joint distribution of two or three variables (reports with one column per variable)"
ORDER = 52

#: decode_assoc.R's exit status when there is nothing to analyse.
NO_REPORTS_STATUS = 9


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor decode-assoc``."""
    parser.add_argument("--reports", required=True, metavar="PATH",
                        help="CSV with a header: cohort and one bit-string column per variable ('-' for stdin); "
                             "or .parquet / a directory of Parquet files")
    for j in (1, 2, 3):
        req = "required" if j < 3 else "optional third variable"
        parser.add_argument(f"--var{j}", required=j < 3, default=None, metavar="NAME",
                            help=f"name of variable {j}: its column in the reports ({req})"
                                 + ("" if j < 3 else " [default: none]"))
        parser.add_argument(f"--map{j}", default=None, metavar="PATH",
                            help=f"candidate map of variable {j} (map.csv) [default: none]")
        parser.add_argument(f"--candidates{j}", default=None, metavar="PATH",
                            help=f"candidate list of variable {j} (one string per line, hashed here) [default: none]")
    parser.add_argument("--bool", "--bool2", dest="bool2", action="store_true", help="variable 2 is a boolean")
    parser.add_argument("--bool1", action="store_true", help="variable 1 is a boolean")
    parser.add_argument("--bool3", action="store_true", help="variable 3 is a boolean")
    group = parser.add_argument_group("our form")
    group.add_argument("--params", metavar="PATH", default=None,
                       help="parameters file (k,h,m,p,q,f) [default: none: google/rappor's form]")
    group.add_argument("-o", "--output", default="-", metavar="PATH", help="results CSV [default: stdout]")
    group.add_argument("--summary", metavar="PATH", default=None, help="also write a JSON summary [default: none]")
    group.add_argument("--layout", choices=("rappor", "google"), default="rappor",
                       help="results CSV columns: ours, or google/rappor's assoc-results.csv [default: rappor]")
    google = parser.add_argument_group("google/rappor's form (bin/decode_assoc.R)")
    google.add_argument("--metric-name", dest="metric_name", default=None, metavar="NAME",
                        help="metric of the variables in the schema [default: none]")
    google.add_argument("--schema", default=None, metavar="PATH",
                        help="rappor-vars.csv: metric,var,var_type,params [default: none: our form]")
    google.add_argument("--params-dir", dest="params_dir", default=None, metavar="DIR",
                        help="directory of the <params>.csv files named by the schema [default: none]")
    google.add_argument("--output-dir", dest="output_dir", default=None, metavar="DIR",
                        help="where to write assoc-results.csv and assoc-metrics.json [default: .]")
    google.add_argument("--create-bool-map", dest="create_bool_map", action="store_true",
                        help="accepted for compatibility (booleans need no map here)")
    google.add_argument("--num-cores", dest="num_cores", type=integer(1), default=1, metavar="N",
                        help="accepted for compatibility (one process) [default: 1]")
    google.add_argument("--em-executable", dest="em_executable", default="", metavar="PATH",
                        help="accepted for compatibility and ignored (the fit is native) [default: none]")
    google.add_argument("--tmp-dir", dest="tmp_dir", default=None, metavar="DIR",
                        help="accepted and ignored [default: none]")
    fit = parser.add_argument_group("estimation")
    fit.add_argument("--remove-bad-rows", dest="remove_bad_rows", action="store_true",
                     help="leave out rows with a blank value (without it a blank value is an error)")
    fit.add_argument("--reports-sample-size", dest="reports_sample_size", type=_sample_size, default=-1, metavar="N",
                     help="analyse a random sample of N report tuples (-1: all) [default: -1]")
    fit.add_argument("--max-em-iters", dest="max_em_iters", type=integer(0), default=1000, metavar="N",
                     help="iteration cap of the fit [default: 1000]")
    fit.add_argument("--tolerance", type=real(0.0), default=1e-3, metavar="T",
                     help="stop when the log-likelihood is certified within T of its maximum [default: 1e-3]")
    fit.add_argument("--method", choices=("sqp", "em"), default="sqp",
                     help="sqp: sequential quadratic programming (fast); em: google/rappor's EM iteration "
                          "[default: sqp]")
    fit.add_argument("--categories", choices=("detected", "all"), default="detected",
                     help="categories of a string variable: the candidates its marginal decode detects, or all "
                          "[default: detected]")
    fit.add_argument("--other", choices=("undetected", "shrunk", "reference", "none"), default="undetected",
                     help="the 'Other' category: the left-out candidates' bit rates and the outside strings' "
                          "(from the other half of the reports' unexplained counts where the marginal decode shows "
                          "such strings, else a random string's), shrunk residual rates, google/rappor's "
                          "GetOtherProbs, or none "
                          "[default: undetected]")
    fit.add_argument("--shrinkage", choices=("conditionals", "boolean-split", "none"), default="conditionals",
                     help="a boolean with one or two strings: shrink each string's (or pair's) TRUE/FALSE split "
                          "towards the overall share (or its parent string's) by its empirical-Bayes factor; "
                          "'conditionals' also estimates two strings' shares under one fitted prior of their "
                          "conditional values, 'boolean-split' keeps their maximum-likelihood shares (the intervals "
                          "stay those of the maximum-likelihood table, widened to hold the estimate); 'none': the "
                          "maximum-likelihood table [default: conditionals]")
    fit.add_argument("--other-share", choices=("marginal", "fit"), default="marginal",
                     help="with --categories detected and --other undetected: each string variable's Other total is "
                          "its marginal decode's, the other cells moved as the likelihood says (the joint fit's Other "
                          "is too low when the same reports chose the categories); 'fit': the joint fit's table "
                          "[default: marginal]")
    fit.add_argument("--intervals", choices=("signed", "projected", "wald", "profile"), default="signed",
                     help="95%% intervals of the cells (prop_low_95, prop_high_95): the likelihood's maximum over "
                          "signed tables +- 1.96 of its standard errors, clipped to [0, 1] and widened to hold the "
                          "estimate (signed: free of the boundary's bias); the estimate +- 1.96 standard errors with "
                          "the upper end raised to the 97.5th percentile of the estimate's law truncated at 0 "
                          "(projected); the plain estimate +- 1.96 standard errors (wald; undercovers cells "
                          "estimated near 0); or profile likelihood (conservative; about 10 fits per cell) "
                          "[default: signed]")
    fit.add_argument("--no-independence-test", dest="independence_test", action="store_false",
                     help="skip the likelihood-ratio test of independence (two more fits and 1,000 draws of its "
                          "law); the summary's 'independence' is then null")
    add_level_argument(parser, help_text="significance level of the marginal decodes")
    add_seed_argument(parser, default=0, help_text="seed of --reports-sample-size")
    add_quiet_argument(parser)


def files(args: argparse.Namespace) -> CommandFiles:
    """The reports, parameters (or schema), maps and candidate lists in; the results out."""
    named = [("--reports", args.reports), ("--params", args.params), ("--schema", args.schema)]
    for j in (1, 2, 3):
        named += [(f"--map{j}", getattr(args, f"map{j}")), (f"--candidates{j}", getattr(args, f"candidates{j}"))]
    if args.schema is not None:
        out_dir = args.output_dir or "."
        outputs = [("--output-dir", os.path.join(out_dir, name)) for name in ("assoc-results.csv", "assoc-metrics.json")]
    else:
        outputs = [("-o", args.output)] + ([("--summary", args.summary)] if args.summary is not None else [])
    return CommandFiles(inputs=[(option, path) for option, path in named if path is not None], outputs=outputs)


def _sample_size(text: str) -> int:
    """argparse ``type`` of --reports-sample-size: -1 (all) or a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"expected -1 (all) or an integer >= 1, got {text!r}")
    return value


def _variables(args: argparse.Namespace) -> list[int]:
    return [j for j in (1, 2, 3) if getattr(args, f"var{j}") is not None]


def _check_args(args: argparse.Namespace) -> None:
    """Refuse a mix of the two forms: an option of the other form would be ignored (an --output-dir given with
    --params, say, left the results on standard output)."""
    google = args.schema is not None
    if google and args.params is not None:
        raise InvalidParameterError("--params (our form) cannot be combined with --schema (google/rappor's form, "
                                    "whose parameters file --params-dir and the schema name)")
    if google and (args.metric_name is None or args.params_dir is None):
        raise InvalidParameterError("--schema needs --metric-name and --params-dir (google/rappor's form)")
    if not google and args.params is None:
        raise InvalidParameterError("give --params (our form) or --schema, --metric-name and --params-dir "
                                    "(google/rappor's form)")
    given = {"-o": args.output != "-", "--summary": args.summary is not None, "--layout": args.layout != "rappor"}
    other = {"--output-dir": args.output_dir is not None, "--metric-name": args.metric_name is not None,
             "--params-dir": args.params_dir is not None}
    if google and any(given.values()):
        flag = next(f for f, g in given.items() if g)
        raise InvalidParameterError(f"{flag} belongs to our form (--params): with --schema the results go to "
                                    "--output-dir (assoc-results.csv, assoc-metrics.json)")
    if not google and any(other.values()):
        flag = next(f for f, g in other.items() if g)
        raise InvalidParameterError(f"{flag} belongs to google/rappor's form (--schema): with --params the "
                                    "results go to -o (and --summary)")
    names = [(f"--var{j}", getattr(args, f"var{j}", None)) for j in (1, 2, 3)]
    seen: dict[str, str] = {}
    for flag, name in names:
        if name is not None and name in seen:  # before the reports are read with two layouts for one column
            raise InvalidParameterError(f"{seen[name]} and {flag} name the same column {name!r}: the variables "
                                        "must differ")
        if name is not None:
            seen[name] = flag


def _parameter_checks(batches: list[Any], variables: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    """:func:`rappor.analysis._consistency.check_bit_count` of each string variable's reports, a warning on stderr for
    each that does not fit its parameters; the summary's ``parameter_check`` (booleans set 0 or 1 bit: none)."""
    from ..analysis import check_bit_count
    from ..collect import Aggregate

    checks: dict[str, Any] = {}
    source = f"--params {args.params}" if args.params is not None else f"the schema's parameters in {args.params_dir}"
    for batch, var in zip(batches, variables):
        if var.kind != "string":
            continue
        check = check_bit_count(Aggregate.from_reports(batch))
        if check is not None:
            checks[var.name] = check.as_dict()
            if not check.fits:
                sys.stderr.write(f"rappor: warning: {check.warning(f'the reports of {var.name!r} ({source})')}\n")
    return checks


def _string_map(args: argparse.Namespace, j: int, params: Any) -> Any:
    from ..collect import hash_candidates
    from ..formats import read_candidates, read_map

    path_map, path_cand = getattr(args, f"map{j}"), getattr(args, f"candidates{j}")
    name = getattr(args, f"var{j}")
    if path_map is not None and path_cand is not None:
        raise InvalidParameterError(f"give --map{j} or --candidates{j} for variable {name!r}, not both")
    if path_map is not None:
        return read_map(path_map, params)
    if path_cand is not None:
        return hash_candidates(read_candidates(path_cand), params)
    raise InvalidParameterError(f"--map{j} (or --candidates{j}) must be provided when --var{j} is a string "
                                f"(var = {name})")


def _google_types(args: argparse.Namespace, indices: list[int]) -> tuple[Any, list[str]]:
    """Parameters and variable types from the schema (decode_assoc.R's checks).

    The parameters file the schema names is an input too: it joins the same-file check
    (an --output-dir that holds it must not replace it).
    """
    from ..formats import read_params, read_schema
    from ._common import check_command_files

    schema = read_schema(args.schema)
    rows = []
    for j in indices:
        name = getattr(args, f"var{j}")
        found = [r for r in schema if r.metric == args.metric_name and r.var == name]
        if not found:
            raise ReportFormatError(f"couldn't find metric {args.metric_name!r}, field {name!r} in the schema",
                                    path=args.schema)
        rows.append(found[0])
    if len({r.params for r in rows}) > 1:
        raise ReportFormatError(f"the variables should have the same params ({', '.join(r.params for r in rows)}) "
                                f"(lines {', '.join(str(r.line) for r in rows)})", path=args.schema)
    for r in rows:
        if r.var_type not in ("string", "boolean"):
            raise ReportFormatError(f"variable {r.var!r} has type {r.var_type!r}; expected string or boolean",
                                    path=args.schema, line=r.line)
    params_path = os.path.join(args.params_dir, f"{rows[0].params}.csv")
    named = files(args)
    check_command_files(CommandFiles(inputs=[*named.inputs, ("--params-dir", params_path)], outputs=named.outputs))
    params = read_params(params_path)
    return params, [r.var_type for r in rows]


@contextlib.contextmanager
def stage_bar(quiet: bool) -> Iterator[Callable[[str], None] | None]:
    """A callback advancing a tqdm bar over the decode's stages on stderr, or ``None``.

    Shown only when standard error is a terminal, tqdm is installed and ``--quiet`` is not given.
    """
    tqdm = None if quiet else terminal_tqdm()
    if tqdm is None:
        yield None
        return
    from ..analysis.association import STAGES

    with tqdm(total=len(STAGES), file=sys.stderr, desc="decode-assoc", unit="stage", leave=False) as bar:
        started = [False]

        def advance(stage: str) -> None:
            if started[0]:
                bar.update(1)
            started[0] = True
            bar.set_postfix_str(stage)
        yield advance


def run(args: argparse.Namespace) -> int:
    """Read the inputs, decode the association and write the results."""
    from ..analysis.association import AssociationDecoder, Variable, decode_collection
    from ..analysis.decoder import Decoder
    from ..formats import read_assoc_reports, read_params

    started = time.perf_counter()
    _check_args(args)
    indices = _variables(args)
    names = [getattr(args, f"var{j}") for j in indices]
    google = args.schema is not None
    if google:
        params, types = _google_types(args, indices)
    else:
        params = read_params(args.params)
        types = ["boolean" if getattr(args, f"bool{j}") else "string" for j in indices]
    variables = []
    for j, name, kind in zip(indices, names, types):
        if kind == "boolean":
            variables.append(Variable.boolean(name, params))
        else:
            variables.append(Variable.string(name, _string_map(args, j, params)))
    data = read_assoc_reports(args.reports, names, [v.params for v in variables],
                              remove_bad_rows=args.remove_bad_rows)
    batches = list(data.batches)
    if data.removed:
        sys.stderr.write(f"rappor: removed {data.removed} row(s) with a blank value; {len(batches[0])} left\n")
    n_total = len(batches[0])
    if n_total == 0:
        why = f" ({data.removed} removed with a blank value)" if data.removed else " (a header and no row)"
        sys.stderr.write(f"rappor: error: {display_name(args.reports)}: no reports to analyse{why}\n")
        return NO_REPORTS_STATUS if google else 1
    checks = _parameter_checks(batches, variables, args)
    decoder = AssociationDecoder(candidates=args.categories, other=args.other, method=args.method,
                                 max_iterations=args.max_em_iters, tolerance=args.tolerance,
                                 independence_test=args.independence_test,
                                 intervals=args.intervals if args.intervals != "profile" else "projected",
                                 profile_level=0.95 if args.intervals == "profile" else None,
                                 shrinkage=args.shrinkage, other_share=args.other_share,
                                 decoder=Decoder(significance_level=args.level))
    with stage_bar(args.quiet) as progress:
        result = decode_collection(batches, variables, decoder=decoder, rng=args.seed, progress=progress,
                                   sample_size=None if args.reports_sample_size == -1 else args.reports_sample_size,
                                   clients=data.clients)
    summary = result.summary()
    summary.update(reports_read=n_total, reports_removed=data.removed, reports_sample_size=args.reports_sample_size,
                   parameter_check=checks, total_elapsed_time=round(time.perf_counter() - started, 4))
    if google:
        from .._util.outputs import output_directory

        out_dir = output_directory(args.output_dir or ".")
        written = [out_dir / "assoc-results.csv", out_dir / "assoc-metrics.json"]
        _write_both(result, written[0], "google", written[1], summary)
    elif args.summary is not None:
        written = [args.output, args.summary]
        _write_both(result, args.output, args.layout, args.summary, summary)
    else:
        written = [args.output]
        from ..formats import write_assoc_results

        write_assoc_results(result, args.output, layout=args.layout)
    for note in _outside_strings_notes(result, args.other):
        sys.stderr.write(note)
    tell(args, f"decoded the joint table of {', '.join(result.variables)} "
               f"({' x '.join(str(c) for c in result.shape)} cells) from {result.n_reports:,} reports; "
               f"wrote {', '.join(shown(path) for path in written)}")
    return 0


def _outside_strings_notes(result: Any, other: str) -> list[str]:
    """A note for each string variable whose reports its candidates leave largely unexplained.

    The marginal decode's unexplained mass (``rappor decode`` says the same of its counts)
    is the share of reports from strings outside the list; more than 4 of its standard
    errors above 0 and above 5%, it is said, with where the table puts that share.
    """
    notes = []
    for name, marginal in zip(result.variables, result.marginal_results):
        diag = getattr(marginal, "diagnostics", None)
        mass, se = getattr(diag, "unexplained_mass", math.nan), getattr(diag, "unexplained_std_error", math.nan)
        if not (math.isfinite(mass) and math.isfinite(se)) or mass < 0.05 or mass < 4.0 * se:
            continue
        where = ("with --other none the table has no category for them, so the candidates' shares are too high"
                 if other == "none" else "the table counts them in Other")
        notes.append(f"rappor: note: about {mass:.0%} (SE {se:.1%}) of the reports of {name!r} come from strings "
                     f"outside its candidate list (its marginal decode's unexplained mass); {where}. A candidate "
                     f"that shares their bits can be detected with a share it does not have: add the missing "
                     f"strings (rappor discover finds candidates)\n")
    return notes


def _write_both(result: Any, results_path: Any, layout: Literal["rappor", "google"], summary_path: Any,
                summary: dict[str, Any]) -> None:
    """The results CSV and the JSON summary: both files or neither.

    Written as one set (:func:`~rappor._util.outputs.outputs_together`): neither is renamed
    into place until both are on disk, so a bad summary path or a full disk leaves neither.
    """
    from .._util.outputs import atomic_output, outputs_together
    from ..formats import write_assoc_results

    text = json_text(summary)
    with outputs_together(), atomic_output(summary_path) as fh:
        write_assoc_results(result, results_path, layout=layout)
        fh.write(text)
