"""File plumbing shared by every reader and writer (private).

* :func:`atomic_output` writes to a temporary file beside the target and renames it
  into place only when the ``with`` block succeeds, so a failed run never leaves a
  half-written output (``-`` writes to standard output); it renames over regular files
  only (keeping their permission bits), and writes devices and FIFOs straight.
* :func:`check_distinct_files` refuses a command whose output is the same file as one
  of its inputs or another output (compared by device and inode).
* :func:`refuse_replacing_key` refuses an output that would replace a key file (by its
  content, whatever its name, through symbolic and hard links): :func:`atomic_output`
  calls it before it writes, and the command line before a command runs, so no command
  but ``rappor keygen --force`` ever replaces a key.
* :func:`remove_temporary_files` deletes uncommitted temporary outputs after a signal.
* :func:`read_input_bytes` and :func:`iter_text_lines` read a path or ``-`` (stdin),
  accept a UTF-8 byte-order mark and CRLF line endings, and turn bad content into a
  :class:`~rappor.exceptions.ReportFormatError` naming the file (and line).

A file that cannot be opened, read or written is a
:class:`~rappor.exceptions.RapporIOError` naming it (with the ``errno`` that caused it).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Union

from .keyfile import MAX_KEY_FILE_BYTES, looks_like_key_file, not_a_key_file_error
from ..exceptions import InvalidParameterError, RapporError, RapporIOError, ReportFormatError

PathLike = Union[str, "os.PathLike[str]"]

STDIO = "-"

__all__ = ["FORMULA_TRIGGERS", "PathLike", "atomic_output", "check_distinct_files", "check_output_directory",
           "csv_field", "csv_text_field", "display_name", "file_identity", "forget_created_directories",
           "iter_text_lines", "output_directory", "output_target", "read_input_bytes", "refuse_replacing_key",
           "remove_temporary_files", "restore_text", "spreadsheet_text"]


def display_name(path: PathLike | None) -> str:
    """Name of ``path`` as shown in error messages (``<stdin>``/``<stdout>`` for ``-``)."""
    if path is None or str(path) == STDIO:
        return "<stdin>"
    return os.fspath(path)


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
    with _naming_write_errors(os.fspath(path)), fh:
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


#: Temporary files of outputs not yet committed: removed by :func:`remove_temporary_files`
#: after a signal, even one that arrived while a file was being created.
_PENDING: set[Path] = set()


#: Output directories this process created (:func:`output_directory`), parents first.
_CREATED_DIRECTORIES: list[Path] = []


def remove_temporary_files() -> None:
    """Delete every temporary output file of this process that was neither committed nor aborted,
    and every output directory it created that is still empty (a run stopped before writing into it)."""
    for tmp in list(_PENDING):
        with contextlib.suppress(OSError):
            tmp.unlink()
        _PENDING.discard(tmp)
    for directory in reversed(_CREATED_DIRECTORIES):
        with contextlib.suppress(OSError):  # not empty (outputs were committed there), or gone
            directory.rmdir()
    forget_created_directories()


def forget_created_directories() -> None:
    """Keep the output directories created so far whatever happens next (a command that ran to its end)."""
    _CREATED_DIRECTORIES.clear()


def _create_temporary(directory: Path, name: str) -> tuple[int, Path]:
    """Create ``directory/.NAME.RANDOM.tmp`` (mode 0600) and register it in :data:`_PENDING`.

    The name is registered before the file exists, so a signal handler that runs at any
    point after creation finds it (what :func:`tempfile.mkstemp` cannot offer).
    """
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(8)}.tmp"
        _PENDING.add(tmp)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), tmp
        except FileExistsError:  # pragma: no cover - 64 random bits
            _PENDING.discard(tmp)
        except OSError:  # nothing was created (a signal, by contrast, leaves the name registered)
            _PENDING.discard(tmp)
            raise
    raise FileExistsError(17, "no unused temporary file name", os.fspath(directory))  # pragma: no cover


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


class _AtomicFile:
    """A temporary file beside ``path``, renamed over it by :meth:`commit`.

    The file gets ``mode`` (the replaced file's permission bits, or those of a new
    file) before it is renamed; ``owner`` (uid, gid) is restored where allowed.
    """

    def __init__(self, path: Path, mode: str, newline: str | None, *, file_mode: int,
                 owner: tuple[int, int] | None) -> None:
        self.path = path
        directory = path.parent if str(path.parent) else Path(".")
        fd, self.tmp = _create_temporary(directory, path.name)
        self.file_mode = file_mode
        self.owner = owner
        if "b" in mode:
            self.fh: IO[Any] = os.fdopen(fd, mode)
        else:
            self.fh = os.fdopen(fd, mode, encoding="utf-8", newline=newline)

    def commit(self) -> None:
        self.fh.flush()
        fd = self.fh.fileno()
        if self.owner is not None and hasattr(os, "fchown"):
            # Only root (or the owner, for a group it belongs to) may do this: best effort.
            with contextlib.suppress(OSError):
                os.fchown(fd, *self.owner)
        os.fchmod(fd, self.file_mode)
        os.fsync(fd)
        self.fh.close()
        os.replace(self.tmp, self.path)
        _PENDING.discard(self.tmp)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            self.tmp.unlink()
        _PENDING.discard(self.tmp)


def _write_error(path: PathLike, exc: OSError) -> RapporIOError:
    reason = exc.strerror or exc.__class__.__name__
    return RapporIOError(f"cannot write file: {reason}", path=os.fspath(path), errno=exc.errno)


def _same_file_as_stdout(st: os.stat_result) -> bool:
    try:
        out = os.fstat(sys.stdout.fileno())
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return False
    return (out.st_dev, out.st_ino) == (st.st_dev, st.st_ino)


def output_target(path: PathLike) -> tuple[str, Path, os.stat_result | None]:
    """How an output named ``path`` is written: ``(how, where, the file there now or None)``.

    ``how`` is ``"stdout"`` (``-``, or a path naming the file standard output is
    redirected to, such as ``/dev/stdout``), ``"straight"`` (a character device such as
    ``/dev/null``, or a FIFO: opened and written as they are) or ``"replace"`` (a
    regular file, or nothing yet: written atomically).  Symbolic links are followed: a
    replaced file is the link's target (a dangling link creates the path it names), and
    the link stays.

    Raises
    ------
    RapporIOError
        If the target is a directory, or another kind of special file (a block device, a socket).
    """
    if str(path) == STDIO:
        return "stdout", Path(STDIO), None
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _write_error(path, exc) from None
    if st is None:
        return "replace", Path(os.path.realpath(path)), None
    if stat.S_ISDIR(st.st_mode):
        raise RapporIOError("cannot write file: is a directory", path=os.fspath(path), errno=errno.EISDIR)
    if _same_file_as_stdout(st):
        return "stdout", Path(STDIO), st
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "straight", Path(path), st
    if not stat.S_ISREG(st.st_mode):
        msg = "cannot write file: not a regular file, a character device or a FIFO"
        raise RapporIOError(msg, path=os.fspath(path))
    return "replace", Path(os.path.realpath(path)), st


def refuse_replacing_key(path: PathLike) -> None:
    """Refuse to write an output over ``path`` if the regular file there holds a client key.

    The file is recognised by its content (:func:`rappor._keyfile.looks_like_key_file`),
    so its name does not matter, and a symbolic or hard link to a key is a key.  Only the
    first bytes are read (a key file is short); nothing of it is quoted.  A file that
    cannot be read cannot be shown not to be a key, and is refused too.  Standard output,
    devices, FIFOs and paths that do not exist yet pass.

    Raises
    ------
    RapporIOError
        If ``path`` names a key file (``errno.EEXIST``) or an unreadable regular file.
    """
    if str(path) == STDIO:
        return
    try:
        st = os.stat(path)
    except OSError:
        return  # nothing there (or nothing reachable): output_target says what is wrong
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_KEY_FILE_BYTES + 3:
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(MAX_KEY_FILE_BYTES + 4)
    except OSError as exc:
        msg = (f"refusing to replace a file that cannot be read ({exc.strerror or exc}): it could be a key file; "
               f"remove it or choose another output")
        raise RapporIOError(msg, path=os.fspath(path), errno=exc.errno) from None
    if looks_like_key_file(head):
        msg = ("refusing to replace a key file (written by rappor keygen): choose another output, "
               "or remove the key yourself if it is no longer needed")
        raise RapporIOError(msg, path=os.fspath(path), errno=errno.EEXIST)


@contextlib.contextmanager
def _naming_write_errors(name: str) -> Iterator[None]:
    """Turn a failed flush or close of a stream (full disk, stream opened for reading) into an error naming it.

    A reader that went away (:class:`BrokenPipeError`) passes through: the CLI stops quietly.
    """
    try:
        yield
    except (BrokenPipeError, RapporError):
        raise
    except OSError as exc:
        raise RapporIOError(f"cannot write: {exc.strerror or exc}", path=name, errno=exc.errno) from None


class _NamedWrites:
    """A writable stream whose failed writes raise :class:`RapporIOError` naming it.

    An output is often written while an input is being read (``with open_input_binary(...)``
    outside, ``with atomic_output(...)`` inside): a full disk, ``> /dev/full`` or a closed
    standard output then surfaced as a bare ``OSError`` that the input's handler named
    ("INPUT: cannot read file: No space left on device").  The error is named where it
    happens instead.  A reader that went away (:class:`BrokenPipeError`) passes through.
    Everything else is the stream's own.
    """

    def __init__(self, stream: IO[Any], name: str, wording: str) -> None:
        self._stream = stream
        self._name = name
        self._wording = wording

    def _failed(self, exc: OSError) -> RapporIOError:
        return RapporIOError(f"{self._wording}: {exc.strerror or exc}", path=self._name, errno=exc.errno)

    def write(self, data: Any) -> int:
        try:
            return int(self._stream.write(data))
        except (BrokenPipeError, RapporError):
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (BrokenPipeError, RapporError):
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _stdout(binary: bool) -> IO[Any]:
    stream: Any = sys.stdout
    if stream is None:  # the process was started with its standard output closed (`>&-`)
        raise RapporIOError("cannot write: standard output is closed", path="<stdout>", errno=errno.EBADF)
    return stream.buffer if binary else stream  # type: ignore[no-any-return]


@contextlib.contextmanager
def atomic_output(path: PathLike | None, *, binary: bool = False, newline: str | None = "",
                  private: bool = False) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears complete or not at all.

    Parameters
    ----------
    path : str, os.PathLike or None
        Target file; ``None`` or ``"-"`` writes to standard output (not atomic).
    binary : bool, default=False
        Open in binary mode.
    newline : str or None, default=""
        Passed to :func:`open` in text mode (``""`` writes ``\\n`` as given).
    private : bool, default=False
        The output holds private values (e.g. raw client values): a new file is
        created with mode 0600, and a replaced file keeps at most its owner's bits.

    Yields
    ------
    file object
        Write to it; the file is renamed into place when the block exits without error.

    Notes
    -----
    Only regular files are replaced, by renaming a temporary file written beside them
    (which never leaves a half-written output); the replaced file's permission bits
    (and, where allowed, owner and group) carry over, and a new file gets the usual
    ``0666 & ~umask``.  A symbolic link is followed: its target is replaced, the link
    stays.  Character devices (``/dev/null``, a terminal) and FIFOs are written
    straight, never renamed over; other special files are refused.  A path naming the
    file standard output goes to (``/dev/stdout``) writes to standard output.

    Any other existing file is replaced, except a key file, which no output ever
    replaces (:func:`refuse_replacing_key`).
    """
    if path is None:
        path = STDIO
    how, target, st = output_target(path)
    if how == "replace" and st is not None:
        refuse_replacing_key(path)
    if how == "stdout":
        stream = _stdout(binary)
        yield _NamedWrites(stream, "<stdout>", "cannot write")  # type: ignore[misc]
        with _naming_write_errors("<stdout>"):
            stream.flush()
        return
    if how == "straight":
        yield from _write_straight(path, target, binary, newline)
        return
    if st is not None:
        file_mode = stat.S_IMODE(st.st_mode) & 0o777
        owner: tuple[int, int] | None = (st.st_uid, st.st_gid)
    else:
        file_mode = 0o666 & ~_umask()
        owner = None
    if private:
        file_mode &= 0o600
    try:
        handle = _AtomicFile(target, "wb" if binary else "w", None if binary else newline,
                             file_mode=file_mode, owner=owner)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        yield _NamedWrites(handle.fh, os.fspath(path), "cannot write file")  # type: ignore[misc]
    except BaseException:
        handle.abort()
        raise
    try:
        handle.commit()
    except BaseException as exc:
        handle.abort()
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


