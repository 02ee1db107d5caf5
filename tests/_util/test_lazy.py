"""Tests of rappor._util.lazy: deferred heavy imports, and missing extras named in an ImportError (library and CLI)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rappor import RapporError
from rappor._util.lazy import has_module, import_optional, lazy_module
from rappor.cli._main import main
from rappor.exceptions import MissingDependencyError


@pytest.fixture
def no_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `import pyarrow` fail as if it were not installed."""
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)


def test_import_optional_names_the_extra(no_pyarrow: None) -> None:
    with pytest.raises(MissingDependencyError, match=r"^pyarrow is needed for Parquet reports: "
                                                     r"pip install 'rappor\[parquet\]'\.$") as info:
        import_optional("pyarrow.parquet", "Parquet reports")
    assert isinstance(info.value, ImportError) and isinstance(info.value, RapporError)


def test_lazy_module_imports_on_first_use_and_names_the_extra(no_pyarrow: None) -> None:
    proxy = lazy_module("pyarrow", "Parquet reports")  # nothing happens yet
    assert "not loaded" in repr(proxy)
    with pytest.raises(MissingDependencyError, match=r"rappor\[parquet\]"):
        proxy.table  # noqa: B018 - the attribute access is the import


def test_lazy_module_loads_a_required_module() -> None:
    proxy = lazy_module("json")
    assert proxy.dumps([1]) == "[1]" and "loaded" in repr(proxy)


def test_has_module() -> None:
    assert has_module("json") and not has_module("rappor_no_such_module")


def test_sum_bits_parquet_without_pyarrow_is_a_cli_error(tmp_path, no_pyarrow: None, capsys) -> None:
    # A directory of Parquet files: before, an unguarded import in rappor/engines gave a traceback.
    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n16,2,4,0.5,0.75,0.5\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "part-0.parquet").write_bytes(b"PAR1")  # never read: pyarrow is missing
    status = main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "reports"),
                   "-o", str(tmp_path / "counts.csv")])
    err = capsys.readouterr().err
    assert status == 1
    assert err == "rappor: error: pyarrow is needed for Parquet reports: pip install 'rappor[parquet]'.\n"
    assert not (tmp_path / "counts.csv").exists()


def test_plots_without_matplotlib_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = sys.modules['matplotlib.pyplot'] = None\n"
        "from rappor import Params\n"
        "from rappor.report._plots import plot_epsilon\n"
        "p = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)\n"
        "try:\n"
        "    plot_epsilon(p)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "matplotlib is needed for plots: pip install 'rappor[plot]'."


def test_introspecting_a_missing_extra_is_not_an_error(no_pyarrow: None) -> None:
    """`hasattr(module_attribute, "__wrapped__")`, which doctest collection runs on every attribute of every
    module (inspect.unwrap), is False for a lazy module whose extra is missing: `pytest` on an install without
    pyarrow stopped collecting at rappor/engines/_partition.py with a MissingDependencyError."""
    import doctest
    import inspect
    import types

    pa = lazy_module("pyarrow", "Parquet reports")
    assert not hasattr(pa, "__wrapped__")
    assert inspect.unwrap(pa) is pa
    holder = types.ModuleType("holder", "A module with a lazy attribute.\n\n>>> 1 + 1\n2\n")
    holder.pa = pa  # type: ignore[attr-defined]
    assert len(doctest.DocTestFinder().find(holder)) == 1
    with pytest.raises(MissingDependencyError, match=r"rappor\[parquet\]"):
        pa.Table  # noqa: B018  (real use still names the extra)


def _modules_after(code: str) -> set[str]:
    """The rappor modules a new interpreter has loaded after running ``code``."""
    probe = code + "\nimport sys\nprint(' '.join(m for m in sys.modules if m.startswith('rappor')))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_lazy_face_loads_only_the_module_that_owns_a_name() -> None:
    assert _modules_after("import rappor") == {"rappor", "rappor._util", "rappor._util.lazy",
                                               "rappor._util.version", "rappor.exceptions"}
    loaded = _modules_after("from rappor.formats import read_counts")
    assert "rappor.formats._counts" in loaded
    assert not {"rappor.formats._parquet", "rappor.formats._map", "rappor.engines"} & loaded


def test_lazy_face_serves_its_names_and_submodules() -> None:
    import rappor
    import rappor.formats
    from rappor.formats._counts import read_counts

    assert rappor.formats.read_counts is read_counts
    assert set(rappor.formats.__all__) <= set(dir(rappor.formats))
    assert rappor.analysis.decoder.__name__ == "rappor.analysis.decoder"  # a subpackage, as after an eager import
    with pytest.raises(AttributeError, match="module 'rappor.formats' has no attribute 'read_nothing'"):
        rappor.formats.read_nothing  # noqa: B018
