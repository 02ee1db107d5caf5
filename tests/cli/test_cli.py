"""The command-line framework: discovery, exit codes and error reporting."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rappor import __version__
from rappor.cli._main import build_parser, main


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


def test_cli_out_of_memory_names_the_file_and_the_cause(tmp_path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 13, item 7: an out-of-memory death named no file and no cause.
    import rappor.formats._reports_csv

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n")
    (tmp_path / "r.csv").write_text("client,cohort,irr\nc,0,00000001\n")
    monkeypatch.setattr(rappor.formats._reports_csv, "_parse_block", no_memory)
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err
    assert err == (f"rappor: error: out of memory while reading {tmp_path / 'r.csv'} in 'rappor sum-bits': "
                   "the input or the parameters need more memory than this machine has\n")


def test_each_command_module_is_named_after_its_command() -> None:
    # main() imports only the module of the command it runs, found by this naming rule.
    from rappor.cli._main import _command_modules

    for module in _command_modules():
        assert module.__name__ == f"rappor.cli._{module.NAME.replace('-', '_')}", module.NAME
        assert _command_modules(module.NAME) == [module]


def test_a_command_imports_only_its_own_module() -> None:
    code = ("import sys\nfrom rappor.cli._main import main\n"
            "try:\n    main(['decode', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(m for m in sys.modules if m.startswith('rappor')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "rappor.cli._decode" in loaded
    assert not {"rappor.cli._encode", "rappor.cli._simulate", "rappor.engines"} & loaded


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_the_program_asks_for_one_blas_thread_unless_told(given: str | None, expected: str) -> None:
    # rappor.cli._entry sets OPENBLAS_NUM_THREADS before NumPy loads (a user's setting wins);
    # importing the package does not touch the environment.
    import os

    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import os, sys\nimport rappor.cli\nrappor.cli.main\nbefore = os.environ.get('OPENBLAS_NUM_THREADS')\n"
            "sys.argv = ['rappor']\nfrom rappor.cli._entry import run\nstatus = run()\n"
            "print(before, os.environ.get('OPENBLAS_NUM_THREADS'), status)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == [str(given), expected, "2"]
