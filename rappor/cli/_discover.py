"""Find frequent strings that are in no candidate list, from discovery reports alone.

Reads the discovery reports (--reports: CSV 'client,cohort,irr' or Parquet files, as
'rappor sum-bits' reads them) or their per-(slot, cohort) bit counts (--counts: 'rappor
sum-bits' of them with the wire parameters, num_cohorts = slots x cohorts per slot, so a
Dask or Spark aggregation works unchanged) and writes the values found, most frequent
first, with their estimated share of the discovery reports, its standard error, a
z-score and p-value from the slots that confirm it, and whether it passes Bonferroni at
--level.  'rappor decode --discover found.csv' estimates the significant ones from the
full-string reports (every value survives in found.csv, line breaks and commas
included); --list also writes them one per line, leaving out values a line cannot hold:

    rappor discover --params disc-params.csv --counts disc-counts.csv \\
        -o found.csv
    rappor decode --params params.csv --counts counts.csv \\
        --candidates known.txt --discover found.csv

or in one command, 'rappor decode ... --discover disc-counts.csv --discovery-params
disc-params.csv'.  disc-params.csv holds the parameters of ONE slot (num_cohorts =
cohorts per slot); --max-length and --segment must be those of the clients.  See
docs/discovery.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import (CommandFiles, add_level_argument, add_output_argument, add_params_argument, add_quiet_argument,
                      integer, load_params, progress_callback)

if TYPE_CHECKING:
    from ..collect._aggregate import Aggregate
    from ..analysis.discovery._spec import DiscoverySpec
    from ..analysis.discovery._search import DiscoveryResult

NAME = "discover"
HELP = "find frequent strings outside any candidate list (discovery counts -> found.csv)"
ORDER = 55


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-length``, ``--segment``, ``--alphabet`` (the discovery layout)."""
    from ..analysis.discovery._spec import ALPHABETS

    parser.add_argument("--max-length", type=integer(1), default=30, metavar="BYTES",
                        help="longest discoverable value, in UTF-8 bytes [default: 30]")
    parser.add_argument("--segment", type=integer(1), default=2, choices=(1, 2, 3),
                        help="bytes added per slot [default: 2]")
    parser.add_argument("--alphabet", default="bytes", choices=sorted(ALPHABETS), metavar="NAME",
                        help=f"bytes tried when extending a prefix: {', '.join(sorted(ALPHABETS))} (bytes: all 256) "
                             "[default: bytes]")
    add_slot_weights_argument(parser)


def add_slot_weights_argument(parser: argparse.ArgumentParser) -> None:
    """``--slot-weights W0,W1,...`` (one positive integer per slot; the clients' and the server's must agree)."""
    parser.add_argument("--slot-weights", type=slot_weights, default=None, metavar="W0,W1,...",
                        help="a client falls in slot s with probability W_s / sum(W): one positive integer per slot "
                             "(slots = ceil(max-length / segment) + 1), the same for clients and server "
                             "[default: none, every slot alike]")


