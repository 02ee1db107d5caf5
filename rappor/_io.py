"""File plumbing shared by every reader and writer (private).

* :func:`atomic_output` writes to a temporary file beside the target and renames it
  into place only when the ``with`` block succeeds, so a failed run never leaves a
  half-written output (``-`` writes to standard output).
* :func:`read_input_bytes` and :func:`iter_text_lines` read a path or ``-`` (stdin),
  accept a UTF-8 byte-order mark and CRLF line endings, and turn every failure into a
  :class:`~rappor.exceptions.ReportFormatError` naming the file (and line).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Union

from .exceptions import ReportFormatError

PathLike = Union[str, "os.PathLike[str]"]

STDIO = "-"

__all__ = ["PathLike", "atomic_output", "csv_field", "display_name", "iter_text_lines", "read_input_bytes"]


def display_name(path: PathLike | None) -> str:
    """Name of ``path`` as shown in error messages (``<stdin>``/``<stdout>`` for ``-``)."""
    if path is None or str(path) == STDIO:
        return "<stdin>"
    return os.fspath(path)


def _os_error(path: PathLike, exc: OSError) -> ReportFormatError:
    reason = exc.strerror or exc.__class__.__name__
    if isinstance(exc, IsADirectoryError):
        reason = "is a directory, expected a file"
    elif isinstance(exc, FileNotFoundError):
        reason = "no such file"
    elif isinstance(exc, PermissionError):
        reason = "permission denied"
    return ReportFormatError(f"cannot read file: {reason}", path=display_name(path))


def read_input_bytes(path: PathLike) -> bytes:
    """Read all bytes of ``path`` (``-`` for standard input), with a clear error if it cannot be read."""
    if str(path) == STDIO:
        return sys.stdin.buffer.read()
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(p))
        return p.read_bytes()
    except OSError as exc:
        raise _os_error(path, exc) from None


@contextlib.contextmanager
def open_input_binary(path: PathLike) -> Iterator[IO[bytes]]:
    """Open ``path`` (or stdin for ``-``) for binary reading, with clear errors."""
    if str(path) == STDIO:
        yield sys.stdin.buffer
        return
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(p))
        fh = open(p, "rb")
    except OSError as exc:
        raise _os_error(path, exc) from None
    with fh:
        yield fh


def decode_line(raw: bytes, path: PathLike, lineno: int) -> str:
    """Decode one line of UTF-8 (BOM on line 1 dropped, trailing CR/LF stripped)."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"expected UTF-8 text, found the byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
        raise ReportFormatError(msg, path=display_name(path), line=lineno) from None


def iter_text_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of ``path`` (1-based, newline stripped).

    A UTF-8 byte-order mark and CRLF endings are accepted; invalid UTF-8 raises a
    :class:`ReportFormatError` naming the line.
    """
    with open_input_binary(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            yield lineno, decode_line(raw, path, lineno)


class _AtomicFile:
    def __init__(self, path: Path, mode: str, newline: str | None) -> None:
        self.path = path
        directory = path.parent if str(path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        self.tmp = Path(tmp)
        if "b" in mode:
            self.fh: IO[Any] = os.fdopen(fd, mode)
        else:
            self.fh = os.fdopen(fd, mode, encoding="utf-8", newline=newline)

    def commit(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        # Keep the usual permissions of a new file (mkstemp makes it 0600).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.tmp, 0o666 & ~umask)
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            self.tmp.unlink()


@contextlib.contextmanager
def atomic_output(path: PathLike | None, *, binary: bool = False, newline: str | None = "") -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears complete or not at all.

    Parameters
    ----------
    path : str, os.PathLike or None
        Target file; ``None`` or ``"-"`` writes to standard output (not atomic).
    binary : bool, default=False
        Open in binary mode.
    newline : str or None, default=""
        Passed to :func:`open` in text mode (``""`` writes ``\\n`` as given).

    Yields
    ------
    file object
        Write to it; the file is renamed into place when the block exits without error.
    """
    if path is None or str(path) == STDIO:
        stream: IO[Any] = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    target = Path(path)
    if target.is_dir():
        raise ReportFormatError("cannot write file: is a directory", path=os.fspath(path))
    try:
        handle = _AtomicFile(target, "wb" if binary else "w", None if binary else newline)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise ReportFormatError(f"cannot write file: {reason}", path=os.fspath(path)) from None
    try:
        yield handle.fh
    except BaseException:
        handle.abort()
        raise
    try:
        handle.commit()
    except OSError as exc:
        handle.abort()
        reason = exc.strerror or exc.__class__.__name__
        raise ReportFormatError(f"cannot write file: {reason}", path=os.fspath(path)) from None


def text_buffer() -> io.StringIO:
    """A fresh in-memory text buffer (used to render CSV before an atomic write)."""
    return io.StringIO(newline="")


def csv_field(text: str) -> str:
    """``text`` as one field of a written CSV row (``results.csv``, ``truth.csv``).

    Quoted, with quotes doubled, when it holds a comma, a quote or a line break (``\r``
    or ``\n``), or starts or ends with white space (which some readers strip); bare
    otherwise.  The csv module and R's ``read.csv`` read it back exactly.
    """
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text
