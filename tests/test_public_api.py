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


#: The curated top level: the pipeline's nouns, the few functions a collection starts
#: from, and the exceptions (at most 40 names; the readers and writers are in
#: rappor.formats).  Adding a name here is an API decision.
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
    "read_key_file",
    "simulate",
    "write_key_file",
]

#: The stage packages, in the order a collection uses them; each has a face
#: (``__init__.py``: a docstring saying what it holds, and ``__all__``).
STAGES = ["client", "collect", "formats", "engines", "privacy", "analysis", "analysis.decoder",
          "analysis.discovery", "analysis.association", "simulation", "report", "cli"]


def test_all_has_at_most_40_names() -> None:
    assert len(rappor.__all__) <= 40


def test_every_top_level_name_is_in_the_package_docstring() -> None:
    doc = rappor.__doc__ or ""
    exceptions = {name for name in rappor.__all__ if name.endswith(("Error", "Warning"))}
    missing = [name for name in rappor.__all__
               if name not in exceptions and name != "__version__" and f"`{name}`" not in doc]
    assert missing == []
    assert "rappor.exceptions" in doc  # the exceptions are documented there, as a tree


def test_all_is_the_curated_list() -> None:
    assert rappor.__all__ == CURATED


def test_top_level_names_are_those_of_their_modules() -> None:
    # Each top-level name is the object of the module that owns it (no copies).
    import rappor.formats

    import rappor.analysis.decoder

    owners = [rappor.client, rappor.collect, rappor.analysis.decoder, rappor.engines, rappor.exceptions,
              rappor.formats, rappor.params, rappor.simulation]
    for name in CURATED:
        if name == "__version__":
            continue
        found = [m for m in owners if name in getattr(m, "__all__", ())]
        assert found, f"{name} is in no public module's __all__"
        assert all(getattr(m, name) is getattr(rappor, name) for m in found), name


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        rappor.no_such_name  # noqa: B018


def test_there_is_no_compatibility_layer() -> None:
    # No release yet, so no old import paths are kept: no aliases, no deprecated top-level names.
    import importlib

    package = Path(rappor.__file__).parent
    assert not hasattr(rappor, "__getattr__")
    for old in ("candidates", "map_file", "parquet", "_moved", "encoder", "aggregate", "decoder", "metrics"):
        assert not (package / f"{old}.py").exists() and not (package / old).is_dir(), old
        with pytest.raises(ImportError):
            importlib.import_module(f"rappor.{old}")


@pytest.mark.parametrize("stage", STAGES)
def test_stage_face_says_what_it_holds_and_lists_its_names(stage: str) -> None:
    import importlib

    face = importlib.import_module(f"rappor.{stage}")
    assert (face.__doc__ or "").strip(), stage
    names = getattr(face, "__all__", None)
    assert names and len(names) == len(set(names)), stage
    assert all(hasattr(face, name) for name in names), stage


def test_one_visibility_rule_modules_inside_packages_are_private() -> None:
    # Every module inside a package is private (_name.py) and its public names are listed by
    # the package's face; subpackages are public stages with their own face.  _util is
    # private as a whole.
    package = Path(rappor.__file__).parent
    public = [str(path.relative_to(package.parent)) for path in sorted(package.rglob("*.py"))
              if path.parent != package and path.name != "__init__.py" and not path.name.startswith("_")
              and "_util" not in path.parts]
    assert public == []


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
    # table() returned four different types (a structured array, a list of tuples, a list
    # of dicts, a string); like names now mean like things.  The results' table() is the
    # labelled table for reading (tests/_util/test_table.py); their table_array() is this.
    import numpy as np

    from rappor.privacy._audit import audit_encoder
    from rappor.analysis.discovery._privacy import discovery_privacy
    from rappor.privacy._planner import plan
    from rappor.privacy._accounting import loss

    params = rappor.Params(k=8, h=2, m=4, p=0.25, q=0.75, f=0.5)
    cmap = rappor.hash_candidates(["a", "b"], params)
    counts = np.column_stack([np.full(4, 1000), np.full((4, 8), 400)])
    tables = {
        "DecodeResult": rappor.Decoder().decode(rappor.Aggregate(params=params, counts=counts), cmap).table_array(),
        "PrivacyLoss": loss(params).table(),
        "DiscoveryPrivacy": discovery_privacy(params, params).table(),
        "PlanResult": plan(10_000, 100, epsilon_inf=4.0, rng=0).table(3),
        "AuditResult": audit_encoder(params, n_samples=200, n_pairs=1, rng=0).table(),
    }
    for owner, table in tables.items():
        assert isinstance(table, np.ndarray) and table.dtype.names, owner
        assert len(table) > 0, owner


def test_each_face_names_every_module_of_its_package() -> None:
    # A face says what its package holds: each module (and subpackage) is named in its docstring.
    # The command line's face states its rule instead (one private module per subcommand).
    import importlib

    package = Path(rappor.__file__).parent
    missing = {}
    for init in sorted(package.rglob("__init__.py")):
        folder = init.parent
        name = ".".join(folder.relative_to(package.parent).parts)
        if folder == package or name == "rappor.cli":
            continue
        doc = importlib.import_module(name).__doc__ or ""
        parts = [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
        parts += [p.parent.name for p in folder.glob("*/__init__.py")]
        unnamed = sorted(part for part in parts if not any(f"``{part}{end}``" in doc for end in ("", ".py", "/")))
        if unnamed:
            missing[name] = unnamed
    assert missing == {}
