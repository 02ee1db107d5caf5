"""Worker processes that return results in order and never outlive the command (private).

:class:`WorkerPool` runs one function over a stream of items in ``jobs`` processes and
yields the results in input order, with one item in flight per worker.  It has no
threads of its own: the parent sends an item to a worker only when that worker is idle,
so neither side can block the other, and an interrupted parent has nothing to join.

* A worker runs :func:`rappor._util.interrupt.exit_with_parent` first: it dies with the
  parent, whatever kills the parent.
* Leaving the ``with`` block by an exception (an error, a signal turned into one by
  :func:`rappor._util.interrupt.raise_on_termination`) terminates and reaps every worker at
  once; leaving it normally stops them in order.
* A worker that dies (killed, out of memory) is an error naming its exit status, not a
  hang.

``concurrent.futures.ProcessPoolExecutor`` was used before: terminating its workers
mid-run could leave its manager thread blocked reading half a result, and the
interpreter then waited for that thread forever at exit.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any

from .interrupt import exit_with_parent, signals_deferred
from ..exceptions import RapporError

__all__ = ["WorkerDied", "WorkerPool"]

_END = object()


class WorkerDied(RapporError):
    """A worker process ended without returning its result (killed, out of memory).

    A :class:`~rappor.exceptions.RapporError`, so the command line reports it in one
    line (``rappor: error: ...``) and exits 1.
    """


def _worker_main(conn: Connection, parent_pid: int, function: Callable[..., Any],
                 setup: Callable[..., None] | None, setup_args: tuple[Any, ...]) -> None:
    """Receive argument tuples, send back ``("ok", result)`` or ``("error", exception)``; ``None`` stops."""
    exit_with_parent(parent_pid)
    if setup is not None:
        setup(*setup_args)
    while True:
        try:
            item = conn.recv()
        except EOFError:  # the parent closed its end
            return
        if item is None:
            return
        try:
            reply: tuple[str, Any] = ("ok", function(*item))
        except BaseException as exc:  # returned to the parent, which raises it
            reply = ("error", exc)
        try:
            conn.send(reply)
        except (TypeError, AttributeError, ValueError) as exc:  # an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]} ({exc})")))


class WorkerPool:
    """``jobs`` processes applying ``function`` to argument tuples, results in input order.

    Parameters
    ----------
    jobs : int
        Number of worker processes (at least 1).
    function : callable
        Called in a worker as ``function(*item)`` for each item; must be picklable by
        reference (a module-level function) where processes are spawned.
    setup : callable or None, default=None
        Called once in each worker as ``setup(*setup_args)`` before any item.
    setup_args : tuple, default=()
    context : multiprocessing context or None, default=None
        ``fork`` where available (workers share the parent's imports), else the default.

    Examples
    --------
    >>> with WorkerPool(2, pow) as pool:
    ...     list(pool.imap([(2, 3), (3, 2)]))
    [8, 9]
    """

    def __init__(self, jobs: int, function: Callable[..., Any], *, setup: Callable[..., None] | None = None,
                 setup_args: tuple[Any, ...] = (), context: Any = None) -> None:
        if context is None:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._jobs = jobs
        self._function = function
        self._setup = setup
        self._setup_args = setup_args
        self._context = context
        self._workers: list[tuple[Any, Connection]] = []

    def __enter__(self) -> WorkerPool:
        parent = os.getpid()
        try:
            for _ in range(self._jobs):
                ours, theirs = self._context.Pipe()
                process = self._context.Process(target=_worker_main, daemon=True, name="rappor-worker",
                                                args=(theirs, parent, self._function, self._setup, self._setup_args))
                # Forked with the signals held back, until the worker has set its own handling.
                with signals_deferred():
                    process.start()
                theirs.close()  # only the worker holds its end now: its death is EOF here
                self._workers.append((process, ours))
        except BaseException:
            self.terminate()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.terminate()

    def imap(self, items: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """The results of ``function(*item)`` for each item, in order.

        Item ``i`` goes to worker ``i % jobs``, which gets its next item as soon as it
        has returned a result; the following item is read from ``items`` meanwhile.

        Raises
        ------
        WorkerDied
            If a worker ends without returning a result.
        Exception
            Whatever ``function`` raised in a worker.
        """
        source = iter(items)
        in_flight: collections.deque[int] = collections.deque()
        following = next(source, _END)
        for index in range(len(self._workers)):
            if following is _END:
                break
            self._send(index, following)
            in_flight.append(index)
            following = next(source, _END)
        while in_flight:
            index = in_flight.popleft()
            result = self._receive(index)
            if following is not _END:
                self._send(index, following)
                in_flight.append(index)
                following = next(source, _END)
            yield result

    def _send(self, index: int, item: object) -> None:
        try:
            self._workers[index][1].send(item)
        except (BrokenPipeError, ConnectionResetError):  # the worker is gone
            raise self._died(index) from None

    def _receive(self, index: int) -> Any:
        process, conn = self._workers[index]
        ready = wait([conn, process.sentinel])
        try:
            if conn not in ready:
                raise EOFError
            status, value = conn.recv()
        except (EOFError, ConnectionResetError):  # reset: it died with our item still unread
            raise self._died(index) from None
        if status == "error":
            raise value
        return value

    def _died(self, index: int) -> WorkerDied:
        process = self._workers[index][0]
        process.join(1.0)
        return WorkerDied(f"a worker process ended without returning its result (exit status {process.exitcode}; "
                          f"a negative status is the signal that killed it, e.g. -9 when out of memory)")

    def close(self) -> None:
        """Ask every worker to stop, and wait for it."""
        for process, conn in self._workers:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        for process, conn in self._workers:
            process.join(5.0)
        self.terminate()  # any that did not stop

    def terminate(self, *, timeout: float = 5.0) -> None:
        """Stop every worker now (SIGTERM, then SIGKILL), reap it and close its pipe."""
        for process, _ in self._workers:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                if process.is_alive():
                    process.terminate()
        for process, conn in self._workers:
            with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
                process.join(timeout)
                if process.is_alive():
                    process.kill()
                    process.join()
            conn.close()
        self._workers = []
