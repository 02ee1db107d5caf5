"""Count reports per cohort and bit: reports CSV files -> google/rappor counts.csv.

Example:
    rappor sum-bits --params params.csv reports.csv -o counts.csv

Each REPORTS file is our 'client,cohort,irr' CSV or google/rappor's
'client,cohort,bloom,prr,irr' (the header decides), or Parquet (a file or a directory);
several files are summed into one table, and '-' reads standard input.  The output has
one row per cohort: the number of reports, then the number of ones of bit 0, 1, ...,
k-1.  A warning is printed when the cohorts are unbalanced beyond chance (a chi-square test of
the reports per cohort at level 1e-6; google/rappor's max - min > N/m fires on random
spread).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._util.outputs import atomic_output
from .._util.paths import STDIO, display_name
from .._util.progress import progress
from .._util.rejects import RejectsWriter, resolve_rejects_path
from ..collect import Aggregate, check_cohort_balance
from ..engines import aggregate_files
from ..exceptions import InvalidParameterError, RapporIOError
from ..formats import write_counts
from ._common import CommandFiles, add_on_error_arguments, add_output_argument, add_params_argument

if TYPE_CHECKING:
    from ..params import Params

NAME = "sum-bits"
HELP = "sum report bits per cohort (reports CSV -> counts.csv)"
ORDER = 30


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor sum-bits``."""
    parser.add_argument("reports", nargs="*", default=[STDIO], metavar="REPORTS",
                        help="reports CSV files ('-' for stdin) [default: stdin]")
    add_params_argument(parser)
    add_output_argument(parser, help_text="output counts.csv ('-' for stdout)")
    add_on_error_arguments(parser, kept="the good rows are counted")
    parser.add_argument("--engine", choices=("numpy", "dask", "spark"), default="numpy",
                        help="numpy: this process; dask or spark: count partitions on a cluster "
                             "(pip install 'rappor[dask]' or 'rappor[spark]'); the counts are identical "
                             "[default: numpy]")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="Dask scheduler address, e.g. tcp://host:8786 (--engine dask) [default: local threads]")
    parser.add_argument("--spark-master", metavar="URL", default=None,
                        help="Spark master URL, e.g. spark://host:7077 (--engine spark) [default: local[*]]")


def files(args: argparse.Namespace) -> CommandFiles:
    """REPORTS (summed: none may repeat) and ``--params`` in; ``-o`` and the rejects file out.

    A directory of Parquet files stands for each of its files, so an output may not
    replace one of them, and a file may not be given both alone and within its directory.
    """
    outputs = [("-o", args.output)]
    if args.on_error == "skip":
        outputs.append(("--rejects", resolve_rejects_path(args.output, args.rejects, "counts")))
    return CommandFiles(inputs=[("--params", args.params)], outputs=outputs,
                        summed=[("REPORTS", path) for path in report_files(args.reports)])


def report_files(paths: Sequence[str]) -> list[str]:
    """``paths`` with every directory replaced by the Parquet files it holds (:func:`parquet_files`).

    A directory that gives no files stays as it is: the run then says why (no Parquet
    file, a directory it cannot read, or first a missing pyarrow).
    """
    from ..formats import parquet_files

    expanded: list[str] = []
    for path in paths:
        if path != STDIO and "://" not in path and os.path.isdir(path):
            try:
                expanded.extend(os.fspath(file) for file in parquet_files(path))
                continue
            except RapporIOError:
                pass
        expanded.append(path)
    return expanded


@contextlib.contextmanager
def progress_bar(paths: Sequence[str], *, quiet: bool = False) -> Iterator[Callable[[int], None] | None]:
    """A byte-count progress callback drawing a bar on stderr, or ``None`` (:mod:`rappor._util.progress`)."""
    sizes = [os.path.getsize(p) if p != STDIO and os.path.isfile(p) else None for p in paths]
    total = None if None in sizes else sum(s for s in sizes if s is not None)
    with progress(total, desc="sum-bits", unit="B", unit_scale=True, quiet=quiet) as advance:
        yield advance


def _engine_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--scheduler``/``--spark-master`` as options of :func:`rappor.engines.get_engine`."""
    options: dict[str, Any] = {}
    if args.scheduler is not None:
        if args.engine != "dask":
            raise InvalidParameterError("--scheduler needs --engine dask.")
        options["scheduler"] = args.scheduler
    if args.spark_master is not None:
        if args.engine != "spark":
            raise InvalidParameterError("--spark-master needs --engine spark.")
        options["master"] = args.spark_master
    return options


def run(args: argparse.Namespace) -> int:
    """Sum the reports of every input and write counts.csv (:func:`rappor.engines.aggregate_files`)."""
    params, shares = _params_and_shares(args.params)
    options = _engine_options(args)
    if args.on_error == "raise":
        with progress_bar(args.reports) as progress:
            aggregate = aggregate_files(args.reports, params, engine=args.engine, progress=progress, **options)
        _write(aggregate, args.output, shares)
        return 0
    rejects_path = resolve_rejects_path(args.output, args.rejects, "counts")
    # Both files are committed only if every input was read: a fatal error leaves neither.
    with atomic_output(rejects_path) as fh, progress_bar(args.reports) as progress:
        sink = RejectsWriter(fh)
        aggregate = aggregate_files(args.reports, params, engine=args.engine, progress=progress,
                                    on_error="skip", rejects=sink, **options)
        _write(aggregate, args.output, shares)
    where = display_name(rejects_path) if rejects_path != STDIO else "<stdout>"
    sys.stderr.write(f"rappor: skipped {sink.count} bad row(s); {aggregate.total_reports} reports counted; "
                     f"rejected rows are in {where}\n")
    return 0


def _params_and_shares(path: str) -> tuple[Params, npt.NDArray[np.float64] | None]:
    """The report files' parameters and each cohort's expected share of the reports (None: equal).

    A discovery parameters file (one slot's, with the clients' layout: ``rappor plan
    --discovery-params-out``) gives the wire parameters (``levels x m`` cohorts) and the shares
    its slot weights set (a slot's weight over its ``m`` cohorts); a plain ``k,h,m,p,q,f`` file
    gives itself, every cohort alike.
    """
    from ..analysis.discovery import DiscoverySpec
    from ..formats import read_discovery_params

    params, layout = read_discovery_params(path)
    if not layout:
        return params, None
    spec = DiscoverySpec(params=params, **layout)
    return spec.wire_params, np.repeat(spec.slot_shares / params.num_cohorts, params.num_cohorts)


def _write(aggregate: Aggregate, output: str, shares: npt.NDArray[np.float64] | None) -> None:
    """Warn about unbalanced cohorts (google/rappor's check), then write counts.csv."""
    check_cohort_balance(aggregate, expected_shares=shares,
                         note="" if shares is not None else "; discovery reports with slot weights: give --params "
                         "the discovery parameters file, whose weights set each cohort's share")
    write_counts(aggregate, output)