def slot_weights(text: str) -> tuple[int, ...]:
    """An argparse ``type``: comma-separated integers in [1, 2**20]."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}") from None
    if not values or min(values) < 1 or max(values) > 2**20:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers in [1, 1048576], got {text!r}")
    return values


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """``--beam`` (the search's width) and ``--quiet``."""
    parser.add_argument("--beam", type=integer(1), default=1000, metavar="B",
                        help="most prefixes kept per slot [default: 1000]")
    add_quiet_argument(parser)


def run_search(args: argparse.Namespace, spec: DiscoverySpec, aggregate: Aggregate) -> DiscoveryResult:
    """:func:`rappor.discovery.discover` with ``--beam`` and ``--level``, a progress bar over the slots."""
    from ..analysis.discovery import discover

    with progress_callback(spec.levels, desc="discover", unit="slot", quiet=args.quiet) as update:
        return discover(aggregate, spec, beam=args.beam, significance_level=args.level, progress=update)


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--counts", metavar="PATH",
                        help="discovery counts (sum-bits of the discovery reports, slots x cohorts rows)")
    source.add_argument("--reports", nargs="+", metavar="PATH",
                        help="discovery reports: CSV files or Parquet files or directories (summed as sum-bits does)")
    add_spec_arguments(parser)
    add_output_argument(parser, help_text="found values CSV")
    parser.add_argument("--list", metavar="PATH", help="also write the significant values one per line "
                        "(a candidate list for 'rappor decode --candidates') [default: none]")
    add_level_argument(parser, help_text="family-wise level of the 'significant' column (Bonferroni)")
    add_search_arguments(parser)
    parser.add_argument("--summary", metavar="PATH",
                        help="also write a JSON summary (per-slot diagnostics) [default: none]")


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` and ``--counts`` or ``--reports`` in; ``-o``, ``--list`` and ``--summary`` out."""
    outputs = [("-o", args.output)]
    outputs += [(option, path) for option, path in (("--list", args.list), ("--summary", args.summary)) if path]
    inputs = [("--params", args.params)]
    inputs += [("--counts", args.counts)] if args.counts is not None else [("--reports", p) for p in args.reports]
    summed = [("--reports", p) for p in args.reports] if args.reports else []
    return CommandFiles(inputs=inputs, outputs=outputs, summed=summed)


def discovery_aggregate(spec: DiscoverySpec, counts: str | None, reports: list[str] | None) -> Aggregate:
    """The discovery counts: read from ``counts``, or summed from the ``reports`` files (CSV or Parquet)."""
    from ..formats._counts import read_counts

    if counts is not None:
        return read_counts(counts, spec.wire_params)
    from ..engines._aggregate import aggregate_files

    return aggregate_files(list(reports or ()), spec.wire_params)


def spec_from_args(args: argparse.Namespace) -> DiscoverySpec:
    """The :class:`DiscoverySpec` of ``--params``, ``--max-length``, ``--segment``, ``--alphabet``."""
    from ..analysis.discovery._spec import DiscoverySpec

    return DiscoverySpec(params=load_params(args), max_length=args.max_length, segment=args.segment,
                         alphabet=args.alphabet, slot_weights=args.slot_weights)


def run(args: argparse.Namespace) -> int:
    from .._util.io import atomic_output
    from ..analysis.discovery import listed_strings

    spec = spec_from_args(args)
    aggregate = discovery_aggregate(spec, args.counts, args.reports)
    result = run_search(args, spec, aggregate)
    listed = listed_strings(result)
    # Open every extra output first: a bad path must not leave a partial set behind.
    with atomic_output(args.list) if args.list else _nothing() as list_out, \
            atomic_output(args.summary) if args.summary else _nothing() as summary:
        result.to_csv(args.output)
        if list_out is not None:
            for s in listed:
                list_out.write(s + "\n")
        if summary is not None:
            data = {"spec": spec.as_dict(), "found": len(result), "significant": int(result.significant.sum()),
                    "listed": len(listed), "tested": result.n_tested, "reports": result.n_reports,
                    "diagnostics": result.diagnostics}
            json.dump(data, summary, indent=2, default=float)
            summary.write("\n")
    if args.output not in (None, "-"):
        sys.stderr.write(f"rappor: found {int(result.significant.sum())} significant values "
                         f"({len(result)} kept) in {result.n_reports:,} discovery reports\n")
    left_out = len(result.candidates()) - len(listed)
    if args.list and left_out:
        sys.stderr.write(f"rappor: warning: {left_out} significant value(s) hold a line break or only white space "
                         f"and cannot be written one per line: left out of {args.list}; 'rappor decode --discover "
                         "FOUND.CSV' reads every value from the -o file\n")
    return 0


class _nothing:
    """A context manager yielding None (an output that was not asked for)."""

    def __enter__(self) -> Any:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
