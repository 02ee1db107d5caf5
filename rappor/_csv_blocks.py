"""Streaming CSV: a byte stream cut into whole records, in blocks of bounded size (private).

The two large inputs, reports files (:mod:`rappor.reports`) and ``rappor encode``'s
``client,value`` file, are read in blocks so that memory is bounded by the block size,
and must give exactly the records that the csv module gives for the whole file
(``csv.reader(open(path, newline=""))``, default dialect, with no field size limit),
including quoted fields that hold commas, quotes and line breaks (issue 13, item 5).

:func:`iter_csv_blocks` yields two kinds of items, in file order:

* :class:`PlainBlock`: whole lines that contain no quote, no NUL and no lone carriage
  return.  There the csv module's records are exactly the lines (ended by ``\\n``, a
  ``\\r`` before it removed; an empty line is a blank record) and their fields exactly
  the text between commas, so a reader may split them with numpy or string methods.
* :class:`Record`: one record parsed by the csv module, for the lines around a quote,
  NUL or lone carriage return, with the physical line where it starts.

Physical lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as the csv module sees them
(``newline=""``).  A record that is still open at the end of a block (a quoted line
break) is carried whole into the next one; one longer than ``max_record_bytes`` is an
error, so an unclosed quote costs a bounded amount of memory, not the whole file.
"""

from __future__ import annotations

import bisect
import csv
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from .exceptions import ReportFormatError

__all__ = ["PlainBlock", "Record", "iter_csv_blocks", "quote_field"]

_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_LONE_CR = re.compile(rb"\r(?!\n)")
#: Back to the fast path when the next quote, NUL or lone CR is farther than this.
_PLAIN_AGAIN_BYTES = 4096

# csv.field_size_limit is process-wide: raised only around one record's parse, under a lock.
_FIELD_LIMIT_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class PlainBlock:
    """Whole lines ``buffer[start:end]`` (ending with ``\\n``) without quote, NUL or lone CR.

    Attributes
    ----------
    buffer : bytes
        Holds the lines (and possibly other data around them: use ``start``/``end``).
    start, end : int
        The byte range of the lines; ``buffer[end - 1]`` is ``\\n``.
    first_line : int
        Physical line number of the first line (1-based).
    """

    buffer: bytes
    start: int
    end: int
    first_line: int

    def data(self) -> bytes:
        """The lines as bytes (a copy)."""
        return self.buffer[self.start:self.end]


@dataclass(frozen=True, slots=True)
class Record:
    """One record as the csv module reads it.

    Attributes
    ----------
    line : int
        Physical line where the record starts (1-based).
    cells : list of str
        The fields (``[]`` for a blank line); undecodable bytes are U+FFFD.  Empty when
        ``error`` is set.
    error : str or None
        The csv module's complaint (strict mode, or a NUL before Python 3.11), if any.
    raw : bytes
        The record's bytes, line breaks included.
    """

    line: int
    cells: list[str]
    error: str | None
    raw: bytes

    @property
    def text(self) -> str:
        """The record as text, without its final line break (for messages and rejects)."""
        return self.raw.decode("utf-8", errors="replace").rstrip("\r\n")

    def line_of(self, offset: int) -> int:
        """Physical line of the byte at ``offset`` in :attr:`raw`."""
        return self.line + len(_LINE_BREAK.findall(self.raw, 0, offset))


class _Specials:
    """Offsets of the bytes that need the csv module (quote, NUL, lone CR) in ``buf[:end]``.

    Each lookup costs the distance it skips, so scanning a buffer costs linear time.
    """

    def __init__(self, buf: bytes, end: int) -> None:
        self.buf, self.end = buf, end
        self.next_quote = self.next_nul = -2  # -2: not looked up yet
        if buf.count(b"\r", 0, end) == buf.count(b"\r\n", 0, end):
            self.lone_crs: list[int] = []
        else:
            self.lone_crs = [m.start() for m in _LONE_CR.finditer(buf, 0, end)]

    def _next(self, byte: bytes, cached: int, pos: int) -> int:
        if cached == -1 or (cached >= pos):
            return cached
        return self.buf.find(byte, pos, self.end)

    def next(self, pos: int) -> int:
        """Offset of the first special byte at or after ``pos``, or -1."""
        self.next_quote = self._next(b'"', self.next_quote, pos)
        self.next_nul = self._next(b"\0", self.next_nul, pos)
        found = [x for x in (self.next_quote, self.next_nul) if x >= 0]
        i = bisect.bisect_left(self.lone_crs, pos)
        if i < len(self.lone_crs):
            found.append(self.lone_crs[i])
        return min(found) if found else -1


