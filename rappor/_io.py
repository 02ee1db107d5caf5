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

from ._keyfile import looks_like_key_file, not_a_key_file_error
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


def read_input_bytes(path: PathLike, *, max_bytes: int | None = None, what: str = "this file") -> bytes:
    """Read all bytes of ``path`` (``-`` for standard input), with a clear error if it cannot be read.

    With ``max_bytes``, at most ``max_bytes + 1`` bytes are read and a longer input is an
    error ("expected ``what`` of at most N bytes"), so a huge file or ``/dev/zero`` costs
    a bounded read, not all the memory of the machine.
    """
    with open_input_binary(path) as fh:
        data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        msg = f"expected {what} of at most {max_bytes:,} bytes, found a larger file"
        raise ReportFormatError(msg, path=display_name(path))
    return data


@contextlib.contextmanager
def open_input_binary(path: PathLike) -> Iterator[IO[bytes]]:
    """Open ``path`` (or stdin for ``-``) for binary reading, with clear errors."""
    if str(path) == STDIO:
        try:
            yield sys.stdin.buffer
        except MemoryError:
            raise MemoryError("while reading <stdin>") from None
        return
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(p))
        fh = open(p, "rb")
    except OSError as exc:
        raise _os_error(path, exc) from None
    with fh:
        try:
            yield fh
        except MemoryError:
            # Name the file in the CLI's message (rappor.cli): the likeliest cause is in it.
            raise MemoryError(f"while reading {display_name(path)}") from None


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


#: Longest line :func:`iter_text_lines` reads by default (a bound on memory, not a format rule).
MAX_LINE_BYTES = 1 << 26


def iter_text_lines(path: PathLike, *, what: str | None = None,
                    max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of ``path`` (1-based, newline stripped).

    A UTF-8 byte-order mark and CRLF endings are accepted; invalid UTF-8 raises a
    :class:`ReportFormatError` naming the line.  Lines are read one at a time, each at
    most ``max_line_bytes`` long (a longer one is an error, so memory stays bounded even
    for ``/dev/zero``), and the caller may stop at the first bad one.

    With ``what`` (e.g. ``"a params file"``), a key file (:mod:`rappor._keyfile`) is
    refused as such, without quoting it: a first line that looks like a key is held
    back until a later non-blank line shows that the file is something else.
    """
    name = display_name(path)
    with open_input_binary(path) as fh:
        held: list[bytes] = []  # a key-like first line and the blank lines after it
        lineno = 0
        while True:
            raw = fh.readline(max_line_bytes + 1)
            if not raw:
                break
            lineno += 1
            if len(raw) > max_line_bytes:
                msg = f"expected a line of at most {max_line_bytes:,} bytes, found a longer one"
                raise ReportFormatError(msg, path=name, line=lineno)
            if what is not None and (lineno == 1 or held):
                held.append(raw)
                content = b"".join(held)
                if looks_like_key_file(content):
                    continue  # a key so far: see what follows
                held.pop()
                for number, line in enumerate(held, start=1):
                    yield number, decode_line(line, path, number)
                held.clear()
            yield lineno, decode_line(raw, path, lineno)
        if held:
            raise not_a_key_file_error(name, what or "this kind of file")


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
