"""Threads of the association decode's passes over the data (private).

A pass is a loop over blocks of patterns whose work (``numpy.take``, matrix products,
bit gathering) releases the GIL, so disjoint row ranges run in parallel threads.  On a
machine shared with other work this is also what keeps the decode's wall time down: one
runnable thread against ``n`` busy processes gets ``cores / (n + 1)`` of the machine, two
get twice that.  (The BLAS pool itself stays at one thread: its idle threads spin.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["MAX_THREADS", "in_ranges", "pass_threads"]

_T = TypeVar("_T")

#: Most threads a pass over the data runs on (fewer when the process may use fewer cores).
MAX_THREADS = 4


def pass_threads() -> int:
    """Threads of a pass: the cores this process may run on, at most :data:`MAX_THREADS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def in_ranges(work: Callable[[int, int], _T], rows: int, step: int) -> list[_T]:
    """``work(start, stop)`` over contiguous ranges of ``0..rows`` (multiples of ``step``), in order.

    The ranges depend only on ``rows``, ``step`` and :data:`MAX_THREADS`, not on the cores
    this machine has: :func:`pass_threads` sets how many run at once, so the partial sums a
    caller adds up, and hence the decode's last digits, are the same on every machine.
    """
    chunks = -(-rows // step)
    ranges = min(MAX_THREADS, chunks)
    if ranges <= 1:
        return [work(0, rows)]
    cuts = [min(rows, (chunks * t // ranges) * step) for t in range(ranges + 1)]
    threads = min(pass_threads(), ranges)
    if threads <= 1:
        return [work(start, stop) for start, stop in zip(cuts[:-1], cuts[1:])]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, cuts[:-1], cuts[1:]))
