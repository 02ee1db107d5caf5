"""Streaming CSV in blocks (rappor._util.csv_blocks): plain blocks, csv records, carried records, bounds.

That the items give exactly the csv module's records on any input is fuzzed through
both readers in tests/test_fuzz.py (test_fuzz_reports_reader_equals_csv_module,
test_fuzz_encode_input_equals_csv_module).
"""

from __future__ import annotations

import csv
import io

import pytest

from rappor import ReportFormatError
from rappor._util.csv_blocks import PlainBlock, Record, iter_csv_blocks


def _items(data: bytes, **options: object) -> list[PlainBlock | Record]:
    return list(iter_csv_blocks(io.BytesIO(data), "f.csv", **options))  # type: ignore[arg-type]


def _records(data: bytes, block_bytes: int) -> list[tuple[int, list[str]]]:
    """Every record as ``(line, fields)``; plain lines split here the way a reader does."""
    out: list[tuple[int, list[str]]] = []
    for item in _items(data, block_bytes=block_bytes):
        if isinstance(item, Record):
            out.append((item.line, item.cells))
            continue
        for i, line in enumerate(item.data().split(b"\n")[:-1]):
            text = line.removesuffix(b"\r").decode()
            out.append((item.first_line + i, text.split(",") if text else []))
    return out


def test_csv_blocks_plain_data_is_one_plain_block() -> None:
    data = b"a,b\r\nc,d\n\ne,f\n"
    items = _items(data)
    assert items == [PlainBlock(data, 0, len(data), 1)]


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 5, 8, 64, 1 << 20])
def test_csv_blocks_quoted_line_breaks_across_blocks(block_bytes: int) -> None:
    data = b'h1,h2\n"x\nmallory,7,1111\ny",2\nplain,3\n"a""b\r\n",4\r\n\n"c\rd",5\n'
    expected_lines = [1, 2, 5, 6, 9]  # line 8 is blank; the CR in "c\rd" ends physical line 9
    reference = [r for r in csv.reader(io.StringIO(data.decode(), newline=""))]
    got = _records(data, block_bytes)
    assert [fields for _, fields in got] == reference
    assert [line for line, fields in got if fields] == expected_lines


def test_csv_blocks_record_too_long_is_an_error_at_its_start(tmp_path: object) -> None:
    data = b"h\nok\n" + b'"never closed,' + b"x" * 5000 + b"\n" + b"y\n" * 5000
    with pytest.raises(ReportFormatError) as info:
        _items(data, block_bytes=64, max_record_bytes=1024)
    assert info.value.line == 3 and "expected a row of at most 1,024 bytes" in info.value.message


def test_csv_blocks_line_without_end_is_bounded() -> None:
    with pytest.raises(ReportFormatError) as info:
        _items(b"h\n" + b"\0" * 10_000, block_bytes=100, max_record_bytes=1000)
    assert info.value.line == 2


def test_csv_blocks_bom_dropped_even_split_across_reads() -> None:
    for block_bytes in (1, 2, 3, 100):
        got = _records(b'\xef\xbb\xbfa,"b"\n', block_bytes)
        assert got == [(1, ["a", "b"])]


def test_csv_blocks_progress_counts_every_byte() -> None:
    seen: list[int] = []
    data = b'a,b\n"c\n",d\n' * 100
    _items(data, block_bytes=7, progress=seen.append)
    assert sum(seen) == len(data)


def test_csv_blocks_strict_errors_and_open_quote_at_end() -> None:
    items = _items(b'h\n"a"b,c\nd\n"open\n', strict=True)
    records = [(i.line, i.cells, i.error) for i in items if isinstance(i, Record)]
    assert records[0][0] == 2 and records[0][2] is not None  # '"a"b': bad quoting
    assert records[-1][0] == 4 and "unexpected end of data" in (records[-1][2] or "")


def test_csv_blocks_long_quoted_field_and_field_limit_restored() -> None:
    limit = csv.field_size_limit()
    field = "z" * (limit + 10)
    items = _items(f'"{field}",1\n'.encode(), block_bytes=1000)
    assert [i.cells for i in items if isinstance(i, Record)] == [[field, "1"]]
    assert csv.field_size_limit() == limit
