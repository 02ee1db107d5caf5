"""Streaming CSV: a byte stream cut into whole records, in blocks of bounded size (private).

The two large inputs, reports files (:mod:`rappor.client`) and ``rappor encode``'s
``client,value`` file, are read in blocks so that memory is bounded by the block size,
and must give exactly the records that the csv module gives for the whole file
(``csv.reader(open(path, newline=""))``, default dialect, with no field size limit),
including quoted fields that hold commas, quotes and line breaks.

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
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import IO, NamedTuple

import numpy as np

from ..exceptions import ReportFormatError

__all__ = ["PlainBlock", "Record", "iter_csv_blocks", "iter_csv_records"]

_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
#: Back to the fast path when the next quote, NUL or lone CR is farther than this.
_PLAIN_AGAIN_BYTES = 4096
#: Bytes split into lines at a time by the csv path.
_LINES_WINDOW = 1 << 16

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


class Record(NamedTuple):
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
    buffer : bytes
        Holds the record at ``buffer[start:end]`` (see :attr:`raw`).
    start, end : int
        The record's byte range in ``buffer``, line breaks included.
    """

    line: int
    cells: list[str]
    error: str | None
    buffer: bytes
    start: int
    end: int

    @property
    def raw(self) -> bytes:
        """The record's bytes, line breaks included."""
        return self.buffer[self.start:self.end]

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
        self.quote = buf.find(b'"', 0, end)  # the next one at or after the last position asked
        self.nul = buf.find(b"\0", 0, end)
        self.lone_crs: list[int] = []
        if buf.find(b"\r", 0, end) >= 0:  # CRLF or lone CRs: numpy finds the lone ones (bytes.count is slow)
            data = np.frombuffer(buf, dtype=np.uint8, count=end)
            crs = np.flatnonzero(data == 13)
            after = crs + 1
            lone = crs[(after >= end) | (data[np.minimum(after, end - 1)] != 10)]
            self.lone_crs = lone.tolist()

    def next(self, pos: int) -> int:
        """Offset of the first special byte at or after ``pos``, or -1."""
        quote, nul = self.quote, self.nul
        if 0 <= quote < pos:
            quote = self.quote = self.buf.find(b'"', pos, self.end)
        if 0 <= nul < pos:
            nul = self.nul = self.buf.find(b"\0", pos, self.end)
        first = quote if nul < 0 or 0 <= quote < nul else nul
        if self.lone_crs:
            i = bisect.bisect_left(self.lone_crs, pos)
            if i < len(self.lone_crs) and (first < 0 or self.lone_crs[i] < first):
                first = self.lone_crs[i]
        return first


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
                line += _count_newlines(buf, pos, cut)
                pos = cut
                break
            line_start = buf.rfind(b"\n", pos, special) + 1 or pos
            if line_start > pos:
                yield PlainBlock(buf, pos, line_start, line)
                line += _count_newlines(buf, pos, line_start)
                pos = line_start
            pos, line, complete = yield from _parse_records(buf, pos, cut, line, strict, at_eof, specials)
            if not complete:  # a record still open at the end of the block: read on
                open_record = True
                break
        if at_eof:
            return
        carry = buf[pos:]
        if open_record:
            _check_size(len(carry), max_record_bytes, name, line)


def iter_csv_records(fh: IO[bytes], name: str, *, strict: bool = False, block_bytes: int = 1 << 22,
                     max_record_bytes: int = 1 << 26) -> Iterator[tuple[int, list[str]]]:
    """The records ``(line, cells)`` of the CSV stream ``fh``, as the csv module gives them, a block at a time.

    For readers that want each record's fields as strings (not the vectorized fast
    path): plain lines are split at commas, the rest parsed by the csv module (see
    :func:`iter_csv_blocks`, whose parameters these are).  A blank line is ``[]``.

    Raises
    ------
    ReportFormatError
        For bytes that are not UTF-8 (naming the line), for bad quoting in ``strict``
        mode and a record longer than ``max_record_bytes``.
    """
    from .excerpt import excerpt

    for item in iter_csv_blocks(fh, name, strict=strict, block_bytes=block_bytes, max_record_bytes=max_record_bytes):
        if isinstance(item, Record):
            if item.error is not None:
                raise ReportFormatError(f"expected a CSV row, found {excerpt(item.text)} ({item.error})",
                                        path=name, line=item.line)
            if "\ufffd" in "".join(item.cells):  # the bytes were not UTF-8 (or held U+FFFD itself)
                _check_utf8(item.raw, name, item.line)
            yield item.line, item.cells
            continue
        raw = item.buffer[item.start:item.end]
        _check_utf8(raw, name, item.first_line)
        for offset, text in enumerate(raw.decode("utf-8").split("\n")[:-1]):
            text = text.removesuffix("\r")
            yield item.first_line + offset, text.split(",") if text else []


