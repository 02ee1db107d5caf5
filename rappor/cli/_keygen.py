"""Create a new client key file for 'rappor encode'.

The key is 32 bytes from the operating system's CSPRNG, written as hexadecimal text
and a newline, readable by its owner only (mode 0600).  An existing file is never
replaced unless '--force' is given.  Keep the key secret: anyone holding it can
recompute every client's permanent randomized responses.
"""

from __future__ import annotations

import argparse

from ._common import CommandFiles

NAME = "keygen"
HELP = "create a new secret key file for 'rappor encode'"
ORDER = 19


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor keygen``."""
    parser.add_argument("-o", "--output", required=True, metavar="KEY", help="key file to create (mode 0600)")
    parser.add_argument("--force", action="store_true", help="replace the file if it exists")


def files(args: argparse.Namespace) -> CommandFiles:
    """No input; ``-o`` out (a key: replaced only with ``--force``)."""
    return CommandFiles(outputs=[("-o", args.output)], writes_key=True)


def run(args: argparse.Namespace) -> int:
    """Write a fresh key to ``--output``."""
    from ..client import generate_key
    from ..formats import write_key_file

    write_key_file(args.output, generate_key(), overwrite=args.force)
    return 0
