"""``rappor encode`` and ``rappor keygen``."""

from __future__ import annotations

import csv
import io
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

import rappor.engines._encode as file_encoder
from rappor import Encoder, Params, read_key_file, write_key_file
from rappor.client import client_secret
from rappor.cli._main import build_parser, main

KEY = bytes(range(100, 132))


def _setup(tmp_path: Path, rows: list[tuple[str, str]], *, p: float = 0.25, q: float = 0.75,
           f: float = 0.5, k: int = 16, m: int = 8) -> tuple[Path, Path, Path]:
    params = tmp_path / "params.csv"
    params.write_text(f"k,h,m,p,q,f\n{k},2,{m},{p},{q},{f}\n")
    key = tmp_path / "key"
    write_key_file(key, KEY)
    inp = tmp_path / "input.csv"
    with inp.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["client", "value"])
        writer.writerows(rows)
    return params, key, inp


def _run(params: Path, key: Path, inp: Path | str, out: Path, *extra: str) -> int:
    return main(["encode", "--params", str(params), "--key-file", str(key), str(inp), "-o", str(out), *extra])


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


ROWS = [(f"client-{i}", f"value-{i % 7}") for i in range(60)]


def test_encode_writes_client_cohort_irr(tmp_path: Path) -> None:
    params, key, inp = _setup(tmp_path, ROWS)
    out = tmp_path / "reports.csv"
    assert _run(params, key, inp, out) == 0
    rows = _read(out)
    assert rows[0] == ["client", "cohort", "irr"]
    assert len(rows) == len(ROWS) + 1
    p = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    for (client, _), row in zip(ROWS, rows[1:]):
        assert row[0] == client
        assert int(row[1]) == Encoder(p, client_secret(KEY, client)).cohort
        assert len(row[2]) == 16 and set(row[2]) <= {"0", "1"}


def test_encode_irr_is_the_prr_bit_string_when_p0_q1(tmp_path: Path) -> None:
    # With p=0 and q=1 the report is the PRR: the CLI output must equal the library's PRR in
    # google/rappor order (character 0 = bit k-1), and re-running must give the same PRRs.
    params, key, inp = _setup(tmp_path, ROWS, p=0.0, q=1.0, f=0.5)
    out1, out2 = tmp_path / "a.csv", tmp_path / "b.csv"
    assert _run(params, key, inp, out1) == 0
    assert _run(params, key, inp, out2) == 0
    assert out1.read_bytes() == out2.read_bytes()
    p = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    for (client, value), row in zip(ROWS, _read(out1)[1:]):
        prr = Encoder(p, client_secret(KEY, client)).trace(value).prr
        assert row[2] == "".join(str(b) for b in prr[::-1])


def test_encode_irr_fresh_unless_seeded(tmp_path: Path) -> None:
    params, key, inp = _setup(tmp_path, ROWS)
    outs = [tmp_path / f"{i}.csv" for i in range(4)]
    assert _run(params, key, inp, outs[0]) == 0
    assert _run(params, key, inp, outs[1]) == 0
    assert _run(params, key, inp, outs[2], "--seed", "5") == 0
    assert _run(params, key, inp, outs[3], "--seed", "5") == 0
    assert outs[0].read_bytes() != outs[1].read_bytes()  # 960 fresh bits: equal with prob ~ 2**-500
    assert outs[2].read_bytes() == outs[3].read_bytes()
    # Cohorts never change.
    assert [r[:2] for r in _read(outs[0])] == [r[:2] for r in _read(outs[2])]


def test_encode_parallel_equals_serial_with_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 7)  # several chunks, so workers are used
    params, key, inp = _setup(tmp_path, ROWS)
    serial, parallel = tmp_path / "s.csv", tmp_path / "p.csv"
    assert _run(params, key, inp, serial, "--seed", "3", "--jobs", "1") == 0
    assert _run(params, key, inp, parallel, "--seed", "3", "--jobs", "2") == 0
    assert serial.read_bytes() == parallel.read_bytes()


