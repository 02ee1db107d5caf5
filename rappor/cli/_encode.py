"""Encode client values into RAPPOR reports.

Example:
    rappor encode --params params.csv --key-file client.key values.csv \\
        -o reports.csv

INPUT is a CSV file with the header 'client,value', one row per report (a client
may appear several times).  Fields are used exactly as written (a space after a
comma is part of the value); quote fields that contain commas, quotes or newlines.

Each client's secret is derived from the key file and the client id (HMAC-SHA256,
see docs/client.md), so re-running the command gives every client the same cohort
and the same permanent randomized responses; only the instantaneous responses are
fresh.  The output CSV has the header 'client,cohort,irr', with 'irr' a
google/rappor bit string (character 0 = bit k-1).

With '--on-error skip' bad data rows are left out and written, with their line
numbers and reasons, to a rejects file (see docs/reliability.md).

Several variables per client (for 'rappor decode-assoc'): with the header
'client,NAME1,NAME2,...' each row is one client's values; the output is
'client,cohort,NAME1,NAME2,...' with one bit string per variable, each with its own
permanent response.  '--bool NAME' marks a boolean column (1/0/true/false, one bit).
Reading, --jobs, --on-error skip and the atomic output are those of one variable.
See docs/association.md.

Discovery reports (docs/discovery.md): with '--discovery-params PATH' (the parameters
of one discovery slot, as 'rappor plan --discovery-params-out' writes them) and no
--params, every row gives a discovery report of its value, with the wire cohort 'slot x
cohorts per slot + cohort' (sum them with 'rappor sum-bits --params <wire params>').
With both --params and --discovery-params, each client sends one kind of report, chosen
by its secret: a share --discovery-share of the clients a discovery report (to
--discovery-output), the others their full-string report (to -o).  --max-length,
--segment and --slot-weights must be those 'rappor discover' is given.

Create a key with 'rappor keygen -o KEY'.
"""

from __future__ import annotations

import argparse
import csv
import sys
import warnings
from typing import TYPE_CHECKING, Any

from .._util.outputs import atomic_output
from .._util.paths import display_name, STDIO
from .._util.rejects import RejectsWriter, resolve_rejects_path
from ..exceptions import InsecureRandomnessWarning
from ..engines import default_jobs, encode_discovery_file, encode_file, encode_variables_file
from ._discover import add_layout_arguments
from .._util.progress import progress
from ._common import (CommandFiles, add_on_error_arguments, add_output_argument, add_params_argument,
                      add_quiet_argument, integer, load_params, real)

if TYPE_CHECKING:
    from ..analysis.discovery import DiscoverySpec
    from ..params import Params

NAME = "encode"
HELP = "encode client values into reports (client,value -> client,cohort,irr)"
ORDER = 20


#: The help's usage line: the forms a user types (every option is listed below it).
USAGE = ("%(prog)s --params PATH --key-file KEY [-o PATH] [OPTIONS] [INPUT]\n"
         "       %(prog)s --discovery-params PATH --key-file KEY [OPTIONS] [INPUT]")

