"""Count reports per cohort and bit: reports CSV files -> google/rappor counts.csv.

Each REPORTS file is our ``client,cohort,irr`` CSV or google/rappor's
``client,cohort,bloom,prr,irr`` (the header decides); several files are summed into one
table, and ``-`` reads standard input.  The output has one row per cohort: the number of
reports, then the number of ones of bit 0, 1, ..., k-1.  A warning is printed when the
cohorts are unbalanced (max - min > N/m, google/rappor's check).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from .._io import STDIO
from ..aggregate import Aggregate, check_cohort_balance, write_counts
from ..reports import iter_reports
from ._common import add_output_argument, add_params_argument, load_params

NAME = "sum-bits"
HELP = "sum report bits per cohort (reports CSV -> counts.csv)"
ORDER = 30


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor sum-bits``."""
    parser.add_argument("reports", nargs="*", default=[STDIO], metavar="REPORTS",
                        help="reports CSV files ('-' for stdin) [default: stdin]")
    add_params_argument(parser)
    add_output_argument(parser, help_text="output counts.csv ('-' for stdout)")


@contextlib.contextmanager
def progress_bar(paths: Sequence[str]) -> Iterator[Callable[[int], None] | None]:
    """A byte-count progress callback drawing a tqdm bar on stderr, or ``None``.

    The bar is shown only when standard error is a terminal and tqdm is installed.
    """
    if not sys.stderr.isatty():
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield None
        return
    sizes = [os.path.getsize(p) if p != STDIO and os.path.isfile(p) else None for p in paths]
    total = None if None in sizes else sum(s for s in sizes if s is not None)
    with tqdm(total=total, unit="B", unit_scale=True, file=sys.stderr, desc="sum-bits", leave=False) as bar:
        yield bar.update


def run(args: argparse.Namespace) -> int:
    """Sum the reports of every input and write counts.csv."""
    params = load_params(args)
    counts = np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)
    with progress_bar(args.reports) as progress:
        for path in args.reports:
            counts += Aggregate.from_report_chunks(iter_reports(path, params, progress=progress), params).counts
    aggregate = Aggregate(params=params, counts=counts)
    check_cohort_balance(aggregate)
    write_counts(aggregate, args.output)
    return 0
