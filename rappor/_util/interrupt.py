"""Signals and worker processes: an interrupted command cleans up and leaves nothing running (private).

* :func:`raise_on_termination` (used by :func:`rappor.cli.main`) turns SIGTERM and SIGHUP
  into :class:`Interrupted` and SIGINT into :class:`KeyboardInterrupt`, so that every
  ``with`` block unwinds: temporary outputs are deleted and worker processes
  (:class:`rappor._util.workers.WorkerPool`) terminated.
* :func:`exit_with_parent` runs first in every worker process: the worker dies with its
  parent, even one killed by SIGKILL (Linux ``PR_SET_PDEATHSIG``, plus a watchdog
  thread that polls the parent's pid elsewhere and as a fallback).
* :func:`signals_deferred` holds those signals back while worker processes are forked.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "exit_with_parent", "raise_on_termination", "signals_deferred"]

#: Signals that end a command with cleanup (SIGINT raises KeyboardInterrupt, as Python's default does).
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: Seconds between two looks of a worker's watchdog at its parent's pid.
WATCHDOG_INTERVAL = 0.25

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Interrupted(BaseException):
    """SIGTERM or SIGHUP arrived: unwind (a ``BaseException``, so ``except Exception`` lets it through).

    Parameters
    ----------
    signum : int
        The signal's number; the command exits with ``128 + signum``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``"SIGTERM"``."""
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def raise_on_termination() -> Iterator[None]:
    """Within the block, SIGTERM/SIGHUP raise :class:`Interrupted` and SIGINT :class:`KeyboardInterrupt`.

    Only signals left at their default disposition are taken over (a SIGHUP ignored by
    ``nohup`` stays ignored).  After the first signal the others are ignored until the
    block ends, so a second one cannot cut the cleanup short.  Outside the main thread
    (where Python cannot set handlers) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Interrupted(signum)

    for sig in TERMINATING:
        current = signal.getsignal(sig)
        if current in (signal.SIG_DFL, signal.default_int_handler):
            previous[sig] = current
            signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def set_parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - tested on Linux
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return False


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_INTERVAL)
        if os.getppid() != parent_pid:
            os._exit(1)


def exit_with_parent(parent_pid: int) -> None:
    """Make this worker process end with ``parent_pid`` (call it first thing in the worker).

    SIGINT and SIGHUP are ignored (a terminal sends them to the whole process group: the
    parent decides), SIGTERM kills at once (the parent's ``WorkerPool.terminate``), and the
    process exits as soon as its parent is gone, whatever killed it.  Signals held back
    by :func:`rappor._util.interrupt.signals_deferred` while the worker was forked are released.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="rappor-parent-watchdog", daemon=True).start()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINATING)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP in this thread for the duration of the block (POSIX).

    A process forked meanwhile starts with them held back, until :func:`exit_with_parent`
    has set its own handling: a worker never runs its parent's handlers.  In the parent,
    a held signal is delivered when the block ends.
    """
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:  # pragma: no cover - not POSIX
        yield
        return
    old = mask(signal.SIG_BLOCK, TERMINATING)
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)
