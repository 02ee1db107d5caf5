"""Rows rejected by a reader running with ``on_error="skip"`` (private).

A reader given ``on_error="skip"`` does not stop at a bad data row: it leaves the row
out and hands a :class:`RejectedRow` (file, line, reason, the row's text, clipped to
:data:`rappor._util.excerpt.EXCERPT_CHARS` characters plus its length) to a sink,
any object with an ``append`` method: a plain ``list`` or a :class:`RejectsWriter`,
which streams them to a CSV file so that memory stays bounded however many rows are
bad.  The header of a file is never skipped: without it nothing else can be read.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import IO, Any, Literal, Protocol

from .csv_text import spreadsheet_text
from .excerpt import clip
from .paths import STDIO
from .validation import check_options
from ..exceptions import InvalidParameterError

__all__ = ["ON_ERROR_OPTIONS", "OnError", "RejectSink", "RejectedRow", "RejectsWriter", "check_on_error",
           "resolve_rejects_path"]

OnError = Literal["raise", "skip"]
ON_ERROR_OPTIONS: tuple[str, ...] = ("raise", "skip")

#: Header of a rejects file.
REJECTS_HEADER = ("file", "line", "reason", "row")


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedRow:
    """One data row left out by a reader.

    Attributes
    ----------
    path : str
        The file, as named in error messages (``<stdin>`` for standard input).
    line : int
        1-based line number.
    reason : str
        What was expected and what was found (the message the reader would have raised).
    text : str
        The row as read (undecodable bytes replaced by U+FFFD); a row longer than
        :data:`~rappor._util.excerpt.EXCERPT_CHARS` characters is kept as its start and its
        length (:func:`rappor._util.excerpt.clip`), so rejects stay small whatever the rows.
    """

    path: str
    line: int
    reason: str
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clip(self.text))


class RejectSink(Protocol):
    """Anything rejected rows can be appended to (``list`` qualifies)."""

    def append(self, row: RejectedRow, /) -> None: ...  # pragma: no cover - protocol


def check_on_error(on_error: Any, rejects: Any, owner: str) -> RejectSink | None:
    """Validate ``on_error``/``rejects``; return the sink to use, or ``None`` for fail-fast."""
    check_options(on_error, "on_error", owner, ON_ERROR_OPTIONS)
    if on_error == "raise":
        return None
    if rejects is None or not callable(getattr(rejects, "append", None)):
        msg = (f"The 'rejects' parameter of {owner} must be a list (or an object with an append method) "
               f"when on_error='skip'. Got {rejects!r} instead.")
        raise InvalidParameterError(msg)
    return rejects  # type: ignore[no-any-return]


def resolve_rejects_path(output: str, rejects: str | None, what: str) -> str:
    """The rejects file of a command run with ``--on-error skip``.

    ``--rejects PATH`` if given, else ``OUTPUT.rejects.csv``; when OUTPUT is standard
    output or not a regular file (``/dev/null``, a FIFO), ``--rejects`` is required
    (``what`` names the output in the message).
    """
    if rejects is not None:
        return rejects
    if output == STDIO:
        raise InvalidParameterError(f"--on-error skip with the {what} on stdout needs --rejects PATH.")
    if os.path.exists(output) and not os.path.isfile(output):  # /dev/null, a FIFO: no file to sit beside
        raise InvalidParameterError(f"--on-error skip with the {what} written to {output}, not a regular file, "
                                    f"needs --rejects PATH.")
    return f"{output}.rejects.csv"


class RejectsWriter:
    """Streams rejected rows to a CSV file ``file,line,reason,row`` as they arrive.

    Parameters
    ----------
    stream : file object
        An open text stream (e.g. from :func:`rappor._util.outputs.atomic_output`).
    """

    def __init__(self, stream: IO[str]) -> None:
        self._writer = csv.writer(stream, lineterminator="\n")
        self._writer.writerow(REJECTS_HEADER)
        self.count = 0

    def append(self, row: RejectedRow) -> None:
        """Write one rejected row."""
        # The row is what a client sent: a leading formula character is neutralised (rappor._util.csv_text.spreadsheet_text).
        self._writer.writerow((row.path, row.line, row.reason, spreadsheet_text(row.text)))
        self.count += 1
