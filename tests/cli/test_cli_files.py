"""The files a command reads and writes (``files(args)`` + :mod:`rappor._util.outputs`), end to end.

* no output is ever the same file as an input or another output, however it is named
  (symbolic or hard link, ``..``, standard output redirected onto an input);
* outputs that are not regular files (character devices, FIFOs, standard output) are
  written as they are, never replaced; a symbolic link is written through;
* a closed standard output is a clean error for every command that writes to it.

The table of same-file cases, one per option pair and command, is in
``tests/test_bad_input.py`` (``SAME_FILE_CASES``).
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rappor.cli._main import _command_modules, main
from rappor.formats import write_key_file

REPO = Path(__file__).parents[2]
PARAMS_CSV = "k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n"
KEY = bytes(range(100, 132))


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    (tmp_path / "in.csv").write_text("client,value\na,x\nb,y\nc,z\n")
    (tmp_path / "cand.txt").write_text("x\ny\nz\n")
    write_key_file(tmp_path / "key", KEY)
    assert main(["encode", "--params", str(tmp_path / "params.csv"), "--key-file", str(tmp_path / "key"),
                 str(tmp_path / "in.csv"), "-o", str(tmp_path / "reports.csv"), "--seed", "1"]) == 0
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "reports.csv"),
                 "-o", str(tmp_path / "counts.csv")]) == 0
    return tmp_path


def _device(tmp_path: Path) -> Path:
    """A private null character device (never the system's /dev/null: see tests/_util/conftest.py)."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        if os.geteuid() == 0:  # pragma: no cover
            pytest.skip("cannot create a device node")
        return Path(os.devnull)
    return node


def test_cli_files_every_command_declares_its_files() -> None:
    """``files(args)`` is how cli.main checks paths before a run: no command may skip it."""
    missing = [module.NAME for module in _command_modules() if not callable(getattr(module, "files", None))]
    assert missing == []


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_cli_files_output_linked_to_the_key_is_refused(files: Path, capsys: pytest.CaptureFixture[str],
                                                       link: str) -> None:
    alias = files / "alias"
    getattr(alias, "symlink_to" if link == "symlink" else "hardlink_to")(files / "key")
    key_before = (files / "key").read_bytes()
    status = main(["encode", "--params", str(files / "params.csv"), "--key-file", str(files / "key"),
                   str(files / "in.csv"), "-o", str(alias)])
    err = capsys.readouterr().err
    assert status == 1
    assert err == f"rappor: error: -o {alias} is the same file as --key-file {files / 'key'}: " \
                  f"refusing to overwrite an input\n"
    assert (files / "key").read_bytes() == key_before
    assert stat.S_IMODE((files / "key").stat().st_mode) == 0o600


def test_cli_files_stdout_appended_to_an_input_is_refused(files: Path) -> None:
    """``rappor privacy --params p.csv >> p.csv``: standard output is an input too."""
    params = files / "params.csv"
    with open(params, "a") as stdout:
        run = subprocess.run([sys.executable, "-m", "rappor", "privacy", "--params", str(params)], stdout=stdout,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 1
    assert run.stderr == f"rappor: error: -o <stdout> is the same file as --params {params}: " \
                         f"refusing to overwrite an input\n"
    assert params.read_text() == PARAMS_CSV


def test_cli_files_character_device_outputs_may_coincide(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both outputs to one null device destroy nothing: accepted, and the device stays a device."""
    null = _device(files)
    assert main(["sum-bits", "--params", str(files / "params.csv"), str(files / "reports.csv"), "-o", str(null),
                 "--on-error", "skip", "--rejects", str(null)]) == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert not [p for p in files.iterdir() if p.name.endswith(".tmp")]


def test_cli_files_output_to_a_fifo(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hash-candidates", "--params", str(files / "params.csv"), str(files / "cand.txt"),
                 "-o", str(files / "map.csv")]) == 0
    fifo = files / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    # A daemon: if the FIFO is never opened for writing, the blocked reader must not hang pytest.
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["hash-candidates", "--params", str(files / "params.csv"), str(files / "cand.txt"),
                 "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert received == [(files / "map.csv").read_bytes()]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_cli_files_keygen_writes_through_a_symlink_and_refuses_special_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "secret.key"
    link = tmp_path / "current.key"
    link.symlink_to(target)
    assert main(["keygen", "-o", str(link)]) == 0
    assert link.is_symlink() and len(target.read_text().strip()) == 64
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    old = target.read_bytes()
    assert main(["keygen", "-o", str(link), "--force"]) == 0
    assert link.is_symlink() and target.read_bytes() != old
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (fifo, _device(tmp_path)):
        assert main(["keygen", "-o", str(path), "--force"]) == 1
        assert "not a regular file" in capsys.readouterr().err
        assert not stat.S_ISREG(os.stat(path).st_mode)
    assert main(["keygen", "-o", "-"]) == 1
    assert capsys.readouterr().err == "rappor: error: <stdout>: cannot write key file: not a regular file " \
                                      "(a key needs a file of its own)\n"
    assert not (Path.cwd() / "-").exists()


def _stdout_commands(d: Path) -> dict[str, list[str]]:
    """One run of every command that writes to standard output, given ``-o -`` or by default."""
    return {
        "privacy": ["privacy", "--params", f"{d}/params.csv"],
        "plan": ["plan", "--reports", "1000", "--candidates", "10"],
        "encode": ["encode", "--params", f"{d}/params.csv", "--key-file", f"{d}/key", f"{d}/in.csv"],
        "sum-bits": ["sum-bits", "--params", f"{d}/params.csv", f"{d}/reports.csv"],
        "merge-counts": ["merge-counts", "--params", f"{d}/params.csv", f"{d}/counts.csv"],
        "hash-candidates": ["hash-candidates", "--params", f"{d}/params.csv", f"{d}/cand.txt"],
        "decode": ["decode", "--params", f"{d}/params.csv", "--counts", f"{d}/counts.csv", "--candidates",
                   f"{d}/cand.txt"],
        "simulate": ["simulate", "--clients", "500", "--unique", "5", "--no-report", "--out", f"{d}/sim"],
    }


@pytest.mark.parametrize("command", sorted(_stdout_commands(Path("."))))
def test_cli_files_closed_stdout_is_a_clean_error(files: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Started with ``>&-``, Python has ``sys.stdout = None``: exit 1 with a message, never a traceback."""
    monkeypatch.setattr(sys, "stdout", None)
    status = main(_stdout_commands(files)[command])
    err = capsys.readouterr().err
    assert status == 1
    assert err.splitlines()[-1] == "rappor: error: <stdout>: cannot write: standard output is closed", err
    assert "Traceback" not in err
    assert not [p for p in files.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("close", ["stdout", "stdout and stderr"])
def test_cli_files_closed_stdout_in_a_real_process(files: Path, close: str) -> None:
    """The issue's repro, ``rappor privacy --params p.csv >&-`` (and ``2>&-``), in a shell."""
    redirect = ">&-" if close == "stdout" else ">&- 2>&-"
    script = f'"$0" -m rappor privacy --params "$1" {redirect}; echo "status $?"'
    run = subprocess.run(["sh", "-c", script, sys.executable, str(files / "params.csv")], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.stdout == "status 1\n", (run.stdout, run.stderr)
    if close == "stdout":
        assert run.stderr == "rappor: error: <stdout>: cannot write: standard output is closed\n"
    else:
        assert run.stderr == ""


@pytest.mark.parametrize("command", [["sum-bits", "--params", "{d}/params.csv", "-o", "{d}/c.csv"],
                                     ["hash-candidates", "--params", "{d}/params.csv", "-", "-o", "{d}/m.csv"],
                                     ["merge-counts", "--params", "{d}/params.csv", "-", "-o", "{d}/c.csv"],
                                     ["privacy", "--params", "-"]],
                         ids=["sum-bits", "hash-candidates", "merge-counts", "privacy"])
def test_cli_files_closed_stdin_is_a_clean_error(files: Path, command: list[str]) -> None:
    """``rappor sum-bits ... 0<&-`` (standard input read, but closed) ended in an AttributeError traceback."""
    script = '"$0" -m rappor "$@" 0<&-; echo "status $?"'
    run = subprocess.run(["sh", "-c", script, sys.executable, *(a.format(d=files) for a in command)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.stdout == "status 1\n", (run.stdout, run.stderr)
    assert run.stderr == "rappor: error: <stdin>: cannot read: standard input is closed\n"
    assert not (files / "c.csv").exists() and not (files / "m.csv").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_cli_files_full_stdout_is_one_line_error(files: Path, buffered: bool) -> None:
    """``rappor privacy ... > /dev/full``: one error line, exit 1 (not the interpreter's "Exception ignored", 120)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "rappor", "privacy", "--params", str(files / "params.csv")],
                             stdout=full, stderr=subprocess.PIPE, text=True, env={**env, "PYTHONPATH": str(REPO)})
    assert run.returncode == 1
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith("rappor: error: "), run.stderr
    assert "No space left on device" in run.stderr


def test_cli_files_default_rejects_need_a_regular_output(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OUTPUT.rejects.csv beside a FIFO or a device makes no sense (``/dev/null.rejects.csv``): --rejects is needed."""
    fifo = files / "pipe"
    os.mkfifo(fifo)
    before = sorted(p.name for p in files.iterdir())
    assert main(["sum-bits", "--params", str(files / "params.csv"), str(files / "reports.csv"), "-o", str(fifo),
                 "--on-error", "skip"]) == 1
    assert capsys.readouterr().err == (f"rappor: error: --on-error skip with the counts written to {fifo}, not a "
                                       f"regular file, needs --rejects PATH.\n")
    assert sorted(p.name for p in files.iterdir()) == before


def _parquet_directory(files: Path) -> Path:
    """``files/ds``: the reports of ``files/reports.csv`` as two Parquet files."""
    pytest.importorskip("pyarrow")
    from rappor import Params
    from rappor.formats._parquet import write_parquet_reports
    from rappor.formats._reports_csv import read_reports

    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    batch = read_reports(files / "reports.csv", params)
    (files / "ds").mkdir()
    write_parquet_reports(files / "ds" / "part-0.parquet", batch)
    write_parquet_reports(files / "ds" / "part-1.parquet", batch)
    return files / "ds"


def test_cli_files_output_inside_a_parquet_directory_is_refused(files: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # `sum-bits ds -o ds/part-0.parquet` replaced one of the inputs with counts.csv (exit 0).
    ds = _parquet_directory(files)
    before = (ds / "part-0.parquet").read_bytes()
    for option in (["-o", str(ds / "part-0.parquet")],
                   ["-o", str(files / "c.csv"), "--on-error", "skip", "--rejects", str(ds / "part-0.parquet")]):
        assert main(["sum-bits", "--params", str(files / "params.csv"), str(ds), *option]) == 1
        err = capsys.readouterr().err
        assert f"is the same file as REPORTS {ds / 'part-0.parquet'}: refusing to overwrite an input" in err, err
    assert (ds / "part-0.parquet").read_bytes() == before
    assert not (files / "c.csv").exists()


@pytest.mark.parametrize("how", ["file-and-its-directory", "link-inside-the-directory"])
def test_cli_files_parquet_file_reached_twice_is_refused(files: Path, capsys: pytest.CaptureFixture[str],
                                                         how: str) -> None:
    # Both were counted twice in silence: `sum-bits ds ds/part-0.parquet`, a link ds/x.parquet -> part-0.
    from rappor import InvalidParameterError, Params
    from rappor.engines._aggregate import aggregate_files

    ds = _parquet_directory(files)
    if how == "file-and-its-directory":
        paths = [str(ds), str(ds / "part-0.parquet")]
    else:
        (ds / "x.parquet").symlink_to("part-0.parquet")
        paths = [str(ds)]
    assert main(["sum-bits", "--params", str(files / "params.csv"), *paths, "-o", str(files / "c.csv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: REPORTS ") and err.endswith(": it would be counted twice\n"), err
    assert not (files / "c.csv").exists()
    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="it would be counted twice"):
        aggregate_files(paths, params)


class _FullStream(io.StringIO):
    """A standard output on a full disk: every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("several", [False, True], ids=["one-variable", "several-variables"])
@pytest.mark.parametrize("target", ["stdout", "dev-full"])
def test_cli_files_failed_write_names_the_output_not_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str], several: bool,
                                                               target: str) -> None:
    """An output written while the input is read: its failed write was named as the input's
    ("m.csv: cannot read file: No space left on device"), or named nothing."""

    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n16,2,8,0.25,0.75,0.5\n")
    write_key_file(tmp_path / "key", bytes(range(32)))
    header, row = ("client,a,b\n", "c{i},v{i},1\n") if several else ("client,value\n", "c{i},v{i}\n")
    (tmp_path / "in.csv").write_text(header + "".join(row.format(i=i) for i in range(20_000)))
    argv = ["encode", "--params", str(tmp_path / "params.csv"), "--key-file", str(tmp_path / "key"),
            str(tmp_path / "in.csv"), *(["--bool", "b"] if several else [])]
    if target == "stdout":
        monkeypatch.setattr(sys, "stdout", _FullStream())
        expected = "rappor: error: <stdout>: cannot write: No space left on device\n"
    else:
        if not os.path.exists("/dev/full"):
            pytest.skip("needs /dev/full")
        argv += ["-o", "/dev/full"]
        expected = "rappor: error: /dev/full: cannot write: No space left on device\n"
    assert main(argv) == 1
    assert capsys.readouterr().err.endswith(expected)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_decode_keeps_no_results_when_the_summary_cannot_be_written(interop_dir: Path, tmp_path: Path,
                                                                    capsys) -> None:
    """Found by a tester: with ``--summary`` on a full disk, results.csv was kept (renamed before the summary failed)."""
    from rappor.cli import main

    argv = ["decode", "--params", str(interop_dir / "params.csv"), "--counts", str(interop_dir / "counts.csv"),
            "--map", str(interop_dir / "map.csv"), "-o", str(tmp_path / "results.csv"), "--summary", "/dev/full"]
    assert main(argv) == 1
    assert "/dev/full" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_plan_prints_nothing_when_a_parameter_file_cannot_be_written(tmp_path: Path, capsys) -> None:
    """Found by a tester: the whole plan was printed, then --params-out failed (exit 1 after a full answer)."""
    from rappor.cli import main

    argv = ["plan", "--reports", "100000", "--candidates", "100", "--json", "--params-out",
            str(tmp_path / "missing" / "p.csv")]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "p.csv" in captured.err
    assert main(argv[:-1] + [str(tmp_path / "p.csv")]) == 0
    assert json.loads(capsys.readouterr().out)["recommended"]
    assert (tmp_path / "p.csv").read_text().startswith("k,h,m,p,q,f\n")


def test_standard_input_feeds_one_input_only(interop_dir: Path, tmp_path: Path, capsys) -> None:
    """Found by a tester: ``--counts - --map -`` read the counts, then failed on an 'empty' map."""
    from rappor.cli import main

    argv = ["decode", "--params", str(interop_dir / "params.csv"), "--counts", "-", "--map", "-",
            "-o", str(tmp_path / "r.csv")]
    assert main(argv) == 1
    assert "standard input ('-') can feed one input only, not both --counts and --map" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