def _write_straight(path: PathLike, target: Path, binary: bool, newline: str | None) -> Iterator[IO[Any]]:
    """Write to a character device or FIFO as it is (opened without O_CREAT or O_TRUNC)."""
    try:
        fd = os.open(target, os.O_WRONLY)
    except OSError as exc:
        raise _write_error(path, exc) from None
    if binary:
        fh: IO[Any] = os.fdopen(fd, "wb")
    else:
        fh = os.fdopen(fd, "w", encoding="utf-8", newline=newline)
    with _naming_write_errors(os.fspath(path)), fh:
        yield _NamedWrites(fh, os.fspath(path), "cannot write")  # type: ignore[misc]


def check_output_directory(path: PathLike) -> Path:
    """Refuse an output directory ``path`` that exists as something else, before any work; return it.

    Raises
    ------
    RapporIOError
        If ``path`` exists and is not a directory (``errno.ENOTDIR``), or is ``"-"``
        (``errno.EINVAL``): a directory of outputs cannot be standard output, and a
        directory named ``-`` created in silence is not what ``-`` means elsewhere.
    """
    if os.fspath(path) == "-":
        raise RapporIOError("cannot write the outputs: '-' (standard output) is not a directory; "
                            "name a directory (./- for one called '-')", path="-", errno=errno.EINVAL)
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise RapporIOError("cannot write the outputs: exists and is not a directory", path=os.fspath(out),
                            errno=errno.ENOTDIR)
    return out


