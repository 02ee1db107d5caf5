"""Text shown on a terminal: control and bidirectional characters escaped (private).

Values that clients send (discovered strings, candidates, client ids) reach standard
error in notes and warnings, and standard output when a command writes its CSV there.
On a terminal, an ESC starts an escape sequence (``ESC[31m`` recolours, others retitle
the window or move the cursor), BEL rings, and U+202E (right-to-left override) shows
``txt.exe`` for ``exe.txt``.  :func:`terminal_text` writes each such character as a
Python escape (``\\x1b``, ``\\u202e``); :class:`TerminalStream` applies it to everything
written to a stream.  The command line wraps standard error always (it carries messages
only) and standard output when it is a terminal (a pipe or a file gets the exact bytes).
"""

from __future__ import annotations

import io
import re
from typing import Any

__all__ = ["TerminalStream", "terminal_text"]

#: C0 and C1 controls except tab and line feed, DEL, the Unicode line and paragraph
#: separators, and the bidirectional formatting characters (Unicode UAX #9: ALM, LRM,
#: RLM, LRE..RLO, LRI..PDI).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` with every control and bidirectional formatting character written as an escape.

    Examples
    --------
    >>> terminal_text("a\\x1b[31mb\\u202ec\\n")
    'a\\\\x1b[31mb\\\\u202ec\\n'
    """
    return _UNSAFE.sub(_escape, text)


class TerminalStream(io.TextIOBase):
    """A text stream that writes :func:`terminal_text` of everything to ``stream``; the rest is ``stream``'s."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    @property
    def buffer(self) -> Any:
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