def test_encode_quoted_fields_bom_crlf_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    params, key, _ = _setup(tmp_path, [], p=0.0, q=1.0)
    data = '\ufeff"client", "value"\r\n"a,b","x, y"\r\n"say ""hi""",\r\nc, x\r\n\r\n'.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["encode", "--params", str(params), "--key-file", str(key), "-"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert [r[0] for r in rows] == ["client", "a,b", 'say "hi"', "c"]
    p = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    prr = Encoder(p, client_secret(KEY, "a,b")).trace("x, y").prr
    assert rows[1][2] == "".join(str(b) for b in prr[::-1])
    prr_empty = Encoder(p, client_secret(KEY, 'say "hi"')).trace("").prr
    assert rows[2][2] == "".join(str(b) for b in prr_empty[::-1])
    prr_space = Encoder(p, client_secret(KEY, "c")).trace(" x").prr  # the space is part of the value
    assert rows[3][2] == "".join(str(b) for b in prr_space[::-1])


@pytest.mark.parametrize(
    ("content", "where", "message"),
    [
        (b"", "input.csv: ", "found an empty file"),
        (b"id,value\nA,x\n", "input.csv:1:", "expected the header 'client,value'"),
        (b"client,value\nA,x\nB\n", "input.csv:3:", "expected 2 comma-separated fields"),
        (b"client,value\nA,x,y\n", "input.csv:2:", "found 3"),
        (b"client,value\n,x\n", "input.csv:2:", "expected a client id"),
        (b"client,value\nA,x\nB,\xff\n", "input.csv:3:", "expected UTF-8"),
        (b'client,value\nA,"x\n', "input.csv:", "malformed CSV"),
    ],
)
def test_encode_bad_input_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              content: bytes, where: str, message: str) -> None:
    params, key, inp = _setup(tmp_path, [])
    inp.write_bytes(content)
    out = tmp_path / "reports.csv"
    assert _run(params, key, inp, out) == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: ")
    assert where in err and message in err
    assert not out.exists()  # atomic: no partial output


def test_encode_missing_key_file_is_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, _, inp = _setup(tmp_path, ROWS)
    out = tmp_path / "reports.csv"
    assert _run(params, tmp_path / "missing-key", inp, out) == 1
    assert "missing-key: cannot read file: no such file" in capsys.readouterr().err
    assert not out.exists()


def test_encode_key_file_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, _, inp = _setup(tmp_path, ROWS)
    with pytest.raises(SystemExit) as exc:
        main(["encode", "--params", str(params), str(inp)])
    assert exc.value.code == 2
    assert "--key-file" in capsys.readouterr().err


def test_encode_world_readable_key_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, key, inp = _setup(tmp_path, ROWS[:2])
    key.chmod(0o644)
    assert _run(params, key, inp, tmp_path / "out.csv") == 0
    assert "rappor: warning:" in capsys.readouterr().err


def test_encode_seed_help_says_not_secure() -> None:
    parser = build_parser()
    text = next(a for a in parser._subparsers._group_actions[0].choices["encode"]._actions  # type: ignore[union-attr]
                if "--seed" in a.option_strings).help
    assert "NOT secure" in text and "simulation" in text


def test_encode_seed_warns_at_run_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, key, inp = _setup(tmp_path, ROWS[:2])
    assert _run(params, key, inp, tmp_path / "a.csv", "--seed", "5") == 0
    err = capsys.readouterr().err
    assert err.startswith("rappor: warning: --seed:") and "NOT private" in err, err
    assert _run(params, key, inp, tmp_path / "b.csv") == 0
    assert capsys.readouterr().err == ""  # the real client path: no warning


@pytest.mark.parametrize(("mode", "says"), [(0o644, "can be read by every user of this machine"),
                                            (0o640, "can be read by its group"),
                                            (0o602, "can be changed by every user of this machine"),
                                            (0o620, "can be changed by its group")])
def test_encode_key_file_open_to_others_warns_at_run_time(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          mode: int, says: str) -> None:
    params, key, inp = _setup(tmp_path, ROWS[:2])
    key.chmod(mode)
    assert _run(params, key, inp, tmp_path / "out.csv") == 0
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: warning: {key}: the key file {says}; restrict it with 'chmod 600"), err
    assert KEY.hex() not in err