def iter_csv_blocks(fh: IO[bytes], name: str, *, strict: bool = False, block_bytes: int = 1 << 24,
                    max_record_bytes: int = 1 << 26, progress: Callable[[int], None] | None = None,
                    ) -> Iterator[PlainBlock | Record]:
    """Cut the CSV stream ``fh`` into plain blocks and csv-parsed records (see the module docstring).

    Parameters
    ----------
    fh : binary file object
        Read with ``fh.read(n)`` only (pipes, FIFOs and standard input work).
    name : str
        The file's name for messages.
    strict : bool, default=False
        The csv module's ``strict`` (bad quoting is an error, reported in
        :attr:`Record.error`; an unclosed quote at the end of the file too).
    block_bytes : int, default=16 MiB
        Bytes read at a time.
    max_record_bytes : int, default=64 MiB
        Longest line or record; a longer one raises :class:`ReportFormatError`.
    progress : callable or None
        Called with the number of bytes of each read.

    A UTF-8 byte-order mark at the start is dropped.
    """
    carry = b""
    line = 1
    at_start = True
    while True:
        block = fh.read(max(block_bytes, len(carry)))  # a long record doubles the read: linear time
        if progress is not None:
            progress(len(block))
        at_eof = not block
        buf = carry + block if carry else block
        if at_start:
            if len(buf) < len(_BOM) and not at_eof:
                carry = buf
                continue
            if buf.startswith(_BOM):
                buf = buf[len(_BOM):]
            at_start = False
        if at_eof:
            if not buf:
                return
            cut = len(buf)
        else:
            # The last line break known to be complete (a final CR might be half of a CRLF).
            cut = max(buf.rfind(b"\n"), buf.rfind(b"\r", 0, len(buf) - 1)) + 1
            if cut == 0:
                _check_size(len(buf), max_record_bytes, name, line)
                carry = buf
                continue
        specials = _Specials(buf, cut)
        pos = 0
        open_record = False
        while pos < cut:
            special = specials.next(pos)
            if special < 0:
                yield from _plain(buf, pos, cut, line)
                line += buf.count(b"\n", pos, cut)
                pos = cut
                break
            line_start = buf.rfind(b"\n", pos, special) + 1 or pos
            if line_start > pos:
                yield PlainBlock(buf, pos, line_start, line)
                line += buf.count(b"\n", pos, line_start)
                pos = line_start
            records: list[Record] = []
            pos, line, complete = _parse_records(buf, pos, cut, line, strict, at_eof, specials, records)
            yield from records
            if not complete:  # a record still open at the end of the block: read on
                open_record = True
                break
        if at_eof:
            return
        carry = buf[pos:]
        if open_record:
            _check_size(len(carry), max_record_bytes, name, line)


def _plain(buf: bytes, start: int, end: int, line: int) -> Iterator[PlainBlock]:
    """The plain block ``buf[start:end]``, with a final ``\\n`` added to an unterminated last line."""
    if end > start:
        if buf.endswith(b"\n", start, end):
            yield PlainBlock(buf, start, end, line)
        else:  # only at the end of the file
            yield PlainBlock(buf[start:end] + b"\n", 0, end - start + 1, line)


def _check_size(size: int, limit: int, name: str, line: int) -> None:
    if size > limit:
        msg = (f"expected a row of at most {limit:,} bytes, found a longer one starting here "
               f"(an unclosed quote, or not a CSV file?)")
        raise ReportFormatError(msg, path=name, line=line)


def _parse_records(buf: bytes, start: int, cut: int, line: int, strict: bool, at_eof: bool,
                   specials: _Specials, out: list[Record]) -> tuple[int, int, bool]:
    """Parse records from ``buf[start:cut]`` with the csv module into ``out``.

    Stops at ``cut``, or early when the next special byte is far enough away for the
    fast path.  Returns ``(offset, line, complete)``: where parsing stopped, the line
    number there, and False if a record was still open at ``cut`` before the end of
    the file (it starts at ``offset`` and must be parsed again with more data).
    """
    ends: list[int] = []
    exhausted = False

    def lines() -> Iterator[str]:
        nonlocal exhausted
        p = start
        for match in _LINE_BREAK.finditer(buf, start, cut):
            ends.append(match.end())
            yield buf[p:match.end()].decode("utf-8", errors="replace")
            p = match.end()
        if p < cut:  # the last line of the file, without a line break
            ends.append(cut)
            yield buf[p:cut].decode("utf-8", errors="replace")
        exhausted = True

    reader = csv.reader(lines(), strict=strict)
    offset = start
    while True:
        before = len(ends)
        error: str | None = None
        cells: list[str] = []
        with _FIELD_LIMIT_LOCK:
            old_limit = csv.field_size_limit(max(csv.field_size_limit(), cut - start + 1))
            try:
                cells = next(reader)
            except StopIteration:
                return cut, line, True
            except csv.Error as exc:
                error = str(exc)
            finally:
                csv.field_size_limit(old_limit)
        if exhausted and not at_eof:
            return offset, line, False  # open at the end of the block
        end = ends[-1] if ends else start
        out.append(Record(line=line, cells=cells, error=error, raw=buf[offset:end]))
        line += len(ends) - before
        offset = end
        if offset >= cut:
            return offset, line, True
        special = specials.next(offset)
        if special < 0 or special - offset > _PLAIN_AGAIN_BYTES:
            return offset, line, True


_NEEDS_QUOTES = frozenset(',"\r\n')


def quote_field(text: str) -> str:
    """``text`` as a CSV field that the csv module (and so :func:`iter_csv_blocks`) reads back exactly.

    Quoted when it holds a comma, a quote, or a line break: ``\r`` too, which
    ``csv.writer`` with ``lineterminator="\n"`` leaves bare (and a reader then splits
    the row there).
    """
    if _NEEDS_QUOTES.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'
