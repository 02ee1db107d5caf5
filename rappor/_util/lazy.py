"""Optional and heavy imports, in one place (private): deferred modules and missing extras.

Two kinds of module are not imported when ``rappor`` is:

heavy
    SciPy's statistics, optimization, sparse and linear-algebra packages (scikit-learn
    too): required dependencies, but ``scipy.stats`` alone costs most of a second, paid
    by ``rappor --help`` and every subcommand.  A module binds
    ``stats = lazy_module("scipy.stats")`` (with the real import under
    ``TYPE_CHECKING`` for mypy) and the import happens on first attribute access.
optional
    the extras of ``pyproject.toml``: pyarrow (``parquet``), matplotlib (``plot``), tqdm
    (``progress``), Dask (``dask``), PySpark (``spark``); and pandas, which no extra
    installs.  :func:`import_optional` (now) and :func:`lazy_module` (on first use) raise
    :class:`~rappor.exceptions.MissingDependencyError`, an :class:`ImportError` naming
    what to install, e.g.
    ``pyarrow is needed for Parquet reports: pip install 'rappor[parquet]'.``;
    :func:`has_module` lets a feature that can do without one (a progress bar, the
    plots of an HTML report) check first.

Every such import in the package goes through this module.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

from ..exceptions import MissingDependencyError

__all__ = ["has_module", "import_optional", "lazy_module"]

#: Top-level package -> (its name for people, the command that installs it: an extra of pyproject.toml).
EXTRAS: dict[str, tuple[str, str]] = {
    "pyarrow": ("pyarrow", "pip install 'rappor[parquet]'"),
    "matplotlib": ("matplotlib", "pip install 'rappor[plot]'"),
    "tqdm": ("tqdm", "pip install 'rappor[progress]'"),
    "dask": ("Dask", "pip install 'rappor[dask]'"),
    "distributed": ("distributed", "pip install 'rappor[dask]'"),
    "pyspark": ("PySpark", "pip install 'rappor[spark]'"),
    "pandas": ("pandas", "pip install pandas"),
}


def import_optional(name: str, purpose: str, *, note: str = "") -> ModuleType:
    """Import the module ``name`` of an optional extra, or raise an error naming the extra.

    Parameters
    ----------
    name : str
        A module of one of :data:`EXTRAS`' packages, e.g. ``"pyarrow.parquet"``.
    purpose : str
        What needs it (``"Parquet reports"``).
    note : str, default=""
        Appended to the message (e.g. ``" (and Java 17 or later)"``).

    Raises
    ------
    MissingDependencyError
        ``"{package} is needed for {purpose}: {install}{note}."``, e.g. ``install`` =
        ``pip install 'rappor[parquet]'``.
    """
    try:
        return importlib.import_module(name)
    except ImportError:
        package, install = EXTRAS[name.partition(".")[0]]
        msg = f"{package} is needed for {purpose}: {install}{note}."
        raise MissingDependencyError(msg, name=name) from None


def has_module(name: str) -> bool:
    """Whether the module ``name`` can be imported (without importing it when it is not loaded)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _LazyModule:
    __slots__ = ("_name", "_purpose", "_module")

    def __init__(self, name: str, purpose: str | None) -> None:
        self._name = name
        self._purpose = purpose
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            if self._name.partition(".")[0] in EXTRAS:
                try:
                    module = import_optional(self._name, self._purpose or "this feature")
                except MissingDependencyError:
                    # Introspection (hasattr(x, "__wrapped__") in inspect.unwrap, which doctest
                    # collection calls on every module attribute) must see a plain missing
                    # attribute, not an error: without pyarrow, collecting rappor/engines/ failed.
                    if attr.startswith("__") and attr.endswith("__"):
                        raise AttributeError(attr) from None
                    raise
            else:
                module = importlib.import_module(self._name)
            self._module = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str, purpose: str | None = None) -> Any:
    """A proxy for the module ``name`` that imports it on first attribute access.

    For a module of an optional extra, a missing package raises
    :class:`~rappor.exceptions.MissingDependencyError` at that first access, with
    ``purpose`` as in :func:`import_optional`.
    """
    return _LazyModule(name, purpose)
