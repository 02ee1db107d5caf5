"""``rappor decode --discover``: discover, then decode against the list and the values found, in one command."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from typing import IO, TYPE_CHECKING, ContextManager

if TYPE_CHECKING:
    from ..analysis.decoder import DecodeResult
    from ..collect._design import CandidateMap
    from ..analysis.discovery._search import DiscoveryResult
    from ..params import Params


def configure(parser: argparse.ArgumentParser) -> None:
    """The options ``rappor decode`` gains for ``--discover``."""
    from ._discover import add_search_arguments, add_spec_arguments

    group = parser.add_argument_group("discovery (with --discover; see 'rappor discover')")
    group.add_argument("--discover", metavar="PATH", default=None,
                       help="discovery counts (sum-bits of the discovery reports): find the frequent values they "
                            "hold and decode them with the candidates (--map or --candidates, optional with "
                            "--discover); or the found.csv of 'rappor discover': decode its significant values "
                            "(every value a client can send survives there, line breaks and commas included) "
                            "[default: none]")
    group.add_argument("--discovery-params", metavar="PATH", default=None,
                       help="parameters of one discovery slot (required with --discover counts) [default: none]")
    group.add_argument("--found", metavar="PATH", default=None,
                       help="also write the discovered values CSV (as 'rappor discover -o') [default: none]")
    add_spec_arguments(group)  # type: ignore[arg-type]
    add_search_arguments(group)  # type: ignore[arg-type]


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
        for option, value in (("--discovery-params", args.discovery_params), ("--found", args.found)):
            if value is not None:
                raise InvalidParameterError(f"{option} does not go with --discover {args.discover} (a found.csv: "
                                            "the search has run).")
    elif args.discovery_params is None:
        raise InvalidParameterError("--discover needs --discovery-params (the parameters of one discovery slot) "
                                    "when it names discovery counts (a found.csv needs none).")


def _reads_found(args: argparse.Namespace) -> bool:
    """Whether ``--discover`` names a found.csv (values found) rather than discovery counts."""
    from ..formats._found import is_found_file

    return bool(args.discover is not None and is_found_file(args.discover))


def add_discovered(args: argparse.Namespace, params: Params, cmap: CandidateMap | None,
                   ) -> tuple[CandidateMap, DiscoveryResult | None]:
    """Append the significant discovered values not in ``cmap`` to it.

    ``--discover`` names discovery counts (the search runs here) or a found.csv (its
    significant values are read).  Returns the candidate map to decode and the search's
    result, None for a found.csv (the caller writes ``--found`` with its other outputs,
    so that they appear together or not at all).
    """
    from scipy import sparse

    from ..collect._design import CandidateMap, hash_candidates
    from ..exceptions import InvalidParameterError

    if _reads_found(args):
        from ..formats._found import read_found

        result = None
        significant = [s for s, keep in read_found(args.discover) if keep]
    else:
        from ..analysis.discovery import DiscoverySpec
        from ..formats._params import read_params
        from ._discover import discovery_aggregate, run_search

        spec = DiscoverySpec(params=read_params(args.discovery_params), max_length=args.max_length,
                             segment=args.segment, alphabet=args.alphabet, slot_weights=args.slot_weights)
        result = run_search(args, spec, discovery_aggregate(spec, args.discover, None))
        significant = result.candidates()
    known = set(cmap.strings) if cmap is not None else set()
    new = [s for s in dict.fromkeys(significant) if s not in known]
    sys.stderr.write(f"rappor: discovery found {len(significant)} significant values, "
                     f"{len(new)} not among the candidates\n")
    if cmap is None:
        if not new:
            raise InvalidParameterError("--discover found no significant value and no --map or --candidates "
                                        "was given: nothing to decode.")
        return hash_candidates(new, params), result
    if not new:
        return cmap, result
    extra = hash_candidates(new, params)
    return CandidateMap(params=params, strings=cmap.strings + extra.strings,
                        matrix=sparse.hstack([cmap.matrix, extra.matrix], format="csc")), result


def found_output(args: argparse.Namespace, result: DiscoveryResult | None) -> ContextManager[IO[str] | None]:
    """``--found`` opened for writing (atomically), or a context yielding None."""
    from .._util.io import atomic_output

    if result is None or args.found is None:
        return contextlib.nullcontext()
    return atomic_output(args.found)


def detection_floor(result: DiscoveryResult) -> float:
    """Smallest share of the discovery reports a value confirmed by the last slot alone can have.

    ``z_significant`` (the Bonferroni cutoff as a normal quantile) times the null standard
    error of the confirmation slot's share: values rarer than this stay in the unexplained
    mass.  NaN when the search recorded no slot.
    """
    slots = [s for s in result.diagnostics.get("slots", []) if "null_std_error" in s]
    if not slots:
        return math.nan
    return float(result.diagnostics["z_significant"]) * float(slots[-1]["null_std_error"])


def unexplained_report(with_discovery: DecodeResult, without: DecodeResult | None,
                       found: DiscoveryResult | None) -> str:
    """The line ``decode --discover`` prints: unexplained mass with (and without) the discovered values."""
    d = with_discovery.diagnostics
    text = f"rappor: unexplained mass {d.unexplained_mass:.4f} (SE {d.unexplained_std_error:.4f}) with the discovered values"
    if without is not None:
        w = without.diagnostics
        text += f", {w.unexplained_mass:.4f} (SE {w.unexplained_std_error:.4f}) with the candidates alone"
    floor = detection_floor(found) if found is not None else math.nan
    if math.isfinite(floor):
        text += (f"; discovery confirms values above about {floor:.2%} of the discovery reports, "
                 "rarer ones stay unexplained")
    return text + "\n"
