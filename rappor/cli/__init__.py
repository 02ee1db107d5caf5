"""The ``rappor`` command: one private module per subcommand, and :func:`main`.

``_entry`` is the program's entry point; ``_main`` parses the command line, runs one
subcommand and maps errors to exit codes;
``_common`` holds the arguments and checks the subcommands share; every other module is
one subcommand (``NAME``, ``HELP``, ``configure(parser)``, ``run(args) -> int``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._main import build_parser, main
else:  # loaded on first use: the program's entry point (_entry) runs before NumPy loads
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = ["build_parser", "main"]