def _check_utf8(raw: bytes, name: str, first_line: int) -> None:
    """Raise for the first byte of ``raw`` that is not UTF-8, naming its line."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + len(_LINE_BREAK.findall(raw, 0, exc.start))
        raise ReportFormatError(f"expected UTF-8 text, found the byte 0x{raw[exc.start]:02x}", path=name,
                                line=line) from None


def _count_newlines(buf: bytes, start: int, end: int) -> int:
    """``buf.count(b"\\n", start, end)``, several times faster on large blocks."""
    if end - start < 4096:
        return buf.count(b"\n", start, end)
    return int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8, count=end - start, offset=start) == 10))


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


def _lines(buf: bytes, start: int, cut: int, ends: list[int], done: list[bool]) -> Iterator[str]:
    """The physical lines of ``buf[start:cut]`` as text; each line's end offset goes to ``ends``.

    ``done[0]`` is set when asked for a line past the last one: the csv module asks only
    while a record is open (a quoted field going on), so the record is cut off there.

    Split in windows of about 64 KiB by :meth:`bytes.splitlines` (``\\n``, ``\\r\\n`` and
    a lone ``\\r``, exactly the csv module's line ends with ``newline=""``), so that
    leaving early costs little.
    """
    pos = start
    while pos < cut:
        stop = min(cut, pos + _LINES_WINDOW)
        if stop < cut:  # end the window after a line break (not between CR and LF)
            stop = max(buf.rfind(b"\n", pos, stop), buf.rfind(b"\r", pos, stop - 1)) + 1
            if stop == 0:
                found = _LINE_BREAK.search(buf, pos + _LINES_WINDOW - 1, cut)
                stop = found.end() if found is not None else cut
        for raw in buf[pos:stop].splitlines(keepends=True):
            pos += len(raw)
            ends.append(pos)
            yield raw.decode("utf-8", errors="replace")
    done[0] = True


def _parse_records(buf: bytes, start: int, cut: int, line: int, strict: bool, at_eof: bool,
                   specials: _Specials) -> Generator[Record, None, tuple[int, int, bool]]:
    """Yield the records of ``buf[start:cut]`` as the csv module parses them.

    Stops at ``cut``, or early when the next special byte is far enough away for the
    fast path.  Returns ``(offset, line, complete)``: where parsing stopped, the line
    number there, and False if a record was still open at ``cut`` before the end of
    the file (it starts at ``offset`` and must be parsed again with more data).
    """
    ends: list[int] = []
    done = [False]
    offset = start
    reader = csv.reader(_lines(buf, start, cut, ends, done), strict=strict)
    while True:
        before = len(ends)
        error: str | None = None
        cells: list[str] = []
        try:
            cells = next(reader)
        except StopIteration:
            return cut, line, True
        except csv.Error as exc:
            if not str(exc).startswith("field larger than field limit"):
                error = str(exc)
            else:  # a long field: parse this record again, the limit raised for it alone
                del ends[before:]
                done[0] = False
                reader = csv.reader(_lines(buf, offset, cut, ends, done), strict=strict)
                cells, error = _next_without_field_limit(reader, cut - offset)
        if done[0] and not at_eof:
            return offset, line, False  # still open at the end of the block: parse again with more data
        end = ends[-1] if ends else start
        yield Record(line, cells, error, buf, offset, end)
        line += len(ends) - before
        offset = end
        if offset >= cut:
            return offset, line, True
        special = specials.next(offset)
        if special < 0 or special - offset > _PLAIN_AGAIN_BYTES:
            return offset, line, True


def _next_without_field_limit(reader: Iterator[list[str]], size: int) -> tuple[list[str], str | None]:
    """The reader's next record with csv's field size limit raised to ``size`` for it alone.

    The limit is process-wide: it is raised and restored under a lock, never across a
    ``yield``.
    """
    with _FIELD_LIMIT_LOCK:
        old_limit = csv.field_size_limit(max(csv.field_size_limit(), size + 1))
        try:
            return next(reader, []), None
        except csv.Error as exc:
            return [], str(exc)
        finally:
            csv.field_size_limit(old_limit)
