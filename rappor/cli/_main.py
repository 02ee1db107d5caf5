"""The ``rappor`` command: one subcommand per stage of a collection.

Each subcommand lives in its own module under :mod:`rappor.cli` and defines
``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; this module only
discovers them, parses the command line and maps errors to exit codes:

* 0 success;
* 1 bad data or parameters, a file that cannot be read or written, a missing optional
  extra (any :class:`~rappor.exceptions.RapporError`), printed as
  ``rappor: error: <message>`` on standard error, without a traceback;
* 2 usage errors (argparse);
* 128 + N after signal N (SIGINT, SIGTERM, SIGHUP), once every temporary output is
  deleted and every worker process stopped.

Standard error, and standard output when it is a terminal, escape control and
bidirectional characters (:mod:`rappor._util.terminal`): client strings cannot drive the
terminal.

Before a command runs, the files it reads and writes (its ``files(args)``) are checked:
no output may be the same file as an input or as another output.  A closed standard
output (``>&-``) is an error when the command writes to it, not a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import os
import pkgutil
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any, TextIO

from .._util.version import __version__
from .._util.interrupt import Interrupted, raise_on_termination
from .._util.outputs import forget_created_directories, remove_temporary_files
from .._util.terminal import TerminalStream
from ..exceptions import RapporError, RapporIOError, RapporWarning
from ._common import UsageError

__all__ = ["build_parser", "main"]


def _command_modules(command: str | None = None) -> list[ModuleType]:
    """The subcommands' modules, in ``ORDER``; with ``command``, only that one's (when it is one).

    A subcommand's module is named after it (``hash-candidates`` in ``_hash_candidates.py``),
    so running one command imports only its module (and what that imports), not every
    command's.
    """
    package = __name__.rpartition(".")[0]  # rappor.cli: this module's folder holds one module per command
    if command is not None:
        try:
            own: ModuleType | None = importlib.import_module(f"{package}._{command.replace('-', '_')}")
        except ImportError:  # not a command: argparse names the choices
            own = None
        if own is not None and getattr(own, "NAME", None) == command and hasattr(own, "run"):
            return [own]
    modules = []
    for info in pkgutil.iter_modules([os.path.dirname(__file__)]):
        module = importlib.import_module(f"{package}.{info.name}")
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


#: What a negative number looks like on a command line: -1, -0.5, -.5, -1e-6, -2.5E+3.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or only ``command`` (when it is one)."""
    parser = argparse.ArgumentParser(
        prog="rappor",
        description="Collect string frequencies with local differential privacy (RAPPOR).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in _command_modules(command):
        description, details = _help_parts((module.__doc__ or "").strip())
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=description or module.HELP,
                             epilog=details, usage=getattr(module, "USAGE", None), formatter_class=_HelpFormatter)
        # A negative number in exponent form (--delta -1e-6) is a value, not an option: argparse's
        # own pattern knows only -1 and -.5, and said "expected one argument".
        cmd._negative_number_matcher = _NEGATIVE_NUMBER
        module.configure(cmd)
        cmd.set_defaults(_run=module.run, _files=getattr(module, "files", None), _command_parser=cmd)
    return parser


def _help_parts(doc: str) -> tuple[str, str | None]:
    """A subcommand's docstring split for ``--help``: what to type first, the rest after the options.

    The description (shown under the usage line) is the first paragraph and the
    ``Example:``/``Examples:`` blocks; every other paragraph goes to the epilog, under
    "Details:", after the options.
    """
    blocks = [block for block in doc.split("\n\n") if block.strip()]
    if not blocks:
        return "", None
    first = [blocks[0]] + [b for b in blocks[1:] if b.lstrip().startswith(("Example:", "Examples:"))]
    rest = [b for b in blocks[1:] if b not in first]
    return "\n\n".join(first), ("\n\n".join(["Details:", *rest]) if rest else None)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    stream = file if file is not None else sys.stderr
    try:
        stream.write(f"rappor: warning: {message}\n")
    except OSError:  # pragma: no cover
        pass


