"""Privacy of a RAPPOR configuration: pure epsilon of one report and of the permanent
response (RAPPOR Theorems 1-2), tight zCDP, and (epsilon, delta) for T reports of
changing values by basic and advanced composition, zCDP and the optimal RDP conversion.

Example:
    rappor privacy --params params.csv --reports 30 --delta 1e-6

Reports of an unchanged value cost at most epsilon_inf, however many there are.
See docs/privacy.md for the unit of privacy and the sources of every formula.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ._common import CommandFiles, add_output_argument, add_params_argument, count, delta, json_text, load_params

NAME = "privacy"
HELP = "privacy figures of a params.csv (epsilon, zCDP, (epsilon, delta) for T reports)"
ORDER = 15


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_argument(parser)
    parser.add_argument("--reports", type=count, default=1, metavar="T",
                        help="number of reports of changing values to account for [default: 1]")
    parser.add_argument("--delta", type=delta, default=1e-6, metavar="D",
                        help="delta of the (epsilon, delta) figures [default: 1e-6]")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.add_argument("--variables", metavar="KINDS", default=None,
                        help="a client reports several variables (rappor decode-assoc): their kinds, e.g. "
                             "'string,boolean'; adds each variable's epsilons and their sum (epsilons add) [default: none]")
    parser.add_argument("--discovery-params", metavar="PATH", default=None,
                        help="also account for discovery reports with these parameters (one slot; see "
                             "'rappor discover'): the per-client epsilons of the two collections together [default: none]")
    parser.add_argument("--split", choices=("clients", "budget"), default="clients",
                        help="with --discovery-params: clients (each client sends one of the two reports: "
                             "the larger epsilon) or budget (both: the sum) [default: clients]")
    add_output_argument(parser)


def files(args: argparse.Namespace) -> CommandFiles:
    """``--params`` (and ``--discovery-params``) in; ``-o`` out."""
    inputs = [("--params", args.params)]
    if args.discovery_params is not None:
        inputs.append(("--discovery-params", args.discovery_params))
    return CommandFiles(inputs=inputs, outputs=[("-o", args.output)])


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


def run(args: argparse.Namespace) -> int:
    from .._util.outputs import atomic_output
    from ..privacy import loss

    params = load_params(args)
    result = loss(params, reports=args.reports, delta=args.delta)
    several = _several_variables(params, args.variables)
    combined = None
    if args.discovery_params is not None:
        from ..analysis.discovery import discovery_privacy
        from ..formats import read_discovery_params

        combined = discovery_privacy(params, read_discovery_params(args.discovery_params)[0], split=args.split)
    with atomic_output(args.output) as out:
        if args.json:
            data = {key: (_json_number(v) if isinstance(v, float) else v) for key, v in result.as_dict().items()}
            data["params"] = params.as_dict()
            if several is not None:
                data["variables"] = several
            if combined is not None:
                data["discovery"] = {key: (_json_number(v) if isinstance(v, float) else v)
                                     for key, v in combined.as_dict().items()}
            out.write(json_text(data))
        else:
            rows = [*result.table(), *([] if combined is None else combined.table())]
            width = max(len(name) for name, _, _ in rows)
            out.write(f"# k={params.k} h={params.h} m={params.m} p={params.p:g} q={params.q:g} f={params.f:g}\n")
            for name, text, value in rows:
                out.write(f"{name:<{width}}  {value:>12.6g}  {text}\n")
            if several is not None:
                out.write("# several variables per client (one report each; epsilons add by composition)\n")
                for i, (kind, e1, einf) in enumerate(zip(several["kinds"], several["epsilon_one"],
                                                         several["epsilon_inf"]), 1):
                    out.write(f"variable {i} ({kind}): epsilon_one {e1:.6g}, epsilon_inf {einf:.6g}\n")
                out.write(f"all variables: epsilon_one {several['total_epsilon_one']:.6g}, "
                          f"epsilon_inf {several['total_epsilon_inf']:.6g}\n")
    return 0


def _several_variables(params: object, kinds: str | None) -> dict[str, Any] | None:
    """Per-variable and total epsilons of a multi-variable report (rappor.analysis.association)."""
    if kinds is None:
        return None
    from ..analysis.association import multi_variable_privacy
    from ..exceptions import InvalidParameterError

    names = [k.strip() for k in kinds.split(",")]
    if not names or any(k not in ("string", "boolean") for k in names):
        raise InvalidParameterError(f"--variables must list 'string' or 'boolean' kinds, e.g. 'string,boolean'. "
                                    f"Got {kinds!r}.")
    cost = multi_variable_privacy(params, names)  # type: ignore[arg-type]
    return {"kinds": names, "epsilon_one": [_json_number(v) for v in cost.epsilon_one],
            "epsilon_inf": [_json_number(v) for v in cost.epsilon_inf],
            "total_epsilon_one": _json_number(cost.total_epsilon_one),
            "total_epsilon_inf": _json_number(cost.total_epsilon_inf)}
