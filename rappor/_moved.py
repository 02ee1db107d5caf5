"""Old import paths of names and modules that moved elsewhere (private): one way to keep them working.

Issue 15 gave every file format its own module (:mod:`rappor.formats`).

* :func:`moved_names`: the readers and writers that used to live beside the types they
  read (``rappor.reports.read_reports``, ``rappor.aggregate.read_counts``,
  ``rappor.params.read_params``) still import from there, resolved on first use
  through a module ``__getattr__`` (PEP 562), so neither module imports the other at
  load time (which would be an import cycle);
* :func:`alias_module`: whole modules that moved (``rappor.map_file``,
  ``rappor.parquet``, ``rappor.candidates``) are other names of their new module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["alias_module", "moved_names"]


def moved_names(module: str, target: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``names`` from the module ``target``.

    Parameters
    ----------
    module : str
        The old module's ``__name__`` (for the error of any other missing name).
    target : str
        The module the names moved to, imported the first time one is asked for.
    names : iterable of str
        The names that moved.
    """
    moved = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name in moved:
            return getattr(importlib.import_module(target), name)
        msg = f"module {module!r} has no attribute {name!r}"
        raise AttributeError(msg)

    return __getattr__


def alias_module(module: str, target: str) -> Callable[[str], Any]:
    """Make the old module ``module`` another name of ``target``; return a ``__getattr__`` for type checkers.

    After this, ``sys.modules[module] is sys.modules[target]``: ``import rappor.map_file``
    gives :mod:`rappor.formats.map` itself, so attributes read or patched through either
    name are the same (tests that ``monkeypatch`` a function see one module).  The
    returned ``__getattr__`` only matters to static type checkers, which read the old
    file: any name of ``target`` is accepted there.
    """
    moved = importlib.import_module(target)
    sys.modules[module] = moved

    def __getattr__(name: str) -> Any:
        return getattr(moved, name)

    return __getattr__
