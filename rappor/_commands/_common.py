"""Arguments shared by several subcommands (private)."""

from __future__ import annotations

import argparse

from ..params import Params, read_params


def add_params_argument(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--params PATH``: a google/rappor ``params.csv`` (header ``k,h,m,p,q,f``)."""
    parser.add_argument("--params", required=required, metavar="PATH",
                        help="parameters file, google/rappor format (header k,h,m,p,q,f)")


def add_output_argument(parser: argparse.ArgumentParser, *, help_text: str = "output file ('-' for stdout)") -> None:
    """``-o/--output PATH`` defaulting to standard output."""
    parser.add_argument("-o", "--output", default="-", metavar="PATH", help=help_text + " [default: stdout]")


def add_seed_argument(parser: argparse.ArgumentParser) -> None:
    """``--seed INT`` for commands with randomness used in analysis or simulation."""
    parser.add_argument("--seed", type=int, default=None, metavar="INT", help="random seed (reproducible output)")


def load_params(args: argparse.Namespace) -> Params:
    """Read the file named by ``--params``."""
    return read_params(args.params)