def _command_name(run: Any) -> str:
    """The subcommand's name (``NAME`` of its module) for messages."""
    return str(getattr(sys.modules.get(getattr(run, "__module__", ""), None), "NAME", ""))


class _ClosedStandardOutput(io.TextIOBase):
    """Stands for a standard output the process was started without (``>&-``): writing fails cleanly."""

    def _fail(self) -> OSError:
        # Already named: passes through the handlers that name write errors (rappor._util.outputs).
        return RapporIOError("cannot write: standard output is closed", path="<stdout>", errno=errno.EBADF)

    def write(self, text: str) -> int:
        raise self._fail()

    @property
    def buffer(self) -> Any:
        return self

    def writable(self) -> bool:
        return True


@contextlib.contextmanager
def _standard_streams() -> Iterator[None]:
    """Stand-ins for closed standard streams (``sys.stdout`` or ``sys.stderr`` is None) during a run."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is None:
        sys.stdout = _ClosedStandardOutput()
    elif _is_terminal(sys.stdout):  # a person reads it: no escape sequences from the data
        sys.stdout = TerminalStream(sys.stdout)
    if sys.stderr is None:  # nowhere to report: messages are dropped, the exit status remains
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - closed below
    else:  # messages only: control and bidirectional characters of client strings escaped
        sys.stderr = TerminalStream(sys.stderr)
    try:
        yield
    finally:
        _settle_stdout()
        if saved[1] is None:
            sys.stderr.close()
        else:
            sys.stderr.flush()
        sys.stdout, sys.stderr = saved


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _settle_stdout() -> None:
    """Flush standard output; if it cannot take the output, point it at /dev/null.

    Otherwise the interpreter's own final flush fails again and prints "Exception
    ignored" (exit status 120) after the command's one-line error.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rappor`` command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # The first word names the command (the top level has no option taking a value): only
    # its module is imported; ``rappor --help`` and an unknown command see them all.
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's own parser, with its usage (the top level's says nothing of it)
        command = getattr(args, "_command_parser", None)
        (command or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    run: Any = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    with _standard_streams():
        return _run(args, run)


def _run(args: argparse.Namespace, run: Any) -> int:
    """Run one command; map its errors, signals and stream failures to exit statuses."""
    old_show = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        with raise_on_termination():
            with warnings.catch_warnings():
                warnings.simplefilter("always", RapporWarning)
                if args._files is not None:
                    from ._common import check_command_files

                    check_command_files(args._files(args))
                status = run(args)
        forget_created_directories()
        return int(status or 0)
    except UsageError as exc:  # a flag's value the library refused: worded and numbered as argparse's
        _say(f"rappor {_command_name(run)}: error: {exc}")
        return 2
    except RapporError as exc:
        remove_temporary_files()  # an output directory made for this run and left empty
        _say(f"rappor: error: {exc}")
        return 1
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as json.tool does
        # (_settle_stdout then keeps the interpreter's last flush quiet).
        return 1
    except KeyboardInterrupt:
        # A signal can land between creating a temporary output and the ``try`` that deletes it.
        remove_temporary_files()
        _say("rappor: interrupted")
        return 130
    except Interrupted as exc:
        remove_temporary_files()
        _say(f"rappor: interrupted by {exc.name}")
        return 128 + exc.signum
    except MemoryError as exc:
        # Readers add the file they were reading (rappor._util.inputs.open_input_binary).
        where = f" {exc.args[0]}" if exc.args and isinstance(exc.args[0], str) else ""
        _say(f"rappor: error: out of memory{where} in 'rappor {_command_name(run)}': the input or the "
             f"parameters need more memory than this machine has")
        return 1
    except OSError as exc:
        name = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _say(f"rappor: error: {name}{exc.strerror or exc}")
        return 1
    finally:
        warnings.showwarning = old_show


def _say(message: str) -> None:
    """Write one line to standard error, if it can still be written."""
    with contextlib.suppress(OSError, ValueError):
        print(message, file=sys.stderr)
