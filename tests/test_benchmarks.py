"""The benchmark suite's own bookkeeping (``benchmarks/run.py``): figures it prints belong together.

No timing is asserted here (benchmarks print figures; tests never time): a fake clock drives
the helper that picks the fastest run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_RUN = Path(__file__).parent.parent / "benchmarks" / "run.py"


def test_best_returns_what_the_fastest_run_returned(monkeypatch: pytest.MonkeyPatch,
                                                    load_by_path: Callable[[Path], Any]) -> None:
    """`_best` pairs the fastest wall time with that run's output: decode-cli-10k printed the best whole-process
    time beside the *last* run's Decoder.decode time (4.52 s beside 13.58 s "of it" under load)."""
    run = load_by_path(_RUN)
    clock = {"now": 0.0}
    monkeypatch.setattr(run.time, "perf_counter", lambda: clock["now"])
    durations = iter([3.0, 1.0, 2.0])  # the second of three runs is the fastest

    def one_run() -> float:
        took = next(durations)
        clock["now"] += took
        return took  # what the run measured inside itself

    seconds, out = run._best(one_run, 3)
    assert (seconds, out) == (1.0, 1.0)


def private_uses(text: str) -> list[str]:
    """``line: what`` for each use, in a script's code, of a private part of rappor: a module or name
    starting with ``_`` imported from it (``from rappor.x._y import z``, ``from rappor.x import _y``,
    ``import rappor.x._y``) or reached as an attribute (``rappor.x._y``).  Docstrings do not count."""
    import ast

    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rappor":
            names = [alias.name for alias in node.names]
            if any(part.startswith("_") for part in [*node.module.split("."), *names][1:]):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names
                      if alias.name.split(".")[0] == "rappor" and any(p.startswith("_") for p in alias.name.split(".")[1:])]
        elif isinstance(node, ast.Attribute):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            private = [i for i, part in enumerate(reversed(chain)) if part.startswith("_") and not part.startswith("__")]
            if isinstance(value, ast.Name) and value.id == "rappor" and private:  # named up to its first private part
                found.append(f"{node.lineno}: rappor.{'.'.join(list(reversed(chain))[:private[0] + 1])}")
    return sorted(set(found), key=lambda s: int(s.split(":")[0]))


def test_benchmarks_use_the_public_api_and_the_testing_hook_only() -> None:
    """What a benchmark needs beyond the faces comes through ``rappor.testing``, which names it."""
    found = {path.name: private_uses(path.read_text(encoding="utf-8"))
             for path in sorted((_RUN.parent).glob("*.py"))}
    assert {name: uses for name, uses in found.items() if uses} == {}


def test_the_private_use_check_sees_each_form() -> None:
    text = ('"""Docs may name rappor.formats._map."""\nimport rappor.formats._map\nfrom rappor.client._murmur import m\n'
            "from rappor.analysis.discovery import _oracle\nfrom rappor.testing import nonneg_fit\n"
            "import rappor\nx = rappor.formats._map._split_row\ny = rappor.__version__\n")
    assert private_uses(text) == ["2: import rappor.formats._map", "3: from rappor.client._murmur import m",
                                  "4: from rappor.analysis.discovery import _oracle", "7: rappor.formats._map"]


def test_option_grid_share_of_decoys_without_decoys(load_by_path: Callable[[Path], Any]) -> None:
    # A class without decoys (--classes issue4) divided by zero; it now says there are none.
    option_grid = load_by_path(_RUN.parent / "option_grid.py")
    assert option_grid._worst([0, 0, 0], 0) == "(no decoys in this class)"
    assert option_grid._worst([1, 3, 0], 300) == "max 1.0% of the decoys"
