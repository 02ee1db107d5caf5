"""Arguments shared by several subcommands, and the checks of numeric option values (private).

Every numeric option is checked where argparse reads it (``type=``), so a bad value is a
usage error that names the flag (``argument --level: expected a number in (0, 1), got
'5'``, exit status 2) rather than an error about a library parameter.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from .._util.lazy import import_optional
from .._util.outputs import refuse_replacing_key
from .._util.paths import check_distinct_files
from .._util.validation import MAX_COUNT
from ..exceptions import InvalidParameterError
from ..formats import read_params
from ..params import Params


def _typed(text: str) -> str:
    """``repr(text)`` of a typed value, or its start and length when it is long (a 400-digit number)."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}\u2026 ({len(text):,} characters)"


def remove_every(text: str) -> int:
    """argparse ``type`` of --remove-every: 0 (keep all) or an integer >= 2 (1 removes every candidate)."""
    value = integer(0)(text)
    if value == 1:
        raise argparse.ArgumentTypeError("expected 0 (keep every value) or an integer >= 2, got '1' (it would leave "
                                         "no candidate)")
    return value


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= low`` (and ``<= high``)."""
    expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {_typed(text)}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {_typed(text)}")
        return value

    parse.__name__ = "integer"
    return parse


def real(low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = False
         ) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in the interval from ``low`` to ``high``."""
    if math.isinf(high):
        expected = f"a finite number {'>' if low_open else '>='} {low:g}"
    else:
        expected = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {_typed(text)}") from None
        inside = (math.isfinite(value) and (value > low if low_open else value >= low)
                  and (value < high if high_open else value <= high))
        if not inside:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {_typed(text)}")
        return value

    parse.__name__ = "number"
    return parse


#: A significance level: a number strictly between 0 and 1.
open_unit = real(0.0, 1.0, low_open=True, high_open=True)



def delta(text: str) -> float:
    """An argparse ``type``: a delta of (epsilon, delta)-DP, in (0, 1) and a normal float (``>= 2.2e-308``: a
    subnormal one has lost the precision the accountings need; 1e-309 gave epsilon_advanced inf)."""
    value = open_unit(text)
    if value < sys.float_info.min:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {_typed(text)} (below "
                                         f"{sys.float_info.min:.3g}, the smallest normal float)")
    return value


#: A number of reports or candidates: 1 to 2**53 (the largest count a float holds exactly).
count = integer(1, MAX_COUNT)


