"""Candidate list files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rappor import InvalidParameterError, RapporWarning, ReportFormatError
from rappor.formats import read_candidates, write_candidates


def test_candidates_round_trip(tmp_path: Path) -> None:
    items = ["v1", " leading space", "comma,inside", 'quote "q"', "ünïcødé", "tab\tinside"]
    write_candidates(items, tmp_path / "c.txt")
    assert read_candidates(tmp_path / "c.txt") == items


def test_read_candidates_interop(interop_dir: Path) -> None:
    assert read_candidates(interop_dir / "candidates.txt") == [f"v{i}" for i in range(1, 41)]


def test_read_candidates_bom_crlf_no_final_newline(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_bytes("\ufeffa\r\nb\r\nc".encode())
    assert read_candidates(tmp_path / "c.txt") == ["a", "b", "c"]


BAD_CANDIDATES = [
    (b"", None, "found an empty file"),
    (b"a\n\nb\n", 2, "found a blank line"),
    (b"a\n  \n", 2, "found only whitespace"),
    (b"a\nb\na\n", 3, "found 'a' again (first on line 1)"),
    (b"a\n\xff\xfe\n", 2, "expected UTF-8 text"),
    # Lone-CR line endings were hashed as one candidate 'a\rb\rc'; a CR inside a line is refused.
    (b"a\rb\rc\r", 1, "found a carriage return inside the line at column 2 (CR line endings?"),
    (b"a\r\nb\rc\r\n", 2, "found a carriage return inside the line at column 2"),
    (b"a\nb\r\r\n", 2, "found a carriage return inside the line at column 2"),
]


@pytest.mark.parametrize(("data", "line", "fragment"), BAD_CANDIDATES)
def test_read_candidates_fail_bad_input(tmp_path: Path, data: bytes, line: int | None, fragment: str) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    with pytest.raises(ReportFormatError) as info:
        read_candidates(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert fragment in info.value.message


def test_read_candidates_allow_duplicates_drops_and_warns(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("a\nb\na\nb\nc\n")
    with pytest.warns(RapporWarning, match=r"skipped 2 repeated candidate\(s\): line 3: 'a' \(first on line 1\)"):
        assert read_candidates(tmp_path / "c.txt", allow_duplicates=True) == ["a", "b", "c"]


@pytest.mark.parametrize("items", [["a", "a"], ["a", ""], ["a\nb"], ["   "]])
def test_write_candidates_fail_unreadable_list(tmp_path: Path, items: list[str]) -> None:
    with pytest.raises(InvalidParameterError, match="distinct, non-blank"):
        write_candidates(items, tmp_path / "c.txt")
    assert not (tmp_path / "c.txt").exists()
