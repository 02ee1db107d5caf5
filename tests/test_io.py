"""File plumbing (rappor._io): atomic outputs and tolerant, precise input reading."""

from __future__ import annotations

import io
import os
import stat
import sys
from pathlib import Path

import pytest

from rappor import ReportFormatError
from rappor._io import atomic_output, csv_field, display_name, iter_text_lines, read_input_bytes


class Boom(Exception):
    pass


def test_atomic_output_writes_on_success(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    with atomic_output(path) as fh:
        fh.write("a,b\n")
    assert path.read_text() == "a,b\n"
    assert list(tmp_path.iterdir()) == [path]


def test_atomic_output_leaves_no_file_on_exception(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    with pytest.raises(Boom):
        with atomic_output(path) as fh:
            fh.write("partial")
            raise Boom
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file either


def test_atomic_output_keeps_old_file_on_exception(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    with pytest.raises(Boom):
        with atomic_output(path) as fh:
            fh.write("new")
            raise Boom
    assert path.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [path]


def test_atomic_output_keyboard_interrupt_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(path, binary=True) as fh:
            fh.write(b"\x00")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_permissions_follow_umask(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    old = os.umask(0o022)
    try:
        with atomic_output(path) as fh:
            fh.write("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_atomic_output_newlines_written_as_given(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    with atomic_output(path) as fh:
        fh.write("a\nb\r\n")
    assert path.read_bytes() == b"a\nb\r\n"


def test_atomic_output_fail_directory_or_missing_parent(tmp_path: Path) -> None:
    with pytest.raises(ReportFormatError, match="is a directory"):
        with atomic_output(tmp_path):
            pass
    with pytest.raises(ReportFormatError, match="cannot write file"):
        with atomic_output(tmp_path / "no" / "such" / "dir.csv"):
            pass


def test_atomic_output_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with atomic_output("-") as fh:
        fh.write("hello\n")
    assert capsys.readouterr().out == "hello\n"


def test_iter_text_lines_bom_crlf_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n\nthr\xc3\xa9e")
    assert list(iter_text_lines(path)) == [(1, "one"), (2, "two"), (3, ""), (4, "thrée")]


def test_iter_text_lines_bom_only_on_first_line(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\n\xef\xbb\xbfb\n")
    assert list(iter_text_lines(path)) == [(1, "a"), (2, "\ufeffb")]


def test_iter_text_lines_fail_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"ok\nalso ok\nbad \xff here\n")
    with pytest.raises(ReportFormatError, match=r"in.txt:3: expected UTF-8 text, found the byte 0xff at column 5"):
        list(iter_text_lines(path))


def test_read_input_fail_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ReportFormatError, match="missing.txt: cannot read file: no such file"):
        read_input_bytes(tmp_path / "missing.txt")
    with pytest.raises(ReportFormatError, match="is a directory"):
        read_input_bytes(tmp_path)
    with pytest.raises(ReportFormatError, match="missing.txt: cannot read file"):
        list(iter_text_lines(tmp_path / "missing.txt"))


def test_read_input_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\r\ny\n")))
    assert list(iter_text_lines("-")) == [(1, "x"), (2, "y")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"raw")))
    assert read_input_bytes("-") == b"raw"


def test_display_name() -> None:
    assert display_name("-") == "<stdin>"
    assert display_name(None) == "<stdin>"
    assert display_name(Path("a/b.csv")) == os.path.join("a", "b.csv")


def test_iter_text_lines_fail_line_longer_than_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"short\n" + b"x" * 1000 + b"\nafter\n")
    lines = iter_text_lines(path, max_line_bytes=100)
    assert next(lines) == (1, "short")
    with pytest.raises(ReportFormatError, match="line of at most 100 bytes") as info:
        next(lines)
    assert info.value.line == 2


def test_iter_text_lines_refuses_a_key_file_and_holds_back_a_key_like_first_line(tmp_path: Path) -> None:
    key_line = "ab" * 16
    path = tmp_path / "k"
    path.write_text(key_line + "\n\n")
    with pytest.raises(ReportFormatError, match="this looks like a key file .*not a candidates file") as info:
        list(iter_text_lines(path, what="a candidates file"))
    assert key_line not in str(info.value)
    path.write_text(key_line + "\n\nother\n")  # a candidate list of hex strings is fine
    assert list(iter_text_lines(path, what="a candidates file")) == [(1, key_line), (2, ""), (3, "other")]
    assert list(iter_text_lines(tmp_path / "k")) == [(1, key_line), (2, ""), (3, "other")]


def test_read_input_bytes_fail_larger_than_max_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 11)
    assert read_input_bytes(tmp_path / "f", max_bytes=11) == b"x" * 11
    with pytest.raises(ReportFormatError, match="expected a thing of at most 10 bytes"):
        read_input_bytes(tmp_path / "f", max_bytes=10, what="a thing")


@pytest.mark.parametrize("text", ["plain", "a,b", 'say "hi"', "two\nlines", "lone\rcr", " padded ", "\ttab", "",
                                  "https://example.com/?q=1,2", "é ünïcode"])
def test_csv_field_round_trips_through_the_csv_module(text):
    import csv

    row = f"{csv_field(text)},1\n"
    assert next(csv.reader(io.StringIO(row, newline=""))) == [text, "1"]
    quoted = csv_field(text).startswith('"')
    assert quoted == (any(ch in text for ch in ',"\r\n') or text != text.strip())