def test_encode_rejects_file_is_private(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rejects file holds raw client values: created 0600 whatever the umask."""
    params, key, _ = _setup(tmp_path, [])
    inp = tmp_path / "in.csv"
    inp.write_text("client,value\na,secret value\n,orphan secret\n")
    umask = os.umask(0o022)
    try:
        assert _run(params, key, inp, tmp_path / "out.csv", "--on-error", "skip") == 0
    finally:
        os.umask(umask)
    rejects = tmp_path / "out.csv.rejects.csv"
    assert "orphan secret" in rejects.read_text()
    assert stat.S_IMODE(rejects.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o644  # reports: the usual mode


def test_keygen_creates_private_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "key"
    assert main(["keygen", "-o", str(path)]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = read_key_file(path)
    assert len(key) == 32
    assert main(["keygen", "-o", str(path)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert read_key_file(path) == key
    assert main(["keygen", "-o", str(path), "--force"]) == 0
    assert read_key_file(path) != key


def test_encode_output_has_one_row_per_input_row_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 4)
    rows = [(f"c{i % 5}", f"v{i}") for i in range(23)]  # repeated clients
    params, key, inp = _setup(tmp_path, rows)
    out = tmp_path / "o.csv"
    assert _run(params, key, inp, out, "--jobs", "1") == 0
    got = _read(out)[1:]
    assert [r[0] for r in got] == [c for c, _ in rows]
    cohorts = {r[0]: r[1] for r in got}
    assert all(cohorts[r[0]] == r[1] for r in got)  # a client's cohort is fixed
    assert np.unique([r[1] for r in got]).size >= 1


def test_encode_output_reads_back_as_reports(tmp_path: Path) -> None:
    # The output is the reports file every later stage reads (rappor.formats.read_reports).
    from rappor.formats import read_params
    from rappor.formats._reports_csv import read_reports

    rows = ROWS + [("with,comma", "v"), ('with "quote"', "w")]
    params, key, inp = _setup(tmp_path, rows)
    out = tmp_path / "reports.csv"
    assert _run(params, key, inp, out, "--seed", "1") == 0
    batch = read_reports(out, read_params(params))
    assert len(batch) == len(rows)
    written = _read(out)[1:]
    assert batch.bitstrings() == [r[2] for r in written]
    assert batch.cohorts.tolist() == [int(r[1]) for r in written]


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_encode_fail_bad_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    params, key, inp = _setup(tmp_path, ROWS)
    with pytest.raises(SystemExit) as exc:
        _run(params, key, inp, tmp_path / "o.csv", "--jobs", jobs)
    assert exc.value.code == 2
    assert f"argument --jobs: expected an integer >= 1, got '{jobs}'" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_encode_fail_jobs_not_int(tmp_path: Path) -> None:
    params, key, inp = _setup(tmp_path, ROWS)
    with pytest.raises(SystemExit) as exc:
        _run(params, key, inp, tmp_path / "o.csv", "--jobs", "two")
    assert exc.value.code == 2


# ------------------------------------------------------------------ --on-error skip

MIXED = (b'client,value\n'
         b'a,x\n'                      # 2 good
         b'b,y,z\n'                    # 3 three fields
         b',v\n'                       # 4 empty client id
         b'c,\xff\n'                   # 5 invalid UTF-8
         b'd,"two\nlines"\n'           # 6-7 good (quoted newline)
         b'e,"x"y\n'                   # 8 bad quoting
         b'f,z\n'                      # 9 good
         b'g,"x\ny",extra\n'           # 10-11 three fields over two lines
         b'h,w\n'                      # 12 good
         b'i,"never closed\n')         # 13 unterminated quote
MIXED_GOOD = ["a", "d", "f", "h"]


def _mixed(tmp_path: Path) -> tuple[Path, Path, Path]:
    params, key, inp = _setup(tmp_path, [])
    inp.write_bytes(MIXED)
    return params, key, inp


def test_encode_skip_writes_good_rows_and_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rappor.formats import read_params
    from rappor.formats._reports_csv import read_reports

    params, key, inp = _mixed(tmp_path)
    out = tmp_path / "reports.csv"
    assert _run(params, key, inp, out, "--on-error", "skip") == 0
    assert "rappor: skipped 6 bad row(s); 4 reports written" in capsys.readouterr().err
    assert len(read_reports(out, read_params(params))) == len(MIXED_GOOD)
    assert [r[0] for r in _read(out)[1:]] == MIXED_GOOD
    rejects = _read(tmp_path / "reports.csv.rejects.csv")
    assert rejects[0] == ["file", "line", "reason", "row"]
    assert all(r[0] == str(inp) for r in rejects[1:])
    assert [(r[1], r[3]) for r in rejects[1:]] == [
        ("3", "b,y,z"), ("4", ",v"), ("5", "c,\ufffd"), ("8", 'e,"x"y'), ("10", 'g,"x\ny",extra'),
        ("13", 'i,"never closed')]
    reasons = [r[2] for r in rejects[1:]]
    assert reasons[:3] == ["expected 2 comma-separated fields (client,value), found 3",
                           "expected a client id, found an empty field",
                           "expected UTF-8 text, found the byte 0xff"]
    assert reasons[3].startswith("malformed CSV: ") and reasons[5].startswith("malformed CSV: ")
    assert reasons[4] == reasons[0]


def test_encode_skip_reasons_match_fail_fast_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Each rejected row, alone after the header, fails the default mode with the same line and reason.
    params, key, inp = _mixed(tmp_path)
    assert _run(params, key, inp, tmp_path / "o.csv", "--on-error", "skip", "--rejects", str(tmp_path / "r.csv")) == 0
    capsys.readouterr()
    for _, line, reason, row in _read(tmp_path / "r.csv")[1:]:
        padding = "\n" * (int(line) - 2)  # blank lines keep the row at its line number
        inp.write_bytes(b"client,value\n" + padding.encode() + row.replace("\ufffd", "\udcff").encode(
            "utf-8", errors="surrogateescape") + b"\n")
        assert _run(params, key, inp, tmp_path / "o2.csv") == 1
        assert capsys.readouterr().err == f"rappor: error: {inp}:{line}: {reason}\n"


def test_encode_skip_parallel_equals_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 1)  # several chunks, so workers are used
    params, key, inp = _mixed(tmp_path)
    serial, parallel = tmp_path / "s.csv", tmp_path / "p.csv"
    assert _run(params, key, inp, serial, "--seed", "3", "--jobs", "1", "--on-error", "skip") == 0
    assert _run(params, key, inp, parallel, "--seed", "3", "--jobs", "2", "--on-error", "skip") == 0
    assert serial.read_bytes() == parallel.read_bytes()
    assert Path(f"{serial}.rejects.csv").read_bytes() == Path(f"{parallel}.rejects.csv").read_bytes()


def test_encode_default_fails_at_first_bad_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, key, inp = _mixed(tmp_path)
    out = tmp_path / "reports.csv"
    assert _run(params, key, inp, out) == 1
    assert capsys.readouterr().err.startswith(f"rappor: error: {inp}:3: expected 2 comma-separated fields")
    assert list(tmp_path.glob("reports.csv*")) == []


@pytest.mark.parametrize("header", [b"client,val\n", b"client,\xff\n", b'client,"va"lue\n'])
def test_encode_skip_bad_header_is_fatal_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            header: bytes) -> None:
    params, key, inp = _setup(tmp_path, [])
    inp.write_bytes(header + b"a,x\nb,y,z\n")
    (tmp_path / "out").mkdir()
    assert _run(params, key, inp, tmp_path / "out" / "r.csv", "--on-error", "skip") == 1
    assert capsys.readouterr().err.startswith(f"rappor: error: {inp}:1: ")
    assert list((tmp_path / "out").iterdir()) == []


def test_encode_skip_stdout_needs_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, key, inp = _mixed(tmp_path)
    argv = ["encode", "--params", str(params), "--key-file", str(key), str(inp), "--on-error", "skip"]
    assert main(argv) == 1
    assert "needs --rejects PATH" in capsys.readouterr().err
    assert main([*argv, "--rejects", str(tmp_path / "bad.csv")]) == 0
    out = capsys.readouterr().out
    assert [r[0] for r in csv.reader(io.StringIO(out))][1:] == MIXED_GOOD
    assert len(_read(tmp_path / "bad.csv")) == 7


# Issue 13, item 9, for encode: the input was opened once to read its header (one value
# column or several?) and again to encode it.  From a pipe (<(cat f)) or a FIFO the
# second open found the header gone: "expected the header 'client,value', found '4,v14'".
MULTI = "client,a,b\n" + "".join(f"c{i},v{i % 5},{i % 2}\n" for i in range(50))
SINGLE = "client,value\n" + "".join(f"c{i},v{i % 5}\n" for i in range(50))


@pytest.mark.parametrize("via", ["pipe", "fifo", "stdin"])
@pytest.mark.parametrize("text", [SINGLE, MULTI], ids=["one-variable", "several-variables"])
def test_encode_reads_a_pipe_or_fifo_once(tmp_path: Path, via: str, text: str) -> None:
    import subprocess
    import threading

    params, key, _ = _setup(tmp_path, [])
    (tmp_path / "in.csv").write_text(text)
    extra = ["--bool", "b"] if text is MULTI else []
    assert _run(params, key, tmp_path / "in.csv", tmp_path / "expected.csv", "--seed", "4", *extra) == 0
    argv = [sys.executable, "-m", "rappor", "encode", "--params", str(params), "--key-file", str(key), "--seed", "4",
            *extra]
    options: dict[str, object] = {}
    if via == "stdin":
        argv.append("-")
        options["input"] = text.encode()
    else:
        if via == "fifo":
            os.mkfifo(tmp_path / "in.fifo")
            source: str | int = str(tmp_path / "in.fifo")
            argv.append(str(source))
        else:
            read_end, source = os.pipe()
            argv.append(f"/dev/fd/{read_end}")
            options["pass_fds"] = (read_end,)

        def feed() -> None:
            fd = os.open(source, os.O_WRONLY) if isinstance(source, str) else source
            try:
                os.write(fd, text.encode())
            except BrokenPipeError:
                pass
            finally:
                os.close(fd)

        threading.Thread(target=feed, daemon=True).start()
    try:
        result = subprocess.run(argv, capture_output=True, timeout=60, **options)  # type: ignore[call-overload]
    finally:
        if via == "pipe":
            os.close(read_end)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (tmp_path / "expected.csv").read_bytes()


def test_encode_rejects_file_neutralises_formulas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rejected row is what a client sent: people open the rejects file in a spreadsheet, so a row starting
    with = + - @ gets a leading quote (OWASP CSV injection)."""
    params, key, inp = _setup(tmp_path, [])
    inp.write_bytes(b"client,value\na,x\n=cmd|' /C calc'!A0,y,z\n-2+3\n")
    assert _run(params, key, inp, tmp_path / "reports.csv", "--on-error", "skip") == 0
    capsys.readouterr()
    rows = [r[3] for r in _read(tmp_path / "reports.csv.rejects.csv")[1:]]
    assert rows == ["'=cmd|' /C calc'!A0,y,z", "'-2+3"]


def test_encode_progress_bar_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    params, key, inp = _setup(tmp_path, [("c1", "a"), ("c2", "b")])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert _run(params, key, inp, tmp_path / "out.csv") == 0
    assert "encode" in capsys.readouterr().err  # the bar, on stderr
    assert _run(params, key, inp, tmp_path / "out.csv", "--quiet") == 0
    assert capsys.readouterr().err == ""


def test_encode_quiet_says_nothing_with_several_variables(tmp_path: Path, capsys) -> None:
    # Found by a tester: -q silenced one value column but not "encoded N rows (report tuples)".
    params, key, _ = _setup(tmp_path, [])
    (tmp_path / "in.csv").write_text(MULTI)
    assert _run(params, key, tmp_path / "in.csv", tmp_path / "out.csv", "--bool", "b", "-q") == 0
    assert capsys.readouterr().err == ""
    assert _run(params, key, tmp_path / "in.csv", tmp_path / "out.csv", "--bool", "b") == 0
    assert "encoded 50 rows" in capsys.readouterr().err
