"""Key files: a collection's key as hexadecimal text (``rappor keygen``, ``rappor encode --key-file``).

The format (at least 32 hex digits, optional surrounding whitespace, at most 4,096 bytes) is
defined once by :func:`rappor._util.keyfile.parse_key_text`, which every other reader also uses
to refuse a key file given in the wrong place without quoting it.
"""

from __future__ import annotations

import os
import stat
import warnings

from .._util.inputs import read_input_bytes
from .._util.outputs import output_target
from .._util.paths import display_name, PathLike
from .._util.keyfile import MAX_KEY_FILE_BYTES, parse_key_text
from ..client._derivations import MIN_SECRET_BYTES, _check_secret
from ..exceptions import InsecureKeyFileWarning, InvalidParameterError, RapporIOError, ReportFormatError

__all__ = ["read_key_file", "write_key_file"]


def read_key_file(path: PathLike) -> bytes:
    """Read a key file: the key as hexadecimal text (at least 32 hex digits, i.e. 16 bytes).

    Leading and trailing whitespace (such as the final newline) and a UTF-8 byte-order
    mark are ignored; nothing else is allowed, and a file of more than 4,096 bytes is
    refused unread (so a wrong path such as ``/dev/zero`` costs nothing).  ``rappor
    keygen`` writes such files (:mod:`rappor._util.keyfile` defines the format).  Messages
    never show the file's content.

    Parameters
    ----------
    path : str or os.PathLike
        The key file (standard input is not accepted).

    Returns
    -------
    bytes

    Raises
    ------
    RapporIOError
        If the file is missing or unreadable.
    ReportFormatError
        If it is not hexadecimal text of at least 16 bytes.
    InvalidParameterError
        If ``path`` is ``"-"``.

    Warns
    -----
    InsecureKeyFileWarning
        If users other than its owner may read or change the file (``st_mode & 0o066``:
        readable or writable by its group or by everyone).
    """
    name = display_name(path)
    if str(path) == "-":
        raise InvalidParameterError(f"{name}: a key file must be a file path, not standard input")
    raw = read_input_bytes(path, max_bytes=MAX_KEY_FILE_BYTES, what="a key file (hexadecimal text)")
    try:
        mode = os.stat(path).st_mode
    except OSError:  # pragma: no cover - the file was just read
        mode = 0
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, accepted as in every other file
        raw = raw[3:]
    key = parse_key_text(raw)
    if key is None:  # checked before the permissions: 'chmod 600' is no advice for a file that is not a key
        found = "an empty file" if not raw.strip() else "other content"
        msg = f"expected a key as hexadecimal text (e.g. from 'rappor keygen'), found {found}"
        raise ReportFormatError(msg, path=name)
    if len(key) < MIN_SECRET_BYTES:
        msg = f"expected a key of at least {MIN_SECRET_BYTES} bytes ({2 * MIN_SECRET_BYTES} hex digits), found {len(key)} bytes"
        raise ReportFormatError(msg, path=name)
    exposure = _key_file_exposure(mode)
    if exposure:
        warnings.warn(f"{name}: the key file can be {exposure}; restrict it with 'chmod 600 {name}'",
                      InsecureKeyFileWarning, stacklevel=2)
    if len(set(key)) <= 2:  # all one byte, or two repeated: no secret (rappor keygen's 32 random bytes have ~30)
        warnings.warn(f"{name}: the key has {len(set(key))} distinct byte value(s) in {len(key)} bytes, so it is "
                      "guessable and the permanent responses it keys protect nothing; make a key with "
                      "'rappor keygen'", InsecureKeyFileWarning, stacklevel=2)
    return key


def _key_file_exposure(mode: int) -> str:
    """Who else may read or change a key file of mode ``mode``: "" if nobody but its owner."""

    def who(everyone: int, group: int) -> str:
        return "every user of this machine" if mode & everyone else "its group" if mode & group else ""

    readers, writers = who(stat.S_IROTH, stat.S_IRGRP), who(stat.S_IWOTH, stat.S_IWGRP)
    if readers and readers == writers:
        return f"read and changed by {readers}"
    return " and ".join(part for part in (readers and f"read by {readers}", writers and f"changed by {writers}")
                        if part)


def write_key_file(path: PathLike, key: bytes, *, overwrite: bool = False) -> None:
    """Write ``key`` as hexadecimal text plus a newline, readable by the owner only (mode 0600).

    The file appears complete or not at all.  An existing file is kept (error) unless
    ``overwrite`` is true, so a key is never replaced by accident.  A symbolic link is
    followed (its target gets the key); standard output, devices and FIFOs are refused.

    Raises
    ------
    RapporIOError
        If the file exists (and ``overwrite`` is false; ``errno.EEXIST``), is not a
        regular file, or cannot be written.
    """
    import tempfile

    data = (_check_secret(key, "key", "write_key_file").hex() + "\n").encode("ascii")
    name = "<stdout>" if str(path) == "-" else display_name(path)
    how, where, _ = output_target(path)  # through a symbolic link to the file it names
    if how != "replace":
        raise RapporIOError("cannot write key file: not a regular file (a key needs a file of its own)",
                            path=name)
    target = os.fspath(where)
    directory = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rappor-key.", dir=directory)  # created with mode 0600
    except OSError as exc:
        raise RapporIOError(f"cannot write file: {exc.strerror or exc}", path=name, errno=exc.errno) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        if overwrite:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)  # fails if target exists
    except FileExistsError as exc:
        raise RapporIOError("cannot write key file: it already exists (refusing to replace a key)",
                            path=name, errno=exc.errno) from None
    except OSError as exc:
        raise RapporIOError(f"cannot write file: {exc.strerror or exc}", path=name, errno=exc.errno) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
