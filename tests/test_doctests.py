"""The package's doctests run (or skip with a reason, at their own file) instead of being muted."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "rappor"


def test_no_doctest_is_muted_with_skip_directive() -> None:
    """``# doctest: +SKIP`` hides an example from the run (one such example was wrong) and pytest
    reports the skip at its own internals: examples must run, or declare their extra in conftest.py."""
    muted = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "+SKIP" in line]
    assert muted == []


def test_doctests_needing_an_extra_exist() -> None:
    """Every name in conftest.NEEDS_EXTRA is a documented object with an example."""
    spec = importlib.util.spec_from_file_location("root_conftest", PACKAGE.parent / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    for dotted in conftest.NEEDS_EXTRA:
        module_name, _, attr = dotted.rpartition(".")
        obj = getattr(importlib.import_module(module_name), attr)
        assert ">>> " in (obj.__doc__ or ""), dotted
        # pytest names a doctest after the module that defines the object: an old import path
        # (rappor.formats._parquet, an alias of rappor.formats._parquet) would never match, and the
        # example would fail instead of skipping when the extra is missing.
        assert f"{obj.__module__}.{obj.__qualname__}" == dotted, dotted


@pytest.mark.parametrize("dotted", ["rappor.client.bloom_bit_indices"])
def test_formerly_skipped_examples_run(dotted: str) -> None:
    import doctest

    module_name, _, attr = dotted.rpartition(".")
    obj = getattr(importlib.import_module(module_name), attr)
    (test,) = doctest.DocTestFinder().find(obj, dotted)
    assert test.examples and doctest.DocTestRunner().run(test).failed == 0
