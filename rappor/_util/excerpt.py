"""How much of an input line a message may show (private).

Every reader quotes what it found through :func:`excerpt`, and the rejects files keep
:func:`clip` of each rejected row, so that a 100 MB line makes a message of about a
hundred characters, not 100 MB of standard error.  Both show at most
:data:`EXCERPT_CHARS` characters of the text and, when they cut it, its full length.

Neither ever shows text that looks like a key (:func:`rappor._util.keyfile.looks_like_key_file`):
it is replaced by :data:`KEY_HIDDEN`, so a key given in the wrong place is not echoed
even where the reader did not recognize a whole key file.
"""

from __future__ import annotations

from .keyfile import looks_like_key_file

__all__ = ["EXCERPT_CHARS", "KEY_HIDDEN", "clip", "excerpt"]

#: Shown instead of text that looks like a key.
KEY_HIDDEN = "<text that looks like a key, not shown>"

#: Most characters of a line, field or row that a message or a rejects file shows.
EXCERPT_CHARS = 80

_ELLIPSIS = "\u2026"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``repr(text)``, or for text longer than ``limit`` its start and length.

    Examples
    --------
    >>> excerpt("abc")
    "'abc'"
    >>> excerpt("x" * 100, limit=3)
    "'xxx…' (100 characters)"
    """
    if looks_like_key_file(text):
        return KEY_HIDDEN
    if len(text) <= limit:
        return repr(text)
    quoted = repr(text[:limit])
    return f"{quoted[:-1]}{_ELLIPSIS}{quoted[-1]} ({len(text):,} characters)"


def clip(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` itself, or for text longer than ``limit`` its start and length (unquoted).

    Examples
    --------
    >>> clip("c1,9,0101")
    'c1,9,0101'
    >>> clip("x" * 100, limit=3)
    'xxx… (100 characters)'
    """
    if looks_like_key_file(text):
        return KEY_HIDDEN
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{_ELLIPSIS} ({len(text):,} characters)"
