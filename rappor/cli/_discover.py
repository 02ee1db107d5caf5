"""Find frequent strings that are in no candidate list, from discovery reports alone.

Example:
    rappor discover --params disc-params.csv --counts disc-counts.csv \\
        -o found.csv --list found.txt

Reads the discovery reports (--reports: CSV 'client,cohort,irr' or Parquet files, as
'rappor sum-bits' reads them) or their per-(slot, cohort) bit counts (--counts: 'rappor
sum-bits' of them with the wire parameters, num_cohorts = slots x cohorts per slot, so a
Dask or Spark aggregation works unchanged) and writes the values found, most frequent
first, with their estimated share of the discovery reports, its standard error, a
z-score and p-value from the slots that confirm it, and whether it passes Bonferroni at
--level (--max-false K: the chance of more than K false values is at most --level).
'rappor decode --candidates found.csv' estimates the significant ones from the
full-string reports, whatever bytes they hold; --list also writes them one per line
(found.txt, for people: values with a line break, a control or a bidirectional character
are left out of it, with a warning):

    rappor discover --params disc-params.csv --counts disc-counts.csv \\
        -o found.csv --list found.txt
    rappor decode --params params.csv --counts counts.csv --candidates found.csv

or in one command, 'rappor decode ... --discover disc-counts.csv --discovery-params
disc-params.csv'.  disc-params.csv holds the parameters of ONE slot (num_cohorts =
cohorts per slot) and, as 'rappor plan --discovery-params-out' writes it, the clients'
layout (max_length, segment, slot_weights); for a file without them, --max-length,
--segment and --slot-weights must be those of the clients.  --prior-values known.txt (a
candidate list, or an earlier found.csv) gives the search's byte prior the bytes of values
known from elsewhere before the first slot, as 'rappor decode --discover' does with its
candidates.  See docs/discovery.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .._util.progress import progress
from ._common import (CommandFiles, UsageError, add_level_argument, add_output_argument, add_params_argument,
                      add_quiet_argument, flags, integer, json_text)

if TYPE_CHECKING:
    from ..analysis.discovery import DiscoveryResult, DiscoverySpec
    from ..params import Params
    from ..collect import Aggregate

NAME = "discover"
USAGE = ("%(prog)s --params PATH (--counts PATH | --reports PATH [PATH ...])\n"
         "       [-o PATH] [--list PATH] [--prior-values PATH] [--summary PATH] [OPTIONS]")
HELP = "find frequent strings outside any candidate list (discovery counts -> found.csv)"
ORDER = 55


#: The flags that set a :class:`DiscoverySpec`'s parameters (for :func:`rappor.cli._common.flags`).
SPEC_FLAGS = {"max_length": "--max-length", "segment": "--segment", "alphabet": "--alphabet",
              "slot_weights": "--slot-weights"}
#: The clients' layout: what a discovery parameters file may hold, and the flags' values without it.
LAYOUT_DEFAULTS: dict[str, Any] = {"max_length": 30, "segment": 2, "slot_weights": None}


def _shown(value: Any) -> str:
    """A layout value as its flag is written (weights comma-separated)."""
    if value is None:
        return "none (every slot alike)"
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def layout_spec(args: argparse.Namespace, params: Params, layout: dict[str, Any], source: str,
                alphabet: str = "bytes") -> DiscoverySpec:
    """The :class:`DiscoverySpec` of one slot's ``params``, the file's ``layout`` and the layout flags.

    A layout the file holds is the clients': a flag may repeat it but not contradict it
    (usage error naming both).  Without it (a plain ``k,h,m,p,q,f`` file, or none), the
    flags give the layout, and their defaults where they are not given.
    """
    from ..analysis.discovery import DiscoverySpec

    values = {}
    for key, default in LAYOUT_DEFAULTS.items():
        given = getattr(args, key, None)
        if key in layout and given is not None and given != layout[key]:
            raise UsageError(f"argument {SPEC_FLAGS[key]}: {_shown(given)} contradicts {source}, which holds the "
                             f"clients' {key} {_shown(layout[key])} (leave {SPEC_FLAGS[key]} out)")
        values[key] = layout.get(key, default if given is None else given)
    with flags(SPEC_FLAGS):
        return DiscoverySpec(params=params, alphabet=alphabet, **values)


def read_layout_spec(args: argparse.Namespace, path: str, option: str, alphabet: str = "bytes") -> DiscoverySpec:
    """:func:`layout_spec` of the discovery parameters file ``path`` (given as ``option``)."""
    from ..formats import read_discovery_params

    params, layout = read_discovery_params(path)
    return layout_spec(args, params, layout, f"{path} ({option})", alphabet)


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-length``, ``--segment``, ``--alphabet`` (the discovery layout)."""
    from ..analysis.discovery import ALPHABETS

    add_layout_arguments(parser)
    parser.add_argument("--alphabet", default="bytes", choices=sorted(ALPHABETS), metavar="NAME",
                        help=f"bytes tried when extending a prefix: {', '.join(sorted(ALPHABETS))} (bytes: all 256) "
                             "[default: bytes]")