def output_directory(path: PathLike) -> Path:
    """Create the directory ``path`` (and its parents) that a command writes its outputs into; return it.

    A directory created here that is still empty when the command stops on an error or
    a signal is removed (:func:`remove_temporary_files`): an interrupted run leaves no
    empty ``--out`` directory behind.

    Raises
    ------
    RapporIOError
        If ``path`` exists and is not a directory, or cannot be created.
    """
    out = check_output_directory(path)
    missing = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        _CREATED_DIRECTORIES.extend(reversed(missing))
    except OSError as exc:
        raise RapporIOError(f"cannot create the output directory: {exc.strerror or exc}", path=os.fspath(out),
                            errno=exc.errno) from None
    return out


def text_buffer() -> io.StringIO:
    """A fresh in-memory text buffer (used to render CSV before an atomic write)."""
    return io.StringIO(newline="")


def _stream_identity(stream: Any, name: str) -> frozenset[tuple[Any, ...]]:
    """Keys of a standard stream: its name, and its file when it is a regular file."""
    keys: set[tuple[Any, ...]] = {("stream", name)}
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return frozenset(keys)
    if stat.S_ISREG(st.st_mode):
        keys.add(("file", st.st_dev, st.st_ino))
    return frozenset(keys)


def file_identity(path: PathLike, *, output: bool) -> frozenset[tuple[Any, ...]]:
    """Keys identifying the file ``path`` names: two paths name the same file iff their keys meet.

    An existing file is known by its device and inode (which sees through symbolic links,
    hard links and ``..``); a path that does not exist yet by its resolved form.  ``-`` is
    standard output (``output=True``) or input, plus the file it is redirected to.  A
    character device (``/dev/null``, a terminal) has no keys: writing it twice, or reading
    and writing it, destroys nothing.
    """
    if str(path) == STDIO:
        return _stream_identity(sys.stdout, "stdout") if output else _stream_identity(sys.stdin, "stdin")
    try:
        st = os.stat(path)
    except OSError:
        return frozenset({("path", os.path.realpath(path))})
    if stat.S_ISCHR(st.st_mode):
        return frozenset()
    return frozenset({("file", st.st_dev, st.st_ino)})


