"""Doctests of the ``rappor`` package (pytest collects them with ``--doctest-modules``).

Every doctest runs in its own temporary directory, so examples that write files
(``reports.parquet``) leave nothing behind.  An example that needs an optional extra is
skipped when the extra is not installed -- reported at its own docstring with the reason,
not at pytest's internals as ``# doctest: +SKIP`` was -- and runs when it is.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

#: Doctests (by their dotted name) that need an optional extra: the module to import and the
#: extra that installs it.
NEEDS_EXTRA = {
    "rappor.formats._parquet.ParquetReportWriter": ("pyarrow", "parquet"),
    "rappor.engines._aggregate.aggregate_files": ("dask.dataframe", "dask"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.DoctestItem):
            continue
        need = NEEDS_EXTRA.get(item.name)
        if need is not None and not _installed(need[0]):
            reason = f"doctest needs {need[0]} (pip install 'rappor[{need[1]}]')"
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _doctest_in_tmp_dir(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(request.node, pytest.DoctestItem):
        monkeypatch.chdir(tmp_path)
