"""Progress bars on standard error (private): one place that decides whether to draw one, and draws it.

A bar is drawn only when it helps a person watching: standard error is a terminal, the
command was not given ``--quiet`` and tqdm (the ``progress`` extra) is installed.
Otherwise every helper here does nothing, so callers never test for it.

* :func:`progress` -- a bar over a known (or unknown) number of units: the caller calls
  the function it yields with each increment (bytes read, candidates screened, seeds run).
* :func:`steps` -- a bar over the named steps of a command (``read counts``, ``decode``,
  ``write``), whose elapsed time keeps moving during a long step.

Library code takes an optional ``progress`` callback (``Callable[[int], None] | None``);
the command line makes it with these helpers.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..exceptions import MissingDependencyError
from .lazy import import_optional

__all__ = ["Steps", "enabled", "progress", "steps"]

#: Seconds between redraws of a step bar while its step runs (so its elapsed time moves).
REFRESH = 0.5


def enabled(quiet: bool = False) -> bool:
    """Whether a bar would be drawn: standard error is a terminal, not ``quiet``, and tqdm is installed."""
    if quiet or not _isatty():
        return False
    try:
        import_optional("tqdm", "a progress bar")
    except MissingDependencyError:
        return False
    return True


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def _tqdm(**options: Any) -> Any:
    tqdm = import_optional("tqdm", "a progress bar").tqdm
    return tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, **options)


@contextlib.contextmanager
def progress(total: float | None, *, desc: str, unit: str = "it", unit_scale: bool = False,
             quiet: bool = False) -> Iterator[Callable[[int], None] | None]:
    """A callback advancing a bar by its argument, or ``None`` when no bar is drawn (:func:`enabled`).

    Parameters
    ----------
    total : float or None
        Units in all (None: unknown; the bar counts without a percentage).
    desc : str
        Label at the left of the bar.
    unit : str, default="it"
    unit_scale : bool, default=False
        Show units with SI prefixes (bytes: ``unit="B", unit_scale=True``).
    quiet : bool, default=False
        Draw nothing (``--quiet``).
    """
    if not enabled(quiet):
        yield None
        return
    with _tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale) as bar:
        yield bar.update


class Steps:
    """The named steps of a command on one bar (see :func:`steps`): call :meth:`start` at each step."""

    def __init__(self, bar: Any, desc: str = "") -> None:
        self._bar = bar
        self._desc = desc
        self._started = False

    def start(self, name: str) -> None:
        """Mark the previous step done and show ``name`` as the running one."""
        if self._bar is None:
            return
        if self._started:
            self._bar.update(1)
        self._started = True
        self._bar.set_description_str(f"{self._desc}: {name}")


@contextlib.contextmanager
def steps(names: Sequence[str], *, desc: str, quiet: bool = False) -> Iterator[Steps]:
    """A bar over ``names`` (the steps in order), redrawn every :data:`REFRESH` seconds.

    Yields a :class:`Steps` whose :meth:`Steps.start` announces each step; without a bar
    (:func:`enabled`) it does nothing.  ``desc`` names the command (``"decode"``).
    """
    if not enabled(quiet):
        yield Steps(None)
        return
    done = threading.Event()
    with _tqdm(total=len(names), desc=desc, unit="step", bar_format="{desc} (step {n}/{total}, {elapsed})") as bar:
        def redraw() -> None:
            while not done.wait(REFRESH):
                bar.refresh()

        thread = threading.Thread(target=redraw, name="rappor-progress", daemon=True)
        thread.start()
        try:
            yield Steps(bar, desc)
        finally:
            done.set()
            thread.join()
