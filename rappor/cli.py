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
                             formatter_class=argparse.RawDescriptionHelpFormatter)
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


def _command_name(argv: Sequence[str] | None) -> str:
    words = sys.argv[1:] if argv is None else list(argv)
    return next((w for w in words if not w.startswith("-")), "")


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
    except MemoryError as exc:
        # Readers add the file they were reading (rappor._io.open_input_binary).
        where = f" {exc.args[0]}" if exc.args and isinstance(exc.args[0], str) else ""
        print(f"rappor: error: out of memory{where} in 'rappor {_command_name(argv)}': the input or the "
              f"parameters need more memory than this machine has", file=sys.stderr)
        return 1
    except OSError as exc:
        name = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"rappor: error: {name}{exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = old_show
