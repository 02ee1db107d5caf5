"""Find frequent strings that are in no candidate list, from discovery reports alone.

Reads the per-(slot, cohort) bit counts of the discovery reports ('rappor sum-bits'
of them, with the wire parameters: num_cohorts = slots x cohorts per slot) and writes
the values found, most frequent first, with their estimated share of the discovery
reports, its standard error, a pooled z-score and p-value, and whether they pass
Bonferroni at --level.  --list writes the significant ones one per line for
'rappor decode --candidates', which estimates them from the full-string reports:

    rappor discover --params disc-params.csv --counts disc-counts.csv \\
        -o found.csv --list found.txt
    rappor decode --params params.csv --counts counts.csv --candidates found.txt

disc-params.csv holds the parameters of ONE slot (num_cohorts = cohorts per slot);
--max-length and --segment must be those of the clients.  See docs/discovery.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import CommandFiles, add_level_argument, add_output_argument, add_params_argument, integer, load_params

if TYPE_CHECKING:
    from ..discovery.spec import DiscoverySpec

NAME = "discover"
HELP = "find frequent strings outside any candidate list (discovery counts -> found.csv)"
ORDER = 55


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-length``, ``--segment``, ``--alphabet`` (the discovery layout)."""
    from ..discovery.spec import ALPHABETS

    parser.add_argument("--max-length", type=integer(1), default=30, metavar="BYTES",
                        help="longest discoverable value, in UTF-8 bytes [default: 30]")
    parser.add_argument("--segment", type=integer(1), default=2, choices=(1, 2, 3),
                        help="bytes added per slot [default: 2]")
    parser.add_argument("--alphabet", default="bytes", choices=sorted(ALPHABETS), metavar="NAME",
                        help=f"bytes tried when extending a prefix: {', '.join(sorted(ALPHABETS))} (bytes: all 256) "
                             "[default: bytes]")


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_argument(parser)
    parser.add_argument("--counts", required=True, metavar="PATH",
                        help="discovery counts (sum-bits of the discovery reports, slots x cohorts rows)")
    add_spec_arguments(parser)
    add_output_argument(parser, help_text="found values CSV")
    parser.add_argument("--list", metavar="PATH", help="also write the significant values one per line "
                        "(a candidate list for 'rappor decode --candidates') [default: none]")
    add_level_argument(parser, help_text="family-wise level of the 'significant' column (Bonferroni)")
    parser.add_argument("--beam", type=integer(1), default=1000, metavar="B",
                        help="most prefixes kept per slot [default: 1000]")
    parser.add_argument("--summary", metavar="PATH",
                        help="also write a JSON summary (per-slot diagnostics) [default: none]")


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` and ``--counts`` in; ``-o``, ``--list`` and ``--summary`` out."""
    outputs = [("-o", args.output)]
    outputs += [(option, path) for option, path in (("--list", args.list), ("--summary", args.summary)) if path]
    return CommandFiles(inputs=[("--params", args.params), ("--counts", args.counts)], outputs=outputs)


def spec_from_args(args: argparse.Namespace) -> DiscoverySpec:
    """The :class:`DiscoverySpec` of ``--params``, ``--max-length``, ``--segment``, ``--alphabet``."""
    from ..discovery.spec import DiscoverySpec

    return DiscoverySpec(params=load_params(args), max_length=args.max_length, segment=args.segment,
                         alphabet=args.alphabet)


def run(args: argparse.Namespace) -> int:
    from .._io import atomic_output
    from ..aggregate import read_counts
    from ..discovery import discover

    spec = spec_from_args(args)
    aggregate = read_counts(args.counts, spec.wire_params)
    result = discover(aggregate, spec, beam=args.beam, significance_level=args.level)
    listed = [s for s in result.candidates() if s.strip() and "\n" not in s and "\r" not in s]
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
    return 0


class _nothing:
    """A context manager yielding None (an output that was not asked for)."""

    def __enter__(self) -> Any:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
