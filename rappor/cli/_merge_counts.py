"""Add up several google/rappor counts.csv files (e.g. from different machines or days).

Example:
    rappor merge-counts --params params.csv day1.csv day2.csv -o counts.csv

Every COUNTS file must have been made with the same parameters (m rows of k+1
counts); the sum is exact.  A warning is printed when the merged cohorts are
unbalanced beyond chance (a chi-square test at level 1e-6).
"""

from __future__ import annotations

import argparse

from .._util.paths import display_name
from ..collect import Aggregate, check_cohort_balance
from ..exceptions import CountOverflowError, ReportFormatError
from ..formats import read_counts, write_counts
from ._common import CommandFiles, add_output_argument, add_params_argument, load_params

NAME = "merge-counts"
HELP = "add up counts.csv files made with the same parameters"
ORDER = 31


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor merge-counts``."""
    parser.add_argument("counts", nargs="+", metavar="COUNTS", help="counts.csv files ('-' for stdin)")
    add_params_argument(parser)
    add_output_argument(parser, help_text="output counts.csv ('-' for stdout)")


def files(args: argparse.Namespace) -> CommandFiles:
    """COUNTS (summed: none may repeat) and ``--params`` in; ``-o`` out."""
    return CommandFiles(inputs=[("--params", args.params)], outputs=[("-o", args.output)],
                        summed=[("COUNTS", path) for path in args.counts])


def run(args: argparse.Namespace) -> int:
    """Read every counts file, merge, write the sum."""
    params = load_params(args)
    merged = Aggregate.empty(params)
    for path in args.counts:
        counts = read_counts(path, params)
        try:
            merged = merged.merge(counts)
        except CountOverflowError:  # the sum is out of the int64 range
            msg = ("expected counts whose sum with the files before it fits in int64, found a count or a total "
                   "number of reports above 2**63 - 1")
            raise ReportFormatError(msg, path=display_name(path)) from None
    check_cohort_balance(merged)
    write_counts(merged, args.output)
    return 0
