"""Threads of the association decode's passes over the data (private).

A pass is a loop over blocks of patterns whose work (``numpy.take``, matrix products,
bit gathering) releases the GIL, so disjoint row ranges run in parallel threads.  On a
machine shared with other work this is also what keeps the decode's wall time down: one
runnable thread against ``n`` busy processes gets ``cores / (n + 1)`` of the machine, two
get twice that.  (The BLAS pool itself stays at one thread: its idle threads spin.)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["MAX_THREADS", "in_ranges", "pass_threads", "shared_threads"]

_T = TypeVar("_T")

#: Most threads a pass over the data runs on (fewer when the process may use fewer cores).
MAX_THREADS = 4

_local = threading.local()  # .pool: the calling thread's pool of shared_threads, within its block


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
    shared: ThreadPoolExecutor | None = getattr(_local, "pool", None)
    if shared is not None:
        return list(shared.map(work, cuts[:-1], cuts[1:]))
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, cuts[:-1], cuts[1:]))


@contextlib.contextmanager
def shared_threads() -> Iterator[None]:
    """Within the block, every pass runs on one pool of :func:`pass_threads` threads, closed at its end.

    Outside, each pass starts and joins a pool of its own: that cost 1.5-4 ms CPU a pass
    more than one thread (thread starts, and each new thread's expansion buffers allocated
    afresh; 8,000-50,000 patterns x 100 candidates x boolean, loaded 2-core machine,
    measured), which doubled a small decode with profile intervals.  The pool's threads
    end with the block, so no idle thread outlives a decode (a later fork copies none).
    The pool is the calling thread's (passes called from other threads start their own);
    a nested block uses the outer one's.
    """
    if getattr(_local, "pool", None) is not None or pass_threads() <= 1:  # nested, or no threads to share
        yield
        return
    with ThreadPoolExecutor(pass_threads(), thread_name_prefix="rappor-pass") as pool:
        _local.pool = pool
        try:
            yield
        finally:
            _local.pool = None
