"""The command-line framework: discovery, exit codes and error reporting."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rappor import __version__
from rappor.cli import build_parser, main


def test_cli_without_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: rappor" in capsys.readouterr().err


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_cli_unknown_command_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2


def test_cli_every_command_has_help() -> None:
    parser = build_parser()
    subparsers = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert subparsers, "no subcommands registered"
    for name, sub in subparsers[0].choices.items():
        assert sub.format_help().strip(), name


def test_cli_missing_params_file_is_clean_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Any subcommand taking --params reports a missing file as `rappor: error:` with exit 1."""
    parser = build_parser()
    subparsers = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"][0]
    missing = str(tmp_path / "nope.csv")
    for name, sub in subparsers.choices.items():
        if not any("--params" in action.option_strings for action in sub._actions):
            continue
        # Supply the positional/required arguments with harmless placeholders.
        argv = [name, "--params", missing]
        status = None
        try:
            status = main(argv + ["-o", str(tmp_path / "out")])
        except SystemExit as exc:  # argparse: other required arguments missing
            status = exc.code
        err = capsys.readouterr().err
        assert status in (1, 2), name
        if status == 1:
            assert "rappor: error:" in err and "Traceback" not in err, name


def test_python_dash_m_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "rappor", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert __version__ in out.stdout