def add_layout_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-length``, ``--segment``, ``--slot-weights``: the clients' layout, when the parameters file lacks it."""
    parser.add_argument("--max-length", type=integer(1), default=None, metavar="BYTES",
                        help="longest discoverable value, in UTF-8 bytes [default: the discovery parameters "
                             "file's, else 30]")
    parser.add_argument("--segment", type=integer(1), default=None, choices=(1, 2, 3),
                        help="bytes added per slot [default: the discovery parameters file's, else 2]")
    parser.add_argument("--slot-weights", type=slot_weights, default=None, metavar="W0,W1,...",
                        help="a client falls in slot s with probability W_s / sum(W): one positive integer per slot "
                             "(slots = ceil(max-length / segment) + 1), the same for clients and server "
                             "[default: the discovery parameters file's, else every slot alike]")


def slot_weights(text: str) -> tuple[int, ...]:
    """An argparse ``type``: comma-separated integers in [1, 2**20]."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}") from None
    if not values or min(values) < 1 or max(values) > 2**20:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers in [1, 1048576], got {text!r}")
    return values


def add_search_arguments(parser: argparse.ArgumentParser, *, quiet: bool = True) -> None:
    """``--beam`` (the search's width) and, unless the command has its own, ``--quiet``."""
    parser.add_argument("--beam", type=integer(1), default=1000, metavar="B",
                        help="most prefixes kept per slot [default: 1000]")
    parser.add_argument("--max-false", type=integer(0), default=0, metavar="K",
                        help="false significant values tolerated: the chance of more than K is at most --level "
                             "(generalized Bonferroni) [default: 0]")
    if quiet:
        add_quiet_argument(parser)


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
    parser.add_argument("--prior-values", metavar="PATH",
                        help="values known from outside the reports (a candidate list: one per line, or a found.csv), "
                             "whose bytes the search's byte prior learns before the first slot; 'rappor decode "
                             "--discover' uses its candidates so [default: none]")
    parser.add_argument("--summary", metavar="PATH",
                        help="also write a JSON summary (per-slot diagnostics) [default: none]")


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` and ``--counts`` or ``--reports`` in; ``-o``, ``--list`` and ``--summary`` out."""
    outputs = [("-o", args.output)]
    outputs += [(option, path) for option, path in (("--list", args.list), ("--summary", args.summary)) if path]
    inputs = [("--params", args.params)]
    inputs += [("--prior-values", args.prior_values)] if args.prior_values is not None else []
    inputs += [("--counts", args.counts)] if args.counts is not None else [("--reports", p) for p in args.reports]
    summed = [("--reports", p) for p in args.reports] if args.reports else []
    return CommandFiles(inputs=inputs, outputs=outputs, summed=summed)


def discovery_aggregate(spec: DiscoverySpec, counts: str | None, reports: list[str] | None) -> Aggregate:
    """The discovery counts: read from ``counts``, or summed from the ``reports`` files (CSV or Parquet)."""
    from ..formats import read_counts

    if counts is not None:
        cohorts = spec.params.num_cohorts
        rows = (f"{spec.levels} slots x {cohorts} cohorts, from --max-length {spec.max_length} and --segment "
                f"{spec.segment}, which must be those of the clients")
        return read_counts(counts, spec.wire_params, rows=rows)
    from ..engines import aggregate_files

    return aggregate_files(list(reports or ()), spec.wire_params)


def parameter_check(aggregate: Aggregate, spec: DiscoverySpec, what: str) -> tuple[dict[str, Any] | None, str]:
    """:func:`rappor.analysis._consistency.check_bit_count` of the discovery counts (a value's reports spread
    over the cohorts of its slot): the summary's ``parameter_check`` and a warning line ("" when they fit),
    printed once the outputs are written."""
    from ..analysis import check_bit_count

    check = check_bit_count(aggregate, cohorts_per_value=spec.params.num_cohorts)
    if check is None:
        return None, ""
    return check.as_dict(), ("" if check.fits else f"rappor: warning: {check.warning(what)}\n")


def left_out_note(result: DiscoveryResult, listed: int | None = None) -> str:
    """A line for stderr saying which significant values a candidate list leaves out, and why ("" if none).

    ``listed``: the values written one per line (``--list``); None when every UTF-8
    value is decoded (``decode --discover``).
    """
    significant = int(result.significant.sum())
    utf8 = len(result.candidates())
    parts = []
    if utf8 < significant:
        parts.append(f"{significant - utf8} significant value(s) are not UTF-8 text and cannot be decoded as "
                     "candidates (a candidate is hashed as UTF-8; they are in the -o CSV with \\x escapes)")
    if listed is not None and listed < utf8:
        parts.append(f"{utf8 - listed} significant value(s) hold a line break, a control or bidirectional "
                     "character, or only white space, and are not in --list; 'rappor decode --candidates' reads "
                     "them from the -o CSV (found.csv)")
    return "".join(f"rappor: warning: {part}\n" for part in parts)


def spec_from_args(args: argparse.Namespace) -> DiscoverySpec:
    """The :class:`DiscoverySpec` of ``--params`` (its layout, or ``--max-length``, ...) and ``--alphabet``."""
    return read_layout_spec(args, args.params, "--params", args.alphabet)


def run(args: argparse.Namespace) -> int:
    from .._util.csv_text import spreadsheet_text
    from .._util.outputs import atomic_output, outputs_together
    from ..analysis.discovery import discover, listed_strings
    from ..formats import read_candidates, write_found

    spec = spec_from_args(args)
    aggregate = discovery_aggregate(spec, args.counts, args.reports)
    check, misfit = parameter_check(aggregate, spec, f"the discovery counts (--params {args.params})")
    known = read_candidates(args.prior_values, allow_duplicates=True) if args.prior_values is not None else []
    with progress(spec.levels, desc="discover", unit="slot", quiet=args.quiet) as update:
        result = discover(aggregate, spec, beam=args.beam, significance_level=args.level, max_false=args.max_false,
                          progress=update, prior_values=known)
    listed = listed_strings(result)
    # Open every extra output first: a bad path must not leave a partial set behind.
    with outputs_together(), atomic_output(args.list) if args.list else _nothing() as list_out, \
            atomic_output(args.summary) if args.summary else _nothing() as summary:
        write_found(result, args.output)
        if list_out is not None:
            for s in listed:
                list_out.write(spreadsheet_text(s) + "\n")
        if summary is not None:
            data = {"spec": spec.as_dict(), "found": len(result), "significant": int(result.significant.sum()),
                    "listed": len(listed), "tested": result.n_tested, "reports": result.n_reports,
                    "parameter_check": check, "diagnostics": result.diagnostics}
            summary.write(json_text(data))
    sys.stderr.write(left_out_note(result, len(listed) if args.list else None) + misfit)
    if args.output not in (None, "-") and not args.quiet:  # -q: the line saying what was written goes
        sys.stderr.write(f"rappor: found {int(result.significant.sum())} significant values "
                         f"({len(result)} kept) in {result.n_reports:,} discovery reports\n")
    return 0


class _nothing:
    """A context manager yielding None (an output that was not asked for)."""

    def __enter__(self) -> Any:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
