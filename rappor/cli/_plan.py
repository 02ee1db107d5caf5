"""Propose RAPPOR parameters (k, h, m, p, q, f) that meet privacy targets for N reports and
S candidate strings, and predict the smallest candidate frequency that will be detected.
Without --epsilon-one the target for one report is epsilon_inf / 4; --no-irr drops the
instantaneous noise altogether (reports become linkable; not recommended).

Example:
    rappor plan --reports 1000000 --candidates 10000 --epsilon-inf 4

The prediction is the generalized least squares z-statistic of a candidate's frequency
given the Bloom design (the m*h bits that carry each string, and their collisions with
the other candidates), Bonferroni-corrected over the candidates.  Each design is printed
with 'reference', the RAPPOR paper's one-bit formula z(1 - level) sd / N (which ignores
the bits that carry a string, their collisions and the number of candidates), and
'inflation', the variance inflation from Bloom collisions (1 = none).  When the smallest detectable share is
large (0.05 or more: high privacy or few reports) a note says what that means: at most
1/share strings can be that frequent, or none at all above 1, and how many reports would
bring it down.  The output ends with a legend.  See rappor.privacy._planner and rappor.privacy._detection.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from typing import Any

from ..exceptions import InvalidParameterError
from . import _discover_plan
from ._common import (CommandFiles, add_level_argument, add_output_argument, add_seed_argument, count, flags,
                      integer, json_text, real)

NAME = "plan"
HELP = "propose parameters for privacy targets and predict the detectable frequency"
ORDER = 16


#: The help's usage line: the forms a user types (every option is listed below it).
USAGE = ("%(prog)s --reports N --candidates S [--epsilon-inf E] [OPTIONS]\n"
         "       %(prog)s ... --discovery-share S [--discovery-params-out PATH]")

def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reports", type=count, required=True, metavar="N", help="number of reports expected")
    parser.add_argument("--candidates", type=count, required=True, metavar="S",
                        help="number of candidate strings")
    parser.add_argument("--epsilon-inf", type=real(0.0, low_open=True), default=4.0, metavar="E",
                        help="target epsilon of the permanent response [default: 4.0]")
    irr = parser.add_mutually_exclusive_group()
    irr.add_argument("--epsilon-one", type=real(0.0, low_open=True), default=None, metavar="E1",
                     help="target epsilon of one report, below --epsilon-inf [default: epsilon_inf / 4, the "
                          "ratio of google/rappor's demo parameters h=2 f=0.5 p=0.5 q=0.75 (4.39 / 1.07)]")
    irr.add_argument("--no-irr", action="store_true",
                     help="no instantaneous noise (p=0, q=1): every report reveals the permanent response, so "
                          "one client's reports can be linked over time; not recommended")
    add_level_argument(parser, help_text="significance level of the detection test, Bonferroni over the candidates")
    parser.add_argument("--top", type=integer(0), default=5, metavar="K",
                        help="also list the next K designs [default: 5]")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--params-out", metavar="PATH", default=None,
                        help="also write the recommended parameters as a params.csv [default: none]")
    add_seed_argument(parser, default=0, help_text="seed of the random Bloom designs behind 'inflation'")
    add_output_argument(parser)
    _discover_plan.configure(parser)


def files(args: argparse.Namespace) -> CommandFiles:
    """No input; ``-o`` and ``--params-out`` out."""
    outputs = [("-o", args.output)]
    if args.params_out:
        outputs.append(("--params-out", args.params_out))
    for option, path in (("--discovery-params-out", args.discovery_params_out),
                         ("--discovery-wire-params-out", args.discovery_wire_params_out)):
        if path:
            outputs.append((option, path))
    return CommandFiles(outputs=outputs)


def _fmt(row: dict[str, Any]) -> str:
    return (f"k={row['k']:<4} h={row['h']} m={row['m']:<4} p={row['p']:.4f} q={row['q']:.4f} f={row['f']:.4f}  "
            f"eps1={row['epsilon_one']:.3f} eps_inf={row['epsilon_inf']:.3f}  "
            f"detect>={row['detection_frequency']:.4g} (reference {row['reference_detection_frequency']:.4g}, "
            f"inflation {row['inflation']:.3f})")


#: What the columns of the text output mean (printed under the table).
LEGEND = """\
# recommended: the smallest design (k, then m, then h) whose detect>= is within 5% of the best.
# detect>=   smallest share of reports detected with probability 1/2: the generalized least
#            squares z-test of a share given the Bloom design, Bonferroni over the S candidates
# reference  the RAPPOR paper's one-bit formula z(1 - level) sd / N (Sec. 4; sd of one bit's
#            count): it ignores the m*h bits carrying a string, their collisions and S; for comparison
# inflation  variance inflation from Bloom collisions with the other candidates, m h [(X'X)^-1]_jj
#            on random designs (1 = no collision); detect>= grows with its square root
"""


def run(args: argparse.Namespace) -> int:
    from ..report import detectable_share_note
    from .._util.outputs import atomic_output, outputs_together
    from ..formats import write_discovery_params, write_params
    from ..privacy import plan

    epsilon_one = math.inf if args.no_irr else args.epsilon_one
    if not args.no_irr and epsilon_one is not None and epsilon_one >= args.epsilon_inf:
        msg = (f"--epsilon-one {epsilon_one:g} must be below --epsilon-inf {args.epsilon_inf:g} (one report reveals "
               "at most the permanent response); --no-irr asks for no instantaneous noise at all")
        raise InvalidParameterError(msg)
    _discover_plan.check(args)
    options = {"epsilon_inf": args.epsilon_inf, "epsilon_one": epsilon_one, "significance_level": args.level,
               "rng": args.seed}
    discovery = None
    with flags({"epsilon_inf": "--epsilon-inf", "epsilon_one": "--epsilon-one", "n_reports": "--reports",
                "n_candidates": "--candidates", "discovery_share": "--discovery-share"}):
        if args.discovery_share is None:
            result = plan(args.reports, args.candidates, **options)
        else:
            from ..analysis.discovery import plan_with_discovery

            result, discovery = plan_with_discovery(args.reports, args.candidates,
                                                    discovery_share=args.discovery_share,
                                                    discovery_irr=args.discovery_irr,
                                                    discovery_max_length=args.discovery_max_length,
                                                    discovery_lengths=_discover_plan.length_prior(args),
                                                    discovery_values=_discover_plan.found_values(args), **options)
    best = result.best.as_dict()
    others = [p.as_dict() for p in result.plans if p is not result.best][:args.top]
    # The parameter files first, the plan last, as one set: a bad path for any of them fails
    # before the plan is printed, and leaves none of the files.
    with outputs_together():
        if args.params_out:
            write_params(result.best.params, args.params_out)
        if discovery is not None and args.discovery_params_out:
            write_discovery_params(discovery.spec, args.discovery_params_out)
        if discovery is not None and args.discovery_wire_params_out:
            write_params(discovery.spec.wire_params, args.discovery_wire_params_out)
        with atomic_output(args.output) as out:
            if args.json:
                clean = {key: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for key, v in best.items()}
                data = {"recommended": clean, "alternatives": others, "n_reports": result.n_reports,
                        "n_candidates": result.n_candidates}
                if discovery is not None:
                    data["discovery"] = _discover_plan.as_json(discovery)
                out.write(json_text(data))
            else:
                out.write(f"# {result.n_reports} reports, {result.n_candidates} candidates, level={args.level:g}\n")
                out.write("recommended: " + _fmt(best) + "\n")
                note = detectable_share_note(result.best.prediction.frequency, result.n_reports, result.best.params)
                if note is not None:  # high privacy or few reports: say what that share means
                    out.write(textwrap.fill(note, width=100, initial_indent="# note: ", subsequent_indent="#       ") + "\n")
                if others:
                    out.write(f"next {len(others)} designs:\n")
                for row in others:
                    out.write("  " + _fmt(row) + "\n")
                if discovery is not None:
                    _discover_plan.write_text(out, discovery)
                out.write(LEGEND)
    return 0
