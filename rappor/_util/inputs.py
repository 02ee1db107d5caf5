"""Reading inputs (private): a path or ``-`` (standard input), with errors that name the file.

* :func:`read_input_bytes` reads a whole (bounded) input; :func:`iter_text_lines` reads
  text line by line, accepting a UTF-8 byte-order mark and CRLF line endings, and turns
  bad content into a :class:`~rappor.exceptions.ReportFormatError` naming the file and line.
* :func:`read_first_line` peeks at the first line of any input, a pipe included, and
  :func:`open_input_binary` then reads it from its start.

A file that cannot be opened or read is a :class:`~rappor.exceptions.RapporIOError`
naming it (with the ``errno`` that caused it).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..exceptions import RapporError, RapporIOError, ReportFormatError
from .keyfile import looks_like_key_file, not_a_key_file_error
from .outputs import naming_write_errors
from .paths import STDIO, PathLike, display_name

__all__ = ["MAX_LINE_BYTES", "decode_line", "iter_text_lines", "open_input_binary", "read_first_line",
           "read_input_bytes"]


def _os_error(path: PathLike, exc: OSError) -> RapporIOError:
    reason = exc.strerror or exc.__class__.__name__
    if isinstance(exc, IsADirectoryError):
        reason = "is a directory, expected a file"
    elif isinstance(exc, FileNotFoundError):
        reason = "no such file"
    elif isinstance(exc, PermissionError):
        reason = "permission denied"
    return RapporIOError(f"cannot read file: {reason}", path=display_name(path), errno=exc.errno)


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


class _Prefixed(io.RawIOBase):
    """The bytes ``prefix``, then the rest of the stream ``fh``: a stream whose start was read already."""

    def __init__(self, prefix: bytes, fh: IO[bytes], *, close_fh: bool) -> None:
        super().__init__()
        self._prefix = prefix
        self._fh = fh
        self._close_fh = close_fh

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        read1 = getattr(self._fh, "read1", self._fh.read)
        data = read1(len(view))
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._close_fh and not self.closed:
            self._fh.close()
        super().close()


#: Streams whose first line :func:`read_first_line` took, handed whole to the next opening
#: of the same path (a pipe or FIFO cannot be read twice).
_STARTED: dict[str, io.BufferedReader] = {}


def _open_raw(path: PathLike) -> IO[bytes]:
    """Open ``path`` (or stdin for ``-``) for binary reading, or raise the error that names it."""
    if str(path) == STDIO:
        if sys.stdin is None:  # the process was started with its standard input closed (`0<&-`)
            raise RapporIOError("cannot read: standard input is closed", path="<stdin>", errno=errno.EBADF)
        return sys.stdin.buffer
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(p))
        return open(p, "rb")
    except OSError as exc:
        raise _os_error(path, exc) from None


def read_first_line(path: PathLike, max_bytes: int = 1 << 16) -> bytes:
    """The first line of ``path`` (at most ``max_bytes`` bytes), leaving the input whole for its reader.

    A regular file is opened for the line and closed.  Anything else (standard input, a
    pipe such as ``<(cat f)``, a FIFO, a device) can be read only once: its stream stays
    open and the next :func:`open_input_binary` of the same path reads it from the start,
    this line included.
    """
    key = os.fspath(path)
    if key in _STARTED:
        stream = _STARTED[key]
        data = stream.peek(max_bytes)[:max_bytes]
        return data[:data.find(b"\n") + 1] if b"\n" in data else data
    if key != STDIO:
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.stat(key).st_mode):
                with open_input_binary(path) as fh:
                    return fh.readline(max_bytes)
    fh = _open_raw(path)
    try:
        line = fh.readline(max_bytes)
    except OSError as exc:
        if fh is not sys.stdin.buffer:
            fh.close()
        raise _os_error(path, exc) from None
    _STARTED[key] = io.BufferedReader(_Prefixed(line, fh, close_fh=key != STDIO), buffer_size=max(max_bytes, 8192))
    return line


@contextlib.contextmanager
def open_input_binary(path: PathLike) -> Iterator[IO[bytes]]:
    """Open ``path`` (or stdin for ``-``) for binary reading, with clear errors.

    A stream whose first line :func:`read_first_line` took is read from its start.
    """
    started = _STARTED.pop(os.fspath(path), None)
    if str(path) == STDIO:
        stdin = started if started is not None else _open_raw(path)
        try:
            yield stdin
        except MemoryError:
            raise MemoryError("while reading <stdin>") from None
        return
    fh = started if started is not None else _open_raw(path)
    with naming_write_errors(os.fspath(path)), fh:
        try:
            yield fh
        except MemoryError:
            # Name the file in the CLI's message (rappor.cli._main): the likeliest cause is in it.
            raise MemoryError(f"while reading {display_name(path)}") from None
        except RapporError:
            raise  # already names its file
        except OSError as exc:  # a failed read (EIO ...): "cannot read file", not the write wording above
            if isinstance(exc, BrokenPipeError):
                raise
            raise _os_error(path, exc) from None


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

    With ``what`` (e.g. ``"a params file"``), a key file (:mod:`rappor._util.keyfile`) is
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
