"""Paths (rappor._util.paths): how messages name them, and the refusal of two paths to one file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rappor import InvalidParameterError
from rappor._util.paths import display_name


def test_display_name() -> None:
    assert display_name("-") == "<stdin>"
    assert display_name(None) == "<stdin>"
    assert display_name(Path("a/b.csv")) == os.path.join("a", "b.csv")


def test_check_distinct_files_sees_through_links_and_spellings(tmp_path: Path) -> None:
    from rappor._util.paths import check_distinct_files

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


def test_check_distinct_files_character_devices_may_repeat(null_device: Path) -> None:
    from rappor._util.paths import check_distinct_files

    null = null_device
    check_distinct_files([("INPUT", null)], [("-o", null), ("--rejects", null)])


def test_check_distinct_files_standard_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rappor._util.paths import check_distinct_files

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
        "from rappor._util.paths import check_distinct_files\n"
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
