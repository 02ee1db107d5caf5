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
