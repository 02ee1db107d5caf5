"""File plumbing (rappor._util.io): atomic outputs and tolerant, precise input reading."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rappor import InvalidParameterError, RapporIOError, ReportFormatError
from rappor._util.io import atomic_output, csv_field, display_name, iter_text_lines, read_input_bytes


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
    with pytest.raises(RapporIOError, match="is a directory"):
        with atomic_output(tmp_path):
            pass
    with pytest.raises(RapporIOError, match="cannot write file"):
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


# ---------------------------------------------------------------- non-regular targets and permissions

def _null_device(tmp_path: Path) -> Path:
    """A character device to write to: a private copy of /dev/null where we may create one (root).

    Never the system's /dev/null as root: code that renames over its target would replace
    the machine's device.  Without root it cannot, and /dev/null is safe to use.
    """
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        if os.geteuid() == 0:  # pragma: no cover - root without CAP_MKNOD
            pytest.skip("cannot create a device node, and /dev/null must not be risked as root")
        return Path(os.devnull)
    return node


def test_atomic_output_character_device_is_written_not_replaced(tmp_path: Path) -> None:
    null = _null_device(tmp_path)
    before = os.stat(null)
    with atomic_output(null) as fh:
        fh.write("discarded\n")
    after = os.stat(null)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert [p for p in tmp_path.iterdir() if p.name != "null"] == []  # no temporary file either


def test_atomic_output_fifo_is_written_not_replaced(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    # A daemon: if the FIFO is never opened for writing, the blocked reader must not hang pytest.
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    with atomic_output(fifo) as fh:
        fh.write("through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_atomic_output_symlink_writes_through_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "data" / "real.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with atomic_output(link) as fh:
        fh.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["real.csv"]


def test_atomic_output_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "made.csv")
    with atomic_output(link) as fh:
        fh.write("x\n")
    assert link.is_symlink() and (tmp_path / "made.csv").read_text() == "x\n"


def test_atomic_output_fail_socket(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(RapporIOError, match="not a regular file, a character device or a FIFO"):
            with atomic_output(path):
                pass
    assert stat.S_ISSOCK(os.stat(path).st_mode)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o444])
def test_atomic_output_replacing_keeps_the_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    os.chmod(path, mode)
    old = os.umask(0o077)  # the umask applies to new files only
    try:
        with atomic_output(path) as fh:
            fh.write("new\n")
    finally:
        os.umask(old)
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_atomic_output_private_is_owner_only(tmp_path: Path) -> None:
    new, old_file = tmp_path / "new.csv", tmp_path / "old.csv"
    old_file.write_text("old\n")
    os.chmod(old_file, 0o644)
    umask = os.umask(0o022)
    try:
        for path in (new, old_file):
            with atomic_output(path, private=True) as fh:
                fh.write("raw client values\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert stat.S_IMODE(old_file.stat().st_mode) == 0o600  # at most the owner's bits of the replaced file


def test_atomic_output_dev_stdout_is_standard_output(tmp_path: Path) -> None:
    """``-o /dev/stdout`` with stdout redirected to a file appends there, never replaces the file.

    The test names ``/proc/self/fd/1`` (where ``/dev/stdout`` points): code that renames
    over its target cannot create a file in /proc, whereas as root it would replace the
    machine's /dev/stdout link.
    """
    if not os.path.exists("/proc/self/fd/1"):  # pragma: no cover - not Linux
        pytest.skip("needs /proc/self/fd")
    log = tmp_path / "log"
    log.write_text("earlier\n")
    code = ("from rappor._util.io import atomic_output\n"
            "with atomic_output('/proc/self/fd/1') as fh:\n    fh.write('more\\n')\n")
    with open(log, "a") as out:
        subprocess.run([sys.executable, "-c", code], stdout=out, check=True,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert log.read_text() == "earlier\nmore\n"


def test_atomic_output_closed_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(RapporIOError, match="<stdout>: cannot write: standard output is closed"):
        with atomic_output("-"):
            pass


# ---------------------------------------------------------------- same file twice

def test_check_distinct_files_sees_through_links_and_spellings(tmp_path: Path) -> None:
    from rappor._util.io import check_distinct_files

    data = tmp_path / "data.csv"
    data.write_text("x\n")
    (tmp_path / "hard.csv").hardlink_to(data)
    (tmp_path / "soft.csv").symlink_to(data)
    (tmp_path / "sub").mkdir()
    for alias in ("hard.csv", "soft.csv", "sub/../data.csv", "./data.csv"):
        with pytest.raises(InvalidParameterError, match=f"-o {tmp_path / alias} is the same file as INPUT {data}"):
            check_distinct_files([("INPUT", data)], [("-o", tmp_path / alias)])
    # Outputs that do not exist yet are compared by their resolved paths.
    (tmp_path / "later").symlink_to(tmp_path / "new.csv")
    with pytest.raises(InvalidParameterError, match="two outputs cannot share a file"):
        check_distinct_files([], [("-o", tmp_path / "new.csv"), ("--summary", tmp_path / "later")])
    with pytest.raises(InvalidParameterError, match="it would be counted twice"):
        check_distinct_files([], [], summed=[("REPORTS", data), ("REPORTS", tmp_path / "hard.csv")])
    check_distinct_files([("INPUT", data)], [("-o", tmp_path / "other.csv")])  # distinct: fine
    check_distinct_files([("INPUT", data), ("--params", data)], [])  # two options may read one file


def test_check_distinct_files_character_devices_may_repeat(tmp_path: Path) -> None:
    from rappor._util.io import check_distinct_files

    null = _null_device(tmp_path)
    check_distinct_files([("INPUT", null)], [("-o", null), ("--rejects", null)])


def test_check_distinct_files_standard_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rappor._util.io import check_distinct_files

    data = tmp_path / "data.csv"
    data.write_text("x\n")
    with pytest.raises(InvalidParameterError, match="-o <stdout> is the same file as --rejects <stdout>"):
        check_distinct_files([], [("--rejects", "-"), ("-o", "-")])
    check_distinct_files([("INPUT", "-")], [("-o", "-")])  # stdin and stdout are different streams
    with open(data, "a") as redirected:  # rappor ... >> data.csv
        monkeypatch.setattr(sys, "stdout", redirected)
        with pytest.raises(InvalidParameterError, match=f"-o <stdout> is the same file as --params {data}"):
            check_distinct_files([("--params", data)], [("-o", "-")])


def test_check_distinct_files_is_linear_in_the_number_of_paths(tmp_path: Path) -> None:
    # `sum-bits` over many files: the pairwise comparison took 4.4 s for 10,000 paths and would
    # take minutes for 100,000 (part files of one Spark job). 40,000 paths, the first repeated
    # last: a table of identities answers in about 0.3 s, the pairwise loop in about a minute.
    # Run in a child with a 30 s time limit (a hang guard, 100x the expected time, not a benchmark).
    code = (
        "import sys\n"
        "from rappor._util.io import check_distinct_files\n"
        "paths = [('REPORTS', f'{sys.argv[1]}/r{i}.csv') for i in range(40_000)]\n"
        "try:\n"
        "    check_distinct_files([], [('-o', sys.argv[1] + '/out.csv')], summed=[*paths, paths[0]])\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    try:
        run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                             timeout=30, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("checking 40,000 paths took more than 30 s (quadratic?)")
    assert run.stdout == f"REPORTS {tmp_path}/r0.csv is the same file as REPORTS {tmp_path}/r0.csv: it would be counted twice\n", run.stderr


@pytest.mark.parametrize("text", ["plain", "a,b", 'say "hi"', "two\nlines", "lone\rcr", " padded ", "\ttab", "",
                                  "https://example.com/?q=1,2", "é ünïcode"])
def test_csv_field_round_trips_through_the_csv_module(text):
    import csv

    row = f"{csv_field(text)},1\n"
    assert next(csv.reader(io.StringIO(row, newline=""))) == [text, "1"]
    quoted = csv_field(text).startswith('"')
    assert quoted == (any(ch in text for ch in ',"\r\n') or text != text.strip())


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

    from rappor._util.io import _STARTED, open_input_binary, read_first_line

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


def test_atomic_output_never_replaces_a_key_file(tmp_path: Path) -> None:
    """Every writer goes through atomic_output: a key (by content, any name, through a link) is never replaced."""
    from rappor import Params
    from rappor import write_key_file
    from rappor.formats import write_params

    key = tmp_path / "client.key"
    write_key_file(key, bytes(range(32)))
    content = key.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(key)
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    for target in (key, link):
        with pytest.raises(RapporIOError, match="refusing to replace a key file") as info:
            write_params(params, target)
        assert content.decode().strip() not in str(info.value)
    assert key.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["client.key", "link.csv"]  # no temporary file left
    other = tmp_path / "hex.txt"  # hex text too short to be a key: an ordinary file, replaced
    other.write_text("abcd\n")
    write_params(params, other)
    assert other.read_text().startswith("k,h,m,p,q,f")
