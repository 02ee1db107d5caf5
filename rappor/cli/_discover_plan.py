"""``rappor plan --discovery-share S``: the discovery reports beside the planned design, and each client's privacy."""

from __future__ import annotations

import argparse
import textwrap
from typing import IO, TYPE_CHECKING, Any

from ._common import integer, real

if TYPE_CHECKING:
    from ..analysis.discovery import DiscoveryPlan


def configure(parser: argparse.ArgumentParser) -> None:
    """The options ``rappor plan`` gains for discovery."""
    group = parser.add_argument_group("discovery (see 'rappor discover')")
    group.add_argument("--discovery-share", type=real(0.0, 1.0, low_open=True, high_open=True), default=None,
                       metavar="S",
                       help="a share S of the clients sends a discovery report instead of a full-string one: "
                            "--reports counts clients, the design is planned for the (1 - S) N full-string "
                            "reports, and the discovery parameters, each client's epsilons and the smallest "
                            "share found are printed [default: no discovery; 0.75 is the measured choice]")
    group.add_argument("--discovery-max-length", type=integer(1), default=30, metavar="BYTES",
                       help="longest value discovery can find, in UTF-8 bytes (--max-length of encode and discover) "
                            "[default: 30]")
    group.add_argument("--discovery-lengths", metavar="A-B|FOUND.CSV", default=None,
                       help="lengths of the values to find: a range A-B of bytes (alike), or the found.csv of an "
                            "earlier collection (its significant values' lengths, weighted by their shares, and the "
                            "prefixes they share); the plan then weights the slots for them (--slot-weights of "
                            "encode and discover) "
                            "[default: none, every slot alike]")
    group.add_argument("--discovery-irr", action="store_true",
                       help="give the discovery reports the instantaneous noise of the full-string design (its "
                            "epsilon_one) instead of none; finds far less (the output says how much) "
                            "[default: no instantaneous noise on discovery reports]")
    group.add_argument("--discovery-params-out", metavar="PATH", default=None,
                       help="also write the discovery parameters of one slot (for 'rappor encode "
                            "--discovery-params', 'rappor discover --params') as a params.csv [default: none]")
    group.add_argument("--discovery-wire-params-out", metavar="PATH", default=None,
                       help="also write the parameters of the discovery report files (cohorts = slots x cohorts "
                            "per slot; for 'rappor sum-bits --params') as a params.csv [default: none]")


def check(args: argparse.Namespace) -> None:
    from ..exceptions import InvalidParameterError

    for option, value in (("--discovery-params-out", args.discovery_params_out),
                          ("--discovery-wire-params-out", args.discovery_wire_params_out)):
        if value is not None and args.discovery_share is None:
            raise InvalidParameterError(f"{option} needs --discovery-share.")


def found_values(args: argparse.Namespace) -> dict[str, float] | None:
    """``--discovery-lengths FOUND.CSV``: its significant values and shares (for the shared-prefix credit)."""
    import re

    text = args.discovery_lengths
    if text is None or re.fullmatch(r"(\d+)-(\d+)", text.strip()):
        return None
    from ..formats import read_found_rows

    out: dict[str, float] = {}
    for row in read_found_rows(text):
        if row.significant and row.text is not None and row.proportion > 0:  # the credit reads text
            out[row.text] = out.get(row.text, 0.0) + row.proportion
    return out


