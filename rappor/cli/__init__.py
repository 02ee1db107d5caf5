"""The ``rappor`` command: one private module per subcommand, and :func:`main`.

``_main`` parses the command line, runs one subcommand and maps errors to exit codes;
``_common`` holds the arguments and checks the subcommands share; every other module is
one subcommand (``NAME``, ``HELP``, ``configure(parser)``, ``run(args) -> int``).
"""

from __future__ import annotations

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
