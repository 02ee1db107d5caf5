"""The key file format, and recognizing a key file passed where another file was expected (private).

A key file (``rappor keygen``, :func:`rappor.formats.write_key_file`) is the key as
hexadecimal text: at least ``2 * MIN_KEY_BYTES`` hex digits, an even number of them,
with optional surrounding whitespace (the final newline) and nothing else, at most
:data:`MAX_KEY_FILE_BYTES` bytes in all.  :func:`parse_key_text` is the one definition
of that format; :func:`read_key_file <rappor.formats.read_key_file>` uses it to read
keys, and every other reader uses :func:`looks_like_key_file` so that a key given in
the wrong place gives :func:`not_a_key_file_error` ("this looks like a key file")
and no message or output ever quotes it.
"""

from __future__ import annotations

import string

from ..exceptions import ReportFormatError

__all__ = ["MAX_KEY_FILE_BYTES", "MIN_KEY_BYTES", "looks_like_key_file", "not_a_key_file_error",
           "parse_key_text"]

#: Shortest accepted key, in bytes.
MIN_KEY_BYTES = 16

#: Largest key file read: a key file is one line of hex digits, so anything longer is not one.
MAX_KEY_FILE_BYTES = 4096

_HEX = frozenset(string.hexdigits)
_WHITESPACE = b" \t\r\n\x0b\x0c"


def parse_key_text(data: bytes) -> bytes | None:
    """The key held by a key file's content ``data``, or ``None`` if it is not hex text.

    The length is not checked here beyond "at least one byte": :func:`read_key_file
    <rappor.formats.read_key_file>` reports a short key as such.
    """
    if len(data) > MAX_KEY_FILE_BYTES:
        return None
    text = data.strip(_WHITESPACE)
    if not text or len(text) % 2 or not _HEX.issuperset(text.decode("latin-1")):
        return None
    return bytes.fromhex(text.decode("ascii"))


def looks_like_key_file(data: bytes | str) -> bool:
    """True if ``data``, the whole content of a file, is a key file's content.

    That is, hexadecimal text of at least ``MIN_KEY_BYTES`` bytes (``2 * MIN_KEY_BYTES``
    hex digits) and nothing else but surrounding whitespace and a UTF-8 byte-order mark.
    """
    if len(data) > MAX_KEY_FILE_BYTES + 3:  # cheap test first: messages call this on any text
        return False
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    key = parse_key_text(raw)
    return key is not None and len(key) >= MIN_KEY_BYTES


def not_a_key_file_error(path: str, expected: str) -> ReportFormatError:
    """The error for a key file given where ``expected`` (e.g. ``"a params file"``) was expected.

    It names the file and quotes nothing of it.
    """
    msg = f"this looks like a key file (written by rappor keygen), not {expected}"
    return ReportFormatError(msg, path=path)
