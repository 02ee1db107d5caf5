"""The ``rappor`` command: one subcommand per stage of a collection.

Each subcommand lives in its own module under :mod:`rappor._commands` and defines
``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; this module only
discovers them, parses the command line and maps errors to exit codes:

* 0 success;
* 1 bad data or parameters (a :class:`~rappor.exceptions.RapporError`), printed as
  ``rappor: error: <message>`` on standard error, without a traceback;
* 2 usage errors (argparse).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import textwrap
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any, TextIO

from . import __version__
from .exceptions import RapporError, RapporWarning

__all__ = ["build_parser", "main"]


def _command_modules() -> list[ModuleType]:
    from . import _commands

    modules = []
    for info in pkgutil.iter_modules(_commands.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_commands.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            modules.append(module)
    modules.sort(key=lambda mod: (getattr(mod, "ORDER", 100), mod.NAME))
    return modules


class _HelpFormatter(argparse.HelpFormatter):
    """Help with the description's paragraphs re-wrapped to the terminal width.

    A subcommand's description is its module docstring: paragraphs (separated by blank
    lines) are filled to the width like the options' help, and indented lines (examples,
    tables) are kept as written.  Plain argparse either keeps the docstring's line breaks
    (``RawDescriptionHelpFormatter``: lines overflow narrow terminals) or merges
    everything into one paragraph.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            prose = [line for line in lines if line and not line[0].isspace()]
            if len(prose) == len(lines):  # one paragraph of prose: refill
                out.append(textwrap.fill(" ".join(" ".join(lines).split()), width,
                                         initial_indent=indent, subsequent_indent=indent))
            else:  # a heading line followed by indented lines: keep the layout
                out.append("\n".join(indent + line for line in lines))
        return "\n\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="rappor",
        description="Collect string frequencies with local differential privacy (RAPPOR).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in _command_modules():
        doc = (module.__doc__ or "").strip()
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=doc or module.HELP,
                             formatter_class=_HelpFormatter)
        module.configure(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    stream = file if file is not None else sys.stderr
    try:
        stream.write(f"rappor: warning: {message}\n")
    except OSError:  # pragma: no cover
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rappor`` command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Any = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    old_show = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", RapporWarning)
            status = run(args)
        return int(status or 0)
    except RapporError as exc:
        print(f"rappor: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as json.tool does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("rappor: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("rappor: error: out of memory", file=sys.stderr)
        return 1
    except OSError as exc:
        name = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"rappor: error: {name}{exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = old_show
