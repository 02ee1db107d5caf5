"""Privacy of a RAPPOR configuration: pure epsilon of one report and of the permanent
response (RAPPOR Theorems 1-2), tight zCDP, and (epsilon, delta) for T reports of
changing values by basic and advanced composition, zCDP and the optimal RDP conversion.

Reports of an unchanged value cost at most epsilon_inf, however many there are.
See docs/privacy.md for the unit of privacy and the sources of every formula.
"""

from __future__ import annotations

import argparse
import json
import math

from ._common import CommandFiles, add_output_argument, add_params_argument, integer, load_params, open_unit

NAME = "privacy"
HELP = "privacy figures of a params.csv (epsilon, zCDP, (epsilon, delta) for T reports)"
ORDER = 15


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_argument(parser)
    parser.add_argument("--reports", type=integer(1), default=1, metavar="T",
                        help="number of reports of changing values to account for [default: 1]")
    parser.add_argument("--delta", type=open_unit, default=1e-6, metavar="D",
                        help="delta of the (epsilon, delta) figures [default: 1e-6]")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.add_argument("--discovery-params", metavar="PATH", default=None,
                        help="also account for discovery reports with these parameters (one slot; see "
                             "'rappor discover'): the per-client epsilons of the two collections together [default: none]")
    parser.add_argument("--split", choices=("clients", "budget"), default="clients",
                        help="with --discovery-params: clients (each client sends one of the two reports: "
                             "the larger epsilon) or budget (both: the sum) [default: clients]")
    add_output_argument(parser)


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` in; ``-o`` out."""
    return CommandFiles(inputs=[("--params", args.params)], outputs=[("-o", args.output)])


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


def run(args: argparse.Namespace) -> int:
    from .._io import atomic_output
    from ..privacy import loss

    params = load_params(args)
    result = loss(params, reports=args.reports, delta=args.delta)
    combined = None
    if args.discovery_params is not None:
        from ..discovery.privacy import discovery_privacy
        from ..params import read_params

        combined = discovery_privacy(params, read_params(args.discovery_params), split=args.split)
    with atomic_output(args.output) as out:
        if args.json:
            data = {key: (_json_number(v) if isinstance(v, float) else v) for key, v in result.as_dict().items()}
            data["params"] = params.as_dict()
            if combined is not None:
                data["discovery"] = {key: (_json_number(v) if isinstance(v, float) else v)
                                     for key, v in combined.as_dict().items()}
            out.write(json.dumps(data, indent=2) + "\n")
        else:
            rows = result.table() + ([] if combined is None else combined.table())
            width = max(len(name) for name, _, _ in rows)
            out.write(f"# k={params.k} h={params.h} m={params.m} p={params.p:g} q={params.q:g} f={params.f:g}\n")
            for name, text, value in rows:
                out.write(f"{name:<{width}}  {value:>12.6g}  {text}\n")
    return 0
