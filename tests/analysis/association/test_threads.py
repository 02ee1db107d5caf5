"""Tests of the passes' row ranges (``rappor.analysis.association._threads``) and their testing hook."""

from __future__ import annotations

import threading

import pytest

import rappor.analysis.association._threads as threads_module
from rappor.testing import association_pass_threads


@pytest.mark.parametrize(("rows", "step"), [(1, 4), (10, 4), (4 * 7 + 3, 4), (1000, 64)])
def test_ranges_tile_the_rows_in_steps_whatever_the_cores(monkeypatch: pytest.MonkeyPatch, rows: int,
                                                          step: int) -> None:
    seen = []
    for cores in (1, 2, 3, threads_module.MAX_THREADS):
        monkeypatch.setattr(threads_module, "pass_threads", lambda cores=cores: cores)
        seen.append(threads_module.in_ranges(lambda start, stop: (start, stop), rows, step))
    assert all(ranges == seen[0] for ranges in seen)  # the cores set how many run at once, not where they cut
    ranges = seen[0]
    assert len(ranges) == min(threads_module.MAX_THREADS, -(-rows // step))
    assert ranges[0][0] == 0 and ranges[-1][1] == rows
    assert all(stop == start for (_, stop), (start, _) in zip(ranges[:-1], ranges[1:]))
    assert all(start % step == 0 and start < stop for start, stop in ranges)


def test_association_pass_threads_caps_the_ranges_and_restores_them() -> None:
    before = threads_module.MAX_THREADS
    with association_pass_threads(2):
        assert len(threads_module.in_ranges(lambda start, stop: start, 100, 1)) == 2
    assert threads_module.MAX_THREADS == before
    with pytest.raises(RuntimeError), association_pass_threads(1):
        raise RuntimeError
    assert threads_module.MAX_THREADS == before


def test_shared_threads_serve_every_pass_of_the_block_and_end_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads_module, "pass_threads", lambda: 2)

    def where(start: int, stop: int) -> tuple[int, int, str]:
        return start, stop, threading.current_thread().name

    alone = threads_module.in_ranges(where, 1000, 10)
    with threads_module.shared_threads():
        first = threads_module.in_ranges(where, 1000, 10)
        with threads_module.shared_threads():  # nested: the outer block's pool
            second = threads_module.in_ranges(where, 1000, 10)
    # The same ranges in the same order; run on the block's two threads, named as its pool's.
    assert [r[:2] for r in first] == [r[:2] for r in second] == [r[:2] for r in alone]
    names = {r[2] for r in first + second}
    assert len(names) <= 2 and all(name.startswith("rappor-pass") for name in names)
    assert not any(t.name.startswith("rappor-pass") for t in threading.enumerate())  # none outlives the block
