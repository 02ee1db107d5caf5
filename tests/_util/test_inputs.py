"""Reading inputs (rappor._util.inputs): tolerant of a BOM and CRLF, precise about what is wrong."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from rappor import RapporIOError, ReportFormatError
from rappor._util.inputs import iter_text_lines, read_input_bytes


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
    with pytest.raises(RapporIOError, match="missing.txt: cannot read file: no such file"):
        read_input_bytes(tmp_path / "missing.txt")
    with pytest.raises(RapporIOError, match="is a directory"):
        read_input_bytes(tmp_path)
    with pytest.raises(RapporIOError, match="missing.txt: cannot read file"):
        list(iter_text_lines(tmp_path / "missing.txt"))


def test_read_input_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\r\ny\n")))
    assert list(iter_text_lines("-")) == [(1, "x"), (2, "y")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"raw")))
    assert read_input_bytes("-") == b"raw"


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


def test_open_input_binary_read_error_says_cannot_read(tmp_path: Path) -> None:
    # /proc/self/mem opens but fails to read at offset 0 (EIO): a read error, not "cannot write".
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("needs Linux /proc")
    with pytest.raises(RapporIOError, match="cannot read file: Input/output error"):
        list(iter_text_lines("/proc/self/mem"))
    with pytest.raises(RapporIOError, match="cannot read file"):
        read_input_bytes("/proc/self/mem", max_bytes=10)


def test_read_first_line_leaves_a_pipe_whole(tmp_path: Path) -> None:
    """Issue 13, item 9: a pipe's first line, read to choose how to read it, is read again
    by the reader that follows (the pipe cannot be reopened); a regular file is not held."""
    import threading

    from rappor._util.inputs import _STARTED, open_input_binary, read_first_line

    data = b"client,a,b\n" + b"c,x,1\n" * 50_000
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    path = f"/dev/fd/{read_end}"
    try:
        assert read_first_line(path) == b"client,a,b\n"
        assert read_first_line(path) == b"client,a,b\n"  # asked again: the same line, nothing lost
        with open_input_binary(path) as fh:
            assert fh.read() == data
        assert path not in _STARTED
    finally:
        os.close(read_end)
    writer.join(timeout=10)
    (tmp_path / "f.csv").write_bytes(data)
    assert read_first_line(tmp_path / "f.csv") == b"client,a,b\n"
    assert os.fspath(tmp_path / "f.csv") not in _STARTED
