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

The faces of the package and its stages are lazy too (:func:`lazy_face`): ``import rappor``
loads none of the stages, and ``from rappor.formats import read_counts`` loads
``rappor.formats._counts`` alone, so a command pays only for the modules it uses.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..exceptions import MissingDependencyError

__all__ = ["has_module", "import_optional", "lazy_face", "lazy_module"]

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


def _face_imports(path: str) -> dict[str, tuple[str, str | None]]:
    """Public name -> (module relative to the face, attribute or None for the module itself).

    Read from the face's ``if TYPE_CHECKING:`` block of ``from .x import a, b`` lines: the
    imports type checkers see are the ones run on first access, written once.
    """
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    owners: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.level:
                base = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    if statement.module is None:  # from . import stage: the submodule itself
                        owners[alias.asname or alias.name] = (base + alias.name, None)
                    else:
                        owners[alias.asname or alias.name] = (base, alias.name)
    return owners


def lazy_face(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` (PEP 562) that load a face's names on first access.

    A face (a package's ``__init__.py``) lists its public names in ``__all__`` and imports
    them under ``if TYPE_CHECKING:`` (what type checkers and readers see); at run time it
    binds ``__getattr__, __dir__ = lazy_face(__name__)``, and the first access of a name
    imports the one module that owns it and keeps the object in the face.  A name the face
    does not import is looked up as a submodule (``rappor.analysis.decoder``), as after an
    eager import, and is otherwise an :class:`AttributeError`.

    Parameters
    ----------
    package : str
        The face's module name (``__name__``); the module must be in :data:`sys.modules`
        (it is while its body runs).
    """
    face = sys.modules[package]
    owners = _face_imports(str(face.__file__))

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's name (PEP 562)
        owner = owners.get(name)
        if owner is not None:
            module = importlib.import_module(owner[0], package)
            value = module if owner[1] is None else getattr(module, owner[1])
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(face, name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the module hook's name (PEP 562)
        return sorted(set(vars(face)) | set(owners))

    return __getattr__, __dir__
