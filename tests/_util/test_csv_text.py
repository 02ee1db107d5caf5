"""CSV text fields (rappor._util.csv_text): quoted only when needed, read back exactly."""

from __future__ import annotations

import io

import pytest

from rappor._util.csv_text import csv_field


@pytest.mark.parametrize("text", ["plain", "a,b", 'say "hi"', "two\nlines", "lone\rcr", " padded ", "\ttab", "",
                                  "https://example.com/?q=1,2", "é ünïcode"])
def test_csv_field_round_trips_through_the_csv_module(text):
    import csv

    row = f"{csv_field(text)},1\n"
    assert next(csv.reader(io.StringIO(row, newline=""))) == [text, "1"]
    quoted = csv_field(text).startswith('"')
    assert quoted == (any(ch in text for ch in ',"\r\n') or text != text.strip())