class _DeprecatedAlias(argparse.Action):
    """Stores into the new option's destination and says, on stderr, which flag to use instead."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, replacement: str, **kwargs: Any) -> None:
        self.replacement = replacement
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        sys.stderr.write(f"rappor: warning: {option_string} is deprecated; use {self.replacement} (same meaning)\n")
        setattr(namespace, self.dest, values)


def add_level_argument(parser: argparse._ActionsContainer, *, help_text: str) -> None:
    """``--level LEVEL`` (the significance level), with ``--alpha`` kept as a deprecated alias."""
    parser.add_argument("--level", type=open_unit, default=0.05, metavar="LEVEL",
                        help=f"{help_text} (--alpha is a deprecated alias) [default: 0.05]")
    parser.add_argument("--alpha", type=open_unit, dest="level", action=_DeprecatedAlias, replacement="--level",
                        metavar="LEVEL", help=argparse.SUPPRESS)


def add_estimator_argument(parser: argparse._ActionsContainer, *, help_text: str) -> None:
    """``--estimator least-squares``: no argparse ``choices``, so that a removed estimator is refused by
    :func:`rappor.analysis.decoder.check_estimator` (``rappor: error: ...`` saying why, exit 1)."""
    parser.add_argument("--estimator", default="least-squares", metavar="least-squares",
                        help=f"{help_text} [default: least-squares]")


def add_params_argument(parser: argparse.ArgumentParser, *, required: bool = True, default: str = "") -> None:
    """``--params PATH``: a google/rappor ``params.csv`` (header ``k,h,m,p,q,f``); ``default`` describes
    what an optional one falls back to."""
    text = "parameters file, google/rappor format (header k,h,m,p,q,f)"
    parser.add_argument("--params", required=required, metavar="PATH",
                        help=text if required else f"{text} [default: {default}]")


def add_output_argument(parser: argparse.ArgumentParser, *, help_text: str = "output file ('-' for stdout)") -> None:
    """``-o/--output PATH`` defaulting to standard output."""
    parser.add_argument("-o", "--output", default="-", metavar="PATH", help=help_text + " [default: stdout]")


def add_on_error_arguments(parser: argparse.ArgumentParser, *, kept: str) -> None:
    """``--on-error raise|skip`` and ``--rejects PATH`` (see :mod:`rappor._util.rejects`)."""
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help=f"raise: stop at the first bad row; skip: leave bad rows out, write them "
                             f"with their line numbers and reasons to the rejects file and count them on stderr "
                             f"({kept}) [default: raise]")
    parser.add_argument("--rejects", metavar="PATH", default=None,
                        help="rejects CSV (file,line,reason,row) for --on-error skip "
                             "[default: OUTPUT.rejects.csv; required when OUTPUT is stdout]")


def add_seed_argument(parser: argparse._ActionsContainer, *, default: int | None = None,
                      help_text: str = "random seed (reproducible output)", shown: str | None = None) -> None:
    """``--seed INT`` (an integer >= 0, as numpy's seeds) for randomness used in analysis or simulation."""
    parser.add_argument("--seed", type=integer(0), default=default, metavar="INT",
                        help=f"{help_text} [default: {shown if shown is not None else default}]")


def add_quiet_argument(parser: argparse._ActionsContainer, *, what: str = " and no line saying what was written") -> None:
    """``-q/--quiet``: no progress bar (drawn only on a terminal anyway) and, by default, no note on stderr."""
    parser.add_argument("-q", "--quiet", action="store_true", help=f"no progress bar{what} (errors still show)")


def tell(args: argparse.Namespace, text: str) -> None:
    """Write ``rappor: TEXT`` as one line on stderr, unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"rappor: {text}\n")


def shown(path: Any) -> str:
    """An output path as a note names it (``<stdout>`` for ``-``)."""
    return "<stdout>" if path is None or str(path) == "-" else str(path)


def json_safe(value: Any) -> Any:
    """``value`` with plain Python types and every NaN or infinite float as None (JSON's null)."""
    if isinstance(value, dict):
        return {key: json_safe(val) for key, val in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(val) for val in value]
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return json_safe(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(value: Any, *, sort_keys: bool = False) -> str:
    """Strict JSON of ``value`` (:func:`json_safe`, then ``allow_nan=False``), indented, with a final newline.

    Every JSON file a command writes goes through it: ``NaN`` and ``Infinity`` are not
    JSON, and strict parsers (``jq``, JavaScript's ``JSON.parse``) reject a file holding them.
    """
    import json

    return json.dumps(json_safe(value), indent=2, sort_keys=sort_keys, allow_nan=False) + "\n"


class UsageError(InvalidParameterError):
    """A flag's value that the library refused: :mod:`rappor.cli` prints it as argparse does, exit status 2."""


@contextlib.contextmanager
def flags(names: dict[str, str]) -> Iterator[None]:
    """Name the flag a user typed in the library's parameter errors raised inside the block.

    ``names`` maps library parameters to flags (``{"epsilon_inf": "--epsilon-inf"}``): an
    :class:`~rappor.exceptions.InvalidParameterError` reading "The 'epsilon_inf' parameter
    of plan must be ..." becomes the usage error "argument --epsilon-inf: must be ..."
    (exit status 2, as argparse's own); other errors pass unchanged.
    """
    try:
        yield
    except UsageError:
        raise
    except InvalidParameterError as exc:
        text = str(exc)
        for name, flag in names.items():
            match = re.match(rf"The '{re.escape(name)}' parameter of [\w.]+ (.*)$", text, flags=re.DOTALL)
            if match:
                raise UsageError(f"argument {flag}: {match.group(1)}") from None
        raise


def load_params(args: argparse.Namespace) -> Params:
    """Read the file named by ``--params``."""
    return read_params(args.params)


class CommandFiles(NamedTuple):
    """The files one run of a command reads and writes, each with the option naming it.

    :func:`rappor.cli.main` passes them to :func:`rappor._util.paths.check_distinct_files`
    before the command runs: no output may be an input or another output, and
    ``summed`` inputs (added up) may not repeat, and no output may be a key file
    unless ``writes_key`` (``rappor keygen``, which has its own rule).
    """

    inputs: Sequence[tuple[str, str]] = ()
    outputs: Sequence[tuple[str, str]] = ()
    summed: Sequence[tuple[str, str]] = ()
    writes_key: bool = False


def check_command_files(files: CommandFiles) -> None:
    """Refuse the run if two of its paths are the same file (see :func:`rappor._util.paths.check_distinct_files`),
    or if an output would replace a key file (:func:`rappor._util.outputs.refuse_replacing_key`), before any work."""
    check_distinct_files(files.inputs, files.outputs, summed=files.summed)
    if not files.writes_key:
        for _, path in files.outputs:
            refuse_replacing_key(path)


def terminal_tqdm() -> Any | None:
    """tqdm's progress-bar class when a bar is drawn (:func:`rappor._util.progress.enabled`: standard
    error is a terminal and tqdm is installed), else ``None``."""
    from .._util.progress import enabled

    return import_optional("tqdm", "a progress bar").tqdm if enabled() else None