def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor encode``."""
    parser.add_argument("input", nargs="?", default="-", metavar="INPUT",
                        help="CSV with header 'client,value' ('-' for stdin) [default: stdin]")
    add_params_argument(parser, required=False, default="none: --discovery-params then required")
    parser.add_argument("--key-file", required=True, metavar="KEY",
                        help="key file (hex text from 'rappor keygen'); client secrets are derived from it")
    add_output_argument(parser, help_text="output CSV 'client,cohort,irr' ('-' for stdout)")
    parser.add_argument("--seed", type=integer(0), default=None, metavar="INT",
                        help="draw the instantaneous noise from numpy's generator with this seed instead of "
                             "the operating system's CSPRNG: reproducible, NOT secure; for tests and "
                             "simulation only [default: none, the OS CSPRNG]")
    add_on_error_arguments(parser, kept="the good rows are encoded")
    parser.add_argument("--jobs", type=integer(1), default=None, metavar="N",
                        help="worker processes for large inputs [default: number of CPUs, at most 8]")
    parser.add_argument("--bool", action="append", default=[], metavar="NAME",
                        help="with several value columns (header client,NAME1,NAME2,...): column NAME holds "
                             "booleans (1/0/true/false), encoded as one bit (repeatable) [default: none]")
    add_quiet_argument(parser)
    group = parser.add_argument_group("discovery reports (see 'rappor discover')")
    group.add_argument("--discovery-params", metavar="PATH", default=None,
                       help="parameters of one discovery slot: encode discovery reports (every row without "
                            "--params; with --params, the clients whose role is discovery) [default: none]")
    group.add_argument("--discovery-share", type=real(0.0, 1.0), default=None, metavar="S",
                       help="with --params and --discovery-params: the share of clients sending a discovery "
                            "report instead of a full-string one, chosen by each client's secret [default: 0.75, "
                            "the measured choice]")
    group.add_argument("--discovery-output", metavar="PATH", default=None,
                       help="with --params and --discovery-params: the discovery reports CSV (required then) [default: none]")
    add_layout_arguments(group)  # type: ignore[arg-type]


def files(args: argparse.Namespace) -> CommandFiles:
    """INPUT, ``--params``, ``--discovery-params`` and ``--key-file`` in; ``-o``, ``--discovery-output`` (and the
    rejects file with ``--on-error skip``) out."""
    outputs = [("-o", args.output)]
    if args.discovery_output is not None:
        outputs.append(("--discovery-output", args.discovery_output))
    if args.on_error == "skip":
        outputs.append(("--rejects", resolve_rejects_path(args.output, args.rejects, "reports")))
    inputs = [("INPUT", args.input), ("--key-file", args.key_file)]
    inputs += [(option, path) for option, path in (("--params", args.params),
                                                   ("--discovery-params", args.discovery_params)) if path]
    return CommandFiles(inputs=inputs, outputs=outputs)


def _check_discovery(args: argparse.Namespace) -> None:
    """Refuse option sets that cannot run (before any file is read)."""
    from ..exceptions import InvalidParameterError

    if args.params is None and args.discovery_params is None:
        raise InvalidParameterError("one of --params or --discovery-params is required.")
    split = args.params is not None and args.discovery_params is not None
    if not split:
        for option, value in (("--discovery-share", args.discovery_share),
                              ("--discovery-output", args.discovery_output)):
            if value is not None:
                raise InvalidParameterError(f"{option} needs both --params and --discovery-params (the client split).")
    elif args.discovery_output is None:
        raise InvalidParameterError("--params with --discovery-params needs --discovery-output (the discovery "
                                    "reports; -o gets the full-string ones).")
    if args.discovery_params is not None and args.bool:
        raise InvalidParameterError("--bool and --discovery-params do not go together (discovery reports carry one "
                                    "value per client).")


def run(args: argparse.Namespace) -> int:
    """Encode INPUT and write ``client,cohort,irr`` (:func:`rappor.engines.encode_file`)."""
    from ..formats import read_key_file

    _check_discovery(args)
    params = load_params(args) if args.params is not None else None
    spec = _discovery_spec(args)
    key = read_key_file(args.key_file)
    if args.seed is not None:
        warnings.warn("--seed: the instantaneous noise comes from numpy's generator seeded with "
                      f"{args.seed}, not from the operating system's CSPRNG; these reports are NOT private "
                      "against anyone who knows or guesses the seed (use --seed for tests and simulation only)",
                      InsecureRandomnessWarning, stacklevel=2)
    several = _several_variables(args) if spec is None else False
    jobs = default_jobs() if args.jobs is None else args.jobs

    def encode(**options: Any) -> int:
        with progress(None, desc="encode", unit="row", quiet=args.quiet) as update:
            return encode_rows(progress=update, **options)

    def encode_rows(**options: Any) -> int:
        if spec is not None:
            share = None if params is None else (0.75 if args.discovery_share is None else args.discovery_share)
            return encode_discovery_file(args.input, args.output if params is None else args.discovery_output, spec,
                                         key, share=share, params=params,
                                         full_output=None if params is None else args.output, seed=args.seed,
                                         jobs=jobs, **options)
        assert params is not None  # _check_discovery: --params or --discovery-params
        if several:
            return encode_variables_file(args.input, args.output, params, key, booleans=args.bool, seed=args.seed,
                                         jobs=jobs, **options)
        return encode_file(args.input, args.output, params, key, seed=args.seed, jobs=jobs, **options)

    if args.on_error == "raise":
        written = encode()
        if several and not args.quiet:
            sys.stderr.write(f"rappor: encoded {written} rows (report tuples)\n")
        return 0
    rejects_path = resolve_rejects_path(args.output, args.rejects, "reports")
    # Both files are committed only if the whole input was read: a fatal error leaves neither.
    # The rejects hold raw client values: readable by their owner only.
    with atomic_output(rejects_path, private=True) as fh:
        sink = RejectsWriter(fh)
        written = encode(on_error="skip", rejects=sink)
    where = display_name(rejects_path) if rejects_path != STDIO else "<stdout>"
    sys.stderr.write(f"rappor: skipped {sink.count} bad row(s); {written} {'clients' if several else 'reports'} "
                     f"written; rejected rows are in {where}\n")
    return 0


def _discovery_spec(args: argparse.Namespace) -> DiscoverySpec | None:
    """The discovery layout of ``--discovery-params`` (or ``--max-length``, ... for a file without it); None without it."""
    if args.discovery_params is None:
        return None
    from ._discover import read_layout_spec

    return read_layout_spec(args, args.discovery_params, "--discovery-params")


def _several_variables(args: argparse.Namespace) -> bool:
    """Whether INPUT has several value columns (``client,NAME1,NAME2,...``), from its first line.

    The line is read from the stream the encoder then reads (:func:`rappor._util.inputs.read_first_line`):
    a pipe, a FIFO or standard input is read once, its first line included.
    """
    from .._util.inputs import read_first_line
    from ..exceptions import ReportFormatError

    first = read_first_line(args.input)
    line = first.decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r\n")
    try:
        cells = [c.strip() for c in next(csv.reader([line]), [])]
    except csv.Error:
        cells = []
    several = len(cells) >= 3 and cells[0] == "client"
    if args.bool and not several:
        raise ReportFormatError("--bool needs several value columns (header client,NAME1,NAME2,...)",
                                path=display_name(args.input))
    return several

