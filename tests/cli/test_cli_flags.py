"""Bad option values: every CLI error names the flag the user typed, never a Python parameter.

A value out of range for one option is a usage error (exit status 2, argparse's
``argument --flag: expected ..., got '...'``); a value that only conflicts with another
option is an error naming both (exit status 1).  The table below must cover every option
that parses a number, so a new option cannot slip through unchecked.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rappor.cli._main import build_parser, main

REPO = Path(__file__).parents[2]
SAMPLE = REPO / "data" / "sample"
ASSOC = Path(__file__).parents[1] / "data" / "assoc_google"

#: A valid invocation of each command (bad values are appended to it).
BASE = {
    "decode": ["decode", "--params", str(SAMPLE / "params.csv"), "--counts", str(SAMPLE / "counts.csv"),
               "--candidates", str(SAMPLE / "candidates.txt"), "-o", "{tmp}/r.csv"],
    "encode": ["encode", "--params", str(SAMPLE / "params.csv"), "--key-file", "{tmp}/key", "{tmp}/in.csv",
               "-o", "{tmp}/r.csv"],
    "privacy": ["privacy", "--params", str(SAMPLE / "params.csv")],
    "plan": ["plan", "--reports", "100000", "--candidates", "10"],
    "simulate": ["simulate", "--clients", "2000", "--unique", "10", "--no-report", "--out", "{tmp}/out"],
    "discover": ["discover", "--params", str(SAMPLE / "params.csv"), "--counts", str(SAMPLE / "counts.csv"),
                 "-o", "{tmp}/r.csv"],
    "decode-assoc": ["decode-assoc", "--params", str(ASSOC / "m_params.csv"), "--reports", str(ASSOC / "reports.csv"),
                     "--var1", "domain", "--map1", str(ASSOC / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
                     "-o", "{tmp}/r.csv"],
    "simulate-assoc": ["simulate-assoc", "--clients", "2000", "--unique", "10", "--no-report", "--out", "{tmp}/out"],
}

#: (command, flag, bad values): every numeric option of every command.
BAD = [
    ("decode", "--level", ["0", "1", "5", "-0.1", "nan", "inf", "x"]),
    ("decode", "--alpha", ["5", "nan"]),  # the deprecated alias names itself
    ("decode", "--lasso-alpha", ["0", "-1", "nan", "x"]),
    ("decode", "--seed", ["-1", "1.5", "x"]),
    ("encode", "--seed", ["-1", "x"]),
    ("encode", "--jobs", ["0", "-1", "two"]),
    ("encode", "--discovery-share", ["-0.1", "1.5", "nan"]),
    ("encode", "--max-length", ["0", "x"]),
    ("encode", "--segment", ["0", "4"]),
    ("encode", "--slot-weights", ["0,1", "x", ""]),
    ("discover", "--slot-weights", ["1,-1", "2.5"]),
    ("decode", "--slot-weights", ["0"]),
    ("simulate", "--slot-weights", ["a,b"]),
    ("privacy", "--reports", ["0", "-1", "1.5"]),
    ("privacy", "--delta", ["0", "1", "5", "nan", "-1e-6", "1e-309"]),  # -1e-6: was "expected one argument"
    ("plan", "--reports", ["0", "-5"]),
    ("plan", "--candidates", ["0"]),
    ("plan", "--epsilon-inf", ["0", "-1", "nan", "inf", "-2.5E+3"]),
    ("plan", "--epsilon-one", ["0", "nan", "inf"]),
    ("plan", "--level", ["0", "2"]),
    ("plan", "--alpha", ["2"]),
    ("plan", "--top", ["-1"]),
    ("plan", "--seed", ["-1"]),
    ("simulate", "--clients", ["0", "-1", "1e5"]),
    ("simulate", "--dist-param", ["-1", "nan", "inf"]),
    ("simulate", "--unique", ["0"]),
    ("simulate", "--decoys", ["-1"]),
    ("simulate", "--remove-every", ["-1"]),
    ("simulate", "--reports-per-client", ["0"]),
    ("simulate", "--values-per-client", ["0"]),
    ("simulate", "--seed", ["-1"]),
    ("simulate", "--discovery-share", ["-0.1", "1.5", "nan", "0", "1"]),  # 0 and 1: nothing to discover or decode
    ("simulate", "--max-length", ["0"]),
    ("simulate", "--segment", ["0", "4"]),
    ("discover", "--max-length", ["0", "x"]),
    ("discover", "--segment", ["0", "4"]),
    ("discover", "--level", ["0", "1.5"]),
    ("discover", "--alpha", ["7"]),
    ("discover", "--beam", ["0"]),
    ("discover", "--max-false", ["-1", "x"]),
    ("decode", "--max-length", ["0", "x"]),
    ("decode", "--segment", ["0", "4"]),
    ("decode", "--beam", ["0", "x"]),
    ("decode", "--max-false", ["-1", "1.5"]),
    ("plan", "--discovery-share", ["0", "1", "-0.5", "nan"]),
    ("plan", "--discovery-max-length", ["0", "x"]),
    ("decode-assoc", "--reports-sample-size", ["0", "-2", "x"]),
    ("decode-assoc", "--max-em-iters", ["-1", "x"]),
    ("decode-assoc", "--tolerance", ["-1", "nan", "inf"]),
    ("decode-assoc", "--num-cores", ["0"]),
    ("decode-assoc", "--level", ["0", "1", "nan"]),
    ("decode-assoc", "--alpha", ["5"]),  # the deprecated alias names itself
    ("decode-assoc", "--seed", ["-1"]),
    ("simulate-assoc", "--clients", ["0", "1e5"]),
    ("simulate-assoc", "--unique", ["0"]),
    ("simulate-assoc", "--reports-per-client", ["0", "-1", "2.5"]),
    ("simulate-assoc", "--unique2", ["0"]),
    ("simulate-assoc", "--remove-every", ["-1", "1"]),  # 1: NaN in metrics.json and an empty map1.csv
    ("simulate-assoc", "--seed", ["-1"]),
]

#: Values that are fine alone but conflict with another option: (argv after BASE, flags the message names).
CONFLICTS = [
    ("plan", ["--epsilon-inf", "4", "--epsilon-one", "9"], ["--epsilon-one", "--epsilon-inf"]),
    ("simulate", ["--dist", "uniform", "--dist-param", "2"], ["--dist-param", "--dist uniform"]),
    ("simulate", ["--dist", "exponential", "--dist-param", "0"], ["--dist-param", "--dist exponential"]),
    ("simulate", ["--dist", "gaussian", "--dist-param", "0"], ["--dist-param", "--dist gaussian"]),
]


def _argv(command: str, tmp_path: Path, extra: list[str]) -> list[str]:
    (tmp_path / "key").write_text(bytes(range(32)).hex() + "\n")
    (tmp_path / "key").chmod(0o600)
    (tmp_path / "in.csv").write_text("client,value\na,v1\n")
    return [arg.format(tmp=tmp_path) for arg in BASE[command]] + extra


@pytest.mark.parametrize(("command", "flag", "value"), [(c, f, v) for c, f, values in BAD for v in values])
def test_bad_option_value_names_its_flag(command: str, flag: str, value: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(_argv(command, tmp_path, [flag, value]))
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert f"rappor {command}: error: argument {flag}: " in err, err
    assert ("expected " in err and repr(value) in err) or f"invalid choice: {value}" in err, err
    assert "parameter of" not in err and "Traceback" not in err
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("command", "extra", "flags"), CONFLICTS, ids=[" ".join(c[1]) for c in CONFLICTS])
def test_conflicting_options_name_both_flags(command: str, extra: list[str], flags: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(command, tmp_path, extra)) == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: ") and err.count("\n") == 1, err
    assert all(flag in err for flag in flags) and "parameter of" not in err, err


def test_every_numeric_option_is_in_the_table() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    numeric = {(name, action.option_strings[-1]) for name, cmd in sub.choices.items() for action in cmd._actions  # noqa: SLF001
               if action.type is not None and action.option_strings}
    assert numeric == {(command, flag) for command, flag, _ in BAD}


HUGE = "1" + "0" * 400  # 10**400: an OverflowError traceback in the accountings


@pytest.mark.parametrize(("command", "extra", "flag"), [
    ("privacy", ["--reports", HUGE], "--reports"),
    ("plan", ["--reports", HUGE], "--reports"),
    ("plan", ["--candidates", HUGE], "--candidates"),
    ("plan", ["--epsilon-inf", "1e-300"], "--epsilon-inf"),  # was "... Cannot decode." (exit 1)
])
def test_out_of_range_values_are_usage_errors_naming_the_flag(command: str, extra: list[str], flag: str,
                                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    """Values argparse accepts as numbers but no computation can use: exit 2, the flag named, a short message."""
    try:
        status = main(_argv(command, tmp_path, extra))
    except SystemExit as exc:
        status = int(exc.code or 0)
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"rappor {command}: error: argument {flag}: " in err, err
    assert "parameter of" not in err and "Traceback" not in err and len(err) < 600, err
