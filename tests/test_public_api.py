"""The public surface: ``rappor.__all__`` is sorted and complete, every public name is documented,
and ``import rappor`` stays light (no scikit-learn, matplotlib, pyarrow or engines)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import rappor


def test_all_is_sorted_and_unique() -> None:
    assert list(rappor.__all__) == sorted(set(rappor.__all__))


def test_all_names_exist() -> None:
    missing = [name for name in rappor.__all__ if not hasattr(rappor, name)]
    assert missing == []


#: The curated top level (issue 15): the pipeline's nouns, the readers and writers of
#: every file format, and the exceptions.  Adding a name here is an API decision.
CURATED = [
    "Aggregate",
    "CandidateMap",
    "CountOverflowError",
    "DecodeError",
    "DecodeResult",
    "Decoder",
    "DeprecatedOptionWarning",
    "Encoder",
    "IncompatibleParamsError",
    "IndistinguishableCandidatesWarning",
    "InsecureKeyFileWarning",
    "InsecureRandomnessWarning",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "MissingDependencyError",
    "Params",
    "Population",
    "RapporError",
    "RapporIOError",
    "RapporWarning",
    "Report",
    "ReportBatch",
    "ReportFormatError",
    "UnbalancedCohortsWarning",
    "__version__",
    "encode_clients",
    "encode_file",
    "generate_key",
    "hash_candidates",
    "iter_client_values",
    "iter_reports",
    "read_candidates",
    "read_client_values",
    "read_counts",
    "read_key_file",
    "read_map",
    "read_params",
    "read_parquet_reports",
    "read_reports",
    "simulate",
    "write_candidates",
    "write_client_values",
    "write_counts",
    "write_key_file",
    "write_map",
    "write_params",
    "write_parquet_reports",
    "write_reports",
]


def test_all_is_the_curated_list() -> None:
    assert rappor.__all__ == CURATED


def test_top_level_names_are_those_of_their_modules() -> None:
    # Each top-level name is the object of the module that owns it (no copies).
    import rappor.formats

    owners = [rappor.aggregate, rappor.decoder, rappor.design, rappor.encoder, rappor.exceptions,
              rappor.file_encoder, rappor.formats, rappor.params, rappor.reports, rappor.simulation]
    for name in CURATED:
        if name == "__version__":
            continue
        found = [m for m in owners if name in getattr(m, "__all__", ())]
        assert found, f"{name} is in no public module's __all__"
        assert all(getattr(m, name) is getattr(rappor, name) for m in found), name


@pytest.mark.parametrize(("name", "module"), sorted(rappor._MOVED.items()))
def test_moved_name_still_resolves_with_a_deprecation_warning(name: str, module: str) -> None:
    import importlib

    owner = importlib.import_module(f"rappor.{module}")
    if not hasattr(owner, name):
        pytest.skip(f"rappor.{module}.{name} no longer exists")
    assert name not in rappor.__all__ and name not in dir(rappor)
    with pytest.warns(DeprecationWarning, match=f"rappor.{name} is deprecated: use rappor.{module}.{name}"):
        assert getattr(rappor, name) is getattr(owner, name)


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        rappor.no_such_name  # noqa: B018


def test_old_module_paths_are_the_format_modules() -> None:
    # rappor.map_file, rappor.parquet and rappor.candidates moved into rappor.formats; in
    # a fresh interpreter the old names are the same module objects (pytest's doctest
    # collection imports the old files on their own, so this is checked in a subprocess).
    code = (
        "import rappor.candidates, rappor.map_file, rappor.parquet, rappor.formats as f\n"
        "print(rappor.map_file is f.map, rappor.parquet is f.parquet, rappor.candidates is f.candidates)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_old_import_paths_still_import() -> None:
    import rappor.formats.parquet
    import rappor.parquet
    from rappor.aggregate import read_counts, write_counts
    from rappor.map_file import read_map
    from rappor.params import read_params, write_params
    from rappor.reports import iter_reports, read_reports, write_reports

    assert (read_counts, write_counts) == (rappor.read_counts, rappor.write_counts)
    assert (read_params, write_params) == (rappor.read_params, rappor.write_params)
    assert (iter_reports, read_reports, write_reports) == (rappor.iter_reports, rappor.read_reports,
                                                            rappor.write_reports)
    assert read_map is rappor.read_map
    assert rappor.parquet._pyarrow is rappor.formats.parquet._pyarrow  # private names too
    with pytest.raises(ImportError):
        from rappor.reports import read_counts as _  # noqa: F401


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
        "heavy = [m for m in ('sklearn', 'matplotlib', 'pyarrow', 'pyspark', 'dask', 'tqdm', 'multiprocessing')\n"
        "         if m in sys.modules]\n"
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


def test_every_table_is_a_structured_array() -> None:
    # Issue 15: table() returned four different types (a structured array, a list of
    # tuples, a list of dicts, a string); like names now mean like things.
    import numpy as np

    from rappor.audit import audit_encoder
    from rappor.discovery.privacy import discovery_privacy
    from rappor.planner import plan
    from rappor.privacy import loss

    params = rappor.Params(k=8, h=2, m=4, p=0.25, q=0.75, f=0.5)
    cmap = rappor.hash_candidates(["a", "b"], params)
    counts = np.column_stack([np.full(4, 1000), np.full((4, 8), 400)])
    tables = {
        "DecodeResult": rappor.Decoder().decode(rappor.Aggregate(params=params, counts=counts), cmap).table(),
        "PrivacyLoss": loss(params).table(),
        "DiscoveryPrivacy": discovery_privacy(params, params).table(),
        "PlanResult": plan(10_000, 100, epsilon_inf=4.0, rng=0).table(3),
        "AuditResult": audit_encoder(params, n_samples=200, n_pairs=1, rng=0).table(),
    }
    for owner, table in tables.items():
        assert isinstance(table, np.ndarray) and table.dtype.names, owner
        assert len(table) > 0, owner


#: Old homes of the file-format functions (issue 15): kept for users, never used by the package itself.
_OLD_HOMES = {
    "map_file": None, "parquet": None, "candidates": None,  # whole modules, now rappor.formats.*
    "params": {"read_params", "write_params"},
    "aggregate": {"read_counts", "write_counts"},
    "reports": {"iter_reports", "read_reports", "write_reports"},
}


def test_the_package_imports_file_formats_from_their_owners() -> None:
    """Inside rappor/, every reader and writer comes from rappor.formats, not through an old path
    (decode-assoc and simulate-assoc read maps through rappor.map_file and params through rappor.params)."""
    import ast

    package = Path(rappor.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.parent == package and path.stem in ("map_file", "parquet", "candidates"):
            continue  # the aliases themselves
        here = path.relative_to(package.parent).with_suffix("").parts  # ("rappor", "_commands", "decode_assoc")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            base = here[:len(here) - node.level] if node.level else ()
            absolute = ".".join((*base, node.module))  # what the import names, absolutely
            if not absolute.startswith("rappor.") or absolute.count(".") != 1:
                continue
            module = absolute.removeprefix("rappor.")
            if module not in _OLD_HOMES:
                continue
            moved = _OLD_HOMES[module]
            if moved is None or {alias.name for alias in node.names} & moved:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: from {'.' * node.level}{node.module}")
    assert found == [], "\n".join(found)
