"""Errors and warnings raised by :mod:`rappor`: this module owns the whole hierarchy.

The hierarchy (each class means one thing)::

    RapporError(Exception)
    ├── InvalidParameterError(RapporError, ValueError, TypeError)  # a bad argument or option
    ├── ReportFormatError(RapporError, ValueError)      # a file's *content* is not the format; path, line
    ├── RapporIOError(RapporError, OSError)             # a file cannot be opened, read or written; path, errno
    ├── IncompatibleParamsError(RapporError, ValueError)  # made with other Params
    ├── CountOverflowError(RapporError, OverflowError)  # an exact count would exceed 2**63 - 1
    ├── DecodeError(RapporError)                        # e.g. "Information is lost. Cannot decode."
    ├── InsufficientMemoryError(RapporError, MemoryError)  # refused before allocating
    └── MissingDependencyError(RapporError, ImportError)   # an optional extra is not installed; names it

    RapporWarning(UserWarning)
    ├── UnbalancedCohortsWarning
    ├── IndistinguishableCandidatesWarning
    ├── InsecureKeyFileWarning
    ├── InsecureRandomnessWarning
    ├── ConvergenceWarning                              # an iterative fit stopped before converging
    └── DeprecatedOptionWarning(RapporWarning, FutureWarning)  # an option that will be removed; says why

Every error ``rappor`` raises on purpose is a :class:`RapporError`, and also an
instance of the builtin it refines, so ``except OSError`` or ``except ImportError``
catch what they would catch from the standard library.  The command-line tool prints
a :class:`RapporError` as ``rappor: error: <msg>`` and exits with status 1, without a
traceback.  (:class:`rappor._util.workers.WorkerDied`, a worker process that died, is a
:class:`RapporError` too.)
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "CountOverflowError",
    "DecodeError",
    "DeprecatedOptionWarning",
    "IncompatibleParamsError",
    "IndistinguishableCandidatesWarning",
    "InsecureKeyFileWarning",
    "InsecureRandomnessWarning",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "MissingDependencyError",
    "RapporError",
    "RapporIOError",
    "RapporWarning",
    "ReportFormatError",
    "UnbalancedCohortsWarning",
]


class RapporError(Exception):
    """Base class of every error :mod:`rappor` raises on purpose (bad input, files, parameters, environment)."""


def _located(message: str, path: str | None, line: int | None) -> str:
    """``PATH:LINE: message`` (the parts that are known), as compilers and linters write it."""
    where = ""
    if path is not None:
        where = f"{path}:"
        if line is not None:
            where += f"{line}:"
        where += " "
    return f"{where}{message}"


class InvalidParameterError(RapporError, ValueError, TypeError):
    """A parameter has the wrong type or a value outside its allowed range.

    It subclasses both :class:`ValueError` and :class:`TypeError`, as
    scikit-learn's error of the same name does, so either can catch it.
    """


class ReportFormatError(RapporError, ValueError):
    """A file (reports, counts, map, params, candidates) was read, but its content is not the expected form.

    A file that cannot be opened, read or written at all is a :class:`RapporIOError`.

    Parameters
    ----------
    message : str
        What was expected and what was found.
    path : str or None, default=None
        The file's name as given by the user (``"<stdin>"`` for standard input).
    line : int or None, default=None
        1-based line number, where one applies.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return _located(self.message, self.path, self.line)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_rebuild_report_format_error, (self.message, self.path, self.line))


def _rebuild_report_format_error(message: str, path: str | None, line: int | None) -> ReportFormatError:
    return ReportFormatError(message, path=path, line=line)


class RapporIOError(RapporError, OSError):
    """A file cannot be opened, read or written: missing, a directory, no permission, a full disk.

    Also an :class:`OSError`: ``errno`` is the operating system's error number when one
    caused it (``errno.ENOENT``, ``errno.EEXIST`` for a key file that already exists, ...),
    ``filename`` the file.  Its message always names the file.

    Parameters
    ----------
    message : str
        What failed and why (``"cannot read file: no such file"``).
    path : str or None, default=None
        The file's name as given by the user (``"<stdin>"``/``"<stdout>"`` for ``-``).
    errno : int or None, default=None
        The :mod:`errno` code, when the failure came from the operating system.
    """

    def __init__(self, message: str, *, path: str | None = None, errno: int | None = None) -> None:
        super().__init__(_located(message, path, None))
        self.message = message
        self.path = path
        self.errno = errno
        self.filename = path

    def __str__(self) -> str:
        return _located(self.message, self.path, None)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_rebuild_io_error, (self.message, self.path, self.errno))


def _rebuild_io_error(message: str, path: str | None, errno: int | None) -> RapporIOError:
    return RapporIOError(message, path=path, errno=errno)


class IncompatibleParamsError(RapporError, ValueError):
    """Two objects or files were made with different RAPPOR parameters."""


class CountOverflowError(RapporError, OverflowError):
    """Exact counts would leave the int64 range: a count, or the reports of all cohorts, above ``2**63 - 1``.

    Counts are added exactly or not at all (:meth:`rappor.Aggregate.merge`); this is
    raised instead of a wrapped-around negative number.  (A counts *file* holding such
    a number is a :class:`ReportFormatError` naming its line.)
    """


class DecodeError(RapporError):
    """The data cannot be decoded (for example, the parameters carry no information)."""


class InsufficientMemoryError(RapporError, MemoryError):
    """The parameters (or the number of candidates) need more memory than is available.

    Raised before allocating, with the estimate and the limit in the message, instead
    of a ``MemoryError`` (or ``ValueError: array is too big``) deep inside numpy or an
    out-of-memory kill that names no cause.  The limit comes from the machine (see
    :mod:`rappor._util.memory`) or from the ``RAPPOR_MEMORY_LIMIT`` environment variable.
    It subclasses :class:`MemoryError`, so code that catches that still catches it.
    """


class MissingDependencyError(RapporError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it.

    For example ``pyarrow is needed for Parquet reports: pip install 'rappor[parquet]'.``;
    every optional import goes through :mod:`rappor._util.lazy`, which raises it.  Also an
    :class:`ImportError`, so ``except ImportError`` catches it; ``name`` is the module
    that is missing.
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message, name=name)


class RapporWarning(UserWarning):
    """Base class of the warnings issued by :mod:`rappor`."""


class UnbalancedCohortsWarning(RapporWarning):
    """Report counts differ between cohorts beyond chance (a chi-square test of the reports per cohort)."""


class IndistinguishableCandidatesWarning(RapporWarning):
    """Some candidates set exactly the same bits in every cohort and cannot be told apart."""


class InsecureKeyFileWarning(RapporWarning):
    """A client key file can be read or changed by other users of the machine."""


class InsecureRandomnessWarning(RapporWarning):
    """Real client reports were made with numpy's seeded generator instead of the OS CSPRNG.

    Anyone who knows the seed can recompute the instantaneous noise and strip it: such
    reports are not private.  ``rappor encode --seed`` warns so.
    """


class ConvergenceWarning(RapporWarning):
    """An iterative fit (e.g. the association EM) stopped at its iteration cap before converging."""


class DeprecatedOptionWarning(RapporWarning, FutureWarning):
    """An option that will be removed, with why and what to use instead.

    A :class:`FutureWarning` too (Python's category for deprecations meant for end users),
    so it is shown by default; ``rappor`` commands always print it.
    """
