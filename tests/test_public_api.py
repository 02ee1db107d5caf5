"""The public surface: ``rappor.__all__`` is sorted and complete, every public name is documented,
and ``import rappor`` stays light (no scikit-learn, matplotlib, pyarrow or engines)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import rappor


def test_all_is_sorted_and_unique() -> None:
    assert list(rappor.__all__) == sorted(set(rappor.__all__))


def test_all_names_exist() -> None:
    missing = [name for name in rappor.__all__ if not hasattr(rappor, name)]
    assert missing == []


def test_all_covers_every_public_module_name() -> None:
    for module in rappor._PUBLIC_MODULES:
        for name in module.__all__:
            assert name in rappor.__all__, f"{module.__name__}.{name} is not re-exported"
            assert getattr(rappor, name) is getattr(module, name)


def test_public_callables_have_docstrings() -> None:
    undocumented = []
    for name in rappor.__all__:
        obj = getattr(rappor, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            if not (obj.__doc__ or "").strip():
                undocumented.append(name)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or not callable(member):
                        continue
                    if not (getattr(member, "__doc__", "") or "").strip():
                        undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_import_is_light() -> None:
    code = (
        "import sys, rappor\n"
        "heavy = [m for m in ('sklearn', 'matplotlib', 'pyarrow', 'pyspark', 'dask', 'tqdm') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_does_not_load_scipy_submodules() -> None:
    # scipy.stats alone costs ~0.8 s, paid by `rappor --help` and every subcommand.
    code = (
        "import sys, rappor\n"
        "heavy = [m for m in ('scipy.stats', 'scipy.sparse', 'scipy.special', 'scipy.optimize', 'scipy.linalg')\n"
        "         if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
