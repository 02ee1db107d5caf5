"""Writing outputs (rappor._util.outputs): complete or not at all, never over a key file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rappor import RapporIOError
from rappor._util.outputs import atomic_output


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


def test_atomic_output_character_device_is_written_not_replaced(tmp_path: Path, null_device: Path) -> None:
    null = null_device
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
    code = ("from rappor._util.outputs import atomic_output\n"
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


def test_atomic_output_never_replaces_a_key_file(tmp_path: Path) -> None:
    """Every writer goes through atomic_output: a key (by content, any name, through a link) is never replaced."""
    from rappor import Params, write_key_file
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


def test_outputs_together_appear_together_or_not_at_all(tmp_path: Path) -> None:
    from rappor._util.outputs import outputs_together

    first, second = tmp_path / "results.csv", tmp_path / "summary.json"
    first.write_text("old results\n")
    with pytest.raises(Boom), outputs_together():
        with atomic_output(first) as fh:
            fh.write("new results\n")
        assert first.read_text() == "old results\n"  # written and synced, not yet renamed
        with atomic_output(second) as fh:
            fh.write("{}")
        raise Boom
    assert first.read_text() == "old results\n" and not second.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]  # no temporary file left
    with outputs_together():
        with atomic_output(first) as fh:
            fh.write("new results\n")
        with outputs_together():  # nested: joins the outer set
            with atomic_output(second) as fh:
                fh.write("{}")
        assert not second.exists()
    assert first.read_text() == "new results\n" and second.read_text() == "{}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_outputs_together_keep_no_file_when_one_cannot_be_written(tmp_path: Path) -> None:
    # A full disk for the second file (/dev/full) after the first was complete: neither is kept.
    from rappor._util.outputs import outputs_together

    first = tmp_path / "results.csv"
    with pytest.raises(RapporIOError), outputs_together():
        with atomic_output(first) as fh:
            fh.write("results\n")
        with atomic_output("/dev/full") as fh:
            fh.write("x" * 100_000)
    assert list(tmp_path.iterdir()) == []


def test_standard_output_gets_the_files_encoding_whatever_the_locale(tmp_path: Path) -> None:
    # Found by a tester: `-o -` with an ASCII standard output raised UnicodeEncodeError (a traceback).
    (tmp_path / "values.txt").write_text("café\n", encoding="utf-8")
    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n16,2,4,0.5,0.75,0.5\n")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "rappor", "hash-candidates", "--params", str(tmp_path / "params.csv"),
                           str(tmp_path / "values.txt"), "-o", "-"], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode("utf-8").startswith("café,")
