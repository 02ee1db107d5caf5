"""Paths as messages show them, and which file a path names (private).

* :data:`STDIO` (``-``) is standard input or output; :func:`display_name` is how a path
  appears in an error message.
* :func:`check_distinct_files` refuses a command whose output is the same file as one
  of its inputs or another output (compared by device and inode, :func:`file_identity`).
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Sequence
from typing import Any, Union

from ..exceptions import InvalidParameterError

PathLike = Union[str, "os.PathLike[str]"]

STDIO = "-"

__all__ = ["STDIO", "PathLike", "check_distinct_files", "display_name", "file_identity"]



def display_name(path: PathLike | None) -> str:
    """Name of ``path`` as shown in error messages (``<stdin>``/``<stdout>`` for ``-``)."""
    if path is None or str(path) == STDIO:
        return "<stdin>"
    return os.fspath(path)


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
        output, if two summed inputs are the same file, or if two inputs are standard input;
        the message names both paths.
    """
    from_stdin = [role for role, path in [*inputs, *summed] if os.fspath(path) == STDIO]
    if len(from_stdin) > 1 and from_stdin[0] in {role for role, _ in inputs}:
        # The second would find standard input read to its end (two summed inputs: counted twice, below).
        raise InvalidParameterError(f"standard input ('-') can feed one input only, not both {from_stdin[0]} and "
                                    f"{from_stdin[1]}: give the other as a file")
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
