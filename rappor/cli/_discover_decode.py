"""``rappor decode --discover``: discover, then decode against the list and the values found, in one command."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from typing import IO, TYPE_CHECKING, ContextManager

if TYPE_CHECKING:
    from ..analysis.decoder import Decoder
    from ..analysis.discovery import DiscoverDecode, DiscoveryResult
    from ..collect import Aggregate, CandidateMap


def configure(parser: argparse.ArgumentParser) -> None:
    """The options ``rappor decode`` gains for ``--discover``."""
    from ._discover import add_search_arguments, add_spec_arguments

    group = parser.add_argument_group("discovery (with --discover; see 'rappor discover')")
    group.add_argument("--discover", metavar="PATH", default=None,
                       help="discovery counts (sum-bits of the discovery reports): find the frequent values they "
                            "hold and decode them with the candidates (--map or --candidates, optional with "
                            "--discover; they also serve the search as known values of its prior, as 'rappor "
                            "discover --prior-values' does: run 'rappor discover' without it to search from the "
                            "bytes alone); a found.csv of 'rappor discover' goes to --candidates [default: none]")
    group.add_argument("--discovery-params", metavar="PATH", default=None,
                       help="parameters of one discovery slot (required with --discover) [default: none]")
    group.add_argument("--found", metavar="PATH", default=None,
                       help="also write the discovered values CSV (as 'rappor discover -o') [default: none]")
    add_spec_arguments(group)  # type: ignore[arg-type]
    add_search_arguments(group, quiet=False)  # type: ignore[arg-type]  # decode has --quiet


def files(args: argparse.Namespace) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The inputs and outputs ``--discover`` adds."""
    if args.discover is None:
        return [], []
    inputs = [("--discover", args.discover)]
    if args.discovery_params is not None:
        inputs.append(("--discovery-params", args.discovery_params))
    return inputs, ([("--found", args.found)] if args.found is not None else [])


def check(args: argparse.Namespace) -> None:
    """Refuse option sets that cannot run (before any file is read)."""
    from ..exceptions import InvalidParameterError

    if args.discover is None:
        for option, value in (("--discovery-params", args.discovery_params), ("--found", args.found)):
            if value is not None:
                raise InvalidParameterError(f"{option} needs --discover.")
        if args.map is None and args.candidates is None:
            raise InvalidParameterError("one of --map, --candidates or --discover is required.")
    elif _reads_found(args):
        raise InvalidParameterError(f"--discover {args.discover} is a found.csv (the search has run): give it to "
                                    "--candidates, which decodes its significant values.")
    elif args.discovery_params is None:
        raise InvalidParameterError("--discover needs --discovery-params (the parameters of one discovery slot).")


def _reads_found(args: argparse.Namespace) -> bool:
    """Whether ``--discover`` names a found.csv (values found) rather than discovery counts."""
    from ..formats import is_found_file

    return bool(args.discover is not None and is_found_file(args.discover))


def discover_and_decode(args: argparse.Namespace, aggregate: Aggregate, cmap: CandidateMap | None,
                        decoder: Decoder) -> DiscoverDecode:
    """Read ``--discover`` and ``--discovery-params``, run the library's discover-then-decode, say what it found."""
    from ..analysis.discovery import discover_and_decode as run
    from .._util.progress import progress
    from ._discover import discovery_aggregate, left_out_note, read_layout_spec

    spec = read_layout_spec(args, args.discovery_params, "--discovery-params", args.alphabet)
    with progress(spec.levels, desc="discover", unit="slot", quiet=args.quiet) as update:
        combined = run(aggregate, cmap, discovery_aggregate(spec, args.discover, None), spec, decoder=decoder,
                       beam=args.beam, significance_level=args.level, max_false=args.max_false, progress=update)
    sys.stderr.write(left_out_note(combined.found))
    if not args.quiet:
        sys.stderr.write(f"rappor: discovery found {int(combined.found.significant.sum())} significant values, "
                         f"{len(combined.new_strings)} not among the candidates\n")
    return combined


def found_output(args: argparse.Namespace, result: DiscoveryResult | None) -> ContextManager[IO[str] | None]:
    """``--found`` opened for writing (atomically), or a context yielding None."""
    from .._util.outputs import atomic_output

    if result is None or args.found is None:
        return contextlib.nullcontext()
    return atomic_output(args.found)


def unexplained_report(combined: DiscoverDecode) -> str:
    """The line ``decode --discover`` prints: unexplained mass with (and without) the discovered values."""
    without = combined.without
    d = combined.result.diagnostics
    text = f"rappor: unexplained mass {d.unexplained_mass:.4f} (SE {d.unexplained_std_error:.4f}) with the discovered values"
    if without is not None:
        w = without.diagnostics
        text += f", {w.unexplained_mass:.4f} (SE {w.unexplained_std_error:.4f}) with the candidates alone"
    floor = combined.detection_floor
    if math.isfinite(floor):
        text += (f"; discovery confirms values above about {floor:.2%} of the discovery reports, "
                 "rarer ones stay unexplained")
    if d.unexplained_std_error > 0.25:  # found by a tester: "0.0000 (SE 0.3751)" with about 0.76 outside
        text += ("; with a standard error this large the unexplained mass says nothing (too few full-string "
                 "reports a cohort: the parameters should come from rappor plan --reports with the real number "
                 "of clients)")
    return text + "\n"
