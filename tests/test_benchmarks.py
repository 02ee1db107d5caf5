"""The benchmark suite's own bookkeeping (``benchmarks/run.py``): figures it prints belong together.

No timing is asserted here (benchmarks print figures; tests never time): a fake clock drives
the helper that picks the fastest run.
"""

from __future__ import annotations

import json
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


def test_discovery_summary_keeps_runs_with_and_without_held_values_apart(tmp_path: Path,
                                                                        load_by_path: Callable[[Path], Any]) -> None:
    """`--from-json` pools runs over seeds only when the search's options match: runs with held values
    (`--hold`) and without (`--hold 0`, or rows written before the option) are two rows of each table."""
    bench = load_by_path(Path(__file__).parent.parent / "benchmarks" / "discovery.py")
    base = {"clients": 10_000_000, "eps": 4.0, "split": "clients", "share": 0.75, "population": "long-rare",
            "slot_weights": [1, 2], "prior_mix": 0.1, "rescue": 16.0}
    rows = [{**base, "seed": 1, "ours_recall@10": 0.8, "ours_false": 0},  # written before --hold: none held
            {**base, "seed": 2, "hold": 0.0, "ours_recall@10": 0.9, "ours_false": 0},
            {**base, "seed": 1, "hold": 20.0, "ours_recall@10": 1.0, "ours_false": 0}]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = bench.summarize([str(path)]).split("\n\n")[1]  # discovery alone, one row per setting
    lines = [line for line in first.splitlines() if line.startswith("| long-rare")]
    assert len(lines) == 2
    assert "| 1,2, prior 0.1, rescue 16 | 2 | 0.85 ± 0.071 |" in lines[0]  # seeds 1 and 2, no held values
    assert "| 1,2, prior 0.1, rescue 16, hold 20 | 1 | 1 |" in lines[1]
