"""Errors and warnings raised by :mod:`rappor`.

The hierarchy::

    RapporError(Exception)
    ├── InvalidParameterError(RapporError, ValueError, TypeError)
    ├── ReportFormatError(RapporError, ValueError)      # carries path and line number
    ├── IncompatibleParamsError(RapporError, ValueError)
    ├── DecodeError(RapporError)                        # e.g. "Information is lost. Cannot decode."
    ├── InsufficientMemoryError(RapporError, MemoryError)  # refused before allocating
    └── MissingDependencyError(RapporError, ImportError)   # names the extra: pip install 'rappor[parquet]'

    RapporWarning(UserWarning)
    ├── UnbalancedCohortsWarning
    ├── IndistinguishableCandidatesWarning
    ├── InsecureKeyFileWarning
    └── InsecureRandomnessWarning

Every error a user can cause by passing bad data or bad parameters, or fix by
installing an optional extra, is a :class:`RapporError`; the command-line tool prints it as ``rappor: error: <msg>``
and exits with status 1, without a traceback.
"""

from __future__ import annotations

__all__ = [
    "DecodeError",
    "IncompatibleParamsError",
    "IndistinguishableCandidatesWarning",
    "InsecureKeyFileWarning",
    "InsecureRandomnessWarning",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "MissingDependencyError",
    "RapporError",
    "RapporWarning",
    "ReportFormatError",
    "UnbalancedCohortsWarning",
]


class RapporError(Exception):
    """Base class of every error raised for bad input, bad parameters or a missing optional dependency."""


class InvalidParameterError(RapporError, ValueError, TypeError):
    """A parameter has the wrong type or a value outside its allowed range.

    It subclasses both :class:`ValueError` and :class:`TypeError`, as
    scikit-learn's error of the same name does, so either can catch it.
    """


class ReportFormatError(RapporError, ValueError):
    """A file (reports, counts, map, params, candidates) does not have the expected form.

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
        where = ""
        if self.path is not None:
            where = f"{self.path}:"
            if self.line is not None:
                where += f"{self.line}:"
            where += " "
        return f"{where}{self.message}"

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_rebuild_report_format_error, (self.message, self.path, self.line))


def _rebuild_report_format_error(message: str, path: str | None, line: int | None) -> ReportFormatError:
    return ReportFormatError(message, path=path, line=line)


class IncompatibleParamsError(RapporError, ValueError):
    """Two objects or files were made with different RAPPOR parameters."""


class DecodeError(RapporError):
    """The data cannot be decoded (for example, the parameters carry no information)."""


class InsufficientMemoryError(RapporError, MemoryError):
    """The parameters (or the number of candidates) need more memory than is available.

    Raised before allocating, with the estimate and the limit in the message, instead
    of a ``MemoryError`` (or ``ValueError: array is too big``) deep inside numpy or an
    out-of-memory kill that names no cause.  The limit comes from the machine (see
    :mod:`rappor._memory`) or from the ``RAPPOR_MEMORY_LIMIT`` environment variable.
    It subclasses :class:`MemoryError`, so code that catches that still catches it.
    """


class MissingDependencyError(RapporError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it.

    For example ``pyarrow is needed for Parquet reports: pip install 'rappor[parquet]'.``  It
    subclasses :class:`ImportError`, so code that catches that still catches it.
    """


class RapporWarning(UserWarning):
    """Base class of the warnings issued by :mod:`rappor`."""


class UnbalancedCohortsWarning(RapporWarning):
    """Report counts differ between cohorts by more than N/m (google/rappor's check)."""


class IndistinguishableCandidatesWarning(RapporWarning):
    """Some candidates set exactly the same bits in every cohort and cannot be told apart."""


class InsecureKeyFileWarning(RapporWarning):
    """A client key file can be read or changed by other users of the machine."""


class InsecureRandomnessWarning(RapporWarning):
    """Real client reports were made with numpy's seeded generator instead of the OS CSPRNG.

    Anyone who knows the seed can recompute the instantaneous noise and strip it: such
    reports are not private.  ``rappor encode --seed`` warns so.
    """
