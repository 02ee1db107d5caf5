"""The key file format (rappor._util.keyfile) and recognizing a key file in the wrong place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rappor import ReportFormatError
from rappor._util.keyfile import MAX_KEY_FILE_BYTES, looks_like_key_file, parse_key_text
from rappor.client import generate_key
from rappor.formats import read_key_file, write_key_file


def test_keyfile_written_by_keygen_looks_like_a_key(tmp_path: Path) -> None:
    key = generate_key()
    write_key_file(tmp_path / "k", key)
    data = (tmp_path / "k").read_bytes()
    assert looks_like_key_file(data) and looks_like_key_file(data.decode())
    assert parse_key_text(data) == key == read_key_file(tmp_path / "k")


@pytest.mark.parametrize("data", [
    b"", b"\n", b"00112233", b"0011223344556677889900112233445", b"k,h,m,p,q,f\n", b"0" * 32 + b"\n1\n",
    b"0" * 32 + b"\nclient,value\n", b"0" * (MAX_KEY_FILE_BYTES + 2), b"zz" * 20, b"0" * 33,
])
def test_keyfile_other_content_is_not_a_key(data: bytes) -> None:
    assert not looks_like_key_file(data)


def test_keyfile_recognized_with_whitespace_and_bom() -> None:
    hex_text = b"ab" * 16
    for data in (hex_text, b"  " + hex_text + b"\r\n\n", b"\xef\xbb\xbf" + hex_text + b"\n"):
        assert looks_like_key_file(data)


def test_read_key_file_fail_larger_than_a_key_file(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"ab" * MAX_KEY_FILE_BYTES)
    (tmp_path / "k").chmod(0o600)
    with pytest.raises(ReportFormatError, match="expected a key file .* of at most 4,096 bytes"):
        read_key_file(tmp_path / "k")


def test_read_key_file_dev_zero_is_a_bounded_read(run_limited_python: Callable[..., Any]) -> None:
    # Issue 13, item 7: the whole file was read first; /dev/zero read until out of memory.
    # The child has 1 GiB of address space: the old code died of MemoryError there.
    result = run_limited_python(
        "from rappor import ReportFormatError\n"
        "from rappor.formats import read_key_file\n"
        "try:\n    read_key_file('/dev/zero')\n"
        "except ReportFormatError as exc:\n    print(exc)\n",
        address_space=1 << 30)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == ("/dev/zero: expected a key file (hexadecimal text) of at most 4,096 bytes, "
                             "found a larger file\n")
