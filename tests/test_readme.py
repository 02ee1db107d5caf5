"""The README's Python quick start runs as written, and its two commands are the ones CI uses."""

from __future__ import annotations

import os
import re
from pathlib import Path
from collections.abc import Callable
from typing import Any

README = Path(__file__).parent.parent / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_quick_start_runs() -> None:
    blocks = _python_blocks()
    assert blocks, "README has no python block"
    for code in blocks:
        namespace: dict[str, object] = {}
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
        result = namespace["result"]
        # The quick start decodes a Zipf population: the top string must be found.
        assert "v1" in set(result.table()["string"])  # type: ignore[attr-defined]
        # The figures its comments quote are what it computes.
        import rappor

        truth = namespace["sim"].truth  # type: ignore[attr-defined]
        ((tv, detected),) = re.findall(r"total_variation +# ([0-9.]+) here, ([0-9]+) strings detected", code)
        assert float(tv) == round(rappor.analysis.evaluate_result(result, truth).total_variation, len(tv) - 2)
        assert int(detected) == int(result.detected.sum())  # type: ignore[attr-defined]
        ((frequency, expected),) = re.findall(r"# ([0-9.]+) here: smallest share .*; ([0-9.]+) expected", code)
        outlook = namespace["outlook"]
        assert float(frequency) == round(outlook.frequency, len(frequency) - 2)  # type: ignore[attr-defined]
        assert float(expected) == round(outlook.expected, len(expected) - 2)  # type: ignore[attr-defined]
        (old_tv,) = re.findall(r"evaluate_result\(old, sim.truth\).total_variation +# ([0-9.]+) here", code)
        assert float(old_tv) == round(rappor.analysis.evaluate_result(namespace["old"], truth).total_variation, 3)
        # The default's shares (every candidate) beat the detected strings' least-squares shares here.
        assert float(tv) < float(old_tv)


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run runs the README's test command byte for byte: no extra the user would not install."""
    commands = [line for block in _sh_blocks() for line in block.splitlines() if "-m pytest" in line]
    assert len(commands) == 1, commands
    ci_lines = (Path(__file__).parent.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci_lines
    assert sum("pip install" in line for line in ci_lines) == 1


def _cli_quick_start() -> str:
    (block,) = [block for block in _sh_blocks() if "rappor keygen" in block]
    return block


def test_readme_cli_quick_start_runs_line_by_line_from_a_clone(tmp_path: Path) -> None:
    """The `rappor` quick start as written, in a directory laid out like a fresh clone after the README's two
    commands: `.venv/bin/activate` puts a `rappor` that runs this interpreter on the PATH, and data/quickstart/
    holds the files the lines use (copied from the repository, as a clone has them)."""
    import shutil
    import subprocess
    import sys

    block = _cli_quick_start()
    repo = Path(__file__).parent.parent
    shutil.copytree(repo / "data" / "quickstart", tmp_path / "data" / "quickstart")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "rappor").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rappor "$@"\n')
    (bin_dir / "rappor").chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\nexport PATH\n')
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"  # no other rappor to find
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    work = tmp_path / "try"
    results = (work / "results.csv").read_text().splitlines()
    assert results[0].startswith("string,estimate,") and {"v1", "v2", "v3"} <= {r.split(",")[0] for r in results}
    assert "recommended:" in done.stdout and "epsilon_inf" in done.stdout
    assert (work / "summary.json").is_file() and (work / "demo" / "report.html").is_file()


