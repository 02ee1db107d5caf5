"""Worker processes (rappor._util.workers.WorkerPool): ordered results, errors, deaths, termination."""

from __future__ import annotations

import os
import signal
import time

import pytest

from rappor import InvalidParameterError
from rappor._util.workers import WorkerDied, WorkerPool

_STATE: dict[str, int] = {}


def _setup(offset: int) -> None:
    _STATE["offset"] = offset


def _slow_square(index: int, delay: float) -> tuple[int, int, int]:
    time.sleep(delay)
    return index, index * index + _STATE["offset"], os.getpid()


def _fail_at(index: int, bad: int) -> int:
    if index == bad:
        raise InvalidParameterError(f"item {index} is bad")
    return index


def _die_at(index: int, bad: int) -> int:
    if index == bad:
        os.kill(os.getpid(), signal.SIGKILL)
    return index


def test_worker_pool_results_in_order_from_every_worker() -> None:
    # Later items finish first within each round: the order must still be the input's.
    items = [(i, 0.02 * ((7 - i) % 4)) for i in range(12)]
    with WorkerPool(3, _slow_square, setup=_setup, setup_args=(100,)) as pool:
        results = list(pool.imap(items))
    assert [r[:2] for r in results] == [(i, i * i + 100) for i in range(12)]
    assert len({pid for _, _, pid in results}) == 3 and os.getpid() not in {pid for _, _, pid in results}


def test_worker_pool_more_workers_than_items_and_no_items() -> None:
    with WorkerPool(4, _slow_square, setup=_setup, setup_args=(0,)) as pool:
        assert [r[1] for r in pool.imap([(3, 0.0)])] == [9]
        assert list(pool.imap([])) == []


def test_worker_pool_raises_the_workers_exception() -> None:
    with pytest.raises(InvalidParameterError, match="item 5 is bad"):
        with WorkerPool(2, _fail_at) as pool:
            for _ in pool.imap((i, 5) for i in range(10)):
                pass


def test_worker_pool_dead_worker_is_an_error_not_a_hang() -> None:
    with pytest.raises(WorkerDied, match="exit status -9"):
        with WorkerPool(2, _die_at) as pool:
            list(pool.imap((i, 3) for i in range(10)))


def _die_before_reading(delay: float) -> None:
    time.sleep(delay)
    os.kill(os.getpid(), signal.SIGKILL)


def test_worker_pool_worker_killed_with_its_item_unread_is_worker_died() -> None:
    """Killed before reading the item the parent had sent: the socket is reset, not closed, and
    the parent's read raises ConnectionResetError rather than EOFError (seen in CI as
    "rappor: error: Connection reset by peer"); it is the same death and the same error."""
    with pytest.raises(WorkerDied, match="exit status -9"):
        with WorkerPool(1, _slow_square, setup=_die_before_reading, setup_args=(0.3,)) as pool:
            list(pool.imap((i, 0.0) for i in range(3)))


def test_worker_pool_terminate_on_error_while_busy() -> None:
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="stop"):
        with WorkerPool(2, _slow_square, setup=_setup, setup_args=(0,)) as pool:
            processes = [process for process, _ in pool._workers]
            results = pool.imap((i, 30.0 if i else 0.0) for i in range(4))
            next(results)  # item 0 is done; workers are now busy for 30 s
            raise RuntimeError("stop")
    assert time.monotonic() - started < 15  # terminated, not waited for
    assert all(not process.is_alive() and process.exitcode == -signal.SIGTERM for process in processes)