def _shown(role: str, path: PathLike, output: bool) -> str:
    if str(path) == STDIO:
        return f"{role} {'<stdout>' if output else '<stdin>'}"
    return f"{role} {os.fspath(path)}"


def check_distinct_files(inputs: Sequence[tuple[str, PathLike]], outputs: Sequence[tuple[str, PathLike]], *,
                         summed: Sequence[tuple[str, PathLike]] = ()) -> None:
    """Refuse a command whose paths would make it destroy an input or mix two outputs.

    Parameters
    ----------
    inputs : sequence of (role, path)
        Files the command reads, with the option that names them (``"--key-file"``).
    outputs : sequence of (role, path)
        Files it writes (``"-o"``, ``"--rejects"``, ...).
    summed : sequence of (role, path), default=()
        Inputs whose contents are added up (``sum-bits`` REPORTS): giving one file twice
        would count it twice, so these must be distinct from each other too.

    Raises
    ------
    InvalidParameterError
        If an output is the same file (see :func:`file_identity`) as an input, as another
        output, or if two summed inputs are the same file; the message names both paths.
    """
    # One pass over the paths with a table from each identity key to the first path that has
    # it: linear in the number of paths (pairwise comparisons took 4 s for 10,000 inputs).
    read: dict[tuple[Any, ...], tuple[int, str, PathLike]] = {}
    summed_keys = [(role, path, file_identity(path, output=False)) for role, path in summed]
    for i, (role, path) in enumerate(inputs):
        _remember(read, file_identity(path, output=False), (i, role, path))
    for i, (role, path, keys) in enumerate(summed_keys, start=len(inputs)):
        _remember(read, keys, (i, role, path))
    written: dict[tuple[Any, ...], tuple[int, str, PathLike]] = {}
    for i, (role, path) in enumerate(outputs):
        keys = file_identity(path, output=True)
        _refuse_shared(read, keys, (role, path, True), False, "refusing to overwrite an input")
        _refuse_shared(written, keys, (role, path, True), True, "two outputs cannot share a file")
        _remember(written, keys, (i, role, path))
    seen: dict[tuple[Any, ...], tuple[int, str, PathLike]] = {}
    for i, (role, path, keys) in enumerate(summed_keys):
        _refuse_shared(seen, keys, (role, path, False), False, "it would be counted twice")
        _remember(seen, keys, (i, role, path))


