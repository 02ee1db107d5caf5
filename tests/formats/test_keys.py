"""rappor.formats._keys: key files round-trip, are never replaced by accident, warn when others may
read them, and refuse any other content without quoting it."""

from __future__ import annotations

import stat
import warnings
from pathlib import Path

import pytest

from rappor import InsecureKeyFileWarning, InvalidParameterError, RapporIOError, ReportFormatError, generate_key
from rappor.formats import read_key_file, write_key_file

SECRET = bytes(range(32))


def test_key_file_round_trip(tmp_path: Path) -> None:
    key = generate_key()
    assert len(key) == 32
    assert generate_key() != key
    path = tmp_path / "key"
    write_key_file(path, key)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == key.hex() + "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_key_file(path) == key
    assert not [p for p in tmp_path.iterdir() if p.name != "key"]  # no temporary left behind


def test_write_key_file_refuses_to_replace(tmp_path: Path) -> None:
    path = tmp_path / "key"
    write_key_file(path, SECRET)
    with pytest.raises(RapporIOError, match="already exists"):
        write_key_file(path, bytes(32))
    assert read_key_file(path) == SECRET
    write_key_file(path, bytes(range(1, 33)), overwrite=True)
    assert read_key_file(path) == bytes(range(1, 33))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_read_key_file_warns_when_world_readable(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(SECRET.hex() + "\n")
    path.chmod(0o644)
    with pytest.warns(InsecureKeyFileWarning, match="chmod 600"):
        assert read_key_file(path) == SECRET


def test_read_key_file_missing_is_error(tmp_path: Path) -> None:
    path = tmp_path / "nokey"
    with pytest.raises(RapporIOError, match="nokey.*no such file"):
        read_key_file(path)


@pytest.mark.parametrize("content", [b"", b"\n", b"not hex at all!!", b"abc", "é".encode() * 20,
                                     b"00112233445566778899aabbccddee", SECRET])
def test_read_key_file_fail_bad_content_never_shows_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "key"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(ReportFormatError, match="key") as err:
        read_key_file(path)
    assert str(path) in str(err.value)
    if len(content) > 3:
        assert content.decode("latin-1") not in str(err.value)
        assert content.hex() not in str(err.value)


def test_read_key_file_accepts_whitespace_and_uppercase(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("  " + SECRET.hex().upper() + "\r\n")
    path.chmod(0o600)
    assert read_key_file(path) == SECRET


def test_read_key_file_fail_stdin() -> None:
    with pytest.raises(InvalidParameterError, match="<stdin>: .*not standard input"):
        read_key_file("-")


def test_a_guessable_key_is_warned_of_and_a_file_that_is_no_key_gets_no_chmod_advice(tmp_path: Path) -> None:
    # Found by a tester: 32 zero bytes were accepted silently, and /etc/passwd (mode 644) was first told to
    # 'chmod 600', then refused.
    import warnings

    from rappor.exceptions import InsecureKeyFileWarning, ReportFormatError

    zero = tmp_path / "zero.key"
    zero.write_text("00" * 32 + "\n")
    zero.chmod(0o600)
    with pytest.warns(InsecureKeyFileWarning, match="1 distinct byte value"):
        assert read_key_file(zero) == bytes(32)
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    other.chmod(0o644)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning before the error
        with pytest.raises(ReportFormatError, match="found other content"):
            read_key_file(other)
    empty = tmp_path / "empty.key"
    empty.write_text("")
    empty.chmod(0o600)
    with pytest.raises(ReportFormatError, match="found an empty file"):
        read_key_file(empty)
    good = tmp_path / "good.key"
    good.write_text(bytes(range(32)).hex() + "\n")
    good.chmod(0o600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_key_file(good) == bytes(range(32))