def test_readme_every_measured_figure_names_its_command() -> None:
    """Each row of 'What you get, measured' with a figure names the script that reproduces it, and the script
    exists under benchmarks/."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## What you get, measured"):]
    section = section[:section.index("\n## ", 4)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")][1:]
    assert len(rows) >= 10
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    for row in rows:
        label, ours = row.split(" | ")[:2]
        if not re.search(r"\d", ours):
            continue  # a yes/no row
        scripts = re.findall(r"([a-z_0-9]+\.py)", label + ours)
        assert scripts, row
        assert all((benchmarks / script).is_file() for script in scripts), scripts


def test_readme_reliability_counts_are_the_test_tables(load_by_path: Callable[[Path], Any]) -> None:
    """The README's counts of bad-input cases and bad option values are the sizes of the tables that hold
    them (they were 85 and 59 while the tables had grown to 162 and 89): update the README with the table."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    (cases,) = re.findall(r"malformed input \((\d+) cases, the `CASES` table of `tests/test_bad_input\.py`", text)
    values, options = re.findall(r"bad values \((\d+) values of (\d+) options, the `BAD` table of "
                                 r"`tests/cli/test_cli_flags\.py`", text)[0]
    tests = Path(__file__).parent
    bad_input, cli_flags = load_by_path(tests / "test_bad_input.py"), load_by_path(tests / "cli" / "test_cli_flags.py")
    assert int(cases) == len(bad_input.CASES)
    assert int(values) == sum(len(bad) for _, _, bad in cli_flags.BAD)
    assert int(options) == len({(command, flag) for command, flag, _ in cli_flags.BAD})
    reliability = " ".join((README.parent / "docs" / "reliability.md").read_text(encoding="utf-8").split())
    (same_file,) = re.findall(r"`SAME_FILE_CASES` in `tests/test_bad_input.py` \((\d+) cases", reliability)
    assert int(same_file) == len(bad_input.SAME_FILE_CASES)


def _benchmark_commands() -> list[tuple[str, str, list[str]]]:
    """``(document, script, arguments)`` of every benchmark command quoted in backticks in the README and docs/."""
    import shlex

    root = README.parent
    found = []
    for doc in [README, *sorted((root / "docs").glob("*.md"))]:
        text = " ".join(doc.read_text(encoding="utf-8").split())  # spans may wrap
        for span in re.findall(r"`([^`]*\.py(?: [^`]*)?)`", text):
            words = shlex.split(span.replace("[", " ").replace("]", " "))
            words = words[1:] if words[0] == "python" else words
            script = Path(words[0]).name
            if (root / "benchmarks" / script).is_file() and (words[0] == script or words[0].startswith("benchmarks/")):
                found.append((doc.name, script, words[1:]))
    return found


def test_readme_and_docs_benchmark_commands_run_as_written() -> None:
    """Every benchmark command the README and docs/ quote takes the options and case names it is given
    (the README named `run.py --only encode-batch-k32 encode-batch-k128` after the cases had been renamed
    simulate-reports-k32/-k128: run.py refused it)."""
    import subprocess
    import sys

    commands = _benchmark_commands()
    assert any(script == "run.py" for _, script, _ in commands)
    helps: dict[tuple[str, ...], str] = {}

    def help_text(*argv: str) -> str:
        if argv not in helps:
            done = subprocess.run([sys.executable, str(README.parent / "benchmarks" / argv[0]), *argv[1:], "--help"],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, (argv, done.stderr[-500:])
            helps[argv] = done.stdout
        return helps[argv]

    run_cases = subprocess.run([sys.executable, str(README.parent / "benchmarks" / "run.py"), "--list"],
                               capture_output=True, text=True, timeout=120, check=True).stdout
    case_names = {line.split()[0] for line in run_cases.splitlines() if line.strip()}
    for doc, script, args in commands:
        sub = (args[0],) if args and not args[0].startswith("-") and script == "association.py" else ()
        text = help_text(script, *sub)
        for flag in (a.split("=")[0] for a in args if a.startswith("--")):
            assert re.search(rf"{re.escape(flag)}\b", text), (doc, script, flag)
        if script == "run.py" and "--only" in args:
            names = [a for a in args[args.index("--only") + 1:] if not a.startswith("-")]
            named = [n for n in names if n.islower()]  # CASE is a placeholder
            assert set(named) <= case_names, (doc, named)


def test_readme_layout_names_every_stage_package() -> None:
    """The Layout section names each stage package of rappor/ (a folder with a face), the subpackages of
    analysis/, the public modules beside them (`params`, `exceptions`) and `_util/`."""
    text = README.read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("\n## ", 4)] if "\n## " in layout[4:] else layout
    named = set(re.findall(r"`([a-z_]+)/?`", layout))
    package = README.parent / "rappor"
    folders = {p.parent.name for p in package.glob("*/__init__.py")}
    folders |= {p.parent.name for p in (package / "analysis").glob("*/__init__.py")}
    public = {p.stem for p in package.glob("[!_]*.py")}
    assert sorted((folders | public) - named) == []