def _refuse_shared(table: dict[tuple[Any, ...], tuple[int, str, PathLike]], keys: frozenset[tuple[Any, ...]],
                   path: tuple[str, PathLike, bool], owner_is_output: bool, why: str) -> None:
    """Raise if a path in ``table`` has one of ``keys``: "``path`` is the same file as ``owner``: ``why``"."""
    first = _first_owner(table, keys)
    if first is not None:
        role, name, output = path
        msg = f"{_shown(role, name, output)} is the same file as {_shown(first[1], first[2], owner_is_output)}: {why}"
        raise InvalidParameterError(msg)


def _remember(table: dict[tuple[Any, ...], tuple[int, str, PathLike]], keys: frozenset[tuple[Any, ...]],
              owner: tuple[int, str, PathLike]) -> None:
    """Record ``owner`` (position, role, path) for each of ``keys`` not yet in ``table``."""
    for key in keys:
        table.setdefault(key, owner)


def _first_owner(table: dict[tuple[Any, ...], tuple[int, str, PathLike]], keys: frozenset[tuple[Any, ...]],
                 ) -> tuple[int, str, PathLike] | None:
    """The earliest recorded path sharing one of ``keys``, or None."""
    owners = [table[key] for key in keys if key in table]
    return min(owners, key=lambda owner: owner[0]) if owners else None


def csv_field(text: str) -> str:
    """``text`` as one field of a written CSV row (``results.csv``, ``truth.csv``).

    Quoted, with quotes doubled, when it holds a comma, a quote or a line break (``\r``
    or ``\n``), or starts or ends with white space (which some readers strip); bare
    otherwise.  The csv module and R's ``read.csv`` read it back exactly.
    """
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


#: First characters that make a spreadsheet take a cell for a formula (OWASP, "CSV Injection"):
#: ``= + - @``, tab and carriage return.
FORMULA_TRIGGERS = frozenset("=+-@\t\r")


def spreadsheet_text(text: str) -> str:
    """``text`` as a cell a spreadsheet shows as text: ``'`` prepended when it could start a formula.

    Following OWASP's CSV-injection guidance, a value that starts with a formula trigger
    (:data:`FORMULA_TRIGGERS`) gets a leading single quote, so ``=cmd|' /C calc'!A0`` is
    written ``'=cmd|' /C calc'!A0``.  So that every value reads back exactly
    (:func:`restore_text`), a value that starts with one or more quotes followed by a
    trigger gets one quote more; every other value is written as it is (google/rappor's
    files read the same).

    Examples
    --------
    >>> spreadsheet_text("=SUM(A1)"), spreadsheet_text("'=x"), spreadsheet_text("it's")
    ("'=SUM(A1)", "''=x", "it's")
    """
    rest = text.lstrip("'")
    return "'" + text if rest and rest[0] in FORMULA_TRIGGERS else text


def restore_text(cell: str) -> str:
    """The value :func:`spreadsheet_text` wrote as ``cell``: one leading quote before ``'*`` and a trigger removed.

    Examples
    --------
    >>> restore_text("'=SUM(A1)"), restore_text("''=x"), restore_text("'tis"), restore_text("-1")
    ('=SUM(A1)', "'=x", "'tis", '-1')
    """
    rest = cell.lstrip("'")
    return cell[1:] if cell.startswith("'") and rest and rest[0] in FORMULA_TRIGGERS else cell


def csv_text_field(text: str) -> str:
    """A client-controlled string (a candidate, a discovered value) as one CSV field people may open.

    :func:`spreadsheet_text`, then :func:`csv_field`; our readers undo it with :func:`restore_text`.
    """
    return csv_field(spreadsheet_text(text))
