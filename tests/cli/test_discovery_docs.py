"""docs/discovery.md's path from a values file to the final decode runs as written, with the files it makes."""

from __future__ import annotations

import csv
import os
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from rappor._util.csv_text import csv_field
from rappor.cli import main

DOC = Path(__file__).parents[2] / "docs" / "discovery.md"

#: Clients per value (22,000 in all).  Among the frequent ones, a line break and a comma with
#: quotes: every value a client can send must survive from discover to the final decode.
FREQUENT = {"alpha.com": 4000, "bravo": 3000, "evil\nline.com": 3000, 'comma,"quote"': 2500, "charlie.org/x": 2500}
RARE = 7_000  # one client each: too rare to find


def _commands() -> list[list[str]]:
    """The lines of the documented path (the sh block that starts with 'rappor keygen')."""
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
                if b.startswith("rappor keygen")]
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def documented_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    d = tmp_path_factory.mktemp("docs-path")
    rng = np.random.default_rng(11)
    values = [v for v, n in FREQUENT.items() for _ in range(n)] + [f"rare{i}.example.org" for i in range(RARE)]
    order = rng.permutation(len(values))
    with (d / "values.csv").open("w", newline="") as fh:
        fh.write("client,value\n")
        fh.writelines(f"device-{i},{csv_field(values[j])}\n" for i, j in enumerate(order.tolist()))
    ran = []
    cwd = os.getcwd()
    os.chdir(d)
    try:
        for argv in _commands():
            assert argv[0] == "rappor"
            assert main(argv[1:]) == 0, argv
            ran.append(argv[1])
            if argv[1] == "keygen":
                # The key keygen made is random (OS CSPRNG); the collection must be the same
                # on every run for the statistical checks below to be a fixed-seed test, so the
                # documented key file is replaced by a fixed key of the same form.
                key_file = Path(argv[argv.index("-o") + 1])
                assert re.fullmatch(r"[0-9a-f]{64}\n", key_file.read_text())
                key_file.write_text(f"{np.random.default_rng(12).bytes(32).hex()}\n")
    finally:
        os.chdir(cwd)
    return d, ran


def test_documented_path_runs_as_written(documented_run: tuple[Path, list[str]]) -> None:
    d, ran = documented_run
    assert ran == ["keygen", "plan", "encode", "sum-bits", "sum-bits", "discover", "decode"]
    with (d / "found.csv").open(newline="") as fh:
        found = {row["string"]: row for row in csv.DictReader(fh)}
    significant = {s for s, row in found.items() if row["significant"] == "true"}
    # The five frequent values hold 11-18% of the clients each, 115-185 reports of each fragment
    # in a slot of about 1,030 discovery reports, where the noise's standard error is about 14
    # (sqrt(1030 x 0.18), docs/discovery.md's model): each is 8 or more standard errors strong in
    # every slot.  At most one false string (the family-wise level is 0.05).
    assert set(FREQUENT) <= significant
    assert len(significant - set(FREQUENT)) <= 1
    with (d / "results.csv").open(newline="") as fh:
        decoded = {row["string"]: row for row in csv.DictReader(fh)}
    # Every found value reaches the final decode, the line break and the quotes included.
    assert set(FREQUENT) <= set(decoded)


def test_discover_list_warns_about_values_a_line_cannot_hold(documented_run: tuple[Path, list[str]],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    d, _ = documented_run
    assert main(["discover", "--params", str(d / "disc-params.csv"), "--counts", str(d / "disc-counts.csv"),
                 "-o", str(d / "found2.csv"), "--list", str(d / "found2.txt"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 significant value(s) hold a line break" in err and "are not in --list" in err
    assert "evil" not in (d / "found2.txt").read_text()
    assert (d / "found2.csv").read_bytes() == (d / "found.csv").read_bytes()


def test_decode_discover_sends_a_found_csv_to_candidates(documented_run: tuple[Path, list[str]],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    d, _ = documented_run
    assert main(["decode", "--params", str(d / "params.csv"), "--counts", str(d / "counts.csv"), "--discover",
                 str(d / "found.csv"), "-o", "-"]) == 1
    assert "give it to --candidates" in capsys.readouterr().err


def test_discover_progress_bar_on_a_terminal_only(documented_run: tuple[Path, list[str]], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    d, _ = documented_run
    args = ["discover", "--params", str(d / "disc-params.csv"), "--counts", str(d / "disc-counts.csv"), "-o",
            str(tmp_path / "found.csv")]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(args) == 0
    assert "discover:" in capsys.readouterr().err  # the bar over the slots
    assert main([*args, "--quiet"]) == 0
    assert "discover:" not in capsys.readouterr().err
