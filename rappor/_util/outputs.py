"""Writing outputs (private): complete or not at all, never over a key.

* :func:`atomic_output` writes to a temporary file beside the target and renames it
  into place only when the ``with`` block succeeds, so a failed run never leaves a
  half-written output (``-`` writes to standard output); it renames over regular files
  only (keeping their permission bits), and writes devices and FIFOs straight.
* :func:`refuse_replacing_key` refuses an output that would replace a key file (by its
  content, whatever its name, through symbolic and hard links): :func:`atomic_output`
  calls it before it writes, and the command line before a command runs, so no command
  but ``rappor keygen --force`` ever replaces a key.
* :func:`outputs_together` makes the outputs written inside it one set: each is complete
  on disk (written, flushed, synced) before any is renamed into place, so a failure
  while writing any of them (a full disk, a bad path) leaves none of the new files.
* :func:`output_directory` creates a command's output directory;
  :func:`remove_temporary_files` deletes uncommitted temporary outputs (and directories
  left empty) after a signal.

A file that cannot be written is a :class:`~rappor.exceptions.RapporIOError` naming it
(with the ``errno`` that caused it).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..exceptions import RapporError, RapporIOError
from .keyfile import MAX_KEY_FILE_BYTES, looks_like_key_file
from .paths import STDIO, PathLike

__all__ = ["atomic_output", "check_output_directory", "forget_created_directories", "naming_write_errors",
           "output_directory", "output_target", "outputs_together", "refuse_replacing_key", "remove_temporary_files"]


#: Temporary files of outputs not yet committed: removed by :func:`remove_temporary_files`
#: after a signal, even one that arrived while a file was being created.
_PENDING: set[Path] = set()


#: The outputs of an open :func:`outputs_together`, written and synced, waiting to be renamed.
_TOGETHER: list[_AtomicFile] | None = None


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
    """A temporary file beside ``path``: :meth:`finish` writes and syncs it, :meth:`rename` puts it over ``path``.

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

    def finish(self) -> None:
        """Write everything to the temporary file and sync it (what can fail for lack of space)."""
        self.fh.flush()
        fd = self.fh.fileno()
        if self.owner is not None and hasattr(os, "fchown"):
            # Only root (or the owner, for a group it belongs to) may do this: best effort.
            with contextlib.suppress(OSError):
                os.fchown(fd, *self.owner)
        os.fchmod(fd, self.file_mode)
        os.fsync(fd)
        self.fh.close()

    def rename(self) -> None:
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
def naming_write_errors(name: str) -> Iterator[None]:
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
    if binary:
        return stream.buffer  # type: ignore[no-any-return]
    # The files' encoding, whatever the locale's: `-o -` writes what the file would hold
    # (an ASCII or cp1252 standard output cannot encode every value otherwise).
    encoding = str(getattr(stream, "encoding", "utf-8") or "utf-8").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8") and hasattr(stream, "reconfigure"):
        stream.reconfigure(encoding="utf-8")
    return stream  # type: ignore[no-any-return]


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
        with naming_write_errors("<stdout>"):
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
        handle.finish()
        if _TOGETHER is not None:  # renamed with the rest of the set
            _TOGETHER.append(handle)
            return
        handle.rename()
    except BaseException as exc:
        handle.abort()
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


@contextlib.contextmanager
def outputs_together() -> Iterator[None]:
    """The :func:`atomic_output` files written inside the block appear together or not at all.

    Each is written and synced to its temporary file when its own block ends; none is
    renamed into place until this block ends without error, and an error anywhere in it
    removes them all.  (Renaming is the one step left after the block: it needs no space.)
    Nested inside another, a block joins the outer set.
    """
    global _TOGETHER
    if _TOGETHER is not None:
        yield
        return
    _TOGETHER = []
    try:
        yield
    except BaseException:
        for handle in _TOGETHER:
            handle.abort()
        _TOGETHER = None
        raise
    pending, _TOGETHER = _TOGETHER, None
    for i, handle in enumerate(pending):
        try:
            handle.rename()
        except OSError as exc:
            for rest in pending[i:]:
                rest.abort()
            raise _write_error(handle.path, exc) from None


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
    with naming_write_errors(os.fspath(path)), fh:
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
    # Registered before they exist (removing one that was never made is a no-op): a signal that
    # lands just after mkdir, before a later registration, would leave them behind.
    _CREATED_DIRECTORIES.extend(reversed(missing))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RapporIOError(f"cannot create the output directory: {exc.strerror or exc}", path=os.fspath(out),
                            errno=exc.errno) from None
    return out