def length_prior(args: argparse.Namespace) -> dict[int, float] | None:
    """``--discovery-lengths``: ``A-B`` or a found.csv -> {length: weight} (None without it)."""
    import re

    from ..exceptions import InvalidParameterError

    text, longest = args.discovery_lengths, args.discovery_max_length
    if text is None:
        return None
    match = re.fullmatch(r"(\d+)-(\d+)", text.strip())
    if match:
        low, high = int(match.group(1)), int(match.group(2))
        if not 1 <= low <= high <= longest:
            raise InvalidParameterError(f"--discovery-lengths {text}: expected A-B with 1 <= A <= B <= "
                                        f"--discovery-max-length ({longest}).")
        return {length: 1.0 for length in range(low, high + 1)}
    from ..formats import read_found_rows

    prior: dict[int, float] = {}
    for row in read_found_rows(text):
        size = len(row.value)  # the clients' bytes, whether or not they are text
        if row.significant and 1 <= size <= longest and row.proportion > 0:
            prior[size] = prior.get(size, 0.0) + row.proportion
    if not prior:
        raise InvalidParameterError(f"--discovery-lengths {text}: no significant value of 1 to {longest} "
                                    "bytes with a positive share.")
    return prior


def write_text(out: IO[str], result: DiscoveryPlan) -> None:
    p = result.spec.params
    priv = result.privacy
    out.write(f"discovery: {result.n_discovery_reports} of {result.n_clients} clients send a discovery report "
              f"(share {result.discovery_share:g}), {result.n_full_reports} a full-string one\n")
    out.write(f"  discovery params (one slot): k={p.num_bloombits} h={p.num_hashes} m={p.num_cohorts} "
              f"p={p.prob_p:.4f} q={p.prob_q:.4f} f={p.prob_f:.4f}; max_length={result.spec.max_length} "
              f"segment={result.spec.segment} alphabet={result.spec.as_dict()['alphabet']}: {result.spec.levels} slots\n")
    if result.spec.slot_weights is not None:
        out.write(f"  slot weights for these lengths (give encode and discover the same): --max-length "
                  f"{result.spec.max_length} --slot-weights {','.join(map(str, result.spec.slot_weights))}\n")
    out.write(f"  per client (one report each): eps_inf={priv.epsilon_inf:.3f} eps1={priv.epsilon_one:.3f} "
              f"(full-string {priv.epsilon_inf_full:.3f}/{priv.epsilon_one_full:.3f}, discovery "
              f"{priv.epsilon_inf_discovery:.3f}/{priv.epsilon_one_discovery:.3f})\n")
    found = ", ".join(f"{length} bytes >= {share:.4g}" for length, share in result.found_frequency.items())
    out.write(f"  found with probability 1/2 (share of clients): {found}\n")
    th = result.thresholds
    rules = (f"(the search's rules: z >= {th['z_extend']:.2f} per prefix slot, or {th['z_reserve']:.2f} in one, "
             f"{th['z_pending']:.2f} at the value's end, {th['z_confirm']:.1f} where it is confirmed; from slot 1 "
             f"on, levels spread by the byte prior learnt from earlier slots: {th['z_extend_prior']:.2f}, "
             f"{th['z_reserve_prior']:.2f} and {th['z_pending_prior'] + 0.0:.2f} for values of per-byte perplexity "
             f"{th['perplexity']:g} under it (text, host names); docs/discovery.md section 4 compares these shares "
             "with the benchmark's)")
    out.write(textwrap.fill(rules, width=100, initial_indent="    ", subsequent_indent="    ") + "\n")
    other = ", ".join(f"{length} bytes >= {share:.4g}" for length, share in result.found_frequency_other.items())
    if not result.irr:
        note = (f"no instantaneous noise on discovery reports (p=0, q=1): a discovery report reveals its permanent "
                f"response (its eps1 is eps_inf, {p.epsilon_inf:.3f}), and a client's discovery reports of one value "
                f"in several collections are identical, so they can be linked over time; what they reveal of the "
                f"value stays bounded by eps_inf (the permanent response is memoized)")
        out.write(textwrap.fill(note, width=100, initial_indent="  ", subsequent_indent="    ") + "\n")
        if other:
            out.write(f"  with the full-string eps1 on them (--discovery-irr): found with probability 1/2: {other}\n")
    else:
        out.write(f"  without instantaneous noise on discovery reports (the default): found with probability 1/2: "
                  f"{other}\n")


def as_json(result: DiscoveryPlan) -> dict[str, Any]:
    return result.as_dict()
