"""Arguments shared by several subcommands (private)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NamedTuple

from .._io import check_distinct_files
from ..formats.params import read_params
from ..params import Params


def add_params_argument(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--params PATH``: a google/rappor ``params.csv`` (header ``k,h,m,p,q,f``)."""
    parser.add_argument("--params", required=required, metavar="PATH",
                        help="parameters file, google/rappor format (header k,h,m,p,q,f)")


def add_output_argument(parser: argparse.ArgumentParser, *, help_text: str = "output file ('-' for stdout)") -> None:
    """``-o/--output PATH`` defaulting to standard output."""
    parser.add_argument("-o", "--output", default="-", metavar="PATH", help=help_text + " [default: stdout]")


def add_on_error_arguments(parser: argparse.ArgumentParser, *, kept: str) -> None:
    """``--on-error raise|skip`` and ``--rejects PATH`` (see :mod:`rappor._rejects`)."""
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help=f"raise: stop at the first bad row (default); skip: leave bad rows out, write them "
                             f"with their line numbers and reasons to the rejects file and count them on stderr "
                             f"({kept})")
    parser.add_argument("--rejects", metavar="PATH", default=None,
                        help="rejects CSV (file,line,reason,row) for --on-error skip "
                             "[default: OUTPUT.rejects.csv; required when OUTPUT is stdout]")


def add_seed_argument(parser: argparse.ArgumentParser) -> None:
    """``--seed INT`` for commands with randomness used in analysis or simulation."""
    parser.add_argument("--seed", type=int, default=None, metavar="INT", help="random seed (reproducible output)")


def load_params(args: argparse.Namespace) -> Params:
    """Read the file named by ``--params``."""
    return read_params(args.params)


class CommandFiles(NamedTuple):
    """The files one run of a command reads and writes, each with the option naming it.

    :func:`rappor.cli.main` passes them to :func:`rappor._io.check_distinct_files`
    before the command runs: no output may be an input or another output, and
    ``summed`` inputs (added up) may not repeat.
    """

    inputs: Sequence[tuple[str, str]] = ()
    outputs: Sequence[tuple[str, str]] = ()
    summed: Sequence[tuple[str, str]] = ()


def check_command_files(files: CommandFiles) -> None:
    """Refuse the run if two of its paths are the same file (see :func:`rappor._io.check_distinct_files`)."""
    check_distinct_files(files.inputs, files.outputs, summed=files.summed)
