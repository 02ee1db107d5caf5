"""Deferred imports of heavy modules (private).

``stats = lazy_module("scipy.stats")`` binds a proxy; the real module is imported the
first time an attribute is read.  This keeps ``import rappor`` (and so every ``rappor``
subcommand's start-up) free of SciPy's statistics, optimization and sparse packages
until a function actually needs them.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = importlib.import_module(self._name)
            self._module = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str) -> Any:
    """A proxy for the module ``name`` that imports it on first attribute access."""
    return _LazyModule(name)
